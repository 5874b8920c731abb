"""Memberships, the Everyone group and what removing a member takes away."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from guardian.shortcuts import assign_perm, get_perms

from organizations import services
from organizations.models import AuditEvent, Membership, OrgGroup, Role

from ..conftest import make_user


def everyone(org) -> OrgGroup:
    return OrgGroup.objects.get(organization=org, is_everyone=True)


def everyone_usernames(org) -> set[str]:
    return set(everyone(org).auth_group.user_set.values_list("username", flat=True))


def member_usernames(org) -> set[str]:
    return set(Membership.objects.filter(organization=org).values_list("user__username", flat=True))


def test_it_creates_every_organization_with_exactly_one_everyone_group(world):
    for org in (world.acme, world.globex):
        assert OrgGroup.objects.filter(organization=org, is_everyone=True).count() == 1


def test_it_keeps_everyone_equal_to_the_current_members(world):
    assert everyone_usernames(world.acme) == member_usernames(world.acme) == {"alice", "audrey", "bob"}
    newcomer = make_user("nora")
    services.membership_add(actor=world.org_admin, organization=world.acme, user=newcomer, role=Role.MEMBER)
    assert everyone_usernames(world.acme) == member_usernames(world.acme)
    membership = Membership.objects.get(organization=world.acme, user=world.member)
    services.membership_remove(actor=world.org_admin, membership=membership)
    assert everyone_usernames(world.acme) == member_usernames(world.acme) == {"alice", "audrey", "nora"}


def test_it_refuses_hand_edits_of_the_everyone_group(world):
    group = everyone(world.acme)
    for call in (
        lambda: services.group_rename(actor=world.org_admin, group=group, name="All"),
        lambda: services.group_delete(actor=world.org_admin, group=group),
        lambda: services.group_add_member(actor=world.org_admin, group=group, user=world.outsider),
        lambda: services.group_remove_member(actor=world.org_admin, group=group, user=world.member),
    ):
        with pytest.raises(ValidationError):
            call()
    assert everyone_usernames(world.acme) == member_usernames(world.acme)


def test_it_adds_only_current_members_to_groups(world):
    group = services.group_create(actor=world.org_admin, organization=world.acme, name="Ops")
    with pytest.raises(ValidationError) as exc:
        services.group_add_member(actor=world.org_admin, group=group, user=world.outsider)
    assert "not a member" in str(exc.value)
    services.group_add_member(actor=world.org_admin, group=group, user=world.member)
    assert list(group.auth_group.user_set.all()) == [world.member]


def test_it_refuses_duplicate_group_names_whatever_the_case(world):
    services.group_create(actor=world.org_admin, organization=world.acme, name="Ops")
    with pytest.raises(ValidationError):
        services.group_create(actor=world.org_admin, organization=world.acme, name="ops")
    with pytest.raises(ValidationError):
        services.group_create(actor=world.org_admin, organization=world.acme, name="everyone")
    # The same name in another organization is fine.
    services.group_create(actor=world.outsider, organization=world.globex, name="Ops")


def test_removing_a_member_removes_groups_and_object_permissions_and_re_adding_restores_none(world):
    """The heart of the membership rule: leaving strips everything in that organization, coming back is a clean
    start. Object permissions on another organization's objects are untouched."""
    services.membership_add(actor=None, organization=world.globex, user=world.member, role=Role.MEMBER)
    ops = services.group_create(actor=world.org_admin, organization=world.acme, name="Ops")
    services.group_add_member(actor=world.org_admin, group=ops, user=world.member)
    role = services.custom_role_create(
        actor=world.org_admin, organization=world.acme, name="Readers", perms=["audit_log:read"]
    )
    globex_group = services.group_create(actor=world.outsider, organization=world.globex, name="Sales")
    # Object permissions (as skills and servers will hold them): on acme objects and on a globex object.
    assign_perm("organizations.view_customrole", world.member, role)
    assign_perm("organizations.view_orggroup", world.member, ops)
    assign_perm("organizations.view_orggroup", world.member, globex_group)
    membership = Membership.objects.get(organization=world.acme, user=world.member)
    services.membership_set_custom_roles(actor=world.org_admin, membership=membership, roles=[role])

    services.membership_remove(actor=world.org_admin, membership=membership)

    world.member.refresh_from_db()
    assert not Membership.objects.filter(organization=world.acme, user=world.member).exists()
    assert not world.member.groups.filter(org_group__organization=world.acme).exists()
    assert get_perms(world.member, role) == []
    assert get_perms(world.member, ops) == []
    assert get_perms(world.member, globex_group) == ["view_orggroup"]  # another organization: untouched
    assert world.member.groups.filter(org_group__organization=world.globex, org_group__is_everyone=True).exists()
    event = AuditEvent.objects.filter(action="member.remove").get()
    assert event.changes["object_permissions_removed"] == 2

    services.membership_add(actor=world.org_admin, organization=world.acme, user=world.member, role=Role.MEMBER)

    membership = Membership.objects.get(organization=world.acme, user=world.member)
    assert list(membership.custom_roles.all()) == []
    assert set(
        world.member.groups.filter(org_group__organization=world.acme).values_list("org_group__name", flat=True)
    ) == {"Everyone"}
    assert get_perms(world.member, role) == []
    assert get_perms(world.member, ops) == []


def test_it_keeps_at_least_one_admin(world):
    admin_membership = Membership.objects.get(organization=world.acme, user=world.org_admin)
    with pytest.raises(ValidationError):
        services.membership_remove(actor=world.site_owner, membership=admin_membership)
    with pytest.raises(ValidationError):
        services.membership_set_role(actor=world.site_owner, membership=admin_membership, role=Role.MEMBER)
    assert Membership.objects.get(pk=admin_membership.pk).role == Role.ADMIN


def test_it_moves_the_default_organization_when_a_member_leaves_it(world):
    services.membership_add(actor=None, organization=world.globex, user=world.member, role=Role.MEMBER)
    world.member.refresh_from_db()
    assert world.member.default_organization == world.acme
    services.membership_remove(
        actor=world.org_admin, membership=Membership.objects.get(organization=world.acme, user=world.member)
    )
    world.member.refresh_from_db()
    assert world.member.default_organization == world.globex


def test_it_audits_membership_changes_without_secrets(world):
    membership = Membership.objects.get(organization=world.acme, user=world.member)
    services.membership_set_role(actor=world.org_admin, membership=membership, role=Role.AUDITOR)
    event = AuditEvent.objects.get(action="member.update")
    assert event.changes == {"role": {"old": "member", "new": "auditor"}}
    assert event.actor == world.org_admin and event.organization == world.acme and event.outcome == "success"
