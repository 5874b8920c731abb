"""Reads of MCP server configurations, permission-filtered, with a fixed number of queries."""

from __future__ import annotations

from django.db.models import QuerySet

from organizations import access, acl
from organizations.models import Organization, User

from .models import MCPServer

READ = "mcp_server:read"
CODENAME = "use_mcpserver"


def servers_visible_to(user: User, organization: Organization) -> QuerySet[MCPServer]:
    """Every server for those who may read the configurations (site owners, admins, auditors, custom roles); for
    members, the enabled servers whose list names them or one of their groups. Disabled servers are hidden from
    members."""
    servers = MCPServer.objects.filter(organization=organization).order_by("display_name", "id")
    if access.has_perm(user, organization, READ):
        return servers
    return servers_usable_by(user, organization)


def servers_usable_by(user: User, organization: Organization) -> QuerySet[MCPServer]:
    """Enabled servers the user may select in a chat: readers may use every enabled server, members those shared
    with them. Three queries at most."""
    enabled = MCPServer.objects.filter(organization=organization, enabled=True).order_by("display_name", "id")
    if access.has_perm(user, organization, READ):
        return enabled
    if not access.is_member(user, organization):
        return enabled.none()
    candidates = list(enabled.values_list("pk", flat=True))
    return enabled.filter(pk__in=acl.usable_ids(user, MCPServer, CODENAME, candidates))


def acl_of(servers: list[MCPServer]) -> dict[int, list[acl.AclEntry]]:
    return acl.entries(servers, CODENAME)
