"""Reads of stored skills, permission-filtered, with a fixed number of queries whatever the row count."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.contrib.contenttypes.models import ContentType
from django.db.models import QuerySet
from guardian.models import GroupObjectPermission, UserObjectPermission

from organizations import access
from organizations.models import Organization, OrgGroup, User

from .models import OrganizationSkill, PersonalSkill

READ = "organization_skill:read"


def personal_skills_of(user: User) -> QuerySet[PersonalSkill]:
    return PersonalSkill.objects.filter(owner=user).order_by("name")


def _use_entries(skill_ids: list[int] | None = None):
    content_type = ContentType.objects.get_for_model(OrganizationSkill)
    users = UserObjectPermission.objects.filter(content_type=content_type, permission__codename="use_organizationskill")
    groups = GroupObjectPermission.objects.filter(
        content_type=content_type, permission__codename="use_organizationskill"
    )
    if skill_ids is not None:
        keys = [str(i) for i in skill_ids]
        users = users.filter(object_pk__in=keys)
        groups = groups.filter(object_pk__in=keys)
    return users, groups


def skills_usable_by(user: User, organization: Organization) -> QuerySet[OrganizationSkill]:
    """The organization's enabled skills that ``user`` may use: all of them for those who may read every skill
    (site owners, admins, auditors, custom roles with organization_skill:read); otherwise those whose list names the
    user or one of the user's groups, for current members only. Three queries at most, however many rows."""
    enabled = OrganizationSkill.objects.filter(organization=organization, enabled=True).order_by("name")
    if access.has_perm(user, organization, READ):
        return enabled
    if not access.is_member(user, organization):
        return enabled.none()
    # Only this organization's enabled skills are looked up in the permission tables, however many other
    # organizations the user belongs to.
    candidates = [str(pk) for pk in enabled.values_list("pk", flat=True)]
    if not candidates:
        return enabled.none()
    users, groups = _use_entries([int(pk) for pk in candidates])
    direct = users.filter(user=user).values_list("object_pk", flat=True)
    via_groups = groups.filter(group__user=user).values_list("object_pk", flat=True)
    ids = {int(pk) for pk in direct} | {int(pk) for pk in via_groups}
    return enabled.filter(pk__in=ids)


def organization_skill_for(user: User, organization: Organization, name: str) -> OrganizationSkill | None:
    """One skill the user may read: every skill for readers, otherwise only a usable (enabled, shared) one."""
    if access.has_perm(user, organization, READ):
        return OrganizationSkill.objects.filter(organization=organization, name=name).first()
    return skills_usable_by(user, organization).filter(name=name).first()


def orgs_with_usable_skills(user: User) -> list[Organization]:
    """The user's organizations that have enabled skills the user may use (for the From your organizations picker).
    A fixed number of queries however many organizations, skills and entries exist."""
    perms = access.permissions_by_org(user)
    enabled = OrganizationSkill.objects.filter(enabled=True)
    if access.is_site_owner(user):
        org_ids = set(enabled.values_list("organization_id", flat=True))
    else:
        reader_orgs = [org_id for org_id, held in perms.items() if READ in held]
        org_ids = set(enabled.filter(organization_id__in=reader_orgs).values_list("organization_id", flat=True))
        member_orgs = [org_id for org_id in perms if org_id not in reader_orgs]
        if member_orgs:
            users, groups = _use_entries()
            ids = {int(pk) for pk in users.filter(user=user).values_list("object_pk", flat=True)}
            ids |= {int(pk) for pk in groups.filter(group__user=user).values_list("object_pk", flat=True)}
            org_ids |= set(
                enabled.filter(organization_id__in=member_orgs, pk__in=ids).values_list("organization_id", flat=True)
            )
    return list(Organization.objects.filter(pk__in=org_ids).order_by("name"))


@dataclass(frozen=True)
class AclEntry:
    kind: str  # "user" | "group"
    id: int
    name: str
    role: str = "read"


def acl_of(skills: list[OrganizationSkill]) -> dict[int, list[AclEntry]]:
    """The Use entries of each skill, groups first (Everyone leading), then users. Four queries for any number."""
    if not skills:
        return {}
    users, groups = _use_entries([s.pk for s in skills])
    result: dict[int, list[AclEntry]] = defaultdict(list)
    org_groups = {
        g.auth_group_id: g for g in OrgGroup.objects.filter(organization_id__in={s.organization_id for s in skills})
    }
    group_rows = sorted(
        ((int(pk), org_groups[gid]) for pk, gid in groups.values_list("object_pk", "group_id") if gid in org_groups),
        key=lambda row: (not row[1].is_everyone, row[1].name.lower()),
    )
    for skill_id, group in group_rows:
        result[skill_id].append(AclEntry("group", group.pk, group.name))
    user_rows = users.select_related("user").order_by("user__username")
    for row in user_rows:
        result[int(row.object_pk)].append(AclEntry("user", row.user_id, row.user.get_username()))
    return result


def acl_available(organization: Organization) -> dict[str, list]:
    """Members and groups that can be added to a skill's list."""
    members = (
        User.objects.filter(memberships__organization=organization, is_active=True)
        .order_by("username")
        .only("id", "username", "first_name", "last_name")
    )
    return {"users": list(members), "groups": list(OrgGroup.objects.filter(organization=organization))}
