"""The demo MCP server registration for `manage.py seed_demo` (development only; idempotent).

``make run`` (``scripts/run.py``) starts ``mcpservers.demo_server`` on 127.0.0.1, port ``DEMO_MCP_PORT`` (default
8765), and sets that variable for ``seed_demo`` too, so the registered URL and the running server agree.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from . import services
from .models import AuthType, Availability, MCPServer, Transport

ORGANIZATION = "acme"
SLUG = "demo-tools"
DEFAULT_PORT = 8765


def demo_port() -> int:
    value = os.environ.get("DEMO_MCP_PORT", "").strip() or str(DEFAULT_PORT)
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ImproperlyConfigured(f"DEMO_MCP_PORT must be a port number (1 to 65535), not {value!r}")
    return int(value)


def seed(sender, organizations, people, **kwargs) -> None:
    organization = organizations.get(ORGANIZATION)
    if organization is None:
        return
    if MCPServer.objects.filter(organization=organization, slug=SLUG).exists():
        return
    port = demo_port()
    services.mcp_server_create(
        actor=None,  # the operator running seed_demo, as for the other demo data
        organization=organization,
        data={
            "display_name": "Demo tools",
            "slug": SLUG,
            "description": (
                "Offline demo tools: the time in a time zone, word count, dice and HTTP status codes. "
                f"The server runs with `make run` (mcpservers/demo_server.py on 127.0.0.1:{port})."
            ),
            "icon_url": "🧰",
            "url": f"http://127.0.0.1:{port}/mcp",
            "transport": Transport.STREAMABLE_HTTP,
            "enabled": True,
            "availability": Availability.DEFAULT_ON,
            "auth_type": AuthType.NONE,
        },
    )
