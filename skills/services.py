"""Every write to personal and organization skills. Each service validates the SKILL.md text with
``skills.format``, changes the rows, and records its audit event in one transaction. Callers have passed the
access checks (``organizations.access`` and ``skills.access``) first.

Errors are ``SkillError`` with the documented status, message and per-field details, shared by pages and API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone
from guardian.models import GroupObjectPermission, UserObjectPermission
from guardian.shortcuts import assign_perm, remove_perm

from organizations import audit
from organizations.models import Membership, Organization, OrgGroup, User

from . import format as skill_format
from .models import OrganizationSkill, PersonalSkill

PERSONAL_LIMIT = 100
ORGANIZATION_LIMIT = 100
USE_PERMISSION = "skills.use_organizationskill"
USE_CODENAME = "use_organizationskill"
ACL_ROLE = "read"  # shown as "Use"


@dataclass
class SkillError(Exception):
    status: int
    message: str
    detail: str = ""
    validations: list[dict] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


def normalize_content(content: str) -> str:
    """Line ends as LF: browsers send a textarea's text with CRLF, and an unchanged save must change nothing."""
    return content.replace("\r\n", "\n").replace("\r", "\n")


def validate_content(content: str, *, expected_name: str | None = None) -> skill_format.ParsedSkill:
    """Parse a SKILL.md for storage. Raises SkillError with the documented message for the first broken rule and
    every problem found in ``validations``."""
    if len(content.encode("utf-8", errors="surrogatepass")) > skill_format.MAX_SKILL_BYTES:
        raise SkillError(
            400,
            "Skill content is too large.",
            f"A SKILL.md can be at most {skill_format.MAX_SKILL_BYTES // 1024} KiB.",
            [{"field": "content", "detail": "SKILL.md is larger than 64 KiB"}],
        )
    parsed = skill_format.parse_skill(content)
    validations = [
        {"field": issue.field, "detail": issue.message + (f" (line {issue.line})" if issue.line else "")}
        for issue in parsed.errors
    ]
    fields = {issue.field for issue in parsed.errors}
    if parsed.errors:
        if "name" in fields:
            message = "Invalid skill name."
        elif "body" in fields and len(fields) == 1:
            message = "Skill body is required."
        elif "description" in fields and any("4096" in i.message for i in parsed.errors):
            message = "Skill description is too large."
        elif "content" in fields and any("64 KiB" in i.message for i in parsed.errors):
            message = "Skill content is too large."
        else:
            message = "Invalid skill content."
        raise SkillError(400, message, validations[0]["detail"], validations)
    if expected_name is not None and parsed.name != expected_name:
        raise SkillError(
            400,
            "Skill name in path does not match frontmatter name.",
            f"The path names {expected_name}; the frontmatter names {parsed.name}.",
            [{"field": "name", "detail": "must stay the same when editing"}],
        )
    return parsed


def _limit_reached(kind: str) -> SkillError:
    if kind == "personal":
        return SkillError(409, "Personal skill limit reached.", "Each user can have at most 100 personal skills.")
    return SkillError(409, "Organization skill limit reached.", "Each organization can have at most 100 skills.")


def _exists() -> SkillError:
    return SkillError(409, "A skill with that name already exists.")


# Personal skills -----------------------------------------------------------------------------------------------------


def personal_skill_create(*, user: User, content: str, enabled: bool = True) -> PersonalSkill:
    """Create a personal skill. The cap holds under concurrency: the owner's row is locked while counting."""
    content = normalize_content(content)
    parsed = validate_content(content)
    try:
        with transaction.atomic():
            User.objects.select_for_update().filter(pk=user.pk).first()
            if PersonalSkill.objects.filter(owner=user, name=parsed.name).exists():
                raise _exists()
            if PersonalSkill.objects.filter(owner=user).count() >= PERSONAL_LIMIT:
                raise _limit_reached("personal")
            skill = PersonalSkill.objects.create(
                owner=user, name=parsed.name, description=parsed.description, content=content, enabled=enabled
            )
            audit.record(
                actor=user,
                organization=None,
                action="personal_skill.create",
                resource_type="personal_skill",
                resource_id=skill.pk,
                resource_name=skill.name,
                changes={"enabled": {"old": None, "new": enabled}},
            )
    except IntegrityError:
        raise _exists() from None
    return skill


def _update(skill, *, actor: User, organization: Organization | None, resource_type: str, content, enabled):
    if content is None and enabled is None:
        raise SkillError(400, "No skill fields to update.", "Set content, enabled, or both.")
    if content is not None:
        content = normalize_content(content)
    parsed = validate_content(content, expected_name=skill.name) if content is not None else None
    with transaction.atomic():
        skill = type(skill).objects.select_for_update().get(pk=skill.pk)
        before = {"description": skill.description, "content": skill.content, "enabled": skill.enabled}
        if parsed is not None:
            skill.content = content
            skill.description = parsed.description
        if enabled is not None:
            skill.enabled = enabled
        after = {"description": skill.description, "content": skill.content, "enabled": skill.enabled}
        changes = audit.diff(before, after)
        if not changes:
            return skill
        if "content" in changes:
            # The audit log says that the text changed, not what it says (it may be long).
            changes["content"] = {"old": f"revision {skill.revision}", "new": f"revision {skill.revision + 1}"}
            skill.revision += 1
        skill.updated_at = timezone.now()
        skill.save()
        action = "update"
        if set(changes) == {"enabled"}:
            action = "enable" if skill.enabled else "disable"
        audit.record(
            actor=actor,
            organization=organization,
            action=f"{resource_type}.{action}",
            resource_type=resource_type,
            resource_id=skill.pk,
            resource_name=skill.name,
            changes=changes,
        )
    return skill


def personal_skill_update(
    *, skill: PersonalSkill, content: str | None = None, enabled: bool | None = None
) -> PersonalSkill:
    return _update(
        skill, actor=skill.owner, organization=None, resource_type="personal_skill", content=content, enabled=enabled
    )


def personal_skill_delete(*, skill: PersonalSkill) -> None:
    with transaction.atomic():
        skill_id, name = skill.pk, skill.name
        skill.delete()
        audit.record(
            actor=skill.owner,
            organization=None,
            action="personal_skill.delete",
            resource_type="personal_skill",
            resource_id=skill_id,
            resource_name=name,
        )


# Organization skills -------------------------------------------------------------------------------------------------


def organization_skill_create(
    *, actor: User | None, organization: Organization, content: str, enabled: bool = True
) -> OrganizationSkill:
    """Create an organization skill shared with the organization's Everyone group. The organization row is locked
    while counting, so parallel creates never exceed the cap."""
    content = normalize_content(content)
    parsed = validate_content(content)
    try:
        with transaction.atomic():
            Organization.objects.select_for_update().filter(pk=organization.pk).first()
            if OrganizationSkill.objects.filter(organization=organization, name=parsed.name).exists():
                raise _exists()
            if OrganizationSkill.objects.filter(organization=organization).count() >= ORGANIZATION_LIMIT:
                raise _limit_reached("organization")
            skill = OrganizationSkill.objects.create(
                organization=organization,
                name=parsed.name,
                description=parsed.description,
                content=content,
                enabled=enabled,
                created_by=actor if actor is not None and actor.is_authenticated else None,
            )
            everyone = OrgGroup.objects.select_related("auth_group").get(organization=organization, is_everyone=True)
            assign_perm(USE_PERMISSION, everyone.auth_group, skill)
            audit.record(
                actor=actor,
                organization=organization,
                action="organization_skill.create",
                resource_type="organization_skill",
                resource_id=skill.pk,
                resource_name=skill.name,
                changes={"enabled": {"old": None, "new": enabled}, "acl": {"old": None, "new": ["group:Everyone"]}},
            )
    except IntegrityError:
        raise _exists() from None
    return skill


def organization_skill_update(
    *, actor: User, skill: OrganizationSkill, content: str | None = None, enabled: bool | None = None
) -> OrganizationSkill:
    return _update(
        skill,
        actor=actor,
        organization=skill.organization,
        resource_type="organization_skill",
        content=content,
        enabled=enabled,
    )


def organization_skill_delete(*, actor: User, skill: OrganizationSkill) -> None:
    """Delete a skill and every permission entry on it."""
    with transaction.atomic():
        skill_id, name, organization = skill.pk, skill.name, skill.organization
        UserObjectPermission.objects.filter(
            content_type__app_label="skills", content_type__model="organizationskill", object_pk=str(skill_id)
        ).delete()
        GroupObjectPermission.objects.filter(
            content_type__app_label="skills", content_type__model="organizationskill", object_pk=str(skill_id)
        ).delete()
        skill.delete()
        audit.record(
            actor=actor,
            organization=organization,
            action="organization_skill.delete",
            resource_type="organization_skill",
            resource_id=skill_id,
            resource_name=name,
        )


def _acl_invalid(detail: str, field_name: str) -> SkillError:
    return SkillError(
        400, "Invalid request to update organization skill ACL.", detail, [{"field": field_name, "detail": detail}]
    )


def organization_skill_set_acl(
    *,
    actor: User,
    skill: OrganizationSkill,
    user_roles: dict[str, str] | None = None,
    group_roles: dict[str, str] | None = None,
) -> None:
    """Apply ACL changes: ``{"<id>": "read"}`` grants Use, ``{"<id>": ""}`` removes the entry. Every user granted Use
    must be a current member and every group one of the organization's groups; otherwise nothing changes. The
    memberships are checked again under a row lock inside the transaction, so a member removed at the same moment
    cannot keep an entry."""
    user_roles = user_roles or {}
    group_roles = group_roles or {}
    for roles, what in ((user_roles, "user_roles"), (group_roles, "group_roles")):
        for key, role in roles.items():
            if role not in (ACL_ROLE, ""):
                raise _acl_invalid(f'role must be "read" or "", not {role!r}', f"{what}.{key}")
            if not str(key).isdigit():
                raise _acl_invalid(f"{key!r} is not an id", f"{what}.{key}")
    organization = skill.organization
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
            if user_id not in members and user_roles[str(user_id)] == ACL_ROLE:
                raise _acl_invalid(f"user {user_id} is not a member of {organization.name}", f"user_roles.{user_id}")
        for group_id in group_ids:
            if group_id not in groups:
                raise _acl_invalid(f"group {group_id} is not a group of {organization.name}", f"group_roles.{group_id}")
        current = {(e.kind, e.id) for e in _acl_entries(skill)}
        changes: dict[str, dict] = {}
        for user_id in user_ids:
            role = user_roles[str(user_id)]
            user = members.get(user_id) or User.objects.filter(pk=user_id).first()
            had = ("user", user_id) in current
            if user is None or had == (role == ACL_ROLE):
                continue
            if role == ACL_ROLE:
                assign_perm(USE_PERMISSION, user, skill)
            else:
                remove_perm(USE_PERMISSION, user, skill)
            changes[f"user:{user.get_username()}"] = {"old": ACL_ROLE if had else None, "new": role or None}
        for group_id in group_ids:
            group = groups[group_id]
            role = group_roles[str(group_id)]
            had = ("group", group_id) in current
            if had == (role == ACL_ROLE):
                continue
            if role == ACL_ROLE:
                assign_perm(USE_PERMISSION, group.auth_group, skill)
            else:
                remove_perm(USE_PERMISSION, group.auth_group, skill)
            changes[f"group:{group.name}"] = {"old": ACL_ROLE if had else None, "new": role or None}
        if changes:
            audit.record(
                actor=actor,
                organization=organization,
                action="organization_skill.acl_update",
                resource_type="organization_skill",
                resource_id=skill.pk,
                resource_name=skill.name,
                changes=changes,
            )


def _acl_entries(skill: OrganizationSkill):
    from .selectors import acl_of

    return acl_of([skill]).get(skill.pk, [])
