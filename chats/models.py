"""Chats, their messages and tool calls, and the turns that run the agent loop."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import models
from django.utils import timezone

from organizations.models import Organization
from project.crypto import EncryptedTextField
from workspaces.models import ContextSnapshot, Workspace


class Chat(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chats")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="chats")
    workspace = models.ForeignKey(Workspace, null=True, blank=True, on_delete=models.SET_NULL, related_name="chats")
    title = models.CharField(max_length=200, default="New chat")
    provider = models.CharField(max_length=32, default="demo")
    model = models.CharField(max_length=200, blank=True)
    pinned_snapshot = models.ForeignKey(
        ContextSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="pinned_by"
    )
    out_of_date = models.BooleanField(default=False, help_text="A newer snapshot changes context; Refresh re-pins.")
    hydrated_at = models.DateTimeField(
        null=True, blank=True, help_text="Set at the first turn; before it the chat follows every new snapshot."
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self) -> str:
        return self.title


class ChatMCPServer(models.Model):
    """An MCP server the chat's owner selected (or that was on by default when the chat began). Servers that are
    always on are not stored: they join every step whose owner may use them."""

    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="mcp_selections")
    server = models.ForeignKey("mcpservers.MCPServer", on_delete=models.CASCADE, related_name="chat_selections")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["chat", "server"], name="unique_chat_mcp_server")]

    def __str__(self) -> str:
        return f"{self.chat_id} → {self.server_id}"


class TurnStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    STOPPED = "stopped", "Stopped"
    FAILED = "failed", "Failed"


class Turn(models.Model):
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="turns")
    status = models.CharField(max_length=16, choices=TurnStatus.choices, default=TurnStatus.QUEUED)
    steps = models.PositiveIntegerField(default=0)
    interrupt_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"turn {self.pk} ({self.status})"

    @property
    def active(self) -> bool:
        return self.status in {TurnStatus.QUEUED, TurnStatus.RUNNING}


class Role(models.TextChoices):
    USER = "user", "You"
    ASSISTANT = "assistant", "Agent"
    TOOL = "tool", "Tool"


class Message(models.Model):
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="messages")
    turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    tool_call_id = models.CharField(max_length=128, blank=True, help_text="For tool messages: the call answered.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"

    @property
    def html(self):
        """Assistant text rendered as sanitized Markdown (user text stays plain)."""
        from skills.rendering import markdown_to_html

        return markdown_to_html(self.content)


class ToolCall(models.Model):
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="tool_calls")
    call_id = models.CharField(max_length=128)
    name = models.CharField(max_length=200)
    arguments = models.JSONField(default=dict)
    result = models.TextField(blank=True)
    is_error = models.BooleanField(default=False)
    label = models.CharField(max_length=300, blank=True, help_text="A status label shown in the transcript.")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.name} {self.call_id}"

    @property
    def result_display(self) -> str:
        """A JSON result pretty-printed (bodies with their real line breaks); any other result as it is."""
        try:
            data = json.loads(self.result)
        except ValueError:
            return self.result
        if isinstance(data, dict) and isinstance(data.get("body"), str):
            rest = {k: v for k, v in data.items() if k != "body"}
            return json.dumps(rest, ensure_ascii=False, indent=2) + "\n\n" + data["body"]
        return json.dumps(data, ensure_ascii=False, indent=2)

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False, indent=2)


class ProviderConfig(models.Model):
    """An OpenAI-compatible Chat Completions endpoint, configured by site owners. The key is encrypted at rest."""

    name = models.SlugField(max_length=64, unique=True)
    display_name = models.CharField(max_length=200, blank=True)
    base_url = models.URLField(max_length=500)
    api_key = EncryptedTextField(blank=True)
    default_model = models.CharField(max_length=200)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
