"""MCP OAuth2 end to end, against real peers on 127.0.0.1: the authlib authorization server of
``tests/peers/oauth_server.py`` and the test MCP server behind its ``BearerGate`` (``protected_mcp_server``).

Configuration (manual, and discovered at save time through RFC 9728 → RFC 8414 → RFC 7591, with nothing left behind
when discovery fails), Connect (state and PKCE S256 bound to the user and the server), every callback error, who may
connect, refresh (before use, one in flight per token, refusal → reconnect, the beat), chats (bearer per user, one
refresh and retry after a 401), Disconnect with each revocation answer, and no token or secret in any response, audit
event or log record. Nothing of the project is mocked.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.utils import timezone

from chats import mcp as chat_mcp
from chats import services as chat_services
from chats.models import Chat, ToolCall, TurnStatus
from mcpservers import oauth_services
from mcpservers import services as mcp_services
from mcpservers.models import AuthType, MCPServer, MCPUserToken, OAuthPending
from organizations import services as org_services
from organizations.models import AuditEvent, Membership, OrgGroup
from project import crypto
from tests.peers.oauth_server import (  # noqa: F401  (oauth_server_fixture registers ``oauth_server``)
    REVOCATION_BODY_SENTINEL,
    TOKEN_BODY_SENTINEL,
    OAuthPeer,
    callback_params,
    oauth_server_fixture,
)

API = "/api/v2/organizations/acme/mcp-servers"
SITE = "http://testserver"
CLIENT_SECRET = "client-s3cret-that-must-never-leak"
HTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
PROVIDER_ERROR = "OAuth2 provider returned an error."
MISSING_CODE = "Missing authorization code."
INVALID_STATE = "Invalid or missing OAuth2 state parameter."
EXCHANGE_FAILED = "Failed to exchange authorization code for token."
DISCOVERY_FAILED = "OAuth2 auto-discovery failed."
PEER_THREADS = {"oauth-peer", "protected-mcp-peer"}


@pytest.fixture(autouse=True)
def _site(settings):
    settings.SITE_URL = SITE  # the callback URL the provider sends the browser back to (the test client's host)
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def authz(oauth_server) -> OAuthPeer:
    return oauth_server()


@pytest.fixture
def resource(authz):
    """The test MCP server behind a gate that takes ``authz``'s access tokens."""
    return authz.protected_mcp_server()


@pytest.fixture
def mcp_url(authz) -> str:
    """An MCP server URL for tests that never reach the MCP server itself (nothing is started for it)."""
    return authz.url("/mcp")


@pytest.fixture
def bob(client_for) -> Client:
    return client_for("member")


# Helpers -----------------------------------------------------------------------------------------------------------


def connect_path(server: MCPServer, organization: str = "acme") -> str:
    return f"/api/v2/organizations/{organization}/mcp-servers/{server.pk}/oauth2/connect"


def callback_path(server_id: int) -> str:
    return f"/api/experimental/mcp/servers/{server_id}/oauth2/callback"


def disconnect_path(server_id: int) -> str:
    return f"/api/v2/mcp/servers/{server_id}/oauth2/disconnect"


def local(url: str) -> str:
    """The path and query of an absolute URL (what the Django test client requests)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def query(url: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlsplit(url).query).items()}


def make_server(world, authz: OAuthPeer, url: str, *, public: bool = False, **data) -> MCPServer:
    """A manually configured OAuth2 server: a client pre-registered at the peer (any redirect URI)."""
    client = authz.add_client(public=public, secret=None if public else CLIENT_SECRET)
    base = {
        "display_name": "Tracker",
        "slug": "tracker",
        "url": url,
        "enabled": True,
        "availability": "default_on",
        "auth_type": "oauth2",
        "oauth2_client_id": client.client_id,
        "oauth2_client_secret": "" if public else CLIENT_SECRET,
        "oauth2_auth_url": authz.authorization_endpoint,
        "oauth2_token_url": authz.token_endpoint,
        "oauth2_revocation_url": authz.revocation_endpoint,
        "oauth2_scopes": "mcp",
    }
    return mcp_services.mcp_server_create(actor=world.org_admin, organization=world.acme, data=base | data)


def start(client: Client, server: MCPServer, authz: OAuthPeer) -> str:
    """Connect, then let the provider approve: the callback URL the browser is sent back to."""
    response = client.get(connect_path(server))
    assert response.status_code == 302, response.content
    return authz.approve(response["Location"])


def finish(client: Client, location: str, **headers):
    return client.get(local(location), headers=headers)


def connected(client: Client, server: MCPServer, authz: OAuthPeer) -> MCPUserToken:
    response = finish(client, start(client, server, authz), Accept=HTML)
    assert response.status_code == 200, response.content
    return MCPUserToken.objects.get(server=server, user=response.wsgi_request.user)


def assert_error(response, status: int, message: str, *, html: bool) -> None:
    assert response.status_code == status, response.content
    body = response.content.decode()
    if html:
        assert response["Content-Type"].startswith("text/html")
        assert message in body and "Not connected" in body
        assert "data-oauth-complete" not in body
    else:
        assert response["Content-Type"].startswith("application/json")
        assert response.json() == {"message": message, "detail": "", "validations": []}


def peer_secrets(authz: OAuthPeer) -> set[str]:
    """Every token, code, verifier and client secret the provider issued or saw."""
    values = {CLIENT_SECRET}
    for token in authz.tokens:
        values |= {token.access_token, token.refresh_token or ""}
    values |= set(authz.codes)
    for request in authz.token_requests:
        values |= {request.form.get("code_verifier", ""), request.form.get("code", "")}
        values |= {request.form.get("refresh_token", ""), request.form.get("client_secret", "")}
    for client in authz.clients.values():
        values.add(client.client_secret or "")
    for record in authz.revocations:
        values.add(record.token or "")
    values.discard("")
    return values


def audit_text() -> str:
    return json.dumps(
        [
            [e.action, e.resource_name, e.changes, e.user_agent, e.actor_username, e.organization_name]
            for e in AuditEvent.objects.all()
        ],
        default=str,
    )


def raw_token_columns(token: MCPUserToken) -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT access_token, refresh_token FROM {MCPUserToken._meta.db_table} WHERE id = %s",  # noqa: S608
            [token.pk],
        )
        return cursor.fetchone()


def expire_here(token: MCPUserToken, seconds: int = -1) -> None:
    """Make the stored token expire ``seconds`` from now (negative: already expired) on Switchboard's side."""
    MCPUserToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() + timedelta(seconds=seconds))


# Configuration -----------------------------------------------------------------------------------------------------


def test_it_saves_a_manual_configuration_and_connects_with_it(world, client_for, bob, authz, mcp_url):
    admin = client_for("org_admin")
    client = authz.add_client(secret=CLIENT_SECRET)
    data = {
        "display_name": "Tracker",
        "url": mcp_url,
        "enabled": True,
        "auth_type": "oauth2",
        "oauth2_client_id": client.client_id,
        "oauth2_client_secret": CLIENT_SECRET,
        "oauth2_auth_url": authz.authorization_endpoint,
        "oauth2_token_url": authz.token_endpoint,
        "oauth2_revocation_url": authz.revocation_endpoint,
    }

    response = admin.post(API, json.dumps(data), content_type="application/json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["oauth2_client_id"], body["oauth2_auth_url"], body["oauth2_token_url"]) == (
        client.client_id,
        authz.authorization_endpoint,
        authz.token_endpoint,
    )
    assert body["oauth2_revocation_url"] == authz.revocation_endpoint and body["has_oauth2_secret"] is True
    assert CLIENT_SECRET not in response.content.decode()
    assert authz.registrations == [] and authz.paths() == []  # manual: no discovery at all
    server = MCPServer.objects.get(pk=body["id"])
    assert str(server.oauth2_client_secret) == CLIENT_SECRET

    token = connected(bob, server, authz)

    assert authz.validate_bearer(str(token.access_token)) is not None
    assert authz.token_requests[-1].client_auth == "client_secret_basic"


def test_it_discovers_and_registers_a_client_when_no_configuration_is_given(world, client_for, bob, authz, resource):
    admin = client_for("org_admin")
    data = {"display_name": "Tracker", "url": resource.url, "enabled": True, "auth_type": "oauth2"}

    response = admin.post(API, json.dumps(data), content_type="application/json")

    assert response.status_code == 201, response.content
    body = response.json()
    server = MCPServer.objects.get(pk=body["id"])
    # RFC 9728 at the MCP server, then RFC 8414 and RFC 7591 at the authorization server.
    assert resource.snapshot()[0].target == "/.well-known/oauth-protected-resource/mcp"
    assert authz.paths() == ["/.well-known/oauth-authorization-server", "/register"]
    [registration] = authz.registrations
    assert registration.body["redirect_uris"] == [SITE + callback_path(server.pk)]
    assert registration.body["token_endpoint_auth_method"] == "client_secret_basic"
    assert set(registration.body["grant_types"]) == {"authorization_code", "refresh_token"}
    assert registration.body["client_name"] == "Switchboard (Tracker)"
    registered = registration.response
    assert body["oauth2_client_id"] == registered["client_id"] == server.oauth2_client_id
    assert (server.oauth2_auth_url, server.oauth2_token_url, server.oauth2_revocation_url) == (
        authz.authorization_endpoint,
        authz.token_endpoint,
        authz.revocation_endpoint,
    )
    assert body["oauth2_revocation_url"] == authz.revocation_endpoint
    assert str(server.oauth2_client_secret) == registered["client_secret"] and body["has_oauth2_secret"] is True
    assert registered["client_secret"] not in response.content.decode()
    create = AuditEvent.objects.get(action="mcp_server.create", resource_id=str(server.pk))
    assert registered["client_secret"] not in json.dumps(create.changes)

    # The registered client only accepts that exact redirect URI: connecting works with it.
    token = connected(bob, server, authz)
    assert authz.token_requests[-1].client_id == registered["client_id"]
    assert authz.validate_bearer(str(token.access_token)) is not None


def test_it_discovers_through_the_service_with_the_resource_scopes(world, oauth_server):
    authz = oauth_server(metadata_extra={"token_endpoint_auth_methods_supported": ["none"]})
    resource = authz.protected_mcp_server(scopes=["mcp", "tickets"])

    server = mcp_services.mcp_server_create(
        actor=world.org_admin,
        organization=world.acme,
        data={"display_name": "Tracker", "url": resource.url, "auth_type": "oauth2"},
    )

    server.refresh_from_db()
    assert server.oauth2_scopes == "mcp tickets"
    assert server.oauth2_client_id == authz.registrations[0].response["client_id"]
    assert str(server.oauth2_client_secret or "") == ""  # a public client
    assert server.oauth2_revocation_url == authz.revocation_endpoint


def test_it_keeps_an_explicit_revocation_url_over_the_discovered_one(world, authz, resource):
    explicit = authz.url("/elsewhere/revoke")

    server = mcp_services.mcp_server_create(
        actor=world.org_admin,
        organization=world.acme,
        data={"display_name": "Tracker", "url": resource.url, "auth_type": "oauth2", "oauth2_revocation_url": explicit},
    )

    server.refresh_from_db()
    assert server.oauth2_revocation_url == explicit
    assert server.oauth2_client_id == authz.registrations[0].response["client_id"]


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
def test_it_leaves_no_server_behind_when_discovery_fails(world, client_for, oauth_server, options, mcp_options, step):
    authz = oauth_server(**options)
    resource = authz.protected_mcp_server(**mcp_options)
    data = {"display_name": "Tracker", "url": resource.url, "enabled": True, "auth_type": "oauth2"}

    response = client_for("org_admin").post(API, json.dumps(data), content_type="application/json")

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["message"] == DISCOVERY_FAILED
    assert body["validations"] == [{"field": "oauth2_client_id", "detail": f"{step} failed"}]
    assert MCPServer.objects.count() == 0
    assert not AuditEvent.objects.filter(action="mcp_server.create").exists()
    assert authz.clients == {}

    with pytest.raises(mcp_services.MCPConfigError) as caught:
        mcp_services.mcp_server_create(actor=world.org_admin, organization=world.acme, data=data)
    assert (caught.value.status, caught.value.message) == (400, DISCOVERY_FAILED)
    assert MCPServer.objects.count() == 0


def test_it_keeps_the_server_as_it_was_when_discovery_fails_on_update(world, client_for, oauth_server):
    authz = oauth_server(registration=False)
    resource = authz.protected_mcp_server()
    server = mcp_services.mcp_server_create(
        actor=world.org_admin, organization=world.acme, data={"display_name": "Tracker", "url": resource.url}
    )

    response = client_for("org_admin").patch(
        f"{API}/{server.pk}", json.dumps({"auth_type": "oauth2"}), content_type="application/json"
    )

    assert response.status_code == 400 and response.json()["message"] == DISCOVERY_FAILED
    server.refresh_from_db()
    assert (server.auth_type, server.oauth2_client_id) == (AuthType.NONE, "")
    assert not AuditEvent.objects.filter(action="mcp_server.update").exists()


# Connect -----------------------------------------------------------------------------------------------------------


def test_it_connects_a_member_through_the_provider(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)

    response = bob.get(connect_path(server))

    assert response.status_code == 302
    location = response["Location"]
    assert location.split("?")[0] == authz.authorization_endpoint
    params = query(location)
    assert params["response_type"] == "code" and params["client_id"] == server.oauth2_client_id
    assert params["redirect_uri"] == SITE + callback_path(server.pk)
    assert params["code_challenge_method"] == "S256" and params["scope"] == "mcp"
    assert params["resource"] == mcp_url
    pending = OAuthPending.objects.get(state=params["state"])
    assert (pending.user, pending.server) == (world.member, server)
    assert len(params["state"]) >= 32
    assert create_s256_code_challenge(str(pending.code_verifier)) == params["code_challenge"]
    assert str(pending.code_verifier) not in location

    callback = authz.approve(location)
    assert callback_params(callback)["state"] == params["state"]
    page = finish(bob, callback, Accept=HTML)

    assert page.status_code == 200
    html = page.content.decode()
    assert "data-oauth-complete" in html and f'data-server-id="{server.pk}"' in html
    assert "oauth-complete.js" in html
    [token] = MCPUserToken.objects.all()
    assert (token.user, token.server) == (world.member, server)
    [issued] = authz.tokens
    assert (str(token.access_token), str(token.refresh_token)) == (issued.access_token, issued.refresh_token)
    assert token.expires_at is not None and not token.needs_reconnect
    raw_access, raw_refresh = raw_token_columns(token)
    for raw, plain in ((raw_access, issued.access_token), (raw_refresh, issued.refresh_token)):
        assert raw.startswith("gAAAAA") and plain not in raw  # a Fernet token at rest
        assert crypto.decrypt(raw) == plain
    # The token endpoint got the verifier bound to this state, and the same redirect URI.
    exchange = authz.token_requests[-1]
    assert exchange.grant_type == "authorization_code"
    assert exchange.form["code_verifier"] == str(pending.code_verifier)
    assert exchange.form["redirect_uri"] == params["redirect_uri"]
    assert not OAuthPending.objects.exists()  # single use
    assert oauth_services.connection_state(world.member, server) == "connected"
    event = AuditEvent.objects.get(action="mcp_server.oauth2_connect")
    assert (event.actor, event.outcome, event.resource_id) == (world.member, "success", str(server.pk))
    for text in (location, callback, html):
        assert issued.access_token not in text and issued.refresh_token not in text
    # Nor anything the member can read afterwards.
    for path in (f"{API}/{server.pk}", API, "/settings/mcp-connections/"):
        seen = bob.get(path)
        assert seen.status_code == 200
        assert issued.access_token not in seen.content.decode() and CLIENT_SECRET not in seen.content.decode()


def test_it_replaces_the_token_when_the_member_connects_again(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    first = connected(bob, server, authz)
    MCPUserToken.objects.filter(pk=first.pk).update(needs_reconnect=True)

    second = connected(bob, server, authz)

    assert MCPUserToken.objects.count() == 1 and second.pk == first.pk
    assert str(second.access_token) == authz.tokens[-1].access_token != str(first.access_token)
    assert not second.needs_reconnect


@pytest.mark.parametrize("html", [False, True], ids=["json", "html"])
def test_it_reports_a_provider_error(world, bob, authz, mcp_url, html):
    server = make_server(world, authz, mcp_url)
    authz.deny = True

    location = start(bob, server, authz)
    assert callback_params(location)["error"] == "access_denied"
    response = finish(bob, location, **({"Accept": HTML} if html else {}))

    assert_error(response, 400, PROVIDER_ERROR, html=html)
    assert not MCPUserToken.objects.exists()
    assert authz.token_calls["authorization_code"] == 0


def test_the_popup_page_names_its_icon(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    authz.deny = True

    page = finish(bob, start(bob, server, authz), Accept=HTML).content.decode()

    assert 'rel="icon"' in page


@pytest.mark.parametrize("html", [False, True], ids=["json", "html"])
def test_it_reports_a_missing_code(world, bob, authz, mcp_url, html):
    server = make_server(world, authz, mcp_url)
    params = callback_params(start(bob, server, authz))

    response = bob.get(callback_path(server.pk), {"state": params["state"]}, headers={"Accept": HTML} if html else {})

    assert_error(response, 400, MISSING_CODE, html=html)
    assert not MCPUserToken.objects.exists() and authz.token_calls["authorization_code"] == 0


@pytest.mark.parametrize("state", [None, "", "not-a-state-we-issued"], ids=["absent", "empty", "unknown"])
@pytest.mark.parametrize("html", [False, True], ids=["json", "html"])
def test_it_refuses_a_missing_or_unknown_state(world, bob, authz, mcp_url, state, html):
    server = make_server(world, authz, mcp_url)
    params = callback_params(start(bob, server, authz))
    sent = {"code": params["code"]} | ({} if state is None else {"state": state})

    response = bob.get(callback_path(server.pk), sent, headers={"Accept": HTML} if html else {})

    assert_error(response, 400, INVALID_STATE, html=html)
    assert not MCPUserToken.objects.exists() and authz.token_calls["authorization_code"] == 0


def test_it_refuses_a_replayed_callback(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    location = start(bob, server, authz)
    assert finish(bob, location).status_code == 200
    token = MCPUserToken.objects.get()

    replay = finish(bob, location)

    assert_error(replay, 400, INVALID_STATE, html=False)
    assert authz.token_calls["authorization_code"] == 1  # the code never went to the provider twice
    assert MCPUserToken.objects.get().access_token == token.access_token


def test_it_refuses_a_state_issued_to_another_user(world, bob, client_for, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    location = start(bob, server, authz)

    stolen = finish(client_for("org_admin"), location)

    assert_error(stolen, 400, INVALID_STATE, html=False)
    assert not MCPUserToken.objects.exists() and authz.token_calls["authorization_code"] == 0


def test_it_refuses_a_state_issued_for_another_server(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    other = make_server(world, authz, mcp_url, display_name="Other", slug="other")
    params = callback_params(start(bob, server, authz))

    response = bob.get(callback_path(other.pk), params)

    assert_error(response, 400, INVALID_STATE, html=False)
    assert not MCPUserToken.objects.exists() and authz.token_calls["authorization_code"] == 0


def test_it_needs_a_session_for_the_callback(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    location = start(bob, server, authz)

    response = Client().get(local(location))

    assert response.status_code == 401
    assert not MCPUserToken.objects.exists() and OAuthPending.objects.count() == 1


@pytest.mark.parametrize("how", ["provider answers 500", "wrong code"])
@pytest.mark.parametrize("html", [False, True], ids=["json", "html"])
def test_it_reports_a_failed_code_exchange(world, bob, authz, mcp_url, how, html):
    server = make_server(world, authz, mcp_url)
    params = callback_params(start(bob, server, authz))
    if how == "wrong code":
        params["code"] = "not-the-code-" + params["code"][:4]
    else:
        authz.token_endpoint_status = 500

    response = bob.get(callback_path(server.pk), params, headers={"Accept": HTML} if html else {})

    assert_error(response, 502, EXCHANGE_FAILED, html=html)
    assert authz.token_calls["authorization_code"] == 1
    assert TOKEN_BODY_SENTINEL not in response.content.decode() and CLIENT_SECRET not in response.content.decode()
    assert not MCPUserToken.objects.exists()
    assert not OAuthPending.objects.exists()  # the state is spent either way


def test_a_provider_error_without_a_state_of_the_caller_leaves_no_audit_event(world, client_for, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    outsider = client_for("outsider")

    response = outsider.get(callback_path(server.pk), {"error": "access_denied", "state": "forged"})
    missing = outsider.get(callback_path(server.pk + 1000), {"error": "access_denied", "state": "forged"})

    assert response.status_code == 400
    assert not AuditEvent.objects.filter(organization=world.acme, actor=world.outsider).exists()
    assert response.json() == missing.json()  # a server of another organization is not told apart


@pytest.mark.parametrize("who", ["outsider", "removed_from_acl", "removed_from_organization", "server_disabled"])
def test_it_hides_connect_from_someone_who_may_not_use_the_server(world, client_for, authz, mcp_url, who):
    server = make_server(world, authz, mcp_url)
    client = client_for("outsider" if who == "outsider" else "member")
    if who == "removed_from_acl":
        everyone = OrgGroup.objects.get(organization=world.acme, is_everyone=True)
        mcp_services.mcp_server_set_acl(actor=world.org_admin, server=server, group_roles={str(everyone.pk): ""})
    elif who == "removed_from_organization":
        membership = Membership.objects.get(organization=world.acme, user=world.member)
        org_services.membership_remove(actor=world.org_admin, membership=membership)
    elif who == "server_disabled":
        mcp_services.mcp_server_update(actor=world.org_admin, server=server, data={"enabled": False})

    response = client.get(connect_path(server))

    assert response.status_code == 404
    assert not OAuthPending.objects.exists() and authz.authorize_requests == []


def test_it_needs_a_session_to_connect(world, authz, mcp_url):
    server = make_server(world, authz, mcp_url)

    assert Client().get(connect_path(server)).status_code == 401
    assert not OAuthPending.objects.exists()


def test_it_refuses_to_connect_to_a_server_without_oauth2(world, bob, authz, mcp_url):
    server = mcp_services.mcp_server_create(
        actor=world.org_admin,
        organization=world.acme,
        data={"display_name": "Plain", "url": mcp_url, "enabled": True},
    )

    response = bob.get(connect_path(server))

    assert response.status_code == 400 and response.json()["message"] == "This MCP server does not use OAuth2."
    assert not OAuthPending.objects.exists()


# Refresh -----------------------------------------------------------------------------------------------------------


def test_it_uses_a_fresh_token_without_refreshing(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    token = connected(bob, server, authz)

    assert oauth_services.access_token_for(user=world.member, server=server) == str(token.access_token)
    assert authz.token_calls["refresh_token"] == 0


def test_it_refreshes_a_token_about_to_expire_before_use_and_keeps_the_rotation(world, bob, oauth_server):
    authz = oauth_server(access_token_lifetime=30)  # inside the refresh margin from the start
    server = make_server(world, authz, authz.url("/mcp"))
    old = connected(bob, server, authz)
    old_access, old_refresh = str(old.access_token), str(old.refresh_token)
    assert oauth_services.connection_state(world.member, server) == "connected"

    access = oauth_services.access_token_for(user=world.member, server=server)

    assert authz.token_calls["refresh_token"] == 1
    refresh_request = authz.token_requests[-1]
    assert refresh_request.form["refresh_token"] == old_refresh
    assert refresh_request.client_auth == "client_secret_basic"
    newest = authz.tokens[-1]
    assert access == newest.access_token != old_access
    token = MCPUserToken.objects.get(pk=old.pk)
    assert str(token.refresh_token) == newest.refresh_token != old_refresh  # rotation stored
    assert authz.token(old_refresh).refresh_rotated
    assert token.refreshed_at > old.refreshed_at and token.expires_at >= old.expires_at
    assert authz.validate_bearer(access) is not None


def test_it_refreshes_a_token_that_expired_while_unused(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    token = connected(bob, server, authz)
    expire_here(token)
    authz.expire_access_tokens()
    assert oauth_services.connection_state(world.member, server) == "expired"

    access = oauth_services.access_token_for(user=world.member, server=server)

    assert access == authz.tokens[-1].access_token and authz.validate_bearer(access) is not None
    assert authz.token_calls["refresh_token"] == 1
    assert oauth_services.connection_state(world.member, server) == "connected"


def test_it_lets_only_one_of_two_concurrent_callers_refresh(transactional_db, world, oauth_server):
    authz = oauth_server(token_delay=0.5)
    server = make_server(world, authz, authz.url("/mcp"))
    client = Client()
    client.force_login(world.member)
    token = connected(client, server, authz)
    expire_here(token)
    authz.reset_records()
    barrier = threading.Barrier(2)
    results: list[str | None] = []
    errors: list[BaseException] = []

    def use() -> None:
        try:
            barrier.wait(timeout=5)
            results.append(oauth_services.access_token_for(user=world.member, server=server))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=use) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    assert authz.token_calls["refresh_token"] == 1  # the second caller waited and found the token fresh
    assert authz.reuse_detections == 0
    newest = authz.tokens[-1]
    assert results == [newest.access_token, newest.access_token]
    assert str(MCPUserToken.objects.get(pk=token.pk).refresh_token) == newest.refresh_token


def reuse_the_refresh_token(authz: OAuthPeer, server: MCPServer, token: MCPUserToken) -> None:
    """Someone else uses the stored refresh token first: the one Switchboard holds is now a rotated one."""
    from mcpservers import oauth

    oauth.refresh(oauth_services.config_for(server), refresh_token=str(token.refresh_token))


@pytest.mark.parametrize("how", ["revoked at the provider", "refresh token reused"])
def test_it_asks_for_a_reconnect_when_the_provider_refuses_the_refresh(world, bob, authz, mcp_url, caplog, how):
    server = make_server(world, authz, mcp_url)
    token = connected(bob, server, authz)
    if how == "revoked at the provider":
        authz.revoke_all()
    else:
        reuse_the_refresh_token(authz, server, token)
    expire_here(token)
    calls_before = authz.token_calls["refresh_token"]

    assert oauth_services.access_token_for(user=world.member, server=server) is None

    assert authz.token_calls["refresh_token"] == calls_before + 1
    assert authz.token_requests[-1].error == "invalid_grant"
    token.refresh_from_db()
    assert token.needs_reconnect
    assert oauth_services.connection_state(world.member, server) == "needs_reconnect"
    event = AuditEvent.objects.get(action="mcp_server.oauth2_refresh")
    assert (event.actor, event.outcome, event.resource_id) == (world.member, "denied", str(server.pk))
    # No second attempt: the member has to connect again.
    assert oauth_services.access_token_for(user=world.member, server=server) is None
    assert authz.token_calls["refresh_token"] == calls_before + 1
    page = bob.get("/settings/mcp-connections/").content.decode()
    assert "needs reconnect" in page and connect_path(server) in page
    assert str(token.refresh_token) not in caplog.text and str(token.access_token) not in caplog.text


def test_it_keeps_the_connection_after_a_passing_refresh_failure(world, bob, authz, mcp_url, caplog):
    server = make_server(world, authz, mcp_url)
    token = connected(bob, server, authz)
    expire_here(token)
    authz.token_endpoint_status = 503

    assert oauth_services.access_token_for(user=world.member, server=server) is None

    token.refresh_from_db()
    assert not token.needs_reconnect
    assert oauth_services.connection_state(world.member, server) == "expired"
    assert AuditEvent.objects.get(action="mcp_server.oauth2_refresh").outcome == "denied"
    assert TOKEN_BODY_SENTINEL not in caplog.text and str(token.refresh_token) not in caplog.text

    authz.token_endpoint_status = None  # the provider is back, but for a short pause nobody asks it again
    asked = authz.token_calls["refresh_token"]
    assert oauth_services.access_token_for(user=world.member, server=server) is None
    assert authz.token_calls["refresh_token"] == asked

    cache.delete(f"mcp-oauth2-refresh-failed:{token.pk}")  # the pause is over: the next use refreshes
    assert oauth_services.access_token_for(user=world.member, server=server) == authz.tokens[-1].access_token


def test_a_token_due_for_refresh_is_still_used_while_the_provider_is_unreachable(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    token = connected(bob, server, authz)
    MCPUserToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() + timedelta(seconds=30))
    authz.token_endpoint_status = 503

    assert oauth_services.access_token_for(user=world.member, server=server) == str(token.access_token)
    assert oauth_services.access_token_for(user=world.member, server=server) == str(token.access_token)
    assert authz.token_calls["refresh_token"] == 1


def test_a_tool_call_whose_refresh_fails_for_now_is_not_told_to_reconnect(world, bob, authz, resource):
    server = make_server(world, authz, resource.url)
    token = connected(bob, server, authz)
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    echo = next(tool for tool in chat_mcp.mcp_tools(chat, None) if tool.name == "tracker__echo")
    expire_here(token)
    authz.token_endpoint_status = 503

    result = echo.handler({"text": "hi"}, "call-9")

    assert result.is_error and "try again in a minute" in str(result.content)
    assert "reconnect" not in str(result.content)


def test_it_keeps_the_refresh_token_when_the_provider_does_not_rotate_it(world, bob, oauth_server):
    authz = oauth_server(rotate_refresh_tokens=False)
    server = make_server(world, authz, authz.url("/mcp"))
    token = connected(bob, server, authz)
    expire_here(token)

    access = oauth_services.access_token_for(user=world.member, server=server)

    assert access == authz.tokens[-1].access_token != str(token.access_token)
    assert "refresh_token" not in authz.token_requests[-1].response
    assert str(MCPUserToken.objects.get(pk=token.pk).refresh_token) == str(token.refresh_token)


def test_it_asks_for_a_reconnect_when_an_expired_token_has_no_refresh_token(world, bob, oauth_server):
    authz = oauth_server(issue_refresh_tokens=False)
    server = make_server(world, authz, authz.url("/mcp"))
    token = connected(bob, server, authz)
    assert str(token.refresh_token or "") == ""
    expire_here(token)
    assert oauth_services.connection_state(world.member, server) == "needs_reconnect"

    assert oauth_services.access_token_for(user=world.member, server=server) is None

    assert authz.token_calls["refresh_token"] == 0
    assert MCPUserToken.objects.get(pk=token.pk).needs_reconnect


def test_it_uses_a_token_without_expiry_or_refresh_token_as_it_is(world, bob, oauth_server):
    authz = oauth_server(access_token_lifetime=None, issue_refresh_tokens=False)  # e.g. GitHub OAuth apps
    server = make_server(world, authz, authz.url("/mcp"))
    token = connected(bob, server, authz)
    assert token.expires_at is None
    assert oauth_services.connection_state(world.member, server) == "connected"

    access = oauth_services.access_token_for(user=world.member, server=server)

    assert access == str(token.access_token)
    assert not MCPUserToken.objects.get(pk=token.pk).needs_reconnect


def test_it_does_not_refresh_a_token_without_expiry_on_every_use(world, bob, oauth_server):
    authz = oauth_server(access_token_lifetime=None)
    server = make_server(world, authz, authz.url("/mcp"))
    token = connected(bob, server, authz)
    assert token.expires_at is None

    for _ in range(3):
        oauth_services.access_token_for(user=world.member, server=server)

    assert authz.token_calls["refresh_token"] == 0


def test_the_beat_refreshes_tokens_about_to_expire(world, client_for, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    soon = connected(client_for("member"), server, authz)
    later = connected(client_for("org_admin"), server, authz)
    broken = connected(client_for("auditor"), server, authz)
    expire_here(soon, 30)  # inside the refresh margin: refreshed whatever the jitter
    expire_here(later, 7200)
    expire_here(broken, 30)
    MCPUserToken.objects.filter(pk=broken.pk).update(needs_reconnect=True)
    authz.reset_records()

    assert oauth_services.refresh_expiring() == 1

    assert authz.token_calls["refresh_token"] == 1
    assert authz.token_requests[-1].form["refresh_token"] == str(soon.refresh_token)
    refreshed = MCPUserToken.objects.get(pk=soon.pk)
    assert str(refreshed.access_token) == authz.tokens[-1].access_token
    assert refreshed.expires_at > timezone.now() + timedelta(minutes=30)
    assert MCPUserToken.objects.get(pk=later.pk).access_token == later.access_token
    assert MCPUserToken.objects.get(pk=broken.pk).access_token == broken.access_token


# Chats -------------------------------------------------------------------------------------------------------------


@pytest.fixture
def send(django_capture_on_commit_callbacks):
    def run(chat: Chat, content: str):
        with django_capture_on_commit_callbacks(execute=True):
            turn = chat_services.message_send(chat=chat, content=content)
        turn.refresh_from_db()
        return turn

    return run


def bearers(resource) -> list[str | None]:
    return [r.headers.get("authorization") for r in resource.snapshot() if not r.target.startswith("/.well-known/")]


def test_a_chat_lists_the_tools_with_the_member_s_own_bearer(world, bob, authz, resource):
    server = make_server(world, authz, resource.url)
    token = connected(bob, server, authz)
    resource.reset()

    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    names = [tool.name for tool in chat_mcp.mcp_tools(chat, None)]

    assert "tracker__echo" in names and "tracker__add" in names
    assert set(bearers(resource)) == {f"Bearer {token.access_token}"}
    assert all(checked is not None for _, checked in resource.gate.checks)
    # Someone who has not connected gets none of its tools (and nothing is sent for them).
    resource.reset()
    other = chat_services.chat_create(owner=world.org_admin, organization=world.acme)
    assert [t.name for t in chat_mcp.mcp_tools(other, None) if t.name.startswith("tracker__")] == []
    assert resource.snapshot() == []
    rows = {row.server.pk: row for row in chat_mcp.picker(other)}
    assert rows[server.pk].connection == "not_connected" and rows[server.pk].connect_url == connect_path(server)


def test_a_tool_call_refused_with_401_refreshes_once_and_retries(world, bob, authz, resource):
    server = make_server(world, authz, resource.url)
    token = connected(bob, server, authz)
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    echo = next(tool for tool in chat_mcp.mcp_tools(chat, None) if tool.name == "tracker__echo")
    authz.expire_access_tokens()  # the gate refuses the stored (still "fresh" here) access token from now on
    resource.reset()
    resource.gate.checks.clear()

    result = echo.handler({"text": "after the refresh"}, "call-7")

    assert not result.is_error and "after the refresh" in result.content
    assert authz.token_calls["refresh_token"] == 1
    fresh = MCPUserToken.objects.get(pk=token.pk)
    assert str(fresh.access_token) == authz.tokens[-1].access_token != str(token.access_token)
    sent = bearers(resource)
    assert sent[0] == f"Bearer {token.access_token}" and sent[-1] == f"Bearer {fresh.access_token}"
    assert resource.gate.checks[0][1] is None and resource.gate.checks[-1][1] is not None  # refused, then let in
    metas = resource.tool_call_metas
    assert metas and all(meta == {"com.coder/tool_call_id": "call-7"} for meta in metas)


def test_a_tool_call_gives_up_after_one_refresh(world, bob, authz, resource):
    server = make_server(world, authz, resource.url)
    connected(bob, server, authz)
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    echo = next(tool for tool in chat_mcp.mcp_tools(chat, None) if tool.name == "tracker__echo")
    resource.gate.scopes = ["admin"]  # no token of this member will ever do now

    result = echo.handler({"text": "hi"}, "call-8")

    assert result.is_error
    assert authz.token_calls["refresh_token"] == 1  # one refresh, one retry, then the error


def test_a_server_that_refuses_every_token_gets_one_refresh_a_minute_not_one_per_call(world, bob, authz, resource):
    server = make_server(world, authz, resource.url)
    connected(bob, server, authz)
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    echo = next(tool for tool in chat_mcp.mcp_tools(chat, None) if tool.name == "tracker__echo")
    resource.gate.scopes = ["admin"]

    results = [echo.handler({"text": "hi"}, f"call-{n}") for n in range(3)]

    assert all(result.is_error for result in results)
    assert authz.token_calls["refresh_token"] == 1
    # Still connected: the server refused, the provider did not; the member is not told to reconnect.
    assert oauth_services.connection_state(world.member, server) == "connected"
    assert "reconnect" not in str(results[-1].content)


def test_a_refused_token_that_another_request_already_replaced_is_not_refreshed_again(world, bob, authz, resource):
    server = make_server(world, authz, resource.url)
    token = connected(bob, server, authz)
    old = str(token.access_token)
    assert oauth_services.access_token_for(user=world.member, server=server, rejected=old) != old
    authz.reset_records()

    again = oauth_services.access_token_for(user=world.member, server=server, rejected=old)  # a late 401 for it

    assert again == str(MCPUserToken.objects.get(pk=token.pk).access_token) != old
    assert authz.token_calls["refresh_token"] == 0


def test_a_chat_turn_whose_token_expired_at_the_provider_refreshes_and_answers(world, bob, authz, resource, send):
    server = make_server(world, authz, resource.url)
    token = connected(bob, server, authz)
    authz.expire_access_tokens()  # Switchboard still thinks it fresh: the gate's 401 is how it learns
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)

    turn = send(chat, "tracker__echo hello through the gate")

    assert turn.status == TurnStatus.DONE
    call = ToolCall.objects.get()
    assert not call.is_error and "hello through the gate" in call.result
    answer = chat.messages.filter(role="assistant").order_by("-id").first()
    assert "The tool **tracker__echo** answered" in answer.content and "hello through the gate" in answer.content
    fresh = MCPUserToken.objects.get(pk=token.pk)
    assert authz.validate_bearer(str(fresh.access_token)) is not None and authz.reuse_detections == 0
    assert str(token.access_token) not in answer.content and str(fresh.access_token) not in call.result


def test_a_chat_turn_refreshes_only_once_after_the_listing_is_refused(world, bob, authz, resource, send):
    server = make_server(world, authz, resource.url)
    connected(bob, server, authz)
    authz.expire_access_tokens()
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    resource.gate.checks.clear()

    send(chat, "tracker__echo hello through the gate")

    refused = [path for path, token in resource.gate.checks if token is None]
    assert authz.token_calls["refresh_token"] == 1, f"{len(refused)} requests refused by the gate"


# Disconnect --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "revoked", "error", "hints"),
    [
        ("revoke", True, "", ["refresh_token"]),
        ("no_content", True, "", ["refresh_token"]),
        ("accepted", False, "revocation endpoint answered HTTP 202", ["refresh_token"]),
        ("unsupported_refresh", True, "", ["refresh_token", "access_token"]),
        ("redirect_same_origin", True, "", ["refresh_token", "refresh_token"]),
        (
            "redirect_cross_origin",
            False,
            "revocation request failed: redirected to another origin",
            ["refresh_token"],
        ),
        ("error", False, "revocation endpoint answered HTTP 503 (temporarily_unavailable)", ["refresh_token"]),
    ],
)
def test_it_disconnects_whatever_the_provider_answers(world, bob, authz, mcp_url, mode, revoked, error, hints):
    server = make_server(world, authz, mcp_url)
    token = connected(bob, server, authz)
    authz.revocation_mode = mode

    response = bob.delete(disconnect_path(server.pk))

    assert response.status_code == 200
    assert response.json() == {"token_revoked": revoked, "token_revocation_error": error}
    assert not MCPUserToken.objects.exists()  # always deleted here
    assert [r.token_type_hint for r in authz.revocations] == hints
    assert all(r.host.startswith("127.0.0.1:") for r in authz.revocations)  # the other origin was never contacted
    if mode == "redirect_cross_origin":
        assert not any(r.redirected for r in authz.revocations)
    if mode == "unsupported_refresh":
        assert authz.revocations[-1].token == str(token.access_token)
        assert authz.validate_bearer(str(token.access_token)) is None
    if revoked and mode != "unsupported_refresh":
        assert authz.token(str(token.refresh_token)).refresh_revoked
    body = response.content.decode()
    for secret in (REVOCATION_BODY_SENTINEL, str(token.access_token), str(token.refresh_token), CLIENT_SECRET):
        assert secret not in body
    event = AuditEvent.objects.get(action="mcp_server.oauth2_disconnect")
    assert (event.actor, event.outcome) == (world.member, "success")
    assert oauth_services.connection_state(world.member, server) == "not_connected"


@pytest.mark.parametrize("public", [True, False], ids=["public", "confidential"])
def test_it_authenticates_the_revocation_as_the_client_type_requires(world, bob, authz, mcp_url, public):
    server = make_server(world, authz, mcp_url, public=public)
    connected(bob, server, authz)

    response = bob.delete(disconnect_path(server.pk))

    assert response.json() == {"token_revoked": True, "token_revocation_error": ""}
    [revocation] = authz.revocations
    assert revocation.client_id == server.oauth2_client_id
    assert "client_secret" not in revocation.form
    if public:
        assert revocation.client_auth == "none" and revocation.form["client_id"] == server.oauth2_client_id
        assert "authorization" not in revocation.headers
    else:
        assert revocation.client_auth == "client_secret_basic" and "client_id" not in revocation.form
        basic = base64.b64decode(revocation.headers["authorization"].split(None, 1)[1]).decode()
        assert basic == f"{server.oauth2_client_id}:{CLIENT_SECRET}"


def test_it_reports_when_no_revocation_endpoint_is_known(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url, oauth2_revocation_url="")
    connected(bob, server, authz)

    response = bob.delete(disconnect_path(server.pk))

    assert response.json() == {"token_revoked": False, "token_revocation_error": "no revocation endpoint configured"}
    assert not MCPUserToken.objects.exists() and authz.revocations == []


@pytest.mark.parametrize("how", ["removed_from_organization", "removed_from_acl", "server_disabled"])
def test_it_lets_someone_who_lost_access_disconnect(world, bob, authz, mcp_url, how):
    server = make_server(world, authz, mcp_url)
    token = connected(bob, server, authz)
    if how == "removed_from_organization":
        membership = Membership.objects.get(organization=world.acme, user=world.member)
        org_services.membership_remove(actor=world.org_admin, membership=membership)
    elif how == "removed_from_acl":
        everyone = OrgGroup.objects.get(organization=world.acme, is_everyone=True)
        mcp_services.mcp_server_set_acl(actor=world.org_admin, server=server, group_roles={str(everyone.pk): ""})
    else:
        mcp_services.mcp_server_update(actor=world.org_admin, server=server, data={"enabled": False})
    page = bob.get("/settings/mcp-connections/").content.decode()
    assert "You can no longer use this server" in page

    response = bob.delete(disconnect_path(server.pk))

    assert response.json() == {"token_revoked": True, "token_revocation_error": ""}
    assert not MCPUserToken.objects.exists()
    assert authz.token(str(token.refresh_token)).refresh_revoked


def test_it_only_ever_disconnects_the_caller_s_own_token(world, bob, client_for, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    token = connected(bob, server, authz)

    other = client_for("org_admin").delete(disconnect_path(server.pk))
    anonymous = Client().delete(disconnect_path(server.pk))

    assert other.json() == {"token_revoked": False, "token_revocation_error": "no stored token"}
    assert anonymous.status_code == 401
    assert MCPUserToken.objects.get().pk == token.pk and authz.revocations == []


def test_the_connections_page_disconnects_and_says_what_the_provider_answered(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    connected(bob, server, authz)
    authz.revocation_mode = "error"

    response = bob.post(f"/settings/mcp-connections/{server.pk}/disconnect", follow=True)

    page = response.content.decode()
    assert "Disconnected here. The provider did not confirm a revocation" in page
    assert "revocation endpoint answered HTTP 503" in page and REVOCATION_BODY_SENTINEL not in page
    assert not MCPUserToken.objects.exists()


def test_a_chat_says_when_a_chosen_server_needs_the_member_to_connect(world, bob, authz, mcp_url):
    server = make_server(world, authz, mcp_url)
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    chat_mcp.set_selection(chat=chat, server_ids={server.pk})

    page = bob.get(f"/agents/chats/{chat.pk}/").content.decode()
    assert "Tracker is chosen for this chat, but your account is not connected" in page
    assert "(not connected)" in page

    token = connected(bob, server, authz)
    page = bob.get(f"/agents/chats/{chat.pk}/").content.decode()
    assert "mcp-connect-notice" not in page and "(not connected)" not in page

    MCPUserToken.objects.filter(pk=token.pk).update(needs_reconnect=True)
    page = bob.get(f"/agents/chats/{chat.pk}/").content.decode()
    assert "Tracker needs you to reconnect your account" in page
    assert ">Reconnect Tracker</a>" in page
    assert bob.get("/settings/mcp-connections/").content.decode().count(">Reconnect<span") == 1


def test_a_chat_does_not_ask_to_connect_a_server_it_did_not_choose(world, bob, authz, mcp_url):
    make_server(world, authz, mcp_url, availability="default_off")
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)

    page = bob.get(f"/agents/chats/{chat.pk}/").content.decode()

    assert "mcp-connect-notice" not in page
    assert "data-oauth-popup" in page  # the picker still offers to connect


# Nothing leaks -----------------------------------------------------------------------------------------------------


def test_it_never_puts_a_token_or_secret_in_a_response_an_audit_event_or_a_log(
    world, client_for, oauth_server, send, caplog
):
    caplog.set_level(logging.DEBUG)
    authz = oauth_server(access_token_lifetime=3600)
    resource = authz.protected_mcp_server()
    admin, bob = client_for("org_admin"), client_for("member")
    responses = []

    created = admin.post(
        API,
        json.dumps({"display_name": "Tracker", "url": resource.url, "enabled": True, "auth_type": "oauth2"}),
        content_type="application/json",
    )
    responses.append(created)
    server = MCPServer.objects.get(pk=created.json()["id"])
    responses.append(admin.get(f"{API}/{server.pk}"))
    # Connect, then the callback errors.
    first = bob.get(connect_path(server))
    responses.append(first)
    location = authz.approve(first["Location"])
    responses.append(finish(bob, location, Accept=HTML))
    responses.append(finish(bob, location))  # replay
    authz.token_endpoint_status = 500
    responses.append(finish(bob, start(bob, server, authz)))
    authz.token_endpoint_status = None
    authz.deny = True
    responses.append(finish(bob, start(bob, server, authz), Accept=HTML))
    authz.deny = False
    # Refresh after a 401 in a chat, a refusal, a reconnect.
    authz.expire_access_tokens()
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    send(chat, "tracker__echo leak check")
    responses.append(bob.get(f"/agents/chats/{chat.pk}/"))
    authz.revoke_all()
    expire_here(MCPUserToken.objects.get())
    assert oauth_services.access_token_for(user=world.member, server=server) is None
    responses.append(bob.get("/settings/mcp-connections/"))
    responses.append(finish(bob, start(bob, server, authz), Accept=HTML))
    # Disconnect with a failing revocation.
    authz.revocation_mode = "error"
    responses.append(bob.delete(disconnect_path(server.pk)))

    secrets = peer_secrets(authz) | {REVOCATION_BODY_SENTINEL, TOKEN_BODY_SENTINEL}
    registered_secret = authz.registrations[0].response["client_secret"]
    secrets.add(registered_secret)
    assert len(secrets) > 10
    bodies = "\n".join(r.content.decode() for r in responses)
    headers = "\n".join(str(dict(r.items())) for r in responses)
    events = audit_text()
    logs = "\n".join(
        f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records if r.threadName not in PEER_THREADS
    )
    for secret in sorted(secrets):
        assert secret not in bodies, f"a response carries {secret[:6]}…"
        assert secret not in headers, f"a response header carries {secret[:6]}…"
        assert secret not in events, f"an audit event carries {secret[:6]}…"
        assert secret not in logs, f"a log record carries {secret[:6]}…"
