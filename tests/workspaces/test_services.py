"""Snapshots on the server: content addressing, versions, the MCP-only rule, the caps re-checked, tokens, and reads
through an agent that is not there."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps as django_apps
from django.utils import timezone

from organizations.models import AuditEvent, hash_token
from workspaces import scanner, services
from workspaces.models import ContentBlob, ContextSnapshot, SnapshotResource, Workspace


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


def stored_mcp_configs(snapshot):
    return {r.name: r.data["mcp"]["config"] for r in snapshot.resources.filter(kind="mcp_server")}


def test_secrets_of_mcp_json_entries_are_not_stored(workspace, tmp_path):
    mcp = """{"mcpServers": {
        "local": {"command": "run-it", "args": ["--x"], "env": {"API_KEY": "env-s3cret-value"}},
        "remote": {"url": "https://bot:url-s3cret-pw@tools.example/mcp?token=query-s3cret#frag-s3cret", "headers":
            {"Authorization": "Bearer header-s3cret-value"}}
    }}"""
    snapshot, _ = services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path, mcp=mcp))

    stored = stored_mcp_configs(snapshot)
    assert stored["local"] == {"command": "run-it", "args": ["--x"], "env": {"API_KEY": "[redacted]"}}
    assert stored["remote"] == {
        "url": "https://[redacted]@tools.example/[redacted]?[redacted]",
        "headers": {"Authorization": "[redacted]"},
    }
    rows = str(list(snapshot.resources.values_list("data", flat=True)))
    assert "s3cret" not in rows


@pytest.mark.parametrize(
    ("url", "stored"),
    [
        ("https://ghp_s3cret123@github.com/mcp", "https://[redacted]@github.com/[redacted]"),
        ("https://ghp_s3cret123:@github.com:8443/mcp", "https://[redacted]@github.com:8443/[redacted]"),
        ("https://u:pw[s3cret@github.com/mcp", "https://[redacted]@github.com/[redacted]"),  # brackets urlsplit refuses
        ("https://github.com/mcp", "https://github.com/[redacted]"),
        ("ghp_s3cret123@github.com/mcp", "[redacted]"),  # no scheme, so no host: the secret would sit in the path
    ],
)
def test_a_credential_in_the_url_username_alone_is_not_stored(workspace, tmp_path, url, stored):
    mcp = json.dumps({"mcpServers": {"gh": {"type": "http", "url": url}}})
    snapshot, _ = services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path, mcp=mcp))
    assert stored_mcp_configs(snapshot)["gh"] == {"type": "http", "url": stored}


def test_argument_values_are_not_stored_but_flag_names_are(workspace, tmp_path):
    args = ["-y", "--api-key", "sk-s3cret-key", "--token=tok-s3cret", "--verbose", "server-s3cret.js"]
    mcp = json.dumps(
        {
            "mcpServers": {
                "local": {"command": "npx", "args": args},
                "odd": {"command": "run-it", "args": ["--port", 8080, {"key": "obj-s3cret"}, None]},
            }
        }
    )
    snapshot, _ = services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path, mcp=mcp))

    stored = stored_mcp_configs(snapshot)
    assert stored["local"] == {
        "command": "npx",
        "args": ["-y", "--api-key", "[redacted]", "--token=[redacted]", "--verbose", "[redacted]"],
    }
    # The scanner marks this entry invalid (args must be strings) but it is still stored, so it is redacted too.
    assert stored["odd"] == {"command": "run-it", "args": ["--port", "[redacted]", "[redacted]", "[redacted]"]}
    assert "s3cret" not in str(list(snapshot.resources.values_list("data", flat=True)))


def test_invalid_entries_with_secrets_in_odd_places_are_redacted_whole(workspace, tmp_path):
    mcp = json.dumps(
        {
            "mcpServers": {
                "env-string": {"command": "run-it", "env": "API_KEY=env-s3cret", "args": "--token tok-s3cret"},
                "env-list": {"command": "run-it", "env": ["API_KEY=env-s3cret"]},
                "headers-string": {"url": "https://tools.example/mcp", "headers": "Bearer header-s3cret"},
                "url-list": {"type": "http", "url": ["https://bot:url-s3cret@tools.example/mcp"]},
                "not-an-object": "https://bot:entry-s3cret@tools.example/mcp",
            }
        }
    )
    snapshot, _ = services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path, mcp=mcp))

    stored = stored_mcp_configs(snapshot)
    assert stored == {
        "env-string": {"command": "run-it", "env": "[redacted]", "args": "[redacted]"},
        "env-list": {"command": "run-it", "env": "[redacted]"},
        "headers-string": {"url": "https://tools.example/[redacted]", "headers": "[redacted]"},
        "url-list": {"type": "http", "url": "[redacted]"},
        "not-an-object": "[redacted]",
    }
    assert set(snapshot.resources.filter(kind="mcp_server").values_list("status", flat=True)) == {"invalid"}
    assert "s3cret" not in str(list(snapshot.resources.values_list("data", flat=True)))


def test_the_data_migration_redacts_rows_stored_before_the_redaction(workspace, monkeypatch, django_assert_num_queries):
    """Rows written straight through the ORM, as rows stored before the redaction existed were, are redacted by
    the data migration; already-redacted rows and other kinds are not written."""
    migration = importlib.import_module("workspaces.migrations.0002_redact_mcp_secrets")
    monkeypatch.setattr(migration, "BATCH_SIZE", 2)  # several rows per batch, and a last partial batch
    snapshot = ContextSnapshot.objects.create(workspace=workspace, version=1, content_hash="c", context_hash="x")

    def row(position, kind, data):
        return SnapshotResource.objects.create(
            snapshot=snapshot, position=position, kind=kind, root="/w", root_kind="workdir", path="/w/.mcp.json",
            rel_path=".mcp.json", status="ok", data=data,
        )  # fmt: skip

    def entry(name, config):
        return {"mcp": {"name": name, "transport": "stdio", "config": config, "connect": True}}

    plaintext = {
        "command": "run-it",
        "args": ["--api-key", "sk-s3cret", "--token=tok-s3cret"],
        "env": {"API_KEY": "env-s3cret"},
        "headers": "Bearer header-s3cret",
        "url": "https://ghp_s3cret@github.com/mcp?token=query-s3cret",
    }
    redacted = {
        "command": "run-it",
        "args": ["--api-key", "[redacted]", "--token=[redacted]"],
        "env": {"API_KEY": "[redacted]"},
        "headers": "[redacted]",
        "url": "https://[redacted]@github.com/mcp?[redacted]",
    }
    leaking = [row(position, "mcp_server", entry(f"s{position}", plaintext)) for position in range(5)]
    invalid = row(5, "mcp_server", entry("bad", "https://bot:entry-s3cret@tools.example/mcp"))
    clean = row(6, "mcp_server", entry("clean", redacted))
    skill = row(7, "skill", {"skill": {"name": "hello", "description": "Says hello."}})
    # As the first version of the redaction stored it: the URL username and the argument values were kept.
    first_version = {**plaintext, "env": {"API_KEY": "[redacted]"}, "headers": {"Authorization": "[redacted]"}}
    first_version["url"] = "https://bot:[redacted]@github.com/mcp?[redacted]"
    first = row(8, "mcp_server", entry("first", first_version))

    # One read, then only the seven changed rows are written, two per batch: four updates. Run again, it only reads.
    with django_assert_num_queries(5):
        migration.redact_stored_mcp_entries(django_apps, None)
    with django_assert_num_queries(1):
        migration.redact_stored_mcp_entries(django_apps, None)

    for resource in leaking:
        resource.refresh_from_db()
        assert resource.data == entry(resource.data["mcp"]["name"], redacted)
    invalid.refresh_from_db()
    assert invalid.data == entry("bad", "[redacted]")
    first.refresh_from_db()
    assert first.data == entry("first", {**redacted, "headers": {"Authorization": "[redacted]"}})
    clean.refresh_from_db()
    skill.refresh_from_db()
    assert clean.data == entry("clean", redacted)
    assert skill.data == {"skill": {"name": "hello", "description": "Says hello."}}
    assert "s3cret" not in str(list(SnapshotResource.objects.filter(kind="mcp_server").values_list("data", flat=True)))


def test_unknown_keys_of_an_mcp_json_entry_keep_their_name_only(workspace, tmp_path):
    mcp = """{"mcpServers": {"remote": {"url": "https://tools.example/mcp", "type": "http",
        "oauth": {"clientSecret": "unknown-s3cret"}, "headersHelper": "print-s3cret"}}}"""
    snapshot, _ = services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path, mcp=mcp))

    [row] = snapshot.resources.filter(kind="mcp_server")
    assert row.data["mcp"]["config"] == {
        "url": "https://tools.example/[redacted]",
        "type": "http",
        "oauth": "[redacted]",
        "headersHelper": "[redacted]",
    }


def urls_stored(workspace, tmp_path, urls: list[str]) -> list[str]:
    """What the service stores for each of ``urls``, pushed as the ``url`` of one .mcp.json server each."""
    servers = {f"s{i}": {"type": "http", "url": url} for i, url in enumerate(urls)}
    snapshot, _ = services.snapshot_push(
        workspace=workspace, resources=make_tree(tmp_path, mcp=json.dumps({"mcpServers": servers}))
    )
    assert "s3cret" not in str(list(snapshot.resources.values_list("data", flat=True)))
    stored = stored_mcp_configs(snapshot)
    return [stored[name]["url"] for name in servers]


def test_a_key_in_the_url_path_is_not_stored(workspace, tmp_path):
    cases = {
        "https://mcp.zapier.com/api/mcp/s/Zs3cretKEY/mcp": "https://mcp.zapier.com/[redacted]",
        "https://tools.example:8443/k-s3cret?t=q-s3cret#f-s3cret": "https://tools.example:8443/[redacted]?[redacted]",
        "https://tools.example:8443/": "https://tools.example:8443/",
        "https://tools.example": "https://tools.example",
        "https://tools.example:s3cret/mcp": "[redacted]",  # a "port" that is no port: no host to keep
    }

    assert urls_stored(workspace, tmp_path, list(cases)) == list(cases.values())


def test_a_value_attached_to_a_short_flag_is_not_stored(workspace, tmp_path):
    args = ["-pS3cret", "-p", "-U", "-f=f-s3cret", "-port=5432", "-pw=pw-s3cret", "--", "-", "-1s3cret", "--x-y_z"]
    mcp = json.dumps({"mcpServers": {"db": {"command": "db-mcp", "args": args}}})
    snapshot, _ = services.snapshot_push(workspace=workspace, resources=make_tree(tmp_path, mcp=mcp))

    # Only "--name" and "-" with one letter can hold no value; "-pS3cret" is "-p" with "S3cret" attached.
    assert stored_mcp_configs(snapshot)["db"]["args"] == [
        "[redacted]", "-p", "-U", "-f=[redacted]", "[redacted]", "[redacted]", "[redacted]", "[redacted]",
        "[redacted]", "--x-y_z",
    ]  # fmt: skip
    assert "3cret" not in str(list(snapshot.resources.values_list("data", flat=True)))


def test_a_password_holding_a_slash_is_not_stored(workspace, tmp_path):
    cases = {
        # A "/" before the "@": the password holds it, or the "@" is in the path; what would pass for the host may
        # be the secret, so the whole URL goes.
        "https://user:pa/ss3cret@tools.example/": "[redacted]",
        "https://user:pa/ss3cret@tools.example:8443/mcp?t=q-s3cret": "[redacted]",
        "https://tools.example/api/key@s3cret": "[redacted]",
        "https://user:p@ss3cret@tools.example": "https://[redacted]@tools.example",  # the last "@" ends userinfo
        "https://tools.example/mcp?email=a@b-s3cret": "https://tools.example/[redacted]?[redacted]",  # "@" in query
        "https://user:pa/ss3cret@/mcp": "[redacted]",  # no host after the "@"
        "user:pa/ss3cret@tools.example/": "[redacted]",  # no scheme, so no authority
    }

    assert urls_stored(workspace, tmp_path, list(cases)) == list(cases.values())


# Entries whose secrets the rules of migration 0002 kept, and what the service stores for them now.
LEAKED_BY_THE_0002_RULES = {
    "zapier": (
        {"type": "http", "url": "https://mcp.zapier.com/api/mcp/s/Zs3cretKEY/mcp"},
        {"type": "http", "url": "https://mcp.zapier.com/[redacted]"},
    ),
    "slash-password": (
        {"type": "http", "url": "https://user:pa/s3cret@tools.example/mcp?token=q-s3cret"},
        {"type": "http", "url": "[redacted]"},
    ),
    "bracket-password": (
        {"type": "http", "url": "https://bot:[s3cret@tools.example/mcp"},
        {"type": "http", "url": "https://[redacted]@tools.example/[redacted]"},
    ),
    "short-flags": (
        {"command": "db-mcp", "args": ["-pS3cret", "-U", "admin-s3cret", "--token=t-s3cret", "-port=5432", "-h"]},
        {"command": "db-mcp", "args": ["[redacted]", "-U", "[redacted]", "--token=[redacted]", "[redacted]", "-h"]},
    ),
}


def test_what_the_earlier_rules_stored_is_redacted_as_the_original_is(workspace, tmp_path):
    """Redacting is idempotent, also across versions of the rules: an entry as the rules of migration 0002 stored
    it, pushed again, is stored as the original entry is, and so is what the service stores now."""
    before = importlib.import_module("workspaces.migrations.0002_redact_mcp_secrets")
    servers = {}
    for name, (original, stored_now) in LEAKED_BY_THE_0002_RULES.items():
        servers[name] = original
        servers[f"{name}-0002"] = before.redact_mcp({"config": original})["config"]
        servers[f"{name}-again"] = stored_now
    snapshot, _ = services.snapshot_push(
        workspace=workspace, resources=make_tree(tmp_path, mcp=json.dumps({"mcpServers": servers}))
    )

    stored = stored_mcp_configs(snapshot)
    for name, (_original, expected) in LEAKED_BY_THE_0002_RULES.items():
        assert servers[f"{name}-0002"] != expected  # what 0002 left is not already the new form
        assert (stored[name], stored[f"{name}-0002"], stored[f"{name}-again"]) == (expected, expected, expected)
    assert "3cret" not in str(list(snapshot.resources.values_list("data", flat=True)))


def test_the_0003_data_migration_redacts_url_paths_and_short_flags(workspace, monkeypatch, django_assert_num_queries):
    """Rows written straight through the ORM, as stored before the rules tightened (plaintext, or as migration 0002
    left them), are redacted by the data migration to what the service stores now; rows already in that form and
    other kinds are not written."""
    migration = importlib.import_module("workspaces.migrations.0003_redact_mcp_url_paths_and_short_flags")
    before = importlib.import_module("workspaces.migrations.0002_redact_mcp_secrets")
    monkeypatch.setattr(migration, "BATCH_SIZE", 2)  # several rows per batch, and a last partial batch
    snapshot = ContextSnapshot.objects.create(workspace=workspace, version=1, content_hash="c", context_hash="x")

    def row(position, kind, data):
        return SnapshotResource.objects.create(
            snapshot=snapshot, position=position, kind=kind, root="/w", root_kind="workdir", path="/w/.mcp.json",
            rel_path=".mcp.json", status="ok", data=data,
        )  # fmt: skip

    def entry(name, config):
        return {"mcp": {"name": name, "transport": "stdio", "config": config, "connect": True}}

    stale = []
    for name, (original, _stored) in LEAKED_BY_THE_0002_RULES.items():
        for config in (original, before.redact_mcp({"config": original})["config"]):
            stale.append((row(len(stale), "mcp_server", entry(name, config)), name))
    untouched = [
        row(10 + position, "mcp_server", entry(name, stored))
        for position, (name, (_original, stored)) in enumerate(LEAKED_BY_THE_0002_RULES.items())
    ]
    untouched += [
        row(20, "mcp_server", entry("bad", "[redacted]")),
        row(21, "mcp_server", {"other": "https://user:pa/s3cret@tools.example/"}),  # no entry: left alone
        row(22, "skill", {"skill": {"name": "hello", "description": "See https://tools.example/docs/mcp."}}),
    ]
    data_before = [resource.data for resource in untouched]

    # One read, then only the eight changed rows are written, two per batch: four updates. Run again, it only reads.
    with django_assert_num_queries(5):
        migration.redact_stored_mcp_entries(django_apps, None)
    with django_assert_num_queries(1):
        migration.redact_stored_mcp_entries(django_apps, None)

    for resource, name in stale:
        resource.refresh_from_db()
        assert resource.data == entry(name, LEAKED_BY_THE_0002_RULES[name][1])
    for resource in untouched:
        resource.refresh_from_db()
    assert [resource.data for resource in untouched] == data_before
    assert "3cret" not in str([resource.data for resource, _name in stale])
