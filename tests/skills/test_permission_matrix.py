"""Every skills page and API endpoint × every persona → the expected status.

Same codes as the organizations matrix: 200 page, 302 redirect (anonymous: to sign-in; others: a successful write
redirecting back), 201/204 API create/delete, 401 API without credentials, 403 may read but not change, 404 may not
read (the same answer as for something missing).

Data (built through ``skills.services``): in acme, ``deploy-checklist`` (enabled, shared with Everyone),
``legacy-runbook`` (disabled) and ``board-notes`` (enabled, shared with nobody); a personal ``my-notes`` for every
signed-in persona, and ``zed-notes`` belonging to a user who is none of the personas.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.urls import reverse

from organizations.models import AuditEvent, OrgGroup
from skills import services
from skills.models import OrganizationSkill

from ..conftest import PERSONAS, World, make_user


def skill_md(name: str, description: str = "Helps with the thing.", body: str = "# Steps\n\nDo the thing.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str  # get | post (form) | api-post | api-patch | api-delete (JSON bodies)
    url: Callable[[World], str]
    expect: dict[str, int]
    data: Callable[[World], dict] | None = None


def ALL(code: int, anonymous: int = 302) -> dict[str, int]:
    return {p: code for p in PERSONAS} | {"anonymous": anonymous}


def _everyone(world: World) -> OrgGroup:
    return OrgGroup.objects.get(organization=world.acme, is_everyone=True)


def _org(name: str, *rest: str) -> Callable[[World], str]:
    return lambda w: reverse(name, args=rest) + "?org=acme"


# Admin settings → Skills (acme): readers, and who may change.
ORG_READ = {"site_owner": 200, "org_admin": 200, "auditor": 200, "member": 404, "outsider": 404, "anonymous": 302}
ORG_WRITE = {"site_owner": 302, "org_admin": 302, "auditor": 403, "member": 404, "outsider": 404, "anonymous": 302}
ORG_CONFIRM = ORG_READ | {"auditor": 403}
# Settings → Skills, From your organizations: those who may use the skill.
SHARED = {"site_owner": 200, "org_admin": 200, "auditor": 200, "member": 200, "outsider": 404, "anonymous": 302}
SHARED_READERS_ONLY = SHARED | {"member": 404}  # enabled, but shared with nobody
NOBODY = ALL(404)  # signed-in: 404; anonymous: to sign-in
# API.
API_ALL = ALL(200, anonymous=401)
API_NOBODY = ALL(404, anonymous=401)
API_USE = SHARED | {"anonymous": 401}
API_READERS = ORG_READ | {"anonymous": 401}
API_CREATE = {"site_owner": 201, "org_admin": 201, "auditor": 403, "member": 403, "outsider": 404, "anonymous": 401}
API_UPDATE = API_CREATE | {"site_owner": 200, "org_admin": 200}
API_DELETE = API_CREATE | {"site_owner": 204, "org_admin": 204}
API_SHARE = API_READERS | {"site_owner": 204, "org_admin": 204, "auditor": 403}

ORG_API = "/api/experimental/organizations/acme/skills"
ME_API = "/api/experimental/users/me/skills"

ENDPOINTS = [
    # Settings → Skills: one's own personal skills.
    Endpoint("personal skills", "get", lambda w: reverse("personal-skills"), ALL(200)),
    Endpoint("personal skill new", "get", lambda w: reverse("personal-skill-new"), ALL(200)),
    Endpoint(
        "personal skill create",
        "post",
        lambda w: reverse("personal-skill-new"),
        ALL(302),
        lambda w: {"content": skill_md("fresh-skill")},
    ),
    Endpoint(
        "skill validate", "post", lambda w: reverse("skill-validate"), ALL(200), lambda w: {"content": skill_md("x")}
    ),
    Endpoint("personal skills export", "get", lambda w: reverse("personal-skills-export"), ALL(200)),
    Endpoint("personal skill edit", "get", lambda w: reverse("personal-skill-edit", args=["my-notes"]), ALL(200)),
    Endpoint(
        "personal skill save",
        "post",
        lambda w: reverse("personal-skill-edit", args=["my-notes"]),
        ALL(302),
        lambda w: {"content": skill_md("my-notes", "Edited.")},
    ),
    Endpoint(
        "personal skill enabled",
        "post",
        lambda w: reverse("personal-skill-enabled", args=["my-notes"]),
        ALL(302),
        lambda w: {"enabled": "false"},
    ),
    Endpoint(
        "personal skill download", "get", lambda w: reverse("personal-skill-download", args=["my-notes"]), ALL(200)
    ),
    Endpoint(
        "personal skill delete (confirm)",
        "get",
        lambda w: reverse("personal-skill-delete", args=["my-notes"]),
        ALL(200),
    ),
    Endpoint("personal skill delete", "post", lambda w: reverse("personal-skill-delete", args=["my-notes"]), ALL(302)),
    # Someone else's personal skill: as good as missing.
    Endpoint("other's skill edit", "get", lambda w: reverse("personal-skill-edit", args=["zed-notes"]), NOBODY),
    Endpoint(
        "other's skill save",
        "post",
        lambda w: reverse("personal-skill-edit", args=["zed-notes"]),
        NOBODY,
        lambda w: {"content": skill_md("zed-notes", "Hijacked.")},
    ),
    Endpoint(
        "other's skill enabled",
        "post",
        lambda w: reverse("personal-skill-enabled", args=["zed-notes"]),
        NOBODY,
        lambda w: {"enabled": "false"},
    ),
    Endpoint("other's skill download", "get", lambda w: reverse("personal-skill-download", args=["zed-notes"]), NOBODY),
    Endpoint(
        "other's skill delete (confirm)", "get", lambda w: reverse("personal-skill-delete", args=["zed-notes"]), NOBODY
    ),
    Endpoint("other's skill delete", "post", lambda w: reverse("personal-skill-delete", args=["zed-notes"]), NOBODY),
    # Settings → Skills → From your organizations (read-only).
    Endpoint("shared skill", "get", lambda w: reverse("shared-skill", args=["acme", "deploy-checklist"]), SHARED),
    Endpoint(
        "shared skill download",
        "get",
        lambda w: reverse("shared-skill-download", args=["acme", "deploy-checklist"]),
        SHARED,
    ),
    Endpoint("shared skills export", "get", lambda w: reverse("shared-skills-export", args=["acme"]), SHARED),
    Endpoint(
        "shared skill (disabled)", "get", lambda w: reverse("shared-skill", args=["acme", "legacy-runbook"]), NOBODY
    ),
    Endpoint(
        "shared skill download (disabled)",
        "get",
        lambda w: reverse("shared-skill-download", args=["acme", "legacy-runbook"]),
        NOBODY,
    ),
    Endpoint(
        "shared skill (unshared)",
        "get",
        lambda w: reverse("shared-skill", args=["acme", "board-notes"]),
        SHARED_READERS_ONLY,
    ),
    Endpoint(
        "shared skill download (unshared)",
        "get",
        lambda w: reverse("shared-skill-download", args=["acme", "board-notes"]),
        SHARED_READERS_ONLY,
    ),
    # Admin settings → Skills.
    Endpoint("org skills", "get", _org("org-skills"), ORG_READ),
    Endpoint("org skills export", "get", _org("org-skills-export"), ORG_READ),
    Endpoint("org skill", "get", _org("org-skill", "deploy-checklist"), ORG_READ),
    Endpoint("org skill (disabled)", "get", _org("org-skill", "legacy-runbook"), ORG_READ),
    Endpoint("org skill download", "get", _org("org-skill-download", "deploy-checklist"), ORG_READ),
    Endpoint("org skill permissions", "get", _org("org-skill-permissions", "deploy-checklist"), ORG_READ),
    Endpoint("org skill new", "get", _org("org-skill-new"), ORG_CONFIRM),
    Endpoint(
        "org skill create", "post", _org("org-skill-new"), ORG_WRITE, lambda w: {"content": skill_md("brand-new")}
    ),
    Endpoint("org skill edit", "get", _org("org-skill-edit", "deploy-checklist"), ORG_CONFIRM),
    Endpoint(
        "org skill save",
        "post",
        _org("org-skill-edit", "deploy-checklist"),
        ORG_WRITE,
        lambda w: {"content": skill_md("deploy-checklist", "Edited.")},
    ),
    Endpoint(
        "org skill disable",
        "post",
        _org("org-skill-enabled", "deploy-checklist"),
        ORG_WRITE,
        lambda w: {"enabled": "false"},
    ),
    Endpoint(
        "org skill enable",
        "post",
        _org("org-skill-enabled", "legacy-runbook"),
        ORG_WRITE,
        lambda w: {"enabled": "true"},
    ),
    Endpoint("org skill delete (confirm)", "get", _org("org-skill-delete", "deploy-checklist"), ORG_CONFIRM),
    Endpoint("org skill delete", "post", _org("org-skill-delete", "deploy-checklist"), ORG_WRITE),
    Endpoint(
        "org skill permissions change",
        "post",
        _org("org-skill-permissions", "deploy-checklist"),
        ORG_WRITE,
        lambda w: {"kind": "user", "id": str(w.member.pk), "role": "read"},
    ),
    # API: personal skills.
    Endpoint("api my skills", "get", lambda w: ME_API, API_ALL),
    Endpoint("api my skill", "get", lambda w: f"{ME_API}/my-notes", API_ALL),
    Endpoint(
        "api my skill create",
        "api-post",
        lambda w: ME_API,
        ALL(201, anonymous=401),
        lambda w: {"content": skill_md("from-api")},
    ),
    Endpoint("api my skill update", "api-patch", lambda w: f"{ME_API}/my-notes", API_ALL, lambda w: {"enabled": False}),
    Endpoint("api my skill delete", "api-delete", lambda w: f"{ME_API}/my-notes", ALL(204, anonymous=401)),
    Endpoint("api other's skills", "get", lambda w: "/api/experimental/users/zed/skills", API_NOBODY),
    Endpoint("api other's skill", "get", lambda w: "/api/experimental/users/zed/skills/zed-notes", API_NOBODY),
    Endpoint(
        "api other's skill update",
        "api-patch",
        lambda w: "/api/experimental/users/zed/skills/zed-notes",
        API_NOBODY,
        lambda w: {"enabled": False},
    ),
    Endpoint(
        "api other's skill delete", "api-delete", lambda w: "/api/experimental/users/zed/skills/zed-notes", API_NOBODY
    ),
    # API: organization skills.
    Endpoint("api org skills", "get", lambda w: ORG_API, API_USE),
    Endpoint("api org skill", "get", lambda w: f"{ORG_API}/deploy-checklist", API_USE),
    Endpoint("api org skill (disabled)", "get", lambda w: f"{ORG_API}/legacy-runbook", API_READERS),
    Endpoint("api org skill (unshared)", "get", lambda w: f"{ORG_API}/board-notes", API_READERS),
    Endpoint(
        "api org skill create", "api-post", lambda w: ORG_API, API_CREATE, lambda w: {"content": skill_md("via-api")}
    ),
    Endpoint(
        "api org skill update",
        "api-patch",
        lambda w: f"{ORG_API}/deploy-checklist",
        API_UPDATE,
        lambda w: {"enabled": False},
    ),
    Endpoint("api org skill delete", "api-delete", lambda w: f"{ORG_API}/deploy-checklist", API_DELETE),
    Endpoint("api org skill acl", "get", lambda w: f"{ORG_API}/deploy-checklist/acl", API_READERS),
    Endpoint(
        "api org skill acl update",
        "api-patch",
        lambda w: f"{ORG_API}/deploy-checklist/acl",
        API_SHARE,
        lambda w: {"group_roles": {str(_everyone(w).pk): ""}},
    ),
    Endpoint("api org skill acl available", "get", lambda w: f"{ORG_API}/deploy-checklist/acl/available", API_READERS),
]

# Every named page route of the skills app, for the site-wide check in tests/organizations/test_permission_matrix.py.
COVERED_ROUTES = frozenset(
    {
        "personal-skills",
        "personal-skill-new",
        "skill-validate",
        "personal-skills-export",
        "personal-skill-edit",
        "personal-skill-enabled",
        "personal-skill-download",
        "personal-skill-delete",
        "shared-skills-export",
        "shared-skill",
        "shared-skill-download",
        "org-skills",
        "org-skill-new",
        "org-skills-export",
        "org-skill",
        "org-skill-edit",
        "org-skill-enabled",
        "org-skill-download",
        "org-skill-delete",
        "org-skill-permissions",
    }
)


@pytest.fixture
def skills_world(world: World) -> World:
    admin = world.org_admin
    services.organization_skill_create(actor=admin, organization=world.acme, content=skill_md("deploy-checklist"))
    services.organization_skill_create(
        actor=admin, organization=world.acme, content=skill_md("legacy-runbook"), enabled=False
    )
    unshared = services.organization_skill_create(actor=admin, organization=world.acme, content=skill_md("board-notes"))
    services.organization_skill_set_acl(actor=admin, skill=unshared, group_roles={str(_everyone(world).pk): ""})
    for persona in PERSONAS:
        user = world.user(persona)
        if user is not None:
            services.personal_skill_create(user=user, content=skill_md("my-notes"))
    services.personal_skill_create(user=make_user("zed"), content=skill_md("zed-notes"))
    return world


def _call(client, endpoint: Endpoint, world: World):
    url = endpoint.url(world)
    data = endpoint.data(world) if endpoint.data else {}
    if endpoint.method == "get":
        return client.get(url)
    if endpoint.method == "post":
        return client.post(url, data)
    verb = endpoint.method.removeprefix("api-")
    return getattr(client, verb)(url, json.dumps(data), content_type="application/json")


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_it_answers_each_persona_as_the_policy_says(skills_world, client_for, endpoint: Endpoint, persona: str):
    response = _call(client_for(persona), endpoint, skills_world)
    expected = endpoint.expect[persona]
    assert response.status_code == expected, (
        f"{endpoint.name} as {persona}: {response.status_code}, expected {expected}"
    )
    if persona == "anonymous" and expected == 302:
        assert response["Location"].startswith(reverse("login"))
    if endpoint.url(skills_world).startswith("/api/") and response.status_code >= 400:
        assert set(response.json()) == {"message", "detail", "validations"}


@pytest.mark.parametrize(
    "endpoint",
    [e for e in ENDPOINTS if e.expect["auditor"] == 403],
    ids=lambda e: e.name,
)
def test_it_audits_the_auditors_refused_writes(skills_world, client_for, endpoint: Endpoint):
    before = set(OrganizationSkill.objects.values_list("name", "enabled", "content"))
    response = _call(client_for("auditor"), endpoint, skills_world)
    assert response.status_code == 403
    event = AuditEvent.objects.get(outcome="denied")
    assert (event.resource_type, event.actor_id, event.organization_id) == (
        "organization_skill",
        skills_world.auditor.pk,
        skills_world.acme.pk,
    )
    assert event.action.startswith("organization_skill.")
    assert set(OrganizationSkill.objects.values_list("name", "enabled", "content")) == before


def test_it_covers_every_skills_route():
    from skills.urls import urlpatterns

    assert {p.name for p in urlpatterns} == COVERED_ROUTES
