"""Workspace pages: the list (with create), and one workspace's status, inventory and caps, live while the agent
pushes (HTMX polling of the ``#workspace-live`` partial)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from organizations import access
from organizations.views_common import confirm_and_perform

from . import scanner, selectors, services
from .forms import WorkspaceForm
from .models import Workspace


def _agent_command(token: str) -> str:
    return f"python -m workspaces.agent --url {settings.SITE_URL} --token {token} --dir /path/to/your/project"


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"  # the page may carry a token shown once
    return response


@login_required
@require_http_methods(["GET", "POST"])
def workspaces(request: HttpRequest) -> HttpResponse:
    organizations = list(access.orgs_visible_to(request.user).order_by("name"))
    form = WorkspaceForm(request.POST or None, organizations=organizations)
    created = token = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            organization = next(o for o in organizations if o.name == form.cleaned_data["organization"])
            try:
                created, token = services.workspace_create(
                    actor=request.user, organization=organization, name=form.cleaned_data["name"]
                )
                form = WorkspaceForm(organizations=organizations)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    for error in errors:
                        form.add_error(None, f"{field.capitalize()}: {error}")
                status = 400
        else:
            status = 400
    context = {
        "workspaces": selectors.workspaces_visible_to(request.user),
        "form": form,
        "organizations": organizations,
        "created": created,
        "token": token,
        "command": _agent_command(token) if token else "",
    }
    return _no_store(render(request, "workspaces/list.html", context, status=status))


def _live_context(workspace: Workspace) -> dict:
    snapshot = selectors.latest_snapshot(workspace)
    return {
        "workspace": workspace,
        "snapshot": snapshot,
        "resources": list(selectors.snapshot_resources(snapshot)),
        "max_resources": scanner.MAX_RESOURCES,
        "max_bytes": scanner.MAX_SNAPSHOT_BYTES,
        "reachable": services.is_reachable(workspace),
    }


@login_required
@require_GET
def workspace(request: HttpRequest, workspace_id: int) -> HttpResponse:
    ws = access.owned_object_for(request.user, Workspace.objects.select_related("owner"), pk=workspace_id)
    perms = access.org_permissions(request.user, ws.organization)
    can_change = ws.owner_id == request.user.pk or "organization:manage" in perms
    template = "workspaces/detail.html"
    if request.htmx and request.htmx.target == "workspace-live":
        template += "#workspace-live"
    return render(request, template, _live_context(ws) | {"can_change": can_change})


@login_required
@require_http_methods(["GET", "POST"])
def workspace_rotate_token(request: HttpRequest, workspace_id: int) -> HttpResponse:
    ws = access.owned_object_for(
        request.user,
        Workspace.objects.select_related("owner"),
        change=True,
        action="workspace.rotate_token",
        resource_type="workspace",
        pk=workspace_id,
    )
    if request.method == "POST":
        token = services.workspace_rotate_token(actor=request.user, workspace=ws)
        context = _live_context(ws) | {"can_change": True, "token": token, "command": _agent_command(token)}
        return _no_store(render(request, "workspaces/detail.html", context))
    return render(
        request,
        "organizations/confirm.html",
        {
            "title": f"Make a new agent token for {ws.name}?",
            "body": "The running agent stops being able to push until it is restarted with the new token.",
            "action": "Make a new token",
            "cancel_url": reverse("workspace", args=[ws.pk]),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def workspace_delete(request: HttpRequest, workspace_id: int) -> HttpResponse:
    ws = access.owned_object_for(
        request.user,
        Workspace.objects.select_related("owner"),
        change=True,
        action="workspace.delete",
        resource_type="workspace",
        pk=workspace_id,
    )
    return confirm_and_perform(
        request,
        lambda: services.workspace_delete(actor=request.user, workspace=ws),
        title=f"Delete the workspace {ws.name}?",
        body="Its snapshots are deleted and its agent token stops working. The files on disk are not touched.",
        button="Delete workspace",
        done=f"Workspace {ws.name} deleted.",
        success_url=reverse("workspaces"),
        cancel_url=reverse("workspace", args=[ws.pk]),
    )
