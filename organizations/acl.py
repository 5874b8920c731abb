"""Object ACLs shared by every organization-owned object that members "use" (skills, MCP servers).

An ACL is a set of guardian object permissions (one ``use_<model>`` permission) held by organization groups and
members. Every entry grants the role ``read`` (shown as **Use**); ``""`` on the wire removes one. Only the
organization's own groups and current members can be added. Guardian's assign/remove are called only from here,
and this module is called only from services.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Model
from guardian.models import GroupObjectPermission, UserObjectPermission
from guardian.shortcuts import assign_perm, remove_perm

from . import audit
from .models import Membership, Organization, OrgGroup, User

ROLE = "read"


@dataclass(frozen=True)
class AclEntry:
    kind: str  # "user" | "group"
    id: int
    name: str
    role: str = ROLE


class AclInvalid(Exception):
    def __init__(self, detail: str, field: str):
        super().__init__(detail)
        self.detail = detail
        self.field = field


def _rows(model: type[Model], codename: str, pks: list[int] | None = None):
    content_type = ContentType.objects.get_for_model(model)
    users = UserObjectPermission.objects.filter(content_type=content_type, permission__codename=codename)
    groups = GroupObjectPermission.objects.filter(content_type=content_type, permission__codename=codename)
    if pks is not None:
        keys = [str(pk) for pk in pks]
        users, groups = users.filter(object_pk__in=keys), groups.filter(object_pk__in=keys)
    return users, groups


def entries(objects: list[Model], codename: str) -> dict[int, list[AclEntry]]:
    """The entries of each object, groups first (Everyone leading), then users. Four queries for any number."""
    if not objects:
        return {}
    model = type(objects[0])
    users, groups = _rows(model, codename, [o.pk for o in objects])
    org_groups = {
        g.auth_group_id: g for g in OrgGroup.objects.filter(organization_id__in={o.organization_id for o in objects})
    }
    result: dict[int, list[AclEntry]] = defaultdict(list)
    group_rows = sorted(
        ((int(pk), org_groups[gid]) for pk, gid in groups.values_list("object_pk", "group_id") if gid in org_groups),
        key=lambda row: (not row[1].is_everyone, row[1].name.lower()),
    )
    for object_id, group in group_rows:
        result[object_id].append(AclEntry("group", group.pk, group.name))
    for row in users.select_related("user").order_by("user__username"):
        result[int(row.object_pk)].append(AclEntry("user", row.user_id, row.user.get_username()))
    return result


def usable_ids(user: User, model: type[Model], codename: str, candidates: list[int]) -> set[int]:
    """Which of ``candidates`` the user may use through their own entry or one of their groups (two queries)."""
    if not candidates:
        return set()
    users, groups = _rows(model, codename, candidates)
    direct = users.filter(user=user).values_list("object_pk", flat=True)
    via_groups = groups.filter(group__user=user).values_list("object_pk", flat=True)
    return {int(pk) for pk in direct} | {int(pk) for pk in via_groups}


def available(organization: Organization) -> dict[str, list]:
    """Members and groups that can be put on a list."""
    members = (
        User.objects.filter(memberships__organization=organization, is_active=True)
        .order_by("username")
        .only("id", "username", "first_name", "last_name")
    )
    return {"users": list(members), "groups": list(OrgGroup.objects.filter(organization=organization))}


def grant_everyone(obj: Model, permission: str) -> None:
    """Share a new object with its organization's Everyone group (call inside the creating transaction)."""
    everyone = OrgGroup.objects.select_related("auth_group").get(organization_id=obj.organization_id, is_everyone=True)
    assign_perm(permission, everyone.auth_group, obj)


def delete_entries(obj: Model) -> None:
    """Remove every entry of an object that is being deleted."""
    content_type = ContentType.objects.get_for_model(type(obj))
    UserObjectPermission.objects.filter(content_type=content_type, object_pk=str(obj.pk)).delete()
    GroupObjectPermission.objects.filter(content_type=content_type, object_pk=str(obj.pk)).delete()


def set_entries(
    *,
    actor: User,
    obj: Model,
    permission: str,
    user_roles: dict[str, str] | None,
    group_roles: dict[str, str] | None,
    resource_type: str,
) -> dict:
    """Apply ``{"<id>": "read" | ""}`` changes for users and groups. Raises AclInvalid (nothing changes) for a bad
    role or id, a user granted who is not a current member, or a group of another organization. Memberships are
    checked again under a row lock inside the transaction, so a member removed at that moment keeps no entry.
    Records ``<resource_type>.acl_update`` with each entry's old and new role; changes that change nothing are
    left out (and no event is written when nothing changed). Returns the changes."""
    user_roles = user_roles or {}
    group_roles = group_roles or {}
    for roles, what in ((user_roles, "user_roles"), (group_roles, "group_roles")):
        for key, role in roles.items():
            if role not in (ROLE, ""):
                raise AclInvalid(f'role must be "read" or "", not {role!r}', f"{what}.{key}")
            if not str(key).isdigit():
                raise AclInvalid(f"{key!r} is not an id", f"{what}.{key}")
    organization = obj.organization
    codename = permission.split(".", 1)[1]
    user_ids = [int(k) for k in user_roles]
    group_ids = [int(k) for k in group_roles]
    with transaction.atomic():
        members = {
            m.user_id: m.user
            for m in Membership.objects.select_for_update()
            .filter(organization=organization, user_id__in=user_ids)
            .select_related("user")
        }
        groups = {
            g.pk: g
            for g in OrgGroup.objects.filter(organization=organization, pk__in=group_ids).select_related("auth_group")
        }
        for user_id in user_ids:
            if user_id not in members and user_roles[str(user_id)] == ROLE:
                raise AclInvalid(f"user {user_id} is not a member of {organization.name}", f"user_roles.{user_id}")
        for group_id in group_ids:
            if group_id not in groups:
                raise AclInvalid(f"group {group_id} is not a group of {organization.name}", f"group_roles.{group_id}")
        current = {(e.kind, e.id) for e in entries([obj], codename).get(obj.pk, [])}
        changes: dict[str, dict] = {}
        for user_id in user_ids:
            role = user_roles[str(user_id)]
            user = members.get(user_id) or User.objects.filter(pk=user_id).first()
            had = ("user", user_id) in current
            if user is None or had == (role == ROLE):
                continue
            (assign_perm if role == ROLE else remove_perm)(permission, user, obj)
            changes[f"user:{user.get_username()}"] = {"old": ROLE if had else None, "new": role or None}
        for group_id in group_ids:
            group = groups[group_id]
            role = group_roles[str(group_id)]
            had = ("group", group_id) in current
            if had == (role == ROLE):
                continue
            (assign_perm if role == ROLE else remove_perm)(permission, group.auth_group, obj)
            changes[f"group:{group.name}"] = {"old": ROLE if had else None, "new": role or None}
        if changes:
            audit.record(
                actor=actor,
                organization=organization,
                action=f"{resource_type}.acl_update",
                resource_type=resource_type,
                resource_id=obj.pk,
                resource_name=str(obj),
                changes=changes,
            )
    return changes


def posted_change(post) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """The Manage-permissions form's one change (``kind``, ``id``, ``role``) as ``(user_roles, group_roles)``.
    Raises AclInvalid when it names neither a member nor a group."""
    kind, raw_id, role = post.get("kind"), post.get("id", ""), post.get("role", "")
    if kind not in {"user", "group"} or not raw_id.isdigit():
        raise AclInvalid("Choose a member or a group.", "id")
    roles = {raw_id: role}
    return (roles, None) if kind == "user" else (None, roles)


def page_lists(obj: Model, codename: str) -> dict:
    """For a Manage-permissions page: the object's entries, and the members and groups not on the list yet."""
    listed = entries([obj], codename).get(obj.pk, [])
    on_list = {(e.kind, e.id) for e in listed}
    candidates = available(obj.organization)
    return {
        "entries": listed,
        "available_users": [u for u in candidates["users"] if ("user", u.pk) not in on_list],
        "available_groups": [g for g in candidates["groups"] if ("group", g.pk) not in on_list],
    }
