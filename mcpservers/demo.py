"""The demo MCP server registrations for `manage.py seed_demo` (development only; idempotent).

``make run`` (``scripts/run.py``) starts ``mcpservers.demo_server`` on 127.0.0.1, port ``DEMO_MCP_PORT`` (default
8765), and ``mcpservers.demo_auth_server`` (a demo OAuth 2 authorization server with the same tools behind its
tokens) on port ``DEMO_OAUTH_PORT`` (default 8766), and sets both variables for ``seed_demo`` too, so the registered
URLs and the running servers agree. The OAuth one is configured by hand (not discovered): the demo provider keeps its
clients in memory, and its pre-registered public client ``switchboard-demo`` survives restarts.
"""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured

from . import services
from .models import AuthType, Availability, MCPServer, Transport

ORGANIZATION = "acme"
SLUG = "demo-tools"
OAUTH_SLUG = "demo-tools-oauth"
DEFAULT_PORT = 8765
DEFAULT_OAUTH_PORT = 8766


def _port(variable: str, default: int) -> int:
    value = os.environ.get(variable, "").strip() or str(default)
    if not re.fullmatch(r"[0-9]{1,5}", value) or not 0 < int(value) < 65536:
        raise ImproperlyConfigured(f"{variable} must be a port number (1 to 65535), not {value!r}")
    return int(value)


def demo_port() -> int:
    return _port("DEMO_MCP_PORT", DEFAULT_PORT)


def demo_oauth_port() -> int:
    return _port("DEMO_OAUTH_PORT", DEFAULT_OAUTH_PORT)


def seed(sender, organizations, people, **kwargs) -> None:
    # Imported here, not at the top: the app's ready() imports this module in every process, and the demo
    # authorization server (authlib's server core, Starlette, the MCP SDK's server) has no business in production ones.
    from .demo_auth_server import DEMO_CLIENT_ID, DEMO_SCOPE, MCP_PATH

    organization = organizations.get(ORGANIZATION)
    if organization is None:
        return
    if not MCPServer.objects.filter(organization=organization, slug=SLUG).exists():
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
    if not MCPServer.objects.filter(organization=organization, slug=OAUTH_SLUG).exists():
        base = f"http://127.0.0.1:{demo_oauth_port()}"
        services.mcp_server_create(
            actor=None,
            organization=organization,
            data={
                "display_name": "Demo tools (OAuth)",
                "slug": OAUTH_SLUG,
                "description": (
                    "The demo tools plus whoami, behind a demo OAuth 2 provider: each member connects their own "
                    f"account (Connect, then Allow on the provider's page). Runs with `make run` on {base} "
                    "(mcpservers/demo_auth_server.py); it forgets its tokens when it restarts, so reconnect then."
                ),
                "icon_url": "🔐",
                "url": f"{base}{MCP_PATH}",
                "transport": Transport.STREAMABLE_HTTP,
                "enabled": True,
                "availability": Availability.DEFAULT_OFF,
                "auth_type": AuthType.OAUTH2,
                "oauth2_client_id": DEMO_CLIENT_ID,
                "oauth2_auth_url": f"{base}/authorize",
                "oauth2_token_url": f"{base}/token",
                "oauth2_revocation_url": f"{base}/revoke",
                "oauth2_scopes": DEMO_SCOPE,
            },
        )
