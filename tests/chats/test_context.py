"""What one chat step sees (chats/context.py): the three skill sources, same-name aliases, ``lookup``, the prompt
catalog and its 1,024-character rule, the `/` menu groups, the note while the workspace is starting, and a bounded
number of queries however many skills and resources there are.

rules.md, "Same-name aliases"; extending-agents.md, "How chats load stored skills". Data is built through the real
services: ``skills.services`` for stored skills, ``workspaces.scanner`` + ``workspaces.services.snapshot_push`` for
workspace snapshots, ``chats.services`` for chats.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chats import loop, pinning
from chats import services as chat_services
from chats.context import SOURCES, ChatContext, SkillEntry, SkillLookupError, build_context
from chats.models import Chat
from organizations.models import OrgGroup
from skills import services as skill_services
from skills.models import OrganizationSkill, PersonalSkill
from workspaces import scanner
from workspaces import services as ws_services
from workspaces.models import ContextSnapshot, Workspace

STARTING_NOTE = "The workspace is still starting: its skills appear once its agent has pushed a snapshot."


# Helpers (imported by the other chat tests) -------------------------------------------------------------------------


def skill_md(name: str, description: str | None = None, body: str | None = None) -> str:
    description = description if description is not None else f"The {name} skill."
    body = body if body is not None else f"# {name}\n\nDo {name}.\n"
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


def personal(user, name: str, *, enabled: bool = True, description: str | None = None) -> PersonalSkill:
    return skill_services.personal_skill_create(user=user, content=skill_md(name, description), enabled=enabled)


def org_skill(
    world, name: str, *, enabled: bool = True, organization=None, description: str | None = None
) -> OrganizationSkill:
    return skill_services.organization_skill_create(
        actor=world.org_admin,
        organization=organization or world.acme,
        content=skill_md(name, description),
        enabled=enabled,
    )


def unshare(world, skill: OrganizationSkill) -> None:
    everyone = OrgGroup.objects.get(organization=skill.organization, is_everyone=True)
    skill_services.organization_skill_set_acl(actor=world.org_admin, skill=skill, group_roles={str(everyone.pk): ""})


def write_skill(
    root: Path,
    name: str,
    *,
    container: str = ".agents/skills",
    description: str | None = None,
    body: str | None = None,
    text: str | None = None,
) -> Path:
    directory = root / container / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(text if text is not None else skill_md(name, description, body))
    return directory


def scan(root: Path) -> list[dict]:
    return scanner.scan(scanner.roots_for(str(root), None, []))["resources"]


def push(workspace: Workspace, root: Path) -> ContextSnapshot:
    snapshot, created = ws_services.snapshot_push(workspace=workspace, resources=scan(root))
    assert created, "the tree did not change: no new snapshot"
    return snapshot


def new_workspace(world, name: str = "bob-laptop", owner=None) -> Workspace:
    workspace, _token = ws_services.workspace_create(actor=owner or world.member, organization=world.acme, name=name)
    return workspace


def new_chat(world, *, owner=None, workspace: Workspace | None = None) -> Chat:
    return chat_services.chat_create(owner=owner or world.member, organization=world.acme, workspace=workspace)


def fresh(chat: Chat) -> Chat:
    """The chat as a new request or step would load it (no cached owner, organization or permissions)."""
    return Chat.objects.get(pk=chat.pk)


def by_source(context: ChatContext) -> dict[str, list[str]]:
    return {source: [e.name for e in context.entries if e.source == source] for source in SOURCES}


# Sources ------------------------------------------------------------------------------------------------------------


def test_personal_skills_are_the_owners_enabled_ones_only(world):
    personal(world.member, "alpha")
    personal(world.member, "beta", enabled=False)
    personal(world.org_admin, "gamma")  # someone else's
    context = build_context(new_chat(world))
    assert by_source(context) == {"personal": ["alpha"], "org": [], "workspace": []}
    entry = context.lookup("alpha")
    assert (entry.source, entry.description) == ("personal", "The alpha skill.")
    assert entry.read_body() == "# alpha\n\nDo alpha.\n"  # the body, without the frontmatter


def test_organization_skills_are_the_enabled_ones_the_owner_may_use(world):
    org_skill(world, "shared")  # shared with Everyone
    org_skill(world, "switched-off", enabled=False)
    unshare(world, org_skill(world, "board-only"))  # shared with nobody
    for_bob = org_skill(world, "for-bob")
    unshare(world, for_bob)
    skill_services.organization_skill_set_acl(
        actor=world.org_admin, skill=for_bob, user_roles={str(world.member.pk): "read"}
    )
    org_skill(world, "elsewhere", organization=world.globex)  # another organization's

    assert by_source(build_context(new_chat(world)))["org"] == ["for-bob", "shared"]
    # Admins (and auditors) list every enabled skill of the chat's organization.
    assert by_source(build_context(new_chat(world, owner=world.org_admin)))["org"] == [
        "board-only",
        "for-bob",
        "shared",
    ]
    assert by_source(build_context(new_chat(world, owner=world.auditor)))["org"] == [
        "board-only",
        "for-bob",
        "shared",
    ]


def test_stored_skills_are_read_again_at_every_build(world):
    chat = new_chat(world)
    shared = org_skill(world, "shared")
    mine = personal(world.member, "mine")
    assert by_source(build_context(fresh(chat)))["org"] == ["shared"]
    skill_services.organization_skill_update(actor=world.org_admin, skill=shared, enabled=False)
    skill_services.personal_skill_update(skill=mine, enabled=False)
    context = build_context(fresh(chat))
    assert context.entries == []
    with pytest.raises(SkillLookupError, match="^skill not found: mine$"):
        context.lookup("mine")  # a turned-off skill is "not found"
    skill_services.organization_skill_update(actor=world.org_admin, skill=shared, enabled=True)
    unshare(world, shared)
    assert by_source(build_context(fresh(chat)))["org"] == []


def test_workspace_skills_come_from_the_pin_only_and_only_with_status_ok(world, tmp_path):
    root = tmp_path / "work"
    root.mkdir()
    good = write_skill(root, "good", body="# Good\n\nBe good.\n")
    (good / "reference.md").write_text("more")
    write_skill(root, "twin", container="skills", description="The first twin.")
    write_skill(root, "twin", description="The shadowed twin.")  # same name later: shadowed
    write_skill(root, "broken", text="---\nname: broken\n---\n\nNo description.\n")  # invalid
    write_skill(root, "huge", body="x" * (65 * 1024))  # oversize
    outside = write_skill(tmp_path / "outside", "escape")
    os.symlink(outside, root / ".agents" / "skills" / "escape")  # leaves the root: excluded
    workspace = new_workspace(world)
    first = push(workspace, root)
    statuses = dict(first.resources.filter(kind="skill").values_list("rel_path", "status"))
    assert sorted(statuses.values()) == ["excluded", "invalid", "ok", "ok", "oversize", "shadowed"], statuses

    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    context = build_context(fresh(chat))
    assert by_source(context)["workspace"] == ["twin", "good"]  # snapshot order
    twin = context.lookup("twin")
    assert (twin.description, twin.read_body()) == ("The first twin.", "# twin\n\nDo twin.\n")
    entry = context.lookup("good")
    assert entry.source == "workspace" and entry.body == "# Good\n\nBe good.\n"
    assert entry.dir == str(good) and [f["path"] for f in entry.files] == ["reference.md"]

    write_skill(root, "later")
    second = push(workspace, root)
    assert fresh(chat).pinned_snapshot_id == first.pk
    assert "later" not in by_source(build_context(fresh(chat)))["workspace"]  # only from the pin
    chat = chat_services.context_refresh(chat=fresh(chat), actor=world.member)
    assert chat.pinned_snapshot_id == second.pk
    assert by_source(build_context(fresh(chat)))["workspace"] == ["twin", "good", "later"]


def test_a_chat_without_a_workspace_has_no_workspace_skills_and_no_note(world, tmp_path):
    write_skill(tmp_path, "ws-only")
    push(new_workspace(world), tmp_path)  # bob's workspace has skills, but this chat is not attached to it
    context = build_context(new_chat(world))
    assert context.entries == [] and context.workspace_note == ""
    assert context.catalog() == ""


# Aliases and lookup --------------------------------------------------------------------------------------------------


@pytest.fixture
def mixed(world, tmp_path) -> ChatContext:
    """personal: notes, review, triple · org: review, runbook, triple · workspace: deploy, notes, triple."""
    for name in ("review", "notes", "triple"):
        personal(world.member, name)
    for name in ("review", "runbook", "triple"):
        org_skill(world, name)
    for name in ("deploy", "notes", "triple"):
        write_skill(tmp_path, name)
    workspace = new_workspace(world)
    push(workspace, tmp_path)
    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    return build_context(fresh(chat))


def test_a_name_held_by_one_source_is_bare_and_by_several_is_qualified_for_every_holder(mixed):
    assert {alias: entry.source for alias, entry in mixed.aliases.items()} == {
        "personal/review": "personal",
        "org/review": "org",
        "personal/notes": "personal",
        "workspace/notes": "workspace",
        "personal/triple": "personal",
        "org/triple": "org",
        "workspace/triple": "workspace",
        "runbook": "org",
        "deploy": "workspace",
    }
    assert all(alias.endswith(entry.name) for alias, entry in mixed.aliases.items())
    assert len(mixed.aliases) == len(mixed.entries) == 9  # nothing overrides anything


def test_lookup_finds_bare_and_qualified_names(mixed):
    assert (mixed.lookup("runbook").source, mixed.lookup("deploy").source) == ("org", "workspace")
    assert mixed.lookup("org/runbook") is mixed.lookup("runbook")  # a qualified alias works for a unique name too
    for source in SOURCES:
        entry = mixed.lookup(f"{source}/triple")
        assert (entry.source, entry.name) == (source, "triple")
    assert mixed.lookup("/deploy").name == "deploy"  # as typed in the / menu
    assert mixed.lookup("  workspace/notes ").source == "workspace"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("review", "skill lookup is ambiguous: review matches personal/review, org/review"),
        ("notes", "skill lookup is ambiguous: notes matches personal/notes, workspace/notes"),
        ("triple", "skill lookup is ambiguous: triple matches personal/triple, org/triple, workspace/triple"),
        ("nope", "skill not found: nope"),
        ("personal/runbook", "skill not found: personal/runbook"),
        ("team/review", "skill not found: team/review"),
        ("", "skill not found: "),
    ],
)
def test_lookup_refuses_ambiguous_and_unknown_names_with_the_documented_message(mixed, name, message):
    with pytest.raises(SkillLookupError) as caught:
        mixed.lookup(name)
    assert str(caught.value) == message


def test_the_menu_groups_skills_by_source_in_a_fixed_order_with_their_aliases(mixed):
    groups = mixed.grouped()
    assert [(source, label) for source, label, _items in groups] == [
        ("personal", "Personal skills"),
        ("org", "Organization skills"),
        ("workspace", "Workspace skills"),
    ]
    assert {source: [alias for alias, _entry in items] for source, _label, items in groups} == {
        "personal": ["personal/notes", "personal/review", "personal/triple"],
        "org": ["org/review", "org/triple", "runbook"],
        "workspace": ["deploy", "workspace/notes", "workspace/triple"],
    }
    for source, _label, items in groups:
        assert all(entry.source == source for _alias, entry in items)


def test_empty_groups_are_still_listed():
    groups = ChatContext([SkillEntry("org", "only", "One.")]).grouped()
    assert [(source, [a for a, _ in items]) for source, _label, items in groups] == [
        ("personal", []),
        ("org", ["only"]),
        ("workspace", []),
    ]


def test_the_slash_menu_endpoint_lists_the_groups_as_json(world, client_for, tmp_path):
    personal(world.member, "review", description="Mine. " + "m" * 400)
    org_skill(world, "review")
    write_skill(tmp_path, "deploy")
    workspace = new_workspace(world)
    push(workspace, tmp_path)
    chat = new_chat(world, workspace=workspace)
    response = client_for("member").get(reverse("chat-skills", args=[chat.pk]))
    assert response.status_code == 200
    body = response.json()
    assert body["workspace_note"] == ""
    assert [(g["source"], g["label"], [i["alias"] for i in g["items"]]) for g in body["groups"]] == [
        ("personal", "Personal skills", ["personal/review"]),
        ("org", "Organization skills", ["org/review"]),
        ("workspace", "Workspace skills", ["deploy"]),
    ]
    item = body["groups"][0]["items"][0]
    assert set(item) == {"alias", "name", "description"} and item["name"] == "review"
    assert item["description"] == ("Mine. " + "m" * 400)[:300]


# Catalog -------------------------------------------------------------------------------------------------------------


def test_the_catalog_lists_every_alias_sorted_with_its_description(mixed):
    assert mixed.catalog() == (
        "<available-skills>\n"
        "- deploy: The deploy skill.\n"
        "- org/review: The review skill.\n"
        "- org/triple: The triple skill.\n"
        "- personal/notes: The notes skill.\n"
        "- personal/review: The review skill.\n"
        "- personal/triple: The triple skill.\n"
        "- runbook: The runbook skill.\n"
        "- workspace/notes: The notes skill.\n"
        "- workspace/triple: The triple skill.\n"
        "</available-skills>"
    )
    assert mixed.catalog() in loop.system_prompt(mixed)


def test_no_skills_means_no_catalog():
    context = ChatContext([])
    assert context.catalog() == "" and context.grouped() == [
        ("personal", "Personal skills", []),
        ("org", "Organization skills", []),
        ("workspace", "Workspace skills", []),
    ]
    assert "<available-skills>" not in loop.system_prompt(context)


def test_the_catalog_shortens_descriptions_longer_than_1024_characters(world, tmp_path):
    exactly = "e" * 1024
    longer = "l" * 1025
    much_longer = "m" * 3000
    personal(world.member, "exact", description=exactly)
    personal(world.member, "longer", description=longer)
    org_skill(world, "much-longer", description=much_longer)
    write_skill(tmp_path, "ws-long", description="w" * 2000)
    workspace = new_workspace(world)
    push(workspace, tmp_path)
    context = build_context(fresh(new_chat(world, workspace=workspace)))
    lines = dict(line[2:].split(": ", 1) for line in context.catalog().splitlines()[1:-1])
    assert lines["exact"] == exactly
    assert lines["longer"] == "l" * 1023 + "…" and len(lines["longer"]) == 1024
    assert lines["much-longer"] == "m" * 1023 + "…"
    assert lines["ws-long"] == "w" * 1023 + "…"
    # The stored description keeps the full text.
    assert PersonalSkill.objects.get(name="longer").description == longer
    assert context.lookup("much-longer").description == much_longer


# The workspace is starting -------------------------------------------------------------------------------------------


def test_a_chat_whose_workspace_has_no_snapshot_yet_says_so(world, tmp_path):
    personal(world.member, "mine")
    workspace = new_workspace(world)
    chat = new_chat(world, workspace=workspace)
    context = build_context(fresh(chat))
    assert context.workspace_note == STARTING_NOTE
    assert by_source(context) == {"personal": ["mine"], "org": [], "workspace": []}
    assert STARTING_NOTE in loop.system_prompt(context)

    write_skill(tmp_path, "arrived")
    push(workspace, tmp_path)
    context = build_context(fresh(chat))
    assert context.workspace_note == "" and by_source(context)["workspace"] == ["arrived"]


# Bounded queries -----------------------------------------------------------------------------------------------------


def _queries(chat: Chat) -> tuple[int, ChatContext]:
    chat = fresh(chat)
    with CaptureQueriesContext(connection) as captured:
        context = build_context(chat)
        context.catalog()
        context.grouped()
    return len(captured), context


def test_build_context_makes_a_bounded_number_of_queries(world, tmp_path, django_assert_max_num_queries):
    root = tmp_path / "work"
    root.mkdir()
    (root / "AGENTS.md").write_text("Be kind.")
    write_skill(root, "ws-0000")
    personal(world.member, "p-0000")
    org_skill(world, "o-0000")
    workspace = new_workspace(world)
    push(workspace, root)
    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    small, context = _queries(chat)
    assert [len(names) for names in by_source(context).values()] == [1, 1, 1]

    for i in range(1, 100):
        personal(world.member, f"p-{i:04}")
        org_skill(world, f"o-{i:04}")
    for i in range(1, 399):
        write_skill(root, f"ws-{i:04}")
    big_snapshot = push(workspace, root)
    assert big_snapshot.resources.count() == 400  # AGENTS.md + 399 skills
    chat = chat_services.context_refresh(chat=fresh(chat), actor=world.member)

    chat = fresh(chat)
    with django_assert_max_num_queries(10):
        context = build_context(chat)
        catalog = context.catalog()
        context.grouped()
    assert [len(names) for names in by_source(context).values()] == [100, 100, 399]
    assert catalog.count("\n- ") == 599
    big, _ = _queries(chat)
    assert big == small, f"build_context grows with the data: {small} queries for 3 skills, {big} for 599"
