"""Admin settings → MCP servers: list, add, edit, Test connection against a real MCP server, permissions."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from mcpservers import services
from mcpservers.models import MCPServer, MCPUserToken
from organizations.models import AuditEvent, OrgGroup

from ..peers.mcp_servers import mcp_server_fixture, unused_port  # noqa: F401 - the fixture

SECRET = "sk-page-secret-456"


def url(name, *args):
    return reverse(name, args=args) + "?org=acme"


def add(world, **data):
    base = {"display_name": "Peer", "url": "https://peer.example/mcp"}
    return services.mcp_server_create(actor=world.org_admin, organization=world.acme, data=base | data)


def test_admins_add_a_server_through_the_form(world, client_for):
    response = client_for("org_admin").post(
        url("mcp-server-new"),
        {
            "display_name": "Ticket Desk",
            "url": "https://tickets.example/mcp",
            "transport": "streamable_http",
            "availability": "default_on",
            "auth_type": "custom_headers",
            "header_name": ["X-Team", ""],
            "header_value": [SECRET, ""],
            "tool_deny_list": "delete_ticket\n",
        },
    )
    assert response.status_code == 302
    server = MCPServer.objects.get(slug="ticket-desk")
    assert server.custom_headers == {"X-Team": SECRET} and server.tool_deny_list == ["delete_ticket"]
    page = client_for("org_admin").get(url("mcp-server-edit", server.pk)).content.decode()
    assert "X-Team" in page and SECRET not in page


def test_a_refused_form_shows_the_rule_and_keeps_the_input(world, client_for):
    response = client_for("org_admin").post(
        url("mcp-server-new"), {"display_name": "Keyless", "url": "https://k.example/mcp", "auth_type": "api_key"}
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "API key auth type requires api_key_header and api_key_value." in body and "Keyless" in body
    assert not MCPServer.objects.exists()


def test_blank_secret_inputs_keep_the_stored_values(world, client_for):
    server = add(world, auth_type="api_key", api_key_value=SECRET)
    client_for("org_admin").post(
        url("mcp-server-edit", server.pk),
        {"display_name": "Peer", "url": "https://peer.example/mcp", "auth_type": "api_key", "api_key_header": "X-Key"},
    )
    server.refresh_from_db()
    assert server.api_key_value == SECRET and server.api_key_header == "X-Key"


def test_the_list_is_read_only_for_auditors_and_hidden_from_members(world, client_for):
    add(world)
    body = client_for("auditor").get(url("mcp-servers")).content.decode()
    assert "Peer" in body and "Add server" not in body and "Edit" not in body
    assert client_for("member").get(url("mcp-servers")).status_code == 404
    assert client_for("auditor").get(url("mcp-server-new")).status_code == 403
    assert AuditEvent.objects.filter(action="mcp_server.create", outcome="denied").exists()


def test_test_connection_lists_the_tools_and_applies_the_lists(world, client_for, mcp_server):
    peer = mcp_server(require_header=("X-Api-Key", SECRET))
    server = add(
        world,
        url=peer.url,
        auth_type="api_key",
        api_key_header="X-Api-Key",
        api_key_value=SECRET,
        tool_deny_list=["fail"],
    )
    response = client_for("org_admin").post(url("mcp-server-test", server.pk))
    body = response.content.decode()
    assert response.status_code == 200 and "Connected in" in body
    assert "peer__echo" in body and "peer__fail" in body
    assert 'aria-label="No, by the allow or deny list"' in body
    assert SECRET not in body


def test_test_connection_shows_which_tools_chats_offer_with_the_64_tool_limit(world, client_for, mcp_server):
    peer = mcp_server(extra_tools=70)  # echo, add, big, slow, fail, tool_000 … tool_069: 75 tools
    server = add(world, url=peer.url, tool_deny_list=["echo"])

    body = client_for("org_admin").post(url("mcp-server-test", server.pk)).content.decode()

    assert "75 tools found, 64 offered in chats." in body
    assert "Chats offer at most 64 tools of one server" in body
    assert body.count('aria-label="No, by the allow or deny list"') == 1  # echo
    assert body.count('aria-label="No, past the 64-tool limit"') == 10  # tool_060 … tool_069 (the lists kept 74)
    assert "peer__tool_069" in body


def test_test_connection_offers_an_allowed_tool_listed_late(world, client_for, mcp_server):
    peer = mcp_server(extra_tools=70)
    server = add(world, url=peer.url, tool_allow_list=["tool_069"])

    body = client_for("org_admin").post(url("mcp-server-test", server.pk)).content.decode()

    assert "75 tools found, 1 offered in chats." in body
    assert body.count('aria-label="Yes"') == 1 and "Chats offer at most 64" not in body


def test_test_connection_reports_a_refusal_without_secrets(world, client_for, mcp_server):
    peer = mcp_server(require_header=("X-Api-Key", SECRET))
    server = add(world, url=peer.url, auth_type="api_key", api_key_header="X-Api-Key", api_key_value="wrong-key")
    body = client_for("org_admin").post(url("mcp-server-test", server.pk)).content.decode()
    assert "Could not connect" in body and "wrong-key" not in body and SECRET not in body
    server.url = f"http://127.0.0.1:{unused_port()}/mcp"
    server.save()
    body = client_for("org_admin").post(url("mcp-server-test", server.pk)).content.decode()
    assert "Could not connect" in body


def test_permissions_page_adds_and_removes_entries(world, client_for):
    server = add(world)
    client = client_for("org_admin")
    client.post(url("mcp-server-permissions", server.pk), {"kind": "user", "id": world.member.pk, "role": "read"})
    body = client.get(url("mcp-server-permissions", server.pk)).content.decode()
    assert "bob" in body and "Everyone" in body
    response = client.post(
        url("mcp-server-permissions", server.pk), {"kind": "user", "id": world.outsider.pk, "role": "read"}
    )
    assert response.status_code == 400


def test_delete_asks_first(world, client_for):
    server = add(world)
    client = client_for("org_admin")
    assert client.get(url("mcp-server-delete", server.pk)).status_code == 200
    assert MCPServer.objects.exists()
    assert client.post(url("mcp-server-delete", server.pk)).status_code == 302
    assert not MCPServer.objects.exists()


def test_a_malformed_permissions_change_is_refused(world, client_for):
    server = add(world)
    response = client_for("org_admin").post(url("mcp-server-permissions", server.pk), {"kind": "robot", "id": "x"})
    assert response.status_code == 400 and "Choose a member or a group." in response.content.decode()


def test_members_see_every_server_they_may_use_and_how_it_signs_in(world, client_for):
    add(world, display_name="Open Tools", slug="open", description="Offline helpers.", enabled=True)
    add(world, display_name="Keyed Tools", slug="keyed", auth_type="api_key", api_key_value=SECRET, enabled=True)
    services.mcp_server_create(
        actor=world.site_owner,
        organization=world.acme,
        data={
            "display_name": "Directory",
            "slug": "directory",
            "url": "https://dir.example/mcp",
            "auth_type": "user_oidc",
            "enabled": True,
        },
    )
    add(world, display_name="Switched Off", slug="off", enabled=False)
    hidden = add(world, display_name="Not For You", slug="hidden", enabled=True)
    everyone = OrgGroup.objects.get(organization=world.acme, is_everyone=True)
    services.mcp_server_set_acl(actor=world.org_admin, server=hidden, group_roles={str(everyone.pk): ""})

    body = client_for("member").get(reverse("mcp-connections")).content.decode()

    assert "Open Tools" in body and "Offline helpers." in body and "nothing: it needs no sign-in" in body
    assert "Keyed Tools" in body and "the organization's credentials" in body and SECRET not in body
    assert "Directory" in body and "Single sign-on is not set up on this site" in body
    assert "Switched Off" not in body and "Not For You" not in body
    assert "Connect" not in body and "Disconnect" not in body  # nothing of theirs to connect


def test_someone_without_servers_is_told_who_adds_them(world, client_for):
    body = client_for("outsider").get(reverse("mcp-connections")).content.decode()

    assert "No MCP server is shared with you yet." in body


def test_the_connections_page_takes_the_same_queries_for_one_server_or_many(world, client_for):
    def oauth2_server(n: int):
        return add(
            world,
            display_name=f"Tracker {n}",
            slug=f"tracker-{n}",
            enabled=True,
            auth_type="oauth2",
            oauth2_client_id="client",
            oauth2_auth_url="https://idp.example/authorize",
            oauth2_token_url="https://idp.example/token",
        )

    member = client_for("member")
    MCPUserToken.objects.create(server=oauth2_server(0), user=world.member, access_token="a", refresh_token="r")
    with CaptureQueriesContext(connection) as one:
        assert member.get(reverse("mcp-connections")).status_code == 200
    for n in range(1, 6):
        MCPUserToken.objects.create(server=oauth2_server(n), user=world.member, access_token="a", refresh_token="r")
    with CaptureQueriesContext(connection) as six:
        body = member.get(reverse("mcp-connections")).content.decode()

    assert body.count(">connected<") == 6
    assert len(six.captured_queries) == len(one.captured_queries)


def test_test_connection_does_not_claim_a_limit_that_does_not_bite(world, client_for, mcp_server):
    peer = mcp_server(extra_tools=59)  # 64 tools, all offered
    server = add(world, url=peer.url)

    body = client_for("org_admin").post(url("mcp-server-test", server.pk)).content.decode()

    assert "64 tools found, 64 offered in chats." in body
    assert "Chats offer at most 64" not in body and "past the 64-tool limit" not in body


def test_a_user_oidc_server_tells_a_password_user_to_use_single_sign_on_when_the_site_has_it(
    world, client_for, settings
):
    settings.OIDC_ISSUER = "https://sso.example"
    services.mcp_server_create(
        actor=world.site_owner,
        organization=world.acme,
        data={"display_name": "Directory", "url": "https://dir.example/mcp", "auth_type": "user_oidc", "enabled": True},
    )

    body = client_for("member").get(reverse("mcp-connections")).content.decode()

    assert "You have no single sign-on session" in body and "not set up on this site" not in body
