#!/usr/bin/env python
"""Benchmark the two reads every chat step and every `/` keystroke make: the chat's skill context.

Builds one user who is a plain member of 20 organizations with 100 organization skills each (all shared with the
organization's Everyone group, so the ACL path is taken), 100 personal skills, and a workspace whose snapshot holds
500 resources (AGENTS.md and 499 skills, scanned from a generated tree and pushed with
``workspaces.services.snapshot_push``). The chat is in the first organization, attached to that workspace and
hydrated. Then, over N runs, it times:

* the `/` menu endpoint (the ``chat_skills`` view) through ``django.test.Client``;
* one ``build_context(chat)`` + ``ChatContext.catalog()`` on a freshly loaded chat (as each step of a turn does).

It prints the median and the 95th percentile in milliseconds, and the number of SQL queries of one call of each.

Database: a throwaway SQLite file under a temporary ``SWITCHBOARD_VAR_DIR`` (removed afterwards unless ``--keep``),
or ``DATABASE_URL`` when it is set (use a scratch database: the script migrates it and adds rows).

Run from the project root: ``.venv/bin/python bench/bench_chat_context.py [--runs N] [--keep]``.
Not a test: it lives outside ``tests/`` and its name does not start with ``test_``.
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

ORGANIZATIONS = 20
ORG_SKILLS = 100
PERSONAL_SKILLS = 100
SNAPSHOT_RESOURCES = 500  # AGENTS.md + 499 skills


def setup_django(var_dir: str) -> None:
    sys.path.insert(0, str(BASE_DIR))
    os.environ["SWITCHBOARD_VAR_DIR"] = var_dir  # dev secrets, the SQLite file and the Celery folders live here
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")  # audit deliveries run in-process: no broker needed
    os.environ.setdefault("LOG_LEVEL", "WARNING")

    import django

    django.setup()

    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    setup_test_environment(debug=False)  # lets the test client in (testserver) and keeps query logging off
    call_command("migrate", verbosity=0, interactive=False)


def skill_md(name: str, index: int, source: str) -> str:
    description = f"The {source} skill {name}, for tasks that need {name}."
    if index % 10 == 0:  # some long descriptions, which the catalog shortens
        description += " " + "More detail. " * 100
    return f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nFollow these steps for {name}.\n"


def build_tree(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "AGENTS.md").write_text("Be kind. Run the tests before you push.\n")
    for i in range(SNAPSHOT_RESOURCES - 1):
        name = f"tool-{100 + i:03}"  # tool-100 … tool-598: some overlap the org skills' names
        directory = root / ".agents" / "skills" / name
        directory.mkdir(parents=True)
        (directory / "SKILL.md").write_text(skill_md(name, i, "workspace"))


def build_data(tag: str, tree: Path):
    """One user in 20 organizations × 100 shared skills, 100 personal skills, a 500-resource snapshot, one chat."""
    from chats import pinning
    from chats import services as chat_services
    from organizations import services as org_services
    from organizations.models import Role, User
    from skills import services as skill_services
    from workspaces import scanner
    from workspaces import services as ws_services

    user = User.objects.create_user(username=f"bench-{tag}", email=f"bench-{tag}@example.test")
    organizations = []
    for i in range(ORGANIZATIONS):
        organization = org_services.organization_create(actor=None, name=f"bench-{tag}-{i:02}")
        org_services.membership_add(actor=None, organization=organization, user=user, role=Role.MEMBER)
        for j in range(ORG_SKILLS):
            name = f"tool-{50 + j:03}"  # tool-050 … tool-149: half overlap the personal skills
            skill_services.organization_skill_create(
                actor=None, organization=organization, content=skill_md(name, j, "organization")
            )
        organizations.append(organization)
    for j in range(PERSONAL_SKILLS):
        name = f"tool-{j:03}"  # tool-000 … tool-099
        skill_services.personal_skill_create(user=user, content=skill_md(name, j, "personal"))

    workspace, _token = ws_services.workspace_create(actor=user, organization=organizations[0], name="bench")
    build_tree(tree)
    resources = scanner.scan(scanner.roots_for(str(tree), None, []))["resources"]
    assert len(resources) == SNAPSHOT_RESOURCES, len(resources)
    snapshot, _created = ws_services.snapshot_push(workspace=workspace, resources=resources)
    chat = chat_services.chat_create(owner=user, organization=organizations[0], workspace=workspace)
    chat = pinning.hydrate(chat)
    assert chat.pinned_snapshot_id == snapshot.pk
    return user, chat


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def measure(call, runs: int) -> tuple[list[float], int]:
    """Milliseconds per run (after 3 warm-up calls), and the queries of one more call."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(3):
        call()
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    with CaptureQueriesContext(connection) as captured:
        call()
    return timings, len(captured)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="measured runs of each operation (default 50)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (database and tree)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    var_dir = tempfile.mkdtemp(prefix="switchboard-bench-")
    try:
        setup_django(var_dir)

        from django.conf import settings
        from django.test import Client
        from django.urls import reverse

        from chats.context import build_context
        from chats.models import Chat

        database = settings.DATABASES["default"]
        print(f"Database: {database['ENGINE'].rsplit('.', 1)[-1]} {database['NAME']}")
        started = time.perf_counter()
        user, chat = build_data(secrets.token_hex(3), Path(var_dir) / "tree")
        print(
            f"Setup: {ORGANIZATIONS} organizations x {ORG_SKILLS} skills (shared with Everyone), "
            f"{PERSONAL_SKILLS} personal skills, a snapshot of {SNAPSHOT_RESOURCES} resources "
            f"in {time.perf_counter() - started:.1f} s"
        )

        client = Client()
        client.force_login(user)
        url = reverse("chat-skills", args=[chat.pk])

        def menu():
            response = client.get(url)
            assert response.status_code == 200, response.status_code
            return response

        groups = menu().json()["groups"]
        counts = {g["source"]: len(g["items"]) for g in groups}
        catalog = build_context(Chat.objects.get(pk=chat.pk)).catalog()
        print(
            f"Context: personal {counts['personal']}, organization {counts['org']}, workspace {counts['workspace']} "
            f"skills; catalog {len(catalog.encode()) / 1024:.0f} KiB, {catalog.count(chr(10)) - 1} lines"
        )

        menu_ms, menu_queries = measure(menu, args.runs)
        context_ms, context_queries = measure_context(chat.pk, args.runs)
        print(f"Runs: {args.runs}")
        print(f"{'operation':<38}{'median ms':>10}{'p95 ms':>10}{'queries':>9}")
        for label, timings, queries in (
            ("/ menu: GET chat-skills (view)", menu_ms, menu_queries),
            ("build_context(chat) + catalog()", context_ms, context_queries),
        ):
            print(f"{label:<38}{statistics.median(timings):>10.2f}{percentile(timings, 95):>10.2f}{queries:>9}")
    finally:
        if args.keep:
            print(f"Kept {var_dir}")
        else:
            shutil.rmtree(var_dir, ignore_errors=True)
    return 0


def measure_context(chat_id: int, runs: int) -> tuple[list[float], int]:
    """Like ``measure``, for build_context + catalog on a chat loaded fresh before each call (the load itself is not
    timed or counted, so the owner, organization and permissions are fetched inside, as at every step)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from chats.context import build_context
    from chats.models import Chat

    for _ in range(3):
        build_context(Chat.objects.get(pk=chat_id)).catalog()
    timings = []
    for _ in range(runs):
        chat = Chat.objects.get(pk=chat_id)
        started = time.perf_counter()
        build_context(chat).catalog()
        timings.append((time.perf_counter() - started) * 1000)
    chat = Chat.objects.get(pk=chat_id)
    with CaptureQueriesContext(connection) as captured:
        build_context(chat).catalog()
    return timings, len(captured)


if __name__ == "__main__":
    sys.exit(main())
