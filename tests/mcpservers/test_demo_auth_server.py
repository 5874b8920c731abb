"""The demo OAuth 2 provider of ``make run`` (``mcpservers.demo_auth_server``: the consent-page authorization server
and the demo MCP tools plus ``whoami`` behind its tokens, on one port), spoken to over real HTTP on 127.0.0.1.

The process (``python -m mcpservers.demo_auth_server``): discovery documents, the 401 of ``/mcp``, signals, a taken
port, no Django. The product flow end to end: ``seed_demo`` registers "Demo tools (OAuth)", a member connects through
``oauth_services`` and the consent page, calls the tools with their token, and disconnects. The consent page's edge
cases run against ``build_demo``'s app served in a thread (faster, and the server object can mint tokens).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from html.parser import HTMLParser
from io import StringIO
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from django.core.management import call_command
from django.utils import timezone

from mcpservers import oauth_services
from mcpservers.client import Endpoint, MCPError, call_tool, list_tools
from mcpservers.demo_auth_server import DEMO_CLIENT_ID, DEMO_SCOPE, AuthServer, build_demo
from mcpservers.models import AuthType, MCPServer, MCPUserToken
from mcpservers.selectors import servers_usable_by
from organizations.models import User
from tests.peers.oauth_server import _bind, _serve, pkce_pair
from tests.peers.processes import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
DEMO_TOOLS = ["current_time", "word_count", "roll_dice", "lookup_http_status"]
SITE = "http://127.0.0.1:8000"  # Switchboard's address: the demo client accepts loopback redirect URIs only
CALLBACK = "http://127.0.0.1:8000/callback"
NO_LONGER_VALID = "This consent page is no longer valid"
NAME_RULE = "Use 1 to 64 letters, digits, dots, dashes or underscores."
HTTP_TIMEOUT = 10


# The server as a process --------------------------------------------------------------------------------------------


class DemoAuthProcess(ServerProcess):
    """``python -m mcpservers.demo_auth_server --port <port>`` (as ``make run`` starts it)."""

    what = "demo authorization server"
    module = "mcpservers.demo_auth_server"


@pytest.fixture(scope="module")
def process() -> Iterator[DemoAuthProcess]:
    with DemoAuthProcess.running() as server:
        yield server


@pytest.fixture
def own_process() -> Iterator[DemoAuthProcess]:
    """A process for one test, which may stop it itself; killed after the test in any case."""
    with DemoAuthProcess.running(stop_first=False) as server:
        yield server


# The server in a thread ---------------------------------------------------------------------------------------------


@dataclass
class Demo:
    server: AuthServer
    base_url: str

    @property
    def mcp_url(self) -> str:
        return self.base_url + "/mcp"


@pytest.fixture(scope="module")
def demo() -> Iterator[Demo]:
    """``build_demo``'s app (authorization server and gated tools) served by uvicorn in a thread, lifespan on."""
    sock, base_url = _bind()
    server, app = build_demo(base_url)
    stop = _serve(app, sock, lifespan="on", name="demo-auth-server")
    try:
        yield Demo(server, base_url)
    finally:
        stop()


# Playing the browser ------------------------------------------------------------------------------------------------


class _FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict] = []
        self.buttons: list[tuple[str | None, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "form":
            self.forms.append({"action": values.get("action"), "method": values.get("method"), "fields": []})
        elif tag == "input" and self.forms and values.get("name"):
            self.forms[-1]["fields"].append((values["name"], values.get("value") or "", values.get("type") or "text"))
        elif tag == "button":
            self.buttons.append((values.get("name"), values.get("value")))


@dataclass
class ConsentPage:
    response: requests.Response
    action: str
    fields: list[tuple[str, str, str]]  # (name, value as the browser reads it, type)
    buttons: list[tuple[str | None, str | None]]

    @property
    def hidden(self) -> dict[str, str]:
        return {name: value for name, value, kind in self.fields if kind == "hidden"}

    @property
    def ticket(self) -> str:
        return self.hidden["ticket"]

    @property
    def username(self) -> str:
        return next(value for name, value, _ in self.fields if name == "username")

    def submit(self, decision: str = "allow", username: str | None = "bob-at-provider", **changes: str):
        """POST the form as a browser would on Allow or Deny (``changes`` overrides hidden values)."""
        data = {**self.hidden, **changes, "decision": decision}
        if username is not None:
            data["username"] = username
        return requests.post(self.action, data=data, allow_redirects=False, timeout=HTTP_TIMEOUT)


def parse_consent_page(response: requests.Response) -> ConsentPage:
    parser = _FormParser()
    parser.feed(response.text)
    assert len(parser.forms) == 1, response.text
    form = parser.forms[0]
    assert form["method"] == "post"
    return ConsentPage(response, form["action"], form["fields"], parser.buttons)


def open_consent_page(url: str) -> ConsentPage:
    response = requests.get(url, allow_redirects=False, timeout=HTTP_TIMEOUT)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    return parse_consent_page(response)


def authorize_url(base_url: str, **overrides: str | None) -> str:
    """A valid authorization request of the demo client (``None`` leaves a parameter out)."""
    _, challenge = pkce_pair()
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": DEMO_CLIENT_ID,
        "redirect_uri": CALLBACK,
        "scope": DEMO_SCOPE,
        "state": "st-123",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **overrides,
    }
    return base_url + "/authorize?" + urlencode({key: value for key, value in params.items() if value is not None})


def query_of(url: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlsplit(url).query).items()}


def endpoint(url: str, token: str) -> Endpoint:
    return Endpoint(url=url, transport="streamable_http", headers={"Authorization": f"Bearer {token}"}, call_timeout=10)


def call_json(url: str, token: str, name: str, arguments: dict) -> dict:
    outcome = call_tool(endpoint(url, token), name, arguments, tool_call_id=f"test-{name}")
    assert not outcome.is_error, outcome.content
    return json.loads(outcome.content)


def post_mcp(url: str, token: str | None = None) -> requests.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return requests.post(url, json=body, headers=headers, timeout=HTTP_TIMEOUT)


# The process --------------------------------------------------------------------------------------------------------


def test_it_serves_authorization_server_metadata_for_its_own_address(process):
    response = requests.get(process.base_url + "/.well-known/oauth-authorization-server", timeout=HTTP_TIMEOUT)

    assert response.status_code == 200
    document = response.json()
    issuer = f"http://127.0.0.1:{process.port}"
    assert document["issuer"] == issuer
    assert document["authorization_endpoint"] == issuer + "/authorize"
    assert document["token_endpoint"] == issuer + "/token"
    assert document["revocation_endpoint"] == issuer + "/revoke"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert "none" in document["token_endpoint_auth_methods_supported"]  # the demo client is public
    assert DEMO_SCOPE in document["scopes_supported"]


def test_it_serves_protected_resource_metadata_for_its_mcp_endpoint(process):
    response = requests.get(process.base_url + "/.well-known/oauth-protected-resource/mcp", timeout=HTTP_TIMEOUT)

    assert response.status_code == 200
    document = response.json()
    assert document["resource"] == process.base_url + "/mcp"
    assert document["authorization_servers"] == [f"http://127.0.0.1:{process.port}"]
    assert document["scopes_supported"] == ["tools"]


def test_it_refuses_mcp_requests_without_a_valid_token(process):
    anonymous = post_mcp(process.base_url + "/mcp")
    forged = post_mcp(process.base_url + "/mcp", token="at_not-a-token-of-this-server")

    assert anonymous.status_code == 401
    challenge = anonymous.headers["www-authenticate"]
    prm = f"{process.base_url}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{prm}"' in challenge
    assert 'scope="tools"' in challenge and "invalid_token" not in challenge
    assert forged.status_code == 401
    assert 'error="invalid_token"' in forged.headers["www-authenticate"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_it_stops_cleanly_and_promptly_on_a_signal(own_process, signum):
    metadata = own_process.base_url + "/.well-known/oauth-authorization-server"
    assert requests.get(metadata, timeout=HTTP_TIMEOUT).status_code == 200
    # An idle client connection left open must not hold the shutdown up.
    idle = socket.create_connection(("127.0.0.1", own_process.port))
    try:
        started = time.monotonic()
        code = own_process.stop(signum, timeout=8)
        elapsed = time.monotonic() - started
    finally:
        idle.close()

    assert code == 0, own_process.output()
    assert elapsed < 5
    output = own_process.output()
    assert "Traceback" not in output
    assert f"demo authorization server: http://127.0.0.1:{own_process.port}" in output
    with pytest.raises(requests.ConnectionError):
        requests.get(metadata, timeout=HTTP_TIMEOUT)


def test_it_exits_non_zero_when_its_port_is_taken(process):
    clash = DemoAuthProcess(process.port)
    try:
        code = clash.proc.wait(timeout=20)
    finally:
        clash.close()

    assert code != 0
    metadata = process.base_url + "/.well-known/oauth-authorization-server"
    assert requests.get(metadata, timeout=HTTP_TIMEOUT).status_code == 200  # the first one still serves


def test_it_does_not_import_django():
    # Our own fixed command line.
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", "import sys, mcpservers.demo_auth_server; print('django' in sys.modules)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == "False"


# The product flow end to end -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_member_connects_calls_the_tools_as_themselves_and_disconnects(process, monkeypatch, settings):
    settings.SITE_URL = SITE
    monkeypatch.setenv("DEMO_OAUTH_PORT", str(process.port))
    call_command("seed_demo", stdout=StringIO())
    server = MCPServer.objects.get(slug="demo-tools-oauth")
    assert (server.organization.name, server.auth_type) == ("acme", AuthType.OAUTH2)
    assert server.url == f"http://127.0.0.1:{process.port}/mcp"
    bob = User.objects.get(username="bob")  # a plain member of acme; the server is shared with Everyone
    assert server in servers_usable_by(bob, server.organization)

    # Connect: Switchboard's authorization URL opens the provider's consent page.
    url = oauth_services.connect_start(user=bob, server=server)
    page = open_consent_page(url)
    headers = page.response.headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store"
    assert "<title>Connect Switchboard</title>" in page.response.text
    assert "<li><code>tools</code></li>" in page.response.text
    callback = oauth_services.redirect_uri(server.pk)
    assert page.hidden["client_id"] == DEMO_CLIENT_ID and page.hidden["redirect_uri"] == callback
    assert page.hidden["code_challenge_method"] == "S256" and page.hidden["scope"] == "tools"
    assert len(page.ticket) >= 32
    assert set(page.buttons) == {("decision", "allow"), ("decision", "deny")}

    allowed = page.submit("allow", username="bob-at-provider")

    assert allowed.status_code == 302, allowed.text
    location = allowed.headers["location"]
    assert location.startswith(callback + "?")
    params = query_of(location)
    assert params["state"] == page.hidden["state"] and params["code"]

    stored = oauth_services.connect_finish(user=bob, server=server, params=params)

    token = MCPUserToken.objects.get(server=server, user=bob)
    assert token.pk == stored.pk and token.scope == "tools" and str(token.refresh_token)
    assert token.expires_at - timezone.now() > timedelta(minutes=14)  # DEMO_ACCESS_TOKEN_LIFETIME is 15 minutes
    assert oauth_services.connection_state(bob, server) == "connected"

    # The tools answer the member's token, and know who it belongs to.
    access = oauth_services.access_token_for(user=bob, server=server)
    assert access == str(token.access_token)
    names = [tool.name for tool in list_tools(endpoint(server.url, access))]
    assert names == [*DEMO_TOOLS, "whoami"]
    identity = call_json(server.url, access, "whoami", {})
    assert identity["username"] == "bob-at-provider" and identity["client_id"] == "switchboard-demo"
    assert "tools" in identity["scope"].split()
    assert 0 < identity["expires_in"] <= 900
    counted = call_json(server.url, access, "word_count", {"text": "connected to the demo"})
    assert counted["words"] == 4

    # Disconnect: the token is revoked at the provider, which then refuses it.
    result = oauth_services.disconnect(user=bob, server_id=server.pk)

    assert result["token_revoked"] is True, result
    assert not MCPUserToken.objects.filter(server=server, user=bob).exists()
    assert oauth_services.access_token_for(user=bob, server=server) is None
    refused = post_mcp(server.url, token=access)
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    with pytest.raises(MCPError) as failure:
        list_tools(endpoint(server.url, access))
    assert failure.value.status == 401


# The consent page -----------------------------------------------------------------------------------------------------


def test_it_sends_the_browser_back_with_access_denied_and_the_state_on_deny(demo):
    page = open_consent_page(authorize_url(demo.base_url, state="deny-me"))

    denied = page.submit("deny", username=None)

    assert denied.status_code == 302
    assert denied.headers["location"].startswith(CALLBACK + "?")
    assert query_of(denied.headers["location"]) == {"error": "access_denied", "state": "deny-me"}
    again = page.submit("allow")  # the ticket went with the answer
    assert again.status_code == 400 and "location" not in again.headers


def test_it_refuses_a_consent_page_answered_twice(demo):
    page = open_consent_page(authorize_url(demo.base_url))
    first = page.submit("allow")
    assert first.status_code == 302 and "code" in query_of(first.headers["location"])

    replay = page.submit("allow")

    assert replay.status_code == 400
    assert "location" not in replay.headers
    assert replay.headers["content-type"].startswith("text/html")
    assert NO_LONGER_VALID in replay.text and "no longer valid" in replay.text
    assert "frame-ancestors 'none'" in replay.headers["content-security-policy"]
    assert "code=" not in replay.text


@pytest.mark.parametrize("ticket", ["", "not-a-ticket-this-server-gave"])
def test_it_refuses_a_ticket_it_did_not_give(demo, ticket):
    page = open_consent_page(authorize_url(demo.base_url))

    forged = page.submit("allow", ticket=ticket)

    assert forged.status_code == 400 and "location" not in forged.headers
    assert NO_LONGER_VALID in forged.text
    assert page.submit("allow").status_code == 302  # the page's own ticket is untouched


@pytest.mark.parametrize(
    "username",
    ["", "   ", "a b", "x" * 65, "<script>", '"><img src=x onerror=alert(1)>', "bob@provider", "émile"],
)
def test_it_asks_again_for_an_invalid_name_with_the_same_ticket(demo, username):
    page = open_consent_page(authorize_url(demo.base_url))

    retry = page.submit("allow", username=username)

    assert retry.status_code == 200 and "location" not in retry.headers
    assert NAME_RULE in retry.text and 'aria-invalid="true"' in retry.text
    again = parse_consent_page(retry)
    assert again.ticket == page.ticket and again.hidden == page.hidden
    assert again.username == username.strip()  # what was typed, shown back (escaped) for correcting
    if set(username) & set('<>"'):
        assert username not in retry.text

    corrected = again.submit("allow", username="bob-at-provider")

    assert corrected.status_code == 302, corrected.text
    params = query_of(corrected.headers["location"])
    assert params["state"] == "st-123"
    assert demo.server.codes[params["code"]].username == "bob-at-provider"


@pytest.mark.parametrize("username", ["a", "x" * 64, "Bob.Smith_2-x", "  padded  "])
def test_it_accepts_names_of_1_to_64_allowed_characters(demo, username):
    page = open_consent_page(authorize_url(demo.base_url))

    allowed = page.submit("allow", username=username)

    assert allowed.status_code == 302, allowed.text
    code = query_of(allowed.headers["location"])["code"]
    assert demo.server.codes[code].username == username.strip()


def test_it_escapes_the_request_in_the_hidden_fields(demo):
    state = '"><script>alert(1)</script>'

    page = open_consent_page(authorize_url(demo.base_url, state=state))

    assert state not in page.response.text and "<script>" not in page.response.text
    assert "&quot;&gt;&lt;script&gt;" in page.response.text
    assert page.hidden["state"] == state  # the browser reads back exactly what was sent
    allowed = page.submit("allow")
    assert allowed.status_code == 302
    assert query_of(allowed.headers["location"])["state"] == state


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://evil.example/cb",
        "http://127.0.0.1.evil.example/cb",
        "https://localhost.evil.example/cb",
        "http://127.0.0.1:8000/cb#fragment",
        "ftp://127.0.0.1/cb",
        "javascript://127.0.0.1/%0aalert(1)",
    ],
)
def test_it_refuses_a_redirect_uri_off_loopback_without_a_consent_page(demo, redirect_uri):
    response = requests.get(
        authorize_url(demo.base_url, redirect_uri=redirect_uri), allow_redirects=False, timeout=HTTP_TIMEOUT
    )

    assert response.status_code == 400
    assert "location" not in response.headers  # RFC 6749 §4.1.2.1: never redirect to an unchecked URI
    assert response.json()["error"] == "invalid_request"
    assert "ticket" not in response.text and "<form" not in response.text


@pytest.mark.parametrize(
    "redirect_uri",
    ["http://evil.example\\@127.0.0.1/cb", "http://evil.example%5C@127.0.0.1/cb", "http://user@127.0.0.1/cb"],
)
def test_it_refuses_a_redirect_uri_that_browsers_read_as_another_host(demo, redirect_uri):
    response = requests.get(
        authorize_url(demo.base_url, redirect_uri=redirect_uri),
        allow_redirects=False,
        timeout=HTTP_TIMEOUT,
    )

    assert response.status_code == 400


@pytest.mark.parametrize("redirect_uri", ["http://localhost:8000/cb", "http://[::1]:8000/cb", "https://127.0.0.1/cb"])
def test_it_accepts_redirect_uris_on_every_loopback_host(demo, redirect_uri):
    page = open_consent_page(authorize_url(demo.base_url, redirect_uri=redirect_uri))

    allowed = page.submit("allow")

    assert allowed.status_code == 302
    assert allowed.headers["location"].startswith(redirect_uri + "?")


def test_it_does_not_let_a_ticket_carry_the_code_off_loopback(demo):
    page = open_consent_page(authorize_url(demo.base_url))

    tampered = page.submit("allow", redirect_uri="http://evil.example/cb")

    assert tampered.status_code == 400 and "location" not in tampered.headers
    assert "code" not in tampered.text


@pytest.mark.parametrize(
    "changes",
    [{"state": "another-state"}, {"code_challenge": pkce_pair()[1]}, {"redirect_uri": "http://localhost:9999/cb"}],
)
def test_it_does_not_let_a_ticket_decide_another_request(demo, changes):
    page = open_consent_page(authorize_url(demo.base_url))

    other = page.submit("allow", **changes)

    assert other.status_code == 400 and "location" not in other.headers
    assert "no longer valid" in other.text
    assert page.submit("allow").status_code == 400  # the ticket is spent either way


@pytest.mark.parametrize(
    ("overrides", "description"),
    [
        ({"code_challenge": None, "code_challenge_method": None}, "Missing 'code_challenge'"),
        ({"code_challenge_method": "plain"}, "'code_challenge_method' must be S256"),
    ],
)
def test_it_refuses_a_request_without_pkce_s256(demo, overrides, description):
    response = requests.get(authorize_url(demo.base_url, **overrides), allow_redirects=False, timeout=HTTP_TIMEOUT)

    assert response.status_code == 302  # the redirect URI is valid, so the error goes back to the client
    params = query_of(response.headers["location"])
    assert params["error"] == "invalid_request" and params["error_description"] == description
    assert "code" not in params and params["state"] == "st-123"
    assert "ticket" not in response.text


def test_it_refuses_an_unknown_client(demo):
    response = requests.get(
        authorize_url(demo.base_url, client_id="someone-else"), allow_redirects=False, timeout=HTTP_TIMEOUT
    )

    assert response.status_code == 400 and "location" not in response.headers
    assert response.json()["error"] == "invalid_client"


# The gate of the tools ------------------------------------------------------------------------------------------------


def test_it_lets_a_token_with_the_tools_scope_call_whoami(demo):
    token = demo.server.mint_tokens(DEMO_CLIENT_ID, "minted-user", scope="tools")["access_token"]

    identity = call_json(demo.mcp_url, token, "whoami", {})

    assert identity["username"] == "minted-user" and identity["client_id"] == DEMO_CLIENT_ID
    assert identity["scope"] == "tools"


def test_it_refuses_a_token_without_the_tools_scope(demo):
    token = demo.server.mint_tokens(DEMO_CLIENT_ID, "x", scope="openid")["access_token"]

    response = post_mcp(demo.mcp_url, token=token)

    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    with pytest.raises(MCPError) as failure:
        list_tools(endpoint(demo.mcp_url, token))
    assert failure.value.status == 401


def test_it_refuses_an_expired_token(demo):
    token = demo.server.mint_tokens(DEMO_CLIENT_ID, "x", scope="tools")["access_token"]
    assert post_mcp(demo.mcp_url, token=token).status_code != 401

    demo.server.expire_access_tokens(token)

    assert post_mcp(demo.mcp_url, token=token).status_code == 401


def test_it_registers_no_other_client(demo):
    metadata = requests.get(demo.base_url + "/.well-known/oauth-authorization-server", timeout=HTTP_TIMEOUT).json()

    response = requests.post(
        demo.base_url + "/register",
        json={"client_name": "Switchboard", "redirect_uris": ["https://evil.example/cb"]},
        timeout=HTTP_TIMEOUT,
    )

    assert "registration_endpoint" not in metadata
    assert response.status_code == 404
