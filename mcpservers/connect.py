"""Building the client endpoint of a configured server: its static auth headers, and (for chats) the identity
headers that ``forward_coder_headers`` sends, signed with the server's signing secret when it has one."""

from __future__ import annotations

from . import client, signing
from .models import AuthType, MCPServer

CONNECT_TIMEOUT = 30.0
CALL_TIMEOUT = 60.0


def auth_headers(server: MCPServer, bearer: str | None = None) -> dict[str, str]:
    """The headers the configured auth type sends. OAuth2 and user OIDC send the user's own token (``bearer``)."""
    if server.auth_type in {AuthType.OAUTH2, AuthType.USER_OIDC}:
        return {"Authorization": f"Bearer {bearer}"} if bearer else {}
    if server.auth_type == AuthType.API_KEY and server.api_key_value:
        return {server.api_key_header or "Authorization": str(server.api_key_value)}
    if server.auth_type == AuthType.CUSTOM_HEADERS:
        return dict(server.custom_headers)
    return {}


def endpoint_for(
    server: MCPServer,
    *,
    owner_id: int | None = None,
    chat_id: int | None = None,
    workspace_id: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
    call_timeout: float = CALL_TIMEOUT,
    bearer: str | None = None,
) -> client.Endpoint:
    identity: dict[str, str] = {}
    # Identity headers describe a chat: without one (Test connection) none are sent.
    if server.forward_coder_headers and owner_id is not None and chat_id is not None:
        identity = signing.identity_headers(
            owner=str(owner_id),
            chat=str(chat_id),
            subchat=None,
            workspace=str(workspace_id) if workspace_id else None,
        )
    return client.Endpoint(
        url=server.url,
        transport=server.transport,
        headers=auth_headers(server, bearer),
        identity=identity,
        signing_secret=str(server.signing_secret) if server.signing_secret and identity else None,
        connect_timeout=connect_timeout,
        call_timeout=call_timeout,
    )


def tool_allowed(server: MCPServer, name: str) -> bool:
    """Tool governance: the allow list (when not empty), then the deny list, which always wins."""
    allowed = server.tool_allow_list or []
    return (not allowed or name in allowed) and name not in (server.tool_deny_list or [])


def filter_tools(server: MCPServer, tools: list[client.RemoteTool]) -> list[client.RemoteTool]:
    return [t for t in tools if tool_allowed(server, t.name)]
