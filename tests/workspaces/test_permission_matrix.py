"""Workspace pages and API × every persona. The workspace belongs to the member (bob): owners manage their own,
org admins see and manage all in the organization, auditors read only, everyone else gets 404."""

from __future__ import annotations

import pytest
from django.urls import reverse

from workspaces import services
from workspaces.models import Workspace

from ..conftest import PERSONAS
from ..organizations.test_permission_matrix import ALL, Endpoint

COVERED_ROUTES = frozenset({"workspaces", "workspace", "workspace-token", "workspace-delete"})


def _ws(world) -> Workspace:
    workspace = Workspace.objects.filter(name="bob-laptop").first()
    if workspace is None:
        workspace, _ = services.workspace_create(actor=world.member, organization=world.acme, name="bob-laptop")
    return workspace


READ = {"site_owner": 200, "org_admin": 200, "auditor": 200, "member": 200, "outsider": 404, "anonymous": 302}
CONFIRM = {"site_owner": 200, "org_admin": 200, "auditor": 403, "member": 200, "outsider": 404, "anonymous": 302}
CHANGE_REDIRECT = {
    "site_owner": 302,
    "org_admin": 302,
    "auditor": 403,
    "member": 302,
    "outsider": 404,
    "anonymous": 302,
}
CHANGE_PAGE = {"site_owner": 200, "org_admin": 200, "auditor": 403, "member": 200, "outsider": 404, "anonymous": 302}

ENDPOINTS = [
    Endpoint("workspaces", "get", lambda w: reverse("workspaces"), ALL(200)),
    Endpoint(
        "workspace create",
        "post",
        lambda w: reverse("workspaces"),
        # The outsider has no membership in acme: the form refuses the organization (400, nothing created).
        ALL(200) | {"outsider": 400},
        lambda w: {"organization": "acme", "name": "new-one"},
    ),
    Endpoint("workspace", "get", lambda w: reverse("workspace", args=[_ws(w).pk]), READ),
    Endpoint("workspace token (confirm)", "get", lambda w: reverse("workspace-token", args=[_ws(w).pk]), CONFIRM),
    Endpoint("workspace token", "post", lambda w: reverse("workspace-token", args=[_ws(w).pk]), CHANGE_PAGE),
    Endpoint("workspace delete (confirm)", "get", lambda w: reverse("workspace-delete", args=[_ws(w).pk]), CONFIRM),
    Endpoint("workspace delete", "post", lambda w: reverse("workspace-delete", args=[_ws(w).pk]), CHANGE_REDIRECT),
    Endpoint("api workspaces", "get", lambda w: "/api/v2/workspaces", ALL(200, anonymous=401)),
    Endpoint(
        "api workspace snapshot",
        "get",
        lambda w: f"/api/v2/workspaces/{_ws(w).pk}/snapshot",
        READ | {"anonymous": 401},
    ),
]


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_it_answers_each_persona_as_the_policy_says(world, client_for, endpoint: Endpoint, persona: str):
    client = client_for(persona)
    url = endpoint.url(world)
    response = (
        client.get(url) if endpoint.method == "get" else client.post(url, endpoint.data(world) if endpoint.data else {})
    )
    expected = endpoint.expect[persona]
    assert response.status_code == expected, (
        f"{endpoint.name} as {persona}: {response.status_code}, expected {expected}"
    )


def test_it_covers_every_workspace_route():
    from workspaces.urls import urlpatterns

    assert {p.name for p in urlpatterns} == COVERED_ROUTES


def test_the_agent_channel_needs_the_workspace_token(world, client_for):
    workspace, token = services.workspace_create(actor=world.member, organization=world.acme, name="tok")
    for client in (client_for("member"), client_for("site_owner")):  # a session is not an agent
        assert (
            client.post(
                "/api/v2/workspace-agent/status", {"status": "ready"}, content_type="application/json"
            ).status_code
            == 401
        )
    from django.test import Client

    personal = Client().post(
        "/api/v2/workspace-agent/status",
        {"status": "ready"},
        content_type="application/json",
        headers={"Authorization": "Bearer sb_not-a-workspace-token"},
    )
    assert personal.status_code == 401
    ok = Client().post(
        "/api/v2/workspace-agent/status",
        {"status": "ready"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert ok.status_code == 204
