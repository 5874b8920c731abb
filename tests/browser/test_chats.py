"""Chats in a real browser: the composer's `/` menu (an ARIA combobox and listbox, by keyboard and by mouse), a
message that reads a skill through the demo provider, the Refresh context banner a workspace push brings in while
the page polls, the note of a workspace that is still starting, and the composer without a running turn.

Data is set up through the real services (Celery runs eagerly in tests, so a turn runs inside the send's POST);
every page visited is screenshotted, and each test asserts that no page logged a console error or threw (a
Content-Security-Policy violation shows up as one).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chats.models import Chat, Role, TurnStatus
from skills import services as skill_services
from workspaces import scanner
from workspaces import services as workspace_services

pytestmark = pytest.mark.browser

COMPOSER = "#composer-input"
POLL_WAIT = 9_000  # the chat page polls #chat-live every 4 s
STARTING_NOTE = "The workspace is still starting"


def skill_md(name: str, description: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


DEPLOY_NOTES = skill_md(
    "deploy-notes",
    "Bob's notes for deploying the service.",
    "# Deploy notes\n\nAlways run the smoke tests on staging before the production deploy.\n",
)
PERSONAL_REVIEW = skill_md("code-review", "Bob's own review checklist.", "# My review\n\nRead the tests first.\n")
ORG_REVIEW = skill_md("code-review", "The team's code review guide.", "# Code review\n\nTwo approvals.\n")
SECRET_PLAN = skill_md("secret-plan", "Not for anyone yet.", "# Secret\n\nHush.\n")


def signed_in(browsing, username: str):
    page = browsing.new_page()
    browsing.sign_in(page, username)
    expect(page).to_have_url(re.compile(r"/agents/$"))
    return page


def start_chat(page, *, workspace: str | None = None) -> Chat:
    """New chat on the Agents page: organization acme, the demo provider, optionally a workspace."""
    form = page.get_by_role("region", name="New chat")
    form.get_by_label("Organization").select_option(label="Acme Labs")
    if workspace:
        form.get_by_label("Workspace").select_option(label=f"{workspace} (acme)")
    form.get_by_label("Model").select_option(value="demo")
    form.get_by_role("button", name="Start chat").click()
    expect(page).to_have_url(re.compile(r"/agents/chats/\d+/$"))
    return Chat.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def menu(page):
    return page.get_by_role("listbox", name="Skills")


def options(page):
    """The selectable options of the open menu (a "No matching skills" row is a disabled option)."""
    return menu(page).locator("[role=option]:not([aria-disabled=true])")


def expect_active(page, index: int) -> None:
    """Option ``index`` is the active one: the only one selected, and the textarea's active descendant."""
    option = options(page).nth(index)
    expect(option).to_have_attribute("aria-selected", "true")
    expect(menu(page).locator("[role=option][aria-selected=true]")).to_have_count(1)
    option_id = option.get_attribute("id")
    assert option_id
    expect(page.locator(COMPOSER)).to_have_attribute("aria-activedescendant", option_id)


def expect_closed(page) -> None:
    expect(menu(page)).to_be_hidden()
    composer = page.locator(COMPOSER)
    expect(composer).to_have_attribute("aria-expanded", "false")
    expect(composer).not_to_have_attribute("aria-activedescendant", re.compile(".*"))


def open_menu(page, text_before: str = ""):
    """Put ``text_before`` in the composer, then type `/` (as a keypress) with the caret at the end."""
    composer = page.locator(COMPOSER)
    composer.fill(text_before)
    composer.press("End")
    composer.press_sequentially("/")
    expect(menu(page)).to_be_visible()
    expect(composer).to_have_attribute("aria-expanded", "true")
    return composer


def write_skill(root: Path, name: str, description: str, body: str) -> None:
    directory = root / ".agents" / "skills" / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(skill_md(name, description, body), encoding="utf-8")


def push(workspace, root: Path):
    """What the workspace agent does after a change: scan its working directory and push the snapshot."""
    resources = scanner.scan(scanner.roots_for(str(root), None, []))["resources"]
    snapshot, created = workspace_services.snapshot_push(workspace=workspace, resources=resources)
    assert created
    return snapshot


# 1. The `/` menu by keyboard and mouse, and a message that reads a skill -------------------------------------------


def test_it_picks_a_skill_from_the_slash_menu_and_the_agent_reads_it(browsing, live_world):
    bob, acme = live_world.member, live_world.acme
    skill_services.personal_skill_create(user=bob, content=DEPLOY_NOTES)
    skill_services.personal_skill_create(user=bob, content=PERSONAL_REVIEW)
    skill_services.organization_skill_create(actor=live_world.org_admin, organization=acme, content=ORG_REVIEW)
    skill_services.organization_skill_create(
        actor=live_world.org_admin, organization=acme, content=SECRET_PLAN, enabled=False
    )
    page = signed_in(browsing, "bob")
    chat = start_chat(page)
    expect(page.locator("main h1")).to_have_text("New chat")
    composer = page.locator(COMPOSER)
    expect(menu(page)).to_be_hidden()
    expect(composer).to_have_attribute("aria-expanded", "false")
    browsing.shot(page, "new-chat")

    # `/` opens the menu: the groups, qualified aliases for the shared name, no turned-off skill, no empty group.
    open_menu(page)
    groups = menu(page).get_by_role("group")
    expect(groups).to_have_count(2)
    personal = menu(page).get_by_role("group", name="Personal skills")
    org = menu(page).get_by_role("group", name="Organization skills")
    expect(personal.locator(".slash-alias")).to_have_text(["/deploy-notes", "/personal/code-review"])
    expect(org.locator(".slash-alias")).to_have_text(["/org/code-review"])
    expect(menu(page).get_by_role("group", name="Workspace skills")).to_have_count(0)
    expect(personal.get_by_role("option").first.locator("small")).to_have_text("Bob's notes for deploying the service.")
    expect(menu(page)).not_to_contain_text("secret-plan")
    all_three = ["/deploy-notes", "/personal/code-review", "/org/code-review"]
    expect(options(page).locator(".slash-alias")).to_have_text(all_three)
    expect_active(page, 0)
    # A short chat has no room above the composer: the menu opens below it rather than off the top of the page.
    expect(options(page).first).to_be_in_viewport()
    expect(menu(page).get_by_role("group").first.locator("span").first).to_be_in_viewport()
    browsing.shot(page, "menu-open")

    # ↑/↓ move the active option, wrapping at both ends; the caret stays in the textarea.
    composer.press("ArrowDown")
    expect_active(page, 1)
    composer.press("ArrowDown")
    expect_active(page, 2)
    composer.press("ArrowDown")
    expect_active(page, 0)
    composer.press("ArrowUp")
    expect_active(page, 2)
    composer.press("ArrowUp")
    expect_active(page, 1)
    expect(composer).to_be_focused()
    expect(composer).to_have_value("/")

    # Typing filters (a case-insensitive substring of alias or name: "de" is also in "code-review").
    composer.press_sequentially("De")
    expect(options(page)).to_have_count(3)
    expect_active(page, 0)
    composer.press_sequentially("p")
    expect(options(page)).to_have_count(1)
    expect(options(page).locator(".slash-alias")).to_have_text(["/deploy-notes"])
    expect(menu(page).get_by_role("group")).to_have_count(1)
    expect_active(page, 0)
    browsing.shot(page, "menu-filtered")

    # Enter picks: the "/query" becomes "/alias ", the menu closes, nothing is sent.
    composer.press("Enter")
    expect(composer).to_have_value("/deploy-notes ")
    expect_closed(page)
    assert composer.evaluate("el => [el.selectionStart, el.selectionEnd]") == [14, 14]
    assert not chat.messages.exists()

    # No match: one disabled row, Enter picks nothing and does not send.
    composer.press_sequentially("/zzz")
    expect(menu(page).get_by_role("option")).to_have_count(1)
    expect(menu(page).get_by_role("option")).to_have_text("No matching skills")
    expect(menu(page).get_by_role("option")).to_have_attribute("aria-disabled", "true")
    expect(composer).not_to_have_attribute("aria-activedescendant", re.compile(".*"))
    browsing.shot(page, "menu-no-match")

    # Esc closes and keeps the text.
    composer.press("Escape")
    expect_closed(page)
    expect(composer).to_have_value("/deploy-notes /zzz")

    # A space closes it too; a `/` inside a word does not open it.
    composer.fill("")
    composer.press_sequentially("/de ")
    expect_closed(page)
    composer.press_sequentially("and/or")
    expect_closed(page)
    expect(composer).to_have_value("/de and/or")

    # Tab picks, keeping the text after the word being typed; the caret lands after the inserted alias.
    composer.fill("check  first")
    composer.evaluate("el => el.setSelectionRange(6, 6)")
    composer.press_sequentially("/per")
    expect(options(page).locator(".slash-alias")).to_have_text(["/personal/code-review"])
    composer.press("Tab")
    expect(composer).to_have_value("check /personal/code-review first")
    expect(composer).to_be_focused()
    assert composer.evaluate("el => el.selectionStart") == len("check /personal/code-review ")
    expect_closed(page)

    # A click picks too.
    open_menu(page, "use ")
    menu(page).get_by_role("option").filter(has_text="/org/code-review").click()
    expect(composer).to_have_value("use /org/code-review ")
    expect_closed(page)
    expect(composer).to_be_focused()

    # Closed, Enter is a newline; blurring closes an open menu.
    composer.press("End")
    composer.press("Enter")
    expect(composer).to_have_value("use /org/code-review \n")
    open_menu(page, "x ")
    page.mouse.click(1200, 780)  # somewhere empty: the open menu covers what is above the composer
    expect_closed(page)
    expect(composer).to_have_value("x /")
    assert not chat.messages.exists()

    # Send "please /deploy-notes": the demo provider reads the skill and quotes it.
    composer.fill("please /deploy-notes")
    page.get_by_role("button", name="Send").click()
    transcript = page.get_by_role("list", name="Conversation")
    expect(transcript.locator(".msg-user")).to_have_text(re.compile("please /deploy-notes"))
    call = transcript.locator("details.tool-call")
    expect(call).to_have_count(1)
    expect(call.locator("summary")).to_have_text("Reading skill deploy-notes")
    expect(call.locator("pre.result")).to_be_hidden()
    answer = transcript.locator(".msg-assistant .markdown").last
    expect(answer).to_contain_text("I read the skill deploy-notes")
    expect(answer).to_contain_text("Always run the smoke tests on staging before the production deploy.")
    expect(composer).to_have_value("")
    call.locator("summary").click()
    expect(call).to_have_attribute("open", "")
    expect(call.locator("pre").first).to_contain_text('"name": "deploy-notes"')
    expect(call.locator("pre.result")).to_contain_text("smoke tests on staging")
    browsing.shot(page, "answered")

    turn = chat.turns.get()
    assert turn.status == TurnStatus.DONE
    assert [m.role for m in chat.messages.order_by("id")] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    browsing.assert_no_console_errors()


# 2. Refresh context: the banner a push brings in, and what Refresh changes -----------------------------------------


def test_it_shows_refresh_context_when_the_workspace_skills_change(browsing, live_world, tmp_path):
    bob, acme = live_world.member, live_world.acme
    workspace, _token = workspace_services.workspace_create(actor=bob, organization=acme, name="dev")
    write_skill(tmp_path, "alpha", "The first workspace skill.", "# Alpha\n\nStep one.\n")
    first = push(workspace, tmp_path)

    page = signed_in(browsing, "bob")
    chat = start_chat(page, workspace="dev")
    expect(page.locator(".chat-meta")).to_contain_text("workspace dev")
    expect(page.get_by_role("note")).to_have_count(0)
    composer = page.locator(COMPOSER)
    composer.fill("hello")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".msg-assistant")).to_contain_text("I am the built-in offline demo")
    chat.refresh_from_db()
    assert chat.hydrated_at is not None and chat.pinned_snapshot_id == first.pk
    open_menu(page)
    expect(menu(page).get_by_role("group", name="Workspace skills").locator(".slash-alias")).to_have_text(["/alpha"])
    composer.press("Escape")
    composer.fill("")
    expect(page.get_by_role("button", name="Refresh context")).to_have_count(0)
    browsing.shot(page, "pinned")

    # A new skill in the workspace: without a reload, the next poll brings in the banner.
    page.evaluate("window.__switchboardMarker = 'still here'")
    write_skill(tmp_path, "beta", "The second workspace skill.", "# Beta\n\nStep two.\n")
    second = push(workspace, tmp_path)
    banner = page.locator("#chat-live .banner")
    expect(banner).to_be_visible(timeout=POLL_WAIT)
    expect(banner).to_contain_text("The workspace's files changed since this chat pinned its context.")
    assert page.evaluate("window.__switchboardMarker") == "still here", "the page reloaded instead of polling"
    # Still pinned to the first snapshot: the menu has no beta yet.
    open_menu(page)
    expect(menu(page).get_by_role("group", name="Workspace skills").locator(".slash-alias")).to_have_text(["/alpha"])
    composer.press("Escape")
    browsing.shot(page, "out-of-date")

    banner.get_by_role("button", name="Refresh context").click()
    expect(banner).to_have_count(0)
    chat.refresh_from_db()
    assert chat.pinned_snapshot_id == second.pk and not chat.out_of_date
    assert page.evaluate("window.__switchboardMarker") == "still here"
    open_menu(page)
    workspace_group = menu(page).get_by_role("group", name="Workspace skills")
    expect(workspace_group.locator(".slash-alias")).to_have_text(["/alpha", "/beta"])
    expect(workspace_group.get_by_role("option").last.locator("small")).to_have_text("The second workspace skill.")
    # With the transcript above it there is room: the menu sits above the composer, as the stylesheet places it.
    menu_box, composer_box = menu(page).bounding_box(), composer.bounding_box()
    assert menu_box and composer_box and 0 <= menu_box["y"] and menu_box["y"] + menu_box["height"] <= composer_box["y"]
    browsing.shot(page, "refreshed-menu")
    composer.press("Escape")

    # An MCP-only change is a new snapshot, but the chat's context did not change: no banner after a poll.
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tickets": {"command": "tickets-mcp", "args": ["--stdio"]}}}), encoding="utf-8"
    )
    third = push(workspace, tmp_path)
    assert third.version == second.version + 1 and not third.changes_context
    with page.expect_response(
        lambda r: r.request.method == "GET" and r.url.endswith(f"/agents/chats/{chat.pk}/"), timeout=POLL_WAIT
    ):
        pass
    page.wait_for_timeout(300)  # let htmx swap the polled fragment in
    expect(banner).to_have_count(0)
    chat.refresh_from_db()
    assert not chat.out_of_date and chat.pinned_snapshot_id == second.pk
    browsing.shot(page, "mcp-only-change")
    browsing.assert_no_console_errors()


# 3. A workspace that is still starting -------------------------------------------------------------------------------


def test_it_notes_that_the_workspace_is_still_starting(browsing, live_world):
    workspace_services.workspace_create(actor=live_world.member, organization=live_world.acme, name="fresh")
    page = signed_in(browsing, "bob")
    start_chat(page, workspace="fresh")
    note = page.locator("#chat-live").get_by_role("note")
    expect(note).to_contain_text(STARTING_NOTE)
    expect(page.get_by_role("button", name="Refresh context")).to_have_count(0)
    browsing.shot(page, "starting")
    # The menu says so too, and has no workspace group.
    open_menu(page)
    expect(menu(page).locator(".slash-note")).to_contain_text(STARTING_NOTE)
    expect(menu(page).get_by_role("group", name="Workspace skills")).to_have_count(0)
    expect(menu(page).get_by_role("option").first).to_have_text("No skills available")
    browsing.shot(page, "starting-menu")
    page.locator(COMPOSER).press("Escape")
    expect_closed(page)
    browsing.assert_no_console_errors()


# 4. No running turn: no Stop, the composer is usable, Ctrl+Enter sends --------------------------------------------


def test_it_offers_no_stop_without_a_running_turn_and_sends_with_ctrl_enter(browsing, live_world):
    page = signed_in(browsing, "bob")
    chat = start_chat(page)
    composer = page.locator(COMPOSER)
    expect(page.get_by_role("button", name="Stop")).to_have_count(0)
    expect(page.locator("#chat-live .running")).to_have_count(0)
    expect(composer).to_be_enabled()
    expect(composer).to_be_editable()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    expect(page.get_by_role("list", name="Conversation")).to_contain_text("Type / to pick one of your skills.")
    browsing.shot(page, "empty")

    composer.fill("what can you do?")
    composer.press("Control+Enter")
    expect(page.locator(".msg-assistant")).to_contain_text("No skills are available to this chat yet")
    expect(composer).to_have_value("")
    assert chat.turns.get().status == TurnStatus.DONE
    expect(page.get_by_role("button", name="Stop")).to_have_count(0)
    expect(composer).to_be_enabled()
    browsing.shot(page, "answered")
    browsing.assert_no_console_errors()
