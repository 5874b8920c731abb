"""A synchronous MCP client: list a server's tools and call one, over streamable HTTP or SSE.

Callers are Django views and Celery tasks, so every operation is synchronous: it opens a session with the official
``mcp`` SDK (initialize, then the request), runs it to completion on an event loop in the calling thread
(``anyio.run``) and closes the session. No Django import here.

Every HTTP request of a session (initialize, notifications, tools/list, tools/call, the SSE stream and its POSTs,
the closing DELETE) carries the endpoint's static auth headers and, when ``identity`` is set, the Coder identity
headers; with a ``signing_secret`` each request is also signed, per request, over its own method, raw target and
exact body bytes (``mcpservers.signing.outgoing_headers``; an auth header wins a name collision). This is done in an
httpx request hook of the HTTP client handed to the SDK transport, so redirects and requests the SDK makes on its
own are covered too.

Limits (rules.md, MCP servers): at most 64 tools are kept from a listing, a tool result is cut at 256 KiB, an HTTP
response body (or one server-sent event) over 1 MiB fails the operation, connecting
(and initializing) is bounded by ``connect_timeout``, listing by ``connect_timeout`` again, a tool call by
``call_timeout``. Every failure raises ``MCPError`` with a message safe to show: it never carries a header value, a
secret, the URL or anything the server sent back.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as SDKError

from mcpservers import signing

__all__ = [
    "MAX_RESULT_BYTES",
    "MAX_TOOLS",
    "TOOL_CALL_ID_META_KEY",
    "TRANSPORTS",
    "Endpoint",
    "MCPError",
    "RemoteTool",
    "ToolOutcome",
    "call_tool",
    "list_tools",
]

logger = logging.getLogger(__name__)

TRANSPORTS = ("streamable_http", "sse")
MAX_TOOLS = 64
MAX_RESULT_BYTES = 256 * 1024
MAX_RESPONSE_BYTES = 1024 * 1024  # one HTTP response body (the SDK caps each server-sent event at 1 MiB too)
TRUNCATION_MARKER = "\n[tool result truncated at 256 KiB]"
TOOL_CALL_ID_META_KEY = "com.coder/tool_call_id"
MAX_LIST_PAGES = 16  # a server that keeps handing out cursors cannot keep us listing forever
CLOSE_GRACE_SECONDS = 5.0  # closing the session (DELETE, stream teardown) after the work is done
CLIENT_INFO = types.Implementation(name="switchboard", version="0.1.0")


@dataclass(frozen=True)
class Endpoint:
    url: str
    transport: str  # "streamable_http" | "sse"
    headers: dict[str, str]  # static auth headers (API key, custom headers, bearer token)
    identity: dict[str, str] = field(default_factory=dict)  # Coder identity headers to forward (empty: none)
    signing_secret: str | None = None  # sign every HTTP request of the session (only with identity headers)
    connect_timeout: float = 30.0
    call_timeout: float = 60.0


@dataclass(frozen=True)
class RemoteTool:
    name: str
    description: str
    input_schema: dict


@dataclass(frozen=True)
class ToolOutcome:
    content: str  # text parts joined; other parts summarised; at most 256 KiB (UTF-8)
    is_error: bool


class MCPError(Exception):
    """A failure talking to an MCP server. The message is safe to show to users and models. ``status`` is the HTTP
    status the server answered, when it answered one (a 401 lets OAuth2 callers refresh and retry once)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


# Public API ----------------------------------------------------------------------------------------------------


def list_tools(
    endpoint: Endpoint, *, keep: Callable[[RemoteTool], bool] | None = None, limit: int = MAX_TOOLS
) -> list[RemoteTool]:
    """The server's tools (following pagination), at most ``limit`` of them (``MAX_TOOLS`` unless told), in the
    server's order. ``keep`` chooses tools before the cap, so a tool the server lists late is not lost behind tools
    nobody may use."""

    async def work(session: ClientSession, phase: _Phase) -> list[RemoteTool]:
        phase.enter("list", endpoint.connect_timeout)
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.send_request(types.ListToolsRequest(params=params), types.ListToolsResult)
            for tool in result.tools:
                remote = RemoteTool(tool.name, tool.description or "", dict(tool.input_schema or {}))
                if keep is None or keep(remote):
                    tools.append(remote)
            cursor = result.next_cursor
            if not cursor or len(tools) >= limit:
                break
        return tools[:limit]

    return _run(endpoint, work)


def call_tool(endpoint: Endpoint, name: str, arguments: dict, *, tool_call_id: str) -> ToolOutcome:
    """Call one tool. ``tool_call_id`` (the model's call id, the same across retries of one model tool call) is sent
    as ``_meta["com.coder/tool_call_id"]``. A tool that fails gives ``ToolOutcome(is_error=True)``; a timeout, a
    refused connection or a protocol error raises ``MCPError``."""
    if not tool_call_id:
        raise ValueError("tool_call_id is required")

    async def work(session: ClientSession, phase: _Phase) -> ToolOutcome:
        phase.enter("call", endpoint.call_timeout)
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name=name, arguments=dict(arguments or {}), _meta={TOOL_CALL_ID_META_KEY: tool_call_id}
            )
        )
        # send_request, not session.call_tool: the latter may list the tools again to validate structured output.
        result = await session.send_request(request, types.CallToolResult)
        return ToolOutcome(content=_render(result), is_error=bool(result.is_error))

    return _run(endpoint, work)


# Running a session ------------------------------------------------------------------------------------------------


class _Phase:
    """Which step the session is in, and its deadline (the one cancel scope around the whole session)."""

    def __init__(self, scope: anyio.CancelScope) -> None:
        self.scope = scope
        self.name = "connect"
        self.seconds = 0.0
        self.http_status: int | None = None  # the last HTTP error status the server answered a POST with
        self.too_large = False  # a response body went past MAX_RESPONSE_BYTES

    def enter(self, name: str, seconds: float) -> None:
        self.name, self.seconds = name, seconds
        self.scope.deadline = anyio.current_time() + seconds


def _run[T](endpoint: Endpoint, work: Callable[[ClientSession, _Phase], Awaitable[T]]) -> T:
    _check(endpoint)

    async def main() -> T:
        return await _session_run(endpoint, work)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(main)
    # Called from inside a running event loop (an async context): run on a fresh loop in a helper thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-client") as pool:
        return pool.submit(anyio.run, main).result()


def _check(endpoint: Endpoint) -> None:
    if endpoint.transport not in TRANSPORTS:
        raise MCPError("unsupported MCP transport")
    if not endpoint.url.lower().startswith(("http://", "https://")):
        raise MCPError("the MCP server URL must be http:// or https://")
    if endpoint.connect_timeout <= 0 or endpoint.call_timeout <= 0:
        raise MCPError("MCP timeouts must be positive")
    try:
        _headers_for(endpoint, "POST", "/", b"")
    except (TypeError, ValueError):
        raise MCPError("invalid MCP server headers") from None


async def _session_run[T](endpoint: Endpoint, work: Callable[[ClientSession, _Phase], Awaitable[T]]) -> T:
    done: list[T] = []
    with anyio.CancelScope() as scope:
        phase = _Phase(scope)
        phase.enter("connect", endpoint.connect_timeout)
        try:
            async with _open(endpoint, phase) as (read, write):
                async with ClientSession(read, write, client_info=CLIENT_INFO) as session:
                    await session.initialize()
                    done.append(await work(session, phase))
                    phase.enter("close", min(CLOSE_GRACE_SECONDS, endpoint.connect_timeout))
        except MCPError:
            raise
        except Exception as exc:
            if done:  # the answer is in: a failure while closing the session does not lose it
                logger.debug("MCP session close failed", exc_info=True)
            elif scope.cancel_called:
                raise MCPError(_timeout_message(phase)) from None
            else:
                raise MCPError(_failure_message(exc, phase), status=_http_status(exc, phase)) from None
    if done:
        return done[0]
    raise MCPError(_timeout_message(phase))  # the deadline cancelled the work


@asynccontextmanager
async def _open(endpoint: Endpoint, phase: _Phase) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK transport's stream pair, over an HTTP client that adds (and signs) our headers on every request."""
    # httpx's own timeouts sit past ours, so ours decide; the read timeout covers the wait for a tool call's answer
    # (and, over SSE, the idle stream while a call runs).
    longest = max(endpoint.connect_timeout, endpoint.call_timeout) + CLOSE_GRACE_SECONDS
    timeout = httpx2.Timeout(longest, connect=endpoint.connect_timeout + 1.0, read=longest)

    async def on_request(request: httpx2.Request) -> None:
        body = await request.aread()
        target = request.url.raw_path.decode("ascii")
        for name, value in _headers_for(endpoint, request.method, target, body).items():
            request.headers[name] = value

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method != "POST":
            return  # the SSE stream's GET: its events are capped by the SDK; a refused GET raises on its own
        if response.status_code >= 400:
            phase.http_status = response.status_code
        if isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _CappedStream(response.stream, phase)

    def make_client(**_sdk_defaults: Any) -> httpx2.AsyncClient:
        # The SDK's own headers, timeouts and auth are not wanted: ours are set here and in the request hook.
        return httpx2.AsyncClient(
            timeout=timeout,
            follow_redirects=False,
            event_hooks={"request": [on_request], "response": [on_response]},
        )

    if endpoint.transport == "sse":
        async with sse_client(
            endpoint.url, timeout=longest, sse_read_timeout=longest, httpx_client_factory=make_client
        ) as streams:
            yield streams
    else:
        async with make_client() as client:
            async with streamable_http_client(endpoint.url, http_client=client) as streams:
                yield streams


class _ResponseTooLarge(Exception):
    pass


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that fails once it has gone past ``MAX_RESPONSE_BYTES`` (counted as received)."""

    def __init__(self, inner: httpx2.AsyncByteStream, phase: _Phase) -> None:
        self.inner = inner
        self.phase = phase

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self.inner:
            received += len(chunk)
            if received > MAX_RESPONSE_BYTES:
                self.phase.too_large = True
                raise _ResponseTooLarge
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def _headers_for(endpoint: Endpoint, method: str, target: str, body: bytes) -> dict[str, str]:
    """The headers one request adds: the auth headers, plus identity headers (signed with a secret) when set."""
    if not endpoint.identity:
        return dict(endpoint.headers)
    return signing.outgoing_headers(
        base=dict(endpoint.headers),
        identity=dict(endpoint.identity),
        secret=endpoint.signing_secret or None,
        method=method,
        target=target,
        body=body,
    )


# Messages (never the URL, a header value, a secret or the server's words) -------------------------------------


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _timeout_message(phase: _Phase) -> str:
    seconds = f"{phase.seconds:g}s"
    if phase.name == "connect":
        return f"could not connect to the MCP server (timeout after {seconds})"
    if phase.name == "list":
        return f"the MCP server did not list its tools in time (timeout after {seconds})"
    if phase.name == "call":
        return f"the MCP tool call timed out after {seconds}"
    return "the MCP server did not close the session in time"


def _http_status(exc: BaseException, phase: _Phase) -> int | None:
    leaves = list(_leaves(exc))
    status = next((leaf.response.status_code for leaf in leaves if isinstance(leaf, httpx2.HTTPStatusError)), None)
    return status or phase.http_status


def _failure_message(exc: BaseException, phase: _Phase) -> str:
    leaves = list(_leaves(exc))
    if phase.too_large or any(isinstance(leaf, _ResponseTooLarge) for leaf in leaves):
        return "the MCP server's response was larger than 1 MiB"
    if any(isinstance(leaf, httpx2.TimeoutException) for leaf in leaves):
        return _timeout_message(phase)
    if any(isinstance(leaf, httpx2.ConnectError) for leaf in leaves):
        return "could not connect to the MCP server (connection failed)"
    status = next((leaf.response.status_code for leaf in leaves if isinstance(leaf, httpx2.HTTPStatusError)), None)
    status = status or phase.http_status
    if status is not None:
        refused = " (refused: check the server's credentials)" if status in (401, 403) else ""
        return f"the MCP server answered HTTP {status}{refused}"
    if any(isinstance(leaf, httpx2.SSEError) for leaf in leaves):
        return "the MCP server sent an event larger than 1 MiB or a malformed event stream"
    for leaf in leaves:
        if isinstance(leaf, SDKError):
            if leaf.code == types.REQUEST_TIMEOUT:
                return _timeout_message(phase)
            if leaf.code == types.CONNECTION_CLOSED:
                return "the connection to the MCP server closed unexpectedly"
            return f"the MCP server returned an error (JSON-RPC code {leaf.code})"
    if any(isinstance(leaf, httpx2.TransportError) for leaf in leaves):
        return "network error talking to the MCP server"
    names = sorted({type(leaf).__name__ for leaf in leaves})
    step = {"connect": "connecting to", "list": "listing the tools of", "call": "calling a tool of"}.get(
        phase.name, "talking to"
    )
    return f"failed {step} the MCP server ({', '.join(names)})"


# Tool results ------------------------------------------------------------------------------------------------


def _render(result: types.CallToolResult) -> str:
    parts = [_render_part(part) for part in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return _truncate("\n".join(parts))


def _render_part(part: Any) -> str:
    if isinstance(part, types.TextContent):
        return part.text
    if isinstance(part, types.ImageContent):
        return f"[image: {part.mime_type}, {_decoded_size(part.data)} bytes]"
    if isinstance(part, types.AudioContent):
        return f"[audio: {part.mime_type}, {_decoded_size(part.data)} bytes]"
    if isinstance(part, types.ResourceLink):
        return f"[resource link: {part.uri}]"
    if isinstance(part, types.EmbeddedResource):
        resource = part.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        mime = resource.mime_type or "application/octet-stream"
        return f"[resource: {resource.uri}, {mime}, {_decoded_size(resource.blob)} bytes]"
    return f"[{getattr(part, 'type', 'unknown')} content]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _truncate(text: str) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= MAX_RESULT_BYTES:
        return text
    keep = MAX_RESULT_BYTES - len(TRUNCATION_MARKER.encode("utf-8"))
    return raw[:keep].decode("utf-8", errors="ignore") + TRUNCATION_MARKER
