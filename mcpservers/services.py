"""Every write to MCP server configurations, with the documented validation rules and messages. Secrets (OAuth2
client secret, API key value, custom header values, signing secret) are encrypted at rest, never returned, and never
written to the audit log: a change shows as "(secret changed)".

Update semantics for secrets: a field left out keeps the stored value, an explicit empty value clears it.
Changing the auth type clears the previous type's fields.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from organizations import access, acl, audit
from organizations.models import Organization, User

from .models import AuthType, Availability, MCPServer, Transport

USE_PERMISSION = "mcpservers.use_mcpserver"
SECRET_FIELDS = frozenset({"oauth2_client_secret", "api_key_value", "custom_headers", "signing_secret"})
PLAIN_FIELDS = (
    "display_name",
    "slug",
    "description",
    "icon_url",
    "url",
    "transport",
    "enabled",
    "availability",
    "model_intent",
    "forward_coder_headers",
    "auth_type",
    "oauth2_client_id",
    "oauth2_auth_url",
    "oauth2_token_url",
    "oauth2_scopes",
    "oauth2_revocation_url",
    "api_key_header",
    "tool_allow_list",
    "tool_deny_list",
)
AUTH_FIELDS = {
    AuthType.OAUTH2: (
        "oauth2_client_id",
        "oauth2_client_secret",
        "oauth2_auth_url",
        "oauth2_token_url",
        "oauth2_scopes",
        "oauth2_revocation_url",
    ),
    AuthType.API_KEY: ("api_key_header", "api_key_value"),
    AuthType.CUSTOM_HEADERS: ("custom_headers",),
}
RESERVED_HEADERS = frozenset(
    h.lower()
    for h in (
        "Host",
        "Content-Length",
        "Connection",
        "Transfer-Encoding",
        "Trailer",
        "Upgrade",
        "TE",
        "Keep-Alive",
        "Accept",
        "Accept-Encoding",
        "Content-Type",
        "Last-Event-ID",
        "MCP-Protocol-Version",
        "MCP-Session-ID",
    )
)
HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_HEADERS = 16
MAX_TOOL_NAMES = 64


@dataclass
class MCPConfigError(Exception):
    status: int
    message: str
    detail: str = ""
    validations: list[dict] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


def _invalid(message: str, field_name: str, detail: str) -> MCPConfigError:
    return MCPConfigError(400, message, detail, [{"field": field_name, "detail": detail}])


def _bad(field_name: str, detail: str) -> MCPConfigError:
    return _invalid("Invalid MCP server config.", field_name, detail)


def _is_loopback(host: str) -> bool:
    if host in {"localhost"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_url(value: str, field_name: str, *, https_only: bool = False) -> str:
    value = (value or "").strip()
    try:
        URLValidator(schemes=["http", "https"])(value)
    except ValidationError:
        raise _bad(field_name, "must be an http:// or https:// URL") from None
    parts = urlsplit(value)
    if parts.username or parts.password:
        raise _bad(field_name, "must not carry a user name or password")
    if https_only and parts.scheme != "https" and not _is_loopback(parts.hostname or ""):
        raise _bad(field_name, "must use HTTPS (plain HTTP only to a loopback address)")
    return value


def _check_headers(value) -> dict[str, str]:
    if not isinstance(value, dict) or len(value) > MAX_HEADERS:
        raise _invalid("Invalid custom headers.", "custom_headers", f"an object of at most {MAX_HEADERS} headers")
    clean: dict[str, str] = {}
    for name, header_value in value.items():
        if not isinstance(name, str) or not HEADER_NAME_RE.match(name) or len(name.encode()) > 128:
            raise _invalid("Invalid custom headers.", "custom_headers", f"{str(name)[:64]!r} is not a header name")
        lowered = name.lower()
        if lowered in RESERVED_HEADERS or lowered.startswith(("proxy-", "x-coder-")):
            raise _invalid("Invalid custom headers.", "custom_headers", f"{name} is reserved")
        if not isinstance(header_value, str) or len(header_value.encode()) > 8192 or "\n" in header_value:
            raise _invalid("Invalid custom headers.", "custom_headers", f"the value of {name} is not valid")
        clean[name] = header_value
    return clean


def _check_tool_list(value, field_name: str) -> list[str]:
    if value in (None, ""):
        return []
    if not isinstance(value, list) or len(value) > MAX_TOOL_NAMES:
        raise _bad(field_name, f"a list of at most {MAX_TOOL_NAMES} tool names")
    names = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item.encode()) > 128:
            raise _bad(field_name, "each tool name is 1 to 128 bytes of text")
        names.append(item.strip())
    return sorted(set(names), key=names.index)


def _snapshot(server: MCPServer) -> dict:
    data = {name: getattr(server, name) for name in PLAIN_FIELDS}
    for name in SECRET_FIELDS:
        data[name] = bool(getattr(server, "custom_headers_encrypted" if name == "custom_headers" else name))
    return data


def _apply(server: MCPServer, data: dict, *, actor: User | None, creating: bool) -> None:
    """Validate ``data`` into ``server`` (not saved). Raises MCPConfigError with the documented messages."""
    for name in PLAIN_FIELDS:
        if name in data and data[name] is not None:
            value = data[name]
            if name in {"enabled", "model_intent", "forward_coder_headers"}:
                if not isinstance(value, bool):
                    raise _bad(name, "must be true or false")
            elif name in {"tool_allow_list", "tool_deny_list"}:
                value = _check_tool_list(value, name)
            elif not isinstance(value, str):
                raise _bad(name, "must be text")
            else:
                value = value.strip()
            setattr(server, name, value)
    if not server.display_name:
        raise _bad("display_name", "is required")
    if len(server.display_name) > 200:
        raise _bad("display_name", "use at most 200 characters")
    if creating and not data.get("slug"):
        server.slug = slugify(server.display_name)[:64].strip("-")
    if not SLUG_RE.match(server.slug or "") or len(server.slug) > 64:
        raise _bad("slug", "lowercase letters, digits and single hyphens, at most 64 characters")
    server.url = _check_url(server.url, "url")
    if server.transport not in Transport.values:
        raise _bad("transport", "streamable_http or sse")
    if server.availability not in Availability.values:
        raise _bad("availability", "force_on, default_on or default_off")
    if server.auth_type not in AuthType.values:
        raise _bad("auth_type", "none, oauth2, api_key, custom_headers or user_oidc")
    if server.icon_url and server.icon_url.startswith(("http://", "https://")):
        server.icon_url = _check_url(server.icon_url, "icon_url", https_only=True)
    elif len(server.icon_url) > 16:
        raise _bad("icon_url", "an emoji or an https:// image URL")
    # Secrets: left out keeps, "" clears.
    for name in ("oauth2_client_secret", "api_key_value", "signing_secret"):
        if name in data and data[name] is not None:
            if not isinstance(data[name], str):
                raise _bad(name, "must be text")
            setattr(server, name, data[name])
    if "custom_headers" in data and data["custom_headers"] is not None:
        server.custom_headers = _check_headers(data["custom_headers"])
    # Changing the auth type clears the previous type's fields.
    for auth_type, names in AUTH_FIELDS.items():
        if server.auth_type != auth_type:
            for name in names:
                if name == "custom_headers":
                    server.custom_headers_encrypted = ""
                elif name == "api_key_header":
                    server.api_key_header = "Authorization"
                else:
                    setattr(server, name, "")
    if server.auth_type == AuthType.OAUTH2:
        manual = [server.oauth2_client_id, server.oauth2_auth_url, server.oauth2_token_url]
        if any(manual) and not all(manual):
            raise _invalid(
                "OAuth2 auth type requires either all of oauth2_client_id, oauth2_auth_url, and oauth2_token_url "
                "(manual configuration), or none of them (automatic discovery via RFC 7591).",
                "oauth2_client_id",
                "give all three fields, or none of them",
            )
        if server.oauth2_auth_url:
            server.oauth2_auth_url = _check_url(server.oauth2_auth_url, "oauth2_auth_url")
            server.oauth2_token_url = _check_url(server.oauth2_token_url, "oauth2_token_url")
        if server.oauth2_revocation_url:
            server.oauth2_revocation_url = _check_url(
                server.oauth2_revocation_url, "oauth2_revocation_url", https_only=True
            )
    elif server.auth_type == AuthType.API_KEY:
        if not server.api_key_header or not server.api_key_value:
            raise _invalid(
                "API key auth type requires api_key_header and api_key_value.",
                "api_key_value" if server.api_key_header else "api_key_header",
                "both are required",
            )
        if not HEADER_NAME_RE.match(server.api_key_header) or server.api_key_header.lower() in RESERVED_HEADERS:
            raise _bad("api_key_header", "must be a header name that is not reserved")
    elif server.auth_type == AuthType.CUSTOM_HEADERS:
        if not server.custom_headers:
            raise _invalid(
                "Custom headers auth type requires at least one custom header.",
                "custom_headers",
                "add at least one header",
            )
    elif server.auth_type == AuthType.USER_OIDC and actor is not None and not access.is_site_owner(actor):
        # actor None is the operator at the command line (seed_demo, management commands): a site owner's say.
        raise MCPConfigError(403, "Only site owners can configure servers that use User OIDC identity.")


def _discover_if_needed(server: MCPServer) -> None:
    """OAuth2 without a manual configuration: discover it (RFC 9728, RFC 8414/OpenID, RFC 7591) now, inside the
    saving transaction, so that a failed discovery leaves no half-made server."""
    if server.auth_type != AuthType.OAUTH2 or server.oauth2_client_id:
        return
    from . import oauth, oauth_services

    try:
        found = oauth.discover(
            server.url,
            redirect_uri=oauth_services.redirect_uri(server.pk),
            client_name=f"Switchboard ({server.display_name})",
            scopes=server.oauth2_scopes,
        )
    except oauth.OAuthError as exc:
        step = getattr(exc, "step", "") or "discovery"
        raise _invalid("OAuth2 auto-discovery failed.", "oauth2_client_id", f"{step} failed") from None
    server.oauth2_client_id = found.client_id
    server.oauth2_client_secret = found.client_secret
    server.oauth2_auth_url = found.auth_url
    server.oauth2_token_url = found.token_url
    server.oauth2_scopes = server.oauth2_scopes or found.scopes
    if not server.oauth2_revocation_url and found.revocation_url:
        server.oauth2_revocation_url = found.revocation_url
    server.save()


def mcp_server_create(*, actor: User | None, organization: Organization, data: dict) -> MCPServer:
    """Create a server, shared with the organization's Everyone group."""
    server = MCPServer(organization=organization, created_by=actor if actor and actor.is_authenticated else None)
    _apply(server, data, actor=actor, creating=True)
    try:
        with transaction.atomic():
            if MCPServer.objects.filter(organization=organization, slug=server.slug).exists():
                raise MCPConfigError(409, "MCP server config already exists.", f"The slug {server.slug} is taken.")
            server.save()
            _discover_if_needed(server)
            acl.grant_everyone(server, USE_PERMISSION)
            after = _snapshot(server)
            audit.record(
                actor=actor,
                organization=organization,
                action="mcp_server.create",
                resource_type="mcp_server",
                resource_id=server.pk,
                resource_name=server.display_name,
                changes=audit.diff({}, after, secret_fields=SECRET_FIELDS),
            )
    except IntegrityError:
        raise MCPConfigError(409, "MCP server config already exists.") from None
    return server


def mcp_server_update(*, actor: User, server: MCPServer, data: dict) -> MCPServer:
    if server.auth_type == AuthType.USER_OIDC and not access.is_site_owner(actor):
        raise MCPConfigError(403, "Only site owners can configure servers that use User OIDC identity.")
    with transaction.atomic():
        server = MCPServer.objects.select_for_update().select_related("organization").get(pk=server.pk)
        before = _snapshot(server)
        _apply(server, data, actor=actor, creating=False)
        clash = MCPServer.objects.filter(organization_id=server.organization_id, slug=server.slug).exclude(pk=server.pk)
        if clash.exists():
            raise MCPConfigError(409, "MCP server config already exists.", f"The slug {server.slug} is taken.")
        after = _snapshot(server)
        changes = audit.diff(before, after, secret_fields=SECRET_FIELDS)
        # A secret that was replaced by another value is a change too, though "set" stays "set".
        for name in ("oauth2_client_secret", "api_key_value", "signing_secret", "custom_headers"):
            if name in data and data[name] is not None and name not in changes and after[name]:
                changes[name] = {"old": None, "new": audit.SECRET_MARK}
        server.updated_at = timezone.now()
        server.save()
        _discover_if_needed(server)
        if changes:
            audit.record(
                actor=actor,
                organization=server.organization,
                action="mcp_server.update",
                resource_type="mcp_server",
                resource_id=server.pk,
                resource_name=server.display_name,
                changes=changes,
            )
    return server


def mcp_server_delete(*, actor: User, server: MCPServer) -> None:
    with transaction.atomic():
        server_id, name, organization = server.pk, server.display_name, server.organization
        acl.delete_entries(server)
        server.delete()
        audit.record(
            actor=actor,
            organization=organization,
            action="mcp_server.delete",
            resource_type="mcp_server",
            resource_id=server_id,
            resource_name=name,
        )


def mcp_server_set_acl(
    *, actor: User, server: MCPServer, user_roles: dict | None = None, group_roles: dict | None = None
) -> None:
    """ACL changes; a duplicate id or a refused entry answers the documented 400 and changes nothing."""
    try:
        acl.set_entries(
            actor=actor,
            obj=server,
            permission=USE_PERMISSION,
            user_roles=user_roles,
            group_roles=group_roles,
            resource_type="mcp_server",
        )
    except acl.AclInvalid as exc:
        raise MCPConfigError(
            400,
            "Invalid request to update MCP server config ACL.",
            exc.detail,
            [{"field": exc.field, "detail": exc.detail}],
        ) from None
