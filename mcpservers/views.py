"""Admin settings → MCP servers (``/ai/settings/mcp-servers?org=<name>``): list, add, edit, delete, Test connection
and Manage permissions. Readers (admins, auditors, custom roles with mcp_server:read) see the page read-only;
members get 404."""

from __future__ import annotations

import time
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from organizations import access, acl
from organizations.views_common import confirm_and_perform

from . import client, connect, selectors, services
from .models import AuthType, Availability, MCPServer, Transport

READ = selectors.READ
TEXT_FIELDS = (
    "display_name",
    "slug",
    "description",
    "icon_url",
    "url",
    "transport",
    "availability",
    "auth_type",
    "oauth2_client_id",
    "oauth2_auth_url",
    "oauth2_token_url",
    "oauth2_scopes",
    "oauth2_revocation_url",
    "api_key_header",
)
BOOL_FIELDS = ("enabled", "model_intent", "forward_coder_headers")
SECRET_INPUTS = ("oauth2_client_secret", "api_key_value", "signing_secret")


def _url(name: str, organization, *args) -> str:
    return reverse(name, args=args) + "?" + urlencode({"org": organization.name})


def _org(request: HttpRequest):
    return access.organization_for(request.user, request.GET.get("org"), read=READ)


def _server(request: HttpRequest, server_id: int) -> MCPServer:
    return access.object_in_org(MCPServer.objects.select_related("organization"), _org(request), pk=server_id)


def _require(request, organization, verb: str, server: MCPServer | None = None, action: str = "") -> None:
    access.require_verb(request.user, organization, "mcp_server", verb, server, action=action, noun="MCP server")


def _context(request: HttpRequest, organization) -> dict:
    perms = access.org_permissions(request.user, organization)
    return {
        "organization": organization,
        "picker": list(access.orgs_with_perm(request.user, READ).order_by("name")),
        "can_create": "mcp_server:create" in perms,
        "can_update": "mcp_server:update" in perms,
        "can_delete": "mcp_server:delete" in perms,
        "can_share": "mcp_server:share" in perms,
        "page": "mcp-servers",
    }


def _form_data(request: HttpRequest) -> dict:
    """The posted form as service data: blank secret inputs keep the stored value (a "clear" box empties them)."""
    post = request.POST
    data: dict = {name: post[name] for name in TEXT_FIELDS if name in post}
    data.update({name: bool(post.get(name)) for name in BOOL_FIELDS})
    for name in SECRET_INPUTS:
        if post.get(f"clear_{name}"):
            data[name] = ""
        elif post.get(name):
            data[name] = post[name]
    names, values = post.getlist("header_name"), post.getlist("header_value")
    pairs = [(n.strip(), v) for n, v in zip(names, values, strict=False) if n.strip()]
    if pairs or post.get("clear_custom_headers"):
        data["custom_headers"] = dict(pairs)
    for name in ("tool_allow_list", "tool_deny_list"):
        data[name] = [line.strip() for line in post.get(name, "").splitlines() if line.strip()]
    return data


@login_required
@require_GET
def server_list(request: HttpRequest) -> HttpResponse:
    organization = _org(request)
    servers = list(MCPServer.objects.filter(organization=organization).order_by("display_name", "id"))
    entries = selectors.acl_of(servers)
    context = _context(request, organization) | {"rows": [(s, entries.get(s.pk, [])) for s in servers]}
    return render(request, "mcpservers/list.html", context)


def _form_page(request, organization, *, server: MCPServer | None, error=None, status=200) -> HttpResponse:
    context = _context(request, organization) | {
        "server": server,
        "error": error,
        "transports": Transport.choices,
        "availabilities": Availability.choices,
        "auth_types": [
            (value, label)
            for value, label in AuthType.choices
            if value != AuthType.USER_OIDC
            or access.is_site_owner(request.user)
            or (server and server.auth_type == AuthType.USER_OIDC)
        ],
        "posted": request.POST if request.method == "POST" else None,
        "headers": list((server.custom_headers if server else {}).keys()),
    }
    return render(request, "mcpservers/form.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def server_new(request: HttpRequest) -> HttpResponse:
    organization = _org(request)
    _require(request, organization, "create")
    if request.method == "POST":
        try:
            server = services.mcp_server_create(actor=request.user, organization=organization, data=_form_data(request))
            messages.success(request, f"{server.display_name} added and shared with Everyone.")
            return redirect(_url("mcp-servers", organization))
        except services.MCPConfigError as exc:
            return _form_page(request, organization, server=None, error=exc, status=exc.status)
    return _form_page(request, organization, server=None)


@login_required
@require_http_methods(["GET", "POST"])
def server_edit(request: HttpRequest, server_id: int) -> HttpResponse:
    server = _server(request, server_id)
    organization = server.organization
    _require(request, organization, "update", server)
    if request.method == "POST":
        try:
            services.mcp_server_update(actor=request.user, server=server, data=_form_data(request))
            messages.success(request, f"{server.display_name} saved.")
            return redirect(_url("mcp-servers", organization))
        except services.MCPConfigError as exc:
            return _form_page(request, organization, server=server, error=exc, status=exc.status)
    return _form_page(request, organization, server=server)


@login_required
@require_http_methods(["GET", "POST"])
def server_delete(request: HttpRequest, server_id: int) -> HttpResponse:
    server = _server(request, server_id)
    organization = server.organization
    _require(request, organization, "delete", server)
    return confirm_and_perform(
        request,
        lambda: services.mcp_server_delete(actor=request.user, server=server),
        title=f"Delete the MCP server {server.display_name}?",
        body="Every chat that uses it loses its tools at the next step, and its permission list is deleted.",
        button="Delete server",
        done=f"{server.display_name} deleted.",
        success_url=_url("mcp-servers", organization),
    )


MAX_TOOLS_SHOWN = 500  # a Test connection page lists at most this many of a server's tools


@login_required
@require_POST
def server_test(request: HttpRequest, server_id: int) -> HttpResponse:
    """Test connection: connect with the configured auth, list the tools, and show them with the latency, or the
    error (never a secret or a response body)."""
    server = _server(request, server_id)
    _require(request, server.organization, "update", server, "test_connection")
    started = time.monotonic()
    try:
        # Every tool (up to MAX_TOOLS_SHOWN), and which of them chats offer: the lists first, then the first 64.
        tools = client.list_tools(connect.endpoint_for(server, connect_timeout=10.0), limit=MAX_TOOLS_SHOWN)
        allowed = [t.name for t in tools if connect.tool_allowed(server, t.name)]
        result = {
            "ok": True,
            "tools": tools,
            "more": len(tools) >= MAX_TOOLS_SHOWN,
            "offered": set(allowed[: client.MAX_TOOLS]),
            "allowed": set(allowed),
            "capped": len(allowed) > client.MAX_TOOLS,
        }
    except client.MCPError as exc:
        result = {"ok": False, "error": str(exc)}
    result["latency_ms"] = round((time.monotonic() - started) * 1000)
    context = _context(request, server.organization) | {"server": server, "result": result}
    template = "mcpservers/test.html#test-result" if request.htmx else "mcpservers/test.html"
    return render(request, template, context)


@login_required
@require_http_methods(["GET", "POST"])
def server_permissions(request: HttpRequest, server_id: int) -> HttpResponse:
    server = _server(request, server_id)
    organization = server.organization
    status = 200
    if request.method == "POST":
        _require(request, organization, "share", server, "acl_update")
        try:
            user_roles, group_roles = acl.posted_change(request.POST)
            services.mcp_server_set_acl(
                actor=request.user, server=server, user_roles=user_roles, group_roles=group_roles
            )
            messages.success(request, "Permissions updated.")
            return redirect(_url("mcp-server-permissions", organization, server.pk))
        except acl.AclInvalid as exc:
            messages.error(request, exc.detail)
            status = 400
        except services.MCPConfigError as exc:
            messages.error(request, exc.detail or exc.message)
            status = 400
    context = _context(request, organization) | {"server": server} | acl.page_lists(server, selectors.CODENAME)
    return render(request, "mcpservers/permissions.html", context, status=status)
