"""``scripts/run.py`` (``make run``): the checks of its environment that stop it before it migrates or starts anything.

The refusals run the real script as a subprocess (they happen before ``manage.py migrate``, so they are quick); the
environment it hands its children is checked through ``prepare_env``, which ``main()`` calls, so that no test starts
the whole stack.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.peers.mcp_servers import unused_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run.py"


@pytest.fixture(scope="module")
def run_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("switchboard_run_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on 127.0.0.1 that something listens on for the length of the test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def run(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"PORT", "DEMO_MCP_PORT", "DEMO_OAUTH_PORT", "SITE_URL"}}
    # Should a check ever let the run through, migrate writes its database here rather than in the repository's var/.
    env["SWITCHBOARD_VAR_DIR"] = str(tmp_path / "var")
    env.update(variables)
    # Our own fixed command line.
    return subprocess.run(  # noqa: S603
        [sys.executable, str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def assert_refused_before_starting(result: subprocess.CompletedProcess, tmp_path: Path) -> None:
    assert "manage.py migrate" not in result.stdout
    assert not (tmp_path / "var" / "switchboard.sqlite3").exists()
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["abc", "0", "70000", "-1"])
def test_it_refuses_a_demo_oauth_port_that_is_not_a_port_number(tmp_path, value):
    result = run(tmp_path, PORT=str(unused_port()), DEMO_MCP_PORT=str(unused_port()), DEMO_OAUTH_PORT=value)

    assert result.returncode == 2, result.stdout + result.stderr
    assert f"[run] DEMO_OAUTH_PORT must be a port number (1 to 65535), not {value!r}" in result.stdout
    assert_refused_before_starting(result, tmp_path)


@pytest.mark.parametrize("value", ["0", "70000", "-5"])
def test_it_refuses_a_web_port_out_of_range(tmp_path, value):
    result = run(tmp_path, PORT=value, DEMO_MCP_PORT=str(unused_port()), DEMO_OAUTH_PORT=str(unused_port()))

    assert result.returncode == 2, result.stdout + result.stderr
    assert f"[run] PORT must be a port number (1 to 65535), not {value!r}" in result.stdout
    assert_refused_before_starting(result, tmp_path)


@pytest.mark.parametrize("variable", ["PORT", "DEMO_MCP_PORT", "DEMO_OAUTH_PORT"])
def test_it_refuses_a_superscript_digit_without_a_traceback(tmp_path, variable):
    # "²".isdigit() is true, but int("²") raises.
    ports = {"PORT": str(unused_port()), "DEMO_MCP_PORT": str(unused_port()), "DEMO_OAUTH_PORT": str(unused_port())}
    result = run(tmp_path, **(ports | {variable: "²"}))

    assert result.returncode == 2, result.stdout + result.stderr
    assert f"[run] {variable} must be a port number (1 to 65535), not '²'" in result.stdout
    assert_refused_before_starting(result, tmp_path)


@pytest.mark.parametrize("variable", ["PORT", "DEMO_MCP_PORT", "DEMO_OAUTH_PORT"])
@pytest.mark.parametrize("value", ["\u0668\u0660\u0660\u0661", "\uff18\uff10\uff10\uff11", "000080"])
def test_it_refuses_ports_not_written_in_up_to_five_ascii_digits(run_script, variable, value):
    # Arabic-Indic and full-width digits: int() reads them as 8001, but the children would get them as they are.
    environ = {"PORT": str(unused_port()), "DEMO_MCP_PORT": str(unused_port()), "DEMO_OAUTH_PORT": str(unused_port())}

    with pytest.raises(run_script.Refused) as refused:
        run_script.prepare_env(environ | {variable: value})

    assert refused.value.exit_code == 2
    assert str(refused.value) == f"{variable} must be a port number (1 to 65535), not {value!r}"


def test_it_ignores_blanks_around_ports_and_passes_them_on_as_plain_digits(run_script):
    ports = (unused_port(), unused_port(), unused_port())
    environ = {"PORT": f" {ports[0]} ", "DEMO_MCP_PORT": f"\t{ports[1]}", "DEMO_OAUTH_PORT": f"{ports[2]}\n"}

    env, prepared = run_script.prepare_env(environ)

    assert tuple(prepared) == ports
    assert (env["PORT"], env["DEMO_MCP_PORT"], env["DEMO_OAUTH_PORT"]) == tuple(str(port) for port in ports)
    assert env["SITE_URL"] == f"http://127.0.0.1:{ports[0]}"


def test_it_uses_the_default_for_a_port_left_empty(run_script, monkeypatch):
    monkeypatch.setattr(run_script, "port_in_use", lambda port: False)  # the defaults may be taken on this machine

    env, prepared = run_script.prepare_env({"PORT": "", "DEMO_MCP_PORT": "  "})

    assert tuple(prepared) == (8000, 8765, 8766)
    assert (env["PORT"], env["DEMO_MCP_PORT"], env["DEMO_OAUTH_PORT"]) == ("8000", "8765", "8766")
    assert env["SITE_URL"] == "http://127.0.0.1:8000"


def test_it_refuses_a_demo_oauth_port_equal_to_port(tmp_path):
    port = unused_port()

    result = run(tmp_path, PORT=str(port), DEMO_MCP_PORT=str(unused_port()), DEMO_OAUTH_PORT=str(port))

    assert result.returncode == 2, result.stdout + result.stderr
    assert f"DEMO_OAUTH_PORT and PORT are both {port}; give the demo OAuth provider another port" in result.stdout
    assert_refused_before_starting(result, tmp_path)


def test_it_refuses_a_demo_oauth_port_equal_to_the_demo_mcp_port(tmp_path):
    port = unused_port()

    result = run(tmp_path, PORT=str(unused_port()), DEMO_MCP_PORT=str(port), DEMO_OAUTH_PORT=str(port))

    assert result.returncode == 2, result.stdout + result.stderr
    assert f"DEMO_OAUTH_PORT and DEMO_MCP_PORT are both {port}" in result.stdout
    assert_refused_before_starting(result, tmp_path)


def test_it_refuses_a_demo_oauth_port_already_in_use(tmp_path, listening):
    result = run(tmp_path, PORT=str(unused_port()), DEMO_MCP_PORT=str(unused_port()), DEMO_OAUTH_PORT=str(listening))

    assert result.returncode == 1, result.stdout + result.stderr
    assert f"port {listening} on 127.0.0.1 (the demo OAuth provider) is already in use" in result.stdout
    assert "set DEMO_OAUTH_PORT=..." in result.stdout
    assert_refused_before_starting(result, tmp_path)


def test_it_defaults_site_url_to_its_own_port(run_script):
    ports = (unused_port(), unused_port(), unused_port())
    environ = {"PORT": str(ports[0]), "DEMO_MCP_PORT": str(ports[1]), "DEMO_OAUTH_PORT": str(ports[2])}

    env, prepared = run_script.prepare_env(environ)

    assert env["SITE_URL"] == f"http://127.0.0.1:{ports[0]}"
    assert tuple(prepared) == ports
    assert (env["DEMO_MCP_PORT"], env["DEMO_OAUTH_PORT"]) == (str(ports[1]), str(ports[2]))  # what seed_demo reads
    assert (env["DEBUG"], env["DJANGO_SETTINGS_MODULE"]) == ("true", "project.settings")
    assert "SITE_URL" not in environ  # the caller's mapping is left as it was


def test_it_keeps_an_explicit_site_url_and_debug(run_script):
    environ = {
        "PORT": str(unused_port()),
        "DEMO_MCP_PORT": str(unused_port()),
        "DEMO_OAUTH_PORT": str(unused_port()),
        "SITE_URL": "https://switchboard.example.com",
        "DEBUG": "false",
    }

    env, _ports = run_script.prepare_env(environ)

    assert env["SITE_URL"] == "https://switchboard.example.com"
    assert env["DEBUG"] == "false"


def test_it_reports_a_busy_web_port_before_a_wrong_demo_port(run_script, listening):
    with pytest.raises(run_script.Refused) as refused:
        run_script.prepare_env({"PORT": str(listening), "DEMO_OAUTH_PORT": "abc"})

    # PORT is checked first: a busy web port is reported even when a demo port is also wrong.
    assert refused.value.exit_code == 1
    assert str(refused.value).startswith(f"port {listening} on 127.0.0.1 is already in use")
