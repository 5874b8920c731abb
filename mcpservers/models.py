"""Organization MCP servers: identity, connection, availability, auth (secrets encrypted at rest) and tool
governance. Who may use a server is its ACL (guardian ``use_mcpserver``, see ``organizations.acl``)."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import models
from django.utils import timezone

from organizations.models import Organization
from project.crypto import EncryptedTextField


class Transport(models.TextChoices):
    STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
    SSE = "sse", "Server-sent events (SSE)"


class Availability(models.TextChoices):
    FORCE_ON = "force_on", "Always on"
    DEFAULT_ON = "default_on", "On by default"
    DEFAULT_OFF = "default_off", "Off by default"


class AuthType(models.TextChoices):
    NONE = "none", "None"
    OAUTH2 = "oauth2", "OAuth2 (each user connects)"
    API_KEY = "api_key", "API key"
    CUSTOM_HEADERS = "custom_headers", "Custom headers"
    USER_OIDC = "user_oidc", "User OIDC identity"


class MCPServer(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="mcp_servers")
    display_name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=64)
    description = models.TextField(blank=True)
    icon_url = models.CharField(max_length=2048, blank=True, help_text="An emoji or an image URL.")

    url = models.URLField(max_length=2048)
    transport = models.CharField(max_length=32, choices=Transport.choices, default=Transport.STREAMABLE_HTTP)

    enabled = models.BooleanField(default=False)
    availability = models.CharField(max_length=16, choices=Availability.choices, default=Availability.DEFAULT_OFF)
    model_intent = models.BooleanField(default=False)
    forward_coder_headers = models.BooleanField(default=False)
    signing_secret = EncryptedTextField(blank=True)

    auth_type = models.CharField(max_length=32, choices=AuthType.choices, default=AuthType.NONE)
    oauth2_client_id = models.CharField(max_length=500, blank=True)
    oauth2_client_secret = EncryptedTextField(blank=True)
    oauth2_auth_url = models.CharField(max_length=2048, blank=True)
    oauth2_token_url = models.CharField(max_length=2048, blank=True)
    oauth2_scopes = models.CharField(max_length=2000, blank=True)
    oauth2_revocation_url = models.CharField(max_length=2048, blank=True)
    api_key_header = models.CharField(max_length=128, blank=True, default="Authorization")
    api_key_value = EncryptedTextField(blank=True)
    custom_headers_encrypted = EncryptedTextField(blank=True, help_text="JSON object of header name → value.")

    tool_allow_list = models.JSONField(default=list, blank=True)
    tool_deny_list = models.JSONField(default=list, blank=True)

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["display_name", "id"]
        constraints = [models.UniqueConstraint(fields=["organization", "slug"], name="unique_mcp_server_slug")]
        permissions = [("use_mcpserver", "Use the MCP server")]
        default_permissions = ()

    def __str__(self) -> str:
        return self.display_name

    @property
    def custom_headers(self) -> dict[str, str]:
        if not self.custom_headers_encrypted:
            return {}
        return json.loads(str(self.custom_headers_encrypted))

    @custom_headers.setter
    def custom_headers(self, value: dict[str, str]) -> None:
        self.custom_headers_encrypted = json.dumps(value, sort_keys=True) if value else ""

    @property
    def has_signing_secret(self) -> bool:
        return bool(self.signing_secret)

    @property
    def has_oauth2_secret(self) -> bool:
        return bool(self.oauth2_client_secret)

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_value)

    @property
    def has_custom_headers(self) -> bool:
        return bool(self.custom_headers_encrypted)


class OAuthPending(models.Model):
    """One authorization in progress: its state and PKCE verifier, bound to the user and the server. Single use."""

    state = models.CharField(max_length=128, primary_key=True)
    server = models.ForeignKey(MCPServer, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    code_verifier = EncryptedTextField()
    redirect_uri = models.CharField(max_length=2048)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"pending {self.server_id}/{self.user_id}"


class MCPUserToken(models.Model):
    """A user's OAuth2 tokens for one server, encrypted at rest."""

    server = models.ForeignKey(MCPServer, on_delete=models.CASCADE, related_name="user_tokens")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_tokens")
    access_token = EncryptedTextField()
    refresh_token = EncryptedTextField(blank=True)
    token_type = models.CharField(max_length=32, default="Bearer")
    scope = models.CharField(max_length=2000, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    needs_reconnect = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    refreshed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["server", "user"], name="unique_mcp_user_token")]

    def __str__(self) -> str:
        return f"token {self.server_id}/{self.user_id}"
