"""MCP servers with User OIDC identity: a chat sends its owner's OIDC access token (the one they got signing in with
the identity provider) as ``Authorization: Bearer``, refreshed first when it is about to expire; someone who signed in
with a password sends no Authorization header at all (and the server is still asked). Real peers: the authlib OIDC
provider of ``tests/peers/oauth_server.py``, the test MCP server behind its bearer gate, and the plain recording MCP
server of ``tests/peers/mcp_servers.py``. Nothing of the project is mocked.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from chats import mcp as chat_mcp
from chats import services as chat_services
from chats.models import Chat, ToolCall, TurnStatus
from mcpservers import services as mcp_services
from mcpservers.models import MCPServer
from organizations import oidc
from organizations.models import AuditEvent, UserOIDCToken
from tests.organizations.test_oidc import CLIENT_SECRET, SITE, configure, oidc_sign_in
from tests.peers.mcp_servers import mcp_server_fixture  # noqa: F401  (registers ``mcp_server``)
from tests.peers.oauth_server import OAuthPeer, oauth_server_fixture  # noqa: F401  (registers ``oauth_server``)


@pytest.fixture(autouse=True)
def _site(settings):
    settings.SITE_URL = SITE
    settings.CELERY_TASK_ALWAYS_EAGER = True
    oidc.reset_client()
    yield
    oidc.reset_client()


@pytest.fixture
def idp(oauth_server, settings) -> OAuthPeer:
    peer = oauth_server(require_pkce=True, logged_in_user="bob")
    client = peer.add_client("switchboard", secret=CLIENT_SECRET, redirect_uris=[SITE + "/login/oidc/callback"])
    configure(settings, peer, client.client_id)
    return peer


@pytest.fixture
def send(django_capture_on_commit_callbacks):
    def run(chat: Chat, content: str):
        with django_capture_on_commit_callbacks(execute=True):
            turn = chat_services.message_send(chat=chat, content=content)
        turn.refresh_from_db()
        return turn

    return run


def user_oidc_server(world, url: str) -> MCPServer:
    data = {
        "display_name": "Directory",
        "slug": "directory",
        "url": url,
        "enabled": True,
        "availability": "default_on",
        "auth_type": "user_oidc",
    }
    return mcp_services.mcp_server_create(actor=world.site_owner, organization=world.acme, data=data)


def authorizations(peer) -> list[str | None]:
    return [r.headers.get("authorization") for r in peer.snapshot() if not r.target.startswith("/.well-known/")]


def signed_in_echo(world, idp):
    """A user_oidc server behind the provider's gate, bob signed in through the provider, and the echo tool of a new
    chat of his (listed with his token). Returns (the protected server, the tool)."""
    resource = idp.protected_mcp_server()
    user_oidc_server(world, resource.url)
    oidc_sign_in(Client(), idp)
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    return resource, next(tool for tool in chat_mcp.mcp_tools(chat, None) if tool.name == "directory__echo")


def test_a_chat_step_sends_the_owner_s_oidc_access_token(world, idp, send):
    resource = idp.protected_mcp_server()  # lets in only this provider's valid access tokens
    user_oidc_server(world, resource.url)
    oidc_sign_in(Client(), idp)
    token = str(UserOIDCToken.objects.get(user=world.member).access_token)
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)
    resource.reset()

    turn = send(chat, "directory__echo hello from the directory")

    assert turn.status == TurnStatus.DONE
    call = ToolCall.objects.get()
    assert not call.is_error and "hello from the directory" in call.result
    sent = authorizations(resource)
    assert sent and set(sent) == {f"Bearer {token}"}
    assert all(checked is not None for _, checked in resource.gate.checks)
    answer = chat.messages.filter(role="assistant").order_by("-id").first()
    assert token not in answer.content and token not in call.result


def test_a_password_user_s_requests_carry_no_authorization_header(world, idp, mcp_server):
    recording = mcp_server()
    user_oidc_server(world, recording.url)
    oidc_sign_in(Client(), idp)  # bob has a token; alice (below) signed in with her password
    chat = chat_services.chat_create(owner=world.org_admin, organization=world.acme)

    names = [tool.name for tool in chat_mcp.mcp_tools(chat, None)]

    assert "directory__echo" in names  # the server is asked all the same
    assert recording.snapshot() and all("authorization" not in r.headers for r in recording.snapshot())
    echo = next(tool for tool in chat_mcp.mcp_tools(chat, None) if tool.name == "directory__echo")
    recording.reset()
    assert not echo.handler({"text": "hi"}, "call-1").is_error
    assert recording.snapshot() and all("authorization" not in r.headers for r in recording.snapshot())


def test_the_token_is_refreshed_before_it_is_sent_when_it_is_about_to_expire(world, idp):
    resource = idp.protected_mcp_server()
    user_oidc_server(world, resource.url)
    oidc_sign_in(Client(), idp)
    old = str(UserOIDCToken.objects.get(user=world.member).access_token)
    UserOIDCToken.objects.filter(user=world.member).update(expires_at=timezone.now() + timedelta(seconds=20))
    idp.reset_records()
    resource.reset()
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)

    names = [tool.name for tool in chat_mcp.mcp_tools(chat, None)]

    assert "directory__echo" in names
    assert idp.token_calls["refresh_token"] == 1
    fresh = str(UserOIDCToken.objects.get(user=world.member).access_token)
    assert fresh != old and set(authorizations(resource)) == {f"Bearer {fresh}"}


def test_a_token_that_cannot_be_refreshed_is_not_sent(world, idp, mcp_server):
    recording = mcp_server()
    user_oidc_server(world, recording.url)
    oidc_sign_in(Client(), idp)
    UserOIDCToken.objects.filter(user=world.member).update(expires_at=timezone.now() - timedelta(seconds=5))
    idp.revoke_all()
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)

    chat_mcp.mcp_tools(chat, None)

    assert recording.snapshot() and all("authorization" not in r.headers for r in recording.snapshot())
    assert not UserOIDCToken.objects.filter(user=world.member).exists()


def test_a_refused_token_is_refreshed_once_and_the_listing_retried(world, idp):
    resource = idp.protected_mcp_server()
    user_oidc_server(world, resource.url)
    oidc_sign_in(Client(), idp)
    old = str(UserOIDCToken.objects.get(user=world.member).access_token)
    idp.expire_access_tokens()  # the provider no longer accepts it, though Switchboard thinks it has an hour left
    idp.reset_records()
    resource.reset()
    chat = chat_services.chat_create(owner=world.member, organization=world.acme)

    names = [tool.name for tool in chat_mcp.mcp_tools(chat, None)]

    assert "directory__echo" in names
    assert idp.token_calls["refresh_token"] == 1
    fresh = str(UserOIDCToken.objects.get(user=world.member).access_token)
    assert fresh != old
    sent = authorizations(resource)
    assert sent[0] == f"Bearer {old}" and sent[-1] == f"Bearer {fresh}"


def test_a_tool_call_refused_with_401_is_retried_once_after_a_refresh(world, idp):
    resource, echo = signed_in_echo(world, idp)
    old = str(UserOIDCToken.objects.get(user=world.member).access_token)
    idp.expire_access_tokens()
    idp.reset_records()
    resource.reset()

    result = echo.handler({"text": "after a refresh"}, "call-7")

    assert not result.is_error and "after a refresh" in str(result.content)
    assert idp.token_calls["refresh_token"] == 1
    fresh = str(UserOIDCToken.objects.get(user=world.member).access_token)
    sent = authorizations(resource)
    assert sent[0] == f"Bearer {old}" and set(sent[1:]) == {f"Bearer {fresh}"}  # refused at once, then retried
    [call] = resource.with_rpc_method("tools/call")
    assert call.headers["authorization"] == f"Bearer {fresh}"
    assert call.json["params"]["_meta"]["com.coder/tool_call_id"] == "call-7"


def test_a_password_user_refused_with_401_is_not_retried(world, idp):
    resource = idp.protected_mcp_server()
    user_oidc_server(world, resource.url)
    chat = chat_services.chat_create(owner=world.org_admin, organization=world.acme)  # signed in with a password

    assert chat_mcp.mcp_tools(chat, None) == []

    assert idp.token_calls["refresh_token"] == 0
    assert authorizations(resource) == [None]  # asked once, without a header, and not again


def test_an_unreachable_provider_keeps_the_tokens_for_the_next_attempt(world, idp):
    resource, echo = signed_in_echo(world, idp)
    idp.expire_access_tokens()
    idp.token_endpoint_status = 503

    result = echo.handler({"text": "hi"}, "call-1")

    assert result.is_error
    assert UserOIDCToken.objects.filter(user=world.member).exists()  # kept: the provider may be back soon
    assert not AuditEvent.objects.filter(action="auth.oidc_refresh_failed").exists()


def test_a_refused_refresh_token_deletes_the_tokens(world, idp):
    resource, echo = signed_in_echo(world, idp)
    idp.revoke_all()  # the access token and the refresh token

    assert echo.handler({"text": "hi"}, "call-1").is_error

    assert not UserOIDCToken.objects.filter(user=world.member).exists()
    assert AuditEvent.objects.filter(action="auth.oidc_refresh_failed", outcome="denied").count() == 1


def test_a_server_that_refuses_every_token_gets_one_oidc_refresh_a_minute(world, idp):
    resource, echo = signed_in_echo(world, idp)
    resource.gate.scopes = ["admin"]  # no token of this provider will do from now on
    idp.reset_records()

    results = [echo.handler({"text": "hi"}, f"call-{n}") for n in range(3)]

    assert all(result.is_error for result in results)
    assert idp.token_calls["refresh_token"] == 1
    assert UserOIDCToken.objects.filter(user=world.member).exists()


def test_a_refused_oidc_token_already_replaced_is_returned_without_a_refresh(world, idp):
    oidc_sign_in(Client(), idp)
    stored = UserOIDCToken.objects.get(user=world.member)
    old = str(stored.access_token)
    assert oidc.access_token_for(world.member, rejected=old) != old
    idp.reset_records()

    again = oidc.access_token_for(world.member, rejected=old)

    assert again == str(UserOIDCToken.objects.get(user=world.member).access_token) != old
    assert idp.token_calls["refresh_token"] == 0


def test_an_unreachable_provider_is_not_asked_again_by_every_request(world, idp):
    oidc_sign_in(Client(), idp)
    UserOIDCToken.objects.filter(user=world.member).update(expires_at=timezone.now() - timedelta(seconds=5))
    idp.token_endpoint_status = 503
    idp.reset_records()

    results = [oidc.access_token_for(world.member) for _ in range(3)]

    assert results == [None, None, None]  # expired, and no fresh one to be had now
    assert idp.token_calls["refresh_token"] == 1
    assert UserOIDCToken.objects.filter(user=world.member).exists()


def test_a_token_due_for_refresh_is_still_used_while_the_provider_is_unreachable(world, idp):
    oidc_sign_in(Client(), idp)
    stored = UserOIDCToken.objects.get(user=world.member)
    UserOIDCToken.objects.filter(pk=stored.pk).update(expires_at=timezone.now() + timedelta(seconds=30))
    idp.token_endpoint_status = 503

    assert oidc.access_token_for(world.member) == str(stored.access_token)  # refresh failed; 30 s of life left
    assert oidc.access_token_for(world.member) == str(stored.access_token)  # and during the pause
