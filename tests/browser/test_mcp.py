"""MCP servers in a real browser: Admin settings → MCP servers (add through the form, Test connection against a real
MCP server on loopback, Manage permissions), and the chat's Tools picker (opt in, then the demo provider calls a tool).

Data is set up through the real services; every page visited is screenshotted, and each test asserts that no page
logged a console error or threw (a Content-Security-Policy violation shows up as one).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chats.models import Chat, Role, TurnStatus
from mcpservers import services
from mcpservers.models import AuthType, Availability, MCPServer, Transport
from mcpservers.selectors import servers_usable_by
from organizations import services as org_services
from organizations.models import OrgGroup
from organizations.models import Role as OrgRole
from tests.conftest import make_user

from ..peers.mcp_servers import mcp_server_fixture  # noqa: F401 - the fixture

pytestmark = pytest.mark.browser

MAIN_NAV = "nav[aria-label=Main] a"
ADMIN_SIDEBAR = "nav[aria-label='Admin settings'] a"
COMPOSER = "#composer-input"
PEER_TOOLS = ["peer-tools__echo", "peer-tools__add", "peer-tools__big", "peer-tools__slow", "peer-tools__fail"]


def signed_in(browsing, username: str):
    page = browsing.new_page()
    browsing.sign_in(page, username)
    expect(page).to_have_url(re.compile(r"/agents/$"))
    return page


def heading(page):
    return page.locator("main h1").first


def server_row(page, slug: str):
    return page.locator("main table tbody tr").filter(has=page.locator("code", has_text=re.compile(f"^{slug}$")))


def start_chat(page) -> Chat:
    """New chat on the Agents page: organization acme, the demo provider."""
    form = page.get_by_role("region", name="New chat")
    form.get_by_label("Organization").select_option(label="Acme Labs")
    form.get_by_label("Model").select_option(value="demo")
    form.get_by_role("button", name="Start chat").click()
    expect(page).to_have_url(re.compile(r"/agents/chats/\d+/$"))
    return Chat.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def set_marker(page) -> None:
    """A value on ``window`` that survives an in-place HTMX swap and disappears on a full page load."""
    page.evaluate("window.__switchboardMarker = 'still here'")


def marker(page):
    return page.evaluate("window.__switchboardMarker")


@pytest.fixture
def platform(live_world) -> OrgGroup:
    """A group of acme with bob in it."""
    group = org_services.group_create(actor=live_world.org_admin, organization=live_world.acme, name="Platform")
    org_services.group_add_member(actor=live_world.org_admin, group=group, user=live_world.member)
    return group


# 1. An admin adds a server, tests the connection and shares it with a group ----------------------------------------


def test_it_lets_an_admin_add_test_and_share_an_mcp_server(browsing, live_world, platform, mcp_server):
    peer = mcp_server()
    page = signed_in(browsing, "alice")

    page.locator(MAIN_NAV).filter(has_text="Admin settings").click()
    page.locator(ADMIN_SIDEBAR).filter(has_text="MCP servers").click()
    expect(heading(page)).to_have_text("MCP servers")
    expect(page.locator(ADMIN_SIDEBAR).filter(has_text="MCP servers")).to_have_attribute("aria-current", "page")
    expect(page.locator("main table tbody")).to_contain_text("No MCP servers yet.")
    browsing.shot(page, "empty-list")

    page.get_by_role("link", name="Add server").click()
    expect(heading(page)).to_have_text("Add an MCP server")
    # A new server starts turned off, available "Off by default", without authentication.
    expect(page.get_by_label("Enabled (members see only enabled servers)")).not_to_be_checked()
    expect(page.get_by_label("In chats")).to_have_value(Availability.DEFAULT_OFF)
    expect(page.get_by_label("Type", exact=True)).to_have_value(AuthType.NONE)
    browsing.shot(page, "form-empty")

    page.get_by_label("Display name").fill("Peer Tools")
    page.get_by_label("URL", exact=True).fill(peer.url)
    page.get_by_label("Transport").select_option(label="Streamable HTTP")
    page.get_by_label("Enabled (members see only enabled servers)").check()
    page.get_by_label("In chats").select_option(label="Off by default")
    page.get_by_label("Type", exact=True).select_option(label="None")
    browsing.shot(page, "form-filled")
    page.get_by_role("button", name="Save").click()

    expect(page).to_have_url(re.compile(r"/ai/settings/mcp-servers\?org=acme$"))
    expect(page.locator("#messages")).to_contain_text("Peer Tools added and shared with Everyone.")
    row = server_row(page, "peer-tools")
    expect(row).to_have_count(1)
    expect(row.locator("strong")).to_have_text("Peer Tools")
    expect(row.locator("td.path")).to_contain_text(peer.url)
    expect(row.locator("td.path")).to_contain_text("Streamable HTTP")
    expect(row).to_contain_text("Off by default")
    expect(row.get_by_role("img", name="Enabled")).to_have_text("✓")
    expect(row.locator("td.acl .pill")).to_have_text(["Everyone"])
    server = MCPServer.objects.get(organization=live_world.acme, slug="peer-tools")
    assert server.enabled and server.url == peer.url
    assert (server.transport, server.availability, server.auth_type) == (
        Transport.STREAMABLE_HTTP,
        Availability.DEFAULT_OFF,
        AuthType.NONE,
    )
    browsing.shot(page, "list-added")

    # Row menu → Test connection: a real connection to the peer, its tools listed under their chat names.
    menu = row.locator("details.menu")
    row.get_by_label("Actions for Peer Tools").click()
    expect(menu).to_have_attribute("open", "")
    expect(menu.get_by_role("link")).to_have_text(["Edit", "Manage permissions", "Delete"])
    expect(menu.get_by_role("button", name="Test connection")).to_be_visible()
    browsing.shot(page, "row-menu")
    peer.reset()
    menu.get_by_role("button", name="Test connection").click()
    expect(heading(page)).to_have_text("Test connection: Peer Tools")
    result = page.locator("#test-result")
    expect(result.locator(".ok-line")).to_have_text(
        re.compile(r"^✓ Connected in \d+ ms; 5 tools found, 5 offered in chats\.$")
    )
    expect(result.locator("tbody td code")).to_have_text(PEER_TOOLS)
    echo = result.locator("tbody tr").filter(has_text="peer-tools__echo")
    expect(echo).to_contain_text("Echo the text back.")
    expect(echo.get_by_role("img", name="Yes")).to_have_text("✓")
    expect(result.get_by_role("img", name="No, by the allow or deny list")).to_have_count(0)
    assert peer.with_rpc_method("tools/list"), "Test connection did not ask the peer for its tools"
    browsing.shot(page, "test-connection")

    # Manage permissions: Everyone out, Platform in.
    page.get_by_role("link", name="MCP servers of Acme Labs").click()
    row = server_row(page, "peer-tools")
    row.get_by_label("Actions for Peer Tools").click()
    row.locator("details.menu").get_by_role("link", name="Manage permissions").click()
    expect(heading(page)).to_have_text("Server permissions: Peer Tools")
    entries = page.locator("main table tbody tr")
    expect(entries).to_have_count(1)
    expect(entries.first).to_contain_text("Everyone")
    expect(entries.first).to_contain_text("Use")
    browsing.shot(page, "permissions")

    entries.filter(has_text="Everyone").get_by_role("button", name="Remove").click()
    expect(page.locator("#messages")).to_contain_text("Permissions updated.")
    expect(entries).to_have_count(1)
    expect(entries.first).to_contain_text("Nobody is on the list")
    assert list(servers_usable_by(live_world.member, live_world.acme)) == []
    browsing.shot(page, "permissions-nobody")

    page.get_by_label("Add a group").select_option(label="Platform")
    page.get_by_role("button", name="Add group").click()
    expect(page.locator("#messages")).to_contain_text("Permissions updated.")
    expect(entries).to_have_count(1)
    expect(entries.first).to_contain_text("Platform")
    expect(entries.first.locator(".pill")).to_have_text("group")
    expect(page.get_by_label("Add a group").locator("option")).to_have_text(["Everyone"])
    assert [s.slug for s in servers_usable_by(live_world.member, live_world.acme)] == ["peer-tools"]
    browsing.shot(page, "permissions-platform")

    page.get_by_role("link", name="MCP servers of Acme Labs").click()
    expect(page).to_have_url(re.compile(r"/ai/settings/mcp-servers\?org=acme$"))
    expect(server_row(page, "peer-tools").locator("td.acl .pill")).to_have_text(["Platform"])
    browsing.shot(page, "list-platform")

    browsing.assert_no_console_errors()


# 2. A member opts a chat into the server and the demo provider calls one of its tools ------------------------------


@pytest.fixture
def peer_tools(live_world, platform, mcp_server) -> MCPServer:
    """Peer Tools on a loopback MCP server: enabled, off by default, shared with Platform only."""
    peer = mcp_server()
    server = services.mcp_server_create(
        actor=live_world.org_admin,
        organization=live_world.acme,
        data={
            "display_name": "Peer Tools",
            "url": peer.url,
            "transport": Transport.STREAMABLE_HTTP,
            "enabled": True,
            "availability": Availability.DEFAULT_OFF,
            "auth_type": AuthType.NONE,
        },
    )
    everyone = OrgGroup.objects.get(organization=live_world.acme, is_everyone=True)
    services.mcp_server_set_acl(
        actor=live_world.org_admin, server=server, group_roles={str(everyone.pk): "", str(platform.pk): "read"}
    )
    return server


def test_it_lets_a_member_pick_an_mcp_server_and_call_its_tool(browsing, live_world, peer_tools):
    page = signed_in(browsing, "bob")
    chat = start_chat(page)
    picker = page.locator("details.mcp-picker")
    expect(picker).not_to_have_attribute("open", "")
    expect(picker.locator("summary")).to_have_text("Tools: none selected (1 available)")
    browsing.shot(page, "new-chat")

    picker.locator("summary").click()
    expect(picker).to_have_attribute("open", "")
    box = picker.get_by_role("checkbox", name="Peer Tools")
    expect(box).not_to_be_checked()
    expect(box).to_be_enabled()
    expect(picker.locator(".mcp-row").filter(has_text="Peer Tools")).to_contain_text("off by default")
    box.check()
    browsing.shot(page, "picker-open")

    set_marker(page)
    picker.get_by_role("button", name="Save tools").click()
    expect(page.locator("details.mcp-picker summary")).to_have_text("Tools: Peer Tools")
    assert marker(page) == "still here", "Save tools reloaded the page instead of swapping the picker"
    assert list(MCPServer.objects.filter(chat_selections__chat=chat)) == [peer_tools]
    browsing.shot(page, "picker-saved")

    page.locator(COMPOSER).fill("peer-tools__echo hello from the browser")
    page.get_by_role("button", name="Send").click()
    transcript = page.get_by_role("list", name="Conversation")
    expect(transcript.locator(".msg-user")).to_contain_text("peer-tools__echo hello from the browser")
    call = transcript.locator("details.tool-call")
    expect(call).to_have_count(1)
    expect(call.locator("summary")).to_have_text("Calling Peer Tools: echo")
    expect(call).not_to_have_attribute("open", "")
    expect(call.locator("pre.result")).to_be_hidden()
    answer = transcript.locator(".msg-assistant .markdown").last
    expect(answer).to_contain_text("The tool peer-tools__echo answered")
    expect(answer).to_contain_text("hello from the browser")
    expect(page.locator(COMPOSER)).to_have_value("")
    browsing.shot(page, "answered")

    call.locator("summary").click()
    expect(call).to_have_attribute("open", "")
    expect(call.locator("p strong")).to_have_text("peer-tools__echo")
    expect(call.locator("pre").first).to_contain_text('"text": "hello from the browser"')
    expect(call.locator("pre.result")).to_contain_text("hello from the browser")
    browsing.shot(page, "tool-call-open")

    turn = chat.turns.get()
    assert turn.status == TurnStatus.DONE
    assert [m.role for m in chat.messages.order_by("id")] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    browsing.assert_no_console_errors()


def test_it_hides_the_mcp_server_from_a_member_outside_the_group(browsing, live_world, peer_tools):
    carol = make_user("carol")
    org_services.membership_add(actor=None, organization=live_world.acme, user=carol, role=OrgRole.MEMBER)
    page = signed_in(browsing, "carol")
    start_chat(page)
    # Nothing to choose: a plain line, not a menu that opens on nothing.
    picker = page.locator("#mcp-picker")
    expect(picker).to_have_text("Tools: no MCP servers available")
    expect(page.locator("details.mcp-picker")).to_have_count(0)
    expect(picker).not_to_contain_text("Peer Tools")
    expect(picker.get_by_role("checkbox")).to_have_count(0)
    expect(picker.get_by_role("button", name="Save tools")).to_have_count(0)
    assert list(servers_usable_by(carol, live_world.acme)) == []
    browsing.shot(page, "picker")
    browsing.assert_no_console_errors()
