"""Which snapshot a workspace-attached chat sees.

Before its first turn (hydration) a chat follows every new snapshot. From then on its pin only moves when the user
presses Refresh context; a newer snapshot whose instructions or skills differ from the pin marks the chat out of
date, and one that changes only MCP entries does not.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from workspaces.models import ContextSnapshot
from workspaces.selectors import latest_snapshot

from .models import Chat


def on_snapshot_pushed(sender, workspace, snapshot: ContextSnapshot, **kwargs) -> None:
    """Chats that have not pinned yet (not hydrated, or hydrated while the workspace was starting) pin the new
    snapshot at once; the others are marked out of date when their pin's context differs from it."""
    Chat.objects.filter(workspace=workspace).filter(
        Q(hydrated_at__isnull=True) | Q(pinned_snapshot__isnull=True)
    ).update(pinned_snapshot=snapshot, out_of_date=False)
    hydrated = Chat.objects.filter(
        workspace=workspace, hydrated_at__isnull=False, pinned_snapshot__isnull=False
    ).select_related("pinned_snapshot")
    stale, fresh = [], []
    for chat in hydrated.only("id", "pinned_snapshot__context_hash"):
        pinned_hash = chat.pinned_snapshot.context_hash if chat.pinned_snapshot else None
        (stale if pinned_hash != snapshot.context_hash else fresh).append(chat.pk)
    if stale:
        Chat.objects.filter(pk__in=stale).update(out_of_date=True)
    if fresh:
        Chat.objects.filter(pk__in=fresh).update(out_of_date=False)


def hydrate(chat: Chat) -> Chat:
    """Pin the latest snapshot at the chat's first turn (no snapshot yet: the chat stays empty until one lands)."""
    if chat.hydrated_at is not None:
        return chat
    with transaction.atomic():
        chat = Chat.objects.select_for_update().get(pk=chat.pk)
        if chat.hydrated_at is None:
            chat.hydrated_at = timezone.now()
            if chat.workspace_id:
                chat.pinned_snapshot = latest_snapshot(chat.workspace)
            chat.save(update_fields=["hydrated_at", "pinned_snapshot"])
    return chat


def refresh(chat: Chat) -> Chat:
    """Refresh context: re-pin to the workspace's latest snapshot."""
    with transaction.atomic():
        chat = Chat.objects.select_for_update().get(pk=chat.pk)
        chat.pinned_snapshot = latest_snapshot(chat.workspace) if chat.workspace_id else None
        chat.out_of_date = False
        chat.save(update_fields=["pinned_snapshot", "out_of_date"])
    return chat
