"""Settings → MCP connections: the user's OAuth2 connections to MCP servers, with Connect (a popup) and Disconnect."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from organizations import access

from . import oauth_services, selectors
from .models import AuthType, MCPUserToken


def rows_for(user) -> list[dict]:
    """Every OAuth2 server the user may use, and any server they still hold a token for (access since revoked)."""
    tokens = {t.server_id: t for t in MCPUserToken.objects.filter(user=user).select_related("server__organization")}
    rows, seen = [], set()
    for organization in access.orgs_visible_to(user).order_by("name"):
        for server in selectors.servers_usable_by(user, organization).filter(auth_type=AuthType.OAUTH2):
            seen.add(server.pk)
            rows.append({"server": server, "state": oauth_services.connection_state(user, server), "usable": True})
    for server_id, token in tokens.items():
        if server_id not in seen:
            rows.append(
                {"server": token.server, "state": oauth_services.connection_state(user, token.server), "usable": False}
            )
    return rows


def connect_url(server) -> str:
    return f"/api/v2/organizations/{server.organization.name}/mcp-servers/{server.pk}/oauth2/connect"


@login_required
@require_GET
def connections(request: HttpRequest) -> HttpResponse:
    rows = rows_for(request.user)
    for row in rows:
        row["connect_url"] = connect_url(row["server"])
    return render(request, "mcpservers/connections.html", {"rows": rows, "page": "mcp-connections"})


@login_required
@require_POST
def disconnect(request: HttpRequest, server_id: int) -> HttpResponse:
    result = oauth_services.disconnect(user=request.user, server_id=server_id)
    if result["token_revoked"]:
        messages.success(request, "Disconnected. The provider confirmed that the token is revoked.")
    else:
        messages.success(
            request,
            f"Disconnected here. The provider did not confirm a revocation ({result['token_revocation_error']}).",
        )
    return redirect(reverse("mcp-connections"))
