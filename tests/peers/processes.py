"""A project module run as a server process (``python -m <module> --port <port>``, as ``make run`` starts it), its
output kept in a file (not a pipe: a full pipe would block the server). Used by the tests of the demo servers."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.peers.mcp_servers import unused_port

ROOT = Path(__file__).resolve().parents[2]


class ServerProcess:
    what = "server"  # for error messages
    module = ""

    def __init__(self, port: int) -> None:
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.log = tempfile.TemporaryFile()
        # Our own fixed command line.
        self.proc = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", self.module, "--port", str(port)],
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    @classmethod
    def start(cls, port: int | None = None):
        """A started process, listening; closed again if it does not come up."""
        process = cls(port or unused_port())
        try:
            process.wait_until_listening()
        except BaseException:
            process.close()
            raise
        return process

    @classmethod
    @contextmanager
    def running(cls, *, stop_first: bool = True) -> Iterator:
        """A started process for a ``with`` block (a fixture's body). Afterwards it is stopped with SIGTERM
        (``stop_first``, which also checks that it stops), and killed if still there."""
        process = cls.start()
        try:
            yield process
        finally:
            try:
                if stop_first:
                    process.stop()
            finally:
                process.close()

    def wait_until_listening(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the {self.what} exited early:\n{self.output()}")
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.settimeout(0.2)
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"the {self.what} did not start listening in time")

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")
