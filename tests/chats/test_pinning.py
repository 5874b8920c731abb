"""Which snapshot a workspace-attached chat sees (chats/pinning.py; extending-agents.md, "How the workspace shares
context with chats"; rules.md, "Context snapshots").

Before its first turn a chat follows every new snapshot; from then on it keeps its pin, and a newer snapshot whose
instructions or skills differ marks it out of date (an MCP-only change does not; a push back to the pinned content
clears the mark). Refresh context re-pins to the latest snapshot. Snapshots are real scans of temporary trees pushed
through ``workspaces.services.snapshot_push``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from chats import pinning
from chats import services as chat_services
from chats.context import build_context
from chats.models import Chat, Role, TurnStatus
from organizations.models import AuditEvent
from workspaces.models import ContextSnapshot

from .test_context import by_source, fresh, new_chat, new_workspace, push, write_skill

BANNER = "files changed since this chat pinned its context"


class Tree:
    """A workspace working directory the test edits between pushes."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.instructions("Be kind.")
        self.add("hello")

    def instructions(self, text: str) -> None:
        (self.root / "AGENTS.md").write_text(text)

    def add(self, name: str, **kwargs) -> None:
        write_skill(self.root, name, **kwargs)

    def remove(self, name: str) -> None:
        shutil.rmtree(self.root / ".agents" / "skills" / name)

    def mcp(self, servers: dict | None) -> None:
        path = self.root / ".mcp.json"
        if servers is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(json.dumps({"mcpServers": servers}))


DOCS = {"docs": {"type": "http", "url": "https://docs.example/mcp"}}
MORE = DOCS | {"search": {"command": "search-mcp", "args": ["--stdio"]}}


@pytest.fixture
def workspace(world):
    return new_workspace(world)


@pytest.fixture
def tree(tmp_path) -> Tree:
    return Tree(tmp_path / "work")


def state(chat: Chat) -> tuple[int | None, bool]:
    """(pinned snapshot version, out of date) as stored."""
    chat = Chat.objects.select_related("pinned_snapshot").get(pk=chat.pk)
    return (chat.pinned_snapshot.version if chat.pinned_snapshot else None), chat.out_of_date


def run_turn(chat: Chat, capture, text: str = "hello there") -> None:
    """Send a message and let its turn run (Celery is eager in tests; the task is queued on commit)."""
    with capture(execute=True):
        turn = chat_services.message_send(chat=fresh(chat), content=text)
    turn.refresh_from_db()
    assert turn.status == TurnStatus.DONE, (turn.status, turn.error)


def test_a_chat_not_yet_hydrated_follows_each_new_snapshot(world, workspace, tree):
    v1 = push(workspace, tree.root)
    chat = new_chat(world, workspace=workspace)
    assert state(chat) == (1, False) and fresh(chat).pinned_snapshot_id == v1.pk
    tree.add("bye")
    push(workspace, tree.root)
    assert state(chat) == (2, False)
    tree.instructions("Be brief.")
    push(workspace, tree.root)
    tree.mcp(DOCS)
    push(workspace, tree.root)
    assert state(chat) == (4, False)
    assert fresh(chat).hydrated_at is None
    assert by_source(build_context(fresh(chat)))["workspace"] == ["bye", "hello"]


def test_a_chat_created_before_any_snapshot_follows_the_first_one(world, workspace, tree):
    chat = new_chat(world, workspace=workspace)
    assert state(chat) == (None, False)
    push(workspace, tree.root)
    assert state(chat) == (1, False)


def test_after_its_first_turn_a_chat_keeps_its_pin(world, workspace, tree, django_capture_on_commit_callbacks):
    push(workspace, tree.root)
    chat = new_chat(world, workspace=workspace)
    run_turn(chat, django_capture_on_commit_callbacks)
    assert fresh(chat).hydrated_at is not None
    assert state(chat) == (1, False)

    tree.add("bye")
    push(workspace, tree.root)
    assert state(chat) == (1, True)  # kept, and marked out of date
    assert by_source(build_context(fresh(chat)))["workspace"] == ["hello"]
    run_turn(chat, django_capture_on_commit_callbacks, "again")  # later turns do not move the pin either
    assert state(chat) == (1, True)


def test_hydration_pins_the_latest_snapshot_and_happens_once(world, workspace, tree):
    push(workspace, tree.root)
    chat = new_chat(world, workspace=workspace)
    tree.add("bye")
    push(workspace, tree.root)  # followed before the first turn
    chat = pinning.hydrate(fresh(chat))
    hydrated_at = chat.hydrated_at
    assert hydrated_at is not None and state(chat) == (2, False)
    assert pinning.hydrate(fresh(chat)).hydrated_at == hydrated_at


def test_a_push_that_changes_instructions_marks_the_chat_out_of_date(world, workspace, tree):
    push(workspace, tree.root)
    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    tree.instructions("Be brief.")
    snapshot = push(workspace, tree.root)
    assert snapshot.changes_context
    assert state(chat) == (1, True)


def test_a_push_that_changes_a_skill_marks_the_chat_out_of_date(world, workspace, tree):
    push(workspace, tree.root)
    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    tree.add("hello", body="# Hello\n\nSay hello twice.\n")  # same skill, new body
    push(workspace, tree.root)
    assert state(chat) == (1, True)


def test_an_mcp_only_change_does_not_mark_the_chat_out_of_date(world, workspace, tree):
    push(workspace, tree.root)
    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    for servers in (DOCS, MORE, None):
        tree.mcp(servers)
        snapshot = push(workspace, tree.root)
        assert not snapshot.changes_context
        assert state(chat) == (1, False), servers
    assert ContextSnapshot.objects.filter(workspace=workspace).count() == 4


def test_a_push_back_to_the_pinned_context_clears_out_of_date(world, workspace, tree):
    push(workspace, tree.root)
    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    tree.add("bye")
    push(workspace, tree.root)
    assert state(chat) == (1, True)
    tree.remove("bye")
    push(workspace, tree.root)  # the same instructions and skills as the pin
    assert state(chat) == (1, False)
    tree.instructions("Be brief.")
    push(workspace, tree.root)
    assert state(chat) == (1, True)
    tree.instructions("Be kind.")
    tree.mcp(DOCS)  # back to the pinned context, with a different MCP entry: still the same context
    push(workspace, tree.root)
    assert state(chat) == (1, False)


def test_refresh_context_repins_to_the_latest_snapshot_and_clears_the_mark(world, workspace, tree):
    push(workspace, tree.root)
    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    tree.add("bye")
    push(workspace, tree.root)
    tree.mcp(DOCS)
    push(workspace, tree.root)
    assert state(chat) == (1, True)

    chat = chat_services.context_refresh(chat=fresh(chat), actor=world.member)
    assert state(chat) == (3, False)
    assert by_source(build_context(fresh(chat)))["workspace"] == ["bye", "hello"]
    event = AuditEvent.objects.get(action="chat.refresh_context")
    assert event.changes == {"snapshot_version": {"old": 1, "new": 3}}
    assert (event.resource_type, event.resource_id, event.actor_id) == ("chat", str(chat.pk), world.member.pk)

    tree.remove("bye")
    push(workspace, tree.root)  # still hydrated: the next change marks it again
    assert state(chat) == (3, True)


def test_refresh_context_from_the_chat_page_clears_the_banner(world, workspace, tree, client_for):
    push(workspace, tree.root)
    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    tree.add("bye")
    push(workspace, tree.root)
    client = client_for("member")
    page = client.get(reverse("chat", args=[chat.pk]))
    assert BANNER in page.content.decode()
    response = client.post(reverse("chat-refresh", args=[chat.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("chat", args=[chat.pk])
    assert state(chat) == (2, False)
    assert BANNER not in client.get(reverse("chat", args=[chat.pk])).content.decode()


def test_a_chat_hydrated_before_any_snapshot_pins_the_first_one_when_it_lands(
    world, workspace, tree, client_for, django_capture_on_commit_callbacks
):
    chat = new_chat(world, workspace=workspace)
    run_turn(chat, django_capture_on_commit_callbacks)  # the workspace is still starting: the turn goes on without
    chat = fresh(chat)
    assert chat.hydrated_at is not None and state(chat) == (None, False)
    assert chat.messages.filter(role=Role.ASSISTANT).exists()

    push(workspace, tree.root)
    assert state(chat) == (1, False)  # pinned, and no banner
    page = client_for("member").get(reverse("chat", args=[chat.pk])).content.decode()
    assert BANNER not in page and "The workspace is still starting" not in page
    assert by_source(build_context(fresh(chat)))["workspace"] == ["hello"]

    tree.add("bye")
    push(workspace, tree.root)
    assert state(chat) == (1, True)  # from now on it keeps that pin


def test_pushes_touch_only_the_chats_of_that_workspace(world, workspace, tree, tmp_path):
    other = new_workspace(world, name="bob-desktop")
    other_tree = Tree(tmp_path / "other")
    push(workspace, tree.root)
    push(other, other_tree.root)
    mine = pinning.hydrate(new_chat(world, workspace=workspace))
    theirs = pinning.hydrate(new_chat(world, workspace=other))
    following = new_chat(world, workspace=other)
    detached = new_chat(world)
    tree.add("bye")
    push(workspace, tree.root)
    assert state(mine) == (1, True)
    assert state(theirs) == (1, False) and state(following) == (1, False)
    assert state(detached) == (None, False)
