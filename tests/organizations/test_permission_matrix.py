"""Every page and API endpoint × every persona → the expected status.

Later issues add their endpoints to ``ENDPOINTS``. Expected codes: 200 page, 302 redirect (anonymous: to sign-in;
others: a successful write redirecting back), 401 API without credentials, 403 may read but not change,
404 may not read (the same answer as for something missing), 405 wrong method.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.urls import reverse

from organizations import services
from organizations.models import CustomRole, OrgGroup

from ..conftest import PERSONAS, World


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    url: Callable[[World], str]
    expect: dict[str, int]
    data: Callable[[World], dict] | None = None


def _group(world: World) -> OrgGroup:
    group = OrgGroup.objects.filter(organization=world.acme, name="Engineering").first()
    return group or services.group_create(actor=world.org_admin, organization=world.acme, name="Engineering")


def _role(world: World) -> CustomRole:
    role = CustomRole.objects.filter(organization=world.acme, name="Skill editors").first()
    return role or services.custom_role_create(
        actor=world.org_admin, organization=world.acme, name="Skill editors", perms=["organization_skill:update"]
    )


def _everyone(world: World) -> OrgGroup:
    return OrgGroup.objects.get(organization=world.acme, is_everyone=True)


def ALL(code: int, anonymous: int = 302) -> dict[str, int]:
    return {p: code for p in PERSONAS} | {"anonymous": anonymous}


# Who may read acme's administration pages, and who may change them.
ORG_READ = {"site_owner": 200, "org_admin": 200, "auditor": 200, "member": 404, "outsider": 404, "anonymous": 302}
ORG_WRITE = {"site_owner": 302, "org_admin": 302, "auditor": 403, "member": 404, "outsider": 404, "anonymous": 302}
ORG_CONFIRM = {"site_owner": 200, "org_admin": 200, "auditor": 403, "member": 404, "outsider": 404, "anonymous": 302}
API_ORG_READ = {"site_owner": 200, "org_admin": 200, "auditor": 200, "member": 404, "outsider": 404, "anonymous": 401}

ENDPOINTS = [
    Endpoint("home", "get", lambda w: reverse("home"), ALL(302)),
    Endpoint("agents", "get", lambda w: reverse("agents"), ALL(200)),
    Endpoint("login", "get", lambda w: reverse("login"), ALL(302, anonymous=200)),
    Endpoint("logout (GET)", "get", lambda w: reverse("logout"), ALL(405, anonymous=405)),
    Endpoint("api tokens", "get", lambda w: reverse("api-tokens"), ALL(200)),
    Endpoint("api token create", "post", lambda w: reverse("api-tokens"), ALL(200), lambda w: {"name": "ci"}),
    Endpoint("profile", "get", lambda w: reverse("profile"), ALL(200)),
    Endpoint(
        "organizations",
        "get",
        lambda w: reverse("organizations"),
        ORG_READ | {"outsider": 200},  # the outsider administers globex and sees that one
    ),
    Endpoint(
        "organization create",
        "post",
        lambda w: reverse("organizations"),
        {"site_owner": 302, "org_admin": 403, "auditor": 403, "member": 404, "outsider": 403, "anonymous": 302},
        lambda w: {"name": "initech", "display_name": "Initech"},
    ),
    Endpoint("members", "get", lambda w: reverse("members") + "?org=acme", ORG_READ),
    Endpoint(
        "member add",
        "post",
        lambda w: reverse("members") + "?org=acme",
        ORG_WRITE,
        lambda w: {"user": w.outsider.username, "role": "member"},
    ),
    Endpoint(
        "member update",
        "post",
        lambda w: reverse("member-update", args=[w.member.pk]) + "?org=acme",
        ORG_WRITE,
        lambda w: {"role": "auditor"},
    ),
    Endpoint(
        "member remove (confirm)",
        "get",
        lambda w: reverse("member-remove", args=[w.member.pk]) + "?org=acme",
        ORG_CONFIRM,
    ),
    Endpoint("member remove", "post", lambda w: reverse("member-remove", args=[w.member.pk]) + "?org=acme", ORG_WRITE),
    Endpoint("groups", "get", lambda w: reverse("groups") + "?org=acme", ORG_READ),
    Endpoint("group create", "post", lambda w: reverse("groups") + "?org=acme", ORG_WRITE, lambda w: {"name": "Ops"}),
    Endpoint("group", "get", lambda w: reverse("group", args=[_group(w).pk]), ORG_READ),
    Endpoint(
        "group rename",
        "post",
        lambda w: reverse("group", args=[_group(w).pk]),
        ORG_WRITE,
        lambda w: {"op": "rename", "name": "Platform"},
    ),
    Endpoint("group delete (confirm)", "get", lambda w: reverse("group-delete", args=[_group(w).pk]), ORG_CONFIRM),
    Endpoint("group delete", "post", lambda w: reverse("group-delete", args=[_group(w).pk]), ORG_WRITE),
    Endpoint("everyone group", "get", lambda w: reverse("group", args=[_everyone(w).pk]), ORG_READ),
    Endpoint("roles", "get", lambda w: reverse("roles") + "?org=acme", ORG_READ),
    Endpoint(
        "role create",
        "post",
        lambda w: reverse("roles") + "?org=acme",
        ORG_WRITE,
        lambda w: {"name": "Auditors plus", "permissions": ["audit_log:read"]},
    ),
    Endpoint("role", "get", lambda w: reverse("role", args=[_role(w).pk]), ORG_READ),
    Endpoint(
        "role update",
        "post",
        lambda w: reverse("role", args=[_role(w).pk]),
        ORG_WRITE,
        lambda w: {"name": "Skill editors", "permissions": ["organization_skill:read"]},
    ),
    Endpoint("role delete (confirm)", "get", lambda w: reverse("role-delete", args=[_role(w).pk]), ORG_CONFIRM),
    Endpoint("role delete", "post", lambda w: reverse("role-delete", args=[_role(w).pk]), ORG_WRITE),
    Endpoint("audit log", "get", lambda w: reverse("audit-log") + "?org=acme", ORG_READ),
    Endpoint("audit log csv", "get", lambda w: reverse("audit-log") + "?org=acme&export=csv", ORG_READ),
    Endpoint("audit log (POST)", "post", lambda w: reverse("audit-log") + "?org=acme", ALL(405)),
    # OIDC sign-in is off unless OIDC_ISSUER is set: then these are 404 for everyone (tests/organizations/test_oidc.py
    # covers them switched on).
    Endpoint("oidc login", "get", lambda w: reverse("oidc-login"), ALL(404, anonymous=404)),
    Endpoint("oidc callback", "get", lambda w: reverse("oidc-callback"), ALL(404, anonymous=404)),
    Endpoint("api me", "get", lambda w: "/api/v2/users/me", ALL(200, anonymous=401)),
    Endpoint("api organizations", "get", lambda w: "/api/v2/organizations", ALL(200, anonymous=401)),
    Endpoint(
        "api organization",
        "get",
        lambda w: "/api/v2/organizations/acme",
        {"site_owner": 200, "org_admin": 200, "auditor": 200, "member": 200, "outsider": 404, "anonymous": 401},
    ),
    Endpoint("api members", "get", lambda w: "/api/v2/organizations/acme/members", API_ORG_READ),
    Endpoint("api audit log", "get", lambda w: "/api/v2/organizations/acme/audit-log", API_ORG_READ),
]


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_it_answers_each_persona_as_the_policy_says(world, client_for, endpoint: Endpoint, persona: str):
    client = client_for(persona)
    url = endpoint.url(world)
    if endpoint.method == "get":
        response = client.get(url)
    else:
        response = client.post(url, endpoint.data(world) if endpoint.data else {})
    expected = endpoint.expect[persona]
    assert response.status_code == expected, (
        f"{endpoint.name} as {persona}: {response.status_code}, expected {expected}"
    )
    if persona == "anonymous" and expected == 302:
        assert response["Location"].startswith(reverse("login"))


def test_it_lists_every_url_in_the_matrix():
    """A new page must join the matrix: every named route of the site appears in ENDPOINTS (the skills, workspace
    and chats pages in their apps' test_permission_matrix.py)."""
    from django.urls import get_resolver

    from ..chats.test_permission_matrix import COVERED_ROUTES as chats_routes
    from ..mcpservers.test_permission_matrix import COVERED_ROUTES as mcp_routes
    from ..skills.test_permission_matrix import COVERED_ROUTES as skills_routes
    from ..workspaces.test_permission_matrix import COVERED_ROUTES as workspace_routes

    names = {name for name in get_resolver().reverse_dict if isinstance(name, str)}
    covered = {
        "home",
        "agents",
        "login",
        "logout",
        "api-tokens",
        "profile",
        "organizations",
        "members",
        "member-update",
        "member-remove",
        "groups",
        "group",
        "group-delete",
        "roles",
        "role",
        "role-delete",
        "audit-log",
        "oidc-login",
        "oidc-callback",
    }
    # `settings` redirects to the skills page; api-token-revoke is covered in test_api_tokens (needs a token id).
    covered |= skills_routes | workspace_routes | chats_routes | mcp_routes
    uncovered = names - covered - {"settings", "api-token-revoke"} - {n for n in names if n.startswith("api-")}
    assert not uncovered, f"add these routes to the permission matrix: {sorted(uncovered)}"
