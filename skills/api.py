"""The skills JSON API, at the documented paths under /api/experimental/.

Personal: ``/users/{user}/skills`` where ``{user}`` is ``me`` or the caller's own username (anyone else's: 404).
Organization: ``/organizations/{organization}/skills``; callers who may read every skill (site owners, admins,
auditors, custom roles with organization_skill:read) see them all, members see the enabled skills shared with them,
and a skill the caller cannot read answers 404 like a missing one.
"""

from __future__ import annotations

from datetime import datetime

from django.http import Http404, HttpRequest, HttpResponse
from ninja import Router, Schema, Status

from organizations import access
from organizations.acl_api import AclOut, AvailableOut, acl_out, available_out
from organizations.models import Organization, User

from . import selectors, services
from .models import OrganizationSkill, PersonalSkill
from .services import SkillError

router = Router(tags=["skills"])

READ = "organization_skill:read"


class SkillOut(Schema):
    name: str
    description: str
    enabled: bool
    created_at: datetime
    updated_at: datetime


class PersonalSkillDetail(SkillOut):
    content: str


class OrganizationSkillDetail(SkillOut):
    content: str
    organization: str


class SkillCreate(Schema):
    content: str
    enabled: bool = True


class SkillPatch(Schema):
    content: str | None = None
    enabled: bool | None = None


class AclPatch(Schema):
    user_roles: dict[str, str] = {}
    group_roles: dict[str, str] = {}


class Error(Schema):
    message: str
    detail: str
    validations: list[dict]


def _error(exc: SkillError) -> Status:
    return Status(exc.status, {"message": exc.message, "detail": exc.detail, "validations": exc.validations})


def _no_content() -> HttpResponse:
    return HttpResponse(status=204)


# Personal ------------------------------------------------------------------------------------------------------------


def _owner(request: HttpRequest, user: str) -> User:
    if user != "me" and user != request.user.get_username():
        raise Http404("Not found.")
    return request.user


def _personal(request: HttpRequest, user: str, name: str) -> PersonalSkill:
    skill = PersonalSkill.objects.filter(owner=_owner(request, user), name=name).first()
    if skill is None:
        raise Http404("Not found.")
    return skill


@router.get("/users/{user}/skills", response=list[SkillOut])
def personal_list(request: HttpRequest, user: str):
    return list(selectors.personal_skills_of(_owner(request, user)))


@router.post("/users/{user}/skills", response={201: PersonalSkillDetail, 400: Error, 409: Error})
def personal_create(request: HttpRequest, user: str, payload: SkillCreate):
    owner = _owner(request, user)
    try:
        return Status(201, services.personal_skill_create(user=owner, content=payload.content, enabled=payload.enabled))
    except SkillError as exc:
        return _error(exc)


@router.get("/users/{user}/skills/{name}", response=PersonalSkillDetail)
def personal_detail(request: HttpRequest, user: str, name: str):
    return _personal(request, user, name)


@router.patch("/users/{user}/skills/{name}", response={200: PersonalSkillDetail, 400: Error})
def personal_update(request: HttpRequest, user: str, name: str, payload: SkillPatch):
    skill = _personal(request, user, name)
    try:
        return Status(
            200, services.personal_skill_update(skill=skill, content=payload.content, enabled=payload.enabled)
        )
    except SkillError as exc:
        return _error(exc)


@router.delete("/users/{user}/skills/{name}")
def personal_delete(request: HttpRequest, user: str, name: str):
    services.personal_skill_delete(skill=_personal(request, user, name))
    return _no_content()


# Organization --------------------------------------------------------------------------------------------------------


def _org_skill(request: HttpRequest, organization: str, name: str) -> OrganizationSkill:
    org = access.visible_organization(request.user, organization)
    skill = selectors.organization_skill_for(request.user, org, name)
    if skill is None:
        raise Http404("Not found.")
    return skill


def _require(request, org: Organization, verb: str, skill: OrganizationSkill | None = None, action: str = "") -> None:
    access.require_verb(request.user, org, "organization_skill", verb, skill, action=action, noun="organization skill")


def _detail(skill: OrganizationSkill) -> dict:
    return {
        "name": skill.name,
        "description": skill.description,
        "enabled": skill.enabled,
        "created_at": skill.created_at,
        "updated_at": skill.updated_at,
        "content": skill.content,
        "organization": skill.organization.name,
    }


@router.get("/organizations/{organization}/skills", response=list[SkillOut])
def org_list(request: HttpRequest, organization: str):
    org = access.visible_organization(request.user, organization)
    if access.has_perm(request.user, org, READ):
        return list(OrganizationSkill.objects.filter(organization=org).order_by("name"))
    return list(selectors.skills_usable_by(request.user, org))


@router.post("/organizations/{organization}/skills", response={201: OrganizationSkillDetail, 400: Error, 409: Error})
def org_create(request: HttpRequest, organization: str, payload: SkillCreate):
    org = access.visible_organization(request.user, organization)
    _require(request, org, "create")
    try:
        skill = services.organization_skill_create(
            actor=request.user, organization=org, content=payload.content, enabled=payload.enabled
        )
    except SkillError as exc:
        return _error(exc)
    return Status(201, _detail(skill))


@router.get("/organizations/{organization}/skills/{name}", response=OrganizationSkillDetail)
def org_detail(request: HttpRequest, organization: str, name: str):
    return _detail(_org_skill(request, organization, name))


@router.patch("/organizations/{organization}/skills/{name}", response={200: OrganizationSkillDetail, 400: Error})
def org_update(request: HttpRequest, organization: str, name: str, payload: SkillPatch):
    skill = _org_skill(request, organization, name)
    action = (
        "update"
        if payload.content is not None or payload.enabled is None
        else ("enable" if payload.enabled else "disable")
    )
    _require(request, skill.organization, "update", skill, action)
    try:
        skill = services.organization_skill_update(
            actor=request.user, skill=skill, content=payload.content, enabled=payload.enabled
        )
    except SkillError as exc:
        return _error(exc)
    return Status(200, _detail(skill))


@router.delete("/organizations/{organization}/skills/{name}")
def org_delete(request: HttpRequest, organization: str, name: str):
    skill = _org_skill(request, organization, name)
    _require(request, skill.organization, "delete", skill)
    services.organization_skill_delete(actor=request.user, skill=skill)
    return _no_content()


def _readable_for_acl(request: HttpRequest, organization: str, name: str) -> OrganizationSkill:
    """The ACL is part of the skill's administration: only those who may read every skill see it."""
    org = access.visible_organization(request.user, organization)
    if not access.has_perm(request.user, org, READ):
        raise Http404("Not found.")
    skill = OrganizationSkill.objects.filter(organization=org, name=name).select_related("organization").first()
    if skill is None:
        raise Http404("Not found.")
    return skill


@router.get("/organizations/{organization}/skills/{name}/acl", response=AclOut)
def acl_get(request: HttpRequest, organization: str, name: str):
    skill = _readable_for_acl(request, organization, name)
    entries = selectors.acl_of([skill]).get(skill.pk, [])
    return acl_out(entries)


@router.patch("/organizations/{organization}/skills/{name}/acl", response={204: None, 400: Error})
def acl_patch(request: HttpRequest, organization: str, name: str, payload: AclPatch):
    skill = _readable_for_acl(request, organization, name)
    _require(request, skill.organization, "share", skill, "acl_update")
    try:
        services.organization_skill_set_acl(
            actor=request.user, skill=skill, user_roles=payload.user_roles, group_roles=payload.group_roles
        )
    except SkillError as exc:
        return _error(exc)
    return _no_content()


@router.get("/organizations/{organization}/skills/{name}/acl/available", response=AvailableOut)
def acl_available(request: HttpRequest, organization: str, name: str):
    skill = _readable_for_acl(request, organization, name)
    return available_out(skill.organization)
