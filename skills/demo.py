"""Demo skills for `manage.py seed_demo` (development only; idempotent)."""

from __future__ import annotations

import json

from . import services
from .models import OrganizationSkill, PersonalSkill

ORG_SKILLS = {
    "acme": [
        (
            "code-review",
            "Review a change the way Acme does: tests first, then naming, then error handling.",
            "# Code review\n\n1. Run the tests and read any failure first.\n2. Check names say what things are.\n"
            "3. Look for errors that are swallowed or leak secrets.\n",
        ),
        (
            "incident-report",
            "Write an incident report with a timeline, impact and follow-ups.",
            "# Incident report\n\n- **Timeline** in UTC\n- **Impact**: who noticed what\n"
            "- **Follow-ups** with owners\n",
        ),
    ],
    "globex": [
        (
            "release-notes",
            "Draft release notes from merged changes, grouped by audience.",
            "# Release notes\n\nGroup changes as *Added*, *Changed*, *Fixed*. One line each, user's point of view.\n",
        ),
    ],
}

PERSONAL_SKILLS = {
    "bob": [
        ("terse-answers", "Answer briefly, with the command first.", "# Terse answers\n\nLead with the command.\n")
    ],
}


def skill_text(name: str, description: str, body: str) -> str:
    # JSON strings are valid YAML and quote whatever the description holds (colons, quotes).
    return f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n\n{body}"


def seed(sender, organizations, people, **kwargs) -> None:
    for org_name, skills in ORG_SKILLS.items():
        organization = organizations.get(org_name)
        if organization is None:
            continue
        for name, description, body in skills:
            if not OrganizationSkill.objects.filter(organization=organization, name=name).exists():
                services.organization_skill_create(
                    actor=None, organization=organization, content=skill_text(name, description, body)
                )
    for username, skills in PERSONAL_SKILLS.items():
        user = people.get(username)
        if user is None:
            continue
        for name, description, body in skills:
            if not PersonalSkill.objects.filter(owner=user, name=name).exists():
                services.personal_skill_create(user=user, content=skill_text(name, description, body))
