"""Skill services: create, update, delete, enable/disable, ACLs, caps, validation errors and audit events.

Everything is built through the real services (``skills.services`` and ``organizations.services``).
"""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
from guardian.models import GroupObjectPermission, UserObjectPermission
from guardian.shortcuts import get_groups_with_perms, get_users_with_perms

from organizations import services as org_services
from organizations.models import AuditEvent, Membership, OrgGroup, Outcome, Role, User
from skills import selectors, services
from skills.models import OrganizationSkill, PersonalSkill
from skills.services import SkillError

from ..conftest import make_user

BODY_MARKER = "Body-marker-7f3a: the steps of this skill."


def md(name: str, description: str = "Helps with a thing.", body: str = f"# Steps\n\n{BODY_MARKER}\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


def fresh(user: User) -> User:
    """A new object for the same user: ``organizations.access`` caches permissions per user object."""
    return User.objects.get(pk=user.pk)


def everyone(organization) -> OrgGroup:
    return OrgGroup.objects.get(organization=organization, is_everyone=True)


@contextmanager
def raises(status: int, message: str, detail: str | None = None):
    """``with raises(400, "…") as info:`` — the block must raise a SkillError with this status and message."""
    with pytest.raises(SkillError) as info:
        yield info
    assert (info.value.status, info.value.message) == (status, message), info.value
    if detail is not None:
        assert info.value.detail == detail


def acl_names(skill: OrganizationSkill) -> list[tuple[str, str]]:
    return [(e.kind, e.name) for e in selectors.acl_of([skill]).get(skill.pk, [])]


def use_rows(skill: OrganizationSkill) -> tuple[int, int]:
    keys = {"content_type__app_label": "skills", "object_pk": str(skill.pk)}
    return UserObjectPermission.objects.filter(**keys).count(), GroupObjectPermission.objects.filter(**keys).count()


# Personal skills -----------------------------------------------------------------------------------------------------


def test_it_creates_a_personal_skill_from_its_skill_md(world):
    content = md("code-review", "Reviews code carefully.")
    skill = services.personal_skill_create(user=world.member, content=content)
    skill.refresh_from_db()
    assert (skill.owner, skill.name, skill.description, skill.content) == (
        world.member,
        "code-review",
        "Reviews code carefully.",
        content,
    )
    assert skill.enabled is True and skill.revision == 1
    event = AuditEvent.objects.get(action="personal_skill.create")
    assert (event.resource_type, event.resource_id, event.resource_name) == (
        "personal_skill",
        str(skill.pk),
        "code-review",
    )
    assert event.actor == world.member and event.organization is None and event.outcome == Outcome.SUCCESS
    assert event.changes == {"enabled": {"old": None, "new": True}}


def test_it_creates_a_personal_skill_turned_off(world):
    skill = services.personal_skill_create(user=world.member, content=md("quiet"), enabled=False)
    assert PersonalSkill.objects.get(pk=skill.pk).enabled is False


def test_it_bumps_the_revision_on_content_changes_only(world):
    skill = services.personal_skill_create(user=world.member, content=md("notes"))
    first_update = skill.updated_at
    changed = md("notes", "Takes better notes.", "# Steps\n\nWrite it down.\n")
    skill = services.personal_skill_update(skill=skill, content=changed)
    skill.refresh_from_db()
    assert (skill.revision, skill.content, skill.description) == (2, changed, "Takes better notes.")
    assert skill.updated_at > first_update
    # The same text again changes nothing and records nothing.
    events = AuditEvent.objects.count()
    services.personal_skill_update(skill=skill, content=changed)
    assert PersonalSkill.objects.get(pk=skill.pk).revision == 2
    assert AuditEvent.objects.count() == events
    # Turning it off and on is not a content change.
    services.personal_skill_update(skill=skill, enabled=False)
    services.personal_skill_update(skill=skill, enabled=True)
    assert PersonalSkill.objects.get(pk=skill.pk).revision == 2
    services.personal_skill_update(skill=skill, content=md("notes", "Third."), enabled=False)
    skill.refresh_from_db()
    assert (skill.revision, skill.enabled, skill.description) == (3, False, "Third.")


def test_it_stores_line_ends_as_lf_so_a_browser_save_of_the_same_text_changes_nothing(world):
    content = md("line-ends", body="# Steps\n\nOne.\nTwo.\n")
    skill = services.personal_skill_create(user=world.member, content=content.replace("\n", "\r\n"))
    assert PersonalSkill.objects.get(pk=skill.pk).content == content
    services.personal_skill_update(skill=skill, content=content.replace("\n", "\r\n"))
    services.personal_skill_update(skill=skill, content=content)
    assert PersonalSkill.objects.get(pk=skill.pk).revision == 1
    org = services.organization_skill_create(
        actor=world.org_admin, organization=world.acme, content=content.replace("\n", "\r")
    )
    assert OrganizationSkill.objects.get(pk=org.pk).content == content


def test_it_turns_a_personal_skill_off_and_on_with_audit_events(world):
    skill = services.personal_skill_create(user=world.member, content=md("toggle-me"))
    services.personal_skill_update(skill=skill, enabled=False)
    assert PersonalSkill.objects.get(pk=skill.pk).enabled is False
    services.personal_skill_update(skill=skill, enabled=False)  # already off: nothing to record
    services.personal_skill_update(skill=skill, enabled=True)
    assert PersonalSkill.objects.get(pk=skill.pk).enabled is True
    events = list(AuditEvent.objects.filter(resource_type="personal_skill").order_by("id"))
    assert [e.action for e in events] == ["personal_skill.create", "personal_skill.disable", "personal_skill.enable"]
    assert events[1].changes == {"enabled": {"old": True, "new": False}}
    assert events[2].changes == {"enabled": {"old": False, "new": True}}
    assert {e.actor for e in events} == {world.member}


def test_it_refuses_an_update_with_no_fields(world):
    skill = services.personal_skill_create(user=world.member, content=md("idle"))
    with raises(400, "No skill fields to update.", "Set content, enabled, or both."):
        services.personal_skill_update(skill=skill)


def test_it_refuses_a_name_change_on_edit_and_changes_nothing(world):
    content = md("fixed-name")
    skill = services.personal_skill_create(user=world.member, content=content)
    with raises(400, "Skill name in path does not match frontmatter name.") as info:
        services.personal_skill_update(skill=skill, content=md("other-name"))
    assert info.value.validations[0]["field"] == "name"
    skill.refresh_from_db()
    assert (skill.name, skill.content, skill.revision) == ("fixed-name", content, 1)
    assert not PersonalSkill.objects.filter(name="other-name").exists()


def test_it_deletes_a_personal_skill_with_an_audit_event(world):
    skill = services.personal_skill_create(user=world.member, content=md("short-lived"))
    skill_id = skill.pk
    services.personal_skill_delete(skill=skill)
    assert not PersonalSkill.objects.filter(pk=skill_id).exists()
    event = AuditEvent.objects.get(action="personal_skill.delete")
    assert (event.resource_type, event.resource_id, event.resource_name) == (
        "personal_skill",
        str(skill_id),
        "short-lived",
    )
    assert event.actor == world.member


def test_it_refuses_a_duplicate_personal_name_with_409(world):
    services.personal_skill_create(user=world.member, content=md("twice"))
    with raises(409, "A skill with that name already exists."):
        services.personal_skill_create(user=world.member, content=md("twice", "Another description."))
    assert PersonalSkill.objects.filter(owner=world.member, name="twice").count() == 1
    # The same name is fine for someone else, and for an organization skill.
    services.personal_skill_create(user=world.auditor, content=md("twice"))
    services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("twice"))


# Validation, for both kinds ------------------------------------------------------------------------------------------


def too_large() -> str:
    return md("big", body="x" * (64 * 1024))


def exactly(size: int) -> str:
    base = md("edge", body="y\n")
    return base[:-1] + "y" * (size - len(base.encode())) + "\n"


INVALID = [
    pytest.param(md("Bad_Name"), 400, "Invalid skill name.", "name", id="uppercase-and-underscore"),
    pytest.param(md("-leading"), 400, "Invalid skill name.", "name", id="leading-hyphen"),
    pytest.param(md("double--hyphen"), 400, "Invalid skill name.", "name", id="double-hyphen"),
    pytest.param(md("a" * 65), 400, "Invalid skill name.", "name", id="65-characters"),
    pytest.param("---\ndescription: No name.\n---\n\nBody.\n", 400, "Invalid skill name.", "name", id="no-name"),
    pytest.param(md("empty-body", body=""), 400, "Skill body is required.", "body", id="empty-body"),
    pytest.param(md("blank-body", body="  \n\n\t\n"), 400, "Skill body is required.", "body", id="blank-body"),
    pytest.param(too_large(), 400, "Skill content is too large.", "content", id="over-64-KiB"),
    pytest.param(exactly(64 * 1024 + 1), 400, "Skill content is too large.", "content", id="64-KiB-plus-1"),
    pytest.param(
        md("wordy", "d" * 4097), 400, "Skill description is too large.", "description", id="description-4097-bytes"
    ),
    pytest.param(
        md("wordy", "é" * 2049), 400, "Skill description is too large.", "description", id="description-multibyte"
    ),
    pytest.param("no frontmatter at all\n", 400, "Invalid skill content.", "frontmatter", id="no-frontmatter"),
    pytest.param(
        "---\nname: dup\nname: dup\ndescription: x\n---\n\nBody\n",
        400,
        "Invalid skill content.",
        "frontmatter",
        id="duplicate-key",
    ),
]


@pytest.mark.parametrize(("content", "status", "message", "field"), INVALID)
def test_it_refuses_invalid_personal_skills_and_creates_nothing(world, content, status, message, field):
    with raises(status, message) as info:
        services.personal_skill_create(user=world.member, content=content)
    assert field in {v["field"] for v in info.value.validations}
    assert info.value.detail
    assert not PersonalSkill.objects.exists()
    assert not AuditEvent.objects.filter(resource_type="personal_skill").exists()


@pytest.mark.parametrize(("content", "status", "message", "field"), INVALID)
def test_it_refuses_invalid_organization_skills_and_creates_nothing(world, content, status, message, field):
    with raises(status, message):
        services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=content)
    assert not OrganizationSkill.objects.exists()
    assert not GroupObjectPermission.objects.filter(content_type__app_label="skills").exists()
    assert not AuditEvent.objects.filter(resource_type="organization_skill").exists()


def test_it_accepts_a_skill_md_of_exactly_64_kib_and_a_description_of_4096_bytes(world):
    content = exactly(64 * 1024)
    assert len(content.encode()) == 64 * 1024
    services.personal_skill_create(user=world.member, content=content)
    skill = services.personal_skill_create(user=world.member, content=md("wordy", "d" * 4096))
    assert len(skill.description) == 4096


def test_it_refuses_invalid_content_on_update_and_changes_nothing(world):
    content = md("steady")
    skill = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=content)
    for bad, message in (
        (md("steady", body=""), "Skill body is required."),
        (md("steady", "d" * 4097), "Skill description is too large."),
        (md("steady", body="z" * (64 * 1024)), "Skill content is too large."),
        (md("other"), "Skill name in path does not match frontmatter name."),
    ):
        with raises(400, message):
            services.organization_skill_update(actor=world.org_admin, skill=skill, content=bad)
    skill.refresh_from_db()
    assert (skill.content, skill.revision) == (content, 1)
    assert list(AuditEvent.objects.filter(resource_type="organization_skill").values_list("action", flat=True)) == [
        "organization_skill.create"
    ]


# Caps ----------------------------------------------------------------------------------------------------------------


def test_it_caps_personal_skills_at_100_counting_turned_off_ones(world):
    for i in range(100):
        services.personal_skill_create(user=world.member, content=md(f"skill-{i:03}"), enabled=i % 2 == 0)
    assert PersonalSkill.objects.filter(owner=world.member, enabled=False).count() == 50
    with raises(409, "Personal skill limit reached.", "Each user can have at most 100 personal skills."):
        services.personal_skill_create(user=world.member, content=md("one-too-many"))
    assert PersonalSkill.objects.filter(owner=world.member).count() == 100
    # The cap is per user, and deleting one makes room again.
    services.personal_skill_create(user=world.auditor, content=md("one-too-many"))
    services.personal_skill_delete(skill=PersonalSkill.objects.get(owner=world.member, name="skill-000"))
    services.personal_skill_create(user=world.member, content=md("one-too-many"))
    assert PersonalSkill.objects.filter(owner=world.member).count() == 100


def test_it_caps_organization_skills_at_100_counting_turned_off_ones(world):
    for i in range(100):
        services.organization_skill_create(
            actor=world.org_admin, organization=world.acme, content=md(f"skill-{i:03}"), enabled=i % 2 == 0
        )
    assert OrganizationSkill.objects.filter(organization=world.acme, enabled=False).count() == 50
    with raises(409, "Organization skill limit reached.", "Each organization can have at most 100 skills."):
        services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("extra"))
    assert OrganizationSkill.objects.filter(organization=world.acme).count() == 100
    # Another organization has its own 100.
    services.organization_skill_create(actor=world.outsider, organization=world.globex, content=md("extra"))
    services.organization_skill_delete(
        actor=world.org_admin, skill=OrganizationSkill.objects.get(organization=world.acme, name="skill-000")
    )
    services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("extra"))
    assert OrganizationSkill.objects.filter(organization=world.acme).count() == 100


# Organization skills -------------------------------------------------------------------------------------------------


def test_it_shares_a_new_organization_skill_with_everyone(world):
    skill = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("shared"))
    skill.refresh_from_db()
    assert (skill.organization, skill.created_by, skill.enabled, skill.revision) == (
        world.acme,
        world.org_admin,
        True,
        1,
    )
    groups = get_groups_with_perms(skill, attach_perms=True)
    assert groups == {everyone(world.acme).auth_group: ["use_organizationskill"]}
    assert world.member.has_perm(services.USE_PERMISSION, skill)
    assert not world.outsider.has_perm(services.USE_PERMISSION, skill)
    assert acl_names(skill) == [("group", "Everyone")]
    event = AuditEvent.objects.get(action="organization_skill.create")
    assert (event.resource_type, event.resource_name, event.organization, event.actor) == (
        "organization_skill",
        "shared",
        world.acme,
        world.org_admin,
    )
    assert event.changes == {"enabled": {"old": None, "new": True}, "acl": {"old": None, "new": ["group:Everyone"]}}


def test_it_creates_an_organization_skill_for_the_operator_with_no_creator(world):
    skill = services.organization_skill_create(actor=None, organization=world.acme, content=md("by-operator"))
    assert OrganizationSkill.objects.get(pk=skill.pk).created_by is None
    event = AuditEvent.objects.get(action="organization_skill.create")
    assert event.actor is None and event.actor_username == ""


def test_it_refuses_a_duplicate_organization_name_with_409(world):
    services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("twice"))
    with raises(409, "A skill with that name already exists."):
        services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("twice"))
    assert OrganizationSkill.objects.filter(name="twice").count() == 1
    services.organization_skill_create(actor=world.outsider, organization=world.globex, content=md("twice"))


def test_it_updates_an_organization_skill_recording_revisions_not_text(world):
    skill = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("evolving"))
    new_content = md("evolving", "Now better.", "# Steps\n\nSecret-ish-new-body-9c1e.\n")
    skill = services.organization_skill_update(actor=world.org_admin, skill=skill, content=new_content)
    skill.refresh_from_db()
    assert (skill.revision, skill.description, skill.content) == (2, "Now better.", new_content)
    event = AuditEvent.objects.get(action="organization_skill.update")
    assert event.changes["content"] == {"old": "revision 1", "new": "revision 2"}
    assert event.changes["description"] == {"old": "Helps with a thing.", "new": "Now better."}
    assert (event.organization, event.actor, event.resource_id) == (world.acme, world.org_admin, str(skill.pk))
    services.organization_skill_update(actor=world.org_admin, skill=skill, enabled=False)
    services.organization_skill_update(actor=world.org_admin, skill=skill, enabled=True)
    actions = list(
        AuditEvent.objects.filter(resource_type="organization_skill").order_by("id").values_list("action", flat=True)
    )
    assert actions == [
        "organization_skill.create",
        "organization_skill.update",
        "organization_skill.disable",
        "organization_skill.enable",
    ]
    assert OrganizationSkill.objects.get(pk=skill.pk).revision == 2


def test_audit_events_never_hold_the_skill_text(world):
    personal = services.personal_skill_create(user=world.member, content=md("mine"))
    services.personal_skill_update(skill=personal, content=md("mine", body=f"{BODY_MARKER} Again.\n"))
    services.personal_skill_update(skill=personal, enabled=False)
    services.personal_skill_delete(skill=personal)
    org = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("ours"))
    services.organization_skill_update(actor=world.org_admin, skill=org, content=md("ours", body=f"{BODY_MARKER} 2\n"))
    services.organization_skill_set_acl(actor=world.org_admin, skill=org, user_roles={str(world.member.pk): "read"})
    services.organization_skill_delete(actor=world.org_admin, skill=org)
    events = AuditEvent.objects.filter(resource_type__in=["personal_skill", "organization_skill"])
    assert events.count() == 8
    for event in events:
        text = json.dumps(event.changes)
        assert "Body-marker-7f3a" not in text and "---" not in text, event.action
    assert {e.changes["content"]["new"] for e in events if "content" in e.changes} == {"revision 2"}


def test_it_deletes_an_organization_skill_and_its_permission_rows(world):
    group = org_services.group_create(actor=world.org_admin, organization=world.acme, name="Engineering")
    skill = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("doomed"))
    keeper = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("keeper"))
    for target in (skill, keeper):
        services.organization_skill_set_acl(
            actor=world.org_admin,
            skill=target,
            user_roles={str(world.member.pk): "read"},
            group_roles={str(group.pk): "read"},
        )
    assert use_rows(skill) == (1, 2)
    skill_id = skill.pk
    services.organization_skill_delete(actor=world.org_admin, skill=skill)
    assert not OrganizationSkill.objects.filter(pk=skill_id).exists()
    assert UserObjectPermission.objects.filter(content_type__app_label="skills", object_pk=str(skill_id)).count() == 0
    assert GroupObjectPermission.objects.filter(content_type__app_label="skills", object_pk=str(skill_id)).count() == 0
    assert use_rows(keeper) == (1, 2)
    event = AuditEvent.objects.get(action="organization_skill.delete")
    assert (event.resource_id, event.resource_name, event.organization) == (str(skill_id), "doomed", world.acme)


# ACLs ----------------------------------------------------------------------------------------------------------------


def test_it_adds_and_removes_members_and_groups_on_the_list(world):
    group = org_services.group_create(actor=world.org_admin, organization=world.acme, name="Engineering")
    skill = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("listed"))
    services.organization_skill_set_acl(
        actor=world.org_admin,
        skill=skill,
        user_roles={str(world.member.pk): "read"},
        group_roles={str(group.pk): "read", str(everyone(world.acme).pk): ""},
    )
    assert acl_names(skill) == [("group", "Engineering"), ("user", "bob")]
    assert set(get_users_with_perms(skill, only_with_perms_in=["use_organizationskill"], with_group_users=False)) == {
        world.member
    }
    event = AuditEvent.objects.get(action="organization_skill.acl_update")
    assert event.resource_type == "organization_skill" and event.actor == world.org_admin
    assert event.changes == {
        "user:bob": {"old": None, "new": "read"},
        "group:Engineering": {"old": None, "new": "read"},
        "group:Everyone": {"old": "read", "new": None},
    }
    # Granting twice keeps one entry; removing takes it off.
    services.organization_skill_set_acl(actor=world.org_admin, skill=skill, user_roles={str(world.member.pk): "read"})
    assert use_rows(skill) == (1, 1)
    services.organization_skill_set_acl(
        actor=world.org_admin, skill=skill, user_roles={str(world.member.pk): ""}, group_roles={str(group.pk): ""}
    )
    assert acl_names(skill) == []
    assert use_rows(skill) == (0, 0)
    # The second grant changed nothing, so it left no event.
    assert AuditEvent.objects.filter(action="organization_skill.acl_update").count() == 2


def test_acl_audit_events_say_what_the_entry_was_before(world):
    skill = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("audited"))
    services.organization_skill_set_acl(actor=world.org_admin, skill=skill, user_roles={str(world.member.pk): "read"})
    services.organization_skill_set_acl(actor=world.org_admin, skill=skill, user_roles={str(world.member.pk): ""})
    removal = AuditEvent.objects.filter(action="organization_skill.acl_update").order_by("-id").first()
    assert removal.changes["user:bob"]["old"] == "read"
    events = AuditEvent.objects.count()
    # Removing an entry that is not there changes nothing.
    services.organization_skill_set_acl(actor=world.org_admin, skill=skill, user_roles={str(world.member.pk): ""})
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(
    ("who", "role"),
    [
        ("outsider", "read"),  # a user of another organization
        ("stranger", "read"),  # a user of no organization
        ("member", "write"),  # an unknown role
        ("member", "use"),  # "Use" is how the page shows "read"; the wire value is "read"
    ],
)
def test_it_refuses_a_bad_user_entry_and_changes_nothing(world, who, role):
    stranger = make_user("stan")
    skill = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("guarded"))
    target = stranger if who == "stranger" else getattr(world, who)
    group = org_services.group_create(actor=world.org_admin, organization=world.acme, name="Engineering")
    with raises(400, "Invalid request to update organization skill ACL.") as info:
        services.organization_skill_set_acl(
            actor=world.org_admin,
            skill=skill,
            # A valid entry beside the bad one must not be applied either.
            user_roles={str(world.auditor.pk): "read", str(target.pk): role},
            group_roles={str(group.pk): "read"},
        )
    assert info.value.validations[0]["field"] == f"user_roles.{target.pk}"
    assert acl_names(skill) == [("group", "Everyone")]
    assert use_rows(skill) == (0, 1)
    assert not AuditEvent.objects.filter(action="organization_skill.acl_update").exists()


def test_it_refuses_a_group_of_another_organization_or_a_bad_id(world):
    skill = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("guarded"))
    foreign = org_services.group_create(actor=world.outsider, organization=world.globex, name="Sales")
    for group_roles in ({str(foreign.pk): "read"}, {str(everyone(world.globex).pk): "read"}, {"999999": "read"}):
        with raises(400, "Invalid request to update organization skill ACL."):
            services.organization_skill_set_acl(actor=world.org_admin, skill=skill, group_roles=group_roles)
    with raises(400, "Invalid request to update organization skill ACL."):
        services.organization_skill_set_acl(actor=world.org_admin, skill=skill, user_roles={"bob": "read"})
    assert acl_names(skill) == [("group", "Everyone")]
    assert use_rows(skill) == (0, 1)


def test_removing_a_member_takes_them_off_every_skill_list_for_good(world):
    acme_skills = [
        services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md(name))
        for name in ("first", "second", "third")
    ]
    # bob also belongs to globex, where his entry must survive.
    org_services.membership_add(actor=None, organization=world.globex, user=world.member, role=Role.MEMBER)
    globex_skill = services.organization_skill_create(
        actor=world.outsider, organization=world.globex, content=md("globex-only")
    )
    for skill in [*acme_skills, globex_skill]:
        services.organization_skill_set_acl(
            actor=world.org_admin,
            skill=skill,
            user_roles={str(world.member.pk): "read"},
            group_roles={str(everyone(skill.organization).pk): ""},
        )
    assert [s.name for s in selectors.skills_usable_by(fresh(world.member), world.acme)] == ["first", "second", "third"]

    membership = Membership.objects.get(organization=world.acme, user=world.member)
    org_services.membership_remove(actor=world.org_admin, membership=membership)
    for skill in acme_skills:
        assert acl_names(skill) == [], skill.name
    assert acl_names(globex_skill) == [("user", "bob")]
    assert list(selectors.skills_usable_by(fresh(world.member), world.acme)) == []

    org_services.membership_add(actor=world.org_admin, organization=world.acme, user=world.member, role=Role.MEMBER)
    for skill in acme_skills:
        assert acl_names(skill) == [], skill.name
    assert list(selectors.skills_usable_by(fresh(world.member), world.acme)) == []
    assert [s.name for s in selectors.skills_usable_by(fresh(world.member), world.globex)] == ["globex-only"]


def test_a_removed_member_cannot_be_put_back_on_a_list(world):
    skill = services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md("closed"))
    membership = Membership.objects.get(organization=world.acme, user=world.member)
    org_services.membership_remove(actor=world.org_admin, membership=membership)
    with raises(400, "Invalid request to update organization skill ACL."):
        services.organization_skill_set_acl(
            actor=world.org_admin, skill=skill, user_roles={str(world.member.pk): "read"}
        )
    assert use_rows(skill) == (0, 1)
