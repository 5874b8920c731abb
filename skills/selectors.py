"""Reads of stored skills, permission-filtered, with a fixed number of queries whatever the row count."""

from __future__ import annotations

from django.db.models import QuerySet

from organizations import access, acl
from organizations.models import Organization, User

from .models import OrganizationSkill, PersonalSkill

READ = "organization_skill:read"
CODENAME = "use_organizationskill"


def personal_skills_of(user: User) -> QuerySet[PersonalSkill]:
    return PersonalSkill.objects.filter(owner=user).order_by("name")


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
    candidates = list(enabled.values_list("pk", flat=True))
    return enabled.filter(pk__in=acl.usable_ids(user, OrganizationSkill, CODENAME, candidates))


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
            candidates = list(enabled.filter(organization_id__in=member_orgs).values_list("pk", flat=True))
            ids = acl.usable_ids(user, OrganizationSkill, CODENAME, candidates)
            org_ids |= set(
                enabled.filter(organization_id__in=member_orgs, pk__in=ids).values_list("organization_id", flat=True)
            )
    return list(Organization.objects.filter(pk__in=org_ids).order_by("name"))


AclEntry = acl.AclEntry


def acl_of(skills: list[OrganizationSkill]) -> dict[int, list[AclEntry]]:
    """The Use entries of each skill, groups first (Everyone leading), then users. Four queries for any number."""
    return acl.entries(skills, CODENAME)
