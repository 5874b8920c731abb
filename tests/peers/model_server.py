"""A scripted OpenAI-compatible Chat Completions server for tests: a real HTTP server on 127.0.0.1.

It answers ``POST /v1/chat/completions`` (non-streaming, the OpenAI wire format) from a script, one step per request,
and records every request (path, headers, JSON body) for assertions. A step is one of:

- ``"text"``: an assistant message with that text;
- ``{"content": "…", "tool_calls": [{"id": "call_1", "name": "read_skill", "arguments": {"name": "x"}}]}``;
- ``{"status": 500, "body": {…} or "text", "headers": {…}}``: an HTTP error answer (``x-should-retry: false`` is
  sent unless ``headers`` says otherwise, so the SDK does not retry it);
- a callable ``step(request: RecordedRequest) -> step``, decided when the request arrives.

When the script runs out the ``then`` step answers (by default a 500 saying so, which makes the test fail loudly).

    from tests.peers.model_server import model_server_fixture  # noqa: F401  (registers ``model_server``)

    def test_x(model_server):
        model_server.script({"tool_calls": [{"id": "c1", "name": "read_skill", "arguments": {"name": "a"}}]}, "Done.")
        ...  # point a provider at model_server.url + "/v1"
        assert model_server.requests[0].tool_names == ["read_skill", "read_skill_file"]
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

EXHAUSTED = {"status": 500, "body": {"error": {"message": "model_server: the script has no step left"}}}


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # the parsed JSON body (or the raw text when it is not JSON)

    @property
    def messages(self) -> list[dict]:
        return list((self.body or {}).get("messages") or [])

    @property
    def tools(self) -> list[dict] | None:
        return (self.body or {}).get("tools")

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools or []]

    @property
    def model(self) -> str | None:
        return (self.body or {}).get("model")

    @property
    def system(self) -> str:
        return next((m.get("content") or "" for m in self.messages if m.get("role") == "system"), "")

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class ModelServer:
    """The running server. ``url`` is ``http://127.0.0.1:<port>``; point the SDK at ``url + "/v1"``."""

    url: str = ""
    requests: list[RecordedRequest] = field(default_factory=list)
    _steps: list = field(default_factory=list)
    _then: Any = field(default_factory=lambda: EXHAUSTED)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def script(self, *steps, then: Any = EXHAUSTED) -> ModelServer:
        """Replace the script: the steps answer the next requests in order, then ``then`` answers every other."""
        with self._lock:
            self._steps = list(steps)
            self._then = then
        return self

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._steps, self._then = [], EXHAUSTED

    def next_id(self, prefix: str = "call") -> str:
        return f"{prefix}_{next(self._ids)}"

    @property
    def completions(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    # Server side -----------------------------------------------------------------------------------------------

    def _answer(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests.append(request)
            step = self._steps.pop(0) if self._steps else self._then
        while callable(step):
            step = step(request)
        if isinstance(step, dict) and "status" in step:
            headers = {"x-should-retry": "false", **(step.get("headers") or {})}
            body = step.get("body", "")
            if isinstance(body, (dict, list)):
                headers.setdefault("content-type", "application/json")
                raw = json.dumps(body).encode()
            else:
                headers.setdefault("content-type", "text/plain; charset=utf-8")
                raw = str(body).encode()
            return int(step["status"]), headers, raw
        return 200, {"content-type": "application/json"}, json.dumps(self._completion(request, step)).encode()

    def _completion(self, request: RecordedRequest, step) -> dict:
        if isinstance(step, str):
            step = {"content": step}
        message: dict = {"role": "assistant", "content": step.get("content")}
        calls = step.get("tool_calls") or []
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id") or self.next_id(),
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"]
                        if isinstance(call.get("arguments"), str)
                        else json.dumps(call.get("arguments") or {}),
                    },
                }
                for call in calls
            ]
        return {
            "id": self.next_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model or "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def _handler_for(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, so no keep-alive connection can hold the server open at shutdown.
        protocol_version = "HTTP/1.0"
        timeout = 30

        def log_message(self, format: str, *args) -> None:  # quiet
            pass

        def _record(self, method: str) -> RecordedRequest:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {name.lower(): value for name, value in self.headers.items()}
            return RecordedRequest(method, self.path, headers, body)

        def _send(self, status: int, headers: dict[str, str], raw: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:  # noqa: N802
            request = self._record("POST")
            if request.path.split("?")[0].rstrip("/") != "/v1/chat/completions":
                server.requests.append(request)
                self._send(404, {"content-type": "application/json"}, b'{"error": {"message": "not found"}}')
                return
            try:
                status, headers, raw = server._answer(request)
            except Exception as exc:  # a broken script step: say so instead of hanging the client
                status, headers, raw = 500, {"x-should-retry": "false"}, f"model_server: {exc!r}".encode()
            self._send(status, headers, raw)

        def do_GET(self) -> None:  # noqa: N802
            server.requests.append(self._record("GET"))
            self._send(404, {"content-type": "application/json"}, b'{"error": {"message": "not found"}}')

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


def start() -> tuple[ModelServer, Callable[[], None]]:
    """Start a server on an ephemeral port in a thread. Returns it and the function that stops it."""
    server = ModelServer()
    httpd = _Server(("127.0.0.1", 0), _handler_for(server))
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)

    return server, stop


@pytest.fixture(name="model_server")
def model_server_fixture() -> Iterator[ModelServer]:
    """The ``model_server`` fixture: a fresh server per test. Import ``model_server_fixture`` into a test module
    (the fixture is registered under the name ``model_server``, so test arguments do not shadow the import)."""
    server, stop = start()
    try:
        yield server
    finally:
        stop()
