"""OAuth2 endpoints at the documented paths:

- ``GET /api/v2/organizations/{organization}/mcp-servers/{id}/oauth2/connect`` → 302 to the provider (session only,
  for a server the caller may use).
- ``GET /api/experimental/mcp/servers/{id}/oauth2/callback`` → the popup page that tells its opener
  ``{type: "mcp-oauth2-complete", serverID}`` (same origin only) and closes; errors 400/502 with the documented
  messages (an HTML page for browsers, the JSON error shape otherwise).
- ``DELETE /api/v2/mcp/servers/{id}/oauth2/disconnect`` → ``{token_revoked, token_revocation_error}``; it needs only
  a session, so people removed from the list or the organization can still delete their token.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from ninja import Router, Schema
from ninja.security import django_auth

from organizations import access

from . import oauth, oauth_services, selectors
from .models import AuthType, MCPServer

org_router = Router(tags=["mcp oauth2"])
callback_router = Router(tags=["mcp oauth2"])
disconnect_router = Router(tags=["mcp oauth2"])


class DisconnectOut(Schema):
    token_revoked: bool
    token_revocation_error: str


def _opener_kept(response: HttpResponse) -> HttpResponse:
    """The popup's own pages keep their link to the page that opened them (it is told when the connection is made);
    the opening pages allow it with same-origin-allow-popups (settings)."""
    response["Cross-Origin-Opener-Policy"] = "unsafe-none"
    return response


def _error(request: HttpRequest, status: int, message: str) -> HttpResponse:
    if "text/html" in request.headers.get("Accept", ""):
        return render(request, "mcpservers/oauth_complete.html", {"error": message}, status=status)
    return JsonResponse({"message": message, "detail": "", "validations": []}, status=status)


@org_router.get("/organizations/{organization}/mcp-servers/{server_id}/oauth2/connect", auth=django_auth)
def connect(request: HttpRequest, organization: str, server_id: int):
    org = access.orgs_visible_to(request.user).filter(name=organization).first()
    server = selectors.servers_usable_by(request.user, org).filter(pk=server_id).first() if org else None
    if server is None:
        raise Http404("Not found.")
    if server.auth_type != AuthType.OAUTH2:
        return _error(request, 400, "This MCP server does not use OAuth2.")
    try:
        return _opener_kept(HttpResponseRedirect(oauth_services.connect_start(user=request.user, server=server)))
    except oauth.OAuthError:
        return _error(request, 502, "The OAuth2 provider could not be reached.")


@callback_router.get("/mcp/servers/{server_id}/oauth2/callback", auth=django_auth, url_name="mcp_oauth2_callback")
def callback(request: HttpRequest, server_id: int):
    server = MCPServer.objects.select_related("organization").filter(pk=server_id).first()
    if server is None:
        return _error(request, 400, "Invalid or missing OAuth2 state parameter.")
    try:
        oauth_services.connect_finish(user=request.user, server=server, params=request.GET.dict())
    except oauth_services.CallbackError as exc:
        return _opener_kept(_error(request, exc.status, exc.message))
    return _opener_kept(render(request, "mcpservers/oauth_complete.html", {"server_id": server.pk, "server": server}))


@disconnect_router.delete("/mcp/servers/{server_id}/oauth2/disconnect", auth=django_auth, response=DisconnectOut)
def disconnect(request: HttpRequest, server_id: int):
    return oauth_services.disconnect(user=request.user, server_id=server_id)
