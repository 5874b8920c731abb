"""The one access policy, role by role."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from organizations import access, services
from organizations.models import AuditEvent, Role
from organizations.permissions import ALL, ORGANIZATION_MANAGE, ORGANIZATION_READ, REGISTRY


def test_it_gives_site_owners_everything_everywhere(world):
    assert access.org_permissions(world.site_owner, world.acme) == ALL
    assert access.org_permissions(world.site_owner, world.globex) == ALL
    assert set(access.orgs_visible_to(world.site_owner)) == {world.acme, world.globex}


def test_it_gives_org_admins_everything_in_their_organization_only(world):
    assert access.org_permissions(world.org_admin, world.acme) == ALL
    assert access.org_permissions(world.org_admin, world.globex) == frozenset()


def test_it_gives_auditors_read_only_everywhere_in_the_organization(world):
    perms = access.org_permissions(world.auditor, world.acme)
    assert perms == {p for p in ALL if p.endswith(":read")}
    assert "audit_log:read" in perms and ORGANIZATION_READ in perms
    assert not any(p.endswith((":create", ":update", ":delete", ":share", ":manage")) for p in perms)


def test_it_gives_members_no_administrative_permission(world):
    assert access.org_permissions(world.member, world.acme) == frozenset()
    assert access.is_member(world.member, world.acme)
    assert list(access.orgs_visible_to(world.member)) == [world.acme]


def test_it_gives_outsiders_and_anonymous_nothing(world):
    from django.contrib.auth.models import AnonymousUser

    assert access.org_permissions(world.outsider, world.acme) == frozenset()
    assert access.org_permissions(AnonymousUser(), world.acme) == frozenset()
    assert list(access.orgs_visible_to(AnonymousUser())) == []


def test_it_adds_the_permissions_of_custom_roles(world):
    role = services.custom_role_create(
        actor=world.org_admin,
        organization=world.acme,
        name="Skill publishers",
        perms=["organization_skill:create", "organization_skill:read"],
    )
    membership = world.member.memberships.get(organization=world.acme)
    services.membership_set_custom_roles(actor=world.org_admin, membership=membership, roles=[role])
    access.forget(world.member)
    assert access.org_permissions(world.member, world.acme) == {"organization_skill:create", "organization_skill:read"}
    assert list(access.orgs_with_perm(world.member, "organization_skill:create")) == [world.acme]
    assert list(access.orgs_with_perm(world.member, "mcp_server:create")) == []


def test_it_refuses_unknown_permissions_in_custom_roles(world):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as exc:
        services.custom_role_create(actor=world.org_admin, organization=world.acme, name="x", perms=["root:all"])
    assert "Unknown permission: root:all" in str(exc.value)


def test_it_never_lets_a_custom_role_grant_organization_management(world):
    assert ORGANIZATION_MANAGE not in REGISTRY and ORGANIZATION_READ not in REGISTRY


def test_it_answers_404_for_organizations_the_user_cannot_read(world):
    with pytest.raises(Http404):
        access.organization_for(world.member, "acme", read=ORGANIZATION_READ)
    with pytest.raises(Http404):
        access.organization_for(world.outsider, "acme", read=ORGANIZATION_READ)
    with pytest.raises(Http404):
        access.organization_for(world.org_admin, "no-such-org", read=ORGANIZATION_READ)
    assert access.organization_for(world.auditor, "acme", read=ORGANIZATION_READ) == world.acme


def test_it_opens_the_default_organization_when_none_is_named(world):
    services.membership_add(actor=None, organization=world.globex, user=world.org_admin, role=Role.ADMIN)
    access.forget(world.org_admin)
    assert access.organization_for(world.org_admin, None, read=ORGANIZATION_READ) == world.acme
    services.user_set_default_organization(user=world.org_admin, organization=world.globex)
    assert access.organization_for(world.org_admin, None, read=ORGANIZATION_READ) == world.globex


def test_it_refuses_changes_with_403_and_audits_the_refusal(world):
    with pytest.raises(PermissionDenied):
        access.require(world.auditor, world.acme, ORGANIZATION_MANAGE, action="group.create", resource_type="group")
    event = AuditEvent.objects.get(outcome="denied")
    assert (event.actor, event.organization, event.action, event.resource_type) == (
        world.auditor,
        world.acme,
        "group.create",
        "group",
    )


def test_it_treats_inactive_users_as_having_nothing(world):
    world.org_admin.is_active = False
    world.org_admin.save()
    access.forget(world.org_admin)
    assert access.org_permissions(world.org_admin, world.acme) == frozenset()


def test_it_computes_permissions_with_one_query_per_user(world, django_assert_num_queries):
    access.forget(world.member)
    with django_assert_num_queries(2):  # memberships + their custom roles (prefetch)
        for _ in range(5):
            access.org_permissions(world.member, world.acme)
            access.org_permissions(world.member, world.globex)
