"""The one access policy. Views and the API ask only here.

Rules: a site owner (superuser) may do everything everywhere. In an organization, ``admin`` holds every
permission, ``auditor`` every ``*:read`` permission (read-only everywhere in the organization), ``member`` none of
the administrative ones, and custom roles add the permissions they grant. Outsiders and anonymous users hold nothing.

Answers: a caller who cannot read something gets 404, the same as for something that does not exist; a caller who
can read but not change it gets 403, and the refusal is audited.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import Http404

from . import audit
from .models import Membership, Organization, User
from .permissions import ALL, ORGANIZATION_MANAGE, ORGANIZATION_READ, ROLE_PERMISSIONS

AnyUser = User | AnonymousUser

_CACHE_ATTR = "_switchboard_org_permissions"


def permissions_by_org(user: AnyUser) -> dict[int, frozenset[str]]:
    """Permissions per organization id for a member, computed once per user object (one query)."""
    cached = getattr(user, _CACHE_ATTR, None)
    if cached is not None:
        return cached
    result: dict[int, frozenset[str]] = {}
    if user.is_authenticated and user.is_active:
        for membership in Membership.objects.filter(user=user).prefetch_related("custom_roles"):
            perms = set(ROLE_PERMISSIONS[membership.role])
            for role in membership.custom_roles.all():
                perms.update(p for p in role.permissions if p in ALL)
            result[membership.organization_id] = frozenset(perms)
    setattr(user, _CACHE_ATTR, result)
    return result


def forget(user: AnyUser) -> None:
    """Drop the cached permissions of this user object (after its memberships or roles changed)."""
    if hasattr(user, _CACHE_ATTR):
        delattr(user, _CACHE_ATTR)


def is_site_owner(user: AnyUser) -> bool:
    return bool(user.is_authenticated and user.is_active and user.is_superuser)


def is_member(user: AnyUser, organization: Organization) -> bool:
    return organization.pk in permissions_by_org(user)


def org_permissions(user: AnyUser, organization: Organization) -> frozenset[str]:
    """Every permission ``user`` holds in ``organization``."""
    if is_site_owner(user):
        return ALL
    return permissions_by_org(user).get(organization.pk, frozenset())


def has_perm(user: AnyUser, organization: Organization, permission: str) -> bool:
    return permission in org_permissions(user, organization)


def orgs_visible_to(user: AnyUser) -> QuerySet[Organization]:
    """Organizations the user belongs to (every organization for a site owner)."""
    if is_site_owner(user):
        return Organization.objects.all()
    return Organization.objects.filter(pk__in=list(permissions_by_org(user)))


def visible_organization(user: AnyUser, name: str) -> Organization:
    """The organization named ``name`` if the user belongs to it (any organization for a site owner); else 404.

    Membership alone is enough: what the caller may then see or change in it is checked separately.
    """
    organization = orgs_visible_to(user).filter(name=name).first()
    if organization is None:
        raise Http404("Not found.")
    return organization


def orgs_with_perm(user: AnyUser, permission: str) -> QuerySet[Organization]:
    """Organizations in which the user holds ``permission`` (for organization pickers)."""
    if is_site_owner(user):
        return Organization.objects.all()
    ids = [org_id for org_id, perms in permissions_by_org(user).items() if permission in perms]
    return Organization.objects.filter(pk__in=ids)


def organization_for(user: AnyUser, name: str | None, *, read: str) -> Organization:
    """The organization named ``name`` (or the user's default one) if the user holds ``read`` there; else 404.

    Without a name: the default organization when readable, else the first readable one by name.
    """
    candidates = orgs_with_perm(user, read)
    if name:
        organization = candidates.filter(name=name).first()
    else:
        organization = None
        default_id = getattr(user, "default_organization_id", None)
        if default_id:
            organization = candidates.filter(pk=default_id).first()
        organization = organization or candidates.order_by("name").first()
    if organization is None:
        raise Http404("No such organization.")
    return organization


def require(
    user: AnyUser,
    organization: Organization,
    permission: str,
    *,
    action: str,
    resource_type: str,
    resource_id: object = "",
    resource_name: str = "",
    message: str = "You don't have permission to do that.",
) -> None:
    """Raise 403 (audited as denied) unless ``user`` holds ``permission`` in ``organization``.

    Call after the read check succeeded (the caller may see the thing) and before opening the change's transaction.
    """
    if has_perm(user, organization, permission):
        return
    audit.record_denied(
        actor=user if user.is_authenticated else None,
        organization=organization,
        action=action,
        resource_type=resource_type,
        resource_id=resource_id,
        resource_name=resource_name,
    )
    raise PermissionDenied(message)


def require_verb(
    user: AnyUser,
    organization: Organization,
    resource_type: str,
    verb: str,
    obj: Model | None = None,
    *,
    action: str = "",
    noun: str,
    nouns: str = "",
) -> None:
    """``require`` for a kind of organization object whose permissions are named ``<resource_type>:<verb>``.

    Audited as ``<resource_type>.<action or verb>`` on ``obj`` (named by ``str(obj)``), or on no object when there is
    none yet (create). The refusal reads "You don't have permission to <verb> this <noun>." about an object, else
    "You don't have permission to <verb> <nouns>." (``nouns`` defaults to ``noun`` + "s"). Same preconditions as
    ``require``.
    """
    what = f"this {noun}" if obj is not None else (nouns or f"{noun}s")
    require(
        user,
        organization,
        f"{resource_type}:{verb}",
        action=f"{resource_type}.{action or verb}",
        resource_type=resource_type,
        resource_id=obj.pk if obj is not None else "",
        resource_name=str(obj) if obj is not None else "",
        message=f"You don't have permission to {verb} {what}.",
    )


def object_in_org[M: Model](queryset: QuerySet[M], organization: Organization, **lookup) -> M:
    """Fetch one object of ``organization`` or 404 (an object of another organization is as good as missing)."""
    obj = queryset.filter(organization=organization, **lookup).first()
    if obj is None:
        raise Http404("Not found.")
    return obj


def object_for[M: Model](user: AnyUser, queryset: QuerySet[M], *, read: str, **lookup) -> M:
    """Fetch one organization-owned object if ``user`` holds ``read`` in its organization; else 404."""
    obj = queryset.select_related("organization").filter(**lookup).first()
    if obj is None or not has_perm(user, obj.organization, read):
        raise Http404("Not found.")
    return obj


def owned_object_for[M: Model](
    user: AnyUser,
    queryset: QuerySet[M],
    *,
    change: bool = False,
    action: str = "",
    resource_type: str = "",
    **lookup,
) -> M:
    """Fetch an organization object that has an ``owner`` (a workspace, a chat's resource…).

    Read: its owner, and those who may read the organization's administration (site owners, admins, auditors);
    anyone else gets 404. Change (``change=True``): its owner and those who manage the organization; a reader who
    may not change it gets 403, audited with ``action`` and ``resource_type``.
    """
    obj = queryset.select_related("organization").filter(**lookup).first()
    if obj is None:
        raise Http404("Not found.")
    is_owner = user.is_authenticated and obj.owner_id == user.pk and is_member(user, obj.organization)
    if not is_owner and not has_perm(user, obj.organization, ORGANIZATION_READ):
        raise Http404("Not found.")
    if change and not is_owner:
        require(
            user,
            obj.organization,
            ORGANIZATION_MANAGE,
            action=action,
            resource_type=resource_type,
            resource_id=obj.pk,
            resource_name=str(obj),
        )
    return obj
