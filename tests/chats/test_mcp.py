"""MCP servers in chats: availability policies, the picker, revocation, tool naming and governance, model intent,
identity headers and signatures from a chat, the tool call id, unreachable servers, and the demo provider calling a
tool. Real MCP servers (official SDK) and a scripted OpenAI-compatible model on loopback."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chats import mcp as chat_mcp
from chats import services
from chats.models import Chat, ToolCall
from mcpservers import services as mcp_services
from mcpservers import signing
from mcpservers.models import MCPServer
from organizations.models import OrgGroup
from tests.peers.mcp_servers import mcp_server_fixture, unused_port  # noqa: F401  (registers ``mcp_server``)
from tests.peers.model_server import model_server_fixture  # noqa: F401  (registers ``model_server``)

from .test_loop import call, calls

SIGNING = "3f9a" * 16
API_KEY = "sk-mcp-secret-789"


@pytest.fixture(autouse=True)
def _eager(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def send(django_capture_on_commit_callbacks):
    def run(chat: Chat, content: str):
        with django_capture_on_commit_callbacks(execute=True):
            turn = services.message_send(chat=chat, content=content)
        turn.refresh_from_db()
        return turn

    return run


def server(world, url: str, **data) -> MCPServer:
    base = {"display_name": "Peer", "slug": "peer", "url": url, "enabled": True, "availability": "default_on"}
    return mcp_services.mcp_server_create(actor=world.org_admin, organization=world.acme, data=base | data)


def everyone(world) -> OrgGroup:
    return OrgGroup.objects.get(organization=world.acme, is_everyone=True)


def test_availability_policies_decide_what_a_new_chat_uses(world, mcp_server):
    url = mcp_server().url
    forced = server(world, url, display_name="Forced", slug="forced", availability="force_on")
    default_on = server(world, url, display_name="On", slug="on")
    default_off = server(world, url, display_name="Off", slug="off", availability="default_off")
    chat = services.chat_create(owner=world.member, organization=world.acme)
    assert [s.slug for s in chat_mcp.active_servers(chat)] == ["forced", "on"]
    rows = {r.server.slug: r for r in chat_mcp.picker(chat)}
    assert rows["forced"].locked and rows["forced"].selected
    assert rows["on"].selected and not rows["off"].selected
    # Opt in to default_off, opt out of default_on; force_on cannot be dropped.
    chat_mcp.set_selection(chat=chat, server_ids={default_off.pk})
    assert [s.slug for s in chat_mcp.active_servers(chat)] == ["forced", "off"]
    assert forced.pk and default_on.pk


def test_revoking_access_keeps_existing_selections_but_stops_new_ones(world, mcp_server):
    peer_server = server(world, mcp_server().url)
    old_chat = services.chat_create(owner=world.member, organization=world.acme)
    mcp_services.mcp_server_set_acl(
        actor=world.org_admin, server=peer_server, group_roles={str(everyone(world).pk): ""}
    )
    new_chat = services.chat_create(owner=world.member, organization=world.acme)
    assert [s.slug for s in chat_mcp.active_servers(old_chat)] == ["peer"]
    assert chat_mcp.active_servers(new_chat) == []
    chat_mcp.set_selection(chat=new_chat, server_ids={peer_server.pk})  # cannot newly select it
    assert chat_mcp.active_servers(new_chat) == []
    row = chat_mcp.picker(old_chat)[0]
    assert row.selected and not row.usable
    # Disabling cuts it off everywhere.
    mcp_services.mcp_server_update(actor=world.org_admin, server=peer_server, data={"enabled": False})
    assert chat_mcp.active_servers(old_chat) == []


def test_tools_are_named_by_slug_and_governed_by_the_lists(world, mcp_server):
    url = mcp_server().url
    server(world, url, tool_allow_list=["echo", "add", "fail"], tool_deny_list=["fail"])
    chat = services.chat_create(owner=world.member, organization=world.acme)
    names = [t.name for t in chat_mcp.mcp_tools(chat, None)]
    assert names == ["peer__echo", "peer__add"]


def test_an_allowed_tool_listed_after_the_first_64_is_offered(world, mcp_server):
    url = mcp_server(extra_tools=70).url  # 75 tools; tool_069 is the 75th
    server(world, url, tool_allow_list=["echo", "tool_069"])
    chat = services.chat_create(owner=world.member, organization=world.acme)

    names = [t.name for t in chat_mcp.mcp_tools(chat, None)]

    assert names == ["peer__echo", "peer__tool_069"]


def test_an_unreachable_server_is_skipped_and_the_others_still_contribute(world, mcp_server):
    server(world, mcp_server().url, slug="good", display_name="Good")
    server(world, f"http://127.0.0.1:{unused_port()}/mcp", slug="gone", display_name="Gone")
    chat = services.chat_create(owner=world.member, organization=world.acme)
    names = {t.name for t in chat_mcp.mcp_tools(chat, None)}
    assert "good__echo" in names and not any(n.startswith("gone__") for n in names)


def test_a_chat_turn_calls_a_tool_with_auth_identity_signature_and_call_id(world, mcp_server, model_server, send):
    peer = mcp_server(require_header=("X-Api-Key", API_KEY), signing_secret=SIGNING)
    server(
        world,
        peer.url,
        auth_type="api_key",
        api_key_header="X-Api-Key",
        api_key_value=API_KEY,
        forward_coder_headers=True,
        signing_secret=SIGNING,
        model_intent=True,
    )
    services.provider_save(
        actor=world.site_owner, name="scripted", base_url=model_server.url + "/v1", default_model="m", api_key="k"
    )
    model_server.script(calls(call("peer__echo", "call-42", text="hi", purpose="Say hi back")), "Done.")
    chat = services.chat_create(owner=world.member, organization=world.acme, provider="scripted")
    turn = send(chat, "echo please")
    assert turn.status == "done"
    first = model_server.completions[0]
    echo = next(t for t in first.tools if t["function"]["name"] == "peer__echo")
    assert "purpose" in echo["function"]["parameters"]["required"]
    tool_call = ToolCall.objects.get(call_id="call-42")
    assert tool_call.label == "Say hi back" and "hi" in tool_call.result and not tool_call.is_error
    assert peer.tool_call_metas[-1] == {"com.coder/tool_call_id": "call-42"}
    call_request = peer.with_rpc_method("tools/call")[-1]
    assert b"purpose" not in call_request.body  # stripped before forwarding
    headers = call_request.headers
    assert headers["x-coder-owner-id"] == str(world.member.pk) and headers["x-coder-chat-id"] == str(chat.pk)
    assert "x-coder-workspace-id" not in headers and headers["x-api-key"] == API_KEY
    assert all(ok for ok, _ in peer.verdicts) and peer.verdicts
    assert signing.SIGNATURE_HEADER.lower() in headers
    # Nothing secret reached the model.
    for request in model_server.completions:
        assert API_KEY not in str(request.body) and SIGNING not in str(request.body)


def test_the_demo_provider_calls_an_mcp_tool(world, mcp_server, send):
    server(world, mcp_server().url)
    chat = services.chat_create(owner=world.member, organization=world.acme)
    send(chat, "peer__echo hello there")
    answer = chat.messages.filter(role="assistant").order_by("-id").first()
    assert "peer__echo" in answer.content and "hello there" in answer.content


def test_the_picker_page_saves_the_selection(world, client_for, mcp_server):
    off = server(world, mcp_server().url, availability="default_off")
    chat = services.chat_create(owner=world.member, organization=world.acme)
    client = client_for("member")
    assert 'name="servers"' in client.get(reverse("chat", args=[chat.pk])).content.decode()
    response = client.post(reverse("chat-mcp-servers", args=[chat.pk]), {"servers": [off.pk]})
    assert response.status_code == 302
    assert [s.pk for s in chat_mcp.active_servers(chat)] == [off.pk]
    assert client_for("org_admin").post(reverse("chat-mcp-servers", args=[chat.pk]), {"servers": []}).status_code == 404


def test_no_secret_reaches_a_log_record_when_a_server_refuses(world, mcp_server, caplog):
    """A refused connection is logged and skipped; neither the key nor the server's answer is in any log record."""
    peer = mcp_server(require_header=("X-Api-Key", "the-right-key"))
    server(world, peer.url, auth_type="api_key", api_key_header="X-Api-Key", api_key_value=API_KEY)
    chat = services.chat_create(owner=world.member, organization=world.acme)
    with caplog.at_level("DEBUG"):
        assert chat_mcp.mcp_tools(chat, None) == []
    text = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert "peer skipped" in text
    assert API_KEY not in text and "the-right-key" not in text


def test_the_picker_takes_the_same_queries_for_one_oauth2_server_or_many(world):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from mcpservers.models import MCPUserToken

    def oauth2_server(n: int) -> MCPServer:
        return server(
            world,
            "https://tracker.example/mcp",
            display_name=f"Tracker {n}",
            slug=f"tracker-{n}",
            auth_type="oauth2",
            oauth2_client_id="client",
            oauth2_auth_url="https://idp.example/authorize",
            oauth2_token_url="https://idp.example/token",
        )

    chat = services.chat_create(owner=world.member, organization=world.acme)
    MCPUserToken.objects.create(server=oauth2_server(0), user=world.member, access_token="a", refresh_token="r")
    with CaptureQueriesContext(connection) as one:
        chat_mcp.picker(chat)
    for n in range(1, 6):
        MCPUserToken.objects.create(server=oauth2_server(n), user=world.member, access_token="a", refresh_token="r")
    with CaptureQueriesContext(connection) as six:
        rows = chat_mcp.picker(chat)

    assert [row.connection for row in rows] == ["connected"] * 6
    assert len(six.captured_queries) == len(one.captured_queries)
