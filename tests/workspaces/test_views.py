from __future__ import annotations

from django.urls import reverse

from workspaces import scanner, services
from workspaces.models import Workspace


def test_creating_a_workspace_shows_its_token_and_agent_command_once(world, client_for):
    client = client_for("member")
    response = client.post(reverse("workspaces"), {"organization": "acme", "name": "laptop"})
    body = response.content.decode()
    workspace = Workspace.objects.get(name="laptop")
    start = body.index('id="new-token"')
    token = body[body.index(">", start) + 1 : body.index("</code>", start)]
    assert services.workspace_for_token(token) == workspace
    assert f"python -m workspaces.agent --url http://127.0.0.1:8000 --token {token} --dir" in body
    assert response["Cache-Control"] == "no-store"
    assert token not in client.get(reverse("workspaces")).content.decode()


def test_the_workspace_page_waits_for_the_first_snapshot(world, client_for):
    workspace, _ = services.workspace_create(actor=world.member, organization=world.acme, name="fresh")
    body = client_for("member").get(reverse("workspace", args=[workspace.pk])).content.decode()
    assert "Waiting for the agent" in body and "show no workspace skills" in body


def test_the_workspace_page_shows_the_inventory_statuses_and_the_caps(world, client_for, tmp_path):
    (tmp_path / "AGENTS.md").write_text("x" * (64 * 1024 + 1))
    skill = tmp_path / "skills" / "Bad_Name"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: Bad_Name\ndescription: d\n---\n\nbody\n")
    resources = scanner.scan(scanner.roots_for(str(tmp_path), None, []))["resources"]
    workspace, _ = services.workspace_create(actor=world.member, organization=world.acme, name="full")
    services.snapshot_push(workspace=workspace, resources=resources)
    body = client_for("org_admin").get(reverse("workspace", args=[workspace.pk])).content.decode()
    assert "status-oversize" in body and "status-invalid" in body
    assert "larger than 64 KiB" in body
    assert '<meter id="cap-resources"' in body and 'max="500"' in body
    assert '<meter id="cap-bytes"' in body and 'max="2097152"' in body


def test_an_htmx_poll_gets_only_the_live_part(world, client_for):
    workspace, _ = services.workspace_create(actor=world.member, organization=world.acme, name="polled")
    response = client_for("member").get(
        reverse("workspace", args=[workspace.pk]), headers={"HX-Request": "true", "HX-Target": "workspace-live"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="workspace-live"') and "<html" not in body
    assert 'hx-trigger="every 3s"' in body


def test_auditors_see_workspaces_without_change_controls(world, client_for):
    workspace, _ = services.workspace_create(actor=world.member, organization=world.acme, name="watched")
    body = client_for("auditor").get(reverse("workspace", args=[workspace.pk])).content.decode()
    assert "New agent token" not in body and "Delete" not in body
    listing = client_for("auditor").get(reverse("workspaces")).content.decode()
    assert "watched" in listing


def test_the_list_runs_a_fixed_number_of_queries(world, client_for, django_assert_max_num_queries):
    client = client_for("org_admin")
    services.workspace_create(actor=world.member, organization=world.acme, name="w0")
    with django_assert_max_num_queries(20) as ctx:
        client.get(reverse("workspaces"))
    for i in range(1, 15):
        services.workspace_create(actor=world.org_admin, organization=world.acme, name=f"w{i}")
    with django_assert_max_num_queries(len(ctx.captured_queries)):
        client.get(reverse("workspaces"))
