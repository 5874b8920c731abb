"""MCP OAuth2 in a real browser: Settings → MCP connections, Connect in a popup that goes through a real authorization
server on loopback (``tests/peers/oauth_server.py``, which approves at once) and back to the callback, the popup
telling its opener and closing, the page showing the connection; then Disconnect and its result message.

``SITE_URL`` is the live server's URL, so the provider sends the popup back to it. Every page is screenshotted and the
test asserts that no page (the popup included) logged a console error.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from mcpservers import services as mcp_services
from mcpservers.models import MCPServer, MCPUserToken

from ..peers.oauth_server import oauth_server_fixture  # noqa: F401 - the fixture
from .conftest import ConsoleError

pytestmark = pytest.mark.browser

CLIENT_SECRET = "browser-client-s3cret"


@pytest.fixture
def tracker(live_world, live_server, settings, oauth_server):
    """An OAuth2 MCP server of acme (manual configuration against the peer), shared with Everyone."""
    settings.SITE_URL = live_server.url
    authz = oauth_server()
    client = authz.add_client(secret=CLIENT_SECRET)  # any redirect URI
    server = mcp_services.mcp_server_create(
        actor=live_world.org_admin,
        organization=live_world.acme,
        data={
            "display_name": "Tracker",
            "slug": "tracker",
            "url": authz.url("/mcp"),
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
