"""Settings → MCP connections: every MCP server the user may use and how it signs in; for OAuth2 servers the user's
own connection, with Connect (a popup) and Disconnect."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from organizations import access, oidc
from organizations.models import UserOIDCToken

from . import oauth_services, selectors
from .models import AuthType, MCPUserToken


def rows_for(user) -> list[dict]:
    """Every enabled server the user may use (any auth type; ``state`` is set for OAuth2 ones), and any server they
    still hold a token for (access since revoked)."""
    tokens = {t.server_id: t for t in MCPUserToken.objects.filter(user=user).select_related("server__organization")}
    has_oidc = UserOIDCToken.objects.filter(user=user).exists()
    rows, seen = [], set()
    for organization in access.orgs_visible_to(user).order_by("name"):
        for server in selectors.servers_usable_by(user, organization).select_related("organization"):
            seen.add(server.pk)
            row = {"server": server, "state": "", "usable": True}
            if server.auth_type == AuthType.OAUTH2:
                row["state"] = oauth_services.state_of(tokens.get(server.pk))
            elif server.auth_type == AuthType.USER_OIDC and not has_oidc:
                row["oidc_missing"] = "no_session" if oidc.enabled() else "not_configured"
            rows.append(row)
    for server_id, token in tokens.items():
        if server_id not in seen:
            rows.append({"server": token.server, "state": oauth_services.state_of(token), "usable": False})
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
