"""Delivering audit events from the outbox (AuditEvent rows with ``delivered_at`` unset) to the optional sink.

Delivery is at least once: an event is marked delivered only after the sink accepted it, in the same
transaction that holds its row lock, so a worker that dies mid-delivery leaves it for the next attempt or
the sweep. Sinks receive the event id and can drop duplicates by it.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .models import AuditEvent

logger = logging.getLogger(__name__)

SWEEP_BATCH = 500


class SinkError(Exception):
    """The sink did not accept an event; delivery will be retried. Never carries a response body."""


def write_to_sink(records: list[dict]) -> None:
    """Write records to ``AUDIT_SINK_URL``: file://…jsonl appends JSON lines; http(s):// POSTs each as JSON."""
    url = settings.AUDIT_SINK_URL
    if not url or not records:
        return
    parts = urlsplit(url)
    if parts.scheme == "file":
        path = Path(parts.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with path.open("a", encoding="utf-8") as sink:
                for record in records:
                    sink.write(json.dumps(record, sort_keys=True) + "\n")
                sink.flush()
        except OSError as exc:
            raise SinkError(f"audit sink file not writable: {exc.strerror}") from None
    elif parts.scheme in {"http", "https"}:
        for record in records:
            try:
                response = requests.post(url, json=record, timeout=settings.AUDIT_SINK_TIMEOUT)
            except requests.RequestException as exc:
                raise SinkError(f"audit sink unreachable: {type(exc).__name__}") from None
            if not 200 <= response.status_code < 300:
                raise SinkError(f"audit sink answered {response.status_code}")
    else:
        raise SinkError(f"unsupported AUDIT_SINK_URL scheme {parts.scheme!r}")


def deliver_events(event_ids: list[int]) -> int:
    """Deliver the given events if still undelivered. Rows being delivered elsewhere are skipped, not waited on."""
    with transaction.atomic():
        events = list(
            AuditEvent.objects.select_for_update(skip_locked=True)
            .filter(pk__in=event_ids, delivered_at__isnull=True)
            .order_by("pk")
        )
        if not events:
            return 0
        # Counted in its own transaction so that failed attempts stay visible.
        AuditEvent.objects.filter(pk__in=[e.pk for e in events]).update(delivery_attempts=F("delivery_attempts") + 1)
    with transaction.atomic():
        events = list(
            AuditEvent.objects.select_for_update(skip_locked=True)
            .filter(pk__in=[e.pk for e in events], delivered_at__isnull=True)
            .order_by("pk")
        )
        if not events:
            return 0
        write_to_sink([event.as_record() for event in events])
        AuditEvent.objects.filter(pk__in=[e.pk for e in events]).update(delivered_at=timezone.now())
    return len(events)


def sweep() -> int:
    """Deliver undelivered events older than the grace period, oldest first. Returns how many were delivered."""
    cutoff = timezone.now() - timedelta(seconds=settings.AUDIT_SWEEP_GRACE)
    delivered = 0
    while True:
        ids = list(
            AuditEvent.objects.filter(delivered_at__isnull=True, created_at__lte=cutoff)
            .order_by("pk")
            .values_list("pk", flat=True)[:SWEEP_BATCH]
        )
        if not ids:
            return delivered
        count = deliver_events(ids)
        delivered += count
        if count == 0:
            # Everything left is locked by a delivery in progress; the next sweep looks again.
            return delivered
