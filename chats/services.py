"""Every write to chats: create, send a message (which queues a turn), Stop, Refresh context, provider settings.
Each records its audit event (never message text or keys) in the same transaction."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from organizations import audit
from organizations.models import Membership, Organization, User
from workspaces.models import Workspace

from . import pinning, providers
from .models import Chat, Message, ProviderConfig, Role, Turn, TurnStatus

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 32_000


@dataclass
class ChatError(Exception):
    status: int
    message: str
    detail: str = ""

    def __str__(self) -> str:
        return self.message


def _record(actor, chat: Chat, action: str, changes: dict | None = None) -> None:
    audit.record(
        actor=actor,
        organization=chat.organization,
        action=f"chat.{action}",
        resource_type="chat",
        resource_id=chat.pk,
        resource_name=chat.title[:256],
        changes=changes or {},
    )


def chat_create(
    *, owner: User, organization: Organization, workspace: Workspace | None = None, provider: str = "", model: str = ""
) -> Chat:
    if not Membership.objects.filter(organization=organization, user=owner).exists():
        raise ValidationError({"organization": ["Choose one of your organizations."]})
    if workspace is not None and (workspace.owner_id != owner.pk or workspace.organization_id != organization.pk):
        raise ValidationError({"workspace": ["Choose one of your workspaces in this organization."]})
    provider = provider or providers.DEMO
    if provider not in dict(providers.choices()):
        raise ValidationError({"provider": ["Choose a configured model provider."]})
    with transaction.atomic():
        chat = Chat.objects.create(
            owner=owner, organization=organization, workspace=workspace, provider=provider, model=model.strip()[:200]
        )
        if workspace is not None:
            # Until its first turn the chat follows the workspace's newest snapshot.
            from workspaces.selectors import latest_snapshot

            chat.pinned_snapshot = latest_snapshot(workspace)
            chat.save(update_fields=["pinned_snapshot"])
        from .mcp import select_defaults

        select_defaults(chat)
        _record(owner, chat, "create", {"workspace": {"old": None, "new": workspace.name if workspace else None}})
    return chat


def chat_rename(*, chat: Chat, actor: User, title: str) -> Chat:
    title = title.strip()
    if not title or len(title) > 200:
        raise ValidationError({"title": ["Use 1 to 200 characters."]})
    with transaction.atomic():
        before = chat.title
        chat.title, chat.updated_at = title, timezone.now()
        chat.save(update_fields=["title", "updated_at"])
        _record(actor, chat, "rename", {"title": {"old": before, "new": title}})
    return chat


def message_send(*, chat: Chat, content: str) -> Turn:
    """Store the user's message and queue a turn for it (run by Celery once this commits)."""
    content = content.strip()
    if not content:
        raise ChatError(400, "Message is required.", "Type something to send.")
    if len(content) > MAX_MESSAGE_CHARS:
        raise ChatError(400, "Message is too long.", f"A message can be at most {MAX_MESSAGE_CHARS} characters.")
    with transaction.atomic():
        chat = Chat.objects.select_for_update().get(pk=chat.pk)
        if Turn.objects.filter(chat=chat, status__in=[TurnStatus.QUEUED, TurnStatus.RUNNING]).exists():
            raise ChatError(409, "The agent is still working on the last message.", "Wait for it, or press Stop.")
        turn = Turn.objects.create(chat=chat)
        Message.objects.create(chat=chat, turn=turn, role=Role.USER, content=content)
        fields = ["updated_at"]
        chat.updated_at = timezone.now()
        if chat.title == "New chat":
            chat.title = content.splitlines()[0][:80]
            fields.append("title")
        chat.save(update_fields=fields)
        _record(chat.owner, chat, "message", {"turn": {"old": None, "new": turn.pk}})
        turn_id = turn.pk
        transaction.on_commit(lambda: _enqueue(turn_id), robust=True)
    return turn


def _enqueue(turn_id: int) -> None:
    from .tasks import run_turn_task

    try:
        run_turn_task.delay(turn_id)
    except Exception:
        logger.warning("turn %s not enqueued; marked failed", turn_id, exc_info=True)
        Turn.objects.filter(pk=turn_id, status=TurnStatus.QUEUED).update(
            status=TurnStatus.FAILED, error="the task queue could not be reached", finished_at=timezone.now()
        )


def turn_interrupt(*, chat: Chat, actor: User) -> bool:
    """Stop: the turn is marked stopped at once (so a turn whose worker died cannot block the chat); a loop still
    running sees the request before its next step or tool call and ends. False when nothing was running."""
    with transaction.atomic():
        stopped = Turn.objects.filter(chat=chat, status__in=[TurnStatus.QUEUED, TurnStatus.RUNNING]).update(
            interrupt_requested=True, status=TurnStatus.STOPPED, finished_at=timezone.now()
        )
        if stopped:
            _record(actor, chat, "interrupt")
    return bool(stopped)


def context_refresh(*, chat: Chat, actor: User) -> Chat:
    """Refresh context: re-pin the chat to its workspace's newest snapshot."""
    before = chat.pinned_snapshot.version if chat.pinned_snapshot else None
    with transaction.atomic():
        chat = pinning.refresh(chat)
        after = chat.pinned_snapshot.version if chat.pinned_snapshot else None
        _record(actor, chat, "refresh_context", {"snapshot_version": {"old": before, "new": after}})
    return chat


def provider_save(
    *,
    actor: User,
    name: str,
    base_url: str,
    default_model: str,
    api_key: str | None,
    display_name: str = "",
    enabled: bool = True,
) -> ProviderConfig:
    """Create or update an OpenAI-compatible provider. ``api_key`` None keeps the stored key, "" clears it."""
    if name == providers.DEMO:
        raise ValidationError({"name": ["demo is the built-in provider; choose another name."]})
    with transaction.atomic():
        config = ProviderConfig.objects.filter(name=name).first()
        created = config is None
        config = config or ProviderConfig(name=name)
        before = {"base_url": config.base_url, "default_model": config.default_model, "enabled": config.enabled}
        config.display_name, config.base_url, config.default_model, config.enabled = (
            display_name,
            base_url,
            default_model,
            enabled,
        )
        secret_changed = api_key is not None and api_key != (config.api_key or "")
        if api_key is not None:
            config.api_key = api_key
        config.full_clean()
        config.save()
        changes = audit.diff(before, {"base_url": base_url, "default_model": default_model, "enabled": enabled})
        if secret_changed:
            changes["api_key"] = {"old": None, "new": audit.SECRET_MARK}
        audit.record(
            actor=actor,
            organization=None,
            action="provider.create" if created else "provider.update",
            resource_type="provider",
            resource_id=config.pk,
            resource_name=name,
            changes=changes,
        )
    return config
