"""Every write to personal and organization skills. Each service validates the SKILL.md text with
``skills.format``, changes the rows, and records its audit event in one transaction. Callers have passed the
access checks (``organizations.access`` and ``skills.access``) first.

Errors are ``SkillError`` with the documented status, message and per-field details, shared by pages and API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from organizations import acl, audit
from organizations.models import Organization, User

from . import format as skill_format
from .models import OrganizationSkill, PersonalSkill

PERSONAL_LIMIT = 100
ORGANIZATION_LIMIT = 100
USE_PERMISSION = "skills.use_organizationskill"
USE_CODENAME = "use_organizationskill"
ACL_ROLE = acl.ROLE  # shown as "Use"


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
            acl.grant_everyone(skill, USE_PERMISSION)
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
        acl.delete_entries(skill)
        skill.delete()
        audit.record(
            actor=actor,
            organization=organization,
            action="organization_skill.delete",
            resource_type="organization_skill",
            resource_id=skill_id,
            resource_name=name,
        )


def organization_skill_set_acl(
    *,
    actor: User,
    skill: OrganizationSkill,
    user_roles: dict[str, str] | None = None,
    group_roles: dict[str, str] | None = None,
) -> None:
    """Apply ACL changes (see ``organizations.acl.set_entries``); a refused change raises SkillError 400."""
    try:
        acl.set_entries(
            actor=actor,
            obj=skill,
            permission=USE_PERMISSION,
            user_roles=user_roles,
            group_roles=group_roles,
            resource_type="organization_skill",
        )
    except acl.AclInvalid as exc:
        raise SkillError(
            400,
            "Invalid request to update organization skill ACL.",
            exc.detail,
            [{"field": exc.field, "detail": exc.detail}],
        ) from None
