"""The registry of permissions an organization can grant, and what each built-in role holds."""

from __future__ import annotations

from .models import Role

# Grantable through custom roles. Later apps check these names; the registry is the only list.
REGISTRY: dict[str, str] = {
    "organization_skill:create": "Create organization skills",
    "organization_skill:read": "View and download organization skills",
    "organization_skill:update": "Edit and enable organization skills",
    "organization_skill:delete": "Delete organization skills",
    "organization_skill:share": "Manage who can use organization skills",
    "mcp_server:create": "Register MCP servers",
    "mcp_server:read": "View MCP server configurations",
    "mcp_server:update": "Edit and enable MCP servers",
    "mcp_server:delete": "Delete MCP servers",
    "mcp_server:share": "Manage who can use MCP servers",
    "audit_log:read": "Read the audit log",
}

# Built in, not grantable: reading the organization's administration pages, and managing its people.
ORGANIZATION_READ = "organization:read"
ORGANIZATION_MANAGE = "organization:manage"
ALL = frozenset(REGISTRY) | {ORGANIZATION_READ, ORGANIZATION_MANAGE}

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    Role.ADMIN: ALL,
    # Auditors see everything in their organization, read-only.
    Role.AUDITOR: frozenset(p for p in ALL if p.endswith(":read")),
    Role.MEMBER: frozenset(),
}


def validate(names: list[str]) -> list[str]:
    """The names that are not in the registry."""
    return [name for name in names if name not in REGISTRY]


def grouped() -> list[tuple[str, list[tuple[str, str]]]]:
    """The registry grouped by resource, for forms: [(resource, [(name, label), …]), …]."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for name, label in REGISTRY.items():
        groups.setdefault(name.split(":", 1)[0], []).append((name, label))
    return list(groups.items())
