#!/usr/bin/env python3
"""Run Switchboard for development: the web server, a Celery worker, Celery beat, the demo MCP server and the demo
OAuth provider with its protected demo MCP server (``make run``).

First applies migrations and seeds the demo data (``manage.py seed_demo``, which prints the demo sign-ins and
registers both demo MCP servers in ``acme``), then supervises five child processes. Ctrl-C or SIGTERM stops them all
and exits 0; if one of them dies on its own, the others are stopped and this script exits non-zero naming it.

Standard library only: it runs with the project's virtualenv Python (``.venv/bin/python scripts/run.py``).
Environment: PORT (default 8000); DEMO_MCP_PORT (default 8765), the demo MCP server's port, and DEMO_OAUTH_PORT
(default 8766), the demo OAuth provider's (its MCP server is at /mcp there), both passed on to the children so that
seed_demo registers the URLs the servers listen on; DEBUG defaults to true for the children, and SITE_URL to
http://127.0.0.1:PORT; everything else as in the README.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
STOP_TIMEOUT = 10.0
PORT_DIGITS = re.compile(r"[0-9]{1,5}")
DEFAULT_PORT = 8000
DEFAULT_DEMO_MCP_PORT = 8765
DEFAULT_DEMO_OAUTH_PORT = 8766


def say(message: str) -> None:
    print(f"[run] {message}", flush=True)


def describe_url(url: str) -> str:
    """scheme://user@host:port/path with any password left out."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if ":" in netloc:  # IPv6 literal
        netloc = f"[{netloc}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port:
        netloc = f"{netloc}:{port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    return f"{parts.scheme}://{netloc}{parts.path}"


def describe_services(env: dict[str, str]) -> list[str]:
    var_dir = Path(env.get("SWITCHBOARD_VAR_DIR") or ROOT / "var")
    database_url = env.get("DATABASE_URL", "")
    broker_url = env.get("CELERY_BROKER_URL", "")
    redis_url = env.get("REDIS_URL", "")
    lines = [
        "database: "
        + (describe_url(database_url) if database_url else f"SQLite file {var_dir / 'switchboard.sqlite3'}"),
        "broker:   "
        + (
            describe_url(broker_url)
            if broker_url and not broker_url.startswith("filesystem://")
            else f"file-system broker under {var_dir / 'celery'}"
        ),
        "cache:    " + (describe_url(redis_url) if redis_url else f"files under {var_dir / 'cache'}"),
    ]
    return lines


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((HOST, port)) == 0


class Supervisor:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.children: list[tuple[str, subprocess.Popen]] = []
        self.stop_signal: int | None = None
        self.signal_count = 0
        self.step: subprocess.Popen | None = None

    def on_signal(self, signum: int, frame) -> None:
        self.signal_count += 1
        if self.stop_signal is None:
            self.stop_signal = signum
        if self.step is not None and self.step.poll() is None:
            self.step.terminate()
        if self.signal_count > 1:
            # A second Ctrl-C while stopping: do not wait any longer.
            for _name, proc in self.children:
                self.signal_group(proc, signal.SIGKILL)

    def run_step(self, args: list[str]) -> int:
        """Run one setup command in the foreground and wait for it."""
        # Our own fixed command lines, never user input.
        self.step = subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env)  # noqa: S603
        try:
            return self.step.wait()
        finally:
            self.step = None

    def start(self, name: str, args: list[str]) -> None:
        # Each child gets its own process group, so that the terminal's Ctrl-C reaches only this supervisor,
        # which then stops the children in order, grandchildren included (runserver's reloader).
        proc = subprocess.Popen(args, cwd=ROOT, env=self.env, start_new_session=True)  # noqa: S603
        self.children.append((name, proc))

    @staticmethod
    def signal_group(proc: subprocess.Popen, signum: int) -> None:
        try:
            os.killpg(proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def stop_all(self) -> None:
        for _name, proc in self.children:
            self.signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for name, proc in self.children:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"{name} did not stop within {STOP_TIMEOUT:.0f} s; killing it")
                self.signal_group(proc, signal.SIGKILL)
                proc.wait()
            # Leftovers of a group whose leader already exited (for example runserver's reloaded child).
            self.signal_group(proc, signal.SIGKILL)

    def watch(self, port: int) -> int:
        announced = False
        started = time.monotonic()
        while self.stop_signal is None:
            for name, proc in self.children:
                code = proc.poll()
                if code is not None:
                    say(f"{name} exited on its own (exit code {code}); stopping the others")
                    self.stop_all()
                    return code if code > 0 else 1
            if not announced and port_in_use(port):
                announced = True
                say(f"Switchboard is ready at http://{HOST}:{port}/  (Ctrl-C stops everything)")
            elif not announced and time.monotonic() - started > 60:
                announced = True
                say(f"the web server is not answering on port {port} yet; see its output above")
            time.sleep(0.2)
        say(f"stopping ({signal.Signals(self.stop_signal).name})")
        self.stop_all()
        say("stopped")
        return 0


class Refused(Exception):
    """The environment cannot be run as it is: ``str(exc)`` says why, ``exit_code`` is what the script exits with."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Ports(NamedTuple):
    web: int
    demo_mcp: int
    demo_oauth: int


def parse_port(env: dict[str, str], variable: str, default: int) -> int:
    """The port ``env[variable]`` names (surrounding blanks ignored), or ``default`` when it is unset or blank.

    Sets ``env[variable]`` to the port in plain digits, since the children read it (seed_demo registers the demo
    ports). Raises ``Refused`` (exit code 2) for anything but a number from 1 to 65535 in ASCII digits.
    """
    text = env.get(variable, "").strip()
    if not text:
        port = default
    # A pattern rather than str.isdigit(): that also takes "²", which int() refuses, and "٨٠٠٠" (Arabic-Indic
    # digits), which int() reads but which would reach the children as they are.
    elif PORT_DIGITS.fullmatch(text) and 0 < int(text) < 65536:
        port = int(text)
    else:
        raise Refused(f"{variable} must be a port number (1 to 65535), not {text!r}", 2)
    env[variable] = str(port)
    return port


def prepare_env(environ: Mapping[str, str]) -> tuple[dict[str, str], Ports]:
    """The children's environment and the ports to listen on, from ``environ`` (which is left unchanged).

    Raises ``Refused`` (exit code 2 for a bad value, 1 for a port already in use) before anything has started.
    The checks probe the ports on HOST, so a port that is free now may still be taken before a child binds it.
    """
    env = dict(environ)
    env.setdefault("DEBUG", "true")
    env["DJANGO_SETTINGS_MODULE"] = "project.settings"
    env["PYTHONUNBUFFERED"] = "1"

    port = parse_port(env, "PORT", DEFAULT_PORT)
    if port_in_use(port):
        raise Refused(f"port {port} on {HOST} is already in use; stop what is running there or set PORT=...", 1)
    # Absolute links (the OAuth2 callback an MCP provider sends the browser back to) point at this server.
    env.setdefault("SITE_URL", f"http://{HOST}:{port}")
    demo_ports: dict[str, int] = {}
    for variable, default, what in (
        ("DEMO_MCP_PORT", DEFAULT_DEMO_MCP_PORT, "the demo MCP server"),
        ("DEMO_OAUTH_PORT", DEFAULT_DEMO_OAUTH_PORT, "the demo OAuth provider"),
    ):
        value = parse_port(env, variable, default)
        taken = {"PORT": port, **demo_ports}
        for other, other_value in taken.items():
            if other_value == value:
                raise Refused(f"{variable} and {other} are both {value}; give {what} another port", 2)
        if port_in_use(value):
            raise Refused(
                f"port {value} on {HOST} ({what}) is already in use; stop what is running there or set {variable}=...",
                1,
            )
        demo_ports[variable] = value
    return env, Ports(port, demo_ports["DEMO_MCP_PORT"], demo_ports["DEMO_OAUTH_PORT"])


def main() -> int:
    os.chdir(ROOT)
    try:
        env, (port, demo_port, oauth_port) = prepare_env(os.environ)
    except Refused as refusal:
        say(str(refusal))
        return refusal.exit_code

    supervisor = Supervisor(env)
    signal.signal(signal.SIGINT, supervisor.on_signal)
    signal.signal(signal.SIGTERM, supervisor.on_signal)

    for step in (["migrate", "--noinput"], ["seed_demo"]):
        say("manage.py " + " ".join(step))
        code = supervisor.run_step(step) if supervisor.stop_signal is None else 0
        if supervisor.stop_signal is not None:
            say("interrupted")
            return 0
        if code != 0:
            say(f"manage.py {step[0]} failed (exit code {code})")
            return code if code > 0 else 1

    python = sys.executable
    supervisor.start("web server (manage.py runserver)", [python, "manage.py", "runserver", f"{HOST}:{port}"])
    supervisor.start(
        "Celery worker", [python, "-m", "celery", "-A", "project", "worker", "--loglevel=INFO", "--pool=solo"]
    )
    supervisor.start("Celery beat", [python, "-m", "celery", "-A", "project", "beat", "--loglevel=INFO"])
    supervisor.start(
        "demo MCP server (mcpservers.demo_server)",
        [python, "-m", "mcpservers.demo_server", "--host", HOST, "--port", str(demo_port)],
    )
    supervisor.start(
        "demo OAuth provider (mcpservers.demo_auth_server)",
        [python, "-m", "mcpservers.demo_auth_server", "--host", HOST, "--port", str(oauth_port)],
    )

    say(f"URL:      http://{HOST}:{port}/")
    say(f"demo MCP: http://{HOST}:{demo_port}/mcp  (registered in acme as 'Demo tools')")
    say(
        f"demo MCP: http://{HOST}:{oauth_port}/mcp  (registered in acme as 'Demo tools (OAuth)'; "
        f"its provider is http://{HOST}:{oauth_port}/)"
    )
    for line in describe_services(env):
        say(line)
    say(f"DEBUG={env['DEBUG']}; the demo sign-ins are printed above by seed_demo")
    return supervisor.watch(port)


if __name__ == "__main__":
    sys.exit(main())
