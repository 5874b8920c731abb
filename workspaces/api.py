"""Workspace API: the agent's channel, and reads for people.

The agent channel (``/api/v2/workspace-agent/…``) authenticates with ``Authorization: Bearer <workspace agent token>``:

- ``POST /status`` ``{"status": "starting" | "ready"}`` → 204. The agent reports itself; until it is ready it pushes
  nothing and the server holds no snapshot (an empty context).
- ``POST /snapshot`` ``{"resources": [...]}`` (the scanner's resource list) → 200
  ``{"snapshot_id", "version", "created", "changes_context"}``; 400 when the inventory breaks the caps.
- ``GET /requests?wait=SECONDS`` → 200 ``{"requests": [{"id", "kind", "payload"}]}``: a long-poll (at most
  ``WORKSPACE_AGENT_LONG_POLL`` seconds) through which the server sends work to the agent, so the workspace needs no
  inbound port. Each call also tells the server the agent is connected.
- ``POST /requests/{id}/response`` ``{"ok": bool, "content"?, "size"?, "truncated"?, "error"?}`` → 204; 404 when the
  request is not this workspace's or was already answered.

People (session or personal API token): ``GET /api/v2/workspaces`` (the caller's, and for admins and auditors every
workspace of their organizations) and ``GET /api/v2/workspaces/{id}/snapshot`` (the latest snapshot).
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from ninja import Router, Schema, Status
from ninja.security import HttpBearer

from organizations import access

from . import selectors, services
from .models import Workspace

agent_router = Router(tags=["workspace agent"])
router = Router(tags=["workspaces"])


class AgentToken(HttpBearer):
    def authenticate(self, request, token):
        workspace = services.workspace_for_token(token)
        if workspace is not None:
            request.workspace = workspace
        return workspace


class StatusIn(Schema):
    status: str


class SnapshotIn(Schema):
    resources: list[dict]


class PushOut(Schema):
    snapshot_id: int
    version: int
    created: bool
    changes_context: bool


class Error(Schema):
    message: str
    detail: str
    validations: list[dict]


class RequestOut(Schema):
    id: UUID
    kind: str
    payload: dict


class RequestsOut(Schema):
    requests: list[RequestOut]


class ResponseIn(Schema):
    ok: bool
    content: str | None = None
    size: int | None = None
    truncated: bool | None = None
    error: str | None = None


@agent_router.post("/status", auth=AgentToken(), response={204: None, 400: Error})
def agent_status(request: HttpRequest, payload: StatusIn):
    if payload.status not in {"starting", "ready"}:
        return Status(400, {"message": "Invalid status.", "detail": 'Use "starting" or "ready".', "validations": []})
    services.agent_seen(request.workspace, status=payload.status)
    return HttpResponse(status=204)


@agent_router.post("/snapshot", auth=AgentToken(), response={200: PushOut, 400: Error})
def agent_snapshot(request: HttpRequest, payload: SnapshotIn):
    try:
        snapshot, created = services.snapshot_push(workspace=request.workspace, resources=payload.resources)
    except services.PushRejected as exc:
        return Status(400, {"message": "Snapshot rejected.", "detail": exc.message, "validations": []})
    return {
        "snapshot_id": snapshot.pk,
        "version": snapshot.version,
        "created": created,
        "changes_context": snapshot.changes_context,
    }


@agent_router.get("/requests", auth=AgentToken(), response=RequestsOut)
def agent_requests(request: HttpRequest, wait: float = 0):
    wait = min(max(wait, 0.0), settings.WORKSPACE_AGENT_LONG_POLL)
    pending = services.agent_request_next(request.workspace, wait=wait)
    return {"requests": [{"id": r.pk, "kind": r.kind, "payload": r.payload} for r in pending]}


@agent_router.post("/requests/{request_id}/response", auth=AgentToken(), response={204: None})
def agent_respond(request: HttpRequest, request_id: UUID, payload: ResponseIn):
    if not services.agent_request_respond(
        workspace=request.workspace, request_id=request_id, response=payload.dict(exclude_none=True)
    ):
        raise Http404("No such open request.")
    return HttpResponse(status=204)


# People ---------------------------------------------------------------------------------------------------------------


class WorkspaceOut(Schema):
    id: int
    name: str
    organization: str
    owner: str
    status: str
    last_push_at: datetime | None
    last_seen_at: datetime | None


class ResourceOut(Schema):
    kind: str
    root: str
    root_kind: str
    path: str
    rel_path: str
    status: str
    error: str
    size: int
    sha256: str
    name: str


class SnapshotOut(Schema):
    workspace_id: int
    version: int | None
    created_at: datetime | None
    changes_context: bool
    resource_count: int
    content_bytes: int
    resources: list[ResourceOut]


def _workspace_out(w: Workspace) -> dict:
    return {
        "id": w.pk,
        "name": w.name,
        "organization": w.organization.name,
        "owner": w.owner.get_username(),
        "status": w.status,
        "last_push_at": w.last_push_at,
        "last_seen_at": w.last_seen_at,
    }


@router.get("/workspaces", response=list[WorkspaceOut])
def workspace_list(request: HttpRequest):
    return [_workspace_out(w) for w in selectors.workspaces_visible_to(request.user)]


@router.get("/workspaces/{workspace_id}/snapshot", response=SnapshotOut)
def workspace_snapshot(request: HttpRequest, workspace_id: int):
    workspace = access.owned_object_for(request.user, Workspace.objects.select_related("owner"), pk=workspace_id)
    snapshot = selectors.latest_snapshot(workspace)
    resources = list(snapshot.resources.all()) if snapshot else []
    return {
        "workspace_id": workspace.pk,
        "version": snapshot.version if snapshot else None,
        "created_at": snapshot.created_at if snapshot else None,
        "changes_context": snapshot.changes_context if snapshot else False,
        "resource_count": snapshot.resource_count if snapshot else 0,
        "content_bytes": snapshot.content_bytes if snapshot else 0,
        "resources": [
            {
                "kind": r.kind,
                "root": r.root,
                "root_kind": r.root_kind,
                "path": r.path,
                "rel_path": r.rel_path,
                "status": r.status,
                "error": r.error,
                "size": r.size,
                "sha256": r.sha256,
                "name": r.name,
            }
            for r in resources
        ],
    }

