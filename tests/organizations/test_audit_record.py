"""What an audit record holds: changed fields only, never secret values."""

from __future__ import annotations

from organizations import audit
from organizations.models import AuditEvent


def test_diff_lists_only_changed_fields_and_never_secret_values():
    before = {"name": "crm", "api_key_value": "sk-old-secret", "enabled": False}
    after = {"name": "crm", "api_key_value": "sk-new-secret", "enabled": True}
    changes = audit.diff(before, after, secret_fields=frozenset({"api_key_value"}))
    assert changes == {
        "api_key_value": {"old": None, "new": audit.SECRET_MARK},
        "enabled": {"old": False, "new": True},
    }
    assert "sk-" not in str(changes)


def test_a_record_outside_a_request_has_no_address(world):
    event = audit.record(
        actor=world.org_admin, organization=world.acme, action="test.action", resource_type="thing", resource_id=7
    )
    stored = AuditEvent.objects.get(pk=event.pk)
    assert (stored.ip_address, stored.user_agent, stored.resource_id) == (None, "", "7")
    assert stored.actor_username == "alice" and stored.organization_name == "acme"


def test_records_survive_the_deletion_of_their_actor_and_organization(world):
    event = audit.record(actor=world.member, organization=world.globex, action="x.y", resource_type="thing")
    world.member.delete()
    world.globex.delete()
    stored = AuditEvent.objects.get(pk=event.pk)
    assert stored.actor is None and stored.organization is None
    assert (stored.actor_username, stored.organization_name) == ("bob", "globex")
