"""One turn of the agent loop: step = build context → call the provider → run the tools it asked for.

Context is built again at every step, so a skill enabled, disabled or unshared meanwhile counts from the next step.
The loop stops when the model answers without tool calls, at the step limit, or when Stop was pressed.
"""

from __future__ import annotations

import json
import logging
import time

from django.conf import settings
from django.utils import timezone

from . import pinning
from .context import ChatContext, build_context
from .models import Message, Role, ToolCall, Turn, TurnStatus
from .providers import ProviderError, provider_for
from .tools import registry_for

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are the Switchboard agent. Answer the user's request. When a listed skill fits the request, read it with "
    "read_skill before acting, and follow its instructions."
)


def system_prompt(context: ChatContext) -> str:
    parts = [SYSTEM_PROMPT]
    if context.workspace_note:
        parts.append(context.workspace_note)
    catalog = context.catalog()
    if catalog:
        parts.append(catalog)
    return "\n\n".join(parts)


def transcript(chat, context: ChatContext) -> list[dict]:
    """The conversation in Chat Completions form, with the system prompt of this step."""
    messages: list[dict] = [{"role": "system", "content": system_prompt(context)}]
    for message in chat.messages.prefetch_related("tool_calls").order_by("created_at", "id"):
        if message.role == Role.USER:
            messages.append({"role": "user", "content": message.content})
        elif message.role == Role.ASSISTANT:
            entry: dict = {"role": "assistant", "content": message.content or None}
            calls = list(message.tool_calls.all())
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": call.call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in calls
                ]
            messages.append(entry)
        elif message.role == Role.TOOL:
            messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
    return messages


def _wait_for_discovery(chat):
    """A chat whose workspace is still starting waits up to WORKSPACE_DISCOVERY_WAIT seconds for the first snapshot
    (pinned by the push itself), then goes on without workspace skills."""
    if not chat.workspace_id or chat.pinned_snapshot_id is not None:
        return chat
    deadline = time.monotonic() + settings.WORKSPACE_DISCOVERY_WAIT
    while time.monotonic() < deadline:
        chat.refresh_from_db(fields=["pinned_snapshot"])
        if chat.pinned_snapshot_id is not None:
            break
        chat.workspace.refresh_from_db(fields=["status"])
        if chat.workspace.status != "starting":
            break
        time.sleep(0.25)
    return chat


def _interrupted(turn: Turn) -> bool:
    return Turn.objects.filter(pk=turn.pk, interrupt_requested=True).exists()


def _finish(turn: Turn, status: str, error: str = "") -> None:
    """End the turn, unless Stop already ended it (Stop wins over whatever the loop was finishing)."""
    Turn.objects.filter(pk=turn.pk, status__in=[TurnStatus.QUEUED, TurnStatus.RUNNING]).update(
        status=status, error=error, finished_at=timezone.now(), steps=turn.steps
    )
    turn.refresh_from_db(fields=["status", "error", "finished_at"])


def run_turn(turn_id: int) -> str:
    """Run a queued turn to its end. Returns the final status. Safe to call twice: a finished turn is left alone."""
    turn = Turn.objects.select_related("chat").filter(pk=turn_id).first()
    if turn is None or turn.status not in {TurnStatus.QUEUED, TurnStatus.RUNNING}:
        return turn.status if turn else "missing"
    Turn.objects.filter(pk=turn.pk).update(status=TurnStatus.RUNNING)
    turn.status = TurnStatus.RUNNING
    chat = pinning.hydrate(turn.chat)
    chat = _wait_for_discovery(chat)
    try:
        provider = provider_for(chat.provider)
    except ProviderError as exc:
        Message.objects.create(chat=chat, turn=turn, role=Role.ASSISTANT, content=f"Could not start: {exc}.")
        _finish(turn, TurnStatus.FAILED, str(exc))
        return turn.status
    try:
        return _steps(turn, chat, provider)
    except Exception:
        # Whatever went wrong, the turn must end: a turn left "running" would block the chat for good.
        logger.exception("turn %s failed", turn.pk)
        Message.objects.create(
            chat=chat, turn=turn, role=Role.ASSISTANT, content="The turn failed because of an internal error."
        )
        _finish(turn, TurnStatus.FAILED, "internal error")
        return turn.status


def _steps(turn: Turn, chat, provider) -> str:
    for _ in range(settings.CHAT_MAX_STEPS):
        if _interrupted(turn):
            _finish(turn, TurnStatus.STOPPED)
            return turn.status
        chat.refresh_from_db()
        context = build_context(chat)
        registry = registry_for(chat, context)
        try:
            reply = provider.complete(messages=transcript(chat, context), tools=registry.specs(), model=chat.model)
        except ProviderError as exc:
            Message.objects.create(chat=chat, turn=turn, role=Role.ASSISTANT, content=f"The model failed: {exc}.")
            _finish(turn, TurnStatus.FAILED, str(exc))
            return turn.status
        turn.steps += 1
        Turn.objects.filter(pk=turn.pk).update(steps=turn.steps)
        message = Message.objects.create(chat=chat, turn=turn, role=Role.ASSISTANT, content=reply.content)
        calls = [
            ToolCall.objects.create(
                message=message,
                call_id=str(call.id)[:128],
                name=str(call.name)[:200],
                arguments=call.arguments,
                label=(registry.tools[call.name].label(call.arguments) if call.name in registry.tools else "")[:300],
            )
            for call in reply.tool_calls
        ]
        if not calls:
            _finish(turn, TurnStatus.DONE)
            return turn.status
        for call in calls:
            if _interrupted(turn):
                result_text, is_error = "stopped before it ran", True
            else:
                result = registry.call(call.name, call.arguments, call.call_id)
                result_text, is_error = result.content, result.is_error
            call.result, call.is_error, call.finished_at = result_text, is_error, timezone.now()
            call.save(update_fields=["result", "is_error", "finished_at"])
            Message.objects.create(chat=chat, turn=turn, role=Role.TOOL, tool_call_id=call.call_id, content=result_text)
    Message.objects.create(
        chat=chat,
        turn=turn,
        role=Role.ASSISTANT,
        content=f"Stopped after {settings.CHAT_MAX_STEPS} steps, the limit for one turn. Send a message to go on.",
    )
    _finish(turn, TurnStatus.STOPPED, "step limit reached")
    return turn.status
