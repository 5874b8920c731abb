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
        data={"display_name": "Tickets", "url": "https://tickets.example/mcp", "enabled": True},
    )


READ = {"site_owner": 200, "org_admin": 200, "auditor": 200, "member": 200, "outsider": 404, "anonymous": 401}
ADMIN_READ = READ | {"member": 404}
WRITE = {"site_owner": 200, "org_admin": 200, "auditor": 403, "member": 403, "outsider": 404, "anonymous": 401}

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
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_it_answers_each_persona_as_the_policy_says(world, client_for, endpoint: Endpoint, persona: str):
    client = client_for(persona)
    url = endpoint.url(world)
    if endpoint.method == "get":
        response = client.get(url)
    else:
        body = json.dumps(endpoint.data(world)) if endpoint.data else "{}"
        response = getattr(client, endpoint.method)(url, body, content_type="application/json")
    expected = endpoint.expect[persona]
    assert response.status_code == expected, (
        f"{endpoint.name} as {persona}: {response.status_code}, expected {expected}"
    )
