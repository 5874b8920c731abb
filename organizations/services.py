"""Every write to organizations, people, groups, roles and tokens. Each service validates, changes, and records its
audit event in one transaction. Callers have already passed the access checks in ``organizations.access``.
"""

from __future__ import annotations

import secrets
import uuid
from collections import defaultdict
from datetime import datetime

from django.contrib.auth.models import Group as AuthGroup
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from guardian.models import GroupObjectPermission, UserObjectPermission

from . import audit, permissions
from .models import (
    ApiToken,
    CustomRole,
    Membership,
    Organization,
    OrgGroup,
    Role,
    User,
    hash_token,
    org_name_validator,
)


def _field_error(field: str, message: str) -> ValidationError:
    return ValidationError({field: [message]})


# Organizations ------------------------------------------------------------------------------------------------------


def organization_create(*, actor: User | None, name: str, display_name: str = "") -> Organization:
    """Create an organization with its Everyone group."""
    name = name.strip()
    org_name_validator(name)
    if len(name) > 64:
        raise _field_error("name", "Use at most 64 characters.")
    display_name = (display_name or name).strip()[:200]
    with transaction.atomic():
        if Organization.objects.filter(name=name).exists():
            raise _field_error("name", f"An organization named {name} already exists.")
        organization = Organization.objects.create(name=name, display_name=display_name)
        _group_create(organization, OrgGroup.EVERYONE, is_everyone=True)
        audit.record(
            actor=actor,
            organization=organization,
            action="organization.create",
            resource_type="organization",
            resource_id=organization.pk,
            resource_name=name,
            changes={"display_name": {"old": None, "new": display_name}},
        )
    return organization


# Memberships ---------------------------------------------------------------------------------------------------------


def membership_add(*, actor: User | None, organization: Organization, user: User, role: str) -> Membership:
    """Add ``user`` to ``organization`` with ``role`` and to its Everyone group. Nothing from an earlier
    membership comes back: groups and object permissions start empty."""
    if role not in Role.values:
        raise _field_error("role", "Choose admin, auditor or member.")
    with transaction.atomic():
        if Membership.objects.filter(organization=organization, user=user).exists():
            raise _field_error("user", f"{user.get_username()} is already a member of {organization.name}.")
        membership = Membership.objects.create(organization=organization, user=user, role=role)
        _everyone(organization).auth_group.user_set.add(user)
        if user.default_organization_id is None:
            user.default_organization = organization
            user.save(update_fields=["default_organization"])
        audit.record(
            actor=actor,
            organization=organization,
            action="member.add",
            resource_type="membership",
            resource_id=user.pk,
            resource_name=user.get_username(),
            changes={"role": {"old": None, "new": role}},
        )
    return membership


def membership_set_role(*, actor: User, membership: Membership, role: str) -> Membership:
    if role not in Role.values:
        raise _field_error("role", "Choose admin, auditor or member.")
    with transaction.atomic():
        membership = Membership.objects.select_for_update().get(pk=membership.pk)
        if membership.role == role:
            return membership
        if membership.role == Role.ADMIN and not _other_admins_exist(membership):
            raise _field_error("role", "An organization needs at least one admin; make someone else admin first.")
        before = membership.role
        membership.role = role
        membership.save(update_fields=["role"])
        audit.record(
            actor=actor,
            organization=membership.organization,
            action="member.update",
            resource_type="membership",
            resource_id=membership.user_id,
            resource_name=membership.user.get_username(),
            changes={"role": {"old": before, "new": role}},
        )
    return membership


def _other_admins_exist(membership: Membership) -> bool:
    return (
        Membership.objects.filter(organization_id=membership.organization_id, role=Role.ADMIN)
        .exclude(pk=membership.pk)
        .exists()
    )


def membership_remove(*, actor: User | None, membership: Membership) -> None:
    """Remove a member: from the organization, from every one of its groups, from every object-level
    permission on its objects, and from its custom roles. Adding them back restores none of it."""
    organization = membership.organization
    user = membership.user
    with transaction.atomic():
        if membership.role == Role.ADMIN and not _other_admins_exist(membership):
            raise _field_error("user", "An organization needs at least one admin; make someone else admin first.")
        auth_group_ids = list(
            OrgGroup.objects.filter(organization=organization).values_list("auth_group_id", flat=True)
        )
        user.groups.remove(*auth_group_ids)
        removed_perms = _remove_object_permissions(user, organization)
        membership.delete()
        if user.default_organization_id == organization.pk:
            next_membership = Membership.objects.filter(user=user).order_by("organization__name").first()
            user.default_organization_id = next_membership.organization_id if next_membership else None
            user.save(update_fields=["default_organization"])
        audit.record(
            actor=actor,
            organization=organization,
            action="member.remove",
            resource_type="membership",
            resource_id=user.pk,
            resource_name=user.get_username(),
            changes={"groups_left": len(auth_group_ids), "object_permissions_removed": removed_perms},
        )


def _remove_object_permissions(user: User, organization: Organization) -> int:
    """Delete the user's guardian object permissions on ``organization`` and on every object that belongs to it
    (any model with an ``organization`` foreign key). Returns how many were removed."""
    by_type: dict[int, list[UserObjectPermission]] = defaultdict(list)
    for perm in UserObjectPermission.objects.filter(user=user):
        by_type[perm.content_type_id].append(perm)
    doomed: list[int] = []
    for content_type_id, perms in by_type.items():
        model = ContentType.objects.get_for_id(content_type_id).model_class()
        if model is None:
            continue
        if model is Organization:
            owned = {str(organization.pk)}
        elif any(f.name == "organization" for f in model._meta.get_fields()):
            pks = [p.object_pk for p in perms]
            owned = {
                str(pk)
                for pk in model._default_manager.filter(pk__in=pks, organization=organization).values_list(
                    "pk", flat=True
                )
            }
        else:
            continue
        doomed.extend(p.pk for p in perms if p.object_pk in owned)
    UserObjectPermission.objects.filter(pk__in=doomed).delete()
    return len(doomed)


def user_set_default_organization(*, user: User, organization: Organization) -> None:
    with transaction.atomic():
        before = user.default_organization.name if user.default_organization else None
        user.default_organization = organization
        user.save(update_fields=["default_organization"])
        audit.record(
            actor=user,
            organization=organization,
            action="user.update",
            resource_type="user",
            resource_id=user.pk,
            resource_name=user.get_username(),
            changes={"default_organization": {"old": before, "new": organization.name}},
        )


# Groups --------------------------------------------------------------------------------------------------------------


def _everyone(organization: Organization) -> OrgGroup:
    return OrgGroup.objects.select_related("auth_group").get(organization=organization, is_everyone=True)


def _group_create(organization: Organization, name: str, *, is_everyone: bool = False) -> OrgGroup:
    auth_group = AuthGroup.objects.create(name=f"org{organization.pk}-{uuid.uuid4().hex[:16]}")
    return OrgGroup.objects.create(organization=organization, name=name, is_everyone=is_everyone, auth_group=auth_group)


def _clean_group_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise _field_error("name", "Enter a group name.")
    if len(name) > 100:
        raise _field_error("name", "Use at most 100 characters.")
    if name.lower() == OrgGroup.EVERYONE.lower():
        raise _field_error("name", "Everyone is the automatic group of all members; choose another name.")
    return name


def group_create(*, actor: User, organization: Organization, name: str) -> OrgGroup:
    name = _clean_group_name(name)
    try:
        with transaction.atomic():
            if OrgGroup.objects.filter(organization=organization, name__iexact=name).exists():
                raise _field_error("name", f"A group named {name} already exists.")
            group = _group_create(organization, name)
            audit.record(
                actor=actor,
                organization=organization,
                action="group.create",
                resource_type="group",
                resource_id=group.pk,
                resource_name=name,
            )
    except IntegrityError:
        raise _field_error("name", f"A group named {name} already exists.") from None
    return group


def _refuse_everyone(group: OrgGroup, what: str) -> None:
    if group.is_everyone:
        raise _field_error(
            "group", f"The Everyone group always holds exactly the current members; it cannot be {what}."
        )


def group_rename(*, actor: User, group: OrgGroup, name: str) -> OrgGroup:
    _refuse_everyone(group, "renamed")
    name = _clean_group_name(name)
    with transaction.atomic():
        if (
            OrgGroup.objects.filter(organization_id=group.organization_id, name__iexact=name)
            .exclude(pk=group.pk)
            .exists()
        ):
            raise _field_error("name", f"A group named {name} already exists.")
        before = group.name
        group.name = name
        group.save(update_fields=["name"])
        audit.record(
            actor=actor,
            organization=group.organization,
            action="group.update",
            resource_type="group",
            resource_id=group.pk,
            resource_name=name,
            changes={"name": {"old": before, "new": name}},
        )
    return group


def group_delete(*, actor: User, group: OrgGroup) -> None:
    """Delete a group and, with its auth group, every object permission it was granted."""
    _refuse_everyone(group, "deleted")
    with transaction.atomic():
        auth_group = group.auth_group
        GroupObjectPermission.objects.filter(group=auth_group).delete()
        group_id, name, organization = group.pk, group.name, group.organization
        group.delete()
        auth_group.delete()
        audit.record(
            actor=actor,
            organization=organization,
            action="group.delete",
            resource_type="group",
            resource_id=group_id,
            resource_name=name,
        )


def group_add_member(*, actor: User, group: OrgGroup, user: User) -> None:
    _refuse_everyone(group, "edited by hand")
    with transaction.atomic():
        if not Membership.objects.filter(organization_id=group.organization_id, user=user).exists():
            raise _field_error("user", f"{user.get_username()} is not a member of this organization.")
        group.auth_group.user_set.add(user)
        audit.record(
            actor=actor,
            organization=group.organization,
            action="group.member_add",
            resource_type="group",
            resource_id=group.pk,
            resource_name=group.name,
            changes={"members": {"old": None, "new": user.get_username()}},
        )


def group_remove_member(*, actor: User, group: OrgGroup, user: User) -> None:
    _refuse_everyone(group, "edited by hand")
    with transaction.atomic():
        group.auth_group.user_set.remove(user)
        audit.record(
            actor=actor,
            organization=group.organization,
            action="group.member_remove",
            resource_type="group",
            resource_id=group.pk,
            resource_name=group.name,
            changes={"members": {"old": user.get_username(), "new": None}},
        )


# Custom roles --------------------------------------------------------------------------------------------------------


def _clean_role(name: str, perms: list[str]) -> tuple[str, list[str]]:
    name = name.strip()
    if not name:
        raise _field_error("name", "Enter a role name.")
    if len(name) > 100:
        raise _field_error("name", "Use at most 100 characters.")
    if name.lower() in Role.values:
        raise _field_error("name", f"{name} is a built-in role; choose another name.")
    unknown = permissions.validate(perms)
    if unknown:
        raise _field_error("permissions", f"Unknown permission: {', '.join(unknown)}.")
    return name, sorted(set(perms))


def custom_role_create(
    *, actor: User, organization: Organization, name: str, perms: list[str], description: str = ""
) -> CustomRole:
    name, perms = _clean_role(name, perms)
    with transaction.atomic():
        if CustomRole.objects.filter(organization=organization, name__iexact=name).exists():
            raise _field_error("name", f"A role named {name} already exists.")
        role = CustomRole.objects.create(
            organization=organization, name=name, permissions=perms, description=description.strip()[:500]
        )
        audit.record(
            actor=actor,
            organization=organization,
            action="role.create",
            resource_type="custom_role",
            resource_id=role.pk,
            resource_name=name,
            changes={"permissions": {"old": None, "new": perms}},
        )
    return role


def custom_role_update(
    *, actor: User, role: CustomRole, name: str, perms: list[str], description: str = ""
) -> CustomRole:
    name, perms = _clean_role(name, perms)
    with transaction.atomic():
        role = CustomRole.objects.select_for_update().get(pk=role.pk)
        clash = CustomRole.objects.filter(organization_id=role.organization_id, name__iexact=name).exclude(pk=role.pk)
        if clash.exists():
            raise _field_error("name", f"A role named {name} already exists.")
        before = {"name": role.name, "permissions": role.permissions, "description": role.description}
        role.name, role.permissions, role.description = name, perms, description.strip()[:500]
        role.save(update_fields=["name", "permissions", "description"])
        audit.record(
            actor=actor,
            organization=role.organization,
            action="role.update",
            resource_type="custom_role",
            resource_id=role.pk,
            resource_name=name,
            changes=audit.diff(before, {"name": name, "permissions": perms, "description": role.description}),
        )
    return role


def custom_role_delete(*, actor: User, role: CustomRole) -> None:
    with transaction.atomic():
        role_id, name, organization = role.pk, role.name, role.organization
        role.delete()
        audit.record(
            actor=actor,
            organization=organization,
            action="role.delete",
            resource_type="custom_role",
            resource_id=role_id,
            resource_name=name,
        )


def membership_set_custom_roles(*, actor: User, membership: Membership, roles: list[CustomRole]) -> None:
    """Replace the member's custom roles. Every role must belong to the membership's organization."""
    if any(role.organization_id != membership.organization_id for role in roles):
        raise _field_error("custom_roles", "Choose roles of this organization.")
    with transaction.atomic():
        before = sorted(r.name for r in membership.custom_roles.all())
        membership.custom_roles.set(roles)
        after = sorted(r.name for r in roles)
        if before != after:
            audit.record(
                actor=actor,
                organization=membership.organization,
                action="member.update",
                resource_type="membership",
                resource_id=membership.user_id,
                resource_name=membership.user.get_username(),
                changes={"custom_roles": {"old": before, "new": after}},
            )


# API tokens ----------------------------------------------------------------------------------------------------------


def api_token_create(*, user: User, name: str, expires_at: datetime | None = None) -> tuple[ApiToken, str]:
    """Create a personal API token. Returns the row and the token text, which is never stored or shown again."""
    name = name.strip()
    if not name:
        raise _field_error("name", "Enter a name to recognise the token by.")
    if len(name) > 100:
        raise _field_error("name", "Use at most 100 characters.")
    if expires_at is not None and expires_at <= timezone.now():
        raise _field_error("expires_at", "Choose an expiry in the future, or none.")
    plaintext = ApiToken.PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            user=user, name=name, token_hash=hash_token(plaintext), hint=plaintext[:8], expires_at=expires_at
        )
        audit.record(
            actor=user,
            organization=None,
            action="api_token.create",
            resource_type="api_token",
            resource_id=token.pk,
            resource_name=name,
            changes={"expires_at": {"old": None, "new": expires_at.isoformat() if expires_at else "never"}},
        )
    return token, plaintext


def api_token_revoke(*, actor: User, token: ApiToken) -> None:
    with transaction.atomic():
        if token.revoked_at is not None:
            return
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit.record(
            actor=actor,
            organization=None,
            action="api_token.revoke",
            resource_type="api_token",
            resource_id=token.pk,
            resource_name=token.name,
        )


def api_token_authenticate(plaintext: str) -> User | None:
    """The active user behind a token, or None. Touches ``last_used_at`` at most once a minute."""
    if not plaintext.startswith(ApiToken.PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(token_hash=hash_token(plaintext)).first()
    if token is None or not token.is_active or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


# Sign-in -------------------------------------------------------------------------------------------------------------


def record_sign_in(*, user: User | None, username: str, success: bool) -> None:
    """Audit a sign-in attempt (no organization; visible to site owners)."""
    with transaction.atomic():
        audit.record(
            actor=user,
            organization=None,
            action="auth.sign_in" if success else "auth.sign_in_failed",
            resource_type="session",
            resource_name=username[:150],
            outcome="success" if success else "denied",
        )
