"""Skill selectors: who may use which organization skill, which organizations have usable skills, and the lists."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from guardian.shortcuts import assign_perm

from organizations import services as org_services
from organizations.models import Membership, Organization, OrgGroup, Role, User
from skills import selectors, services
from skills.models import OrganizationSkill

from ..conftest import make_user


def md(name: str, description: str = "Helps with a thing.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n# Steps\n\nDo the thing.\n"


def fresh(user: User) -> User:
    """A new object for the same user: ``organizations.access`` caches permissions per user object (per request)."""
    return User.objects.get(pk=user.pk)


def everyone(organization: Organization) -> OrgGroup:
    return OrgGroup.objects.get(organization=organization, is_everyone=True)


def create(world, name: str, *, organization: Organization | None = None, enabled: bool = True) -> OrganizationSkill:
    return services.organization_skill_create(
        actor=None, organization=organization or world.acme, content=md(name), enabled=enabled
    )


def share(world, skill: OrganizationSkill, *, users=(), groups=(), unshare_everyone: bool = False) -> None:
    group_roles = {str(g.pk): "read" for g in groups}
    if unshare_everyone:
        group_roles[str(everyone(skill.organization).pk)] = ""
    services.organization_skill_set_acl(
        actor=world.org_admin, skill=skill, user_roles={str(u.pk): "read" for u in users}, group_roles=group_roles
    )


def usable(user, organization: Organization) -> list[str]:
    return [skill.name for skill in selectors.skills_usable_by(user, organization)]


@pytest.fixture
def shared(world):
    """acme's skills: for-all (Everyone), for-eng (group Engineering), for-bob (bob only), for-nobody (empty list),
    turned-off (Everyone, turned off). carol is a member of acme in Engineering. globex has one skill (Everyone)."""
    carol = make_user("carol")
    org_services.membership_add(actor=None, organization=world.acme, user=carol, role=Role.MEMBER)
    engineering = org_services.group_create(actor=world.org_admin, organization=world.acme, name="Engineering")
    org_services.group_add_member(actor=world.org_admin, group=engineering, user=carol)
    create(world, "for-all")
    share(world, create(world, "for-eng"), groups=[engineering], unshare_everyone=True)
    share(world, create(world, "for-bob"), users=[world.member], unshare_everyone=True)
    share(world, create(world, "for-nobody"), unshare_everyone=True)
    create(world, "turned-off", enabled=False)
    create(world, "globex-skill", organization=world.globex)
    return {"carol": carol, "engineering": engineering}


ALL_ENABLED = ["for-all", "for-bob", "for-eng", "for-nobody"]


@pytest.mark.parametrize("persona", ["site_owner", "org_admin", "auditor"])
def test_it_gives_readers_every_enabled_skill(world, shared, persona):
    assert usable(fresh(world.user(persona)), world.acme) == ALL_ENABLED


def test_it_gives_a_custom_role_with_read_every_enabled_skill(world, shared):
    role = org_services.custom_role_create(
        actor=world.org_admin, organization=world.acme, name="Skill readers", perms=["organization_skill:read"]
    )
    membership = Membership.objects.get(organization=world.acme, user=shared["carol"])
    org_services.membership_set_custom_roles(actor=world.org_admin, membership=membership, roles=[role])
    assert usable(fresh(shared["carol"]), world.acme) == ALL_ENABLED


def test_a_custom_role_without_read_gives_nothing_extra(world, shared):
    role = org_services.custom_role_create(
        actor=world.org_admin, organization=world.acme, name="Creators", perms=["organization_skill:create"]
    )
    membership = Membership.objects.get(organization=world.acme, user=shared["carol"])
    org_services.membership_set_custom_roles(actor=world.org_admin, membership=membership, roles=[role])
    assert usable(fresh(shared["carol"]), world.acme) == ["for-all", "for-eng"]


def test_members_get_what_is_shared_with_everyone_their_groups_or_them(world, shared):
    assert usable(fresh(world.member), world.acme) == ["for-all", "for-bob"]
    assert usable(fresh(shared["carol"]), world.acme) == ["for-all", "for-eng"]


def test_outsiders_and_anonymous_users_get_nothing(world, shared):
    assert usable(fresh(world.outsider), world.acme) == []
    assert usable(AnonymousUser(), world.acme) == []
    assert usable(fresh(world.member), world.globex) == []
    # Even a permission row left behind for a non-member gives nothing: only current members may use a skill.
    skill = OrganizationSkill.objects.get(name="for-nobody")
    assign_perm(services.USE_PERMISSION, world.outsider, skill)
    assert usable(fresh(world.outsider), world.acme) == []


def test_disabled_skills_are_never_usable(world, shared):
    off = OrganizationSkill.objects.get(name="turned-off")
    share(world, off, users=[world.member], groups=[shared["engineering"]])
    for user in (world.site_owner, world.org_admin, world.auditor, world.member, shared["carol"]):
        assert "turned-off" not in usable(fresh(user), world.acme)


def test_changes_show_on_the_next_call(world, shared):
    carol = fresh(shared["carol"])  # one user object throughout, as in one request
    bob = fresh(world.member)
    assert usable(carol, world.acme) == ["for-all", "for-eng"]
    assert usable(bob, world.acme) == ["for-all", "for-bob"]

    services.organization_skill_update(
        actor=world.org_admin, skill=OrganizationSkill.objects.get(name="for-all"), enabled=False
    )
    assert usable(carol, world.acme) == ["for-eng"]
    assert usable(bob, world.acme) == ["for-bob"]

    org_services.group_remove_member(actor=world.org_admin, group=shared["engineering"], user=shared["carol"])
    assert usable(carol, world.acme) == []

    services.organization_skill_set_acl(
        actor=world.org_admin,
        skill=OrganizationSkill.objects.get(name="for-bob"),
        user_roles={str(world.member.pk): ""},
    )
    assert usable(bob, world.acme) == []

    org_services.group_add_member(actor=world.org_admin, group=shared["engineering"], user=shared["carol"])
    assert usable(carol, world.acme) == ["for-eng"]


def test_it_runs_a_fixed_number_of_queries(world, django_assert_max_num_queries):
    carol = make_user("carol")
    org_services.membership_add(actor=None, organization=world.acme, user=carol, role=Role.MEMBER)
    share(world, create(world, "seed"), users=[carol])
    baseline = {}
    for persona in ("member", "auditor", "carol"):
        user = carol if persona == "carol" else world.user(persona)
        with django_assert_max_num_queries(10) as ctx:
            list(selectors.skills_usable_by(fresh(user), world.acme))
        baseline[persona] = len(ctx.captured_queries)

    groups = [
        org_services.group_create(actor=world.org_admin, organization=world.acme, name=f"Group {i}") for i in range(10)
    ]
    people = [make_user(f"person{i}") for i in range(12)]
    for i, person in enumerate(people):
        org_services.membership_add(actor=None, organization=world.acme, user=person, role=Role.MEMBER)
        org_services.group_add_member(actor=world.org_admin, group=groups[i % 10], user=person)
    for group in groups[:5]:
        org_services.group_add_member(actor=world.org_admin, group=group, user=carol)
    for i in range(30):
        skill = create(world, f"skill-{i:02}", enabled=i % 7 != 0)
        share(
            world,
            skill,
            users=[carol, world.member, *people[: i % 12]],
            groups=groups[: i % 10],
            unshare_everyone=i % 2 == 0,
        )

    for persona in ("member", "auditor", "carol"):
        user = carol if persona == "carol" else world.user(persona)
        with django_assert_max_num_queries(baseline[persona]):
            names = [s.name for s in selectors.skills_usable_by(fresh(user), world.acme)]
        assert len(names) == 1 + sum(1 for i in range(30) if i % 7 != 0)


def test_orgs_with_usable_skills_lists_only_organizations_with_something_to_use(world):
    dave = make_user("dave")
    org_services.membership_add(actor=None, organization=world.acme, user=dave, role=Role.MEMBER)
    org_services.membership_add(actor=None, organization=world.globex, user=dave, role=Role.MEMBER)
    initech = org_services.organization_create(actor=None, name="initech")
    assert selectors.orgs_with_usable_skills(fresh(dave)) == []

    create(world, "globex-skill", organization=world.globex)
    assert selectors.orgs_with_usable_skills(fresh(dave)) == [world.globex]
    # A turned-off skill or one not shared with dave does not count.
    create(world, "acme-off", enabled=False)
    share(world, create(world, "acme-hidden"), unshare_everyone=True)
    assert selectors.orgs_with_usable_skills(fresh(dave)) == [world.globex]
    create(world, "acme-skill")
    assert selectors.orgs_with_usable_skills(fresh(dave)) == [world.acme, world.globex]
    # Organizations one does not belong to never appear; a site owner sees every one with enabled skills.
    assert selectors.orgs_with_usable_skills(fresh(world.member)) == [world.acme]
    assert selectors.orgs_with_usable_skills(fresh(world.outsider)) == [world.globex]
    create(world, "initech-skill", organization=initech)
    assert selectors.orgs_with_usable_skills(fresh(world.site_owner)) == [world.acme, world.globex, initech]
    assert selectors.orgs_with_usable_skills(AnonymousUser()) == []


def test_acl_of_lists_everyone_first_then_groups_then_members(world):
    zeta = org_services.group_create(actor=world.org_admin, organization=world.acme, name="zeta")
    alpha = org_services.group_create(actor=world.org_admin, organization=world.acme, name="Alpha")
    beta = org_services.group_create(actor=world.org_admin, organization=world.acme, name="beta")
    skill = create(world, "listed")
    other = create(world, "other")
    empty = create(world, "empty")
    share(world, skill, users=[world.member, world.auditor], groups=[zeta, beta, alpha])
    share(world, other, users=[world.org_admin], groups=[beta], unshare_everyone=True)
    share(world, empty, unshare_everyone=True)
    acl = selectors.acl_of([skill, other, empty])
    assert [(e.kind, e.name) for e in acl[skill.pk]] == [
        ("group", "Everyone"),
        ("group", "Alpha"),
        ("group", "beta"),
        ("group", "zeta"),
        ("user", "audrey"),
        ("user", "bob"),
    ]
    assert [(e.kind, e.id, e.role) for e in acl[other.pk]] == [
        ("group", beta.pk, "read"),
        ("user", world.org_admin.pk, "read"),
    ]
    assert acl.get(empty.pk, []) == []
    assert selectors.acl_of([]) == {}


def test_acl_of_runs_a_fixed_number_of_queries(world, django_assert_max_num_queries):
    first = create(world, "first")
    with django_assert_max_num_queries(10) as ctx:
        selectors.acl_of([first])
    baseline = len(ctx.captured_queries)
    groups = [
        org_services.group_create(actor=world.org_admin, organization=world.acme, name=f"Group {i}") for i in range(10)
    ]
    people = [make_user(f"person{i}") for i in range(10)]
    for person in people:
        org_services.membership_add(actor=None, organization=world.acme, user=person, role=Role.MEMBER)
    skills = [first] + [create(world, f"skill-{i:02}") for i in range(29)]
    for i, skill in enumerate(skills):
        share(world, skill, users=people[: i % 10], groups=groups[: (i * 3) % 10])
    skills.append(create(world, "globex-skill", organization=world.globex))
    with django_assert_max_num_queries(baseline):
        acl = selectors.acl_of(skills)
    assert len(acl) == 31
    assert all(entries[0].name == "Everyone" for entries in acl.values())
    assert sum(len(entries) for entries in acl.values()) == 31 + sum(i % 10 + (i * 3) % 10 for i in range(30))
