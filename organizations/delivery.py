"""Delivering audit events from the outbox (AuditEvent rows with ``delivered_at`` unset) to the optional sink.

Delivery is at least once. An attempt first *claims* an event with a short conditional UPDATE that sets a lease,
calls the sink outside any transaction (so no database lock is held while the sink answers), and then marks the
event delivered. A worker that dies mid-delivery leaves the event undelivered; once its lease expires the next
attempt or the sweep delivers it. Events are delivered one at a time, so an event the sink keeps refusing never
holds back the others. Sinks receive the event id and can drop duplicates by it.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import requests
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from .models import AuditEvent

logger = logging.getLogger(__name__)

SWEEP_BATCH = 500


class SinkError(Exception):
    """The sink did not accept an event; delivery will be retried. Never carries a response body."""


def write_to_sink(record: dict) -> None:
    """Write one record to ``AUDIT_SINK_URL``: file://…jsonl appends a JSON line; http(s):// POSTs it as JSON.

    Only a 2xx answer counts: redirects are not followed (a redirected POST would arrive as a bodiless GET)."""
    url = settings.AUDIT_SINK_URL
    if not url:
        return
    parts = urlsplit(url)
    if parts.scheme == "file":
        path = Path(url2pathname(unquote(parts.path)))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as sink:
                sink.write(json.dumps(record, sort_keys=True) + "\n")
        except OSError as exc:
            raise SinkError(f"audit sink file not writable: {exc.strerror}") from None
    elif parts.scheme in {"http", "https"}:
        try:
            response = requests.post(url, json=record, timeout=settings.AUDIT_SINK_TIMEOUT, allow_redirects=False)
        except requests.RequestException as exc:
            raise SinkError(f"audit sink unreachable: {type(exc).__name__}") from None
        if not 200 <= response.status_code < 300:
            raise SinkError(f"audit sink answered {response.status_code}")
    else:
        raise SinkError(f"unsupported AUDIT_SINK_URL scheme {parts.scheme!r}")


def _claim(event_id: int) -> bool:
    """Take the delivery lease of an undelivered event nobody else holds. One UPDATE, atomic on every database."""
    now = timezone.now()
    claimed = AuditEvent.objects.filter(
        Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now), pk=event_id, delivered_at__isnull=True
    ).update(
        lease_expires_at=now + timedelta(seconds=settings.AUDIT_DELIVERY_LEASE),
        delivery_attempts=F("delivery_attempts") + 1,
    )
    return claimed == 1


def deliver_one(event_id: int) -> bool:
    """Deliver one event if it is undelivered and not being delivered elsewhere. True when this call delivered it.

    Raises SinkError (after releasing the lease) when the sink refused it."""
    if not _claim(event_id):
        return False
    event = AuditEvent.objects.get(pk=event_id)
    try:
        write_to_sink(event.as_record())
    except SinkError:
        AuditEvent.objects.filter(pk=event_id).update(lease_expires_at=None)
        raise
    AuditEvent.objects.filter(pk=event_id).update(delivered_at=timezone.now(), lease_expires_at=None)
    return True


def deliver_events(event_ids: list[int]) -> int:
    """Deliver each event; a refused one does not stop the others. Raises SinkError at the end if any was refused,
    so that the Celery task retries with backoff. Returns how many this call delivered."""
    delivered = 0
    failures: list[str] = []
    for event_id in event_ids:
        try:
            delivered += deliver_one(event_id)
        except SinkError as exc:
            failures.append(str(exc))
    if failures:
        raise SinkError(f"{len(failures)} audit event(s) not delivered: {failures[0]}")
    return delivered


def sweep() -> int:
    """Deliver undelivered events older than the grace period, least-tried first, each on its own. Returns how many
    were delivered; refused events are logged (without the sink's answer) and tried again at the next sweep."""
    cutoff = timezone.now() - timedelta(seconds=settings.AUDIT_SWEEP_GRACE)
    ids = list(
        AuditEvent.objects.filter(delivered_at__isnull=True, created_at__lte=cutoff)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=timezone.now()))
        .order_by("delivery_attempts", "pk")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    delivered = 0
    refused = 0
    for event_id in ids:
        try:
            delivered += deliver_one(event_id)
        except SinkError as exc:
            refused += 1
            logger.warning("audit event %s not delivered: %s", event_id, exc)
    if refused:
        logger.warning("audit sweep: %s delivered, %s refused by the sink", delivered, refused)
    return delivered
