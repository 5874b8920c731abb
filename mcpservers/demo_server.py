"""A small demo MCP server, built with the official ``mcp`` SDK and served over streamable HTTP at ``/mcp``.

``make run`` starts it next to the web server (``scripts/run.py``) and ``manage.py seed_demo`` registers it in the
``acme`` organization as "Demo tools", so a fresh checkout has an MCP server to try. Run it on its own with::

    .venv/bin/python -m mcpservers.demo_server --host 127.0.0.1 --port 8765

Its tools need no network and no secrets: ``current_time``, ``word_count``, ``roll_dice`` and
``lookup_http_status``. SIGINT or SIGTERM stops it cleanly (exit status 0). No Django import here.
"""

from __future__ import annotations

import argparse
import secrets
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

NAME = "switchboard-demo-tools"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
PATH = "/mcp"
MAX_SIDES = 1000
MAX_DICE = 100
GRACEFUL_SHUTDOWN_SECONDS = 2

STATUS_CLASSES = {
    1: "1xx informational",
    2: "2xx success",
    3: "3xx redirection",
    4: "4xx client error",
    5: "5xx server error",
}


class CurrentTime(BaseModel):
    timezone: str = Field(description="The IANA time zone the time is given in.")
    iso: str = Field(description="The current date and time in ISO 8601, with the UTC offset.")
    date: str = Field(description="The date, YYYY-MM-DD.")
    time: str = Field(description="The time of day, HH:MM:SS (24-hour clock).")
    weekday: str = Field(description="The day of the week, in English.")
    utc_offset: str = Field(description="The offset from UTC, as +HH:MM or -HH:MM.")
    abbreviation: str = Field(description="The zone's abbreviation at this moment, e.g. CET or EDT.")


class WordCount(BaseModel):
    words: int = Field(description="Runs of non-whitespace characters.")
    characters: int = Field(description="All characters, whitespace included.")
    characters_without_spaces: int = Field(description="Characters that are not whitespace.")
    lines: int = Field(description="Lines of text (0 for empty text; a final newline does not start a new line).")


class DiceRoll(BaseModel):
    sides: int = Field(description="Sides of each die.")
    rolls: list[int] = Field(description="Each die's result, in the order rolled.")
    total: int = Field(description="The sum of the rolls.")


class HttpStatusInfo(BaseModel):
    code: int = Field(description="The status code.")
    phrase: str = Field(description="The standard reason phrase, e.g. Not Found.")
    description: str = Field(description="A one-line explanation of the status.")
    category: str = Field(description="The status class, e.g. 4xx client error.")


def current_time(
    timezone: Annotated[
        str, Field(description="An IANA time zone name such as UTC, Europe/Paris or America/New_York.")
    ] = "UTC",
) -> CurrentTime:
    """The current date and time in a time zone."""
    name = timezone.strip()
    if name.upper() == "UTC":
        zone, name = UTC, "UTC"
    else:
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolError(
                f"Unknown time zone {timezone[:64]!r}: use an IANA name such as UTC, Europe/Paris or America/New_York."
            ) from None
    now = datetime.now(zone)
    offset = now.strftime("%z")
    return CurrentTime(
        timezone=name,
        iso=now.isoformat(timespec="seconds"),
        date=now.strftime("%Y-%m-%d"),
        time=now.strftime("%H:%M:%S"),
        weekday=now.strftime("%A"),
        utc_offset=f"{offset[:3]}:{offset[3:]}",
        abbreviation=now.tzname() or name,
    )


def word_count(text: Annotated[str, Field(description="The text to count.")]) -> WordCount:
    """Count the words, characters and lines of a text."""
    return WordCount(
        words=len(text.split()),
        characters=len(text),
        characters_without_spaces=sum(1 for char in text if not char.isspace()),
        lines=len(text.splitlines()),
    )


def roll_dice(
    sides: Annotated[int, Field(ge=2, le=MAX_SIDES, description=f"Sides of each die, 2 to {MAX_SIDES}.")] = 6,
    count: Annotated[int, Field(ge=1, le=MAX_DICE, description=f"How many dice to roll, 1 to {MAX_DICE}.")] = 1,
) -> DiceRoll:
    """Roll dice (uniformly random, from the operating system's random source) and add them up."""
    rolls = [secrets.randbelow(sides) + 1 for _ in range(count)]
    return DiceRoll(sides=sides, rolls=rolls, total=sum(rolls))


def lookup_http_status(
    code: Annotated[int, Field(ge=100, le=599, description="An HTTP status code, 100 to 599, e.g. 404.")],
) -> HttpStatusInfo:
    """Look up a standard HTTP status code: its reason phrase, meaning and class."""
    try:
        status = HTTPStatus(code)
    except ValueError:
        raise ToolError(f"{code} is not a standard HTTP status code.") from None
    return HttpStatusInfo(
        code=status.value,
        phrase=status.phrase,
        description=status.description or status.phrase,
        category=STATUS_CLASSES[status.value // 100],
    )


TOOLS = (current_time, word_count, roll_dice, lookup_http_status)


def build(title: str = "Demo tools") -> MCPServer:
    mcp = MCPServer(
        NAME,
        title=title,
        instructions="Small offline utilities: the time in a zone, text statistics, dice and HTTP status codes.",
        version="1.0.0",
        log_level="WARNING",
    )
    for tool in TOOLS:
        mcp.add_tool(tool, description=(tool.__doc__ or "").strip())
    return mcp


def make_server(host: str, port: int) -> uvicorn.Server:
    return uvicorn_server(build().streamable_http_app(streamable_http_path=PATH, host=host), host, port)


def uvicorn_server(app, host: str, port: int) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        ws="none",
        # Clients may hold a stream open: stop waiting for them after this long.
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    return uvicorn.Server(config)


def serve(server: uvicorn.Server) -> int:
    """Run a uvicorn server until SIGINT or SIGTERM. 0 when stopped that way, 1 when it could not start."""
    signals: list[int] = []

    def stop(signum: int, frame) -> None:
        # uvicorn handles these signals while it serves, then raises each caught one again once it has shut down,
        # with the handlers in place before it started: this one, so a stop request ends in exit status 0.
        signals.append(signum)
        if server.should_exit and signum == signal.SIGINT:
            server.force_exit = True
        server.should_exit = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    server.run()
    if not server.started and not signals:
        return 1  # it could not start (port taken, bad address, failed startup): uvicorn has said why
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcpservers.demo_server", description="Serve the demo MCP tools over streamable HTTP at /mcp."
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    args = parser.parse_args(argv)
    print(f"demo MCP server: http://{args.host}:{args.port}{PATH}", flush=True)
    return serve(make_server(args.host, args.port))


if __name__ == "__main__":
    sys.exit(main())
