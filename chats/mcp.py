"""MCP servers in chats: which servers a step uses, the picker's choices, and their tools in the step's registry.

Availability: ``force_on`` servers join every chat whose owner may use them (no opting out); ``default_on`` servers
are selected when a chat begins; ``default_off`` servers wait for the user to opt in. Revoking someone's access
stops new selection, but a chat that already selected a server keeps it; disabling or deleting a server cuts it off
everywhere. Tools are named ``<slug>__<tool>``, filtered by the allow list (when not empty) then the deny list, and
discovered tools are cached briefly per server and auth identity. A server that cannot be reached is skipped and the
others still contribute.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.core.cache import cache
from django.db import transaction

from mcpservers import client, connect, oauth_services
from mcpservers.models import AuthType, Availability, MCPServer, MCPUserToken
from mcpservers.selectors import servers_usable_by
from organizations import audit, oidc

from .models import Chat, ChatMCPServer

logger = logging.getLogger(__name__)

TOOLS_CACHE_SECONDS = 60
FAILURE_CACHE_SECONDS = 15
PURPOSE = "purpose"
RECONNECT = "the MCP server needs you to reconnect your account"


@dataclass
class PickerRow:
    server: MCPServer
    selected: bool
    locked: bool  # force_on: always on
    usable: bool  # False: selected earlier, access since revoked (kept, but cannot be chosen again)
    connection: str = ""  # OAuth2 servers: connected, expired, needs_reconnect or not_connected
    connect_url: str = ""


def select_defaults(chat: Chat) -> None:
    """At a chat's start: select the ``default_on`` servers its owner may use."""
    defaults = servers_usable_by(chat.owner, chat.organization).filter(availability=Availability.DEFAULT_ON)
    ChatMCPServer.objects.bulk_create(
        [ChatMCPServer(chat=chat, server=server) for server in defaults], ignore_conflicts=True
    )


def active_servers(chat: Chat) -> list[MCPServer]:
    """The servers of this step: always-on servers the owner may use, and the chat's selection (enabled only)."""
    usable = list(servers_usable_by(chat.owner, chat.organization))
    forced = [s for s in usable if s.availability == Availability.FORCE_ON]
    selected = list(MCPServer.objects.filter(chat_selections__chat=chat, enabled=True, organization=chat.organization))
    seen: set[int] = set()
    result = []
    for server in forced + selected:
        if server.pk not in seen:
            seen.add(server.pk)
            result.append(server)
    return sorted(result, key=lambda s: s.slug)


def picker(chat: Chat) -> list[PickerRow]:
    usable = list(servers_usable_by(chat.owner, chat.organization))
    selected_ids = set(ChatMCPServer.objects.filter(chat=chat).values_list("server_id", flat=True))
    rows = [
        PickerRow(
            s,
            s.availability == Availability.FORCE_ON or s.pk in selected_ids,
            s.availability == Availability.FORCE_ON,
            True,
        )
        for s in usable
    ]
    usable_ids = {s.pk for s in usable}
    for server in MCPServer.objects.filter(pk__in=selected_ids - usable_ids, enabled=True):
        rows.append(PickerRow(server, True, False, False))
    tokens = {
        t.server_id: t
        for t in MCPUserToken.objects.filter(user=chat.owner, server_id__in=[row.server.pk for row in rows])
    }
    for row in rows:
        if row.server.auth_type == AuthType.OAUTH2:
            row.connection = oauth_services.state_of(tokens.get(row.server.pk))
            row.connect_url = (
                f"/api/v2/organizations/{chat.organization.name}/mcp-servers/{row.server.pk}/oauth2/connect"
            )
    return sorted(rows, key=lambda r: r.server.display_name.lower())


def set_selection(*, chat: Chat, server_ids: set[int]) -> None:
    """Save the picker: servers the owner may use can be added; a kept server whose access was revoked may stay or
    be removed, never added again. Always-on servers are not stored."""
    usable = {s.pk: s for s in servers_usable_by(chat.owner, chat.organization)}
    with transaction.atomic():
        current = set(ChatMCPServer.objects.filter(chat=chat).values_list("server_id", flat=True))
        wanted = {pk for pk in server_ids if pk in usable and usable[pk].availability != Availability.FORCE_ON}
        wanted |= current & server_ids  # kept after a revocation
        removed, added = current - wanted, wanted - current
        ChatMCPServer.objects.filter(chat=chat, server_id__in=removed).delete()
        ChatMCPServer.objects.bulk_create([ChatMCPServer(chat=chat, server_id=pk) for pk in added])
        if removed or added:
            audit.record(
                actor=chat.owner,
                organization=chat.organization,
                action="chat.mcp_selection",
                resource_type="chat",
                resource_id=chat.pk,
                resource_name=chat.title[:256],
                changes={"mcp_servers": {"old": sorted(current), "new": sorted(wanted)}},
            )


def _identity_key(server: MCPServer, user_id: int) -> str:
    # Static auth (none, API key, custom headers) is the same for everyone; OAuth2 tools are per user.
    if server.auth_type in {AuthType.OAUTH2, AuthType.USER_OIDC}:
        return f"user:{user_id}"
    return f"static:{server.auth_type}"


def discover(
    server: MCPServer, endpoint: client.Endpoint, user_id: int, *, after_401=None
) -> list[client.RemoteTool] | None:
    """The server's tools its lists allow (chosen before the 64-tool cap), cached briefly per server version and auth
    identity. None when it cannot be reached.
    ``after_401`` (OAuth2, user OIDC) gives a refreshed endpoint for one retry when the server answers 401."""
    key = f"mcp-tools:{server.pk}:{server.updated_at.timestamp()}:{_identity_key(server, user_id)}"
    cached = cache.get(key)
    if cached == "unreachable":
        return None
    if cached is not None:
        return [client.RemoteTool(**tool) for tool in cached]
    try:

        def keep(tool: client.RemoteTool) -> bool:  # governance before the 64-tool cap
            return connect.tool_allowed(server, tool.name)

        try:
            tools = client.list_tools(endpoint, keep=keep)
        except client.MCPError as exc:
            retry = after_401() if exc.status == 401 and after_401 else None
            if retry is None:
                raise
            tools = client.list_tools(retry, keep=keep)
    except client.MCPError as exc:
        logger.warning("MCP server %s skipped: %s", server.slug, exc)
        cache.set(key, "unreachable", FAILURE_CACHE_SECONDS)
        return None
    cache.set(key, [t.__dict__ for t in tools], TOOLS_CACHE_SECONDS)
    return tools


def mcp_tools(chat: Chat, context) -> list:
    """The registry entries of the step's MCP servers."""
    from .tools import Tool, ToolResult

    tools: list[Tool] = []
    for server in active_servers(chat):
        bearer = None
        if server.auth_type == AuthType.OAUTH2:
            bearer = oauth_services.access_token_for(user=chat.owner, server=server)
            if bearer is None:
                continue  # not connected (or must reconnect): the picker and MCP connections say so
        elif server.auth_type == AuthType.USER_OIDC:
            bearer = oidc.access_token_for(chat.owner)  # None (password sign-in): sent without Authorization
        endpoint = _endpoint(chat, server, bearer)
        discovered = discover(server, endpoint, chat.owner_id, after_401=_refreshed(chat, server, bearer))
        if not discovered:
            continue
        for remote in connect.filter_tools(server, discovered):
            tools.append(_tool(chat, server, endpoint, remote, Tool, ToolResult))
    return tools


def _refreshed_bearer(chat: Chat, server: MCPServer, rejected: str | None) -> str | None:
    """After the server refused ``rejected`` with 401: a token to retry with (refreshed now, or already replaced by
    another request), or None when there is none."""
    if rejected is None:
        return None  # nothing was sent: nothing to refresh (a password user of a user_oidc server)
    if server.auth_type == AuthType.OAUTH2:
        return oauth_services.access_token_for(user=chat.owner, server=server, rejected=rejected)
    if server.auth_type == AuthType.USER_OIDC:
        return oidc.access_token_for(chat.owner, rejected=rejected)
    return None


def _refreshed(chat: Chat, server: MCPServer, rejected: str | None):
    if server.auth_type not in {AuthType.OAUTH2, AuthType.USER_OIDC}:
        return None

    def endpoint() -> client.Endpoint | None:
        bearer = _refreshed_bearer(chat, server, rejected)
        return _endpoint(chat, server, bearer) if bearer else None

    return endpoint


def _no_token(chat: Chat, server: MCPServer, otherwise: str = "") -> str:
    """Why a tool call has no token to send: the member must reconnect, or the provider could not refresh it now."""
    if server.auth_type == AuthType.OAUTH2 and oauth_services.connection_state(chat.owner, server) in (
        "needs_reconnect",
        "not_connected",
    ):
        return RECONNECT
    return otherwise or "the MCP server's sign-in could not be refreshed just now; try again in a minute"


def _endpoint(chat: Chat, server: MCPServer, bearer: str | None) -> client.Endpoint:
    return connect.endpoint_for(
        server, owner_id=chat.owner_id, chat_id=chat.pk, workspace_id=chat.workspace_id, bearer=bearer
    )


def _tool(chat: Chat, server: MCPServer, endpoint: client.Endpoint, remote: client.RemoteTool, Tool, ToolResult):
    schema = dict(remote.input_schema or {})
    schema.setdefault("type", "object")
    if server.model_intent:
        properties = dict(schema.get("properties") or {})
        properties[PURPOSE] = {
            "type": "string",
            "description": "Why you are calling this tool, in a few words. Shown to the user.",
        }
        schema["properties"] = properties
        schema["required"] = sorted(set(schema.get("required") or []) | {PURPOSE})

    def handler(arguments: dict, call_id: str) -> ToolResult:
        forwarded = {k: v for k, v in arguments.items() if not (server.model_intent and k == PURPOSE)}
        current, bearer = endpoint, None
        if server.auth_type == AuthType.OAUTH2:
            # The token now (discovery may have refreshed it since this tool was listed).
            bearer = oauth_services.access_token_for(user=chat.owner, server=server)
            if bearer is None:
                return ToolResult(_no_token(chat, server), is_error=True)
            current = _endpoint(chat, server, bearer)
        elif server.auth_type == AuthType.USER_OIDC:
            bearer = oidc.access_token_for(chat.owner)  # refreshed when near expiry
            current = _endpoint(chat, server, bearer)
        try:
            outcome = client.call_tool(current, remote.name, forwarded, tool_call_id=call_id)
        except client.MCPError as exc:
            if exc.status != 401 or server.auth_type not in {AuthType.OAUTH2, AuthType.USER_OIDC}:
                return ToolResult(str(exc), is_error=True)
            # One bounded refresh and retry after a 401, with the same tool call id.
            bearer = _refreshed_bearer(chat, server, bearer)
            if bearer is None:
                return ToolResult(_no_token(chat, server, str(exc)), is_error=True)
            try:
                outcome = client.call_tool(
                    _endpoint(chat, server, bearer), remote.name, forwarded, tool_call_id=call_id
                )
            except client.MCPError as retry_exc:
                return ToolResult(str(retry_exc), is_error=True)
        return ToolResult(outcome.content, is_error=outcome.is_error)

    def label(arguments: dict) -> str:
        if server.model_intent and arguments.get(PURPOSE):
            return str(arguments[PURPOSE])[:300]
        return f"Calling {server.display_name}: {remote.name}"

    return Tool(
        name=f"{server.slug}__{remote.name}",
        description=f"[{server.display_name}] {remote.description}".strip(),
        parameters=schema,
        handler=handler,
        label=label,
    )
