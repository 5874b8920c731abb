"""Skill pages: Settings → Skills (personal skills and From your organizations) and Admin settings → Skills.

Every fetch goes through ``organizations.access`` (organization pages) or puts ownership in the query (personal)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from organizations import access, acl
from organizations.models import Organization
from organizations.views_common import confirm_and_perform

from . import format as skill_format
from . import selectors, services
from .models import OrganizationSkill, PersonalSkill
from .rendering import markdown_to_html, zip_skills
from .services import SkillError

READ = "organization_skill:read"
TEMPLATE_SKILL = """---
name: my-skill
description: What this skill helps with, in one or two sentences.
---

# My skill

Step-by-step instructions for the agent.
"""


def _download(skill, filename: str | None = None) -> HttpResponse:
    response = HttpResponse(skill.content.encode("utf-8"), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename or skill.name + "-SKILL.md"}"'
    return response


def _zip(skills, filename: str) -> HttpResponse:
    response = HttpResponse(zip_skills(skills), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _enabled_value(request: HttpRequest) -> bool:
    return request.POST.get("enabled", "").lower() in {"true", "1", "on", "yes"}


def _report(parsed: skill_format.ParsedSkill | None, error: SkillError | None) -> dict:
    return {"parsed": parsed, "error": error}


@login_required
@require_POST
def skill_validate(request: HttpRequest) -> HttpResponse:
    """Live validation for the editors (HTMX): problems and a sanitized preview of the body. Changes nothing."""
    content = request.POST.get("content", "")
    parsed = skill_format.parse_skill(content)
    return render(
        request,
        "skills/editor.html#skill-validation",
        {"parsed": parsed, "preview": markdown_to_html(parsed.body) if parsed.body.strip() else None},
    )


# Personal skills -----------------------------------------------------------------------------------------------------


def _personal(request: HttpRequest, name: str) -> PersonalSkill:
    skill = PersonalSkill.objects.filter(owner=request.user, name=name).first()
    if skill is None:
        raise Http404("Not found.")
    return skill


@login_required
@require_GET
def personal_skills(request: HttpRequest) -> HttpResponse:
    return _personal_skills_page(request)


def _personal_skills_page(request: HttpRequest) -> HttpResponse:
    orgs = selectors.orgs_with_usable_skills(request.user)
    shared_org = None
    if orgs:
        wanted = request.GET.get("org") or (
            request.user.default_organization.name if request.user.default_organization_id else ""
        )
        shared_org = next((o for o in orgs if o.name == wanted), orgs[0])
    context = {
        "skills": selectors.personal_skills_of(request.user),
        "limit": services.PERSONAL_LIMIT,
        "shared_orgs": orgs,
        "shared_org": shared_org,
        "shared_skills": selectors.skills_usable_by(request.user, shared_org) if shared_org else [],
        "page": "skills",
    }
    template = "skills/personal_list.html"
    if request.htmx and request.htmx.target == "skill-table":
        template += "#skill-table"
    return render(request, template, context)


def _editor(request, *, title, action_url, cancel_url, content, status=200, error=None, extra=None):
    parsed = skill_format.parse_skill(content) if content else None
    context = {
        "title": title,
        "action_url": action_url,
        "cancel_url": cancel_url,
        "content": content,
        "error": error,
        "parsed": parsed,
        "preview": markdown_to_html(parsed.body) if parsed and parsed.body.strip() else None,
        **(extra or {}),
    }
    return render(request, "skills/editor.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def personal_skill_new(request: HttpRequest) -> HttpResponse:
    content = request.POST.get("content", TEMPLATE_SKILL)
    if request.method == "POST":
        try:
            skill = services.personal_skill_create(user=request.user, content=content)
            messages.success(request, f"Skill {skill.name} added.")
            return redirect("personal-skills")
        except SkillError as exc:
            return _editor(
                request,
                title="Add a personal skill",
                action_url=reverse("personal-skill-new"),
                cancel_url=reverse("personal-skills"),
                content=content,
                status=exc.status,
                error=exc,
                extra={"page": "skills", "section": "settings"},
            )
    return _editor(
        request,
        title="Add a personal skill",
        action_url=reverse("personal-skill-new"),
        cancel_url=reverse("personal-skills"),
        content=content,
        extra={"page": "skills", "section": "settings"},
    )


@login_required
@require_http_methods(["GET", "POST"])
def personal_skill_edit(request: HttpRequest, name: str) -> HttpResponse:
    skill = _personal(request, name)
    content = request.POST.get("content", skill.content)
    error = None
    status = 200
    if request.method == "POST":
        try:
            services.personal_skill_update(skill=skill, content=content)
            messages.success(request, f"Skill {skill.name} saved.")
            return redirect("personal-skills")
        except SkillError as exc:
            error, status = exc, exc.status
    return _editor(
        request,
        title=f"Edit {skill.name}",
        action_url=reverse("personal-skill-edit", args=[skill.name]),
        cancel_url=reverse("personal-skills"),
        content=content,
        status=status,
        error=error,
        extra={"page": "skills", "section": "settings", "skill": skill},
    )


@login_required
@require_POST
def personal_skill_enabled(request: HttpRequest, name: str) -> HttpResponse:
    skill = _personal(request, name)
    skill = services.personal_skill_update(skill=skill, enabled=_enabled_value(request))
    if request.htmx:
        return _personal_skills_page(request)
    messages.success(request, f"Skill {skill.name} turned {'on' if skill.enabled else 'off'}.")
    return redirect("personal-skills")


@login_required
@require_GET
def personal_skill_download(request: HttpRequest, name: str) -> HttpResponse:
    return _download(_personal(request, name))


@login_required
@require_GET
def personal_skills_export(request: HttpRequest) -> HttpResponse:
    return _zip(selectors.personal_skills_of(request.user), "personal-skills.zip")


@login_required
@require_http_methods(["GET", "POST"])
def personal_skill_delete(request: HttpRequest, name: str) -> HttpResponse:
    skill = _personal(request, name)
    return confirm_and_perform(
        request,
        lambda: services.personal_skill_delete(skill=skill),
        title=f"Delete the skill {skill.name}?",
        body="Chats stop offering it at their next step. Download it first if you may want it back.",
        button="Delete skill",
        done=f"Skill {skill.name} deleted.",
        success_url=reverse("personal-skills"),
    )


# From your organizations (read-only) -------------------------------------------------------------------------------


def _shared(request: HttpRequest, org: str, name: str) -> OrganizationSkill:
    organization = access.visible_organization(request.user, org)
    skill = selectors.skills_usable_by(request.user, organization).filter(name=name).first()
    if skill is None:
        raise Http404("Not found.")
    return skill


@login_required
@require_GET
def shared_skill_view(request: HttpRequest, org: str, name: str) -> HttpResponse:
    skill = _shared(request, org, name)
    parsed = skill_format.parse_skill(skill.content)
    return render(
        request,
        "skills/view.html#skill-dialog" if request.htmx else "skills/view.html",
        {
            "skill": skill,
            "body_html": markdown_to_html(parsed.body),
            "back_url": reverse("personal-skills") + "?" + urlencode({"org": org}),
            "download_url": reverse("shared-skill-download", args=[org, name]),
            "page": "skills",
            "section": "settings",
        },
    )


@login_required
@require_GET
def shared_skill_download(request: HttpRequest, org: str, name: str) -> HttpResponse:
    return _download(_shared(request, org, name))


@login_required
@require_GET
def shared_skills_export(request: HttpRequest, org: str) -> HttpResponse:
    organization = access.visible_organization(request.user, org)
    return _zip(selectors.skills_usable_by(request.user, organization), f"{organization.name}-skills.zip")


# Admin settings → Skills -------------------------------------------------------------------------------------------


def _org(request: HttpRequest) -> Organization:
    return access.organization_for(request.user, request.GET.get("org"), read=READ)


def _org_skill(request: HttpRequest, name: str) -> OrganizationSkill:
    organization = _org(request)
    return access.object_in_org(OrganizationSkill.objects.select_related("organization"), organization, name=name)


def _admin_url(name: str, organization: Organization, *args) -> str:
    return reverse(name, args=args) + "?" + urlencode({"org": organization.name})


def _require(request, organization, verb: str, skill: OrganizationSkill | None = None, action: str = "") -> None:
    access.require_verb(
        request.user, organization, "organization_skill", verb, skill, action=action, noun="organization skill"
    )


def _admin_context(request, organization: Organization) -> dict:
    perms = access.org_permissions(request.user, organization)
    return {
        "organization": organization,
        "picker": list(access.orgs_with_perm(request.user, READ).order_by("name")),
        "can_create": "organization_skill:create" in perms,
        "can_update": "organization_skill:update" in perms,
        "can_delete": "organization_skill:delete" in perms,
        "can_share": "organization_skill:share" in perms,
        "page": "skills",
    }


@login_required
@require_GET
def org_skills(request: HttpRequest) -> HttpResponse:
    return _org_skills_page(request)


def _org_skills_page(request: HttpRequest) -> HttpResponse:
    organization = _org(request)
    skills = list(OrganizationSkill.objects.filter(organization=organization).order_by("name"))
    entries = selectors.acl_of(skills)
    context = _admin_context(request, organization) | {
        "rows": [(skill, entries.get(skill.pk, [])) for skill in skills],
        "limit": services.ORGANIZATION_LIMIT,
    }
    template = "skills/admin_list.html"
    if request.htmx and request.htmx.target == "skill-table":
        template += "#skill-table"
    return render(request, template, context)


@login_required
@require_http_methods(["GET", "POST"])
def org_skill_new(request: HttpRequest) -> HttpResponse:
    organization = _org(request)
    _require(request, organization, "create")
    content = request.POST.get("content", TEMPLATE_SKILL)
    error = None
    status = 200
    if request.method == "POST":
        try:
            skill = services.organization_skill_create(actor=request.user, organization=organization, content=content)
            messages.success(request, f"Skill {skill.name} added and shared with Everyone.")
            return redirect(_admin_url("org-skills", organization))
        except SkillError as exc:
            error, status = exc, exc.status
    return _editor(
        request,
        title=f"Add a skill to {organization.display_name}",
        action_url=_admin_url("org-skill-new", organization),
        cancel_url=_admin_url("org-skills", organization),
        content=content,
        status=status,
        error=error,
        extra={"organization": organization, "page": "skills", "section": "admin"},
    )


@login_required
@require_GET
def org_skill_view(request: HttpRequest, name: str) -> HttpResponse:
    skill = _org_skill(request, name)
    parsed = skill_format.parse_skill(skill.content)
    return render(
        request,
        "skills/view.html#skill-dialog" if request.htmx else "skills/view.html",
        {
            "skill": skill,
            "organization": skill.organization,
            "body_html": markdown_to_html(parsed.body),
            "back_url": _admin_url("org-skills", skill.organization),
            "download_url": _admin_url("org-skill-download", skill.organization, skill.name),
            "page": "skills",
            "section": "admin",
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def org_skill_edit(request: HttpRequest, name: str) -> HttpResponse:
    skill = _org_skill(request, name)
    organization = skill.organization
    _require(request, organization, "update", skill)
    content = request.POST.get("content", skill.content)
    error = None
    status = 200
    if request.method == "POST":
        try:
            services.organization_skill_update(actor=request.user, skill=skill, content=content)
            messages.success(request, f"Skill {skill.name} saved.")
            return redirect(_admin_url("org-skills", organization))
        except SkillError as exc:
            error, status = exc, exc.status
    return _editor(
        request,
        title=f"Edit {skill.name}",
        action_url=_admin_url("org-skill-edit", organization, skill.name),
        cancel_url=_admin_url("org-skills", organization),
        content=content,
        status=status,
        error=error,
        extra={"organization": organization, "page": "skills", "section": "admin", "skill": skill},
    )


@login_required
@require_POST
def org_skill_enabled(request: HttpRequest, name: str) -> HttpResponse:
    skill = _org_skill(request, name)
    enabled = _enabled_value(request)
    _require(request, skill.organization, "update", skill, action="enable" if enabled else "disable")
    services.organization_skill_update(actor=request.user, skill=skill, enabled=enabled)
    if request.htmx:
        return _org_skills_page(request)
    messages.success(request, f"Skill {skill.name} turned {'on' if enabled else 'off'}.")
    return redirect(_admin_url("org-skills", skill.organization))


@login_required
@require_GET
def org_skill_download(request: HttpRequest, name: str) -> HttpResponse:
    return _download(_org_skill(request, name))


@login_required
@require_GET
def org_skills_export(request: HttpRequest) -> HttpResponse:
    organization = _org(request)
    skills = OrganizationSkill.objects.filter(organization=organization).order_by("name")
    return _zip(skills, f"{organization.name}-skills.zip")


@login_required
@require_http_methods(["GET", "POST"])
def org_skill_delete(request: HttpRequest, name: str) -> HttpResponse:
    skill = _org_skill(request, name)
    organization = skill.organization
    _require(request, organization, "delete", skill)
    return confirm_and_perform(
        request,
        lambda: services.organization_skill_delete(actor=request.user, skill=skill),
        title=f"Delete the skill {skill.name} from {organization.display_name}?",
        body="Every chat in the organization stops offering it at its next step, and its permission list "
        "is deleted with it. Download it first if you may want it back.",
        button="Delete skill",
        done=f"Skill {skill.name} deleted.",
        success_url=_admin_url("org-skills", organization),
    )


@login_required
@require_http_methods(["GET", "POST"])
def org_skill_permissions(request: HttpRequest, name: str) -> HttpResponse:
    """Manage permissions: who may use the skill. Readers see the list; share-holders change it."""
    skill = _org_skill(request, name)
    organization = skill.organization
    status = 200
    if request.method == "POST":
        _require(request, organization, "share", skill, action="acl_update")
        try:
            user_roles, group_roles = acl.posted_change(request.POST)
            services.organization_skill_set_acl(
                actor=request.user, skill=skill, user_roles=user_roles, group_roles=group_roles
            )
            messages.success(request, "Permissions updated.")
            return redirect(_admin_url("org-skill-permissions", organization, skill.name))
        except acl.AclInvalid as exc:
            messages.error(request, exc.detail)
            status = 400
        except SkillError as exc:
            messages.error(request, exc.detail or exc.message)
            status = 400
    context = _admin_context(request, organization) | {"skill": skill} | acl.page_lists(skill, selectors.CODENAME)
    return render(request, "skills/permissions.html", context, status=status)
