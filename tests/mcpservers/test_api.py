"""MCP server configurations through the API: documented statuses and messages, secrets never returned, auth type
changes clearing fields, the ACL, and who sees what."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from mcpservers.models import MCPServer
from organizations.models import AuditEvent

API = "/api/v2/organizations/acme/mcp-servers"
SECRET = "sk-very-secret-value-123"


def post(client, data, url=API):
    return client.post(url, json.dumps(data), content_type="application/json")


def patch(client, url, data):
    return client.patch(url, json.dumps(data), content_type="application/json")


@pytest.fixture
def admin(client_for):
    return client_for("org_admin")


def make(admin, **extra):
    data = {"display_name": "Docs Search", "url": "https://docs.example/mcp", "transport": "streamable_http"} | extra
    response = post(admin, data)
    assert response.status_code == 201, response.content
    return response.json()


def test_it_creates_a_server_with_the_documented_defaults(world, admin):
    body = make(admin)
    assert body["slug"] == "docs-search" and body["enabled"] is False and body["availability"] == "default_off"
    assert body["api_key_header"] == "Authorization" and body["auth_type"] == "none"
    assert {"has_oauth2_secret", "has_api_key", "has_custom_headers", "has_signing_secret"} <= set(body)
    acl = admin.get(f"{API}/{body['id']}/acl").json()
    assert acl == {"users": [], "groups": [{"id": acl["groups"][0]["id"], "name": "Everyone", "role": "read"}]}


def test_secrets_are_encrypted_and_never_returned_or_audited(world, admin):
    body = make(
        admin,
        auth_type="api_key",
        api_key_header="X-Api-Key",
        api_key_value=SECRET,
        forward_coder_headers=True,
        signing_secret=SECRET + "-sign",
    )
    assert body["has_api_key"] and body["has_signing_secret"]
    for response in (admin.get(API), admin.get(f"{API}/{body['id']}")):
        assert SECRET not in response.content.decode()
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key_value, signing_secret FROM mcpservers_mcpserver")
        assert all(SECRET not in value for value in cursor.fetchone())
    assert SECRET not in json.dumps([e.as_record() for e in AuditEvent.objects.all()])


def test_left_out_secrets_are_kept_and_empty_ones_cleared(world, admin):
    body = make(admin, auth_type="api_key", api_key_value=SECRET, signing_secret="abc")
    url = f"{API}/{body['id']}"
    assert patch(admin, url, {"description": "Search the docs"}).json()["has_api_key"] is True
    assert MCPServer.objects.get().api_key_value == SECRET
    cleared = patch(admin, url, {"signing_secret": ""}).json()
    assert cleared["has_signing_secret"] is False and cleared["has_api_key"] is True


def test_changing_the_auth_type_clears_the_old_fields(world, admin):
    body = make(admin, auth_type="custom_headers", custom_headers={"X-Team": SECRET})
    assert body["has_custom_headers"]
    changed = patch(admin, f"{API}/{body['id']}", {"auth_type": "api_key", "api_key_value": "k"}).json()
    assert changed["has_custom_headers"] is False and changed["has_api_key"] is True
    assert MCPServer.objects.get().custom_headers == {}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"auth_type": "oauth2", "oauth2_client_id": "x"},
            "OAuth2 auth type requires either all of oauth2_client_id, oauth2_auth_url, and oauth2_token_url "
            "(manual configuration), or none of them (automatic discovery via RFC 7591).",
        ),
        ({"auth_type": "api_key"}, "API key auth type requires api_key_header and api_key_value."),
        ({"auth_type": "custom_headers"}, "Custom headers auth type requires at least one custom header."),
        ({"auth_type": "custom_headers", "custom_headers": {"X-Coder-Owner-Id": "1"}}, "Invalid custom headers."),
        ({"auth_type": "custom_headers", "custom_headers": {"Host": "x"}}, "Invalid custom headers."),
        ({"auth_type": "custom_headers", "custom_headers": ["x"]}, "Invalid custom headers."),
    ],
)
def test_it_refuses_bad_auth_settings_with_the_documented_messages(world, admin, extra, message):
    data = {"display_name": "Bad", "url": "https://bad.example/mcp"} | extra
    response = post(admin, data)
    assert response.status_code == 400
    assert response.json()["message"] == message
    assert not MCPServer.objects.exists()


def test_a_duplicate_slug_is_a_conflict(world, admin):
    make(admin)
    response = post(admin, {"display_name": "Docs Search", "url": "https://other.example/mcp"})
    assert response.status_code == 409 and response.json()["message"] == "MCP server config already exists."


def test_revocation_urls_must_be_https_except_loopback(world, admin):
    data = {
        "display_name": "O",
        "url": "https://o.example/mcp",
        "auth_type": "oauth2",
        "oauth2_client_id": "c",
        "oauth2_auth_url": "https://o.example/auth",
        "oauth2_token_url": "https://o.example/token",
    }
    assert post(admin, data | {"oauth2_revocation_url": "http://o.example/revoke"}).status_code == 400
    assert post(admin, data | {"oauth2_revocation_url": "http://127.0.0.1:9/revoke"}).status_code == 201


def test_only_site_owners_configure_user_oidc(world, admin, client_for):
    data = {"display_name": "OIDC", "url": "https://o.example/mcp", "auth_type": "user_oidc"}
    assert post(admin, data).status_code == 403
    assert post(client_for("site_owner"), data).status_code == 201


def test_members_see_only_enabled_servers_shared_with_them(world, admin, client_for):
    hidden = make(admin)
    shown = make(admin, display_name="Tickets", enabled=True)
    member = client_for("member")
    assert [s["slug"] for s in member.get(API).json()] == ["tickets"]
    assert member.get(f"{API}/{hidden['id']}").status_code == 404
    everyone = admin.get(f"{API}/{shown['id']}/acl").json()["groups"][0]["id"]
    assert patch(admin, f"{API}/{shown['id']}/acl", {"group_roles": {str(everyone): ""}}).status_code == 204
    assert member.get(API).json() == []
    assert patch(admin, f"{API}/{shown['id']}/acl", {"user_roles": {str(world.member.pk): "read"}}).status_code == 204
    assert [s["slug"] for s in member.get(API).json()] == ["tickets"]
    assert client_for("outsider").get(API).status_code == 404


def test_acl_refuses_duplicates_and_non_members(world, admin):
    server = make(admin)
    url = f"{API}/{server['id']}/acl"
    duplicate = f'{{"user_roles": {{"{world.member.pk}": "read", "{world.member.pk}": ""}}}}'
    response = admin.patch(url, duplicate, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["message"] == "Invalid request to update MCP server config ACL."
    response = patch(admin, url, {"user_roles": {str(world.outsider.pk): "read"}})
    assert response.status_code == 400
    assert admin.get(url).json()["users"] == []


def test_auditors_read_but_cannot_change(world, admin, client_for):
    server = make(admin)
    auditor = client_for("auditor")
    assert auditor.get(f"{API}/{server['id']}").status_code == 200
    response = patch(auditor, f"{API}/{server['id']}", {"enabled": True})
    assert response.status_code == 403
    assert response.json()["message"] == "You don't have permission to update this MCP server."
    assert AuditEvent.objects.filter(action="mcp_server.update", outcome="denied").exists()
    assert post(client_for("member"), {"display_name": "X", "url": "https://x.example"}).status_code == 403


def test_delete_removes_the_server_and_its_list(world, admin):
    server = make(admin)
    assert admin.delete(f"{API}/{server['id']}").status_code == 204
    assert not MCPServer.objects.exists()
    assert AuditEvent.objects.filter(action="mcp_server.delete").exists()
