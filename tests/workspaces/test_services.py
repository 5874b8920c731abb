"""Snapshots on the server: content addressing, versions, the MCP-only rule, the caps re-checked, tokens, and reads
through an agent that is not there."""

from __future__ import annotations

import pytest
from django.utils import timezone

from organizations.models import AuditEvent, hash_token
from workspaces import scanner, services
from workspaces.models import ContentBlob, ContextSnapshot, Workspace


def make_tree(tmp_path, *, agents="Be kind.", skills=("hello",), mcp=None):
    (tmp_path / "AGENTS.md").write_text(agents)
    for name in skills:
        d = tmp_path / ".agents" / "skills" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n---\n\nDo {name}.\n")
    if mcp is not None:
        (tmp_path / ".mcp.json").write_text(mcp)
    return scanner.scan(scanner.roots_for(str(tmp_path), None, []))["resources"]


@pytest.fixture
def workspace(world):
    ws, _ = services.workspace_create(actor=world.member, organization=world.acme, name="laptop")
    return ws


def test_it_shows_the_agent_token_once_and_stores_only_its_hash(world):
    ws, token = services.workspace_create(actor=world.member, organization=world.acme, name="box")
    assert token.startswith("sbw_") and ws.agent_token_hash == hash_token(token) and token not in ws.agent_token_hash
    assert services.workspace_for_token(token) == ws
    new = services.workspace_rotate_token(actor=world.member, workspace=ws)
    assert services.workspace_for_token(token) is None and services.workspace_for_token(new) == ws
    assert AuditEvent.objects.filter(resource_type="workspace").count() == 2
    assert token not in str([e.as_record() for e in AuditEvent.objects.all()])


def test_it_refuses_workspaces_in_organizations_the_owner_is_not_in(world):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        services.workspace_create(actor=world.outsider, organization=world.acme, name="sneaky")
    assert not Workspace.objects.exists()


def test_an_identical_push_creates_nothing_new(workspace, tmp_path):
    resources = make_tree(tmp_path)
    first, created = services.snapshot_push(workspace=workspace, resources=resources)
    blobs = ContentBlob.objects.count()
    again, created_again = services.snapshot_push(workspace=workspace, resources=resources)
    assert created and not created_again and again.pk == first.pk
    assert ContextSnapshot.objects.filter(workspace=workspace).count() == 1
    assert ContentBlob.objects.count() == blobs == 2  # AGENTS.md and one SKILL.md, stored once each
    workspace.refresh_from_db()
    assert workspace.status == "ready" and workspace.last_push_at is not None


def test_each_change_makes_the_next_version_and_contents_are_shared(workspace, tmp_path):
    first, _ = services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path))
    second, created = services.snapshot_push(
        workspace=workspace, resources=make_tree(tmp_path, skills=("hello", "bye"))
    )
    assert created and (first.version, second.version) == (1, 2)
    assert second.changes_context
    assert ContentBlob.objects.count() == 3  # AGENTS.md and hello are shared by both versions
    kinds = list(second.resources.values_list("kind", "status"))
    assert kinds.count(("skill", "ok")) == 2 and ("instruction", "ok") in kinds


def test_an_mcp_only_change_does_not_change_context(workspace, tmp_path):
    services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path, mcp='{"mcpServers": {}}'))
    mcp = '{"mcpServers": {"docs": {"type": "http", "url": "https://docs.example/mcp"}}}'
    snapshot, created = services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path, mcp=mcp))
    assert created and not snapshot.changes_context
    snapshot, _ = services.snapshot_push(
        workspace=workspace, resources=make_tree(tmp_path, agents="Be brief.", mcp=mcp)
    )
    assert snapshot.changes_context


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ([{"kind": "instruction", "status": "ok", "content": "x" * (64 * 1024 + 1)}], "content over"),
        (
            [{"kind": "instruction", "status": "ok", "content": "x" * (60 * 1024)} for _ in range(36)],
            "snapshot content over",
        ),
        ([{"kind": "skill", "status": "ok", "content": None} for _ in range(501)], "more than 500"),
        ([{"kind": "instruction", "status": "oversize", "content": "smuggled"}], "only resources with status ok"),
        ([{"kind": "instruction", "status": "excluded"} for _ in range(5001)], "at most 5000"),
    ],
)
def test_it_rejects_pushes_that_break_the_caps(workspace, resources, message):
    with pytest.raises(services.PushRejected, match=message):
        services.snapshot_push(workspace=workspace, resources=resources)
    assert not ContextSnapshot.objects.exists()


def test_excluded_resources_past_the_cap_are_kept_in_the_inventory(workspace):
    resources = [{"kind": "skill", "status": "ok", "content": None}] * 500 + [
        {"kind": "skill", "status": "excluded", "error": "excluded: cap"}
    ] * 20
    snapshot, _ = services.snapshot_push(workspace=workspace, resources=resources)
    assert snapshot.resource_count == 500 and snapshot.resources.count() == 520


def test_reading_through_an_agent_that_never_connected_is_unreachable_at_once(workspace):
    with pytest.raises(services.WorkspaceUnreachable, match="workspace is unreachable"):
        services.read_skill_file(workspace=workspace, skill_dir="/x", path="notes.md", timeout=5)


def test_a_bad_path_is_refused_before_anything_reaches_the_agent(workspace):
    services.agent_seen(workspace, status="ready")
    for path, message in (
        ("", "path is required"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("../x", "path traversal is not allowed"),
        (".env", "hidden file components are not allowed"),
    ):
        assert services.read_skill_file(workspace=workspace, skill_dir="/x", path=path) == {
            "ok": False,
            "error": message,
        }
    from workspaces.models import AgentRequest

    assert not AgentRequest.objects.exists()


def test_a_connected_agent_that_does_not_answer_is_unreachable_after_the_timeout(workspace, settings):
    settings.WORKSPACE_AGENT_POLL_INTERVAL = 0.05
    services.agent_seen(workspace, status="ready")
    with pytest.raises(services.WorkspaceUnreachable):
        services.read_skill_file(workspace=workspace, skill_dir="/x", path="notes.md", timeout=0.3)


def test_stale_agents_are_marked_unreachable_and_come_back(workspace, settings):
    services.agent_seen(workspace, status="ready")
    Workspace.objects.filter(pk=workspace.pk).update(last_seen_at=timezone.now() - timezone.timedelta(minutes=5))
    assert services.mark_unreachable() == 1
    workspace.refresh_from_db()
    assert workspace.status == "unreachable" and not services.is_reachable(workspace)
    services.agent_seen(workspace)
    workspace.refresh_from_db()
    assert workspace.status == "starting"  # it never pushed; once it pushes it is ready


def test_the_server_does_not_trust_skill_names_from_the_agent(workspace):
    """A pushed ok skill with a name the format refuses (such as one posing as an alias) becomes invalid, and a second
    ok skill of the same name is shadowed, whatever the agent claimed."""

    def skill(name, path):
        return {"kind": "skill", "status": "ok", "path": path, "content": None, "skill": {"name": name}}

    snapshot, _ = services.snapshot_push(
        workspace=workspace,
        resources=[skill("org/deploy", "/w/a"), skill("dup", "/w/b"), skill("dup", "/w/c")],
    )
    statuses = list(snapshot.resources.order_by("position").values_list("status", "error"))
    assert statuses[0][0] == "invalid" and statuses[1] == ("ok", "")
    assert statuses[2] == ("shadowed", "shadowed by /w/b")


def test_secrets_of_mcp_json_entries_are_not_stored(workspace, tmp_path):
    mcp = """{"mcpServers": {
        "local": {"command": "run-it", "args": ["--x"], "env": {"API_KEY": "env-s3cret-value"}},
        "remote": {"url": "https://bot:url-s3cret-pw@tools.example/mcp?token=query-s3cret", "headers":
            {"Authorization": "Bearer header-s3cret-value"}}
    }}"""
    snapshot, _ = services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path, mcp=mcp))

    stored = {r.name: r.data["mcp"]["config"] for r in snapshot.resources.filter(kind="mcp_server")}
    assert stored["local"] == {"command": "run-it", "args": ["--x"], "env": {"API_KEY": "[redacted]"}}
    assert stored["remote"] == {
        "url": "https://bot:[redacted]@tools.example/mcp?[redacted]",
        "headers": {"Authorization": "[redacted]"},
    }
    rows = str(list(snapshot.resources.values_list("data", flat=True)))
    assert "s3cret" not in rows
