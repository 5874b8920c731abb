from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from skills.models import OrganizationSkill, PersonalSkill
from skills.selectors import skills_usable_by


@pytest.mark.django_db
def test_seed_demo_adds_demo_skills_once():
    call_command("seed_demo", stdout=StringIO())
    call_command("seed_demo", stdout=StringIO())
    assert set(OrganizationSkill.objects.filter(organization__name="acme").values_list("name", flat=True)) == {
        "code-review",
        "incident-report",
    }
    assert list(PersonalSkill.objects.filter(owner__username="bob").values_list("name", flat=True)) == ["terse-answers"]
    bob_skills = skills_usable_by(
        PersonalSkill.objects.get(name="terse-answers").owner, OrganizationSkill.objects.first().organization
    )
    assert {s.name for s in bob_skills} == {"code-review", "incident-report"}  # shared with Everyone
