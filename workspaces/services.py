"""Every write to workspaces and snapshots, and the server's side of the agent channel.

The agent pushes what its scanner found; the server re-checks the caps (it trusts no agent), stores file contents
once per hash, and creates a new snapshot version only when something changed. Reads of supporting files travel
to the agent as ``AgentRequest`` rows that the agent collects by long-polling, so the workspace needs no inbound port.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from organizations import audit
from organizations.models import Membership, Organization, User, hash_token

from . import scanner
from .models import (
    AgentRequest,
    ContentBlob,
    ContextSnapshot,
    SnapshotResource,
    Workspace,
    WorkspaceStatus,
)
from .signals import snapshot_pushed

CONTEXT_KINDS = {"instruction", "skill"}
MAX_INVENTORY = 5000  # resources listed in one push, whatever their status (past the 500 cap they are "excluded")
UNREACHABLE_MESSAGE = "workspace is unreachable"


class WorkspaceUnreachable(Exception):
    def __str__(self) -> str:
        return UNREACHABLE_MESSAGE


@dataclass
class PushRejected(Exception):
    message: str

    def __str__(self) -> str:
        return self.message


def _field_error(field: str, message: str) -> ValidationError:
    return ValidationError({field: [message]})


# Workspaces ----------------------------------------------------------------------------------------------------------


def _new_token() -> tuple[str, str]:
    token = Workspace.TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, hash_token(token)


def workspace_create(*, actor: User, organization: Organization, name: str) -> tuple[Workspace, str]:
    """Create a workspace owned by ``actor`` (a member of the organization). Returns it and its agent token, which
    is shown once and stored only as a hash."""
    name = name.strip()
    if not name:
        raise _field_error("name", "Enter a workspace name.")
    if len(name) > 64:
        raise _field_error("name", "Use at most 64 characters.")
    if not actor.is_superuser and not Membership.objects.filter(organization=organization, user=actor).exists():
        raise _field_error("organization", "Choose one of your organizations.")
    token, token_hash = _new_token()
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(
                organization=organization,
                owner=actor,
                name=name,
                agent_token_hash=token_hash,
                agent_token_hint=token[:8],
            )
            audit.record(
                actor=actor,
                organization=organization,
                action="workspace.create",
                resource_type="workspace",
                resource_id=workspace.pk,
                resource_name=name,
            )
    except IntegrityError:
        raise _field_error("name", f"You already have a workspace named {name} in {organization.name}.") from None
    return workspace, token


def workspace_rotate_token(*, actor: User, workspace: Workspace) -> str:
    """Replace the agent token; the old one stops working at once."""
    token, token_hash = _new_token()
    with transaction.atomic():
        workspace.agent_token_hash = token_hash
        workspace.agent_token_hint = token[:8]
        workspace.save(update_fields=["agent_token_hash", "agent_token_hint"])
        audit.record(
            actor=actor,
            organization=workspace.organization,
            action="workspace.rotate_token",
            resource_type="workspace",
            resource_id=workspace.pk,
            resource_name=workspace.name,
        )
    return token


def workspace_delete(*, actor: User, workspace: Workspace) -> None:
    with transaction.atomic():
        workspace_id, name, organization = workspace.pk, workspace.name, workspace.organization
        workspace.delete()
        audit.record(
            actor=actor,
            organization=organization,
            action="workspace.delete",
            resource_type="workspace",
            resource_id=workspace_id,
            resource_name=name,
        )


def workspace_for_token(token: str) -> Workspace | None:
    if not token.startswith(Workspace.TOKEN_PREFIX):
        return None
    return Workspace.objects.select_related("organization", "owner").filter(agent_token_hash=hash_token(token)).first()


def agent_seen(workspace: Workspace, *, status: str | None = None) -> None:
    """Note that the agent is connected, and (optionally) the status it reports (starting or ready)."""
    fields = {"last_seen_at": timezone.now()}
    if status in {WorkspaceStatus.STARTING, WorkspaceStatus.READY}:
        fields["status"] = status
    elif workspace.status in {WorkspaceStatus.UNREACHABLE, WorkspaceStatus.STOPPED}:
        # Reachable again: it is ready if it has pushed since, otherwise still starting.
        fields["status"] = WorkspaceStatus.READY if workspace.last_push_at else WorkspaceStatus.STARTING
    Workspace.objects.filter(pk=workspace.pk).update(**fields)
    for key, value in fields.items():
        setattr(workspace, key, value)


def mark_unreachable() -> int:
    """Workspaces whose agent has not been seen for a while become unreachable. Returns how many changed."""
    cutoff = timezone.now() - timedelta(seconds=settings.WORKSPACE_AGENT_STALE_SECONDS)
    return Workspace.objects.filter(
        status__in=[WorkspaceStatus.STARTING, WorkspaceStatus.READY], last_seen_at__lt=cutoff
    ).update(status=WorkspaceStatus.UNREACHABLE)


def is_reachable(workspace: Workspace) -> bool:
    if workspace.last_seen_at is None or workspace.status == WorkspaceStatus.STOPPED:
        return False
    age = (timezone.now() - workspace.last_seen_at).total_seconds()
    return age <= settings.WORKSPACE_AGENT_STALE_SECONDS


# Snapshots -----------------------------------------------------------------------------------------------------------


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _check(resources: list[dict]) -> tuple[int, int]:
    """Re-check the caps of a pushed inventory. Returns (counted resources, content bytes)."""
    if len(resources) > MAX_INVENTORY:
        raise PushRejected(f"a snapshot lists at most {MAX_INVENTORY} resources")
    total = 0
    counted = 0
    for index, resource in enumerate(resources):
        content = resource.get("content")
        status = resource.get("status")
        if status in {"ok", "invalid", "oversize", "shadowed"}:
            counted += 1
        if content is None:
            continue
        if status != "ok":
            raise PushRejected(f"resource {index}: only resources with status ok carry content")
        size = len(content.encode("utf-8"))
        if size > scanner.MAX_FILE_BYTES:
            raise PushRejected(f"resource {index}: content over {scanner.MAX_FILE_BYTES} bytes")
        total += size
    if total > scanner.MAX_SNAPSHOT_BYTES:
        raise PushRejected(f"snapshot content over {scanner.MAX_SNAPSHOT_BYTES} bytes")
    if counted > scanner.MAX_RESOURCES:
        raise PushRejected(f"more than {scanner.MAX_RESOURCES} resources are not excluded")
    return counted, total


def _sanitize_skills(resources: list[dict]) -> list[dict]:
    """Never trust the agent with names: an ok skill whose name breaks the format becomes invalid, and a second ok
    skill of the same name is shadowed by the first, as the scanner itself would have done."""
    from skills.format import validate_name

    seen: dict[str, str] = {}
    clean = []
    for resource in resources:
        skill = resource.get("skill") if isinstance(resource.get("skill"), dict) else None
        if resource.get("kind") == "skill" and resource.get("status") == "ok" and skill is not None:
            name = skill.get("name")
            problem = validate_name(name)
            if problem:
                resource = {**resource, "status": "invalid", "error": problem, "content": None}
            elif name in seen:
                resource = {**resource, "status": "shadowed", "error": f"shadowed by {seen[name]}", "content": None}
            else:
                seen[name] = str(resource.get("path", ""))
        clean.append(resource)
    return clean


REDACTED = "[redacted]"
_URL_START = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//")  # what comes before the authority (urlsplit's netloc)
# A flag is kept only when it cannot hold a value: "--" and a name, or "-" and one letter ("-pS3cret" is "-p S3cret").
_FLAG = re.compile(r"--[A-Za-z][A-Za-z0-9_-]*|-[A-Za-z]")


def _redact_arg(arg: object) -> object:
    """A flag (``--name`` or ``-x``) is kept; ``--name=value`` and ``-x=value`` keep the flag and lose the value;
    anything else may be a value, or a flag with a value attached, so it goes."""
    if not isinstance(arg, str):
        return REDACTED
    if _FLAG.fullmatch(arg):
        return arg
    flag, equals, _ = arg.partition("=")
    return f"{flag}={REDACTED}" if equals and _FLAG.fullmatch(flag) else REDACTED


def _redact_url(url: object) -> object:
    """Scheme, host and port of a URL; userinfo, a path other than "/" and a query each become "[redacted]", the
    fragment goes. Anything that is not a string, cannot be parsed or names no host is redacted whole."""
    if not isinstance(url, str):
        return REDACTED
    # Any "@" before the query or fragment means userinfo, found by hand: its brackets of a "[redacted]" marker would
    # read to urlsplit as an IPv6 address. When a "/" comes before that "@" (a password holding "/", or an "@" in the
    # path), nothing can be told apart safely and the whole URL goes.
    head_end = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    userinfo = "@" in url[:head_end]
    if userinfo:
        start = _URL_START.match(url)
        if start is None:  # no authority, so no host: the secret would sit in the path
            return REDACTED
        at = url.rindex("@", 0, head_end)
        if "/" in url[start.end() : at]:  # "@" after a "/": a password holding "/", or "@" in the path; either way
            return REDACTED  # what would pass for the host may be the secret
        url = url[: start.end()] + url[at + 1 :]
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number from 0 to 65535
    except ValueError:
        return REDACTED
    if not parts.hostname:
        return REDACTED
    netloc = f"{REDACTED}@{parts.netloc}" if userinfo else parts.netloc
    path = f"/{REDACTED}" if parts.path not in ("", "/") else parts.path
    return urlunsplit((parts.scheme, netloc, path, REDACTED if parts.query else "", ""))


MCP_CONFIG_KEPT = frozenset({"type", "command", "args", "env", "url", "headers"})  # values redacted by the rules below


def _redact_mcp(mcp: object) -> object:
    """A ``.mcp.json`` server entry (``{"name", "transport", "config", "connect"}``, ``config`` being the raw entry)
    without what may be secret, before it is stored:

    - ``env`` and ``headers`` keep their names, not their values; either one, when present but not an object, is
      redacted whole;
    - ``args`` keep flags (``--name``, or ``-`` and a single letter) as they are, and keep the flag but not the value
      of ``--name=value`` and ``-x=value`` (``--token=abc`` → ``--token=[redacted]``); every other argument, a flag
      with a value attached (``-pS3cret``) included, and anything not a string, is redacted; ``args`` that are not
      a list are redacted whole;
    - ``url`` keeps scheme, host and port only: any userinfo becomes ``[redacted]@``, a path other than ``/``
      ``/[redacted]`` (it may hold a key, as in ``https://mcp.zapier.com/api/mcp/s/KEY/mcp``), a query
      ``?[redacted]``, and the fragment goes. An "@" anywhere before the query or fragment counts as the end of
      userinfo, so a password holding "/" is not taken for a path: the host is what follows the last such "@". A URL
      that is not a string, cannot be parsed or names no host is redacted whole;
    - a ``config`` that is not an object (an invalid entry) is redacted whole;
    - keys other than those (and ``command``, ``type``) keep their name only: their value is redacted.

    ``command`` and ``type`` stay as they are. Redacting twice gives the same result as redacting once, and what an
    earlier version of these rules stored redacts to what these rules store for the original entry.
    Migrations ``workspaces.0002_redact_mcp_secrets`` and ``workspaces.0003_redact_mcp_url_paths_and_short_flags``
    applied frozen copies of these rules (0003: as they are now) to rows stored before them; leave those copies
    alone, and when the rules tighten, add a data migration that applies them to stored rows.
    Nothing here connects to workspace servers yet; when something does, it must read the values from the
    workspace, not from the database."""
    if not isinstance(mcp, dict) or "config" not in mcp:
        return mcp
    if not isinstance(mcp["config"], dict):
        return {**mcp, "config": REDACTED}
    config = dict(mcp["config"])
    for key in ("env", "headers"):
        if key in config:
            value = config[key]
            config[key] = dict.fromkeys(value, REDACTED) if isinstance(value, dict) else REDACTED
    if "args" in config:
        args = config["args"]
        config["args"] = [_redact_arg(arg) for arg in args] if isinstance(args, list) else REDACTED
    if "url" in config:
        config["url"] = _redact_url(config["url"])
    for key in config:
        if key not in MCP_CONFIG_KEPT:
            config[key] = REDACTED
    return {**mcp, "config": config}


def snapshot_push(*, workspace: Workspace, resources: list[dict]) -> tuple[ContextSnapshot, bool]:
    """Store a pushed inventory as the workspace's next snapshot, unless it equals the latest one (then nothing new
    is created). Returns (snapshot, created). Raises PushRejected when the inventory breaks the caps."""
    resources = _sanitize_skills(resources)
    counted, content_bytes = _check(resources)
    content_hash = hashlib.sha256(_canonical(resources)).hexdigest()
    context_hash = hashlib.sha256(_canonical([r for r in resources if r.get("kind") in CONTEXT_KINDS])).hexdigest()
    with transaction.atomic():
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        latest = ContextSnapshot.objects.filter(workspace=locked).order_by("-version").first()
        now = timezone.now()
        if latest is not None and latest.content_hash == content_hash:
            Workspace.objects.filter(pk=locked.pk).update(last_push_at=now, last_seen_at=now)
            return latest, False
        version = (ContextSnapshot.objects.filter(workspace=locked).aggregate(v=Max("version"))["v"] or 0) + 1
        snapshot = ContextSnapshot.objects.create(
            workspace=locked,
            version=version,
            content_hash=content_hash,
            context_hash=context_hash,
            changes_context=latest is None or latest.context_hash != context_hash,
            resource_count=counted,
            content_bytes=content_bytes,
        )
        blobs: dict[str, str] = {}
        rows = []
        for position, resource in enumerate(resources):
            content = resource.get("content")
            digest = ""
            if content is not None:
                digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
                blobs[digest] = content
            data = {key: resource[key] for key in ("skill", "mcp") if key in resource}
            if "mcp" in data:
                data["mcp"] = _redact_mcp(data["mcp"])
            rows.append(
                SnapshotResource(
                    snapshot=snapshot,
                    position=position,
                    kind=str(resource.get("kind", ""))[:16],
                    root=str(resource.get("root", ""))[:1024],
                    root_kind=str(resource.get("root_kind", ""))[:32],
                    path=str(resource.get("path", ""))[:2048],
                    rel_path=str(resource.get("rel_path", ""))[:1024],
                    status=str(resource.get("status", ""))[:16],
                    error=str(resource.get("error") or "")[:2000],
                    size=max(0, int(resource.get("size") or 0)),
                    sha256=str(resource.get("sha256") or "")[:64],
                    blob_id=digest or None,
                    data=data,
                )
            )
        existing = set(ContentBlob.objects.filter(sha256__in=list(blobs)).values_list("sha256", flat=True))
        ContentBlob.objects.bulk_create(
            [ContentBlob(sha256=d, content=c) for d, c in blobs.items() if d not in existing], ignore_conflicts=True
        )
        SnapshotResource.objects.bulk_create(rows, batch_size=500)
        Workspace.objects.filter(pk=locked.pk).update(last_push_at=now, last_seen_at=now, status=WorkspaceStatus.READY)
        snapshot_pushed.send(sender=ContextSnapshot, workspace=locked, snapshot=snapshot)
    return snapshot, True


# Reads through the agent ---------------------------------------------------------------------------------------------


def agent_request_next(workspace: Workspace, *, wait: float) -> list[AgentRequest]:
    """Long-poll: wait up to ``wait`` seconds for requests for this workspace, claim and return them."""
    deadline = time.monotonic() + max(0.0, wait)
    agent_seen(workspace)
    last_seen = time.monotonic()
    while True:
        if time.monotonic() - last_seen >= 5:
            # While waiting, say so now and then (not at every poll): a dead agent turns stale soon after.
            agent_seen(workspace)
            last_seen = time.monotonic()
        with transaction.atomic():
            pending = list(
                AgentRequest.objects.filter(workspace=workspace, claimed_at__isnull=True).order_by("created_at")[:20]
            )
            if pending:
                AgentRequest.objects.filter(pk__in=[r.pk for r in pending], claimed_at__isnull=True).update(
                    claimed_at=timezone.now()
                )
                return pending
        if time.monotonic() >= deadline:
            return []
        time.sleep(settings.WORKSPACE_AGENT_POLL_INTERVAL)


def agent_request_respond(*, workspace: Workspace, request_id, response: dict) -> bool:
    """Store the agent's answer to one of its workspace's requests. False when there is no such open request."""
    return bool(
        AgentRequest.objects.filter(pk=request_id, workspace=workspace, responded_at__isnull=True).update(
            responded_at=timezone.now(), response=response
        )
    )


def read_skill_file(*, workspace: Workspace, skill_dir: str, path: str, timeout: float | None = None) -> dict:
    """Read a supporting file of a workspace skill through the agent. Path rules are checked here first (nothing
    leaves for the agent on a bad path). Raises WorkspaceUnreachable when the agent is not connected or does not
    answer in time."""
    from skills.format import check_relative_path

    problem = check_relative_path(path)
    if problem:
        return {"ok": False, "error": problem}
    workspace.refresh_from_db(fields=["last_seen_at", "status"])
    if not is_reachable(workspace):
        raise WorkspaceUnreachable()
    request = AgentRequest.objects.create(
        workspace=workspace, kind="read_skill_file", payload={"skill_dir": skill_dir, "path": path}
    )
    deadline = time.monotonic() + (settings.WORKSPACE_AGENT_READ_TIMEOUT if timeout is None else timeout)
    try:
        while time.monotonic() < deadline:
            answered = AgentRequest.objects.filter(pk=request.pk, responded_at__isnull=False).first()
            if answered is not None:
                return answered.response or {"ok": False, "error": "empty answer from the workspace agent"}
            time.sleep(settings.WORKSPACE_AGENT_POLL_INTERVAL)
        raise WorkspaceUnreachable()
    finally:
        AgentRequest.objects.filter(pk=request.pk).delete()
