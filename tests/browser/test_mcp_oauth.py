"""MCP OAuth2 in a real browser: Settings → MCP connections, Connect in a popup that goes through a real authorization
server on loopback (``tests/peers/oauth_server.py``, which approves at once) and back to the callback, the popup
telling its opener and closing, the page showing the connection; then Disconnect and its result message. And the
same from a chat: Connect from the chat's Tools picker, a scripted model (``tests/peers/model_server.py``) calling a
tool of the provider's protected MCP server with the member's own token, then Disconnect in Settings.

``SITE_URL`` is the live server's URL, so the provider sends the popup back to it. Every page is screenshotted and the
test asserts that no page (the popup included) logged a console error.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from chats import services as chat_services
from chats.models import Chat, Role, TurnStatus
from mcpservers import services as mcp_services
from mcpservers.models import MCPServer, MCPUserToken

from ..peers.model_server import model_server_fixture  # noqa: F401 - the fixture
from ..peers.oauth_server import oauth_server_fixture  # noqa: F401 - the fixture
from .conftest import ConsoleError

pytestmark = pytest.mark.browser

CLIENT_SECRET = "browser-client-s3cret"
COMPOSER = "#composer-input"
ECHOED = "hello from the protected tracker"


def register_tracker(world, authz, url: str):
    """ "Tracker", an OAuth2 MCP server of acme at ``url``, configured by hand against ``authz`` (a confidential
    client that accepts any redirect URI), off by default and shared with Everyone."""
    client = authz.add_client(secret=CLIENT_SECRET)
    return mcp_services.mcp_server_create(
        actor=world.org_admin,
        organization=world.acme,
        data={
            "display_name": "Tracker",
            "slug": "tracker",
            "url": url,
            "enabled": True,
            "availability": "default_off",
            "auth_type": "oauth2",
            "oauth2_client_id": client.client_id,
            "oauth2_client_secret": CLIENT_SECRET,
            "oauth2_auth_url": authz.authorization_endpoint,
            "oauth2_token_url": authz.token_endpoint,
            "oauth2_revocation_url": authz.revocation_endpoint,
            "oauth2_scopes": "mcp",
        },
    )


@pytest.fixture
def tracker(live_world, live_server, settings, oauth_server):
    """An OAuth2 MCP server of acme (manual configuration against the peer), shared with Everyone."""
    settings.SITE_URL = live_server.url
    authz = oauth_server()
    server = register_tracker(live_world, authz, authz.url("/mcp"))
    return authz, server


def watch_popups(browsing, page) -> None:
    """Console errors of any page this page opens are collected too."""

    def attach(popup) -> None:
        popup.on("console", lambda msg: _console(browsing, popup, msg))
        popup.on("pageerror", lambda exc: browsing.errors.append(ConsoleError(popup.url, "", f"uncaught: {exc}")))

    page.context.on("page", attach)


def _console(browsing, popup, msg) -> None:
    if msg.type == "error":
        browsing.errors.append(ConsoleError(popup.url, (msg.location or {}).get("url", ""), msg.text))


def open_connections(browsing, username: str = "bob"):
    page = browsing.new_page()
    browsing.sign_in(page, username)
    expect(page).to_have_url(re.compile(r"/agents/$"))
    watch_popups(browsing, page)
    page.locator("nav[aria-label=Main] a").filter(has_text="Settings").click()
    page.locator("nav[aria-label=Settings] a").filter(has_text="MCP connections").click()
    expect(page).to_have_url(re.compile(r"/settings/mcp-connections/$"))
    expect(page.locator("main h1")).to_have_text("MCP connections")
    return page


def tracker_row(page):
    return page.locator("#mcp-connections tbody tr").filter(has_text="Tracker")


def connect_in_popup(page):
    """Click Connect: the popup goes to the provider (which approves at once), back to the callback, and closes."""
    with page.expect_popup() as opened:
        tracker_row(page).get_by_role("link", name="Connect").click()
    popup = opened.value
    popup.wait_for_event("close", timeout=10_000)


def test_it_connects_through_a_popup_and_disconnects(browsing, live_world, tracker):
    authz, server = tracker
    page = open_connections(browsing)
    row = tracker_row(page)
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Acme Labs")
    expect(row.locator(".pill")).to_have_text("not connected")
    expect(row.get_by_role("button", name="Disconnect")).to_have_count(0)
    browsing.shot(page, "not-connected")

    connect_in_popup(page)

    [authorize] = authz.authorize_requests
    assert authorize.params["code_challenge_method"] == "S256" and authorize.params["state"]
    callback = f"{browsing.base_url}/api/experimental/mcp/servers/{server.pk}/oauth2/callback"
    assert authorize.params["redirect_uri"] == callback
    token = MCPUserToken.objects.get(server=server)
    assert token.user == live_world.member
    assert str(token.access_token) == authz.tokens[-1].access_token
    # The popup's message reloads the page by itself.
    expect(row.locator(".pill")).to_have_text("connected")
    expect(row.get_by_role("link", name="Connect")).to_have_count(0)
    assert str(token.access_token) not in page.content() and CLIENT_SECRET not in page.content()
    browsing.shot(page, "connected")

    row.get_by_role("button", name="Disconnect").click()
    expect(page.locator("#messages")).to_contain_text("Disconnected. The provider confirmed that the token is revoked.")
    expect(row.locator(".pill")).to_have_text("not connected")
    expect(row.get_by_role("link", name="Connect")).to_be_visible()
    browsing.shot(page, "disconnected")
    assert not MCPUserToken.objects.exists()
    assert [r.token_type_hint for r in authz.revocations] == ["refresh_token"]
    assert MCPServer.objects.get(pk=server.pk).enabled
    browsing.assert_no_console_errors()


def test_the_popup_tells_the_connections_page_which_reloads(browsing, live_world, tracker):
    page = open_connections(browsing)
    row = tracker_row(page)
    expect(row.locator(".pill")).to_have_text("not connected")

    connect_in_popup(page)

    assert MCPUserToken.objects.filter(user=live_world.member).exists()
    try:
        expect(row.locator(".pill")).to_have_text("connected", timeout=5_000)
    finally:
        browsing.shot(page, "after-popup")
    browsing.assert_no_console_errors()


def test_a_refused_authorization_leaves_the_popup_on_the_error_page(browsing, live_world, tracker):
    authz, _ = tracker
    authz.deny = True
    page = open_connections(browsing)

    with page.expect_popup() as opened:
        tracker_row(page).get_by_role("link", name="Connect").click()
    popup = opened.value
    expect(popup.locator("main h1")).to_have_text("Not connected")
    expect(popup.get_by_role("alert")).to_have_text("OAuth2 provider returned an error.")
    parts = urlsplit(popup.url)
    browsing.expect_error_status(f"{parts.path}?{parts.query}", 400)
    browsing.shot(popup, "popup-error")

    assert not popup.is_closed()
    assert not MCPUserToken.objects.exists()
    expect(tracker_row(page).locator(".pill")).to_have_text("not connected")
    popup.close()
    browsing.assert_no_console_errors()


# A member connects from a chat's Tools picker, the model calls the protected server's tool, then Disconnect --------


@pytest.fixture
def protected_tracker(live_world, live_server, settings, oauth_server, model_server):
    """Tracker again, but its URL is the provider's protected MCP server (tools behind a Bearer gate that accepts only
    the provider's access tokens); the provider signs bob in. Plus the scripted model as provider "scripted"."""
    settings.SITE_URL = live_server.url
    authz = oauth_server(logged_in_user="bob")
    protected = authz.protected_mcp_server("streamable_http")
    server = register_tracker(live_world, authz, protected.url)
    chat_services.provider_save(
        actor=live_world.site_owner,
        name="scripted",
        base_url=model_server.url + "/v1",
        default_model="gpt-test",
        api_key="sk-browser-model",
    )
    return authz, protected, server


def test_a_member_connects_from_the_chat_picker_uses_a_tool_and_disconnects(
    browsing, live_world, protected_tracker, model_server
):
    authz, protected, server = protected_tracker
    page = browsing.new_page()
    browsing.sign_in(page, "bob")
    expect(page).to_have_url(re.compile(r"/agents/$"))
    watch_popups(browsing, page)

    form = page.get_by_role("region", name="New chat")
    form.get_by_label("Organization").select_option(label="Acme Labs")
    form.get_by_label("Model").select_option(value="scripted")
    form.get_by_role("button", name="Start chat").click()
    expect(page).to_have_url(re.compile(r"/agents/chats/\d+/$"))
    chat = Chat.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))

    # The picker offers Tracker, off by default and not connected yet.
    picker = page.locator("details.mcp-picker")
    expect(picker.locator("summary")).to_have_text("Tools: none selected (1 available)")
    picker.locator("summary").click()
    entry = picker.locator(".mcp-row").filter(has_text="Tracker")
    expect(entry).to_contain_text("off by default")
    expect(entry.locator(".pill")).to_have_text("not connected")
    expect(picker.get_by_role("checkbox", name="Tracker")).not_to_be_checked()
    connect = entry.get_by_role("link", name="Connect")
    expect(connect).to_be_visible()
    # Tick Tracker without saving: the choice must survive the reload that follows the connection.
    picker.get_by_role("checkbox", name="Tracker").check()
    page.locator(COMPOSER).fill("A message I have not sent yet")
    browsing.shot(page, "picker-not-connected")

    # Connect: the popup goes to the provider (which approves at once), back to the callback, tells this page (which
    # reloads) and closes.
    page.evaluate("window.__switchboardMarker = 'still here'")
    with page.expect_popup() as opened:
        connect.click()
    popup = opened.value
    if not popup.is_closed():
        popup.wait_for_event("close", timeout=10_000)
    token = MCPUserToken.objects.get(server=server)
    assert token.user == live_world.member
    assert str(token.access_token) == authz.tokens[-1].access_token and authz.tokens[-1].username == "bob"
    # The picker, reloaded, shows the connection, stays open and keeps the unsaved tick.
    entry = picker.locator(".mcp-row").filter(has_text="Tracker")
    expect(entry.get_by_role("link", name="Connect")).to_have_count(0)
    expect(entry.locator(".pill")).to_have_text("connected")
    assert page.evaluate("window.__switchboardMarker") is None, "the popup's message did not reload the chat"
    expect(picker).to_have_attribute("open", "")
    box = picker.get_by_role("checkbox", name="Tracker")
    expect(box).to_be_enabled()
    expect(box).to_be_checked()
    expect(box).to_be_focused()  # back where the member was
    expect(page.locator(COMPOSER)).to_have_value("A message I have not sent yet")
    assert not MCPServer.objects.filter(chat_selections__chat=chat).exists()  # not saved yet
    browsing.shot(page, "picker-connected")
    picker.get_by_role("button", name="Save tools").click()
    expect(page.locator("details.mcp-picker summary")).to_have_text("Tools: Tracker")
    expect(page.locator("#messages")).to_contain_text("Tools for this chat saved.")
    expect(page.locator("details.mcp-picker summary")).to_be_focused()
    assert list(MCPServer.objects.filter(chat_selections__chat=chat)) == [server]
    browsing.shot(page, "picker-saved")

    # The model calls tracker__echo, then answers; the tool runs on the protected server with bob's token.
    model_server.script(
        {"tool_calls": [{"id": "call_1", "name": "tracker__echo", "arguments": {"text": ECHOED}}]},
        "The tracker echoed your text.",
    )
    page.locator(COMPOSER).fill("Echo something through the tracker, please.")
    page.get_by_role("button", name="Send").click()
    transcript = page.get_by_role("list", name="Conversation")
    expect(transcript.locator(".msg-user")).to_contain_text("Echo something through the tracker, please.")
    call = transcript.locator("details.tool-call")
    expect(call).to_have_count(1)
    expect(call.locator("summary")).to_have_text("Calling Tracker: echo")
    expect(transcript.locator(".msg-assistant .markdown").last).to_have_text("The tracker echoed your text.")
    call.locator("summary").click()
    expect(call.locator("p strong")).to_have_text("tracker__echo")
    expect(call.locator("pre").first).to_contain_text(f'"text": "{ECHOED}"')
    expect(call.locator("pre.result")).to_have_text(ECHOED)
    browsing.shot(page, "tool-answered")

    turn = chat.turns.get()
    assert turn.status == TurnStatus.DONE
    assert [m.role for m in chat.messages.order_by("id")] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    first, second = model_server.completions
    assert "tracker__echo" in first.tool_names
    assert any(m["role"] == "tool" and ECHOED in str(m["content"]) for m in second.messages)
    [tool_call] = protected.with_rpc_method("tools/call")
    assert tool_call.headers["authorization"] == f"Bearer {token.access_token}"
    assert tool_call.json["params"]["name"] == "echo"
    assert protected.gate.checks, "the protected MCP server saw no request"
    for _path, seen in protected.gate.checks:
        assert seen is not None and seen.username == "bob" and seen.access_token == str(token.access_token)

    # Settings → MCP connections: Tracker is connected; Disconnect revokes at the provider.
    page.locator("nav[aria-label=Main] a").filter(has_text="Settings").click()
    page.locator("nav[aria-label=Settings] a").filter(has_text="MCP connections").click()
    expect(page).to_have_url(re.compile(r"/settings/mcp-connections/$"))
    row = tracker_row(page)
    expect(row.locator(".pill")).to_have_text("connected")
    browsing.shot(page, "connections-connected")
    row.get_by_role("button", name="Disconnect").click()
    expect(page.locator("#messages")).to_contain_text("Disconnected. The provider confirmed that the token is revoked.")
    expect(row.locator(".pill")).to_have_text("not connected")
    expect(row.get_by_role("link", name="Connect")).to_be_visible()
    browsing.shot(page, "connections-disconnected")
    assert not MCPUserToken.objects.exists()
    assert [(r.token_type_hint, r.revoked) for r in authz.revocations] == [("refresh_token", True)]
    assert authz.validate_bearer(str(token.access_token)) is None

    # Back in the chat the summary says the chosen server is not connected, and the picker asks to connect again.
    page.goto(f"/agents/chats/{chat.pk}/")
    expect(picker.locator("summary")).to_have_text("Tools: Tracker (not connected)")
    picker.locator("summary").click()
    entry = picker.locator(".mcp-row").filter(has_text="Tracker")
    expect(entry.locator(".pill")).to_have_text("not connected")
    expect(entry.get_by_role("link", name="Connect")).to_be_visible()
    browsing.shot(page, "picker-after-disconnect")
    browsing.assert_no_console_errors()
