"""MCP server API × every persona. The server is enabled and shared with Everyone, so the member may see it."""

from __future__ import annotations

import json

import pytest

from mcpservers import services
from mcpservers.models import MCPServer

from ..conftest import PERSONAS
from ..organizations.test_permission_matrix import Endpoint

API = "/api/v2/organizations/acme/mcp-servers"


def _server(world) -> MCPServer:
    server = MCPServer.objects.filter(slug="tickets").first()
    return server or services.mcp_server_create(
        actor=world.org_admin,
        organization=world.acme,
        # Port 9 (discard) on loopback: Test connection fails fast, whoever asks.
        data={"display_name": "Tickets", "url": "http://127.0.0.1:9/mcp", "enabled": True},
    )


READ = {"site_owner": 200, "org_admin": 200, "auditor": 200, "member": 200, "outsider": 404, "anonymous": 401}
ADMIN_READ = READ | {"member": 404}
WRITE = {"site_owner": 200, "org_admin": 200, "auditor": 403, "member": 403, "outsider": 404, "anonymous": 401}

COVERED_ROUTES = frozenset(
    {
        "mcp-servers",
        "mcp-server-new",
        "mcp-server-edit",
        "mcp-server-delete",
        "mcp-server-test",
        "mcp-server-permissions",
        "mcp-connections",
        "mcp-connection-disconnect",
    }
)

PAGE_READ = {"site_owner": 200, "org_admin": 200, "auditor": 200, "member": 404, "outsider": 404, "anonymous": 302}
PAGE_CHANGE = PAGE_READ | {"auditor": 403}
PAGE_DONE = PAGE_CHANGE | {"site_owner": 302, "org_admin": 302}

SIGNED_IN = {p: 200 for p in ("site_owner", "org_admin", "auditor", "member", "outsider")} | {"anonymous": 302}

PAGES = [
    Endpoint("mcp connections", "get", lambda w: "/settings/mcp-connections/", SIGNED_IN),
    # Disconnect needs only a session: with no stored token it still answers (nothing to delete).
    Endpoint(
        "mcp connection disconnect",
        "post_form",
        lambda w: f"/settings/mcp-connections/{_server(w).pk}/disconnect",
        {p: 302 for p in SIGNED_IN},
    ),
    Endpoint("page list", "get", lambda w: "/ai/settings/mcp-servers?org=acme", PAGE_READ),
    Endpoint("page new", "get", lambda w: "/ai/settings/mcp-servers/new?org=acme", PAGE_CHANGE),
    Endpoint("page edit", "get", lambda w: f"/ai/settings/mcp-servers/{_server(w).pk}/edit?org=acme", PAGE_CHANGE),
    Endpoint(
        "page edit (post)",
        "post_form",
        lambda w: f"/ai/settings/mcp-servers/{_server(w).pk}/edit?org=acme",
        PAGE_DONE,
        lambda w: {"display_name": "Tickets", "url": "https://tickets.example/mcp"},
    ),
    Endpoint("page delete", "get", lambda w: f"/ai/settings/mcp-servers/{_server(w).pk}/delete?org=acme", PAGE_CHANGE),
    Endpoint(
        "page delete (post)",
        "post_form",
        lambda w: f"/ai/settings/mcp-servers/{_server(w).pk}/delete?org=acme",
        PAGE_DONE,
    ),
    Endpoint(
        "page permissions", "get", lambda w: f"/ai/settings/mcp-servers/{_server(w).pk}/permissions?org=acme", PAGE_READ
    ),
    Endpoint(
        "page permissions (post)",
        "post_form",
        lambda w: f"/ai/settings/mcp-servers/{_server(w).pk}/permissions?org=acme",
        PAGE_DONE,
        lambda w: {"kind": "user", "id": w.member.pk, "role": "read"},
    ),
    # Test connection to an unreachable URL still answers the page (with the error): 200 for those who may.
    Endpoint(
        "page test", "post_form", lambda w: f"/ai/settings/mcp-servers/{_server(w).pk}/test?org=acme", PAGE_CHANGE
    ),
]

ENDPOINTS = [
    Endpoint("list", "get", lambda w: API, READ),
    Endpoint(
        "create",
        "post",
        lambda w: API,
        WRITE | {"site_owner": 201, "org_admin": 201},
        lambda w: {"display_name": "New", "url": "https://new.example/mcp"},
    ),
    Endpoint("detail", "get", lambda w: f"{API}/{_server(w).pk}", READ),
    Endpoint("update", "patch", lambda w: f"{API}/{_server(w).pk}", WRITE, lambda w: {"description": "d"}),
    Endpoint("delete", "delete", lambda w: f"{API}/{_server(w).pk}", WRITE | {"site_owner": 204, "org_admin": 204}),
    Endpoint("acl", "get", lambda w: f"{API}/{_server(w).pk}/acl", ADMIN_READ),
    Endpoint(
        "acl update",
        "patch",
        lambda w: f"{API}/{_server(w).pk}/acl",
        WRITE | {"site_owner": 204, "org_admin": 204, "member": 404},
        lambda w: {"user_roles": {str(w.member.pk): "read"}},
    ),
    Endpoint("acl available", "get", lambda w: f"{API}/{_server(w).pk}/acl/available", ADMIN_READ),
]


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("endpoint", ENDPOINTS + PAGES, ids=lambda e: e.name)
def test_it_answers_each_persona_as_the_policy_says(world, client_for, endpoint: Endpoint, persona: str):
    client = client_for(persona)
    url = endpoint.url(world)
    if endpoint.method == "get":
        response = client.get(url)
    elif endpoint.method == "post_form":
        response = client.post(url, endpoint.data(world) if endpoint.data else {})
    else:
        body = json.dumps(endpoint.data(world)) if endpoint.data else "{}"
        response = getattr(client, endpoint.method)(url, body, content_type="application/json")
    expected = endpoint.expect[persona]
    assert response.status_code == expected, (
        f"{endpoint.name} as {persona}: {response.status_code}, expected {expected}"
    )


def test_it_covers_every_mcp_server_route():
    from mcpservers.urls import urlpatterns

    assert {p.name for p in urlpatterns} == COVERED_ROUTES
