"""Stored skills: personal (one user's) and organization (shared through guardian ``use`` permissions).

Each row holds the whole SKILL.md text in ``content`` with the parsed name and description beside it. ``revision``
counts changes, so that keeping earlier revisions (skill versions) can be added beside this table later without
changing it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from organizations.models import Organization


class SkillBase(models.Model):
    name = models.CharField(max_length=256)
    description = models.TextField()
    content = models.TextField(help_text="The whole SKILL.md text, frontmatter included.")
    enabled = models.BooleanField(default=True)
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def filename(self) -> str:
        return f"{self.name}-SKILL.md"


class PersonalSkill(SkillBase):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_skills")

    class Meta(SkillBase.Meta):
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="unique_personal_skill_name")]


class OrganizationSkill(SkillBase):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="skills")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta(SkillBase.Meta):
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="unique_org_skill_name")]
        permissions = [("use_organizationskill", "Use the organization skill")]
        default_permissions = ()
