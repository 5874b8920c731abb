from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from organizations.models import Membership, Organization, OrgGroup, User


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_create_org_and_add_member():
    assert "Created organization initech (Initech Corp)" in run(
        "create_org", "initech", "--display-name", "Initech Corp"
    )
    assert OrgGroup.objects.filter(organization__name="initech", is_everyone=True).exists()
    User.objects.create_user("peter", password="x" * 12)
    assert "Added peter to initech as auditor" in run("add_member", "initech", "peter", "--role", "auditor")
    assert Membership.objects.get(user__username="peter").role == "auditor"
    with pytest.raises(CommandError, match="already a member"):
        run("add_member", "initech", "peter")
    with pytest.raises(CommandError, match="No organization named nope"):
        run("add_member", "nope", "peter")
    with pytest.raises(CommandError):
        run("create_org", "Not Valid")


@pytest.mark.django_db
def test_seed_demo_is_idempotent_and_prints_the_sign_ins():
    first = run("seed_demo")
    second = run("seed_demo")
    assert first == second
    assert "switchboard-demo" in first and "owner" in first
    assert set(Organization.objects.values_list("name", flat=True)) == {"acme", "globex"}
    assert User.objects.get(username="owner").is_superuser
    roles = {
        (m.user.username, m.organization.name): m.role
        for m in Membership.objects.select_related("user", "organization")
    }
    assert roles[("alice", "acme")] == "admin"
    assert roles[("audrey", "acme")] == "auditor"
    assert roles[("bob", "acme")] == "member"
    assert roles[("carol", "globex")] == "member"
    assert roles[("dave", "acme")] == roles[("dave", "globex")] == "member"
    assert Membership.objects.count() == 7
