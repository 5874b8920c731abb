"""The demo MCP server (``mcpservers.demo_server``) run as a real subprocess and spoken to with
``mcpservers.client``, and its registration by ``manage.py seed_demo`` (``mcpservers.demo``)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from mcpservers.client import Endpoint, MCPError, ToolOutcome, call_tool, list_tools
from mcpservers.models import AuthType, Availability, MCPServer, Transport
from organizations import acl
from organizations.models import Organization
from tests.peers.processes import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["current_time", "word_count", "roll_dice", "lookup_http_status"]


class DemoServer(ServerProcess):
    what = "demo MCP server"
    module = "mcpservers.demo_server"

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.endpoint = Endpoint(url=f"{self.base_url}/mcp", transport="streamable_http", headers={}, call_timeout=10)

    def call(self, name: str, arguments: dict) -> ToolOutcome:
        return call_tool(self.endpoint, name, arguments, tool_call_id=f"test-{name}")

    def call_json(self, name: str, arguments: dict) -> dict:
        outcome = self.call(name, arguments)
        assert not outcome.is_error, outcome.content
        return json.loads(outcome.content)


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer.running() as server:
        yield server


@pytest.fixture
def own_demo() -> Iterator[DemoServer]:
    """A server for one test, which may stop it itself; killed after the test in any case."""
    with DemoServer.running(stop_first=False) as server:
        yield server


# The server ---------------------------------------------------------------------------------------------------


def test_it_lists_its_tools_with_descriptions_and_typed_parameters(demo):
    tools = {tool.name: tool for tool in list_tools(demo.endpoint)}

    assert list(tools) == TOOLS
    assert all(tool.description for tool in tools.values())
    time_props = tools["current_time"].input_schema["properties"]
    assert time_props["timezone"]["type"] == "string" and time_props["timezone"]["default"] == "UTC"
    assert "IANA" in time_props["timezone"]["description"]
    assert tools["word_count"].input_schema["required"] == ["text"]
    dice = tools["roll_dice"].input_schema["properties"]
    assert (dice["sides"]["type"], dice["sides"]["minimum"], dice["sides"]["maximum"]) == ("integer", 2, 1000)
    assert (dice["count"]["minimum"], dice["count"]["maximum"], dice["count"]["default"]) == (1, 100, 1)
    status = tools["lookup_http_status"].input_schema
    assert status["required"] == ["code"] and status["properties"]["code"]["type"] == "integer"


def test_it_tells_the_current_time_in_utc_by_default(demo):
    before = datetime.now(UTC).replace(microsecond=0)
    answer = demo.call_json("current_time", {})
    after = datetime.now(UTC)

    assert answer["timezone"] == "UTC" and answer["utc_offset"] == "+00:00"
    assert before <= datetime.fromisoformat(answer["iso"]) <= after
    assert answer["date"] == answer["iso"][:10] and answer["time"] == answer["iso"][11:19]


def test_it_tells_the_current_time_in_a_named_time_zone(demo):
    answer = demo.call_json("current_time", {"timezone": "Europe/Paris"})

    assert answer["timezone"] == "Europe/Paris"
    assert answer["utc_offset"] in {"+01:00", "+02:00"} and answer["abbreviation"] in {"CET", "CEST"}
    moment = datetime.fromisoformat(answer["iso"])
    assert abs((moment - datetime.now(UTC)).total_seconds()) < 60
    assert answer["weekday"] == moment.strftime("%A")


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "../../etc/passwd", ""])
def test_it_refuses_an_unknown_time_zone_clearly(demo, zone):
    outcome = demo.call("current_time", {"timezone": zone})

    assert outcome.is_error
    assert "Unknown time zone" in outcome.content and "IANA" in outcome.content


def test_it_counts_words_characters_and_lines(demo):
    text = "The quick brown fox\njumps over  the lazy dog.\n"

    assert demo.call_json("word_count", {"text": text}) == {
        "words": 9,
        "characters": len(text),
        "characters_without_spaces": 36,
        "lines": 2,
    }
    assert demo.call_json("word_count", {"text": ""}) == {
        "words": 0,
        "characters": 0,
        "characters_without_spaces": 0,
        "lines": 0,
    }


def test_it_rolls_dice_within_range(demo):
    answer = demo.call_json("roll_dice", {"sides": 6, "count": 50})

    assert answer["sides"] == 6 and len(answer["rolls"]) == 50
    assert all(1 <= roll <= 6 for roll in answer["rolls"])
    assert answer["total"] == sum(answer["rolls"])
    assert len(demo.call_json("roll_dice", {})["rolls"]) == 1  # one six-sided die by default


@pytest.mark.parametrize("arguments", [{"sides": 1}, {"sides": 1001}, {"count": 0}, {"count": 101}, {"sides": "many"}])
def test_it_refuses_dice_out_of_bounds(demo, arguments):
    outcome = demo.call("roll_dice", arguments)

    assert outcome.is_error
    assert next(iter(arguments)) in outcome.content  # the error names the offending parameter


def test_it_looks_up_http_status_codes(demo):
    assert demo.call_json("lookup_http_status", {"code": 404}) == {
        "code": 404,
        "phrase": "Not Found",
        "description": "Nothing matches the given URI",
        "category": "4xx client error",
    }
    teapot = demo.call_json("lookup_http_status", {"code": 418})
    assert teapot["phrase"] == "I'm a Teapot" and teapot["category"] == "4xx client error"
    assert demo.call_json("lookup_http_status", {"code": 503})["category"] == "5xx server error"


@pytest.mark.parametrize("code", [299, 42, 600])
def test_it_refuses_a_code_that_is_not_a_standard_status(demo, code):
    outcome = demo.call("lookup_http_status", {"code": code})

    assert outcome.is_error
    assert str(code) in outcome.content or "code" in outcome.content


def test_it_answers_an_unknown_tool_with_an_error(demo):
    try:
        outcome = demo.call("delete_everything", {})
    except MCPError as exc:  # a JSON-RPC error is fine too
        assert "MCP server" in str(exc)
    else:
        assert outcome.is_error


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_it_stops_cleanly_and_promptly_on_a_signal(own_demo, signum):
    assert call_tool(own_demo.endpoint, "word_count", {"text": "a b"}, tool_call_id="c1").is_error is False
    # An idle client connection left open must not hold the shutdown up.
    idle = socket.create_connection(("127.0.0.1", own_demo.port))
    try:
        started = time.monotonic()
        code = own_demo.stop(signum, timeout=8)
        elapsed = time.monotonic() - started
    finally:
        idle.close()

    assert code == 0, own_demo.output()
    assert elapsed < 5
    assert "Traceback" not in own_demo.output()
    with pytest.raises(MCPError, match="could not connect"):
        list_tools(own_demo.endpoint)


def test_it_exits_non_zero_when_its_port_is_taken(own_demo):
    clash = DemoServer(own_demo.port)
    try:
        code = clash.proc.wait(timeout=20)
    finally:
        clash.close()

    assert code != 0
    assert list_tools(own_demo.endpoint)  # the first one still serves


def test_it_does_not_import_django():
    # Our own fixed command line.
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", "import sys, mcpservers.demo_server; print('django' in sys.modules)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == "False"


def test_a_production_process_does_not_load_the_demo_authorization_server(tmp_path):
    # The app's ready() imports mcpservers.demo (the seed_demo receiver); the demo OAuth provider behind it is
    # imported only when seed_demo runs.
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_VERSION"}
    env.update(
        DEBUG="false",
        SECRET_KEY="x" * 20 + "-production-secret-key-for-the-import-check-0123456789",
        FIELD_ENCRYPTION_KEYS=Fernet.generate_key().decode(),
        SWITCHBOARD_VAR_DIR=str(tmp_path),
        DJANGO_SETTINGS_MODULE="project.settings",
    )
    code = "import sys, django; django.setup(); print(*(m in sys.modules for m in sys.argv[1:]))"
    # Our own fixed command line.
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code, "mcpservers.demo", "mcpservers.demo_auth_server"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]


# The seed -----------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_registers_the_demo_server_in_acme_once(monkeypatch):
    monkeypatch.setenv("DEMO_MCP_PORT", "8799")

    call_command("seed_demo", stdout=StringIO())
    call_command("seed_demo", stdout=StringIO())

    servers = MCPServer.objects.filter(slug="demo-tools")
    assert servers.count() == 1
    server = servers.get()
    assert server.organization.name == "acme"
    assert server.display_name == "Demo tools"
    assert server.url == "http://127.0.0.1:8799/mcp"
    assert server.transport == Transport.STREAMABLE_HTTP
    assert server.enabled is True
    assert server.availability == Availability.DEFAULT_ON
    assert server.auth_type == AuthType.NONE
    assert server.icon_url == "🧰"
    assert "make run" in server.description
    entries = acl.entries([server], "use_mcpserver")[server.pk]
    assert [(entry.kind, entry.name) for entry in entries] == [("group", "Everyone")]


@pytest.mark.django_db
def test_it_uses_port_8765_without_demo_mcp_port(monkeypatch):
    monkeypatch.delenv("DEMO_MCP_PORT", raising=False)

    call_command("seed_demo", stdout=StringIO())

    assert MCPServer.objects.get(slug="demo-tools").url == "http://127.0.0.1:8765/mcp"


@pytest.mark.django_db
def test_it_keeps_an_existing_demo_tools_server(monkeypatch):
    monkeypatch.setenv("DEMO_MCP_PORT", "8799")
    call_command("seed_demo", stdout=StringIO())
    server = MCPServer.objects.get(slug="demo-tools")
    MCPServer.objects.filter(pk=server.pk).update(enabled=False, url="http://127.0.0.1:9999/mcp")
    monkeypatch.setenv("DEMO_MCP_PORT", "8800")

    call_command("seed_demo", stdout=StringIO())

    server.refresh_from_db()
    assert (server.enabled, server.url) == (False, "http://127.0.0.1:9999/mcp")  # an admin's changes stay
    assert MCPServer.objects.filter(slug="demo-tools").count() == 1


DEMO_OAUTH_FIELDS = {
    "display_name": "Demo tools (OAuth)",
    "transport": Transport.STREAMABLE_HTTP,
    "enabled": True,
    "availability": Availability.DEFAULT_OFF,
    "auth_type": AuthType.OAUTH2,
    "oauth2_client_id": "switchboard-demo",
    "oauth2_scopes": "tools",
    "icon_url": "🔐",
}


@pytest.mark.django_db
def test_it_registers_the_demo_oauth_server_in_acme_once(monkeypatch):
    monkeypatch.setenv("DEMO_OAUTH_PORT", "8798")

    call_command("seed_demo", stdout=StringIO())
    call_command("seed_demo", stdout=StringIO())

    servers = MCPServer.objects.filter(slug="demo-tools-oauth")
    assert servers.count() == 1
    server = servers.get()
    assert server.organization.name == "acme"
    assert {name: getattr(server, name) for name in DEMO_OAUTH_FIELDS} == DEMO_OAUTH_FIELDS
    assert server.url == "http://127.0.0.1:8798/mcp"
    # Configured by hand, not discovered: the endpoints are stored, and a public client has no secret.
    assert (server.oauth2_auth_url, server.oauth2_token_url, server.oauth2_revocation_url) == (
        "http://127.0.0.1:8798/authorize",
        "http://127.0.0.1:8798/token",
        "http://127.0.0.1:8798/revoke",
    )
    assert server.has_oauth2_secret is False
    assert "make run" in server.description and "http://127.0.0.1:8798" in server.description
    entries = acl.entries([server], "use_mcpserver")[server.pk]
    assert [(entry.kind, entry.name) for entry in entries] == [("group", "Everyone")]


@pytest.mark.django_db
def test_it_uses_port_8766_without_demo_oauth_port(monkeypatch):
    monkeypatch.delenv("DEMO_OAUTH_PORT", raising=False)

    call_command("seed_demo", stdout=StringIO())

    server = MCPServer.objects.get(slug="demo-tools-oauth")
    assert server.url == "http://127.0.0.1:8766/mcp"
    assert server.oauth2_token_url == "http://127.0.0.1:8766/token"


@pytest.mark.django_db
def test_the_two_demo_servers_use_their_own_ports(monkeypatch):
    monkeypatch.setenv("DEMO_MCP_PORT", "8797")
    monkeypatch.setenv("DEMO_OAUTH_PORT", "8796")

    call_command("seed_demo", stdout=StringIO())

    assert MCPServer.objects.get(slug="demo-tools").url == "http://127.0.0.1:8797/mcp"
    assert MCPServer.objects.get(slug="demo-tools-oauth").url == "http://127.0.0.1:8796/mcp"


@pytest.mark.django_db
def test_it_keeps_an_existing_demo_oauth_server(monkeypatch):
    monkeypatch.setenv("DEMO_OAUTH_PORT", "8798")
    call_command("seed_demo", stdout=StringIO())
    server = MCPServer.objects.get(slug="demo-tools-oauth")
    MCPServer.objects.filter(pk=server.pk).update(
        enabled=False,
        availability=Availability.FORCE_ON,
        url="http://127.0.0.1:9999/mcp",
        oauth2_client_id="changed-by-an-admin",
        oauth2_token_url="http://127.0.0.1:9999/token",
    )
    monkeypatch.setenv("DEMO_OAUTH_PORT", "8800")

    call_command("seed_demo", stdout=StringIO())

    server.refresh_from_db()
    assert (
        server.enabled,
        server.availability,
        server.url,
        server.oauth2_client_id,
        server.oauth2_token_url,
    ) == (
        False,
        Availability.FORCE_ON,
        "http://127.0.0.1:9999/mcp",
        "changed-by-an-admin",
        "http://127.0.0.1:9999/token",
    )
    assert MCPServer.objects.filter(slug="demo-tools-oauth").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("variable", ["DEMO_MCP_PORT", "DEMO_OAUTH_PORT"])
@pytest.mark.parametrize("value", ["abc", "0", "70000", "-1", "8766.0", "²", "٨٧٦٦"])
def test_it_refuses_a_demo_port_that_is_not_a_port_number(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)

    with pytest.raises(ImproperlyConfigured) as raised:
        call_command("seed_demo", stdout=StringIO())

    assert str(raised.value) == f"{variable} must be a port number (1 to 65535), not {value!r}"
    # seed_demo runs in one transaction: nothing of the demo is left half-seeded.
    assert not MCPServer.objects.filter(slug__in=["demo-tools", "demo-tools-oauth"]).exists()
    assert not Organization.objects.filter(name="acme").exists()
