"""The OAuth2 client (``mcpservers.oauth``) against peers on 127.0.0.1.

Most tests use small stdlib ``http.server`` peers (``stubs()``) answering from a table of routes and recording every
request they get (method, raw target, lower-cased headers, body), so they can check the order of discovery requests,
the shape of what was sent, and that a refused redirect target was never contacted. The last section runs the whole
flow against the real authlib authorization server of ``tests/peers/oauth_server.py`` (``oauth_server``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlsplit

import pytest

from mcpservers import oauth
from mcpservers.oauth import OAuthConfig, OAuthError, TokenSet
from tests.peers.oauth_server import (  # noqa: F401  (oauth_server_fixture registers ``oauth_server``)
    REVOCATION_BODY_SENTINEL,
    TOKEN_BODY_SENTINEL,
    callback_params,
    oauth_server_fixture,
)

SENTINEL = "PROVIDER-BODY-SENTINEL"
REDIRECT_URI = "https://switchboard.example/api/experimental/mcp/servers/1/oauth2/callback"
PRM = "/.well-known/oauth-protected-resource"
ASM = "/.well-known/oauth-authorization-server"
OIDC = "/.well-known/openid-configuration"
CROSS_ORIGIN = "redirected to another origin"


# Peers -----------------------------------------------------------------------------------------------------------


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def form(self) -> dict[str, str]:
        return dict(parse_qsl(self.body.decode()))

    @property
    def json(self) -> Any:
        return json.loads(self.body)


Answer = tuple[int, bytes, dict[str, str]]
Route = Answer | Callable[..., Answer | None]


def answer(document: Any = None, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
    body = b"" if document is None else json.dumps(document).encode()
    return status, body, {"Content-Type": "application/json", **(headers or {})}


def redirect(location: str, status: int = 302) -> Answer:
    return status, b"", {"Location": location}


@dataclass
class Stub:
    url: str = ""
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    requests: list[Seen] = field(default_factory=list)

    def route(self, method: str, target: str, reply: Route) -> None:
        self.routes[(method, target)] = reply

    def seen(self, method: str | None = None) -> list[str]:
        return [f"{r.method} {r.target}" for r in self.requests if method is None or r.method == method]


def _handler_for(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # a body without Content-Length ends when the connection closes

        def log_message(self, *args) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            seen = Seen(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length),
            )
            stub.requests.append(seen)
            reply = stub.routes.get((self.command, self.path))
            if reply is None:
                reply = answer({"error": "not_found", "error_description": SENTINEL}, status=404)
            if callable(reply):
                reply = reply(seen, self)
                if reply is None:  # the route wrote its answer itself
                    return
            status, body, headers = reply
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _serve

    return Handler


@pytest.fixture
def stubs() -> Iterator[Callable[[], Stub]]:
    servers: list[ThreadingHTTPServer] = []

    def make() -> Stub:
        stub = Stub()
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(stub))
        server.daemon_threads = True
        server.block_on_close = False
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        stub.url = f"http://127.0.0.1:{server.server_address[1]}"
        return stub

    yield make
    for server in servers:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def server_metadata(base: str, issuer: str, **extra: Any) -> dict[str, Any]:
    metadata = {
        "issuer": issuer,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "registration_endpoint": f"{base}/register",
        "revocation_endpoint": f"{base}/revoke",
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
    }
    metadata.update(extra)
    return {key: value for key, value in metadata.items() if value is not None}


def registered(document: dict | None = None, status: int = 201) -> Route:
    return lambda seen, handler: answer(
        document or {"client_id": "client-1", "client_secret": "secret-1", **seen.json}, status
    )


def discover(resource_url: str, **options: Any) -> OAuthConfig:
    options.setdefault("redirect_uri", REDIRECT_URI)
    options.setdefault("client_name", "Switchboard")
    return oauth.discover(resource_url, **options)


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


# Discovery: the order and the fallbacks -------------------------------------------------------------------------


def test_it_discovers_with_the_path_aware_metadata_first(stubs):
    peer, decoy = stubs(), stubs()
    issuer = f"{peer.url}/tenant"
    peer.route("GET", f"{PRM}/mcp/v1", answer({"resource": f"{peer.url}/mcp/v1", "authorization_servers": [issuer]}))
    peer.route("GET", PRM, answer({"authorization_servers": [decoy.url]}))
    peer.route("GET", f"{ASM}/tenant", answer(server_metadata(issuer, issuer)))
    peer.route("GET", ASM, answer(server_metadata(decoy.url, decoy.url)))
    peer.route("POST", "/tenant/register", registered())

    config = discover(f"{peer.url}/mcp/v1", scopes="read write")

    assert config == OAuthConfig(
        client_id="client-1",
        client_secret="secret-1",
        auth_url=f"{issuer}/authorize",
        token_url=f"{issuer}/token",
        revocation_url=f"{issuer}/revoke",
        scopes="read write",
    )
    assert peer.seen() == [f"GET {PRM}/mcp/v1", f"GET {ASM}/tenant", "POST /tenant/register"]
    assert decoy.requests == []


def test_it_falls_back_to_the_root_protected_resource_metadata(stubs):
    peer = stubs()
    peer.route("GET", PRM, answer({"authorization_servers": [peer.url]}))
    peer.route("GET", ASM, answer(server_metadata(peer.url, peer.url)))
    peer.route("POST", "/register", registered())

    config = discover(f"{peer.url}/mcp/")

    assert config.client_id == "client-1"
    assert peer.seen() == [f"GET {PRM}/mcp", f"GET {PRM}", f"GET {ASM}", "POST /register"]


def test_it_falls_back_to_the_root_authorization_server_metadata(stubs):
    peer = stubs()
    issuer = f"{peer.url}/realms/acme"
    peer.route("GET", PRM, answer({"authorization_servers": [issuer]}))
    peer.route("GET", ASM, answer(server_metadata(peer.url, issuer)))
    peer.route("POST", "/register", registered())

    config = discover(peer.url)

    assert config.token_url == f"{peer.url}/token"
    assert peer.seen() == [f"GET {PRM}", f"GET {ASM}/realms/acme", f"GET {ASM}", "POST /register"]


def test_it_falls_back_to_openid_discovery_appended_to_the_issuer(stubs):
    peer = stubs()
    issuer = f"{peer.url}/realms/acme"
    peer.route("GET", PRM, answer({"authorization_servers": [issuer]}))
    peer.route("GET", f"/realms/acme{OIDC}", answer(server_metadata(issuer, issuer)))
    peer.route("POST", "/realms/acme/register", registered())

    config = discover(peer.url)

    assert config.auth_url == f"{issuer}/authorize"
    assert peer.seen() == [
        f"GET {PRM}",
        f"GET {ASM}/realms/acme",
        f"GET {ASM}",
        f"GET /realms/acme{OIDC}",
        "POST /realms/acme/register",
    ]


def test_it_takes_the_server_origin_as_issuer_when_protected_resource_metadata_is_missing(stubs):
    peer = stubs()
    peer.route("GET", ASM, answer(server_metadata(peer.url, peer.url)))
    peer.route("POST", "/register", registered())

    config = discover(f"{peer.url}/mcp")

    assert config.client_id == "client-1"
    assert peer.seen() == [f"GET {PRM}/mcp", f"GET {PRM}", f"GET {ASM}", "POST /register"]


def test_it_tries_openid_discovery_at_the_server_origin_too(stubs):
    peer = stubs()
    peer.route("GET", OIDC, answer(server_metadata(peer.url, peer.url)))
    peer.route("POST", "/register", registered())

    assert discover(f"{peer.url}/mcp").client_id == "client-1"
    assert peer.seen() == [f"GET {PRM}/mcp", f"GET {PRM}", f"GET {ASM}", f"GET {OIDC}", "POST /register"]


def test_it_skips_metadata_without_the_endpoints_it_needs(stubs):
    peer = stubs()
    issuer = f"{peer.url}/t"
    peer.route("GET", PRM, answer({"authorization_servers": [issuer]}))
    peer.route("GET", f"{ASM}/t", answer({"issuer": issuer, "authorization_endpoint": f"{issuer}/authorize"}))
    peer.route("GET", ASM, answer(["not", "an", "object"]))
    peer.route("GET", f"/t{OIDC}", answer(server_metadata(issuer, issuer)))
    peer.route("POST", "/t/register", registered())

    assert discover(peer.url).token_url == f"{issuer}/token"


# Discovery: registration ----------------------------------------------------------------------------------------


def test_it_sends_an_rfc7591_registration_request(stubs):
    peer = stubs()
    peer.route("GET", PRM, answer({"authorization_servers": [peer.url]}))
    peer.route("GET", ASM, answer(server_metadata(peer.url, peer.url)))
    peer.route("POST", "/register", registered())

    discover(peer.url, client_name="Switchboard (acme)", scopes="tools:read")

    [registration] = [r for r in peer.requests if r.method == "POST"]
    assert registration.headers["content-type"] == "application/json"
    assert "authorization" not in registration.headers
    assert registration.json == {
        "client_name": "Switchboard (acme)",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
        "scope": "tools:read",
    }


def test_it_registers_a_confidential_client_when_the_server_lists_no_auth_methods(stubs):
    peer = stubs()
    peer.route("GET", PRM, answer({"authorization_servers": [peer.url]}))
    peer.route("GET", ASM, answer(server_metadata(peer.url, peer.url, token_endpoint_auth_methods_supported=None)))
    peer.route("POST", "/register", registered())

    config = discover(peer.url)

    assert peer.requests[-1].json["token_endpoint_auth_method"] == "client_secret_basic"
    assert "scope" not in peer.requests[-1].json
    assert (config.client_secret, config.scopes) == ("secret-1", "")


def test_it_registers_a_public_client_when_the_server_takes_only_public_clients(stubs):
    peer = stubs()
    peer.route("GET", PRM, answer({"authorization_servers": [peer.url]}))
    peer.route("GET", ASM, answer(server_metadata(peer.url, peer.url, token_endpoint_auth_methods_supported=["none"])))
    peer.route("POST", "/register", registered({"client_id": "public-1", "token_endpoint_auth_method": "none"}))

    config = discover(peer.url)

    assert peer.requests[-1].json["token_endpoint_auth_method"] == "none"
    assert (config.client_id, config.client_secret) == ("public-1", "")


def test_it_takes_the_resource_scopes_when_none_are_given(stubs):
    peer = stubs()
    peer.route("GET", PRM, answer({"authorization_servers": [peer.url], "scopes_supported": ["mcp", "offline"]}))
    peer.route("GET", ASM, answer(server_metadata(peer.url, peer.url)))
    peer.route("POST", "/register", registered())

    assert discover(peer.url).scopes == "mcp offline"
    assert peer.requests[-1].json["scope"] == "mcp offline"
    assert discover(peer.url, scopes="mine").scopes == "mine"


def test_it_leaves_out_a_revocation_endpoint_that_is_not_advertised(stubs):
    peer = stubs()
    peer.route("GET", PRM, answer({"authorization_servers": [peer.url]}))
    peer.route("GET", ASM, answer(server_metadata(peer.url, peer.url, revocation_endpoint=None)))
    peer.route("POST", "/register", registered())

    assert discover(peer.url).revocation_url == ""


def test_it_leaves_out_a_plain_http_revocation_endpoint_off_loopback(stubs):
    peer = stubs()
    peer.route("GET", PRM, answer({"authorization_servers": [peer.url]}))
    metadata = server_metadata(peer.url, peer.url, revocation_endpoint="http://as.example.com/revoke")
    peer.route("GET", ASM, answer(metadata))
    peer.route("POST", "/register", registered())

    assert discover(peer.url).revocation_url == ""


# Discovery: failures --------------------------------------------------------------------------------------------


def _setup_failure(peer: Stub, scenario: str) -> None:
    good_prm = answer({"authorization_servers": [peer.url]})
    good_metadata = server_metadata(peer.url, peer.url)
    if scenario == "nothing published":
        return
    if scenario == "unusable authorization server":
        peer.route("GET", PRM, answer({"authorization_servers": ["ftp://as.example.com"]}))
        peer.route("GET", ASM, answer(good_metadata))
        return
    peer.route("GET", PRM, good_prm)
    if scenario == "no authorization server metadata":
        return
    if scenario == "authorization server metadata without endpoints":
        peer.route("GET", ASM, answer({"issuer": peer.url}))
        return
    if scenario == "no PKCE S256":
        peer.route("GET", ASM, answer({**good_metadata, "code_challenge_methods_supported": ["plain"]}))
        return
    if scenario == "no registration endpoint":
        peer.route("GET", ASM, answer({**good_metadata, "registration_endpoint": None}))
        return
    if scenario == "only client_secret_post":
        peer.route(
            "GET", ASM, answer({**good_metadata, "token_endpoint_auth_methods_supported": ["client_secret_post"]})
        )
        return
    peer.route("GET", ASM, answer(good_metadata))
    if scenario == "registration refused":
        peer.route(
            "POST", "/register", answer({"error": "invalid_client_metadata", "error_description": SENTINEL}, 400)
        )
    elif scenario == "registration without client_id":
        peer.route("POST", "/register", answer({"client_secret": SENTINEL}, 201))
    elif scenario == "registration answer not JSON":
        peer.route("POST", "/register", (201, SENTINEL.encode(), {"Content-Type": "text/plain"}))
    elif scenario == "registration redirected elsewhere":
        peer.route("POST", "/register", redirect("https://elsewhere.example/register", 307))


@pytest.mark.parametrize(
    ("scenario", "step"),
    [
        ("nothing published", "protected-resource metadata"),
        ("unusable authorization server", "protected-resource metadata"),
        ("no authorization server metadata", "authorization server metadata"),
        ("authorization server metadata without endpoints", "authorization server metadata"),
        ("no PKCE S256", "authorization server metadata"),
        ("no registration endpoint", "client registration"),
        ("only client_secret_post", "client registration"),
        ("registration refused", "client registration"),
        ("registration without client_id", "client registration"),
        ("registration answer not JSON", "client registration"),
        ("registration redirected elsewhere", "client registration"),
    ],
)
def test_it_names_the_failed_step_and_hands_back_nothing_half_made(stubs, scenario, step):
    peer = stubs()
    _setup_failure(peer, scenario)

    with pytest.raises(OAuthError) as caught:
        discover(f"{peer.url}/mcp")

    error = caught.value
    assert error.message == "OAuth2 auto-discovery failed."
    assert error.step == step
    assert step in str(error)
    for text in (str(error), error.message, error.detail, repr(error)):
        assert SENTINEL not in text
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    if step != "client registration":
        assert peer.seen("POST") == []  # nothing was registered with a half-discovered server


def test_it_refuses_discovery_documents_over_1_mib(stubs):
    peer = stubs()
    peer.route("GET", PRM, answer({"authorization_servers": [peer.url]}))
    big = server_metadata(peer.url, peer.url, padding="x" * oauth.MAX_RESPONSE_BYTES)
    peer.route("GET", ASM, answer(big))
    peer.route("GET", OIDC, answer(big))
    peer.route("POST", "/register", registered())

    with pytest.raises(OAuthError) as caught:
        discover(peer.url)

    assert caught.value.step == "authorization server metadata"
    assert peer.seen("POST") == []


def test_it_accepts_a_discovery_document_just_under_1_mib(stubs):
    peer = stubs()
    peer.route("GET", PRM, answer({"authorization_servers": [peer.url]}))
    metadata = server_metadata(peer.url, peer.url, padding="")
    room = oauth.MAX_RESPONSE_BYTES - len(json.dumps(metadata).encode())
    peer.route("GET", ASM, answer({**metadata, "padding": "x" * room}))
    peer.route("POST", "/register", registered())

    assert discover(peer.url).client_id == "client-1"


def test_it_stops_reading_a_streamed_discovery_response_past_1_mib(stubs):
    peer = stubs()
    written: list[int] = []
    done = threading.Event()

    def endless(seen, handler):
        # No Content-Length: the cap has to hold while reading, not only on the declared size.
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        sent = 0
        try:
            handler.wfile.write(b'{"authorization_servers": ["' + peer.url.encode() + b'"], "padding": "')
            chunk = b"x" * 65536
            while sent < 64 * 1024 * 1024:
                handler.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        finally:
            written.append(sent)
            done.set()

    peer.route("GET", PRM, endless)

    with pytest.raises(OAuthError) as caught:
        discover(peer.url)

    assert caught.value.step == "protected-resource metadata"
    assert done.wait(10)
    assert written[0] < 32 * 1024 * 1024  # the client hung up long before the 64 MiB were through


def test_it_follows_a_same_origin_redirect(stubs):
    peer = stubs()
    peer.route("GET", f"{PRM}/mcp", redirect("/metadata/resource"))
    peer.route("GET", "/metadata/resource", answer({"authorization_servers": [peer.url]}))
    peer.route("GET", ASM, redirect(f"{peer.url}/metadata/server", 301))
    peer.route("GET", "/metadata/server", answer(server_metadata(peer.url, peer.url)))
    peer.route("POST", "/register", redirect("/register/v2", 307))
    peer.route("POST", "/register/v2", registered())

    config = discover(f"{peer.url}/mcp")

    assert config.client_id == "client-1"
    assert peer.seen() == [
        f"GET {PRM}/mcp",
        "GET /metadata/resource",
        f"GET {ASM}",
        "GET /metadata/server",
        "POST /register",
        "POST /register/v2",
    ]
    assert peer.requests[-1].json["redirect_uris"] == [REDIRECT_URI]  # the POST was re-sent as it was


def test_it_refuses_a_cross_origin_redirect(stubs):
    peer, other = stubs(), stubs()
    for stub in (peer, other):
        stub.route("GET", PRM, answer({"authorization_servers": [stub.url]}))
        stub.route("GET", ASM, answer(server_metadata(stub.url, stub.url)))
        stub.route("POST", "/register", registered())
    peer.routes.clear()
    peer.route("GET", f"{PRM}/mcp", redirect(f"{other.url}{PRM}"))
    peer.route("GET", PRM, redirect(f"{other.url}{PRM}", 307))
    peer.route("GET", ASM, redirect(f"{other.url}{ASM}", 308))
    peer.route("GET", OIDC, redirect(f"{other.url}{ASM}", 303))

    with pytest.raises(OAuthError) as caught:
        discover(f"{peer.url}/mcp")

    assert caught.value.step == "protected-resource metadata"
    assert other.requests == []


def test_it_refuses_a_redirect_from_http_to_https_on_the_same_host(stubs):
    peer = stubs()
    https_same_host = peer.url.replace("http://", "https://")
    peer.route("GET", PRM, redirect(f"{https_same_host}{PRM}"))

    with pytest.raises(OAuthError):
        discover(peer.url)

    assert peer.seen() == [f"GET {PRM}", f"GET {ASM}", f"GET {OIDC}"]


def test_it_gives_up_on_a_slow_discovery_peer(stubs, monkeypatch):
    monkeypatch.setattr(oauth, "TIMEOUT_SECONDS", 0.3)
    peer = stubs()

    def slow(seen, handler):
        time.sleep(1.5)
        return answer({"authorization_servers": [peer.url]})

    peer.route("GET", PRM, slow)
    peer.route("GET", ASM, slow)
    peer.route("GET", OIDC, slow)
    started = time.monotonic()

    with pytest.raises(OAuthError) as caught:
        discover(peer.url)

    assert caught.value.step == "protected-resource metadata"
    assert time.monotonic() - started < 1.5 * 3


def test_it_fails_discovery_cleanly_when_nothing_listens():
    with pytest.raises(OAuthError) as caught:
        discover(f"{closed_port_url()}/mcp")

    assert caught.value.step == "protected-resource metadata"


def test_it_refuses_a_resource_url_that_is_not_http():
    with pytest.raises(OAuthError) as caught:
        discover("ftp://files.example.com/mcp")

    assert caught.value.message == "OAuth2 auto-discovery failed."


# PKCE and the authorization URL ---------------------------------------------------------------------------------


def test_it_makes_s256_pkce_pairs():
    pairs = [oauth.new_pkce() for _ in range(50)]

    for verifier, challenge in pairs:
        assert re.fullmatch(r"[A-Za-z0-9\-._~]{43,128}", verifier)
        assert challenge == s256(verifier)
        assert "=" not in challenge and len(challenge) == 43
    assert len({verifier for verifier, _ in pairs}) == len(pairs)


def test_it_builds_the_authorization_url_with_pkce():
    config = OAuthConfig("client-1", "secret-1", "https://as.example/authorize?tenant=t1", "", "", "read write")
    verifier, challenge = oauth.new_pkce()

    url = oauth.authorization_url(
        config, redirect_uri=REDIRECT_URI, state="state-1", code_challenge=challenge, resource="https://mcp.example/mcp"
    )

    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "as.example", "/authorize")
    assert parse_qs(parts.query) == {
        "tenant": ["t1"],
        "response_type": ["code"],
        "client_id": ["client-1"],
        "redirect_uri": [REDIRECT_URI],
        "scope": ["read write"],
        "state": ["state-1"],
        "code_challenge": [challenge],
        "code_challenge_method": ["S256"],
        "resource": ["https://mcp.example/mcp"],
    }
    assert verifier not in url and "secret-1" not in url


def test_it_leaves_out_empty_scope_and_resource_from_the_authorization_url():
    config = OAuthConfig("client-1", "", "https://as.example/authorize", "", "", "")

    query = parse_qs(
        urlsplit(oauth.authorization_url(config, redirect_uri=REDIRECT_URI, state="s", code_challenge="c")).query
    )

    assert "scope" not in query and "resource" not in query
    assert query["code_challenge_method"] == ["S256"]


# Code exchange --------------------------------------------------------------------------------------------------


def token_endpoint(peer: Stub, challenge: str, **extra: Any) -> None:
    def reply(seen, handler):
        form = seen.form
        if form.get("grant_type") != "authorization_code" or form.get("code") != "code-1":
            return answer({"error": "invalid_grant", "error_description": SENTINEL}, 400)
        if s256(form.get("code_verifier", "")) != challenge:
            return answer({"error": "invalid_grant", "error_description": SENTINEL}, 400)
        return answer(
            {"access_token": "access-1", "refresh_token": "refresh-1", "token_type": "Bearer", "expires_in": 3600}
            | extra
        )

    peer.route("POST", "/token", reply)


def test_it_exchanges_a_code_with_the_pkce_verifier_as_a_public_client(stubs):
    peer = stubs()
    verifier, challenge = oauth.new_pkce()
    token_endpoint(peer, challenge, scope="read")
    config = OAuthConfig("public-1", "", f"{peer.url}/authorize", f"{peer.url}/token", "", "read")

    tokens = oauth.exchange_code(config, code="code-1", redirect_uri=REDIRECT_URI, code_verifier=verifier)

    assert tokens == TokenSet("access-1", "refresh-1", tokens.expires_at, "Bearer", "read")
    assert tokens.expires_at == pytest.approx(time.time() + 3600, abs=5)
    [request] = peer.requests
    assert "authorization" not in request.headers
    assert request.form == {
        "grant_type": "authorization_code",
        "code": "code-1",
        "redirect_uri": REDIRECT_URI,
        "code_verifier": verifier,
        "client_id": "public-1",
    }


def test_it_exchanges_a_code_with_http_basic_as_a_confidential_client(stubs):
    peer = stubs()
    verifier, challenge = oauth.new_pkce()
    token_endpoint(peer, challenge)
    config = OAuthConfig("client-1", "secret-1", f"{peer.url}/authorize", f"{peer.url}/token", "", "")

    tokens = oauth.exchange_code(
        config, code="code-1", redirect_uri=REDIRECT_URI, code_verifier=verifier, resource="https://mcp.example/mcp"
    )

    assert tokens.access_token == "access-1"
    [request] = peer.requests
    assert request.headers["authorization"] == "Basic " + base64.b64encode(b"client-1:secret-1").decode()
    assert "client_id" not in request.form and "client_secret" not in request.form
    assert request.form["resource"] == "https://mcp.example/mcp"


def test_it_reads_a_token_answer_without_lifetime_or_refresh_token(stubs):
    peer = stubs()
    peer.route("POST", "/token", answer({"access_token": "access-1", "token_type": "bearer"}))
    config = OAuthConfig("client-1", "", "", f"{peer.url}/token", "", "")

    tokens = oauth.exchange_code(config, code="c", redirect_uri=REDIRECT_URI, code_verifier="v" * 43)

    assert tokens == TokenSet("access-1", "", None, "bearer", "")


def _failing_token_endpoint(peer: Stub, how: str) -> str:
    if how == "closed port":
        return f"{closed_port_url()}/token"
    if how == "oauth error":
        peer.route("POST", "/token", answer({"error": "invalid_grant", "error_description": SENTINEL}, 400))
    elif how == "unknown error code":
        peer.route("POST", "/token", answer({"error": SENTINEL}, 400))
    elif how == "server error":
        peer.route("POST", "/token", (500, SENTINEL.encode(), {"Content-Type": "text/plain"}))
    elif how == "not JSON":
        peer.route("POST", "/token", (200, SENTINEL.encode(), {"Content-Type": "text/html"}))
    elif how == "no access token":
        peer.route("POST", "/token", answer({"token_type": "Bearer", "note": SENTINEL}))
    elif how == "redirect":
        peer.route("POST", "/token", redirect("/token2", 307))
        peer.route("POST", "/token2", answer({"access_token": "access-1", "token_type": "Bearer"}))
    elif how == "over 1 MiB":
        peer.route("POST", "/token", answer({"access_token": "a", "padding": "x" * oauth.MAX_RESPONSE_BYTES}))
    return f"{peer.url}/token"


FAILURES = ["closed port", "oauth error", "unknown error code", "server error", "not JSON", "no access token"]
FAILURES += ["redirect", "over 1 MiB"]


@pytest.mark.parametrize("how", FAILURES)
def test_it_reports_a_failed_exchange_without_provider_text(stubs, how):
    peer = stubs()
    config = OAuthConfig("client-1", "secret-1", "", _failing_token_endpoint(peer, how), "", "")

    with pytest.raises(OAuthError) as caught:
        oauth.exchange_code(config, code="code-1", redirect_uri=REDIRECT_URI, code_verifier="verifier-" + "v" * 40)

    error = caught.value
    assert error.message == "Failed to exchange authorization code for token."
    for text in (str(error), repr(error), error.detail):
        for secret in (SENTINEL, "secret-1", "code-1", "verifier-"):
            assert secret not in text
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    assert "POST /token2" not in peer.seen()  # a token request never follows a redirect


# Refresh --------------------------------------------------------------------------------------------------------


def test_it_refreshes_and_takes_a_rotated_refresh_token(stubs):
    peer = stubs()
    peer.route(
        "POST",
        "/token",
        answer({"access_token": "access-2", "refresh_token": "refresh-2", "token_type": "Bearer", "expires_in": 60}),
    )
    config = OAuthConfig("client-1", "secret-1", "", f"{peer.url}/token", "", "read write")

    tokens = oauth.refresh(config, refresh_token="refresh-1")

    assert (tokens.access_token, tokens.refresh_token) == ("access-2", "refresh-2")
    assert tokens.expires_at == pytest.approx(time.time() + 60, abs=5)
    [request] = peer.requests
    assert request.form == {"grant_type": "refresh_token", "refresh_token": "refresh-1"}
    assert request.headers["authorization"].startswith("Basic ")


def test_it_keeps_the_refresh_token_when_the_provider_issues_no_new_one(stubs):
    peer = stubs()
    peer.route("POST", "/token", answer({"access_token": "access-2", "token_type": "Bearer"}))
    config = OAuthConfig("public-1", "", "", f"{peer.url}/token", "", "")

    tokens = oauth.refresh(config, refresh_token="refresh-1")

    assert (tokens.access_token, tokens.refresh_token) == ("access-2", "refresh-1")
    assert peer.requests[0].form["client_id"] == "public-1"


def test_it_flags_invalid_grant_on_refresh(stubs):
    peer = stubs()
    peer.route("POST", "/token", answer({"error": "invalid_grant", "error_description": SENTINEL}, 400))
    config = OAuthConfig("client-1", "secret-1", "", f"{peer.url}/token", "", "")

    with pytest.raises(OAuthError) as caught:
        oauth.refresh(config, refresh_token="refresh-1")

    error = caught.value
    assert error.invalid_grant is True
    assert error.message == "Failed to refresh the OAuth2 token."
    assert SENTINEL not in str(error) and "refresh-1" not in str(error) and "secret-1" not in str(error)


@pytest.mark.parametrize("how", FAILURES)
def test_it_does_not_flag_other_refresh_failures_as_invalid_grant(stubs, how):
    if how == "oauth error":
        how = "unknown error code"
    peer = stubs()
    config = OAuthConfig("client-1", "secret-1", "", _failing_token_endpoint(peer, how), "", "")

    with pytest.raises(OAuthError) as caught:
        oauth.refresh(config, refresh_token="refresh-1")

    error = caught.value
    assert error.invalid_grant is False
    assert error.message == "Failed to refresh the OAuth2 token."
    for text in (str(error), repr(error)):
        assert SENTINEL not in text and "refresh-1" not in text


def test_it_needs_a_reconnect_without_a_refresh_token():
    config = OAuthConfig("client-1", "", "", f"{closed_port_url()}/token", "", "")

    with pytest.raises(OAuthError) as caught:
        oauth.refresh(config, refresh_token="")

    assert caught.value.invalid_grant is True


# Revocation -----------------------------------------------------------------------------------------------------


def revocation(peer: Stub, *replies: Answer, path: str = "/revoke", client_secret: str = "secret-1") -> OAuthConfig:
    queue = list(replies)
    peer.route("POST", path, lambda seen, handler: queue.pop(0) if queue else answer(None, 200))
    return OAuthConfig("client-1", client_secret, "", "", f"{peer.url}{path}", "")


def test_it_revokes_the_refresh_token_first(stubs):
    peer = stubs()
    config = revocation(peer, answer(None, 200))

    assert oauth.revoke(config, access_token="access-1", refresh_token="refresh-1") == (True, "")
    [request] = peer.requests
    assert request.form == {"token": "refresh-1", "token_type_hint": "refresh_token"}


def test_it_falls_back_to_the_access_token_on_unsupported_token_type(stubs):
    peer = stubs()
    config = revocation(peer, answer({"error": "unsupported_token_type"}, 400), answer(None, 204))

    assert oauth.revoke(config, access_token="access-1", refresh_token="refresh-1") == (True, "")
    assert [r.form for r in peer.requests] == [
        {"token": "refresh-1", "token_type_hint": "refresh_token"},
        {"token": "access-1", "token_type_hint": "access_token"},
    ]


def test_it_does_not_fall_back_on_other_revocation_errors(stubs):
    peer = stubs()
    config = revocation(peer, answer({"error": "invalid_client", "error_description": SENTINEL}, 401))

    revoked, error = oauth.revoke(config, access_token="access-1", refresh_token="refresh-1")

    assert (revoked, error) == (False, "revocation endpoint answered HTTP 401 (invalid_client)")
    assert len(peer.requests) == 1


def test_it_reports_when_the_access_token_is_refused_too(stubs):
    peer = stubs()
    config = revocation(
        peer, answer({"error": "unsupported_token_type"}, 400), answer({"error": "unsupported_token_type"}, 400)
    )

    assert oauth.revoke(config, access_token="access-1", refresh_token="refresh-1") == (
        False,
        "revocation endpoint answered HTTP 400 (unsupported_token_type)",
    )
    assert len(peer.requests) == 2


def test_it_revokes_the_access_token_when_there_is_no_refresh_token(stubs):
    peer = stubs()
    config = revocation(peer, answer(None, 200))

    assert oauth.revoke(config, access_token="access-1", refresh_token="") == (True, "")
    assert peer.requests[0].form == {"token": "access-1", "token_type_hint": "access_token"}


@pytest.mark.parametrize(("status", "revoked"), [(200, True), (204, True), (202, False), (201, False), (503, False)])
def test_it_counts_only_200_and_204_as_revoked(stubs, status, revoked):
    peer = stubs()
    config = revocation(peer, (status, b"", {}))

    result = oauth.revoke(config, access_token="access-1", refresh_token="refresh-1")

    assert result == ((True, "") if revoked else (False, f"revocation endpoint answered HTTP {status}"))


def test_it_authenticates_a_confidential_client_with_http_basic_on_revocation(stubs):
    peer = stubs()
    config = revocation(peer, answer(None, 200))

    oauth.revoke(config, access_token="access-1", refresh_token="refresh-1")

    [request] = peer.requests
    assert request.headers["authorization"] == "Basic " + base64.b64encode(b"client-1:secret-1").decode()
    assert "client_id" not in request.form and "client_secret" not in request.form
    assert request.headers["content-type"].startswith("application/x-www-form-urlencoded")


def test_it_sends_the_client_id_in_the_body_for_a_public_client_on_revocation(stubs):
    peer = stubs()
    config = revocation(peer, answer(None, 200), client_secret="")

    oauth.revoke(config, access_token="access-1", refresh_token="refresh-1")

    [request] = peer.requests
    assert "authorization" not in request.headers
    assert request.form == {"token": "refresh-1", "token_type_hint": "refresh_token", "client_id": "client-1"}


def test_it_never_puts_the_provider_body_in_the_revocation_error(stubs):
    peer = stubs()
    config = revocation(
        peer,
        answer({"error": f"{SENTINEL}_code", "error_description": SENTINEL}, 400),
    )

    revoked, error = oauth.revoke(config, access_token="access-1", refresh_token="refresh-1")

    assert (revoked, error) == (False, "revocation endpoint answered HTTP 400")
    peer2 = stubs()
    config = revocation(peer2, (500, f"<html>{SENTINEL} refresh-1</html>".encode(), {"Content-Type": "text/html"}))
    revoked, error = oauth.revoke(config, access_token="access-1", refresh_token="refresh-1")
    assert not revoked and SENTINEL not in error and "refresh-1" not in error and "secret-1" not in error


def test_it_refuses_a_plain_http_revocation_endpoint_off_loopback(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("no request may be made")

    monkeypatch.setattr("requests.Session.request", no_network)
    config = OAuthConfig("client-1", "secret-1", "", "", "http://as.example.com/revoke", "")

    assert oauth.revoke(config, access_token="a", refresh_token="r") == (
        False,
        "revocation endpoint must use HTTPS (plain HTTP only to a loopback address)",
    )


def test_it_reports_no_revocation_endpoint():
    config = OAuthConfig("client-1", "secret-1", "", "", "", "")

    assert oauth.revoke(config, access_token="a", refresh_token="r") == (False, "no revocation endpoint configured")


def test_it_reports_no_token_to_revoke(stubs):
    peer = stubs()
    config = revocation(peer)

    assert oauth.revoke(config, access_token="", refresh_token="") == (False, "no token to revoke")
    assert peer.requests == []


def test_it_never_raises_on_an_unreachable_revocation_endpoint():
    config = OAuthConfig("client-1", "secret-1", "", "", f"{closed_port_url()}/revoke", "")

    assert oauth.revoke(config, access_token="a", refresh_token="r") == (
        False,
        "revocation request failed: could not connect",
    )


def test_it_gives_up_on_a_slow_revocation_endpoint(stubs, monkeypatch):
    monkeypatch.setattr(oauth, "TIMEOUT_SECONDS", 0.3)
    peer = stubs()

    def slow(seen, handler):
        time.sleep(1.5)
        return answer(None, 200)

    peer.route("POST", "/revoke", slow)
    config = OAuthConfig("client-1", "secret-1", "", "", f"{peer.url}/revoke", "")

    assert oauth.revoke(config, access_token="a", refresh_token="r") == (False, "revocation request failed: timed out")


def test_it_follows_a_same_origin_redirect_on_revocation(stubs):
    peer = stubs()
    peer.route("POST", "/revoke", redirect("/oauth/revoke", 307))
    peer.route("POST", "/oauth/revoke", answer(None, 200))
    config = OAuthConfig("client-1", "secret-1", "", "", f"{peer.url}/revoke", "")

    assert oauth.revoke(config, access_token="access-1", refresh_token="refresh-1") == (True, "")
    assert peer.seen() == ["POST /revoke", "POST /oauth/revoke"]
    moved = peer.requests[-1]
    assert moved.form == {"token": "refresh-1", "token_type_hint": "refresh_token"}
    assert moved.headers["authorization"].startswith("Basic ")


def test_it_refuses_a_cross_origin_redirect_on_revocation(stubs):
    peer, other = stubs(), stubs()
    revocation(other, answer(None, 200))
    peer.route("POST", "/revoke", redirect(f"{other.url}/revoke", 307))
    config = OAuthConfig("client-1", "secret-1", "", "", f"{peer.url}/revoke", "")

    assert oauth.revoke(config, access_token="access-1", refresh_token="refresh-1") == (
        False,
        "revocation request failed: redirected to another origin",
    )
    assert other.requests == []


def test_it_does_not_turn_a_revocation_post_into_a_get_on_redirect(stubs):
    peer = stubs()
    peer.route("POST", "/revoke", redirect("/elsewhere", 302))
    peer.route("GET", "/elsewhere", answer(None, 200))
    config = OAuthConfig("client-1", "secret-1", "", "", f"{peer.url}/revoke", "")

    revoked, error = oauth.revoke(config, access_token="access-1", refresh_token="refresh-1")

    assert not revoked and error.startswith("revocation request failed")
    assert peer.seen() == ["POST /revoke"]


@pytest.mark.parametrize(
    ("url", "acceptable"),
    [
        ("https://as.example.com/revoke", True),
        ("http://127.0.0.1:8080/revoke", True),
        ("http://localhost/revoke", True),
        ("http://[::1]:9000/revoke", True),
        ("http://127.5.6.7/revoke", True),
        ("http://as.example.com/revoke", False),
        ("http://10.0.0.1/revoke", False),
        ("ftp://as.example.com/revoke", False),
        ("https://user:pass@as.example.com/revoke", False),
        ("https:///revoke", False),
        ("not a url", False),
        ("", False),
        ("https://as.example.com:99999/revoke", False),
    ],
)
def test_it_checks_revocation_urls(url, acceptable):
    problem = oauth.check_revocation_url(url)

    assert (problem is None) is acceptable
    if not acceptable:
        assert isinstance(problem, str) and problem


# Against the real authorization server (tests/peers/oauth_server.py) ---------------------------------------------


def test_it_runs_the_whole_flow_against_a_real_authorization_server(oauth_server):
    authz = oauth_server(issuer_path="/tenant")
    mcp = authz.protected_mcp_server()

    config = discover(mcp.url, client_name="Switchboard (acme)", scopes="mcp")

    assert (config.auth_url, config.token_url, config.revocation_url, config.scopes) == (
        authz.authorization_endpoint,
        authz.token_endpoint,
        authz.revocation_endpoint,
        "mcp",
    )
    [registration] = authz.registrations
    assert registration.status == 201
    assert registration.body["redirect_uris"] == [REDIRECT_URI]
    client = authz.clients[config.client_id]
    assert client.registered and config.client_secret and client.client_secret == config.client_secret
    assert authz.paths() == ["/.well-known/oauth-authorization-server/tenant", "/tenant/register"]

    verifier, challenge = oauth.new_pkce()
    url = oauth.authorization_url(
        config, redirect_uri=REDIRECT_URI, state="state-1", code_challenge=challenge, resource=mcp.url
    )
    params = callback_params(authz.approve(url))
    assert params["state"] == "state-1"
    assert authz.authorize_requests[-1].params["resource"] == mcp.url

    tokens = oauth.exchange_code(config, code=params["code"], redirect_uri=REDIRECT_URI, code_verifier=verifier)

    assert authz.validate_bearer(tokens.access_token) is not None
    assert tokens.refresh_token and tokens.token_type.lower() == "bearer" and tokens.scope == "mcp"
    assert tokens.expires_at == pytest.approx(time.time() + 3600, abs=5)
    assert authz.token_requests[-1].client_auth == "client_secret_basic"

    refreshed = oauth.refresh(config, refresh_token=tokens.refresh_token)

    assert refreshed.refresh_token and refreshed.refresh_token != tokens.refresh_token  # rotated
    assert authz.validate_bearer(refreshed.access_token) is not None

    assert oauth.revoke(config, access_token=refreshed.access_token, refresh_token=refreshed.refresh_token) == (
        True,
        "",
    )
    [revocation] = authz.revocations
    assert (revocation.token_type_hint, revocation.token_kind, revocation.client_auth) == (
        "refresh_token",
        "refresh_token",
        "client_secret_basic",
    )
    assert authz.token(refreshed.refresh_token).refresh_revoked

    with pytest.raises(OAuthError) as caught:
        oauth.refresh(config, refresh_token=refreshed.refresh_token)
    assert caught.value.invalid_grant is True


def test_it_runs_the_flow_as_a_public_client_against_a_real_authorization_server(oauth_server):
    authz = oauth_server(metadata_extra={"token_endpoint_auth_methods_supported": ["none"]})
    mcp = authz.protected_mcp_server()

    config = discover(mcp.url)

    assert config.client_secret == ""
    assert authz.registrations[0].body["token_endpoint_auth_method"] == "none"
    verifier, challenge = oauth.new_pkce()
    url = oauth.authorization_url(config, redirect_uri=REDIRECT_URI, state="s", code_challenge=challenge)
    code = callback_params(authz.approve(url))["code"]
    tokens = oauth.exchange_code(config, code=code, redirect_uri=REDIRECT_URI, code_verifier=verifier)
    assert authz.token_requests[-1].client_auth == "none"

    assert oauth.revoke(config, access_token=tokens.access_token, refresh_token=tokens.refresh_token) == (True, "")
    assert authz.revocations[0].client_auth == "none"


def test_it_refuses_a_wrong_pkce_verifier_at_a_real_authorization_server(oauth_server):
    authz = oauth_server()
    client = authz.add_client(secret="s3cret-value", redirect_uris=[REDIRECT_URI])
    config = OAuthConfig(
        client.client_id, client.client_secret, authz.authorization_endpoint, authz.token_endpoint, "", ""
    )
    _, challenge = oauth.new_pkce()
    other_verifier, _ = oauth.new_pkce()
    code = callback_params(
        authz.approve(oauth.authorization_url(config, redirect_uri=REDIRECT_URI, state="s", code_challenge=challenge))
    )["code"]

    with pytest.raises(OAuthError) as caught:
        oauth.exchange_code(config, code=code, redirect_uri=REDIRECT_URI, code_verifier=other_verifier)

    assert caught.value.message == "Failed to exchange authorization code for token."
    assert authz.token_requests[-1].error == "invalid_grant"
    assert "s3cret-value" not in str(caught.value) and code not in str(caught.value)


@pytest.mark.parametrize(
    ("options", "paths"),
    [
        (
            {"oauth_metadata_path_aware": False},
            ["/.well-known/oauth-authorization-server/t", "/.well-known/oauth-authorization-server", "/t/register"],
        ),
        (
            {"oauth_metadata_path_aware": False, "oauth_metadata": False},
            [
                "/.well-known/oauth-authorization-server/t",
                "/.well-known/oauth-authorization-server",
                "/t/.well-known/openid-configuration",
                "/t/register",
            ],
        ),
    ],
)
def test_it_falls_back_through_the_metadata_locations_of_a_real_authorization_server(oauth_server, options, paths):
    authz = oauth_server(issuer_path="/t", **options)
    mcp = authz.protected_mcp_server()

    config = discover(mcp.url)

    assert config.token_url == authz.token_endpoint
    assert authz.paths() == paths


@pytest.mark.parametrize(
    ("options", "mcp_options", "step"),
    [
        ({"registration": False}, {}, "client registration"),
        (
            {"oauth_metadata": False, "oauth_metadata_path_aware": False, "openid_configuration": False},
            {},
            "authorization server metadata",
        ),
        ({}, {"resource_metadata": None}, "protected-resource metadata"),
    ],
)
def test_it_registers_nothing_when_discovery_fails_at_a_real_authorization_server(
    oauth_server, options, mcp_options, step
):
    authz = oauth_server(issuer_path="/t", **options)
    mcp = authz.protected_mcp_server(**mcp_options)

    with pytest.raises(OAuthError) as caught:
        discover(mcp.url)

    assert (caught.value.message, caught.value.step) == ("OAuth2 auto-discovery failed.", step)
    assert authz.registrations == [] and authz.clients == {}


@pytest.mark.parametrize(
    ("mode", "expected", "hints"),
    [
        ("revoke", (True, ""), ["refresh_token"]),
        ("no_content", (True, ""), ["refresh_token"]),
        ("accepted", (False, "revocation endpoint answered HTTP 202"), ["refresh_token"]),
        ("unsupported_refresh", (True, ""), ["refresh_token", "access_token"]),
        ("redirect_same_origin", (True, ""), ["refresh_token", "refresh_token"]),
        (
            "redirect_cross_origin",
            (False, "revocation request failed: redirected to another origin"),
            ["refresh_token"],
        ),
        ("error", (False, "revocation endpoint answered HTTP 503 (temporarily_unavailable)"), ["refresh_token"]),
    ],
)
def test_it_follows_the_revocation_rules_against_a_real_authorization_server(oauth_server, mode, expected, hints):
    authz = oauth_server(revocation_mode=mode)
    client = authz.add_client(secret="s3cret-value")
    tokens = authz.mint_tokens(client.client_id, scope="mcp")
    config = OAuthConfig(
        client.client_id, client.client_secret, "", authz.token_endpoint, authz.revocation_endpoint, ""
    )

    result = oauth.revoke(config, access_token=tokens["access_token"], refresh_token=tokens["refresh_token"])

    assert result == expected
    assert [r.token_type_hint for r in authz.revocations] == hints
    assert all(r.client_auth == "client_secret_basic" for r in authz.revocations)
    assert all(r.host.startswith("127.0.0.1:") for r in authz.revocations)  # never went to the other origin
    for secret in (REVOCATION_BODY_SENTINEL, tokens["access_token"], tokens["refresh_token"], "s3cret-value"):
        assert secret not in result[1]


def test_it_hides_a_real_token_endpoint_failure(oauth_server):
    authz = oauth_server(token_endpoint_status=503)
    client = authz.add_client(secret="s3cret-value")
    config = OAuthConfig(client.client_id, client.client_secret, "", authz.token_endpoint, "", "")

    with pytest.raises(OAuthError) as exchange_error:
        oauth.exchange_code(config, code="code-1", redirect_uri=REDIRECT_URI, code_verifier="v" * 43)
    with pytest.raises(OAuthError) as refresh_error:
        oauth.refresh(config, refresh_token="rt_unknown")

    assert exchange_error.value.message == "Failed to exchange authorization code for token."
    assert refresh_error.value.invalid_grant is False
    for error in (exchange_error.value, refresh_error.value):
        assert TOKEN_BODY_SENTINEL not in str(error) and "s3cret-value" not in str(error)


def test_discovery_as_a_whole_ends_at_its_deadline(stubs, monkeypatch):
    monkeypatch.setattr(oauth, "TIMEOUT_SECONDS", 0.4)
    monkeypatch.setattr(oauth, "DISCOVERY_DEADLINE_SECONDS", 0.6)
    peer = stubs()

    def slow(seen, handler):
        time.sleep(1.5)
        return answer({"authorization_servers": [peer.url]})

    for path in (PRM, ASM, OIDC):
        peer.route("GET", path, slow)

    with pytest.raises(OAuthError) as caught:
        discover(peer.url)

    # Each request may take 0.4 s, but all of discovery only 0.6 s: the third request is never made.
    assert len(peer.seen()) == 2
    assert caught.value.detail == "gave up after 0.6 s"
    assert caught.value.message == oauth.DISCOVERY_FAILED


class Trickler:
    """A raw HTTP peer on 127.0.0.1 that answers every request with ``head``, then ``piece`` again and again (up to
    ``times``, ``pause`` apart) until the client goes away. ``asked`` holds the requests; ``sent`` how many pieces
    each answer got out before the client hung up."""

    def __init__(self, head: bytes, piece: bytes, *, pause: float, times: int) -> None:
        self.head, self.piece, self.pause, self.times = head, piece, pause, times
        self.asked: list[bytes] = []
        self.sent: list[int] = []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                self.asked.append(conn.recv(65536))
                count = 0
                try:
                    conn.sendall(self.head)
                    for _ in range(self.times):
                        conn.sendall(self.piece)
                        count += 1
                        time.sleep(self.pause)
                except OSError:
                    pass
                self.sent.append(count)

    def close(self) -> None:
        self.listener.close()

    def wait_for_hang_ups(self) -> None:
        """Each answer's count is known once the peer notices the closed connection (at its next send)."""
        waited = time.monotonic() + 5
        while len(self.sent) < len(self.asked) and time.monotonic() < waited:
            time.sleep(0.05)


def test_a_body_trickled_a_byte_at_a_time_cannot_outlast_the_deadline(monkeypatch):
    monkeypatch.setattr(oauth, "TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr(oauth, "DISCOVERY_DEADLINE_SECONDS", 1.0)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    peer = Trickler(head, b" ", pause=0.05, times=1000)
    try:
        with pytest.raises(OAuthError) as caught:
            discover(peer.url)
    finally:
        peer.close()

    assert caught.value.detail == "gave up after 1 s"
    peer.wait_for_hang_ups()
    # 1 s of a byte every 50 ms is about 20 bytes; iter_content would have waited for all 1000 (50 s).
    assert peer.sent and max(peer.sent) < 200


def test_a_compressed_body_is_refused_without_reading_it(monkeypatch):
    monkeypatch.setattr(oauth, "DISCOVERY_DEADLINE_SECONDS", 5.0)
    # A gzip header, then empty deflate blocks forever: nothing ever decodes.
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Transfer-Encoding: chunked\r\n\r\na\r\n\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\r\n"
    )
    peer = Trickler(head, b"5\r\n\x00\x00\x00\xff\xff\r\n", pause=0.01, times=400)
    try:
        with pytest.raises(OAuthError):
            discover(peer.url)
    finally:
        peer.close()

    peer.wait_for_hang_ups()
    assert peer.asked and all(b"accept-encoding: identity" in request.lower() for request in peer.asked)
    assert peer.sent and max(peer.sent) < 100  # each answer was dropped at its headers, not read for 4 s
