"""Reads of workspaces and snapshots, permission-filtered, with a fixed number of queries."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from organizations import access
from organizations.models import User
from organizations.permissions import ORGANIZATION_READ

from .models import ContextSnapshot, SnapshotResource, Workspace


def workspaces_visible_to(user: User) -> QuerySet[Workspace]:
    """The user's own workspaces (in organizations they still belong to), and every workspace of the organizations
    whose administration they may read (admins, auditors; site owners everywhere)."""
    base = Workspace.objects.select_related("organization", "owner").order_by("organization__name", "name")
    if access.is_site_owner(user):
        return base
    readable = [org_id for org_id, perms in access.permissions_by_org(user).items() if ORGANIZATION_READ in perms]
    member_of = list(access.permissions_by_org(user))
    return base.filter(Q(organization_id__in=readable) | Q(owner=user, organization_id__in=member_of))


def latest_snapshot(workspace: Workspace) -> ContextSnapshot | None:
    return ContextSnapshot.objects.filter(workspace=workspace).order_by("-version").first()


def snapshot_resources(snapshot: ContextSnapshot | None) -> QuerySet[SnapshotResource]:
    if snapshot is None:
        return SnapshotResource.objects.none()
    return snapshot.resources.order_by("position")
