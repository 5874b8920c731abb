"""Agents pages: the chat list with New chat, one chat (transcript, composer, Stop, Refresh context), the `/` menu's
skills endpoint, and Admin settings → Providers. Chats belong to their owner: anyone else gets 404."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from organizations import access, audit
from workspaces.models import Workspace

from . import providers, services
from .context import build_context
from .models import Chat, ProviderConfig, Turn, TurnStatus


def chat_for(request: HttpRequest, chat_id: int) -> Chat:
    """Ownership is part of the query: another person's chat is as good as missing (404), site owners included."""
    chat = (
        Chat.objects.select_related("organization", "workspace", "pinned_snapshot", "owner")
        .filter(pk=chat_id, owner=request.user)
        .first()
    )
    if chat is None or not access.is_member(request.user, chat.organization):
        raise Http404("Not found.")
    return chat


def _new_chat_context(request: HttpRequest) -> dict:
    organizations = [
        o for o in access.orgs_visible_to(request.user).order_by("name") if access.is_member(request.user, o)
    ]
    workspaces = Workspace.objects.filter(owner=request.user, organization__in=organizations).select_related(
        "organization"
    )
    return {"organizations": organizations, "workspaces": list(workspaces), "providers": providers.choices()}


@login_required
@require_GET
def agents(request: HttpRequest) -> HttpResponse:
    chats = Chat.objects.filter(owner=request.user).select_related("organization", "workspace")
    return render(request, "chats/agents.html", {"chats": chats, **_new_chat_context(request)})


@login_required
@require_POST
def chat_new(request: HttpRequest) -> HttpResponse:
    options = _new_chat_context(request)
    organization = next((o for o in options["organizations"] if o.name == request.POST.get("organization")), None)
    workspace_id = request.POST.get("workspace") or ""
    workspace = next((w for w in options["workspaces"] if str(w.pk) == workspace_id), None)
    try:
        if organization is None:
            raise ValidationError({"organization": ["Choose one of your organizations."]})
        if workspace_id and workspace is None:
            raise ValidationError({"workspace": ["Choose one of your workspaces."]})
        chat = services.chat_create(
            owner=request.user,
            organization=organization,
            workspace=workspace,
            provider=request.POST.get("provider", providers.DEMO),
            model=request.POST.get("model", ""),
        )
    except ValidationError as exc:
        for errors in exc.message_dict.values():
            for error in errors:
                messages.error(request, error)
        return redirect("agents")
    return redirect("chat", chat_id=chat.pk)


SELECTED_NOTES = {"not_connected": "not connected", "needs_reconnect": "needs reconnect"}


def _live_context(chat: Chat) -> dict:
    active = Turn.objects.filter(chat=chat, status__in=[TurnStatus.QUEUED, TurnStatus.RUNNING]).first()
    transcript = list(chat.messages.prefetch_related("tool_calls").order_by("created_at", "id"))
    last_turn = Turn.objects.filter(chat=chat).order_by("-created_at", "-id").first()
    note = ""
    if chat.workspace_id and chat.pinned_snapshot_id is None:
        note = "The workspace is still starting: its skills appear once its agent has pushed a snapshot."
    from .mcp import picker

    rows = picker(chat)
    return {
        "chat": chat,
        "mcp_rows": rows,
        # (name, note): a selected OAuth2 server the owner has not connected is skipped until they connect.
        "mcp_selected": [
            (row.server.display_name, SELECTED_NOTES.get(row.connection, "")) for row in rows if row.selected
        ],
        "messages_list": [m for m in transcript if m.role != "tool"],
        "active_turn": active,
        "last_turn": last_turn,
        "workspace_note": note,
        "provider_label": providers.DEMO_LABEL if chat.provider == providers.DEMO else chat.provider,
    }


@login_required
@require_GET
def chat(request: HttpRequest, chat_id: int) -> HttpResponse:
    chat = chat_for(request, chat_id)
    template = "chats/chat.html"
    if request.htmx and request.htmx.target == "chat-live":
        template += "#chat-live"
    return render(request, template, _live_context(chat))


@login_required
@require_POST
def chat_send(request: HttpRequest, chat_id: int) -> HttpResponse:
    chat = chat_for(request, chat_id)
    try:
        services.message_send(chat=chat, content=request.POST.get("content", ""))
    except services.ChatError as exc:
        messages.error(request, f"{exc.message} {exc.detail}".strip())
        if request.htmx:
            # htmx swaps no 4xx answer: refuse with 200, the unchanged chat and the error in #messages (out of band),
            # and keep what the user typed (HX-Trigger tells the composer not to clear).
            context = _live_context(chat) | {"oob_messages": True}
            response = render(request, "chats/chat.html#chat-live", context)
            response["HX-Trigger"] = "chat-send-refused"
            return response
    if request.htmx:
        return render(request, "chats/chat.html#chat-live", _live_context(chat_for(request, chat_id)))
    return redirect("chat", chat_id=chat.pk)


@login_required
@require_POST
def chat_interrupt(request: HttpRequest, chat_id: int) -> HttpResponse:
    chat = chat_for(request, chat_id)
    services.turn_interrupt(chat=chat, actor=request.user)
    if request.htmx:
        return render(request, "chats/chat.html#chat-live", _live_context(chat))
    return redirect("chat", chat_id=chat.pk)


@login_required
@require_POST
def chat_refresh(request: HttpRequest, chat_id: int) -> HttpResponse:
    chat = chat_for(request, chat_id)
    chat = services.context_refresh(chat=chat, actor=request.user)
    if request.htmx:
        return render(request, "chats/chat.html#chat-live", _live_context(chat_for(request, chat_id)))
    messages.success(request, "Context refreshed: this chat now uses the workspace's latest files.")
    return redirect("chat", chat_id=chat.pk)


@login_required
@require_POST
def chat_mcp_servers(request: HttpRequest, chat_id: int) -> HttpResponse:
    """Save the chat's MCP server picker."""
    from .mcp import set_selection

    chat = chat_for(request, chat_id)
    ids = {int(v) for v in request.POST.getlist("servers") if v.isdigit()}
    set_selection(chat=chat, server_ids=ids)
    messages.success(request, "Tools for this chat saved.")
    if request.htmx:
        return render(request, "chats/chat.html#mcp-tools", _live_context(chat) | {"oob_messages": True})
    return redirect("chat", chat_id=chat.pk)


@login_required
@require_GET
def chat_skills(request: HttpRequest, chat_id: int) -> JsonResponse:
    """The `/` menu: the skills this chat can use right now, grouped by source, with their aliases."""
    chat = chat_for(request, chat_id)
    context = build_context(chat)
    groups = [
        {
            "source": source,
            "label": label,
            "items": [
                {"alias": alias, "name": entry.name, "description": entry.description[:300]} for alias, entry in items
            ],
        }
        for source, label, items in context.grouped()
    ]
    return JsonResponse({"groups": groups, "workspace_note": context.workspace_note})


# Admin settings → Providers ----------------------------------------------------------------------------------------


def _site_owner_only(request: HttpRequest, action: str) -> None:
    if access.is_site_owner(request.user):
        return
    if not access.orgs_with_perm(request.user, "organization:read").exists():
        raise Http404("Not found.")
    audit.record_denied(actor=request.user, organization=None, action=action, resource_type="provider")
    raise PermissionDenied("Only site owners can configure model providers.")


@login_required
@require_http_methods(["GET", "POST"])
def providers_page(request: HttpRequest) -> HttpResponse:
    _site_owner_only(request, "provider.read" if request.method == "GET" else "provider.update")
    status = 200
    errors: list[str] = []
    if request.method == "POST":
        key = request.POST.get("api_key")
        try:
            services.provider_save(
                actor=request.user,
                name=request.POST.get("name", "").strip(),
                display_name=request.POST.get("display_name", "").strip(),
                base_url=request.POST.get("base_url", "").strip(),
                default_model=request.POST.get("default_model", "").strip(),
                # Blank keeps the stored key; the "clear" box removes it.
                api_key="" if request.POST.get("clear_api_key") else (key or None),
                enabled=bool(request.POST.get("enabled")),
            )
            messages.success(request, "Provider saved.")
            return redirect("providers")
        except ValidationError as exc:
            errors = [f"{f.replace('_', ' ')}: {m}" for f, ms in exc.message_dict.items() for m in ms]
            status = 400
    configs = ProviderConfig.objects.order_by("name")
    return render(
        request,
        "chats/providers.html",
        {"configs": configs, "errors": errors, "form_data": request.POST, "page": "providers"},
        status=status,
    )
