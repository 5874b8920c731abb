"""Workspaces, their context snapshots (content-addressed), and the requests the server sends to a workspace agent.

A snapshot is what the agent found: every resource with its status, and the content of readable files. File
contents live once per hash in ``ContentBlob``; an identical push creates nothing new.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from organizations.models import Organization


class WorkspaceStatus(models.TextChoices):
    STARTING = "starting", "Starting"
    READY = "ready", "Ready"
    UNREACHABLE = "unreachable", "Unreachable"
    STOPPED = "stopped", "Stopped"


class Workspace(models.Model):
    TOKEN_PREFIX = "sbw_"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="workspaces")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspaces")
    name = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=WorkspaceStatus.choices, default=WorkspaceStatus.STARTING)
    agent_token_hash = models.CharField(max_length=64, unique=True)
    agent_token_hint = models.CharField(max_length=16)
    created_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    last_push_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "owner", "name"], name="unique_workspace_name")
        ]

    def __str__(self) -> str:
        return self.name


class ContentBlob(models.Model):
    sha256 = models.CharField(max_length=64, primary_key=True)
    content = models.TextField()

    def __str__(self) -> str:
        return self.sha256[:12]


class ContextSnapshot(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="snapshots")
    version = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the whole snapshot, resources and contents.")
    context_hash = models.CharField(max_length=64, help_text="SHA-256 of the instruction and skill resources only.")
    changes_context = models.BooleanField(
        default=True, help_text="False when only MCP entries changed since the previous snapshot."
    )
    resource_count = models.PositiveIntegerField(default=0)
    content_bytes = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-version"]
        constraints = [models.UniqueConstraint(fields=["workspace", "version"], name="unique_snapshot_version")]

    def __str__(self) -> str:
        return f"{self.workspace_id} v{self.version}"


class SnapshotResource(models.Model):
    snapshot = models.ForeignKey(ContextSnapshot, on_delete=models.CASCADE, related_name="resources")
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=16)
    root = models.CharField(max_length=1024)
    root_kind = models.CharField(max_length=32)
    path = models.CharField(max_length=2048)
    rel_path = models.CharField(max_length=1024)
    status = models.CharField(max_length=16)
    error = models.TextField(blank=True)
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    blob = models.ForeignKey(ContentBlob, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    data = models.JSONField(default=dict, blank=True, help_text="Kind-specific fields: skill or mcp.")

    class Meta:
        ordering = ["snapshot", "position"]

    def __str__(self) -> str:
        return f"{self.kind} {self.rel_path} ({self.status})"

    @property
    def name(self) -> str:
        return (self.data.get("skill") or self.data.get("mcp") or {}).get("name") or self.rel_path


class AgentRequest(models.Model):
    """A request the server hands to the workspace agent over the connection the agent opened (long-poll)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="agent_requests")
    kind = models.CharField(max_length=32)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    claimed_at = models.DateTimeField(null=True, blank=True)
    responded_at = models.DateTimeField(null=True, blank=True)
    response = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.id}"
