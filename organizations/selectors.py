"""Reads for the organization pages and API. Each runs a fixed number of queries whatever the row count."""

from __future__ import annotations

from datetime import date, datetime, time

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from . import access
from .models import ApiToken, AuditEvent, CustomRole, Membership, Organization, OrgGroup, User


def organizations_for_list(user) -> QuerySet[Organization]:
    return access.orgs_visible_to(user).annotate(member_count=Count("memberships", distinct=True)).order_by("name")


def members_of(organization: Organization) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(organization=organization)
        .select_related("user")
        .prefetch_related("custom_roles")
        .order_by("user__username")
    )


def groups_of(organization: Organization) -> QuerySet[OrgGroup]:
    return (
        OrgGroup.objects.filter(organization=organization)
        .annotate(member_count=Count("auth_group__user", distinct=True))
        .order_by("-is_everyone", "name")
    )


def group_members(group: OrgGroup) -> QuerySet[User]:
    return group.auth_group.user_set.order_by("username")


def members_not_in_group(group: OrgGroup) -> QuerySet[User]:
    return (
        User.objects.filter(memberships__organization_id=group.organization_id)
        .exclude(groups=group.auth_group)
        .order_by("username")
    )


def custom_roles_of(organization: Organization) -> QuerySet[CustomRole]:
    return (
        CustomRole.objects.filter(organization=organization)
        .annotate(member_count=Count("memberships", distinct=True))
        .order_by("name")
    )


def api_tokens_of(user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at")


AUDIT_FILTERS = ("actor", "resource_type", "action", "outcome", "since", "until")


def _day_bound(value: str, *, end: bool) -> datetime | None:
    try:
        day = date.fromisoformat(value)
    except ValueError:
        return None
    moment = datetime.combine(day, time.max if end else time.min)
    return timezone.make_aware(moment, timezone.get_current_timezone())


def audit_events(viewer, *, organization: Organization | None, filters: dict[str, str]) -> QuerySet[AuditEvent]:
    """Audit events the viewer may read, filtered. ``organization`` None means every organization the viewer
    may read the log of (and, for site owners, events outside any organization such as sign-ins)."""
    if organization is not None:
        events = AuditEvent.objects.filter(organization=organization)
    elif access.is_site_owner(viewer):
        events = AuditEvent.objects.all()
    else:
        events = AuditEvent.objects.filter(organization__in=access.orgs_with_perm(viewer, "audit_log:read"))
    if filters.get("actor"):
        events = events.filter(actor_username__iexact=filters["actor"])
    if filters.get("resource_type"):
        events = events.filter(resource_type=filters["resource_type"])
    if filters.get("action"):
        events = events.filter(action=filters["action"])
    if filters.get("outcome"):
        events = events.filter(outcome=filters["outcome"])
    if filters.get("since") and (since := _day_bound(filters["since"], end=False)):
        events = events.filter(created_at__gte=since)
    if filters.get("until") and (until := _day_bound(filters["until"], end=True)):
        events = events.filter(created_at__lte=until)
    return events.order_by("-created_at", "-id")


def audit_filter_choices(events: QuerySet[AuditEvent]) -> dict[str, list[str]]:
    """Distinct values for the filter menus (three queries)."""
    base = events.order_by()
    return {
        "resource_types": sorted(v for v in base.values_list("resource_type", flat=True).distinct() if v),
        "actions": sorted(v for v in base.values_list("action", flat=True).distinct() if v),
        "actors": sorted(v for v in base.values_list("actor_username", flat=True).distinct() if v),
    }


def search_users_for_org(organization: Organization, query: str) -> QuerySet[User]:
    """Active users who are not yet members, matched by username or email (for "add member")."""
    return (
        User.objects.filter(is_active=True)
        .filter(Q(username__iexact=query) | Q(email__iexact=query))
        .exclude(memberships__organization=organization)
    )
