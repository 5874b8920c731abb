"""The workspace scanner (workspaces/scanner.py): roots, shallow discovery, skills, MCP entries, symlinks, caps,
supporting files and determinism, on trees generated under tmp_path. No database."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skills.format import MISSING_NAME_MESSAGE, OVERSIZE_MESSAGE
from workspaces import scanner
from workspaces.scanner import (
    CONTENT_CAP_MESSAGE,
    INSTRUCTION_FILES,
    MAX_FILE_BYTES,
    MAX_LISTED_FILES,
    MAX_RESOURCES,
    MAX_SNAPSHOT_BYTES,
    MAX_SUPPORTING_FILE_BYTES,
    RESOURCE_CAP_MESSAGE,
    SKILL_CONTAINERS,
    SYMLINK_MESSAGE,
    Root,
    read_supporting_file,
    roots_for,
    scan,
)

RESOURCE_KEYS = {"kind", "root", "root_kind", "path", "rel_path", "status", "error", "size", "sha256", "content"}
SKILL_KEYS = {"name", "description", "dir", "body", "files", "files_truncated", "warnings"}
MCP_KEYS = {"name", "transport", "config", "connect"}


def md(name: str, description: str = "Helps with a thing.", body: str = "# Steps\n\nDo the thing.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


def sized_md(name: str, size: int) -> bytes:
    """A valid SKILL.md of exactly ``size`` bytes."""
    text = md(name).encode()
    assert len(text) <= size
    return text + b"x" * (size - len(text))


def write(path: Path, content: str | bytes = "text\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def add_skill(container: Path, name: str, content: str | bytes | None = None) -> Path:
    directory = container / name
    write(directory / "SKILL.md", md(name) if content is None else content)
    return directory


def workdir(path: Path) -> Root:
    return Root(str(path), "workdir")


def source(path: Path) -> Root:
    return Root(str(path), "source")


def only(snapshot: dict, **match) -> dict:
    found = [r for r in snapshot["resources"] if all(r.get(key) == value for key, value in match.items())]
    assert len(found) == 1, (match, [(r["kind"], r["rel_path"], r["status"]) for r in snapshot["resources"]])
    return found[0]


def rels(snapshot: dict) -> list[str]:
    return [r["rel_path"] for r in snapshot["resources"]]


def check_shape(snapshot: dict) -> None:
    """Every resource carries every key, whatever its status; the snapshot is plain JSON."""
    json.dumps(snapshot, allow_nan=False)
    assert {"resources", "totals", "caps"} <= set(snapshot)
    for resource in snapshot["resources"]:
        assert RESOURCE_KEYS <= set(resource), resource
        assert resource["status"] in scanner.STATUSES
        assert resource["kind"] in scanner.RESOURCE_KINDS
        assert os.path.isabs(resource["root"]) and os.path.isabs(resource["path"])
        assert resource["rel_path"] == os.path.relpath(resource["path"], resource["root"])
        if resource["status"] != "ok":
            assert resource["content"] is None and resource["error"]
        if resource["kind"] == "skill":
            assert SKILL_KEYS <= set(resource["skill"])
            if resource["status"] != "ok":
                assert resource["skill"]["body"] is None
        if resource["kind"] == "mcp_server":
            assert MCP_KEYS <= set(resource["mcp"]) and resource["content"] is None


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


# Roots ---------------------------------------------------------------------------------------------------------------


def test_it_lists_every_root_kind_in_order(tmp_path, home, work):
    for sub in (".coder/skills", ".claude/plugins/cache"):
        (home / sub).mkdir(parents=True)
    first, second = tmp_path / "src1", tmp_path / "src2"
    first.mkdir()
    second.mkdir()
    roots = roots_for(str(work), str(home), [str(second), str(first)])
    assert roots == [
        Root(str(work), "workdir"),
        Root(str(home / ".coder"), "home_coder"),
        Root(str(home / ".coder" / "skills"), "home_coder_skills"),
        Root(str(home / ".claude" / "plugins" / "cache"), "claude_plugins"),
        Root(str(second), "source"),
        Root(str(first), "source"),
    ]
    assert all(os.path.isabs(root.path) for root in roots)


def test_it_keeps_only_roots_that_exist_as_directories(tmp_path, home, work):
    (home / ".coder").mkdir()
    write(tmp_path / "a-file")
    roots = roots_for(str(work), str(home), [str(tmp_path / "missing"), str(tmp_path / "a-file")])
    assert [root.kind for root in roots] == ["workdir", "home_coder"]
    assert roots_for(str(work), None, []) == [Root(str(work), "workdir")]


def test_it_deduplicates_roots_that_resolve_to_the_same_directory(tmp_path, home, work):
    (tmp_path / "alias").symlink_to(work)
    extra = tmp_path / "extra"
    extra.mkdir()
    roots = roots_for(str(work), None, [str(work), str(tmp_path / "alias"), str(extra), str(extra) + "/"])
    assert roots == [Root(str(work), "workdir"), Root(str(extra), "source")]


def test_it_resolves_relative_sources_against_the_workdir_and_tilde_against_home(home, work):
    (work / "docs").mkdir()
    (home / "notes").mkdir()
    roots = roots_for(str(work), str(home), ["docs", "~/notes"])
    assert roots[1:] == [Root(str(work / "docs"), "source"), Root(str(home / "notes"), "source")]


def test_it_scans_each_root_kind_and_records_it(tmp_path, home, work):
    extra = tmp_path / "extra"
    places = {
        "workdir": work,
        "home_coder": home / ".coder",
        "home_coder_skills": home / ".coder" / "skills",
        "claude_plugins": home / ".claude" / "plugins" / "cache",
        "source": extra,
    }
    for kind, place in places.items():
        write(place / "AGENTS.md", f"rules for {kind}\n")
    add_skill(work / "skills", "work-skill")
    add_skill(home / ".coder" / ".agents" / "skills", "coder-skill")
    add_skill(home / ".coder" / "skills", "direct-skill")
    add_skill(home / ".claude" / "plugins" / "cache" / ".claude" / "skills", "plugin-skill")
    add_skill(extra / ".codex" / "skills", "source-skill")
    snapshot = scan(roots_for(str(work), str(home), [str(extra)]))
    check_shape(snapshot)
    for kind, place in places.items():
        resource = only(snapshot, kind="instruction", root_kind=kind)
        assert resource["root"] == str(place)
        assert resource["content"] == f"rules for {kind}\n"
    found = [r for r in snapshot["resources"] if r["kind"] == "skill"]
    assert {r["skill"]["name"]: (r["root_kind"], r["rel_path"]) for r in found} == {
        "work-skill": ("workdir", "skills/work-skill/SKILL.md"),
        "coder-skill": ("home_coder", ".agents/skills/coder-skill/SKILL.md"),
        "direct-skill": ("home_coder_skills", "direct-skill/SKILL.md"),
        "plugin-skill": ("claude_plugins", ".claude/skills/plugin-skill/SKILL.md"),
        "source-skill": ("source", ".codex/skills/source-skill/SKILL.md"),
    }
    assert [root["kind"] for root in snapshot["roots"]] == list(places)


# Instruction files and shallow discovery -----------------------------------------------------------------------------


def test_it_reads_instruction_files_at_the_top_of_a_root_in_order(work):
    for name in reversed(INSTRUCTION_FILES):
        write(work / name, f"# {name}\n")
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    assert rels(snapshot) == list(INSTRUCTION_FILES)
    agents = snapshot["resources"][0]
    assert agents["kind"] == "instruction" and agents["status"] == "ok" and agents["error"] == ""
    assert agents["path"] == str(work / "AGENTS.md") and agents["root"] == str(work)
    assert agents["root_kind"] == "workdir"
    assert agents["content"] == "# AGENTS.md\n" and agents["size"] == len(b"# AGENTS.md\n")
    assert agents["sha256"] == hashlib.sha256(b"# AGENTS.md\n").hexdigest()
    assert snapshot["totals"]["content_bytes"] == sum(r["size"] for r in snapshot["resources"])


def test_it_ignores_nested_instruction_files_and_nested_skills(work):
    write(work / "sub" / "AGENTS.md")
    write(work / "sub" / ".mcp.json", '{"mcpServers": {"x": {"command": "x"}}}')
    add_skill(work / "sub" / "skills", "nested-container")  # a container below the root's top
    add_skill(work / "skills" / "group", "too-deep")  # a skill below a skill-less directory
    add_skill(work / "skills" / "top" / "skills", "inside-a-skill")
    add_skill(work / "skills", "top")
    add_skill(work / ".github" / "skills", "other-container")
    snapshot = scan([workdir(work)])
    assert rels(snapshot) == ["skills/top/SKILL.md"]


def test_it_never_climbs_to_a_parent_directory(work):
    write(work.parent / "AGENTS.md")
    add_skill(work.parent / "skills", "parent-skill")
    child = work / "child"
    child.mkdir()
    assert scan([workdir(child)])["resources"] == []


def test_it_ignores_instruction_files_that_are_directories(work):
    (work / "AGENTS.md").mkdir()
    (work / ".mcp.json").mkdir()
    assert scan([workdir(work)])["resources"] == []


def test_it_reports_an_instruction_file_that_is_not_utf8_or_holds_nul_as_invalid(work, tmp_path):
    write(work / "AGENTS.md", b"caf\xe9\n")
    write(work / "CLAUDE.md", "a\x00b")
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    agents, claude = snapshot["resources"]
    assert agents["status"] == "invalid" and "not valid UTF-8" in agents["error"] and agents["size"] == 5
    assert claude["status"] == "invalid" and "NUL" in claude["error"]
    assert snapshot["totals"]["content_bytes"] == 0


# Skills --------------------------------------------------------------------------------------------------------------


def test_it_finds_skills_in_every_container_by_container_order_then_name(work):
    for container in reversed(SKILL_CONTAINERS):
        stem = container.replace("/", "-").strip(".").replace(".", "")
        for name in (f"{stem}-b", f"{stem}-a"):
            add_skill(work / container, name)
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    expected = []
    for container in SKILL_CONTAINERS:
        stem = container.replace("/", "-").strip(".").replace(".", "")
        expected += [f"{container}/{stem}-a/SKILL.md", f"{container}/{stem}-b/SKILL.md"]
    assert rels(snapshot) == expected
    assert {r["status"] for r in snapshot["resources"]} == {"ok"}


def test_it_reports_a_valid_skill_with_its_fields(work):
    text = md("deep-review", "Multi-reviewer code review", "# Deep Review\n\nDo it.\n")
    directory = add_skill(work / ".agents" / "skills", "deep-review", text)
    write(directory / "roles" / "security.md", "sec")
    resource = scan([workdir(work)])["resources"][0]
    assert resource["kind"] == "skill" and resource["status"] == "ok" and resource["error"] == ""
    assert resource["path"] == str(directory / "SKILL.md")
    assert resource["content"] == text and resource["size"] == len(text.encode())
    assert resource["skill"] == {
        "name": "deep-review",
        "description": "Multi-reviewer code review",
        "dir": str(directory),
        "body": "# Deep Review\n\nDo it.\n",
        "files": [{"path": "roles/security.md", "size": 3}],
        "files_truncated": False,
        "warnings": [],
    }


def test_it_ignores_directories_without_skill_md_and_files_in_containers(work):
    (work / "skills" / "empty").mkdir(parents=True)
    write(work / "skills" / "no-skill" / "README.md")
    write(work / "skills" / "README.md")
    (work / "skills" / "dir-named" / "SKILL.md").mkdir(parents=True)
    assert scan([workdir(work)])["resources"] == []


def test_it_discovers_skills_directly_under_home_coder_skills_once(home, work):
    add_skill(home / ".coder" / "skills", "personal")
    snapshot = scan(roots_for(str(work), str(home), []))
    resource = only(snapshot, kind="skill")
    assert resource["root_kind"] == "home_coder_skills"
    assert resource["root"] == str(home / ".coder" / "skills")
    assert resource["rel_path"] == "personal/SKILL.md" and resource["status"] == "ok"


def test_it_reports_home_coder_skills_through_home_coder_when_that_root_is_scanned_alone(home):
    add_skill(home / ".coder" / "skills", "personal")
    snapshot = scan([Root(str(home / ".coder"), "home_coder")])
    assert only(snapshot, kind="skill")["rel_path"] == "skills/personal/SKILL.md"


def test_it_reports_a_skill_directory_reached_twice_only_once(work):
    add_skill(work / ".agents" / "skills", "shared")
    (work / ".claude" / "skills").mkdir(parents=True)
    (work / ".claude" / "skills" / "shared").symlink_to(work / ".agents" / "skills" / "shared")
    extra = work / ".agents"  # a declared source overlapping the workdir: .agents/skills is its "skills" container
    snapshot = scan([workdir(work), source(extra)])
    assert [(r["root_kind"], r["rel_path"]) for r in snapshot["resources"]] == [
        ("workdir", ".agents/skills/shared/SKILL.md")
    ]


def test_it_excludes_a_skill_linked_from_a_source_to_outside_that_source(work):
    add_skill(work / "skills", "shared")
    (work / ".agents" / "skills").mkdir(parents=True)
    (work / ".agents" / "skills" / "shared").symlink_to(work / "skills" / "shared")
    snapshot = scan([source(work / ".agents")])
    resource = only(snapshot, kind="skill")
    assert resource["status"] == "excluded" and resource["error"] == SYMLINK_MESSAGE


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("# No frontmatter\n", "SKILL.md must start with a '---' line"),
        ("---\nname: bad-fm\ndescription: x\n", "frontmatter is not closed"),
        ("---\nname: [unclosed\n---\n\nbody\n", "frontmatter is not valid YAML"),
        ("---\n- a\n- b\n---\n\nbody\n", "frontmatter must be a YAML mapping"),
        ("---\ndescription: x\n---\n\nbody\n", MISSING_NAME_MESSAGE),
        ("---\nname: Bad_Name\ndescription: x\n---\n\nbody\n", "name must be kebab-case"),
        ("---\nname: the-skill\n---\n\nbody\n", "frontmatter missing required 'description' field"),
        ("---\nname: the-skill\ndescription: x\n---\n\n", "Skill body is required"),
        (b"---\nname: the-skill\ndescription: \xff\n---\n\nbody\n", "not valid UTF-8"),
    ],
)
def test_it_reports_invalid_skills_without_content(work, content, message):
    add_skill(work / "skills", "the-skill", content)
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    resource = only(snapshot, kind="skill")
    assert resource["status"] == "invalid" and message in resource["error"]
    assert resource["content"] is None and resource["skill"]["body"] is None
    assert resource["skill"]["name"] == "the-skill" and resource["size"] > 0 and len(resource["sha256"]) == 64
    assert snapshot["totals"]["content_bytes"] == 0


def test_it_reports_a_name_that_does_not_match_the_directory_as_invalid(work):
    add_skill(work / "skills", "folder", md("other-name"))
    resource = only(scan([workdir(work)]), kind="skill")
    assert resource["status"] == "invalid"
    assert resource["error"] == "name 'other-name' does not match the skill's directory name 'folder'"
    assert resource["skill"]["name"] == "folder"


def test_it_joins_every_error_of_an_invalid_skill(work):
    add_skill(work / "skills", "two-errors", "---\nname: two-errors\n---\n\n")
    resource = only(scan([workdir(work)]), kind="skill")
    assert resource["error"] == "frontmatter missing required 'description' field; Skill body is required"


def test_it_keeps_warnings_of_a_valid_skill(work):
    add_skill(work / "skills", "warned", "---\nname: warned\ndescription: x\ncolor: red\n---\n\nbody\n")
    resource = only(scan([workdir(work)]), kind="skill")
    assert resource["status"] == "ok"
    assert resource["skill"]["warnings"] == [
        "unknown frontmatter key 'color': product-specific fields go under 'metadata.<product>'"
    ]


def test_it_shadows_later_skills_with_the_same_name(work, tmp_path):
    first = add_skill(work / "skills", "dup")
    add_skill(work / ".claude" / "skills", "dup")
    extra = tmp_path / "extra"
    add_skill(extra / "skills", "dup")
    snapshot = scan([workdir(work), source(extra)])
    check_shape(snapshot)
    statuses = [(r["rel_path"], r["root_kind"], r["status"]) for r in snapshot["resources"]]
    assert statuses == [
        ("skills/dup/SKILL.md", "workdir", "ok"),
        (".claude/skills/dup/SKILL.md", "workdir", "shadowed"),
        ("skills/dup/SKILL.md", "source", "shadowed"),
    ]
    for resource in snapshot["resources"][1:]:
        assert resource["error"] == f"shadowed by {first / 'SKILL.md'}"
        assert resource["content"] is None and resource["skill"]["body"] is None
    assert snapshot["totals"]["content_bytes"] == snapshot["resources"][0]["size"]


def test_it_lets_no_invalid_skill_shadow_a_valid_one(work):
    add_skill(work / "skills", "dup", "---\nname: dup\n---\n\nbody\n")
    add_skill(work / ".agents" / "skills", "dup")
    snapshot = scan([workdir(work)])
    assert [r["status"] for r in snapshot["resources"]] == ["invalid", "ok"]


# Symlinks ------------------------------------------------------------------------------------------------------------


def test_it_excludes_symlinks_that_leave_the_scan_root(work, tmp_path):
    outside = tmp_path / "outside"
    write(outside / "AGENTS.md", "secret\n")
    write(outside / "mcp.json", '{"mcpServers": {"x": {"command": "x"}}}')
    add_skill(outside / "skills", "away")
    add_skill(outside / "container", "in-linked-container")
    write(outside / "real-skill.md", md("md-away"))
    (work / "AGENTS.md").symlink_to(outside / "AGENTS.md")
    (work / ".mcp.json").symlink_to(outside / "mcp.json")
    (work / "skills").mkdir()
    (work / "skills" / "away").symlink_to(outside / "skills" / "away")
    (work / "skills" / "md-away").mkdir()
    (work / "skills" / "md-away" / "SKILL.md").symlink_to(outside / "real-skill.md")
    (work / ".claude").mkdir()
    (work / ".claude" / "skills").symlink_to(outside / "container")
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    assert [(r["kind"], r["rel_path"], r["status"]) for r in snapshot["resources"]] == [
        ("instruction", "AGENTS.md", "excluded"),
        ("mcp_config", ".mcp.json", "excluded"),
        ("skill", "skills/away/SKILL.md", "excluded"),
        ("skill", "skills/md-away/SKILL.md", "excluded"),
        ("skill", ".claude/skills", "excluded"),
    ]
    for resource in snapshot["resources"]:
        assert resource["error"] == SYMLINK_MESSAGE
        assert resource["content"] is None and resource["sha256"] == "" and resource["size"] == 0
        if resource["kind"] == "skill":
            # No directory to read supporting files from: a link out of the root must never become readable.
            assert resource["skill"]["dir"] is None
    assert "secret" not in json.dumps(snapshot)


def test_it_follows_symlinks_that_stay_inside_the_root(work):
    write(work / "docs" / "rules.md", "inside\n")
    (work / "AGENTS.md").symlink_to(work / "docs" / "rules.md")
    add_skill(work / "library", "linked")
    (work / "skills").mkdir()
    (work / "skills" / "linked").symlink_to(work / "library" / "linked")
    snapshot = scan([workdir(work)])
    assert [(r["rel_path"], r["status"]) for r in snapshot["resources"]] == [
        ("AGENTS.md", "ok"),
        ("skills/linked/SKILL.md", "ok"),
    ]
    assert snapshot["resources"][0]["content"] == "inside\n"
    assert snapshot["resources"][1]["skill"]["dir"] == str(work / "skills" / "linked")


def test_it_scans_a_root_that_is_itself_a_symlink(tmp_path):
    real = tmp_path / "real"
    write(real / "AGENTS.md", "hi\n")
    add_skill(real / "skills", "kept")
    (tmp_path / "link").symlink_to(real)
    snapshot = scan([workdir(tmp_path / "link")])
    assert [(r["path"], r["status"]) for r in snapshot["resources"]] == [
        (str(tmp_path / "link" / "AGENTS.md"), "ok"),
        (str(tmp_path / "link" / "skills" / "kept" / "SKILL.md"), "ok"),
    ]


def test_it_ignores_dangling_symlinks(work, tmp_path):
    (work / "AGENTS.md").symlink_to(work / "missing.md")
    (work / "skills").mkdir()
    (work / "skills" / "gone").symlink_to(tmp_path / "nowhere")
    assert scan([workdir(work)])["resources"] == []


# MCP -----------------------------------------------------------------------------------------------------------------

MCP_DOC = {
    "mcpServers": {
        "github": {"command": "github-mcp-server", "args": ["--token", "..."], "env": {"A": "1"}},
        "my-api": {"type": "http", "url": "http://localhost:8080/mcp", "headers": {"Authorization": "Bearer ..."}},
        "inferred": {"url": "https://example.test/mcp"},
        "events": {"type": "sse", "url": "https://example.test/sse"},
        "explicit": {"type": "stdio", "command": "run"},
    }
}


def test_it_lists_mcp_server_entries_in_file_order(work):
    write(work / ".mcp.json", json.dumps(MCP_DOC))
    write(work / "AGENTS.md", "a\n")
    add_skill(work / "skills", "after")
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    kinds = [r["kind"] for r in snapshot["resources"]]
    assert kinds == ["instruction"] + ["mcp_server"] * 5 + ["skill"]
    servers = [r for r in snapshot["resources"] if r["kind"] == "mcp_server"]
    assert [(s["mcp"]["name"], s["mcp"]["transport"]) for s in servers] == [
        ("github", "stdio"),
        ("my-api", "http"),
        ("inferred", "http"),
        ("events", "sse"),
        ("explicit", "stdio"),
    ]
    for server in servers:
        assert server["status"] == "ok" and server["mcp"]["connect"] is True
        assert server["mcp"]["config"] == MCP_DOC["mcpServers"][server["mcp"]["name"]]
        assert server["path"] == str(work / ".mcp.json") and server["rel_path"] == ".mcp.json"
        assert server["content"] is None and server["size"] == (work / ".mcp.json").stat().st_size
    assert snapshot["totals"]["content_bytes"] == 2 + snapshot["resources"][-1]["size"]


def test_it_connects_only_the_workdir_mcp_servers(tmp_path, home, work):
    extra = tmp_path / "extra"
    doc = json.dumps({"mcpServers": {"srv": {"command": "srv"}}})
    for place in (work, home / ".coder", home / ".coder" / "skills", home / ".claude" / "plugins" / "cache", extra):
        write(place / ".mcp.json", doc)
    snapshot = scan(roots_for(str(work), str(home), [str(extra)]))
    connect = {r["root_kind"]: r["mcp"]["connect"] for r in snapshot["resources"] if r["kind"] == "mcp_server"}
    assert connect == {
        "workdir": True,
        "home_coder": False,
        "home_coder_skills": False,
        "claude_plugins": False,
        "source": False,
    }
    assert {r["status"] for r in snapshot["resources"]} == {"ok"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", ".mcp.json is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("[]", ".mcp.json must be a JSON object"),
        ('{"servers": {}}', ".mcp.json must have an 'mcpServers' object"),
        ('{"mcpServers": []}', ".mcp.json must have an 'mcpServers' object"),
        ('{"mcpServers": {"a": {"command": "x", "n": NaN}}}', ".mcp.json is not valid JSON: NaN is not allowed"),
        ('{"mcpServers": {"a": {"command": "x"}, "a": {}}}', ".mcp.json is not valid JSON: duplicate key 'a'"),
        (b'{"mcpServers": {"\xff": {}}}', ".mcp.json is not valid UTF-8 text (byte 17 cannot be decoded)"),
    ],
)
def test_it_reports_an_unparsable_mcp_json_as_one_invalid_config(work, content, message):
    write(work / ".mcp.json", content)
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    assert len(snapshot["resources"]) == 1
    resource = snapshot["resources"][0]
    assert resource["kind"] == "mcp_config" and resource["status"] == "invalid" and resource["error"] == message
    assert "mcp" not in resource


def test_it_reads_an_mcp_json_with_a_bom(work):
    write(work / ".mcp.json", "\ufeff" + json.dumps({"mcpServers": {"a": {"command": "a"}}}))
    assert only(scan([workdir(work)]), kind="mcp_server")["status"] == "ok"


def test_it_reports_an_oversize_mcp_json(work):
    write(work / ".mcp.json", b" " * (MAX_FILE_BYTES + 1))
    resource = only(scan([workdir(work)]), kind="mcp_config")
    assert resource["status"] == "oversize" and resource["error"] == ".mcp.json is larger than 64 KiB"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("not an object", "server 'bad': the entry must be a JSON object"),
        ({}, "server 'bad': set 'command' (stdio) or 'url' (http)"),
        ({"type": "ws", "url": "x"}, "server 'bad': unknown type \"ws\": use stdio, http or sse"),
        ({"command": ""}, "server 'bad': 'command' must be a non-empty string"),
        ({"command": "x", "args": "--flag"}, "server 'bad': 'args' must be a list of strings"),
        ({"command": "x", "env": {"A": 1}}, "server 'bad': 'env' must be an object of strings"),
        ({"type": "http"}, "server 'bad': 'url' must be a non-empty string"),
        ({"url": "x", "headers": ["a"]}, "server 'bad': 'headers' must be an object of strings"),
    ],
)
def test_it_marks_a_bad_mcp_entry_invalid_and_keeps_the_others(work, entry, message):
    write(work / ".mcp.json", json.dumps({"mcpServers": {"good": {"command": "g"}, "bad": entry}}))
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    good, bad = snapshot["resources"]
    assert good["status"] == "ok" and good["mcp"]["connect"] is True
    assert bad["kind"] == "mcp_server" and bad["status"] == "invalid" and bad["error"] == message
    assert bad["mcp"]["connect"] is False and bad["mcp"]["config"] == entry and bad["mcp"]["name"] == "bad"


def test_it_ignores_an_mcp_json_with_no_servers(work):
    write(work / ".mcp.json", '{"mcpServers": {}}')
    assert scan([workdir(work)])["resources"] == []


# Size limits and caps ------------------------------------------------------------------------------------------------


def test_it_reads_an_instruction_file_of_exactly_64_kib_and_not_one_byte_more(work):
    write(work / "AGENTS.md", b"a" * MAX_FILE_BYTES)
    write(work / "CLAUDE.md", b"a" * (MAX_FILE_BYTES + 1))
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    fits, over = snapshot["resources"]
    assert fits["status"] == "ok" and len(fits["content"]) == MAX_FILE_BYTES
    assert over["status"] == "oversize" and over["error"] == "CLAUDE.md is larger than 64 KiB"
    assert over["content"] is None and over["size"] == MAX_FILE_BYTES + 1 and over["sha256"] == ""
    assert snapshot["totals"]["content_bytes"] == MAX_FILE_BYTES


def test_it_reads_a_skill_md_of_exactly_64_kib_and_not_one_byte_more(work):
    add_skill(work / "skills", "fits", sized_md("fits", MAX_FILE_BYTES))
    add_skill(work / "skills", "over", sized_md("over", MAX_FILE_BYTES + 1))
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    fits, over = snapshot["resources"]
    assert fits["status"] == "ok" and fits["size"] == MAX_FILE_BYTES and fits["skill"]["body"]
    assert over["status"] == "oversize" and over["error"] == OVERSIZE_MESSAGE
    assert over["content"] is None and over["skill"]["body"] is None and over["size"] == MAX_FILE_BYTES + 1
    assert over["skill"]["name"] == "over" and over["skill"]["dir"] == str(work / "skills" / "over")
    assert snapshot["totals"]["content_bytes"] == MAX_FILE_BYTES


def many_skills(container: Path, count: int) -> None:
    for index in range(count):
        name = f"s{index:04d}"
        write(container / name / "SKILL.md", f"---\nname: {name}\ndescription: d\n---\n\nb\n")


def test_it_keeps_exactly_500_resources(work):
    write(work / "AGENTS.md", "a\n")
    many_skills(work / "skills", MAX_RESOURCES - 1)
    snapshot = scan([workdir(work)])
    assert snapshot["totals"]["resources"] == MAX_RESOURCES
    assert {r["status"] for r in snapshot["resources"]} == {"ok"}


def test_it_excludes_the_501st_resource(work):
    write(work / "AGENTS.md", "a\n")
    many_skills(work / "skills", MAX_RESOURCES)
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    assert snapshot["totals"]["resources"] == MAX_RESOURCES + 1
    assert {r["status"] for r in snapshot["resources"][:-1]} == {"ok"}
    last = snapshot["resources"][-1]
    assert last["rel_path"] == f"skills/s{MAX_RESOURCES - 1:04d}/SKILL.md"
    assert last["status"] == "excluded" and last["error"] == RESOURCE_CAP_MESSAGE
    assert last["content"] is None and last["skill"]["body"] is None
    assert snapshot["totals"]["by_status"]["excluded"] == 1
    assert snapshot["totals"]["content_bytes"] == sum(r["size"] for r in snapshot["resources"][:-1])


def test_it_counts_mcp_entries_toward_500_resources_but_not_toward_bytes(work):
    servers = {f"srv{index:03d}": {"command": "x"} for index in range(MAX_RESOURCES)}
    write(work / ".mcp.json", json.dumps({"mcpServers": servers}))
    write(work / "AGENTS.md", "a\n")
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    assert snapshot["totals"]["resources"] == MAX_RESOURCES + 1
    assert snapshot["totals"]["content_bytes"] == 2  # AGENTS.md only: the .mcp.json is not measured
    last = snapshot["resources"][-1]
    assert last["kind"] == "mcp_server" and last["mcp"]["name"] == f"srv{MAX_RESOURCES - 1:03d}"
    assert last["status"] == "excluded" and last["error"] == RESOURCE_CAP_MESSAGE and last["mcp"]["connect"] is False
    assert all(r["status"] == "ok" for r in snapshot["resources"][:-1])


def test_it_keeps_exactly_2_mib_of_content(work):
    count = MAX_SNAPSHOT_BYTES // MAX_FILE_BYTES
    for index in range(count):
        add_skill(work / "skills", f"big-{index:02d}", sized_md(f"big-{index:02d}", MAX_FILE_BYTES))
    snapshot = scan([workdir(work)])
    assert snapshot["totals"]["content_bytes"] == MAX_SNAPSHOT_BYTES
    assert {r["status"] for r in snapshot["resources"]} == {"ok"}


def test_it_excludes_the_resource_that_crosses_2_mib_and_keeps_a_later_one_that_fits(work):
    write(work / "AGENTS.md", "a")
    count = MAX_SNAPSHOT_BYTES // MAX_FILE_BYTES
    for index in range(count):
        add_skill(work / "skills", f"big-{index:02d}", sized_md(f"big-{index:02d}", MAX_FILE_BYTES))
    add_skill(work / "skills", "small")
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    statuses = [(r["rel_path"], r["status"]) for r in snapshot["resources"]]
    crossing = f"skills/big-{count - 1:02d}/SKILL.md"
    assert [rel for rel, status in statuses if status != "ok"] == [crossing]
    crossed = only(snapshot, rel_path=crossing)
    assert crossed["error"] == CONTENT_CAP_MESSAGE and crossed["content"] is None and crossed["skill"]["body"] is None
    small = only(snapshot, rel_path="skills/small/SKILL.md")
    assert snapshot["totals"]["content_bytes"] == 1 + (count - 1) * MAX_FILE_BYTES + small["size"]
    assert snapshot["totals"]["content_bytes"] <= MAX_SNAPSHOT_BYTES


def test_it_spends_no_content_bytes_on_oversize_invalid_or_shadowed_files(work):
    write(work / "AGENTS.md", b"a" * (MAX_FILE_BYTES + 1))
    add_skill(work / "skills", "broken", "no frontmatter\n")
    add_skill(work / "skills", "dup")
    add_skill(work / ".agents" / "skills", "dup")
    snapshot = scan([workdir(work)])
    assert [r["status"] for r in snapshot["resources"]] == ["oversize", "invalid", "ok", "shadowed"]
    assert snapshot["totals"]["content_bytes"] == snapshot["resources"][2]["size"]


# Supporting files ----------------------------------------------------------------------------------------------------


def test_it_lists_supporting_files_recursively_sorted_without_hidden_ones(work, tmp_path):
    directory = add_skill(work / "skills", "helper")
    write(directory / "scripts" / "run.sh", "#!/bin/sh\n")
    write(directory / "roles" / "a.md", "aa")
    write(directory / "roles" / "deeper" / "SKILL.md", "nested skill files are supporting files")
    write(directory / "notes.txt", "n")
    write(directory / ".env", "SECRET=1")
    write(directory / ".git" / "config", "x")
    write(directory / "roles" / ".hidden.md", "x")
    write(directory / "has space.md", "x")
    write(tmp_path / "outside.txt", "outside")
    (directory / "leak.txt").symlink_to(tmp_path / "outside.txt")
    (directory / "alias.txt").symlink_to(directory / "notes.txt")
    (directory / "linked-dir").symlink_to(directory / "roles")
    files = only(scan([workdir(work)]), kind="skill")["skill"]["files"]
    assert files == [
        {"path": "alias.txt", "size": 1},
        {"path": "notes.txt", "size": 1},
        {"path": "roles/a.md", "size": 2},
        {"path": "roles/deeper/SKILL.md", "size": len("nested skill files are supporting files")},
        {"path": "scripts/run.sh", "size": 10},
    ]


def test_it_lists_at_most_200_supporting_files(work):
    directory = add_skill(work / "skills", "many")
    for index in range(MAX_LISTED_FILES + 1):
        write(directory / "data" / f"f{index:04d}.txt", "")
    skill = only(scan([workdir(work)]), kind="skill")["skill"]
    assert len(skill["files"]) == MAX_LISTED_FILES and skill["files_truncated"] is True
    assert skill["files"][-1]["path"] == f"data/f{MAX_LISTED_FILES - 1:04d}.txt"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "path is required"),
        (None, "path is required"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("../secret.txt", "path traversal is not allowed"),
        ("roles/../../secret.txt", "path traversal is not allowed"),
        (".env", "hidden file components are not allowed"),
        ("roles/.hidden.md", "hidden file components are not allowed"),
        ("leak.txt", "path leaves the skill directory"),
        ("linked/secret.txt", "path leaves the skill directory"),
        ("missing.md", "file not found"),
        ("roles", "file not found"),
    ],
)
def test_it_refuses_supporting_file_paths(tmp_path, path, message):
    directory = tmp_path / "skill"
    write(directory / "roles" / "a.md", "a")
    write(directory / "roles" / ".hidden.md", "h")
    write(directory / ".env", "SECRET=1")
    write(tmp_path / "secret.txt", "secret")
    (directory / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (directory / "linked").symlink_to(tmp_path)
    assert read_supporting_file(str(directory), path) == {"ok": False, "error": message}


def test_it_reads_a_supporting_file(tmp_path):
    directory = tmp_path / "skill"
    write(directory / "roles" / "a.md", "héllo\n")
    (directory / "inside.md").symlink_to(directory / "roles" / "a.md")
    expected = {"ok": True, "content": "héllo\n", "size": 7, "truncated": False}
    assert read_supporting_file(str(directory), "roles/a.md") == expected
    assert read_supporting_file(str(directory), "inside.md") == expected
    write(directory / "binary.bin", b"\xff\xfeA")
    assert read_supporting_file(str(directory), "binary.bin")["content"] == "\ufffd\ufffdA"


def test_it_truncates_a_supporting_file_at_512_kib(tmp_path):
    directory = tmp_path / "skill"
    write(directory / "exact.txt", b"a" * MAX_SUPPORTING_FILE_BYTES)
    write(directory / "over.txt", b"a" * MAX_SUPPORTING_FILE_BYTES + b"tail")
    exact = read_supporting_file(str(directory), "exact.txt")
    assert exact["ok"] and exact["truncated"] is False and len(exact["content"]) == MAX_SUPPORTING_FILE_BYTES
    over = read_supporting_file(str(directory), "over.txt")
    assert over["truncated"] is True and over["size"] == MAX_SUPPORTING_FILE_BYTES + 4
    assert over["content"] == "a" * MAX_SUPPORTING_FILE_BYTES


def test_it_drops_a_character_cut_by_truncation(tmp_path):
    directory = tmp_path / "skill"
    write(directory / "cut.txt", b"a" * (MAX_SUPPORTING_FILE_BYTES - 1) + "é".encode())
    result = read_supporting_file(str(directory), "cut.txt")
    assert result["truncated"] is True and result["content"] == "a" * (MAX_SUPPORTING_FILE_BYTES - 1)


def test_it_reads_files_the_scanner_lists(work):
    directory = add_skill(work / "skills", "helper")
    write(directory / "scripts" / "run.sh", "echo hi\n")
    resource = only(scan([workdir(work)]), kind="skill")
    for entry in resource["skill"]["files"]:
        result = read_supporting_file(resource["skill"]["dir"], entry["path"])
        assert result["ok"] and result["size"] == entry["size"]


# Determinism and purity ----------------------------------------------------------------------------------------------


def test_it_gives_equal_json_serialisable_snapshots_for_the_same_tree(tmp_path, home, work):
    write(work / "AGENTS.md", "a\n")
    write(work / ".mcp.json", json.dumps(MCP_DOC))
    for name in ("zeta", "alpha", "mid"):
        add_skill(work / "skills", name)
    add_skill(work / ".agents" / "skills", "alpha")
    add_skill(work / "skills", "bad", "nope\n")
    add_skill(home / ".coder" / "skills", "personal")
    roots = roots_for(str(work), str(home), [])
    first, second = scan(roots), scan(list(roots))
    assert first == second
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert json.loads(json.dumps(first, allow_nan=False)) == first
    assert set(first["caps"]) >= {"file_bytes", "snapshot_bytes", "resources"}
    assert first["caps"]["resources"] == MAX_RESOURCES and first["caps"]["snapshot_bytes"] == MAX_SNAPSHOT_BYTES
    assert set(first["totals"]) >= {"resources", "content_bytes"}


def test_it_scans_nothing_from_no_roots():
    snapshot = scan([])
    assert snapshot["resources"] == [] and snapshot["totals"]["resources"] == 0
    assert snapshot["totals"]["content_bytes"] == 0


def test_it_imports_no_django():
    code = "import sys, workspaces.scanner; print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    root = Path(__file__).resolve().parents[2]
    output = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


def test_it_skips_fifos_and_names_that_are_not_utf8(work):
    os.mkfifo(work / "AGENTS.md")
    directory = add_skill(work / "skills", "piped")
    os.mkfifo(directory / "pipe")
    os.mkdir(os.path.join(os.fsencode(work / "skills"), b"bad-\xff"))
    write(Path(os.fsdecode(os.path.join(os.fsencode(directory), b"bad-\xff.md"))), "x")
    snapshot = scan([workdir(work)])
    check_shape(snapshot)
    json.dumps(snapshot, ensure_ascii=False).encode("utf-8")
    assert rels(snapshot) == ["skills/piped/SKILL.md"]
    assert snapshot["resources"][0]["skill"]["files"] == []
    assert read_supporting_file(str(directory), "pipe") == {"ok": False, "error": "file not found"}


def test_it_stops_listing_past_the_inventory_limit(work, monkeypatch):
    monkeypatch.setattr(scanner, "MAX_INVENTORY", 3)
    write(work / "AGENTS.md", "a\n")
    many_skills(work / "skills", 5)
    snapshot = scan([workdir(work)])
    assert rels(snapshot) == ["AGENTS.md", "skills/s0000/SKILL.md", "skills/s0001/SKILL.md"]
    assert snapshot["totals"]["truncated"] is True
    assert scan([workdir(work / "skills")])["totals"]["truncated"] is False
    monkeypatch.setattr(scanner, "MAX_INVENTORY", 6)
    assert scan([workdir(work)])["totals"]["truncated"] is False
