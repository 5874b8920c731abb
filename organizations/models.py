"""People, organizations, roles, groups, API tokens and the audit log (which is also the delivery outbox)."""

from __future__ import annotations

import hashlib

from django.contrib.auth.models import AbstractUser
from django.contrib.auth.models import Group as AuthGroup
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from project.crypto import EncryptedTextField

ORG_NAME_RE = r"^[a-z0-9]+(-[a-z0-9]+)*$"
org_name_validator = RegexValidator(
    ORG_NAME_RE, "Use lowercase letters, digits and single hyphens (for example acme-labs)."
)


class User(AbstractUser):
    """A person. Site owners are superusers. ``default_organization`` is where pages open first."""

    email = models.EmailField("email address", blank=True, db_index=True)
    default_organization = models.ForeignKey(
        "Organization", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        db_table = "organizations_user"


class Organization(models.Model):
    name = models.SlugField(max_length=64, unique=True, validators=[org_name_validator])
    display_name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    AUDITOR = "auditor", "Auditor"
    MEMBER = "member", "Member"


class CustomRole(models.Model):
    """A named bundle of permissions from the registry in ``organizations.permissions``."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="custom_roles")
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    permissions = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="unique_custom_role_name")]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    custom_roles = models.ManyToManyField(CustomRole, blank=True, related_name="memberships")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["user__username"]
        constraints = [models.UniqueConstraint(fields=["user", "organization"], name="unique_membership")]

    def __str__(self) -> str:
        return f"{self.user_id}@{self.organization_id} ({self.role})"


class OrgGroup(models.Model):
    """A group of organization members, backed by a Django auth group so guardian can grant it object permissions.

    Every organization has exactly one ``is_everyone`` group, kept equal to the current members by the services.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="groups")
    name = models.CharField(max_length=100)
    is_everyone = models.BooleanField(default=False)
    auth_group = models.OneToOneField(AuthGroup, on_delete=models.PROTECT, related_name="org_group")
    created_at = models.DateTimeField(default=timezone.now)

    EVERYONE = "Everyone"

    class Meta:
        ordering = ["-is_everyone", "name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="unique_org_group_name"),
            models.UniqueConstraint(
                fields=["organization"], condition=models.Q(is_everyone=True), name="one_everyone_group"
            ),
        ]

    def __str__(self) -> str:
        return self.name


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiToken(models.Model):
    """A personal API token. Only its SHA-256 is stored; the token is shown once at creation."""

    PREFIX = "sb_"

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=16, help_text="The first characters, to tell tokens apart.")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > timezone.now())


class Outcome(models.TextChoices):
    SUCCESS = "success", "Success"
    DENIED = "denied", "Denied"


class AuditEvent(models.Model):
    """One audited action. Rows with ``delivered_at`` unset are the outbox that Celery delivers and sweeps.

    Names are copied in (actor username, organization name, resource name) so the record survives deletions.
    ``changes`` lists changed field names with old and new values, secrets replaced by a marker.
    """

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    organization = models.ForeignKey(
        Organization, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events"
    )
    organization_name = models.CharField(max_length=64, blank=True)
    actor = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor_username = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64)
    resource_type = models.CharField(max_length=64)
    resource_id = models.CharField(max_length=64, blank=True)
    resource_name = models.CharField(max_length=256, blank=True)
    changes = models.JSONField(default=dict, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.SUCCESS)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=512, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    delivery_attempts = models.PositiveIntegerField(default=0)
    # Set while a delivery attempt is under way; an expired lease means that attempt died.
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="audit_org_time"),
            models.Index(
                fields=["created_at"], condition=models.Q(delivered_at__isnull=True), name="audit_undelivered"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor_username} {self.action} {self.resource_type}"

    def as_record(self) -> dict:
        """The wire form used by exports and sinks."""
        return {
            "id": self.pk,
            "time": self.created_at.isoformat(),
            "organization": self.organization_name,
            "actor": self.actor_username,
            "action": self.action,
            "resource_type": self.resource_type,
            "resource_id": self.resource_id,
            "resource_name": self.resource_name,
            "changes": self.changes,
            "outcome": self.outcome,
            "ip_address": self.ip_address,
            "user_agent": self.user_agent,
        }


class UserOIDCToken(models.Model):
    """The tokens a user got when signing in with the OpenID Connect provider (``organizations.oidc``), encrypted at
    rest. ``user_oidc`` MCP servers receive the access token; it is refreshed shortly before it expires."""

    user = models.OneToOneField(User, on_delete=models.CASCADE, related_name="oidc_token")
    access_token = EncryptedTextField()
    refresh_token = EncryptedTextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"OIDC token of user {self.user_id}"
