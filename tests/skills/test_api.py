"""The skills JSON API: statuses, messages, shapes, ACL, bearer tokens, CSRF and audit (rules.md, "API shapes").

Data is built through ``skills.services``; requests carry ``json.dumps`` bodies."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from guardian.models import GroupObjectPermission, UserObjectPermission

from organizations import services as org_services
from organizations.models import AuditEvent, Membership, OrgGroup, Role
from skills import services
from skills.models import OrganizationSkill, PersonalSkill

from ..conftest import make_user
from .test_permission_matrix import skill_md

ME = "/api/experimental/users/me/skills"
ORG = "/api/experimental/organizations/acme/skills"
ERROR_KEYS = {"message", "detail", "validations"}
LIST_KEYS = {"name", "description", "enabled", "created_at", "updated_at"}
ANY_MESSAGE = "Resource not found or you do not have access to this resource"


def send(client: Client, method: str, url: str, body: dict | None = None, **extra):
    return getattr(client, method)(url, json.dumps(body or {}), content_type="application/json", **extra)


def assert_error(response, status: int, message: str, detail: str | None = None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == ERROR_KEYS, body
    assert body["message"] == message
    if detail is not None:
        assert body["detail"] == detail
    assert isinstance(body["validations"], list)
    return body


def org_skill(world, name: str, *, enabled: bool = True, **kwargs) -> OrganizationSkill:
    return services.organization_skill_create(
        actor=world.org_admin, organization=world.acme, content=skill_md(name, **kwargs), enabled=enabled
    )


def everyone(world) -> OrgGroup:
    return OrgGroup.objects.get(organization=world.acme, is_everyone=True)


@pytest.fixture
def carol(world):
    """A second plain member of acme."""
    user = make_user("carol")
    org_services.membership_add(actor=None, organization=world.acme, user=user, role=Role.MEMBER)
    return user


# Create, read, list -------------------------------------------------------------------------------------------------


def test_it_creates_a_personal_skill_and_answers_201_with_its_detail(world, client_for):
    content = skill_md("pr-review", "Reviews pull requests.")
    response = send(client_for("member"), "post", ME, {"content": content})
    assert response.status_code == 201
    body = response.json()
    assert set(body) == LIST_KEYS | {"content"}
    assert (body["name"], body["description"], body["enabled"], body["content"]) == (
        "pr-review",
        "Reviews pull requests.",
        True,
        content,
    )
    assert PersonalSkill.objects.get(owner=world.member).name == "pr-review"


def test_it_creates_a_disabled_skill_when_asked(world, client_for):
    response = send(client_for("member"), "post", ME, {"content": skill_md("quiet"), "enabled": False})
    assert response.status_code == 201 and response.json()["enabled"] is False
    assert PersonalSkill.objects.get(owner=world.member, name="quiet").enabled is False


def test_it_creates_an_organization_skill_with_its_organization_in_the_detail(world, client_for):
    content = skill_md("deploy-checklist")
    response = send(client_for("org_admin"), "post", ORG, {"content": content})
    assert response.status_code == 201
    body = response.json()
    assert set(body) == LIST_KEYS | {"content", "organization"}
    assert (body["name"], body["organization"], body["content"], body["enabled"]) == (
        "deploy-checklist",
        "acme",
        content,
        True,
    )
    assert OrganizationSkill.objects.get(organization=world.acme).created_by == world.org_admin


def test_it_lists_skills_without_their_content(world, client_for):
    services.personal_skill_create(user=world.member, content=skill_md("b-skill"))
    services.personal_skill_create(user=world.member, content=skill_md("a-skill"), enabled=False)
    org_skill(world, "org-skill")
    mine = client_for("member").get(ME)
    assert mine.status_code == 200
    assert [item["name"] for item in mine.json()] == ["a-skill", "b-skill"]
    assert all(set(item) == LIST_KEYS for item in mine.json())
    theirs = client_for("org_admin").get(ORG)
    assert theirs.status_code == 200
    assert [set(item) for item in theirs.json()] == [LIST_KEYS]


def test_it_answers_the_detail_of_one_skill(world, client_for):
    content = skill_md("pr-review")
    services.personal_skill_create(user=world.member, content=content)
    org_skill(world, "deploy-checklist")
    mine = client_for("member").get(f"{ME}/pr-review").json()
    assert set(mine) == LIST_KEYS | {"content"} and mine["content"] == content
    shared = client_for("member").get(f"{ORG}/deploy-checklist").json()
    assert set(shared) == LIST_KEYS | {"content", "organization"} and shared["organization"] == "acme"


def test_it_accepts_me_or_the_callers_own_username_only(world, client_for):
    services.personal_skill_create(user=world.member, content=skill_md("mine"))
    services.personal_skill_create(user=world.auditor, content=skill_md("hers"))
    client = client_for("member")
    assert [s["name"] for s in client.get(ME).json()] == ["mine"]
    assert [s["name"] for s in client.get("/api/experimental/users/bob/skills").json()] == ["mine"]
    assert client.get("/api/experimental/users/bob/skills/mine").status_code == 200
    for url in ("/api/experimental/users/audrey/skills", "/api/experimental/users/audrey/skills/hers"):
        assert_error(client.get(url), 404, ANY_MESSAGE)
    # Not even the site owner reads another user's personal skills through this path.
    assert client_for("site_owner").get("/api/experimental/users/audrey/skills").status_code == 404
    assert_error(send(client, "delete", "/api/experimental/users/audrey/skills/hers"), 404, ANY_MESSAGE)
    assert PersonalSkill.objects.filter(owner=world.auditor, name="hers").exists()


def test_it_answers_401_without_credentials(world):
    anonymous = Client()
    for response in (
        anonymous.get(ME),
        send(anonymous, "post", ME, {"content": skill_md("x")}),
        anonymous.get(ORG),
        send(anonymous, "post", ORG, {"content": skill_md("x")}),
    ):
        assert_error(response, 401, "You are not signed in, or the API token is invalid or expired.")
    assert not PersonalSkill.objects.exists() and not OrganizationSkill.objects.exists()


def test_it_lists_every_org_skill_for_readers_and_only_usable_ones_for_members(world, client_for, carol):
    org_skill(world, "shared-one")
    org_skill(world, "switched-off", enabled=False)
    private = org_skill(world, "carols-only")
    services.organization_skill_set_acl(
        actor=world.org_admin,
        skill=private,
        user_roles={str(carol.pk): "read"},
        group_roles={str(everyone(world).pk): ""},
    )
    every = ["carols-only", "shared-one", "switched-off"]
    for persona in ("site_owner", "org_admin", "auditor"):
        assert [s["name"] for s in client_for(persona).get(ORG).json()] == every, persona
    assert [s["name"] for s in client_for("member").get(ORG).json()] == ["shared-one"]
    carols = Client()
    carols.force_login(carol)
    assert [s["name"] for s in carols.get(ORG).json()] == ["carols-only", "shared-one"]
    assert_error(client_for("outsider").get(ORG), 404, ANY_MESSAGE)
    assert client_for("outsider").get("/api/experimental/organizations/globex/skills").json() == []


def test_it_lists_org_skills_in_a_bounded_number_of_queries(world, client_for, carol):
    def count() -> int:
        client = client_for("member")
        client.get(ORG)  # the session and user are loaded once before measuring
        with CaptureQueriesContext(connection) as queries:
            assert client.get(ORG).status_code == 200
        return len(queries)

    org_skill(world, "skill-0")
    few = count()
    for i in range(1, 25):
        skill = org_skill(world, f"skill-{i}")
        if i % 2:
            services.organization_skill_set_acl(
                actor=world.org_admin, skill=skill, user_roles={str(world.member.pk): "read"}
            )
    assert count() == few


# Refusals -----------------------------------------------------------------------------------------------------------


def test_it_refuses_members_and_auditors_writes_with_the_documented_messages(world, client_for):
    org_skill(world, "deploy-checklist")
    member, auditor = client_for("member"), client_for("auditor")
    create = "You don't have permission to create organization skills."
    update = "You don't have permission to update this organization skill."
    delete = "You don't have permission to delete this organization skill."
    assert_error(send(member, "post", ORG, {"content": skill_md("mine")}), 403, create)
    assert_error(send(auditor, "post", ORG, {"content": skill_md("mine")}), 403, create)
    assert_error(send(member, "patch", f"{ORG}/deploy-checklist", {"enabled": False}), 403, update)
    assert_error(
        send(member, "patch", f"{ORG}/deploy-checklist", {"content": skill_md("deploy-checklist", "Mine.")}),
        403,
        update,
    )
    assert_error(send(auditor, "patch", f"{ORG}/deploy-checklist", {"enabled": False}), 403, update)
    assert_error(send(auditor, "delete", f"{ORG}/deploy-checklist"), 403, delete)
    assert_error(send(member, "delete", f"{ORG}/deploy-checklist"), 403, delete)
    skill = OrganizationSkill.objects.get()
    assert (skill.name, skill.enabled, skill.description, skill.revision) == (
        "deploy-checklist",
        True,
        "Helps with the thing.",
        1,
    )


def test_it_answers_404_to_members_for_skills_they_cannot_use(world, client_for):
    org_skill(world, "switched-off", enabled=False)
    hidden = org_skill(world, "hidden")
    services.organization_skill_set_acl(actor=world.org_admin, skill=hidden, group_roles={str(everyone(world).pk): ""})
    member = client_for("member")
    for name in ("switched-off", "hidden", "missing"):
        assert_error(member.get(f"{ORG}/{name}"), 404, ANY_MESSAGE)
        assert_error(send(member, "patch", f"{ORG}/{name}", {"enabled": True}), 404, ANY_MESSAGE)
        assert_error(send(member, "delete", f"{ORG}/{name}"), 404, ANY_MESSAGE)
    outsider = client_for("outsider")
    assert_error(send(outsider, "post", ORG, {"content": skill_md("x")}), 404, ANY_MESSAGE)
    assert OrganizationSkill.objects.count() == 2


# Validation ---------------------------------------------------------------------------------------------------------


def test_it_answers_400_when_a_patch_sets_no_field(world, client_for):
    services.personal_skill_create(user=world.member, content=skill_md("mine"))
    org_skill(world, "deploy-checklist")
    for client, url in ((client_for("member"), f"{ME}/mine"), (client_for("org_admin"), f"{ORG}/deploy-checklist")):
        for body in ({}, {"content": None, "enabled": None}):
            assert_error(
                send(client, "patch", url, body), 400, "No skill fields to update.", "Set content, enabled, or both."
            )


BAD_CONTENT = [
    pytest.param(skill_md("Not_Kebab"), "Invalid skill name.", id="invalid name"),
    pytest.param(skill_md("trailing-"), "Invalid skill name.", id="trailing hyphen"),
    pytest.param("---\ndescription: No name.\n---\n\nBody.\n", "Invalid skill name.", id="missing name"),
    pytest.param(skill_md("empty-body", body=""), "Skill body is required.", id="empty body"),
    pytest.param(skill_md("blank-body", body="\n   \n"), "Skill body is required.", id="blank body"),
    pytest.param(skill_md("huge", body="x" * (64 * 1024)), "Skill content is too large.", id="content over 64 KiB"),
    pytest.param(skill_md("wordy", "d" * 4097), "Skill description is too large.", id="description over 4096 B"),
    pytest.param(
        skill_md("wordy", "é" * 2049), "Skill description is too large.", id="description over 4096 B (multibyte)"
    ),
    pytest.param("no frontmatter at all\n", "Invalid skill content.", id="no frontmatter"),
    pytest.param("---\nname: [unclosed\n---\n\nBody.\n", "Invalid skill content.", id="broken yaml"),
]


@pytest.mark.parametrize("owner", ["personal", "organization"])
@pytest.mark.parametrize(("content", "message"), BAD_CONTENT)
def test_it_rejects_invalid_content_with_the_documented_message(world, client_for, owner, content, message):
    client, url = (client_for("member"), ME) if owner == "personal" else (client_for("org_admin"), ORG)
    body = assert_error(send(client, "post", url, {"content": content}), 400, message)
    assert body["validations"], "every problem is listed"
    for entry in body["validations"]:
        assert set(entry) == {"field", "detail"} and entry["field"] and entry["detail"]
    assert not PersonalSkill.objects.exists() and not OrganizationSkill.objects.exists()


def test_it_accepts_content_and_description_at_their_limits(world, client_for):
    head = "---\nname: at-limit\ndescription: " + "d" * 4096 + "\n---\n\n"
    content = head + "x" * (64 * 1024 - len(head.encode()))
    assert len(content.encode()) == 64 * 1024
    response = send(client_for("member"), "post", ME, {"content": content})
    assert response.status_code == 201, response.content
    assert len(response.json()["description"]) == 4096


def test_it_rejects_invalid_content_on_update_and_keeps_the_skill(world, client_for):
    services.personal_skill_create(user=world.member, content=skill_md("mine"))
    org_skill(world, "deploy-checklist")
    for client, url, name in (
        (client_for("member"), f"{ME}/mine", "mine"),
        (client_for("org_admin"), f"{ORG}/deploy-checklist", "deploy-checklist"),
    ):
        assert_error(send(client, "patch", url, {"content": skill_md(name, body="")}), 400, "Skill body is required.")
        assert_error(
            send(client, "patch", url, {"content": skill_md("renamed")}),
            400,
            "Skill name in path does not match frontmatter name.",
        )
    assert PersonalSkill.objects.get().content == skill_md("mine")
    assert OrganizationSkill.objects.get().content == skill_md("deploy-checklist")


def test_it_rejects_a_request_body_of_the_wrong_shape(world, client_for):
    client = client_for("member")
    for body in ({"enabled": True}, {"content": 5}, {"content": skill_md("x"), "enabled": "perhaps"}):
        answer = assert_error(send(client, "post", ME, body), 400, "Invalid request.")
        assert answer["validations"] and all(set(v) == {"field", "detail"} for v in answer["validations"])
    assert not PersonalSkill.objects.exists()


def test_it_answers_a_body_that_is_not_json_in_the_documented_error_shape(world, client_for):
    response = client_for("member").post(ME, "{not json", content_type="application/json")
    assert response.status_code == 400
    assert set(response.json()) == ERROR_KEYS, response.json()


def test_it_answers_409_for_a_name_already_taken(world, client_for):
    services.personal_skill_create(user=world.member, content=skill_md("taken"))
    org_skill(world, "taken")
    message = "A skill with that name already exists."
    assert_error(send(client_for("member"), "post", ME, {"content": skill_md("taken", "Again.")}), 409, message)
    assert_error(send(client_for("org_admin"), "post", ORG, {"content": skill_md("taken", "Again.")}), 409, message)
    # Names are per owner: another user, and the personal namespace, are separate.
    assert send(client_for("auditor"), "post", ME, {"content": skill_md("taken")}).status_code == 201
    assert PersonalSkill.objects.filter(name="taken").count() == 2
    assert OrganizationSkill.objects.filter(name="taken").count() == 1


def test_it_caps_personal_skills_at_100_counting_disabled_ones(world, client_for):
    for i in range(services.PERSONAL_LIMIT):
        services.personal_skill_create(user=world.member, content=skill_md(f"skill-{i}"), enabled=i % 2 == 0)
    assert_error(
        send(client_for("member"), "post", ME, {"content": skill_md("one-more")}),
        409,
        "Personal skill limit reached.",
        "Each user can have at most 100 personal skills.",
    )
    assert PersonalSkill.objects.filter(owner=world.member).count() == 100
    # Another user's cap is their own.
    assert send(client_for("auditor"), "post", ME, {"content": skill_md("one-more")}).status_code == 201


def test_it_caps_organization_skills_at_100_counting_disabled_ones(world, client_for):
    for i in range(services.ORGANIZATION_LIMIT):
        org_skill(world, f"skill-{i}", enabled=i % 2 == 0)
    assert_error(
        send(client_for("org_admin"), "post", ORG, {"content": skill_md("one-more")}),
        409,
        "Organization skill limit reached.",
        "Each organization can have at most 100 skills.",
    )
    assert OrganizationSkill.objects.filter(organization=world.acme).count() == 100


# Update and delete --------------------------------------------------------------------------------------------------


def test_it_updates_content_and_enabled(world, client_for):
    services.personal_skill_create(user=world.member, content=skill_md("mine"))
    org_skill(world, "deploy-checklist")
    for client, url, name in (
        (client_for("member"), f"{ME}/mine", "mine"),
        (client_for("org_admin"), f"{ORG}/deploy-checklist", "deploy-checklist"),
    ):
        new = skill_md(name, "Sharper now.")
        response = send(client, "patch", url, {"content": new})
        assert response.status_code == 200
        assert (response.json()["content"], response.json()["description"]) == (new, "Sharper now.")
        response = send(client, "patch", url, {"enabled": False})
        assert response.status_code == 200 and response.json()["enabled"] is False
        assert client.get(url).json()["enabled"] is False
    assert OrganizationSkill.objects.get().revision == 2


def test_it_deletes_with_204_and_forgets_the_skill(world, client_for):
    services.personal_skill_create(user=world.member, content=skill_md("mine"))
    skill = org_skill(world, "deploy-checklist")
    for client, url in ((client_for("member"), f"{ME}/mine"), (client_for("org_admin"), f"{ORG}/deploy-checklist")):
        response = send(client, "delete", url)
        assert response.status_code == 204 and response.content == b""
        assert_error(client.get(url), 404, ANY_MESSAGE)
        assert_error(send(client, "delete", url), 404, ANY_MESSAGE)
    assert not PersonalSkill.objects.exists() and not OrganizationSkill.objects.exists()
    for model in (GroupObjectPermission, UserObjectPermission):
        assert not model.objects.filter(object_pk=str(skill.pk), content_type__model="organizationskill").exists()


# ACL ----------------------------------------------------------------------------------------------------------------


def test_it_shares_a_new_organization_skill_with_everyone(world, client_for):
    assert send(client_for("org_admin"), "post", ORG, {"content": skill_md("deploy-checklist")}).status_code == 201
    response = client_for("auditor").get(f"{ORG}/deploy-checklist/acl")
    assert response.status_code == 200
    group = everyone(world)
    assert response.json() == {"users": [], "groups": [{"id": group.pk, "name": group.name, "role": "read"}]}


def test_it_changes_who_may_use_a_skill_through_the_acl(world, client_for, carol):
    org_skill(world, "deploy-checklist")
    admin = client_for("org_admin")
    response = send(
        admin,
        "patch",
        f"{ORG}/deploy-checklist/acl",
        {"user_roles": {str(carol.pk): "read"}, "group_roles": {str(everyone(world).pk): ""}},
    )
    assert response.status_code == 204 and response.content == b""
    assert admin.get(f"{ORG}/deploy-checklist/acl").json() == {
        "users": [{"id": carol.pk, "username": "carol", "role": "read"}],
        "groups": [],
    }
    member = client_for("member")
    assert member.get(ORG).json() == []
    assert_error(member.get(f"{ORG}/deploy-checklist"), 404, ANY_MESSAGE)
    carols = Client()
    carols.force_login(carol)
    assert [s["name"] for s in carols.get(ORG).json()] == ["deploy-checklist"]
    assert carols.get(f"{ORG}/deploy-checklist").status_code == 200
    # Removing the user entry again takes the skill away from her too.
    assert send(admin, "patch", f"{ORG}/deploy-checklist/acl", {"user_roles": {str(carol.pk): ""}}).status_code == 204
    assert carols.get(ORG).json() == []


def test_it_refuses_to_add_a_non_member_and_changes_nothing(world, client_for, carol):
    org_skill(world, "deploy-checklist")
    admin = client_for("org_admin")
    url = f"{ORG}/deploy-checklist/acl"
    before = admin.get(url).json()
    globex_everyone = OrgGroup.objects.get(organization=world.globex, is_everyone=True)
    for body in (
        {"user_roles": {str(carol.pk): "read", str(world.outsider.pk): "read"}},
        {"user_roles": {"999999": "read"}},
        {"group_roles": {str(everyone(world).pk): "", str(globex_everyone.pk): "read"}},
        {"user_roles": {str(carol.pk): "write"}},
        {"user_roles": {"carol": "read"}},
    ):
        response = send(admin, "patch", url, body)
        assert response.status_code == 400, body
        assert set(response.json()) == ERROR_KEYS
        assert response.json()["validations"], body
        assert admin.get(url).json() == before, body
    assert not AuditEvent.objects.filter(action="organization_skill.acl_update").exists()


def test_it_lists_the_members_and_groups_that_can_be_added(world, client_for, carol):
    org_skill(world, "deploy-checklist")
    engineering = org_services.group_create(actor=world.org_admin, organization=world.acme, name="Engineering")
    response = client_for("auditor").get(f"{ORG}/deploy-checklist/acl/available")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"users", "groups"}
    assert {u["username"] for u in body["users"]} == {"alice", "audrey", "bob", "carol"}
    assert all({"id", "username"} <= set(u) for u in body["users"])
    assert {(g["id"], g["name"]) for g in body["groups"]} == {
        (everyone(world).pk, everyone(world).name),
        (engineering.pk, "Engineering"),
    }


def test_it_keeps_the_acl_to_readers_and_sharing_to_those_who_may_share(world, client_for):
    org_skill(world, "deploy-checklist")
    url = f"{ORG}/deploy-checklist/acl"
    for persona in ("member", "outsider"):
        assert_error(client_for(persona).get(url), 404, ANY_MESSAGE)
        assert_error(client_for(persona).get(f"{url}/available"), 404, ANY_MESSAGE)
        assert_error(send(client_for(persona), "patch", url, {"group_roles": {}}), 404, ANY_MESSAGE)
    assert_error(
        send(client_for("auditor"), "patch", url, {"group_roles": {str(everyone(world).pk): ""}}),
        403,
        "You don't have permission to share this organization skill.",
    )
    assert client_for("auditor").get(url).json()["groups"][0]["id"] == everyone(world).pk


def test_it_takes_a_removed_member_off_every_skill_list(world, client_for, carol):
    skill = org_skill(world, "deploy-checklist")
    services.organization_skill_set_acl(actor=world.org_admin, skill=skill, user_roles={str(carol.pk): "read"})
    membership = Membership.objects.get(organization=world.acme, user=carol)
    org_services.membership_remove(actor=world.org_admin, membership=membership)
    admin = client_for("org_admin")
    assert admin.get(f"{ORG}/deploy-checklist/acl").json()["users"] == []
    org_services.membership_add(actor=world.org_admin, organization=world.acme, user=carol, role=Role.MEMBER)
    assert admin.get(f"{ORG}/deploy-checklist/acl").json()["users"] == []


# Authentication -----------------------------------------------------------------------------------------------------


def test_it_accepts_a_bearer_token(world):
    _, token = org_services.api_token_create(user=world.org_admin, name="script")
    bearer = {"Authorization": f"Bearer {token}"}
    client = Client(enforce_csrf_checks=True)
    response = send(client, "post", ORG, {"content": skill_md("from-script")}, headers=bearer)
    assert response.status_code == 201, response.content
    assert [s["name"] for s in client.get(ORG, headers=bearer).json()] == ["from-script"]
    assert send(client, "patch", f"{ORG}/from-script", {"enabled": False}, headers=bearer).status_code == 200
    assert send(client, "post", ME, {"content": skill_md("mine")}, headers=bearer).status_code == 201
    assert PersonalSkill.objects.get().owner == world.org_admin
    assert send(client, "delete", f"{ORG}/from-script", headers=bearer).status_code == 204
    assert AuditEvent.objects.filter(action="organization_skill.create", actor=world.org_admin).exists()


def test_it_refuses_a_made_up_bearer_token(world):
    response = Client().get(ORG, headers={"Authorization": "Bearer not-a-token"})
    assert_error(response, 401, "You are not signed in, or the API token is invalid or expired.")


def test_it_refuses_a_session_post_without_the_csrf_token(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.org_admin)
    response = send(client, "post", ORG, {"content": skill_md("forged")})
    assert response.status_code == 403
    assert not OrganizationSkill.objects.exists()
    # The same session with the token is accepted.
    client.get(reverse("org-skills") + "?org=acme")
    csrf = client.cookies["csrftoken"].value
    response = send(client, "post", ORG, {"content": skill_md("genuine")}, headers={"X-CSRFToken": csrf})
    assert response.status_code == 201, response.content


def test_it_answers_a_refused_csrf_check_in_the_documented_error_shape(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.member)
    response = send(client, "post", ME, {"content": skill_md("forged")})
    assert response.status_code == 403
    assert set(response.json()) == ERROR_KEYS, response.json()


# Audit --------------------------------------------------------------------------------------------------------------


def test_it_audits_every_organization_skill_change(world, client_for):
    admin = client_for("org_admin")
    url = f"{ORG}/deploy-checklist"
    assert send(admin, "post", ORG, {"content": skill_md("deploy-checklist")}).status_code == 201
    assert send(admin, "patch", url, {"content": skill_md("deploy-checklist", "New words.")}).status_code == 200
    assert send(admin, "patch", url, {"enabled": False}).status_code == 200
    assert send(admin, "patch", url, {"enabled": True}).status_code == 200
    assert send(admin, "patch", f"{url}/acl", {"group_roles": {str(everyone(world).pk): ""}}).status_code == 204
    assert send(admin, "delete", url).status_code == 204
    events = list(AuditEvent.objects.filter(resource_type="organization_skill").order_by("created_at", "id"))
    assert [e.action for e in events] == [
        "organization_skill.create",
        "organization_skill.update",
        "organization_skill.disable",
        "organization_skill.enable",
        "organization_skill.acl_update",
        "organization_skill.delete",
    ]
    assert {(e.outcome, e.actor_id, e.organization_id, e.resource_name) for e in events} == {
        ("success", world.org_admin.pk, world.acme.pk, "deploy-checklist")
    }


def test_it_audits_refused_attempts_as_denied(world, client_for):
    org_skill(world, "deploy-checklist")
    url = f"{ORG}/deploy-checklist"
    send(client_for("auditor"), "post", ORG, {"content": skill_md("nope")})
    send(client_for("member"), "patch", url, {"enabled": False})
    send(client_for("auditor"), "patch", url, {"content": skill_md("deploy-checklist", "Nope.")})
    send(client_for("auditor"), "delete", url)
    send(client_for("auditor"), "patch", f"{url}/acl", {"group_roles": {str(everyone(world).pk): ""}})
    denied = AuditEvent.objects.filter(outcome="denied").order_by("created_at", "id")
    assert [(e.action, e.actor_id) for e in denied] == [
        ("organization_skill.create", world.auditor.pk),
        ("organization_skill.disable", world.member.pk),
        ("organization_skill.update", world.auditor.pk),
        ("organization_skill.delete", world.auditor.pk),
        ("organization_skill.acl_update", world.auditor.pk),
    ]
    assert {(e.resource_type, e.organization_id) for e in denied} == {("organization_skill", world.acme.pk)}
