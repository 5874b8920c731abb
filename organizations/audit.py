"""Recording audit events. Each event is written in the caller's transaction (the outbox) and handed to Celery
once that transaction commits; the sweep task delivers whatever a lost message or a dead worker left behind.
"""

from __future__ import annotations

import contextvars
import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from .models import AuditEvent, Organization, Outcome, User

logger = logging.getLogger(__name__)

SECRET_MARK = "(secret changed)"


@dataclass(frozen=True)
class RequestContext:
    ip_address: str | None = None
    user_agent: str = ""


_NO_REQUEST = RequestContext()
_request_context: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "audit_request_context", default=None
)


def set_request_context(context: RequestContext) -> contextvars.Token:
    return _request_context.set(context)


def reset_request_context(token: contextvars.Token) -> None:
    _request_context.reset(token)


def diff(before: dict[str, Any], after: dict[str, Any], *, secret_fields: frozenset[str] = frozenset()) -> dict:
    """The changed fields as ``{field: {"old": …, "new": …}}``; secret fields never carry their values."""
    changes: dict[str, Any] = {}
    for field in sorted(set(before) | set(after)):
        old, new = before.get(field), after.get(field)
        if old == new:
            continue
        if field in secret_fields:
            changes[field] = {"old": None, "new": SECRET_MARK}
        else:
            changes[field] = {"old": old, "new": new}
    return changes


def record(
    *,
    actor: User | None,
    organization: Organization | None,
    action: str,
    resource_type: str,
    resource_id: Any = "",
    resource_name: str = "",
    changes: dict | None = None,
    outcome: str = Outcome.SUCCESS,
) -> AuditEvent:
    """Write one audit event in the current transaction and enqueue its delivery for after commit.

    Call it inside the same ``transaction.atomic()`` block as the change it records, so that both commit or
    neither does. A rolled-back change leaves no event.
    """
    context = _request_context.get() or _NO_REQUEST
    actor_obj = actor if actor is not None and actor.is_authenticated else None
    event = AuditEvent.objects.create(
        organization=organization,
        organization_name=organization.name if organization else "",
        actor=actor_obj,
        actor_username=actor_obj.get_username() if actor_obj else "",
        action=action,
        resource_type=resource_type,
        resource_id=str(resource_id or ""),
        resource_name=str(resource_name or "")[:256],
        changes=changes or {},
        outcome=outcome,
        ip_address=context.ip_address,
        user_agent=context.user_agent[:512],
    )
    event_id = event.pk
    transaction.on_commit(lambda: enqueue_delivery(event_id), robust=True)
    return event


def enqueue_delivery(event_id: int) -> None:
    """Hand an event to Celery. If the broker is unreachable the event stays in the outbox for the sweep."""
    from .tasks import deliver_audit_event_task

    try:
        deliver_audit_event_task.delay(event_id)
    except Exception:  # the broker may be down; whatever the cause, the sweep delivers later
        logger.warning("audit event %s not enqueued; the sweep will deliver it", event_id, exc_info=True)


def record_denied(
    *,
    actor: User | None,
    organization: Organization | None,
    action: str,
    resource_type: str,
    resource_id: Any = "",
    resource_name: str = "",
) -> AuditEvent:
    """Audit a refused attempt. Access checks run before a view opens its transaction, so this commits at once."""
    with transaction.atomic():
        return record(
            actor=actor,
            organization=organization,
            action=action,
            resource_type=resource_type,
            resource_id=resource_id,
            resource_name=resource_name,
            outcome=Outcome.DENIED,
        )
