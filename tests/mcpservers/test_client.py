"""The synchronous MCP client (``mcpservers.client``) against real loopback MCP servers built with the official SDK,
over both transports: listing, calling, ``_meta`` tool call ids, auth headers, identity headers and signatures on
every HTTP request, refusals, timeouts, and the caps of rules.md (64 tools, 256 KiB results)."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import time
from pathlib import Path

import mcp_types as types
import pytest

from mcpservers import client
from mcpservers.client import Endpoint, MCPError, RemoteTool, ToolOutcome, call_tool, list_tools
from tests.peers.mcp_servers import REFUSED_BODY, mcp_server_fixture, silent_listener, unused_port  # noqa: F401

TRANSPORTS = ["streamable_http", "sse"]
SECRET = "5f2b7c0e9a41d3c8b6e2f0a7d9c4b1e35f2b7c0e9a41d3c8b6e2f0a7d9c4b1e3"
IDENTITY = {
    "X-Coder-Owner-Id": "7d3f6a1e-0000-4000-8000-000000000001",
    "X-Coder-Chat-Id": "7d3f6a1e-0000-4000-8000-0000000000c1",
    "X-Coder-Subchat-Id": "7d3f6a1e-0000-4000-8000-0000000000c2",
    "X-Coder-Workspace-Id": "7d3f6a1e-0000-4000-8000-0000000000f1",
}
IDENTITY_NAMES = {name.lower() for name in IDENTITY} | {"x-coder-signature", "x-coder-signature-timestamp"}


def endpoint(server, **extra) -> Endpoint:
    extra.setdefault("headers", {})
    return Endpoint(url=server.url, transport=server.transport, **extra)


def rpc_methods(server) -> list[str | None]:
    return [request.rpc_method for request in server.snapshot()]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_lists_and_calls_tools(mcp_server, transport):
    server = mcp_server(transport)
    ep = endpoint(server)

    tools = list_tools(ep)

    assert [tool.name for tool in tools] == ["echo", "add", "big", "slow", "fail"]
    add = next(tool for tool in tools if tool.name == "add")
    assert isinstance(add, RemoteTool)
    assert add.description == "Add two integers."
    assert set(add.input_schema["properties"]) == {"a", "b"}
    assert call_tool(ep, "add", {"a": 2, "b": 40}, tool_call_id="call_1") == ToolOutcome(content="42", is_error=False)
    assert call_tool(ep, "echo", {"text": "héllo"}, tool_call_id="call_2") == ToolOutcome("héllo", False)
    assert "tools/list" in rpc_methods(server) and rpc_methods(server).count("tools/call") == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_sends_the_tool_call_id_in_meta_the_same_across_retries(mcp_server, transport):
    server = mcp_server(transport)
    ep = endpoint(server)

    call_tool(ep, "echo", {"text": "a"}, tool_call_id="toolu_01ABC")
    call_tool(ep, "echo", {"text": "a"}, tool_call_id="toolu_01ABC")  # a retry of the same model tool call
    call_tool(ep, "echo", {"text": "b"}, tool_call_id="toolu_02XYZ")

    assert server.tool_call_metas == [
        {"com.coder/tool_call_id": "toolu_01ABC"},
        {"com.coder/tool_call_id": "toolu_01ABC"},
        {"com.coder/tool_call_id": "toolu_02XYZ"},
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_sends_the_api_key_header_on_every_request(mcp_server, transport):
    server = mcp_server(transport)
    ep = endpoint(server, headers={"X-Api-Key": "key-1234567890"})

    list_tools(ep)
    call_tool(ep, "add", {"a": 1, "b": 1}, tool_call_id="c1")

    requests = server.snapshot()
    kinds = {(request.method, request.rpc_method) for request in requests}
    assert {("POST", "initialize"), ("POST", "notifications/initialized"), ("POST", "tools/list")} <= kinds
    assert {("POST", "tools/call"), ("GET", None)} <= kinds  # the GET: the SSE stream, or the standalone stream
    if transport == "streamable_http":
        assert ("DELETE", None) in kinds  # the session's end
    assert all(request.headers.get("x-api-key") == "key-1234567890" for request in requests)
    assert not any(IDENTITY_NAMES & request.headers.keys() for request in requests)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_forwards_identity_headers_and_signs_every_request(mcp_server, transport):
    server = mcp_server(transport, signing_secret=SECRET)
    ep = endpoint(server, headers={"Authorization": "Bearer tok-1234567890"}, identity=IDENTITY, signing_secret=SECRET)

    list_tools(ep)
    call_tool(ep, "echo", {"text": "signed"}, tool_call_id="c1")

    requests = server.snapshot()
    assert len(requests) >= 8
    assert server.verdicts == [(True, "ok")] * len(requests)
    for request in requests:
        assert request.headers["authorization"] == "Bearer tok-1234567890"
        for name, value in IDENTITY.items():
            assert request.headers[name.lower()] == value
        assert request.headers["x-coder-signature"].startswith("v1=")
        assert request.headers["x-coder-signature-timestamp"].isdigit()
    # Signed per request, over each request's own method, target and body: as many signatures as distinct requests
    # (two body-less GETs of the same target in the same second are alike, and so are their signatures).
    distinct = {(r.method, r.target, r.body, r.headers["x-coder-signature-timestamp"]) for r in requests}
    assert len(distinct) >= 6
    assert len({request.headers["x-coder-signature"] for request in requests}) == len(distinct)


def test_it_signs_a_tampered_request_so_that_verification_fails(mcp_server):
    """The verifier in the test server is a real check: change one byte of a signed body and it says no."""
    from mcpservers import signing

    server = mcp_server("streamable_http", signing_secret=SECRET)
    call_tool(endpoint(server, identity=IDENTITY, signing_secret=SECRET), "echo", {"text": "x"}, tool_call_id="c1")

    request = server.with_rpc_method("tools/call")[0]
    tampered = request.body.replace(b'"x"', b'"y"')
    assert signing.verify(
        secret=SECRET, method="POST", target=request.target, body=request.body, headers=request.headers
    )[0]
    assert signing.verify(
        secret=SECRET, method="POST", target=request.target, body=tampered, headers=request.headers
    ) == (
        False,
        "signature mismatch",
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_lets_an_auth_header_win_over_an_identity_header(mcp_server, transport):
    server = mcp_server(transport, signing_secret=SECRET)
    ep = endpoint(server, headers={"X-Coder-Owner-Id": "auth-owner-value"}, identity=IDENTITY, signing_secret=SECRET)

    call_tool(ep, "echo", {"text": "x"}, tool_call_id="c1")

    requests = server.snapshot()
    assert requests
    assert all(request.headers["x-coder-owner-id"] == "auth-owner-value" for request in requests)
    assert all(request.headers["x-coder-chat-id"] == IDENTITY["X-Coder-Chat-Id"] for request in requests)
    assert server.verdicts == [(True, "ok")] * len(requests)


def test_it_sends_no_identity_headers_when_identity_is_empty(mcp_server):
    server = mcp_server("streamable_http", signing_secret=SECRET)
    ep = endpoint(server, headers={"X-Api-Key": "key-1234567890"}, signing_secret=SECRET)  # a secret, no identity

    call_tool(ep, "echo", {"text": "x"}, tool_call_id="c1")

    requests = server.snapshot()
    assert requests
    assert not any(IDENTITY_NAMES & request.headers.keys() for request in requests)
    assert all(verdict == (False, "missing X-Coder-Signature-Timestamp header") for verdict in server.verdicts)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("headers", [{}, {"X-Api-Key": "wrong-value-0123456789"}], ids=["missing", "wrong"])
def test_it_raises_a_safe_error_when_the_server_refuses(mcp_server, transport, headers):
    server = mcp_server(transport, require_header=("X-Api-Key", "right-value-0123456789"))

    with pytest.raises(MCPError) as caught:
        list_tools(endpoint(server, headers=headers))

    message = str(caught.value)
    assert "401" in message
    for secret in ("right-value-0123456789", "wrong-value-0123456789", "REFUSED-BODY-SENTINEL", REFUSED_BODY.decode()):
        assert secret not in message and secret not in repr(caught.value)
    assert server.url not in message
    assert caught.value.__cause__ is None
    assert all(request.status == 401 for request in server.snapshot())
    # With the right value the same server answers.
    assert len(list_tools(endpoint(server, headers={"X-Api-Key": "right-value-0123456789"}))) == 5


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_fails_fast_on_an_unreachable_port(transport):
    port = unused_port()
    ep = Endpoint(url=f"http://127.0.0.1:{port}/mcp", transport=transport, headers={}, connect_timeout=1)

    started = time.monotonic()
    with pytest.raises(MCPError, match="could not connect to the MCP server"):
        list_tools(ep)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_honours_the_connect_timeout_on_a_server_that_never_answers(transport):
    port, close = silent_listener()
    try:
        ep = Endpoint(url=f"http://127.0.0.1:{port}/mcp", transport=transport, headers={}, connect_timeout=1)
        started = time.monotonic()
        with pytest.raises(MCPError, match=r"could not connect to the MCP server \(timeout after 1s\)"):
            call_tool(ep, "echo", {"text": "x"}, tool_call_id="c1")
        assert 0.9 <= time.monotonic() - started < 3.0
    finally:
        close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_times_out_a_tool_call_beyond_the_call_timeout(mcp_server, transport):
    server = mcp_server(transport)
    ep = endpoint(server, call_timeout=1)

    started = time.monotonic()
    with pytest.raises(MCPError, match="the MCP tool call timed out after 1s"):
        call_tool(ep, "slow", {"seconds": 10}, tool_call_id="c1")
    assert 0.9 <= time.monotonic() - started < 3.0
    # A call inside the budget is fine.
    assert call_tool(ep, "slow", {"seconds": 0.1}, tool_call_id="c2") == ToolOutcome("slept", False)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_reports_a_failing_tool_as_an_error_outcome(mcp_server, transport):
    server = mcp_server(transport)

    outcome = call_tool(endpoint(server), "fail", {}, tool_call_id="c1")

    assert outcome.is_error is True
    assert "fail" in outcome.content


def test_it_keeps_at_most_64_tools(mcp_server):
    server = mcp_server("streamable_http", extra_tools=65)  # 5 + 65 = 70 tools

    tools = list_tools(endpoint(server))

    assert len(tools) == client.MAX_TOOLS == 64
    assert [tool.name for tool in tools] == ["echo", "add", "big", "slow", "fail"] + [
        f"tool_{i:03d}" for i in range(59)
    ]


def test_it_chooses_tools_before_the_64_tool_cap(mcp_server):
    server = mcp_server("streamable_http", extra_tools=80)  # 5 + 80 = 85 tools

    tools = list_tools(endpoint(server), keep=lambda tool: tool.name.startswith("tool_"))

    assert [tool.name for tool in tools] == [f"tool_{i:03d}" for i in range(64)]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_truncates_a_large_tool_result_at_256_kib(mcp_server, transport):
    server = mcp_server(transport)
    ep = endpoint(server)

    small = call_tool(ep, "big", {"size": 256 * 1024}, tool_call_id="c1")
    large = call_tool(ep, "big", {"size": 400_000}, tool_call_id="c2")

    assert small.content == "x" * 256 * 1024  # exactly at the cap: kept whole
    assert len(large.content.encode()) <= 256 * 1024
    assert large.content.startswith("x" * 200_000)
    assert large.content.endswith(client.TRUNCATION_MARKER)
    assert large.is_error is False


@pytest.mark.parametrize(
    "transport, message",
    [
        ("streamable_http", "the MCP server's response was larger than 1 MiB"),
        ("sse", "the MCP server sent an event larger than 1 MiB or a malformed event stream"),
    ],
)
def test_it_refuses_a_response_over_1_mib(mcp_server, transport, message):
    server = mcp_server(transport)

    with pytest.raises(MCPError) as caught:
        call_tool(endpoint(server), "big", {"size": 1_100_000}, tool_call_id="c1")

    assert str(caught.value) == message


def test_it_truncates_on_a_character_boundary():
    text = "é" * 200_000  # 400 000 bytes in UTF-8
    cut = client._truncate(text)
    assert len(cut.encode()) <= client.MAX_RESULT_BYTES
    assert cut.endswith(client.TRUNCATION_MARKER) and set(cut[: -len(client.TRUNCATION_MARKER)]) == {"é"}


def test_it_summarises_non_text_content():
    png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    result = types.CallToolResult(
        content=[
            types.TextContent(text="first"),
            types.ImageContent(data=png, mime_type="image/png"),
            types.AudioContent(data=base64.b64encode(b"abc").decode(), mime_type="audio/wav"),
            types.ResourceLink(uri="file:///tmp/report.txt", name="report"),
            types.EmbeddedResource(resource=types.TextResourceContents(uri="file:///a.txt", text="embedded text")),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(uri="file:///b.bin", blob=png, mime_type="application/x-bin")
            ),
        ]
    )
    assert client._render(result).split("\n") == [
        "first",
        "[image: image/png, 100 bytes]",
        "[audio: audio/wav, 3 bytes]",
        "[resource link: file:///tmp/report.txt]",
        "embedded text",
        "[resource: file:///b.bin, application/x-bin, 100 bytes]",
    ]
    structured_only = types.CallToolResult(content=[], structured_content={"total": 3})
    assert client._render(structured_only) == '{"total": 3}'


def test_it_works_when_called_from_inside_an_event_loop(mcp_server):
    server = mcp_server("streamable_http")

    async def inside() -> list[RemoteTool]:
        return list_tools(endpoint(server))

    assert len(asyncio.run(inside())) == 5


def test_it_rejects_a_bad_endpoint_without_connecting():
    with pytest.raises(MCPError, match="unsupported MCP transport"):
        list_tools(Endpoint(url="http://127.0.0.1:9/mcp", transport="stdio", headers={}))
    with pytest.raises(MCPError, match="invalid MCP server headers") as caught:
        list_tools(
            Endpoint(
                url="http://127.0.0.1:9/mcp",
                transport="streamable_http",
                headers={"X-Key": "a-secret-value-123", "x-key": "another-secret-456"},
                identity=IDENTITY,
            )
        )
    assert "secret" not in str(caught.value)


def test_it_does_not_import_django():
    root = Path(__file__).resolve().parents[2]
    code = "import sys, mcpservers.client; sys.exit(any(m == 'django' or m.startswith('django.') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], cwd=root, timeout=60).returncode == 0
