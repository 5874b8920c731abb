"""MCP server configurations at the documented paths: ``/api/v2/organizations/{organization}/mcp-servers`` (list,
create), ``/{id}`` (get, PATCH, DELETE), ``/{id}/acl`` (GET, PATCH → 204), ``/{id}/acl/available``.

Readers (site owners, admins, auditors, custom roles with mcp_server:read) see every server; members see the enabled
servers shared with them; a server the caller cannot see answers 404. Secrets never leave: responses carry
``has_oauth2_secret``, ``has_api_key``, ``has_custom_headers`` and ``has_signing_secret`` instead.
"""

from __future__ import annotations

import json
from datetime import datetime

from django.http import Http404, HttpRequest, HttpResponse
from ninja import Body, Router, Schema, Status

from organizations import access
from organizations.acl_api import AclOut, AvailableOut, acl_out, available_out
from organizations.models import Organization

from . import selectors, services
from .models import MCPServer

router = Router(tags=["mcp servers"])


class ServerOut(Schema):
    id: int
    organization_id: int
    display_name: str
    slug: str
    description: str
    icon_url: str
    url: str
    transport: str
    enabled: bool
    availability: str
    model_intent: bool
    forward_coder_headers: bool
    auth_type: str
    oauth2_client_id: str
    oauth2_auth_url: str
    oauth2_token_url: str
    oauth2_scopes: str
    oauth2_revocation_url: str
    api_key_header: str
    tool_allow_list: list[str]
    tool_deny_list: list[str]
    has_oauth2_secret: bool
    has_api_key: bool
    has_custom_headers: bool
    has_signing_secret: bool
    created_at: datetime
    updated_at: datetime


class Error(Schema):
    message: str
    detail: str
    validations: list[dict]


def _error(exc: services.MCPConfigError) -> Status:
    return Status(exc.status, {"message": exc.message, "detail": exc.detail, "validations": exc.validations})


def _server(request: HttpRequest, organization: str, server_id: int) -> MCPServer:
    org = access.visible_organization(request.user, organization)
    server = selectors.servers_visible_to(request.user, org).filter(pk=server_id).select_related("organization").first()
    if server is None:
        raise Http404("Not found.")
    return server


def _require(request, org: Organization, verb: str, server: MCPServer | None = None, action: str = "") -> None:
    access.require_verb(request.user, org, "mcp_server", verb, server, action=action, noun="MCP server")


@router.get("/organizations/{organization}/mcp-servers", response=list[ServerOut])
def server_list(request: HttpRequest, organization: str):
    return list(selectors.servers_visible_to(request.user, access.visible_organization(request.user, organization)))


@router.post("/organizations/{organization}/mcp-servers", response={201: ServerOut, 400: Error, 403: Error, 409: Error})
def server_create(request: HttpRequest, organization: str, payload: dict = Body(...)):
    org = access.visible_organization(request.user, organization)
    _require(request, org, "create")
    try:
        return Status(201, services.mcp_server_create(actor=request.user, organization=org, data=payload))
    except services.MCPConfigError as exc:
        return _error(exc)


@router.get("/organizations/{organization}/mcp-servers/{server_id}", response=ServerOut)
def server_detail(request: HttpRequest, organization: str, server_id: int):
    return _server(request, organization, server_id)


@router.patch(
    "/organizations/{organization}/mcp-servers/{server_id}",
    response={200: ServerOut, 400: Error, 403: Error, 409: Error},
)
def server_update(request: HttpRequest, organization: str, server_id: int, payload: dict = Body(...)):
    server = _server(request, organization, server_id)
    _require(request, server.organization, "update", server)
    try:
        return Status(200, services.mcp_server_update(actor=request.user, server=server, data=payload))
    except services.MCPConfigError as exc:
        return _error(exc)


@router.delete("/organizations/{organization}/mcp-servers/{server_id}")
def server_delete(request: HttpRequest, organization: str, server_id: int):
    server = _server(request, organization, server_id)
    _require(request, server.organization, "delete", server)
    services.mcp_server_delete(actor=request.user, server=server)
    return HttpResponse(status=204)


def _for_acl(request: HttpRequest, organization: str, server_id: int) -> MCPServer:
    """The ACL is part of the administration: only those who read every configuration see it."""
    server = _server(request, organization, server_id)
    if not access.has_perm(request.user, server.organization, selectors.READ):
        raise Http404("Not found.")
    return server


@router.get("/organizations/{organization}/mcp-servers/{server_id}/acl", response=AclOut)
def acl_get(request: HttpRequest, organization: str, server_id: int):
    server = _for_acl(request, organization, server_id)
    entries = selectors.acl_of([server]).get(server.pk, [])
    return acl_out(entries)


@router.patch("/organizations/{organization}/mcp-servers/{server_id}/acl", response={204: None, 400: Error})
def acl_patch(request: HttpRequest, organization: str, server_id: int, payload: dict = Body(...)):
    server = _for_acl(request, organization, server_id)
    _require(request, server.organization, "share", server, "acl_update")
    if _has_duplicate_keys(request.body):
        return _error(
            services.MCPConfigError(400, "Invalid request to update MCP server config ACL.", "an id appears twice")
        )
    user_roles, group_roles = payload.get("user_roles") or {}, payload.get("group_roles") or {}
    if not isinstance(user_roles, dict) or not isinstance(group_roles, dict):
        return _error(
            services.MCPConfigError(400, "Invalid request to update MCP server config ACL.", "objects of id → role")
        )
    try:
        services.mcp_server_set_acl(actor=request.user, server=server, user_roles=user_roles, group_roles=group_roles)
    except services.MCPConfigError as exc:
        return _error(exc)
    return HttpResponse(status=204)


def _has_duplicate_keys(body: bytes) -> bool:
    """JSON parsers keep the last of two equal keys; the documented rule is to refuse them."""
    duplicated = False

    def pairs(items):
        nonlocal duplicated
        keys = [key for key, _ in items]
        duplicated = duplicated or len(keys) != len(set(keys))
        return dict(items)

    try:
        json.loads(body or b"{}", object_pairs_hook=pairs)
    except ValueError:
        return False
    return duplicated


@router.get("/organizations/{organization}/mcp-servers/{server_id}/acl/available", response=AvailableOut)
def acl_available(request: HttpRequest, organization: str, server_id: int):
    server = _for_acl(request, organization, server_id)
    return available_out(server.organization)
