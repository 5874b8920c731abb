"""The workspace agent: runs next to the files, scans them, pushes snapshots to the server, and answers its requests.

``python -m workspaces.agent --url URL --token TOKEN --dir DIR [--source DIR]... [--home DIR] [--ready-file PATH]
[--quiet-period SECONDS] [--once]`` (or ``manage.py workspace_agent`` with the same options).

- It reports ``starting``, waits for ``--ready-file`` when one is given (pushing nothing meanwhile, but already
  long-polling the request channel so the server sees it connected), reports ``ready``, scans and pushes.
- It watches the scan roots with ``watchfiles`` and, once the files have been quiet for ``--quiet-period`` seconds,
  scans again; it pushes only when the resource list differs from the last one it pushed. Roots that do not exist
  yet (``~/.coder/skills`` created later) are found because the roots are re-evaluated on every scan and the nearest
  existing parent of a missing root is watched.
- A background thread long-polls ``GET /requests`` and answers ``read_skill_file`` only for a skill directory of its
  latest scan, so the server cannot make it read any other folder.
- Network errors and 5xx answers are retried with capped exponential backoff. A 401 (the token is wrong or was
  rotated) ends it with exit status 2; SIGINT and SIGTERM end it cleanly with exit status 0.

This module imports no Django: the agent may run where the server's settings are not available. The protocol is
described in ``workspaces/api.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import threading
import time
from datetime import UTC, datetime

import requests
import watchfiles

from workspaces import scanner

AGENT_PREFIX = "/api/v2/workspace-agent"
LONG_POLL_SECONDS = 25
READY_FILE_POLL_SECONDS = 0.2
BACKOFF_START = 0.5
BACKOFF_MAX = 30.0
ONCE_ATTEMPTS = 5  # --once gives up after this many failed tries of one call, so a script does not hang forever
WATCH_TICK_MS = 1000  # the watcher wakes at least this often to notice new roots and the periodic re-scan
PERIODIC_RESCAN_SECONDS = 60.0  # a safety net for changes a watcher can miss (network file systems, races)
MAX_WATCHED_DIRS = 2000
RESPONSE_KEYS = ("ok", "content", "size", "truncated", "error")
UNKNOWN_SKILL_DIR = "unknown skill directory"
UNSUPPORTED_REQUEST = "unsupported request"
EXIT_OK, EXIT_FAILED, EXIT_UNAUTHORIZED = 0, 1, 2


class Unauthorized(Exception):
    """The server answered 401: the token is wrong or was rotated."""


class Stopped(Exception):
    """The agent is stopping (a signal, a fatal error in another thread, or --once ran out of attempts)."""


class Rejected(Exception):
    """The server refused a call for good (a 4xx other than 401); retrying would not help."""

    def __init__(self, status: int, detail: str):
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


class Log:
    """One line per event on stderr. Never prints the token, even if some library message were to contain it."""

    def __init__(self, secret: str = "", stream=None):
        self.secret = secret
        self.stream = stream
        self.lock = threading.Lock()

    def __call__(self, message: str) -> None:
        if self.secret:
            message = message.replace(self.secret, "***")
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = f"{stamp} workspace-agent: {' '.join(message.split())}\n"
        with self.lock:
            stream = self.stream or sys.stderr
            try:
                stream.write(line)
                stream.flush()
            except (OSError, ValueError):
                pass


def _detail(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("message") or body)[:500]
    return str(body)[:500]


class Client:
    """The agent's side of the channel. One per thread: a requests.Session is not meant to be shared."""

    def __init__(self, base_url: str, token: str, stop: threading.Event, log: Log, *, attempts: int | None = None):
        self.base_url = base_url
        self.stop = stop
        self.log = log
        self.attempts = attempts
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Bearer {token}", "User-Agent": "switchboard-workspace-agent"})

    def call(self, method: str, path: str, *, timeout: float = 30.0, **kwargs) -> requests.Response:
        """A 2xx response. Retries network errors and 5xx with capped exponential backoff until it works or the agent
        stops (Stopped). Raises Unauthorized on 401 and Rejected on any other 4xx."""
        backoff = BACKOFF_START
        failures = 0
        while not self.stop.is_set():
            try:
                response = self.session.request(method, self.base_url + path, timeout=timeout, **kwargs)
            except requests.RequestException as exc:
                problem = f"{type(exc).__name__}"
            else:
                if response.status_code == 401:
                    raise Unauthorized()
                if response.status_code < 400:
                    if failures:
                        self.log(f"{method} {path} works again after {failures} failed attempts")
                    return response
                if response.status_code < 500 and response.status_code not in (408, 429):
                    raise Rejected(response.status_code, _detail(response))
                problem = f"HTTP {response.status_code}"
            failures += 1
            if self.attempts is not None and failures >= self.attempts:
                self.log(f"{method} {path} failed ({problem}); giving up after {failures} attempts")
                raise Stopped()
            self.log(f"{method} {path} failed ({problem}); retrying in {backoff:g} s")
            if self.stop.wait(backoff):
                break
            backoff = min(backoff * 2, BACKOFF_MAX)
        raise Stopped()

    def close(self) -> None:
        self.session.close()


def resources_hash(resources: list[dict]) -> str:
    """The hash the agent compares scans by: SHA-256 of the canonical JSON of the resource list."""
    canonical = json.dumps(resources, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _nearest_existing(path: str) -> str | None:
    current = os.path.abspath(path)
    while True:
        if os.path.isdir(current):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _resolves_inside(path: str, root: str) -> bool:
    """Whether ``path`` still leads inside ``root`` once symlinks are resolved. The scanner lists a skill folder that
    is a symlink out of its root (as excluded, with its ``dir``); the agent must not read through it."""
    real, root_real = os.path.realpath(path), os.path.realpath(root)
    try:
        return os.path.commonpath([real, root_real]) == root_real
    except ValueError:
        return False


class Agent:
    def __init__(self, options: argparse.Namespace, *, log: Log | None = None):
        self.workdir = os.path.abspath(options.dir)
        self.home = os.path.abspath(os.path.expanduser(options.home)) if options.home else None
        self.sources = list(options.source or [])
        self.ready_file = os.path.abspath(options.ready_file) if options.ready_file else None
        self.quiet_period = max(0.0, float(options.quiet_period))
        self.once = bool(options.once)
        self.token = options.token
        url = options.url.rstrip("/")
        self.base_url = url if url.endswith(AGENT_PREFIX) else url + AGENT_PREFIX
        self.log = log or Log(self.token)
        self.stop = threading.Event()
        self.exit_code = EXIT_OK
        self.fatal_lock = threading.Lock()
        # The skill directories of the latest scan, each with its root: the only folders the server may read in.
        self.skill_dirs: dict[str, str] = {}
        self.roots: list[scanner.Root] = []
        self.last_pushed: str | None = None
        self.next_periodic = 0.0

    # Lifecycle --------------------------------------------------------------------------------------------------------

    def fail(self, code: int, message: str) -> None:
        """Stop the agent with ``code``; only the first fatal message is logged."""
        with self.fatal_lock:
            if self.exit_code == EXIT_OK:
                self.exit_code = code
                self.log(message)
        self.stop.set()

    def unauthorized(self) -> None:
        self.fail(
            EXIT_UNAUTHORIZED,
            "the server rejected the workspace token (401): it is wrong or was rotated; "
            "start the agent again with the workspace's current token",
        )

    def run(self) -> int:
        client = Client(self.base_url, self.token, self.stop, self.log, attempts=ONCE_ATTEMPTS if self.once else None)
        poller = None
        try:
            self.log(f"starting: server {self.base_url}, working directory {self.workdir}")
            if not os.path.isdir(self.workdir):
                self.log(f"the working directory {self.workdir} does not exist (yet); it is scanned once it does")
            self.post_status(client, "starting")
            if not self.once:
                poller = threading.Thread(target=self.serve_requests, name="workspace-agent-requests", daemon=True)
                poller.start()
            if not self.wait_until_ready():
                return self.exit_code
            self.post_status(client, "ready")
            self.rescan(client)
            if self.once:
                return self.exit_code
            self.watch(client)
        except Unauthorized:
            self.unauthorized()
        except Stopped:
            if self.once and self.exit_code == EXIT_OK:
                self.exit_code = EXIT_FAILED
        except Rejected as exc:
            self.fail(EXIT_FAILED, f"the server refused the agent ({exc.status}): {exc.detail}")
        finally:
            self.stop.set()
            client.close()
            if poller is not None:
                # A long-poll in flight cannot be interrupted; the thread is a daemon and ends with the process.
                poller.join(timeout=0.5)
        self.log(f"stopped (exit status {self.exit_code})")
        return self.exit_code

    def post_status(self, client: Client, status: str) -> None:
        client.call("POST", "/status", json={"status": status})
        self.log(f"reported status {status}")

    def wait_until_ready(self) -> bool:
        """Wait for the ready file, if any. False when the agent stopped meanwhile."""
        if self.ready_file is None or os.path.exists(self.ready_file):
            return not self.stop.is_set()
        self.log(f"waiting for the ready file {self.ready_file}; publishing nothing until it exists")
        while not self.stop.wait(READY_FILE_POLL_SECONDS):
            if os.path.exists(self.ready_file):
                self.log("the ready file exists: the workspace is ready")
                return True
        return False

    # Scanning and pushing ---------------------------------------------------------------------------------------------

    def current_roots(self) -> list[scanner.Root]:
        return scanner.roots_for(self.workdir, self.home, self.sources)

    def rescan(self, client: Client) -> None:
        """Scan; push when the resources differ from the last push (the first scan is always pushed)."""
        self.roots = self.current_roots()
        result = scanner.scan(self.roots)
        resources = result["resources"]
        self.skill_dirs = {
            r["skill"]["dir"]: r["root"]
            for r in resources
            if r.get("kind") == "skill"
            and (r.get("skill") or {}).get("dir")
            and _resolves_inside(r["skill"]["dir"], r["root"])
        }
        self.next_periodic = time.monotonic() + PERIODIC_RESCAN_SECONDS
        digest = resources_hash(resources)
        if digest == self.last_pushed:
            return
        try:
            response = client.call("POST", "/snapshot", json={"resources": resources})
        except Rejected as exc:
            # Remember it anyway: the same inventory would be refused again; the next change is pushed.
            self.last_pushed = digest
            self.log(f"the server refused the snapshot ({exc.status}): {exc.detail}")
            if self.once:
                self.exit_code = EXIT_FAILED
            return
        self.last_pushed = digest
        try:
            body = response.json()
        except ValueError:
            body = {}
        state = "new" if body.get("created") else "unchanged"
        self.log(
            f"pushed {len(resources)} resources from {len(self.roots)} roots: snapshot version "
            f"{body.get('version', '?')} ({state})"
        )

    # Watching ---------------------------------------------------------------------------------------------------------

    def watch_paths(self) -> list[str]:
        """The folders to watch (each non-recursively): every root and its skill containers, every skill folder and
        the folders below it, and for whatever does not exist yet its nearest existing parent."""
        wanted: set[str] = set()
        candidates = [self.workdir]
        if self.home:
            candidates += [
                os.path.join(self.home, ".coder", "skills"),
                os.path.join(self.home, ".claude", "plugins", "cache"),
            ]
        candidates += [root.path for root in self.roots]
        for source in self.sources:
            if self.home and (source == "~" or source.startswith("~/")):
                candidates.append(os.path.join(self.home, source[2:]))
            else:
                candidates.append(os.path.join(self.workdir, source))
        if self.ready_file:
            candidates.append(os.path.dirname(self.ready_file))
        for candidate in candidates:
            existing = _nearest_existing(candidate)
            if existing:
                wanted.add(existing)
        for root in self.roots:
            containers = ("",) if root.kind == "home_coder_skills" else scanner.SKILL_CONTAINERS
            for container in containers:
                container_path = os.path.join(root.path, container) if container else root.path
                existing = _nearest_existing(container_path)
                if existing and existing.startswith(root.path):
                    wanted.add(existing)
        for skill_dir in self.skill_dirs:
            for current, dirnames, _ in os.walk(skill_dir):
                wanted.add(current)
                dirnames[:] = [
                    d for d in dirnames if not d.startswith(".") and not os.path.islink(os.path.join(current, d))
                ]
                if len(wanted) > MAX_WATCHED_DIRS:
                    break
        return sorted(wanted)[:MAX_WATCHED_DIRS]

    def watch(self, client: Client) -> None:
        quiet_ms = max(10, int(self.quiet_period * 1000))
        force_polling = None
        while not self.stop.is_set():
            paths = self.watch_paths()
            roots = [root.path for root in self.roots]
            self.log(f"watching {len(paths)} folders")
            # The first wake-up after (re)starting the watcher scans again: a change made while no watcher ran
            # (between the last scan and now) is not lost.
            rescan_pending = True
            try:
                for changes in watchfiles.watch(
                    *paths,
                    watch_filter=None,
                    debounce=max(quiet_ms * 10, 2000),
                    step=quiet_ms,
                    stop_event=self.stop,
                    rust_timeout=max(WATCH_TICK_MS, quiet_ms),
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    recursive=False,
                    force_polling=force_polling,
                ):
                    if self.stop.is_set():
                        return
                    roots_changed = [root.path for root in self.current_roots()] != roots
                    if changes or rescan_pending or roots_changed or time.monotonic() >= self.next_periodic:
                        rescan_pending = False
                        self.rescan(client)
                        if self.watch_paths() != paths:
                            break  # new roots or skill folders: restart the watcher on the new set
            except (OSError, RuntimeError) as exc:
                if self.stop.is_set():
                    return
                self.log(f"the file watcher failed ({type(exc).__name__}: {exc}); polling the folders instead")
                force_polling = True
                self.stop.wait(1.0)

    # Requests from the server -----------------------------------------------------------------------------------------

    def answer(self, request: dict) -> dict:
        kind = request.get("kind")
        payload = request.get("payload") if isinstance(request.get("payload"), dict) else {}
        if kind != "read_skill_file":
            return {"ok": False, "error": UNSUPPORTED_REQUEST}
        skill_dir = payload.get("skill_dir")
        skill_dirs = self.skill_dirs
        if not isinstance(skill_dir, str) or skill_dir not in skill_dirs:
            return {"ok": False, "error": UNKNOWN_SKILL_DIR}
        if not _resolves_inside(skill_dir, skill_dirs[skill_dir]):  # swapped for a symlink since the scan
            return {"ok": False, "error": UNKNOWN_SKILL_DIR}
        try:
            result = scanner.read_supporting_file(skill_dir, payload.get("path"))
        except Exception as exc:  # one unreadable file must not end the agent
            self.log(f"reading a supporting file failed: {type(exc).__name__}")
            return {"ok": False, "error": scanner.FILE_UNREADABLE_MESSAGE}
        return {key: result[key] for key in RESPONSE_KEYS if key in result}

    def serve_requests(self) -> None:
        client = Client(self.base_url, self.token, self.stop, self.log)
        try:
            while not self.stop.is_set():
                started = time.monotonic()
                response = client.call(
                    "GET", "/requests", params={"wait": LONG_POLL_SECONDS}, timeout=LONG_POLL_SECONDS + 15
                )
                try:
                    pending = response.json().get("requests") or []
                except (ValueError, AttributeError):
                    self.log("the server answered the request channel with something that is not JSON")
                    pending = []
                for request in pending:
                    if not isinstance(request, dict) or "id" not in request:
                        continue
                    answer = self.answer(request)
                    outcome = "ok" if answer.get("ok") else answer.get("error", "error")
                    self.log(f"request {request.get('kind')} {request['id']}: {outcome}")
                    try:
                        client.call("POST", f"/requests/{request['id']}/response", json=answer)
                    except Rejected as exc:
                        self.log(f"the answer to request {request['id']} was not taken ({exc.status})")
                if not pending:
                    # A server that answers at once (no long-poll) must not be hammered.
                    self.stop.wait(max(0.0, 0.5 - (time.monotonic() - started)))
        except Unauthorized:
            self.unauthorized()
        except Stopped:
            pass
        except Rejected as exc:
            self.fail(EXIT_FAILED, f"the server refused the request channel ({exc.status}): {exc.detail}")
        except Exception as exc:  # report it, and let the main thread end the agent
            self.fail(EXIT_FAILED, f"the request channel failed: {type(exc).__name__}: {exc}")
        finally:
            client.close()


# Command line ---------------------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The agent's options; the management command declares the same ones."""
    parser.add_argument("--url", required=True, help="the Switchboard server, e.g. https://switchboard.example.com")
    parser.add_argument(
        "--token",
        default=os.environ.get("WORKSPACE_AGENT_TOKEN") or None,
        required=not os.environ.get("WORKSPACE_AGENT_TOKEN"),
        help="the workspace's agent token (default: $WORKSPACE_AGENT_TOKEN, which keeps it out of the process list)",
    )
    parser.add_argument("--dir", required=True, help="the workspace working directory")
    parser.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="DIR",
        help="an extra scan root for instruction files and skills (repeatable; relative to --dir, or ~/...)",
    )
    parser.add_argument("--home", default=os.environ.get("HOME"), help="the home directory (default: $HOME)")
    parser.add_argument("--ready-file", help="publish nothing until this file exists (startup scripts create it)")
    parser.add_argument(
        "--quiet-period",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="scan again once the files have been quiet this long (default: 1.0)",
    )
    parser.add_argument("--once", action="store_true", help="scan, push once and exit")


def argv_from_options(options: dict) -> list[str]:
    """The command line that gives ``main`` these parsed options (the management command's pass-through)."""
    argv = ["--url", options["url"], "--token", options["token"], "--dir", options["dir"]]
    for source in options.get("source") or []:
        argv += ["--source", source]
    if options.get("home"):
        argv += ["--home", options["home"]]
    if options.get("ready_file"):
        argv += ["--ready-file", options["ready_file"]]
    if options.get("quiet_period") is not None:
        argv += ["--quiet-period", repr(float(options["quiet_period"]))]
    if options.get("once"):
        argv.append("--once")
    return argv


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workspaces.agent",
        description="Scan a workspace for instruction files, skills and MCP configuration, push snapshots to "
        "Switchboard, and answer its requests for skill files.",
    )
    add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    if options.quiet_period < 0:
        build_parser().error("--quiet-period must not be negative")
    agent = Agent(options)

    def stop(signum, frame):
        agent.log(f"received {signal.Signals(signum).name}: stopping")
        agent.stop.set()

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, stop)
        except ValueError:  # not the main thread: whoever runs us handles signals
            pass
    try:
        return agent.run()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
