"""The audit outbox (DESIGN.md invariant 4: no audit event is lost), tested against real peers.

A change and its audit event commit together; delivery is handed to Celery on commit; the sink is a real file or a
real HTTP server on loopback; a broker that cannot be reached and a worker killed mid-delivery leave the event in
the outbox, and the sweep delivers it. Worker tests start a real ``celery worker`` process on the test database and
the configured broker (the file-system broker under ``SWITCHBOARD_VAR_DIR``, or Redis via ``CELERY_BROKER_URL``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO
from urllib.parse import quote

import kombu.pools
import pytest
import redis
from celery.utils.nodenames import anon_nodename
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone
from kombu.transport.redis import Channel as RedisChannel

from organizations import delivery, services
from organizations.models import AuditEvent, OrgGroup
from project.celery import app as celery_app

BASE_DIR = Path(__file__).resolve().parents[2]
UNREACHABLE_BROKER = "redis://127.0.0.1:1/0"
FAKE_SECRET = "sk-live-7f3c9a1e-do-not-leak"
# Gossip, mingle and heartbeats only slow the start of a single worker down.
WORKER_ARGS = (
    "-m celery -A project worker --pool=solo --loglevel=INFO -Q celery --without-gossip --without-mingle"
    " --without-heartbeat"
).split()


# ---------------------------------------------------------------------------------------------------------------
# Peers: a loopback HTTP audit sink, a file sink, a real Celery worker process.


@dataclass
class Reply:
    status: int = 200
    body: bytes = b'{"stored": true}'


class AuditSink:
    """An HTTP audit sink on 127.0.0.1 (ephemeral port) that records every POSTed JSON body.

    ``replies`` are answered in order, then 200. With ``hold_first`` the first request is recorded and then held
    unanswered until ``release`` is set, so that the client is stuck mid-delivery.
    """

    def __init__(self, replies: list[Reply] | None = None, *, hold_first: bool = False) -> None:
        self.replies = list(replies or [])
        self.received: list[dict] = []
        self.first_request = threading.Event()
        self.release = threading.Event()
        if not hold_first:
            self.release.set()
        lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    sink.received.append(body)
                    first = len(sink.received) == 1
                    reply = sink.replies.pop(0) if sink.replies else Reply()
                sink.first_request.set()
                if first:
                    sink.release.wait(timeout=60)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the client died while its request was held

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/audit"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def ids(self) -> Counter:
        """How many times each event id reached the sink."""
        return Counter(body["id"] for body in list(self.received))

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def audit_sink() -> Iterator[Callable[..., AuditSink]]:
    """``audit_sink(replies, hold_first=…)`` → a running :class:`AuditSink`, shut down after the test."""
    sinks: list[AuditSink] = []

    def start(replies: list[Reply] | None = None, *, hold_first: bool = False) -> AuditSink:
        sink = AuditSink(replies, hold_first=hold_first)
        sinks.append(sink)
        return sink

    yield start
    for sink in sinks:
        sink.close()


def file_sink_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def forget_broker_connections() -> None:
    """Drop the cached broker connections and producers so that the next publish connects to the current URL.

    ``app.pool`` and ``app.amqp.producer_pool`` are built once from ``connection_for_write()`` and cached, and
    kombu keeps them in process-wide groups keyed by connection. ``kombu.pools.reset()`` closes and forgets those
    (what Celery does after a fork); the app then rebuilds its pools on the next publish.
    """
    kombu.pools.reset()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@contextmanager
def publishing_to_broker(broker_url: str | None = None) -> Iterator[None]:
    """Celery publishes to a broker (``broker_url``, or the configured one) instead of running tasks eagerly.

    Celery read the Django settings once, so its own ``conf`` is what counts; the setting is changed as well so
    that code reading ``settings.CELERY_TASK_ALWAYS_EAGER`` agrees. Publishing connects to ``broker_write_url``,
    and Celery lets the CELERY_BROKER_URL environment variable win over ``conf.broker_url``, so the write URL is
    the one to point elsewhere.
    """
    conf = celery_app.conf
    saved = conf["task_always_eager"], conf.get("broker_write_url")
    conf["task_always_eager"] = False
    if broker_url:
        conf["broker_write_url"] = broker_url
        forget_broker_connections()
    try:
        if broker_url:
            assert conf.broker_write_url == broker_url, "CELERY_BROKER_WRITE_URL in the environment wins"
        with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
            yield
    finally:
        conf["task_always_eager"], conf["broker_write_url"] = saved
        if broker_url:
            forget_broker_connections()


def worker_database_url() -> str:
    """The test database (its name is already the test name at this point) as a DATABASE_URL for a subprocess."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    credentials = quote(db["USER"] or "", safe="")
    if db.get("PASSWORD"):
        credentials += ":" + quote(db["PASSWORD"], safe="")
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{credentials}@{host}{port}/{quote(db['NAME'], safe='')}"


@dataclass
class Worker:
    process: subprocess.Popen
    log_path: Path
    log_file: IO[bytes] = field(repr=False)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_until_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if " ready." in self.log():
                return
            if self.process.poll() is not None:
                pytest.fail(f"the Celery worker exited with {self.process.returncode}:\n{self.log()}")
            time.sleep(0.1)
        pytest.fail(f"the Celery worker was not ready after {timeout} s:\n{self.log()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log_file.close()


def discard_unacked_messages_published_here() -> None:
    """Forget the messages that a killed worker took from Redis but never acknowledged, if this process sent them.

    Redis keeps such a message aside ("unacked") and puts it back in the queue after the visibility timeout (an
    hour), where a later test run's worker would find it. The file-system broker has nothing to clean: a worker
    removes the message file when it takes it.
    """
    if not django_settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        return
    origin = anon_nodename()  # the "origin" header of every message this process publishes
    with redis.Redis.from_url(django_settings.CELERY_BROKER_URL) as client:
        for tag, raw in client.hgetall(RedisChannel.unacked_key).items():
            message = json.loads(raw)[0]
            if message["headers"].get("origin") == origin:
                client.pipeline().zrem(RedisChannel.unacked_index_key, tag).hdel(
                    RedisChannel.unacked_key, tag
                ).execute()


@pytest.fixture
def start_worker(transactional_db, request, tmp_path) -> Iterator[Callable[..., Worker]]:
    """``start_worker(sink_url=…)`` → a ready ``celery worker`` process on the test database and broker.

    The queue is purged first so that messages left by earlier runs cannot confuse the test. Workers are stopped
    after the test; if the test failed, their logs are printed (pytest shows them under the failure).
    """
    workers: list[Worker] = []
    failures_before = request.session.testsfailed

    def start(*, sink_url: str) -> Worker:
        with publishing_to_broker():
            celery_app.control.purge()
        env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
        env.update(
            DJANGO_SETTINGS_MODULE="project.settings",
            DATABASE_URL=worker_database_url(),
            SWITCHBOARD_VAR_DIR=str(django_settings.VAR_DIR),
            CELERY_BROKER_URL=django_settings.CELERY_BROKER_URL,
            CELERY_TASK_ALWAYS_EAGER="false",
            AUDIT_SINK_URL=sink_url,
            AUDIT_SINK_TIMEOUT="60",  # a held request stays held until the test kills the worker
            AUDIT_DELIVERY_LEASE="5",  # a dead worker's claim on an event lapses quickly
            LOG_LEVEL="INFO",
            PYTHONUNBUFFERED="1",
        )
        log_path = tmp_path / f"worker-{len(workers) + 1}.log"
        log_file = log_path.open("wb")
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
            [sys.executable, *WORKER_ARGS, f"--hostname=audit-test-{os.getpid()}-{len(workers) + 1}@%h"],
            cwd=BASE_DIR,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        worker = Worker(process, log_path, log_file)
        workers.append(worker)
        worker.wait_until_ready()
        return worker

    yield start
    for worker in workers:
        worker.stop()
    discard_unacked_messages_published_here()
    if request.session.testsfailed > failures_before:
        for worker in workers:
            print(f"----- {worker.log_path.name} (exit {worker.process.returncode}) -----\n{worker.log()}")


def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


# ---------------------------------------------------------------------------------------------------------------
# The outbox: the change and its event commit together, and delivery starts on commit.


def test_it_rolls_back_the_event_with_the_change(transactional_db, world, settings, tmp_path):
    """The event is written in the caller's transaction: if that transaction fails, neither it nor the change
    exists and nothing reaches the sink. The same call, committed, does reach it (so the sink was listening)."""
    sink_path = tmp_path / "audit.jsonl"
    settings.AUDIT_SINK_URL = sink_path.as_uri()
    events_before = AuditEvent.objects.count()

    with pytest.raises(RuntimeError, match="after the change"), transaction.atomic():
        services.group_create(actor=world.org_admin, organization=world.acme, name="Red team")
        assert AuditEvent.objects.filter(action="group.create").count() == 1
        raise RuntimeError("the caller fails after the change")

    assert not OrgGroup.objects.filter(organization=world.acme, name="Red team").exists()
    assert AuditEvent.objects.count() == events_before
    assert file_sink_lines(sink_path) == []

    group = services.group_create(actor=world.org_admin, organization=world.acme, name="Red team")
    event = AuditEvent.objects.get(action="group.create")
    assert event.resource_id == str(group.pk)
    assert [line["id"] for line in file_sink_lines(sink_path)] == [event.pk]


def test_it_delivers_the_event_to_a_file_sink_on_commit(world, settings, tmp_path, django_capture_on_commit_callbacks):
    """Delivery waits for the commit, then (Celery eager in tests) writes one JSON line and marks the event."""
    sink_path = tmp_path / "sink" / "audit.jsonl"
    settings.AUDIT_SINK_URL = sink_path.as_uri()

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        group = services.group_create(actor=world.org_admin, organization=world.acme, name="Blue team")
        event = AuditEvent.objects.get(action="group.create", resource_id=str(group.pk))
        assert event.delivered_at is None, "delivered before the commit"
        assert not sink_path.exists()

    assert len(callbacks) == 1
    event.refresh_from_db()
    assert event.delivered_at is not None
    assert event.delivery_attempts == 1
    [line] = file_sink_lines(sink_path)
    assert line["id"] == event.pk
    assert (line["action"], line["resource_name"], line["actor"], line["organization"]) == (
        "group.create",
        "Blue team",
        "alice",
        "acme",
    )


# ---------------------------------------------------------------------------------------------------------------
# An HTTP sink that fails, then recovers.


def test_it_retries_an_http_sink_failure_through_the_sweep_without_duplicates(
    world, settings, audit_sink, django_capture_on_commit_callbacks
):
    """A 503 leaves the event undelivered (the attempt counted) and the error names the status, never the body;
    the sweep delivers it later, and once it is delivered no further attempt sends it again."""
    sink = audit_sink([Reply(503, json.dumps({"error": "overloaded", "token": FAKE_SECRET}).encode())])
    settings.AUDIT_SINK_URL = sink.url
    settings.AUDIT_SWEEP_GRACE = 0
    with django_capture_on_commit_callbacks(execute=False):  # keep it in the outbox; deliver by hand below
        group = services.group_create(actor=world.org_admin, organization=world.acme, name="Green team")
    event = AuditEvent.objects.get(action="group.create", resource_id=str(group.pk))

    with pytest.raises(delivery.SinkError) as failure:
        delivery.deliver_events([event.pk])

    assert "503" in str(failure.value)
    assert FAKE_SECRET not in str(failure.value)
    assert "overloaded" not in str(failure.value)
    event.refresh_from_db()
    assert event.delivered_at is None
    assert event.delivery_attempts == 1
    assert sink.ids()[event.pk] == 1

    assert delivery.sweep() >= 1

    event.refresh_from_db()
    assert event.delivered_at is not None
    assert event.delivery_attempts == 2
    assert [body for body in sink.received if body["id"] == event.pk][-1] == event.as_record()
    assert not AuditEvent.objects.filter(delivered_at__isnull=True).exists()
    received = sink.ids()
    assert received[event.pk] == 2  # the refused attempt and the accepted one

    assert delivery.sweep() == 0
    assert delivery.deliver_events([event.pk]) == 0
    assert sink.ids() == received
    event.refresh_from_db()
    assert event.delivery_attempts == 2


def test_it_counts_a_redirect_as_a_refusal(world, settings, audit_sink, django_capture_on_commit_callbacks):
    """A redirected POST would arrive as a bodiless GET: the event must stay in the outbox, not be marked done."""
    sink = audit_sink([Reply(302, b"")])
    settings.AUDIT_SINK_URL = sink.url
    with django_capture_on_commit_callbacks(execute=False):
        group = services.group_create(actor=world.org_admin, organization=world.acme, name="Redirected")
    event = AuditEvent.objects.get(action="group.create", resource_id=str(group.pk))
    with pytest.raises(delivery.SinkError, match="302"):
        delivery.deliver_events([event.pk])
    event.refresh_from_db()
    assert event.delivered_at is None and event.lease_expires_at is None


def test_a_refused_event_does_not_hold_back_the_others(world, settings, audit_sink, django_capture_on_commit_callbacks):
    """The sink refuses the first event it sees; the sweep still delivers every other one, and the refused event
    goes through at a later sweep."""
    sink = audit_sink([Reply(400, b"bad")])
    settings.AUDIT_SINK_URL = sink.url
    settings.AUDIT_SWEEP_GRACE = 0
    AuditEvent.objects.update(delivered_at=timezone.now())  # the personas' own events are not the subject here
    with django_capture_on_commit_callbacks(execute=False):
        for name in ("One", "Two", "Three"):
            services.group_create(actor=world.org_admin, organization=world.acme, name=name)
    first, *rest = AuditEvent.objects.filter(delivered_at__isnull=True).order_by("pk")

    assert delivery.sweep() == 2

    first.refresh_from_db()
    assert first.delivered_at is None and first.delivery_attempts == 1
    assert all(AuditEvent.objects.get(pk=e.pk).delivered_at for e in rest)
    assert delivery.sweep() == 1
    assert not AuditEvent.objects.filter(delivered_at__isnull=True).exists()


def test_no_database_lock_is_held_while_the_sink_answers(transactional_db, world, settings, audit_sink):
    """While the sink holds a delivery, other writes go through (on SQLite a write transaction around the POST
    would lock the whole database until the sink answered)."""
    group = services.group_create(actor=world.org_admin, organization=world.acme, name="Slow sink")
    event = AuditEvent.objects.get(action="group.create", resource_id=str(group.pk))
    AuditEvent.objects.filter(pk=event.pk).update(delivered_at=None, lease_expires_at=None)
    sink = audit_sink(hold_first=True)
    settings.AUDIT_SINK_URL = sink.url
    outcome: list[object] = []

    def deliver() -> None:
        try:
            outcome.append(delivery.deliver_one(event.pk))
        finally:
            connection.close()

    thread = threading.Thread(target=deliver)
    thread.start()
    try:
        assert sink.first_request.wait(timeout=10)
        services.group_create(actor=world.org_admin, organization=world.acme, name="Written meanwhile")
        assert not sink.release.is_set() and thread.is_alive()  # the delivery really was still in flight
    finally:
        sink.release.set()
        thread.join(timeout=30)
    assert outcome == [True]
    assert OrgGroup.objects.filter(name="Written meanwhile").exists()


# ---------------------------------------------------------------------------------------------------------------
# The broker cannot be reached when the change commits.


@pytest.mark.timeout(20)  # the publish retry policy gives up in well under a second; a hang fails here
def test_it_commits_and_keeps_the_event_when_the_broker_is_unreachable(
    transactional_db, world, settings, tmp_path, caplog
):
    """The caller's change commits and the call returns; the event waits in the outbox with a warning logged,
    and the sweep delivers it."""
    sink_path = tmp_path / "audit.jsonl"
    settings.AUDIT_SINK_URL = sink_path.as_uri()
    caplog.set_level(logging.WARNING)

    with publishing_to_broker(UNREACHABLE_BROKER):
        group = services.group_create(actor=world.org_admin, organization=world.acme, name="Night shift")

    assert OrgGroup.objects.filter(pk=group.pk, name="Night shift").exists()
    event = AuditEvent.objects.get(action="group.create", resource_id=str(group.pk))
    assert event.delivered_at is None
    assert event.delivery_attempts == 0
    warnings = [r for r in caplog.records if r.name == "organizations.audit" and r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [f"audit event {event.pk} not enqueued; the sweep will deliver it"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not sink_path.exists()

    settings.AUDIT_SWEEP_GRACE = 0
    assert delivery.sweep() == 1

    event.refresh_from_db()
    assert event.delivered_at is not None
    assert [line["id"] for line in file_sink_lines(sink_path)] == [event.pk]
    assert celery_app.conf.broker_write_url == django_settings.CELERY_BROKER_URL  # restored


# ---------------------------------------------------------------------------------------------------------------
# A real worker process.


@pytest.mark.worker
@pytest.mark.timeout(90)
def test_it_delivers_through_a_live_worker(world, start_worker, audit_sink):
    """The production path: commit → publish to the broker → a worker process delivers to the sink and marks
    the event in the shared database."""
    sink = audit_sink()
    worker = start_worker(sink_url=sink.url)

    with publishing_to_broker():
        group = services.group_create(actor=world.org_admin, organization=world.acme, name="Day shift")
    event = AuditEvent.objects.get(action="group.create", resource_id=str(group.pk))

    delivered = wait_until(
        lambda: AuditEvent.objects.filter(pk=event.pk, delivered_at__isnull=False).exists(), timeout=20
    )
    assert delivered, f"the worker did not deliver event {event.pk} within 20 s:\n{worker.log()}"
    assert sink.ids() == Counter({event.pk: 1})
    event.refresh_from_db()
    assert event.delivery_attempts == 1


@pytest.mark.worker
@pytest.mark.timeout(90)
def test_it_leaves_the_event_for_the_sweep_when_the_worker_dies_mid_delivery(world, start_worker, audit_sink, settings):
    """A worker killed while the sink holds its request must not have marked the event: the event is marked only
    after the sink answers. The sweep then delivers it (at least once: the sink may see it twice) and no event
    is left behind."""
    sink = audit_sink(hold_first=True)
    worker = start_worker(sink_url=sink.url)

    with publishing_to_broker():
        group = services.group_create(actor=world.org_admin, organization=world.acme, name="Graveyard shift")
    event = AuditEvent.objects.get(action="group.create", resource_id=str(group.pk))

    assert sink.first_request.wait(timeout=20), f"the worker never reached the sink:\n{worker.log()}"
    assert sink.received[0]["id"] == event.pk
    worker.process.kill()
    assert worker.process.wait(timeout=10) == -signal.SIGKILL

    event.refresh_from_db()
    assert event.delivered_at is None
    assert event.delivery_attempts == 1

    sink.release.set()
    settings.AUDIT_SINK_URL = sink.url
    settings.AUDIT_SWEEP_GRACE = 0

    def swept() -> bool:
        # The dead worker's lease on the event lasts a few seconds; until it lapses the sweep leaves the event
        # alone, as it must for a delivery that may still be under way.
        delivery.sweep()
        return AuditEvent.objects.filter(pk=event.pk, delivered_at__isnull=False).exists()

    assert not swept()  # the lease is still held right after the kill
    assert wait_until(swept, timeout=15, interval=0.2)
    event.refresh_from_db()
    assert event.delivery_attempts == 2
    assert sink.ids()[event.pk] >= 2  # the held request and the sweep's
    assert not AuditEvent.objects.filter(delivered_at__isnull=True).exists()
