"""Pages for signing in, personal settings (API tokens, default organization) and organization administration
(organizations, members, groups, roles, audit log). Every fetch goes through ``organizations.access``."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import authenticate, login, logout
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import access, audit, auth, permissions, selectors, services
from .forms import (
    ApiTokenForm,
    CustomRoleForm,
    MemberAddForm,
    MemberRoleForm,
    NameForm,
    OrganizationForm,
    SignInForm,
)
from .middleware import client_ip
from .models import ApiToken, CustomRole, Membership, Organization, OrgGroup, User
from .permissions import ORGANIZATION_MANAGE, ORGANIZATION_READ
from .views_common import confirm_and_perform

AUDIT_PAGE_SIZE = 50


def _errors(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [f"{field.replace('_', ' ').capitalize()}: {m}" for field, ms in exc.message_dict.items() for m in ms]
    return list(exc.messages)


def _org_url(name: str, organization: Organization, **params) -> str:
    return f"{reverse(name)}?{urlencode({'org': organization.name, **params})}"


def _picker(user, permission: str) -> list[Organization]:
    return list(access.orgs_with_perm(user, permission).order_by("name"))


# Signing in ----------------------------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def sign_in(request: HttpRequest) -> HttpResponse:
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        next_url = ""
    if request.user.is_authenticated and request.method == "GET":
        return redirect(next_url or "home")
    form = SignInForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        username = form.cleaned_data["username"]
        ip = client_ip(request)
        if auth.is_locked_out(username, ip):
            form.add_error(None, "Too many failed sign-in attempts. Wait a few minutes and try again.")
            status = 429
        else:
            user = authenticate(request, username=username, password=form.cleaned_data["password"])
            if user is None:
                auth.note_failure(username, ip)
                services.record_sign_in(user=None, username=username, success=False)
                form.add_error(None, "That username or email and password do not match an account.")
                status = 400
            else:
                auth.clear_failures(username)
                login(request, user)
                services.record_sign_in(user=user, username=user.get_username(), success=True)
                return redirect(next_url or "home")
    elif request.method == "POST":
        status = 400
    return render(request, "organizations/sign_in.html", {"form": form, "next": next_url}, status=status)


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("login")


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return redirect("agents")


# Personal settings ---------------------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    form = ApiTokenForm(request.POST or None)
    new_token = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            days = form.cleaned_data["expires_in_days"]
            expires_at = timezone.now() + timedelta(days=int(days)) if days else None
            try:
                _, new_token = services.api_token_create(
                    user=request.user, name=form.cleaned_data["name"], expires_at=expires_at
                )
                form = ApiTokenForm()
            except ValidationError as exc:
                for message in _errors(exc):
                    form.add_error(None, message)
                status = 400
        else:
            status = 400
    context = {"form": form, "tokens": selectors.api_tokens_of(request.user), "new_token": new_token}
    template = "organizations/api_tokens.html"
    if request.htmx:
        template += "#token-panel"
    response = render(request, template, context, status=status)
    response["Cache-Control"] = "no-store"  # the page may carry a token shown once
    return response


@login_required
@require_http_methods(["GET", "POST"])
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    # Ownership is part of the query: another user's token is as good as missing.
    token = ApiToken.objects.filter(pk=token_id, user=request.user, revoked_at__isnull=True).first()
    if token is None:
        raise Http404("Not found.")
    return confirm_and_perform(
        request,
        lambda: services.api_token_revoke(actor=request.user, token=token),
        title=f"Revoke the token {token.name}?",
        body="Scripts that use it stop working at once. This cannot be undone.",
        button="Revoke token",
        done=f"Token {token.name} revoked.",
        success_url=reverse("api-tokens"),
    )


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: HttpRequest) -> HttpResponse:
    orgs = list(access.orgs_visible_to(request.user).order_by("name"))
    if request.method == "POST":
        organization = next((o for o in orgs if o.name == request.POST.get("default_organization")), None)
        if organization is None:
            messages.error(request, "Default organization: choose one of your organizations.")
            return render(request, "organizations/profile.html", {"orgs": orgs}, status=400)
        services.user_set_default_organization(user=request.user, organization=organization)
        messages.success(request, f"{organization.display_name} is now your default organization.")
        return redirect("profile")
    return render(request, "organizations/profile.html", {"orgs": orgs})


# Organizations -------------------------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def organizations(request: HttpRequest) -> HttpResponse:
    if not access.is_site_owner(request.user) and not access.orgs_with_perm(request.user, ORGANIZATION_READ).exists():
        raise Http404("Not found.")
    form = OrganizationForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if not access.is_site_owner(request.user):
            audit.record_denied(
                actor=request.user,
                organization=None,
                action="organization.create",
                resource_type="organization",
                resource_name=request.POST.get("name", "")[:64],
            )
            raise PermissionDenied("Only site owners can create organizations.")
        if form.is_valid():
            try:
                organization = services.organization_create(
                    actor=request.user,
                    name=form.cleaned_data["name"],
                    display_name=form.cleaned_data["display_name"],
                )
                messages.success(request, f"Organization {organization.name} created.")
                return redirect(_org_url("members", organization))
            except ValidationError as exc:
                for message in _errors(exc):
                    form.add_error(None, message)
        status = 400
    orgs = [(o, access.org_permissions(request.user, o)) for o in selectors.organizations_for_list(request.user)]
    rows = [{"org": o, "can_read": ORGANIZATION_READ in p, "can_manage": ORGANIZATION_MANAGE in p} for o, p in orgs]
    context = {"rows": rows, "form": form, "can_create": access.is_site_owner(request.user)}
    return render(request, "organizations/organizations.html", context, status=status)


# Members -------------------------------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest) -> HttpResponse:
    organization = access.organization_for(request.user, request.GET.get("org"), read=ORGANIZATION_READ)
    form = MemberAddForm(request.POST or None)
    status = 200
    if request.method == "POST":
        access.require(request.user, organization, ORGANIZATION_MANAGE, action="member.add", resource_type="membership")
        if form.is_valid():
            query = form.cleaned_data["user"].strip()
            user = selectors.search_users_for_org(organization, query).first()
            if user is None:
                form.add_error("user", f"No account {query} that is not already a member.")
            else:
                try:
                    services.membership_add(
                        actor=request.user, organization=organization, user=user, role=form.cleaned_data["role"]
                    )
                    messages.success(request, f"{user.get_username()} added to {organization.name}.")
                    return redirect(_org_url("members", organization))
                except ValidationError as exc:
                    for message in _errors(exc):
                        form.add_error(None, message)
        status = 400
    context = {
        "organization": organization,
        "picker": _picker(request.user, ORGANIZATION_READ),
        "memberships": selectors.members_of(organization),
        "roles": list(selectors.custom_roles_of(organization)),
        "builtin_roles": MemberRoleForm.base_fields["role"].choices,
        "can_manage": access.has_perm(request.user, organization, ORGANIZATION_MANAGE),
        "form": form,
        "page": "members",
    }
    return render(request, "organizations/members.html", context, status=status)


def _membership_for(request: HttpRequest, user_id: int) -> Membership:
    organization = access.organization_for(request.user, request.GET.get("org"), read=ORGANIZATION_READ)
    return access.object_in_org(
        Membership.objects.select_related("user", "organization"), organization, user_id=user_id
    )


@login_required
@require_POST
def member_update(request: HttpRequest, user_id: int) -> HttpResponse:
    membership = _membership_for(request, user_id)
    organization = membership.organization
    access.require(
        request.user,
        organization,
        ORGANIZATION_MANAGE,
        action="member.update",
        resource_type="membership",
        resource_id=membership.user_id,
        resource_name=membership.user.get_username(),
    )
    form = MemberRoleForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError({"role": ["Choose admin, auditor or member."]})
        services.membership_set_role(actor=request.user, membership=membership, role=form.cleaned_data["role"])
        role_ids = [int(v) for v in request.POST.getlist("custom_roles") if v.isdigit()]
        roles = list(CustomRole.objects.filter(organization=organization, pk__in=role_ids))
        if len(roles) != len(set(role_ids)):
            raise ValidationError({"custom_roles": ["Choose roles of this organization."]})
        services.membership_set_custom_roles(actor=request.user, membership=membership, roles=roles)
        messages.success(request, f"{membership.user.get_username()} updated.")
    except ValidationError as exc:
        for message in _errors(exc):
            messages.error(request, message)
    return redirect(_org_url("members", organization))


@login_required
@require_http_methods(["GET", "POST"])
def member_remove(request: HttpRequest, user_id: int) -> HttpResponse:
    membership = _membership_for(request, user_id)
    organization = membership.organization
    access.require(
        request.user,
        organization,
        ORGANIZATION_MANAGE,
        action="member.remove",
        resource_type="membership",
        resource_id=membership.user_id,
        resource_name=membership.user.get_username(),
    )
    if request.method == "POST":
        try:
            services.membership_remove(actor=request.user, membership=membership)
            messages.success(request, f"{membership.user.get_username()} removed from {organization.name}.")
        except ValidationError as exc:
            for message in _errors(exc):
                messages.error(request, message)
        return redirect(_org_url("members", organization))
    return render(
        request,
        "organizations/confirm.html",
        {
            "title": f"Remove {membership.user.get_username()} from {organization.display_name}?",
            "body": "They leave every group of the organization and lose every permission on its skills and "
            "servers. Adding them back later restores none of it.",
            "action": "Remove member",
            "cancel_url": _org_url("members", organization),
        },
    )


# Groups --------------------------------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def groups(request: HttpRequest) -> HttpResponse:
    organization = access.organization_for(request.user, request.GET.get("org"), read=ORGANIZATION_READ)
    form = NameForm(request.POST or None)
    status = 200
    if request.method == "POST":
        access.require(request.user, organization, ORGANIZATION_MANAGE, action="group.create", resource_type="group")
        if form.is_valid():
            try:
                group = services.group_create(
                    actor=request.user, organization=organization, name=form.cleaned_data["name"]
                )
                messages.success(request, f"Group {group.name} created.")
                return redirect("group", group_id=group.pk)
            except ValidationError as exc:
                for message in _errors(exc):
                    form.add_error(None, message)
        status = 400
    context = {
        "organization": organization,
        "picker": _picker(request.user, ORGANIZATION_READ),
        "groups": selectors.groups_of(organization),
        "can_manage": access.has_perm(request.user, organization, ORGANIZATION_MANAGE),
        "form": form,
        "page": "groups",
    }
    return render(request, "organizations/groups.html", context, status=status)


def _group_for(request: HttpRequest, group_id: int) -> OrgGroup:
    return access.object_for(
        request.user, OrgGroup.objects.select_related("auth_group"), read=ORGANIZATION_READ, pk=group_id
    )


@login_required
@require_http_methods(["GET", "POST"])
def group(request: HttpRequest, group_id: int) -> HttpResponse:
    group = _group_for(request, group_id)
    organization = group.organization
    status = 200
    form = NameForm(initial={"name": group.name})
    if request.method == "POST":
        op = request.POST.get("op", "")
        access.require(
            request.user,
            organization,
            ORGANIZATION_MANAGE,
            action="group.update",
            resource_type="group",
            resource_id=group.pk,
            resource_name=group.name,
        )
        try:
            if op == "rename":
                form = NameForm(request.POST)
                if not form.is_valid():
                    raise ValidationError({"name": ["Enter a group name of at most 100 characters."]})
                services.group_rename(actor=request.user, group=group, name=form.cleaned_data["name"])
                messages.success(request, f"Group renamed to {group.name}.")
            elif op in {"add", "remove"}:
                user = User.objects.filter(pk=request.POST.get("user") or 0).first()
                if user is None or not access.is_member(user, organization):
                    raise ValidationError({"user": ["Choose a current member of this organization."]})
                if op == "add":
                    services.group_add_member(actor=request.user, group=group, user=user)
                    messages.success(request, f"{user.get_username()} added to {group.name}.")
                else:
                    services.group_remove_member(actor=request.user, group=group, user=user)
                    messages.success(request, f"{user.get_username()} removed from {group.name}.")
            else:
                raise ValidationError({"op": ["Unknown action."]})
            return redirect("group", group_id=group.pk)
        except ValidationError as exc:
            for message in _errors(exc):
                messages.error(request, message)
            status = 400
    context = {
        "organization": organization,
        "group": group,
        "members": selectors.group_members(group),
        "candidates": selectors.members_not_in_group(group) if not group.is_everyone else [],
        "can_manage": access.has_perm(request.user, organization, ORGANIZATION_MANAGE),
        "form": form,
        "page": "groups",
    }
    return render(request, "organizations/group.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def group_delete(request: HttpRequest, group_id: int) -> HttpResponse:
    group = _group_for(request, group_id)
    organization = group.organization
    access.require(
        request.user,
        organization,
        ORGANIZATION_MANAGE,
        action="group.delete",
        resource_type="group",
        resource_id=group.pk,
        resource_name=group.name,
    )
    if group.is_everyone:
        messages.error(request, "The Everyone group always holds exactly the current members; it cannot be deleted.")
        return redirect("group", group_id=group.pk)
    return confirm_and_perform(
        request,
        lambda: services.group_delete(actor=request.user, group=group),
        title=f"Delete the group {group.name}?",
        body="Its members stay in the organization but lose whatever was shared with this group.",
        button="Delete group",
        done=f"Group {group.name} deleted.",
        success_url=_org_url("groups", organization),
        cancel_url=reverse("group", args=[group.pk]),
    )


# Custom roles --------------------------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def roles(request: HttpRequest) -> HttpResponse:
    organization = access.organization_for(request.user, request.GET.get("org"), read=ORGANIZATION_READ)
    form = CustomRoleForm(request.POST or None)
    status = 200
    if request.method == "POST":
        access.require(
            request.user, organization, ORGANIZATION_MANAGE, action="role.create", resource_type="custom_role"
        )
        if form.is_valid():
            try:
                services.custom_role_create(
                    actor=request.user,
                    organization=organization,
                    name=form.cleaned_data["name"],
                    perms=form.cleaned_data["permissions"],
                    description=form.cleaned_data["description"],
                )
                messages.success(request, f"Role {form.cleaned_data['name']} created.")
                return redirect(_org_url("roles", organization))
            except ValidationError as exc:
                for message in _errors(exc):
                    form.add_error(None, message)
        status = 400
    context = {
        "organization": organization,
        "picker": _picker(request.user, ORGANIZATION_READ),
        "roles": selectors.custom_roles_of(organization),
        "registry": permissions.REGISTRY,
        "can_manage": access.has_perm(request.user, organization, ORGANIZATION_MANAGE),
        "form": form,
        "page": "roles",
    }
    return render(request, "organizations/roles.html", context, status=status)


def _role_for(request: HttpRequest, role_id: int) -> CustomRole:
    return access.object_for(request.user, CustomRole.objects.all(), read=ORGANIZATION_READ, pk=role_id)


@login_required
@require_http_methods(["GET", "POST"])
def role(request: HttpRequest, role_id: int) -> HttpResponse:
    role = _role_for(request, role_id)
    organization = role.organization
    form = CustomRoleForm(
        request.POST or None,
        initial={"name": role.name, "description": role.description, "permissions": role.permissions},
    )
    status = 200
    if request.method == "POST":
        access.require(
            request.user,
            organization,
            ORGANIZATION_MANAGE,
            action="role.update",
            resource_type="custom_role",
            resource_id=role.pk,
            resource_name=role.name,
        )
        if form.is_valid():
            try:
                services.custom_role_update(
                    actor=request.user,
                    role=role,
                    name=form.cleaned_data["name"],
                    perms=form.cleaned_data["permissions"],
                    description=form.cleaned_data["description"],
                )
                messages.success(request, f"Role {form.cleaned_data['name']} saved.")
                return redirect(_org_url("roles", organization))
            except ValidationError as exc:
                for message in _errors(exc):
                    form.add_error(None, message)
        status = 400
    context = {
        "organization": organization,
        "role": role,
        "form": form,
        "can_manage": access.has_perm(request.user, organization, ORGANIZATION_MANAGE),
        "holders": Membership.objects.filter(custom_roles=role).select_related("user").order_by("user__username"),
        "page": "roles",
    }
    return render(request, "organizations/role.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def role_delete(request: HttpRequest, role_id: int) -> HttpResponse:
    role = _role_for(request, role_id)
    organization = role.organization
    access.require(
        request.user,
        organization,
        ORGANIZATION_MANAGE,
        action="role.delete",
        resource_type="custom_role",
        resource_id=role.pk,
        resource_name=role.name,
    )
    return confirm_and_perform(
        request,
        lambda: services.custom_role_delete(actor=request.user, role=role),
        title=f"Delete the role {role.name}?",
        body="Members who hold it lose the permissions it grants.",
        button="Delete role",
        done=f"Role {role.name} deleted.",
        success_url=_org_url("roles", organization),
        cancel_url=reverse("role", args=[role.pk]),
    )


# Audit log -----------------------------------------------------------------------------------------------------------

ALL_ORGS = "*"


@login_required
@require_GET
def audit_log(request: HttpRequest) -> HttpResponse:
    """The audit log of one organization (``?org=``) or, with ``?org=*``, of every organization the viewer may read
    it in. Filters live in the URL; ``?export=csv`` or ``?export=jsonl`` downloads the filtered events."""
    org_name = request.GET.get("org", "")
    readable = _picker(request.user, "audit_log:read")
    if not readable and not access.is_site_owner(request.user):
        raise Http404("Not found.")
    organization = None
    if org_name != ALL_ORGS:
        organization = access.organization_for(request.user, org_name or None, read="audit_log:read")
    filters = {key: request.GET.get(key, "").strip() for key in selectors.AUDIT_FILTERS}
    events = selectors.audit_events(request.user, organization=organization, filters=filters)

    export = request.GET.get("export")
    if export in {"csv", "jsonl"}:
        return _export(events, export, organization)

    paginator = Paginator(events, AUDIT_PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    unfiltered = selectors.audit_events(request.user, organization=organization, filters={})
    context = {
        "organization": organization,
        "org_value": organization.name if organization else ALL_ORGS,
        "picker": readable,
        "all_orgs": ALL_ORGS,
        "filters": filters,
        "choices": selectors.audit_filter_choices(unfiltered),
        "page_obj": page,
        "page": "audit",
    }
    template = "organizations/audit_log.html"
    if request.htmx and request.htmx.target == "audit-results":
        template += "#audit-results"
    response = render(request, template, context)
    response["Vary"] = "HX-Request"
    return response


def _export(events, kind: str, organization: Organization | None) -> StreamingHttpResponse:
    stem = f"{organization.name if organization else 'all'}-audit-log-{timezone.now():%Y%m%d-%H%M%S}"
    columns = [
        "id",
        "time",
        "organization",
        "actor",
        "action",
        "resource_type",
        "resource_id",
        "resource_name",
        "outcome",
        "ip_address",
        "user_agent",
        "changes",
    ]

    def csv_rows():
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(columns)
        for event in events.iterator(chunk_size=1000):
            record = event.as_record()
            record["changes"] = json.dumps(record["changes"], sort_keys=True)
            # A leading =, +, - or @ would run as a formula in a spreadsheet.
            writer.writerow([_csv_safe(record[c]) for c in columns])
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate(0)
        yield buffer.getvalue()

    def jsonl_rows():
        for event in events.iterator(chunk_size=1000):
            yield json.dumps(event.as_record(), sort_keys=True) + "\n"

    if kind == "csv":
        response = StreamingHttpResponse(csv_rows(), content_type="text/csv; charset=utf-8")
        filename = f"{stem}.csv"
    else:
        response = StreamingHttpResponse(jsonl_rows(), content_type="application/x-ndjson")
        filename = f"{stem}.jsonl"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _csv_safe(value) -> str:
    text = "" if value is None else str(value)
    if text[:1] in {"=", "+", "-", "@", "\t", "\r"}:
        return "'" + text
    return text
