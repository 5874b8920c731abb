"""The chats API at the documented paths: ``/api/v2/chats`` (create, list), ``/{chat}`` (get, PATCH title),
``/{chat}/messages`` (list, send), ``PUT /{chat}/context`` (Refresh context), ``POST /{chat}/interrupt`` (Stop).
A chat is its owner's alone: anyone else gets 404."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest
from ninja import Router, Schema, Status

from organizations import access
from workspaces.models import Workspace

from . import services
from .models import Chat, Turn, TurnStatus

router = Router(tags=["chats"])


class ChatIn(Schema):
    organization: str
    workspace_id: int | None = None
    provider: str = ""
    model: str = ""


class ChatPatch(Schema):
    title: str


class ChatOut(Schema):
    id: int
    title: str
    organization: str
    workspace_id: int | None
    provider: str
    model: str
    pinned_snapshot_version: int | None
    out_of_date: bool
    running: bool
    created_at: datetime
    updated_at: datetime


class ToolCallOut(Schema):
    id: str
    name: str
    arguments: dict
    result: str
    is_error: bool
    label: str


class MessageOut(Schema):
    id: int
    role: str
    content: str
    tool_call_id: str
    tool_calls: list[ToolCallOut]
    created_at: datetime


class MessageIn(Schema):
    content: str


class SendOut(Schema):
    turn_id: int
    status: str


class InterruptOut(Schema):
    interrupted: bool


class Error(Schema):
    message: str
    detail: str
    validations: list[dict]


def _chat(request: HttpRequest, chat_id: int) -> Chat:
    chat = Chat.objects.select_related("organization", "pinned_snapshot").filter(pk=chat_id, owner=request.user).first()
    if chat is None or not access.is_member(request.user, chat.organization):
        raise Http404("Not found.")
    return chat


def _running(chat: Chat) -> bool:
    annotated = getattr(chat, "is_running", None)
    if annotated is not None:
        return annotated
    return Turn.objects.filter(chat=chat, status__in=[TurnStatus.QUEUED, TurnStatus.RUNNING]).exists()


def _out(chat: Chat) -> dict:
    return {
        "id": chat.pk,
        "title": chat.title,
        "organization": chat.organization.name,
        "workspace_id": chat.workspace_id,
        "provider": chat.provider,
        "model": chat.model,
        "pinned_snapshot_version": chat.pinned_snapshot.version if chat.pinned_snapshot else None,
        "out_of_date": chat.out_of_date,
        "running": _running(chat),
        "created_at": chat.created_at,
        "updated_at": chat.updated_at,
    }


@router.get("/chats", response=list[ChatOut])
def chat_list(request: HttpRequest):
    active = Turn.objects.filter(chat=OuterRef("pk"), status__in=[TurnStatus.QUEUED, TurnStatus.RUNNING])
    chats = (
        Chat.objects.filter(owner=request.user)
        .select_related("organization", "pinned_snapshot")
        .annotate(is_running=Exists(active))
    )
    return [_out(c) for c in chats if access.is_member(request.user, c.organization)]


@router.post("/chats", response={201: ChatOut, 400: Error})
def chat_create(request: HttpRequest, payload: ChatIn):
    organization = access.visible_organization(request.user, payload.organization)
    workspace = None
    if payload.workspace_id is not None:
        workspace = Workspace.objects.filter(pk=payload.workspace_id, owner=request.user).first()
        if workspace is None:
            raise ValidationError({"workspace_id": ["Choose one of your workspaces."]})
    try:
        chat = services.chat_create(
            owner=request.user,
            organization=organization,
            workspace=workspace,
            provider=payload.provider,
            model=payload.model,
        )
    except ValidationError as exc:
        # The API names the field workspace_id.
        raise ValidationError(
            {("workspace_id" if f == "workspace" else f): m for f, m in exc.message_dict.items()}
        ) from None
    return Status(201, _out(chat))


@router.get("/chats/{chat_id}", response=ChatOut)
def chat_detail(request: HttpRequest, chat_id: int):
    return _out(_chat(request, chat_id))


@router.patch("/chats/{chat_id}", response={200: ChatOut, 400: Error})
def chat_update(request: HttpRequest, chat_id: int, payload: ChatPatch):
    chat = services.chat_rename(chat=_chat(request, chat_id), actor=request.user, title=payload.title)
    return Status(200, _out(chat))


@router.get("/chats/{chat_id}/messages", response=list[MessageOut])
def message_list(request: HttpRequest, chat_id: int):
    chat = _chat(request, chat_id)
    return [
        {
            "id": m.pk,
            "role": m.role,
            "content": m.content,
            "tool_call_id": m.tool_call_id,
            "tool_calls": [
                {
                    "id": c.call_id,
                    "name": c.name,
                    "arguments": c.arguments,
                    "result": c.result,
                    "is_error": c.is_error,
                    "label": c.label,
                }
                for c in m.tool_calls.all()
            ],
            "created_at": m.created_at,
        }
        for m in chat.messages.prefetch_related("tool_calls").order_by("created_at", "id")
    ]


@router.post("/chats/{chat_id}/messages", response={201: SendOut, 400: Error, 409: Error})
def message_send(request: HttpRequest, chat_id: int, payload: MessageIn):
    chat = _chat(request, chat_id)
    try:
        turn = services.message_send(chat=chat, content=payload.content)
    except services.ChatError as exc:
        return Status(exc.status, {"message": exc.message, "detail": exc.detail, "validations": []})
    turn.refresh_from_db()
    return Status(201, {"turn_id": turn.pk, "status": turn.status})


@router.put("/chats/{chat_id}/context", response=ChatOut)
def context_refresh(request: HttpRequest, chat_id: int):
    chat = services.context_refresh(chat=_chat(request, chat_id), actor=request.user)
    return _out(chat)


@router.post("/chats/{chat_id}/interrupt", response=InterruptOut)
def interrupt(request: HttpRequest, chat_id: int):
    return {"interrupted": services.turn_interrupt(chat=_chat(request, chat_id), actor=request.user)}
