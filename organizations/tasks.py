"""Celery adapters for the audit outbox. They take ids and call ``organizations.delivery``."""

from __future__ import annotations

from celery import shared_task

from . import delivery


@shared_task(
    bind=True,
    acks_late=True,
    autoretry_for=(delivery.SinkError,),
    retry_backoff=2,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=8,
)
def deliver_audit_event_task(self, event_id: int) -> None:
    delivery.deliver_events([event_id])


@shared_task
def sweep_audit_outbox_task() -> int:
    """Deliver every event left undelivered (broker down at commit time, worker died, retries exhausted)."""
    return delivery.sweep()
