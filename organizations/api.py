"""JSON API for people and organizations (read-only for now; writes go through the pages and commands)."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from ninja import Router, Schema

from . import access, selectors
from .permissions import ORGANIZATION_READ

router = Router(tags=["organizations"])


class OrganizationOut(Schema):
    id: int
    name: str
    display_name: str
    role: str | None
    permissions: list[str]


class MeOut(Schema):
    id: int
    username: str
    email: str
    is_site_owner: bool
    default_organization: str | None
    organizations: list[OrganizationOut]


class MemberOut(Schema):
    id: int
    username: str
    email: str
    role: str
    custom_roles: list[str]


class AuditEventOut(Schema):
    id: int
    time: datetime
    organization: str
    actor: str
    action: str
    resource_type: str
    resource_id: str
    resource_name: str
    changes: dict
    outcome: str
    ip_address: str | None
    user_agent: str


def _org_out(user, organization, roles: dict[int, str]) -> dict:
    return {
        "id": organization.pk,
        "name": organization.name,
        "display_name": organization.display_name,
        "role": roles.get(organization.pk),
        "permissions": sorted(access.org_permissions(user, organization)),
    }


def _roles(user) -> dict[int, str]:
    return dict(user.memberships.values_list("organization_id", "role"))


@router.get("/users/me", response=MeOut)
def me(request: HttpRequest):
    user = request.user
    roles = _roles(user)
    return {
        "id": user.pk,
        "username": user.get_username(),
        "email": user.email,
        "is_site_owner": access.is_site_owner(user),
        "default_organization": user.default_organization.name if user.default_organization else None,
        "organizations": [_org_out(user, o, roles) for o in access.orgs_visible_to(user).order_by("name")],
    }


@router.get("/organizations", response=list[OrganizationOut])
def organization_list(request: HttpRequest):
    roles = _roles(request.user)
    return [_org_out(request.user, o, roles) for o in access.orgs_visible_to(request.user).order_by("name")]


@router.get("/organizations/{organization}", response=OrganizationOut)
def organization_detail(request: HttpRequest, organization: str):
    org = access.visible_organization(request.user, organization)
    return _org_out(request.user, org, _roles(request.user))


@router.get("/organizations/{organization}/members", response=list[MemberOut])
def member_list(request: HttpRequest, organization: str):
    org = access.organization_for(request.user, organization, read=ORGANIZATION_READ)
    return [
        {
            "id": m.user_id,
            "username": m.user.get_username(),
            "email": m.user.email,
            "role": m.role,
            "custom_roles": [r.name for r in m.custom_roles.all()],
        }
        for m in selectors.members_of(org)
    ]


@router.get("/organizations/{organization}/audit-log", response=list[AuditEventOut])
def audit_log(
    request: HttpRequest,
    organization: str,
    actor: str = "",
    resource_type: str = "",
    action: str = "",
    outcome: str = "",
    since: str = "",
    until: str = "",
    limit: int = 100,
    offset: int = 0,
):
    org = access.organization_for(request.user, organization, read="audit_log:read")
    filters = {
        "actor": actor,
        "resource_type": resource_type,
        "action": action,
        "outcome": outcome,
        "since": since,
        "until": until,
    }
    limit = max(1, min(limit, 1000))
    offset = max(0, offset)
    events = selectors.audit_events(request.user, organization=org, filters=filters)[offset : offset + limit]
    return [event.as_record() for event in events]
