"""The audit log page: filters in the URL, HTMX partial, pagination, exports, who sees what."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from organizations import access, services
from organizations.models import AuditEvent
from organizations.permissions import ORGANIZATION_MANAGE

URL = reverse("audit-log")


def make_events(world):
    services.group_create(actor=world.org_admin, organization=world.acme, name="Ops")
    services.group_create(actor=world.org_admin, organization=world.acme, name='=HYPERLINK("http://x")')
    services.group_create(actor=world.outsider, organization=world.globex, name="Globex only")
    try:
        access.require(world.auditor, world.acme, ORGANIZATION_MANAGE, action="group.delete", resource_type="group")
    except Exception:  # noqa: BLE001 - the refusal itself is what we want recorded
        pass


def rows(response) -> str:
    """The rows of the results table (the filter menus list every action name, so look past them)."""
    body = response.content.decode()
    return body[body.index('<div id="audit-results">') :]


def test_it_filters_by_outcome_actor_type_and_action(world, client_for):
    make_events(world)
    client = client_for("org_admin")
    body = rows(client.get(URL, {"org": "acme", "outcome": "denied"}))
    assert "group.delete" in body and "group.create" not in body
    body = rows(client.get(URL, {"org": "acme", "actor": "alice", "resource_type": "group"}))
    assert "Ops" in body and "group.delete" not in body
    body = rows(client.get(URL, {"org": "acme", "action": "member.add"}))
    assert "bob" in body and "Ops" not in body


def test_it_filters_by_date_range(world, client_for):
    make_events(world)
    AuditEvent.objects.filter(resource_name="Ops").update(created_at=timezone.now() - timedelta(days=10))
    client = client_for("org_admin")
    old_day = (timezone.now() - timedelta(days=10)).date().isoformat()
    body = rows(client.get(URL, {"org": "acme", "since": old_day, "until": old_day}))
    assert "Ops" in body and "member.add" not in body
    today = timezone.now().date().isoformat()
    body = rows(client.get(URL, {"org": "acme", "since": today}))
    assert "Ops" not in body and "member.add" in body


def test_it_never_shows_another_organizations_events(world, client_for):
    make_events(world)
    for persona in ("org_admin", "auditor"):
        body = rows(client_for(persona).get(URL, {"org": "acme"}))
        assert "Globex only" not in body
        body = rows(client_for(persona).get(URL, {"org": "*"}))
        assert "Globex only" not in body and "Ops" in body
    assert client_for("auditor").get(URL, {"org": "globex"}).status_code == 404


def test_site_owners_see_every_organization_and_sign_ins(world, client_for):
    make_events(world)
    services.record_sign_in(user=world.member, username="bob", success=True)
    body = rows(client_for("site_owner").get(URL, {"org": "*"}))
    assert "Globex only" in body and "Ops" in body and "auth.sign_in" in body


def test_an_htmx_request_gets_only_the_results_partial(world, client_for):
    make_events(world)
    response = client_for("org_admin").get(
        URL, {"org": "acme", "outcome": "denied"}, headers={"HX-Request": "true", "HX-Target": "audit-results"}
    )
    body = rows(response)
    assert body.lstrip().startswith('<div id="audit-results">')
    assert "<html" not in body and "group.delete" in body and "group.create" not in body
    assert "HX-Request" in response["Vary"]


def test_the_filters_stay_in_links_for_pages_and_exports(world, client_for):
    for i in range(60):
        services.group_create(actor=world.org_admin, organization=world.acme, name=f"G{i}")
    body = rows(client_for("org_admin").get(URL, {"org": "acme", "actor": "alice"}))
    assert "Page 1 of 2" in body
    assert "?org=acme&amp;actor=alice&amp;page=2" in body
    assert "?org=acme&amp;actor=alice&amp;export=csv" in body


def test_it_exports_csv_safely_and_json_lines(world, client_for):
    make_events(world)
    client = client_for("auditor")
    response = client.get(URL, {"org": "acme", "resource_type": "group", "export": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="acme-audit-log-' in response["Content-Disposition"]
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert {r["resource_name"] for r in table} >= {"Ops", '\'=HYPERLINK("http://x")'}
    assert all(r["resource_type"] == "group" for r in table)
    response = client.get(URL, {"org": "acme", "outcome": "denied", "export": "jsonl"})
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [(e["action"], e["outcome"], e["actor"]) for e in lines] == [("group.delete", "denied", "audrey")]


def test_events_carry_the_request_address_and_user_agent(world, client_for):
    client = client_for("org_admin")
    client.post(
        reverse("groups") + "?org=acme", {"name": "Web"}, REMOTE_ADDR="198.51.100.7", HTTP_USER_AGENT="probe/1.0"
    )
    event = AuditEvent.objects.get(action="group.create", resource_name="Web")
    assert (event.ip_address, event.user_agent) == ("198.51.100.7", "probe/1.0")


def test_denied_page_attempts_are_audited(world, client_for):
    response = client_for("auditor").post(reverse("roles") + "?org=acme", {"name": "Sneaky"})
    assert response.status_code == 403
    event = AuditEvent.objects.get(outcome="denied")
    assert (event.actor, event.action, event.resource_type) == (world.auditor, "role.create", "custom_role")


def test_the_audit_log_runs_a_fixed_number_of_queries(world, client_for, django_assert_max_num_queries):
    client = client_for("org_admin")
    make_events(world)
    with django_assert_max_num_queries(40) as ctx:
        client.get(URL, {"org": "acme"})
    for i in range(40):
        services.group_create(actor=world.org_admin, organization=world.acme, name=f"More {i}")
    with django_assert_max_num_queries(len(ctx.captured_queries)):
        client.get(URL, {"org": "acme"})


def test_the_api_lists_filtered_events(world, client_for):
    make_events(world)
    response = client_for("auditor").get("/api/v2/organizations/acme/audit-log", {"outcome": "denied"})
    assert response.status_code == 200
    assert [e["action"] for e in response.json()] == ["group.delete"]
