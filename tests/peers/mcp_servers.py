"""Loopback MCP servers for tests: real servers built with the official SDK (``MCPServer``) on 127.0.0.1.

Each server runs uvicorn on an ephemeral port in a background thread, over either transport:
streamable HTTP (endpoint ``/mcp``) or SSE (stream ``/sse``, messages ``/messages/``). Its tools:

- ``echo(text)`` → the text; ``add(a, b)`` → the sum; ``big(size)`` → ``size`` characters of text;
- ``slow(seconds)`` sleeps that long, then answers ``"slept"``; ``fail()`` raises (an ``is_error`` result);
- ``tool_000`` … when ``extra_tools=n`` (n more trivial tools, to test caps).

An ASGI wrapper in front of the SDK's app records every HTTP request (method, raw target = path and query as sent,
lower-cased headers, raw body bytes). With ``require_header=(name, value)`` a request without that exact header
value is answered 401 with a body that says ``REFUSED-BODY-SENTINEL`` (tests check it never leaks). With
``signing_secret`` every request is checked by ``mcpservers.signing.verify`` and the verdict is recorded on it.

    from tests.peers.mcp_servers import mcp_server_fixture  # noqa: F401  (registers ``mcp_server``)

    def test_x(mcp_server):
        server = mcp_server(transport="sse", require_header=("X-Api-Key", "k"))
        ...  # point a client at server.url
        assert all(r.headers["x-api-key"] == "k" for r in server.requests)
        assert server.tool_call_metas == [{"com.coder/tool_call_id": "call_1"}]
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer

TRANSPORTS = ("streamable_http", "sse")
REFUSED_BODY = b'{"error": "REFUSED-BODY-SENTINEL: you shall not pass"}'


@dataclass
class RecordedRequest:
    method: str
    target: str  # the raw request target: path and query string, as sent
    headers: dict[str, str]  # lower-cased names
    body: bytes
    status: int | None = None  # 401 when refused by ``require_header``; None when passed on to the MCP app
    verdict: tuple[bool, str] | None = None  # ``signing.verify``'s answer when the server checks signatures

    @property
    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    @property
    def rpc_method(self) -> str | None:
        """The JSON-RPC method of a POSTed message (``initialize``, ``tools/call``, …), else None."""
        body = self.json
        return body.get("method") if isinstance(body, dict) else None


@dataclass
class MCPPeer:
    """A running server. ``url`` is the endpoint a client connects to (``…/mcp`` or ``…/sse``)."""

    transport: str
    base_url: str = ""
    requests: list[RecordedRequest] = field(default_factory=list)
    require_header: tuple[str, str] | None = None
    signing_secret: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return self.base_url + ("/mcp" if self.transport == "streamable_http" else "/sse")

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    def snapshot(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self.requests)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    def with_rpc_method(self, method: str) -> list[RecordedRequest]:
        return [r for r in self.snapshot() if r.rpc_method == method]

    @property
    def tool_call_metas(self) -> list[dict | None]:
        """The ``params._meta`` of every ``tools/call`` received, in order (None when absent)."""
        return [(r.json.get("params") or {}).get("_meta") for r in self.with_rpc_method("tools/call")]

    @property
    def verdicts(self) -> list[tuple[bool, str] | None]:
        return [r.verdict for r in self.snapshot()]


def build_mcp(extra_tools: int = 0) -> MCPServer:
    mcp = MCPServer("switchboard-test-peer", warn_on_duplicate_tools=False, log_level="WARNING")

    @mcp.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    @mcp.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool(description="Answer with that many characters.")
    def big(size: int) -> str:
        return "x" * size

    @mcp.tool(description="Sleep, then answer.")
    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "slept"

    @mcp.tool(description="Always fails.")
    def fail() -> str:
        raise RuntimeError("the tool failed on purpose")

    for index in range(extra_tools):

        def extra(index: int = index) -> str:
            return f"extra {index}"

        mcp.add_tool(extra, name=f"tool_{index:03d}", description=f"Extra tool {index}.")
    return mcp


class RecordingASGI:
    """Records each HTTP request (whole body read first, then replayed to the app), refuses or verifies it."""

    def __init__(self, app: Callable, peer: MCPPeer) -> None:
        self.app = app
        self.peer = peer

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        record = RecordedRequest(scope["method"], target.decode("latin-1"), headers, body)
        peer = self.peer
        if peer.signing_secret is not None:
            from mcpservers import signing

            record.verdict = tuple(
                signing.verify(
                    secret=peer.signing_secret,
                    method=record.method,
                    target=record.target,
                    body=body,
                    headers=dict(headers),
                )
            )
        with peer._lock:
            peer.requests.append(record)
        if peer.require_header is not None:
            name, value = peer.require_header
            if headers.get(name.lower()) != value:
                record.status = 401
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", b"%d" % len(REFUSED_BODY)),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": REFUSED_BODY})
                return

        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def start(
    transport: str = "streamable_http",
    *,
    require_header: tuple[str, str] | None = None,
    signing_secret: str | None = None,
    extra_tools: int = 0,
) -> tuple[MCPPeer, Callable[[], None]]:
    """Start a server on an ephemeral port in a thread. Returns it and the function that stops it."""
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r}")
    peer = MCPPeer(transport=transport, require_header=require_header, signing_secret=signing_secret)
    mcp = build_mcp(extra_tools)
    app = mcp.streamable_http_app() if transport == "streamable_http" else mcp.sse_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    peer.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(
        RecordingASGI(app, peer),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=1,
        ws="none",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="mcp-peer")
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the MCP test server did not start")
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True  # graceful: open streams and sleeping tools are cancelled after 1 s
        thread.join(timeout=4)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=2)
        sock.close()

    return peer, stop


@pytest.fixture(name="mcp_server")
def mcp_server_fixture() -> Iterator[Callable[..., MCPPeer]]:
    """The ``mcp_server`` fixture: a factory ``mcp_server(transport="streamable_http", require_header=None,
    signing_secret=None, extra_tools=0)`` that starts a server; every server started is stopped after the test.
    Import ``mcp_server_fixture`` into a test module (registered under the name ``mcp_server``)."""
    stops: list[Callable[[], None]] = []

    def make(
        transport: str = "streamable_http",
        require_header: tuple[str, str] | None = None,
        signing_secret: str | None = None,
        extra_tools: int = 0,
    ) -> MCPPeer:
        peer, stop = start(
            transport, require_header=require_header, signing_secret=signing_secret, extra_tools=extra_tools
        )
        stops.append(stop)
        return peer

    try:
        yield make
    finally:
        for stop in reversed(stops):
            stop()


def silent_listener() -> tuple[int, Callable[[], None]]:
    """A TCP port that accepts connections (the kernel completes the handshake) but never answers: a hung server."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock.getsockname()[1], sock.close


def unused_port() -> int:
    """A loopback port nobody listens on (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
