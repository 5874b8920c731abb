"""The workspace agent as a real process against pytest-django's live server: startup, pushes, the file watcher,
the request channel, the ready file, a wrong token, ``--once`` and the management command.

Nothing of the project is mocked: the agent runs ``python -m workspaces.agent`` (or ``manage.py workspace_agent``),
scans a temporary working directory and home, and talks HTTP to the live server; the test reads the database.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest
from django.conf import settings as django_settings

from tests.conftest import build_world
from workspaces import services
from workspaces.models import AgentRequest, ContextSnapshot, Workspace, WorkspaceStatus

BASE_DIR = Path(__file__).resolve().parents[2]

HELLO_SKILL = """---
name: hello
description: Say hello to the team
---

# Hello

Read notes.md first.
"""

SECOND_SKILL = """---
name: second
description: A second skill
---

# Second
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def wait_until(predicate: Callable[[], object], *, timeout: float, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def latest(workspace: Workspace) -> ContextSnapshot | None:
    return ContextSnapshot.objects.filter(workspace=workspace).order_by("-version").first()


def inventory(snapshot: ContextSnapshot) -> set[tuple[str, str, str]]:
    return {(r.kind, r.rel_path, r.status) for r in snapshot.resources.all()}


def content_of(snapshot: ContextSnapshot, rel_path: str) -> str | None:
    resource = snapshot.resources.select_related("blob").filter(rel_path=rel_path).first()
    return resource.blob.content if resource is not None and resource.blob is not None else None


def read_missing(workspace: Workspace, skill_dir: str) -> dict:
    return services.read_skill_file(workspace=workspace, skill_dir=skill_dir, path="missing.md")


def reachable(workspace: Workspace) -> bool:
    workspace.refresh_from_db(fields=["last_seen_at", "status"])
    return services.is_reachable(workspace)


@dataclass
class Agent:
    process: subprocess.Popen
    log_path: Path
    log_file: IO[bytes] = field(repr=False)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the agent was still running after {timeout} s:\n{self.log()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log_file.close()


def agent_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env.pop("WORKSPACE_AGENT_TOKEN", None)
    env.update(PYTHONUNBUFFERED="1", SWITCHBOARD_VAR_DIR=str(django_settings.VAR_DIR))
    return env


@pytest.fixture
def live(transactional_db, live_server, settings):
    """A member's workspace, committed so the live server's threads see it, and short server-side timings."""
    settings.WORKSPACE_AGENT_LONG_POLL = 1.0
    settings.WORKSPACE_AGENT_POLL_INTERVAL = 0.05
    world = build_world()
    workspace, token = services.workspace_create(actor=world.member, organization=world.acme, name="dev")
    return world, workspace, token


@pytest.fixture
def tree(tmp_path) -> tuple[Path, Path]:
    """(working directory with AGENTS.md, the hello skill and a skill folder that is a symlink out of the working
    directory, an empty home)."""
    workdir = tmp_path / "work"
    home = tmp_path / "home"
    home.mkdir()
    write(workdir / "AGENTS.md", "# Rules\n\nBe kind.\n")
    write(workdir / ".agents" / "skills" / "hello" / "SKILL.md", HELLO_SKILL)
    write(workdir / ".agents" / "skills" / "hello" / "notes.md", "hello notes\n")
    outside = tmp_path / "outside"
    write(outside / "SKILL.md", HELLO_SKILL.replace("hello", "outside"))
    write(outside / "secret.md", "not for the server\n")
    (workdir / ".agents" / "skills" / "outside").symlink_to(outside, target_is_directory=True)
    return workdir, home


@pytest.fixture
def start_agent(live_server, request, tmp_path) -> Iterator[Callable[..., Agent]]:
    """``start_agent(token, workdir, home, *extra)`` → a running agent process. Every agent is stopped after the
    test; if the test failed, its stderr is printed (pytest shows it under the failure)."""
    agents: list[Agent] = []
    failures_before = request.session.testsfailed

    def start(token: str, workdir: Path, home: Path, *extra: str, module: bool = True) -> Agent:
        options = ["--url", live_server.url, "--token", token, "--dir", str(workdir), "--home", str(home), *extra]
        command = [sys.executable, "-m", "workspaces.agent"] if module else [sys.executable, "manage.py"]
        if not module:
            options = ["workspace_agent", *options]
        log_path = tmp_path / f"agent-{len(agents) + 1}.log"
        log_file = log_path.open("wb")
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
            [*command, *options],
            cwd=BASE_DIR,
            env=agent_env(),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        agent = Agent(process, log_path, log_file)
        agents.append(agent)
        return agent

    yield start
    for agent in agents:
        agent.stop()
    if request.session.testsfailed > failures_before:
        for agent in agents:
            print(f"----- {agent.log_path.name} (exit {agent.process.returncode}) -----\n{agent.log()}")


def test_it_pushes_watches_and_answers_requests(live, tree, start_agent, settings):
    _, workspace, token = live
    workdir, home = tree
    agent = start_agent(token, workdir, home, "--quiet-period", "0.3")

    first = wait_until(lambda: latest(workspace), timeout=10)
    assert first is not None, agent.log()
    assert first.version == 1
    assert inventory(first) == {
        ("instruction", "AGENTS.md", "ok"),
        ("skill", ".agents/skills/hello/SKILL.md", "ok"),
        ("skill", ".agents/skills/outside/SKILL.md", "excluded"),
    }
    assert content_of(first, "AGENTS.md") == "# Rules\n\nBe kind.\n"
    workspace.refresh_from_db()
    assert workspace.status == WorkspaceStatus.READY

    # An edit: a second skill and new instructions give a new version (one or two, as the watcher groups them).
    write(workdir / ".agents" / "skills" / "second" / "SKILL.md", SECOND_SKILL)
    write(workdir / "AGENTS.md", "# Rules\n\nBe kinder.\n")

    def edited():
        snapshot = latest(workspace)
        if snapshot is None or content_of(snapshot, "AGENTS.md") != "# Rules\n\nBe kinder.\n":
            return None
        return snapshot if ("skill", ".agents/skills/second/SKILL.md", "ok") in inventory(snapshot) else None

    second = wait_until(edited, timeout=5)
    assert second is not None, agent.log()
    assert second.version > first.version

    # A root that did not exist when the agent started (~/.coder/skills) is found once it appears.
    write(home / ".coder" / "skills" / "later" / "SKILL.md", SECOND_SKILL.replace("second", "later"))

    def later_found():
        snapshot = latest(workspace)
        return snapshot if snapshot and ("skill", "later/SKILL.md", "ok") in inventory(snapshot) else None

    third = wait_until(later_found, timeout=5)
    assert third is not None, agent.log()
    assert third.version > second.version
    second = third

    # Rewriting a file with the same text wakes the watcher, but an identical scan pushes nothing new.
    write(workdir / "AGENTS.md", "# Rules\n\nBe kinder.\n")
    time.sleep(2)
    assert latest(workspace).version == second.version

    hello_dir = next(r.data["skill"]["dir"] for r in second.resources.all() if r.kind == "skill" and r.name == "hello")
    assert hello_dir == str(workdir / ".agents" / "skills" / "hello")
    read = services.read_skill_file(workspace=workspace, skill_dir=hello_dir, path="notes.md")
    assert read == {"ok": True, "content": "hello notes\n", "size": 12, "truncated": False}
    assert read_missing(workspace, hello_dir) == {"ok": False, "error": "file not found"}

    answered = agent.log().count("request read_skill_file")
    assert services.read_skill_file(workspace=workspace, skill_dir=hello_dir, path="../../../AGENTS.md") == {
        "ok": False,
        "error": "path traversal is not allowed",
    }
    assert services.read_skill_file(workspace=workspace, skill_dir=hello_dir, path=".env") == {
        "ok": False,
        "error": "hidden file components are not allowed",
    }
    assert agent.log().count("request read_skill_file") == answered, "a bad path must not reach the agent"

    # A folder that is not a discovered skill is refused, even with a valid path to a real file.
    assert services.read_skill_file(workspace=workspace, skill_dir=str(workdir), path="AGENTS.md") == {
        "ok": False,
        "error": "unknown skill directory",
    }

    # Nor is a skill folder the scan listed but excluded because it is a symlink out of the working directory.
    outside_dir = next(
        r.data["skill"]["dir"] for r in second.resources.all() if r.kind == "skill" and r.status == "excluded"
    )
    assert services.read_skill_file(workspace=workspace, skill_dir=outside_dir, path="secret.md") == {
        "ok": False,
        "error": "unknown skill directory",
    }

    # A kind of request the agent does not know is answered, not ignored.
    odd = AgentRequest.objects.create(workspace=workspace, kind="run_command", payload={"command": "id"})
    assert wait_until(lambda: AgentRequest.objects.get(pk=odd.pk).responded_at, timeout=5), agent.log()
    assert AgentRequest.objects.get(pk=odd.pk).response == {"ok": False, "error": "unsupported request"}

    # Gone: once the agent has not been seen for the stale period, reads fail fast as unreachable.
    agent.process.kill()
    agent.process.wait(timeout=5)
    settings.WORKSPACE_AGENT_STALE_SECONDS = 1
    assert wait_until(lambda: not reachable(workspace), timeout=5, interval=0.1)
    started = time.monotonic()
    with pytest.raises(services.WorkspaceUnreachable, match="^workspace is unreachable$"):
        services.read_skill_file(workspace=workspace, skill_dir=hello_dir, path="notes.md")
    assert time.monotonic() - started < 0.5


def test_it_publishes_nothing_until_the_ready_file_exists(live, tree, start_agent, tmp_path):
    _, workspace, token = live
    workdir, home = tree
    ready = tmp_path / "startup" / "ready"
    agent = start_agent(token, workdir, home, "--ready-file", str(ready), "--quiet-period", "0.3")

    def connected():
        workspace.refresh_from_db()
        return workspace.last_seen_at is not None

    assert wait_until(connected, timeout=10), agent.log()
    time.sleep(1.5)
    workspace.refresh_from_db()
    assert workspace.status == WorkspaceStatus.STARTING
    assert latest(workspace) is None
    assert reachable(workspace), "the agent long-polls the request channel while it waits"

    write(ready, "")
    snapshot = wait_until(lambda: latest(workspace), timeout=5)
    assert snapshot is not None, agent.log()
    assert ("skill", ".agents/skills/hello/SKILL.md", "ok") in inventory(snapshot)
    workspace.refresh_from_db()
    assert workspace.status == WorkspaceStatus.READY

    # SIGTERM stops it cleanly.
    agent.process.terminate()
    assert agent.wait(timeout=10) == 0
    assert "received SIGTERM: stopping" in agent.log()


def test_it_exits_with_status_2_on_a_rotated_token(live, tree, start_agent):
    world, workspace, token = live
    workdir, home = tree
    services.workspace_rotate_token(actor=world.member, workspace=workspace)

    agent = start_agent(token, workdir, home)
    assert agent.wait(timeout=15) == 2
    log = agent.log()
    assert "rejected the workspace token (401)" in log
    assert token not in log
    assert token[len(Workspace.TOKEN_PREFIX) :] not in log
    assert latest(workspace) is None


def test_it_pushes_once_and_exits_with_once(live, tree, start_agent):
    _, workspace, token = live
    workdir, home = tree
    write(home / ".coder" / "skills" / "personal-notes" / "SKILL.md", HELLO_SKILL.replace("hello", "personal-notes"))

    agent = start_agent(token, workdir, home, "--once")
    assert agent.wait(timeout=20) == 0, agent.log()
    snapshot = latest(workspace)
    assert snapshot is not None and snapshot.version == 1
    assert {(r.root_kind, r.rel_path) for r in snapshot.resources.all()} == {
        ("workdir", "AGENTS.md"),
        ("workdir", ".agents/skills/hello/SKILL.md"),
        ("workdir", ".agents/skills/outside/SKILL.md"),
        ("home_coder_skills", "personal-notes/SKILL.md"),
    }

    again = start_agent(token, workdir, home, "--once")
    assert again.wait(timeout=20) == 0, again.log()
    assert latest(workspace).version == 1, "an identical scan creates no new version"


def test_it_runs_as_a_management_command(live, tree, start_agent):
    _, workspace, token = live
    workdir, home = tree

    agent = start_agent(token, workdir, home, "--once", module=False)
    assert agent.wait(timeout=30) == 0, agent.log()
    snapshot = latest(workspace)
    assert snapshot is not None
    assert ("instruction", "AGENTS.md", "ok") in inventory(snapshot)
