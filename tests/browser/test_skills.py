"""Skills in a real browser: Admin settings → Skills (add with live validation, share, turn off; the auditor's
read-only view), Settings → Skills (From your organizations, personal skills), and the row menu by keyboard.

Data is set up through the real services; every page visited is screenshotted, and each test asserts that no page
logged a console error or threw (a Content-Security-Policy violation shows up as one).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from organizations import services as org_services
from organizations.models import AuditEvent, OrgGroup
from skills import services
from skills.models import OrganizationSkill, PersonalSkill
from skills.selectors import skills_usable_by

pytestmark = pytest.mark.browser

MAIN_NAV = "nav[aria-label=Main] a"
ADMIN_SIDEBAR = "nav[aria-label='Admin settings'] a"
SETTINGS_SIDEBAR = "nav[aria-label=Settings] a"
ORG_SKILLS = "/ai/settings/skills?org=acme"
KEBAB_ERROR = "name must be kebab-case"


def skill_md(name: str, description: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


RELEASE_NOTES = skill_md(
    "release-notes",
    "Drafts release notes from merged pull requests.",
    "# Release notes\n\n1. List the merged pull requests.\n2. Group them by **area**.\n\nUse `git log` to start.\n",
)
DEPLOY_CHECKLIST = skill_md(
    "deploy-checklist",
    "Walks through the production deploy checklist.",
    "# Deploy checklist\n\n- Check the **staging** dashboard.\n- Announce the deploy in the channel.\n",
)
INCIDENT_REVIEW = skill_md(
    "incident-review", "Writes a blameless incident review.", "# Incident review\n\nTimeline first.\n"
)
FINANCE_CLOSE = skill_md("finance-close", "Month-end close steps for finance.", "# Finance close\n\nReconcile.\n")
SNIPPETS = skill_md(
    "my-snippets",
    "Bob's own code snippets for reviews.",
    "# My snippets\n\n> Prefer small pull requests.\n\n- Run `make test` before pushing.\n",
)


def set_marker(page) -> None:
    """A value on ``window`` that survives an in-place HTMX swap and disappears on a full page load."""
    page.evaluate("window.__switchboardMarker = 'still here'")


def marker(page):
    return page.evaluate("window.__switchboardMarker")


def signed_in(browsing, username: str):
    page = browsing.new_page()
    browsing.sign_in(page, username)
    expect(page).to_have_url(re.compile(r"/agents/$"))
    return page


def row(page, name: str, scope: str = "main"):
    return page.locator(f"{scope} table tbody tr").filter(has=page.locator("code", has_text=re.compile(f"^{name}$")))


def heading(page):
    """The page's title (a rendered body's own ``#`` heading is shifted down to an h2, so the page keeps one h1)."""
    return page.locator("main h1").first


def replace_content(page, text: str) -> None:
    """Replace the editor's whole text: clear it, then fill it (each fires the input event htmx validates on)."""
    textarea = page.get_by_label("SKILL.md")
    textarea.fill("")
    textarea.fill(text)


def share_only_with(actor, skill: OrganizationSkill, group: OrgGroup) -> None:
    everyone = OrgGroup.objects.get(organization=skill.organization, is_everyone=True)
    services.organization_skill_set_acl(
        actor=actor, skill=skill, group_roles={str(everyone.pk): "", str(group.pk): services.ACL_ROLE}
    )


@pytest.fixture
def platform(live_world) -> OrgGroup:
    """A group of acme with bob in it."""
    group = org_services.group_create(actor=live_world.org_admin, organization=live_world.acme, name="Platform")
    org_services.group_add_member(actor=live_world.org_admin, group=group, user=live_world.member)
    return group


# 1. An admin adds, shares and turns off an organization skill --------------------------------------------------------


def test_it_lets_an_admin_add_share_and_turn_off_an_organization_skill(browsing, live_world, platform):
    page = signed_in(browsing, "alice")

    page.locator(MAIN_NAV).filter(has_text="Admin settings").click()
    page.locator(ADMIN_SIDEBAR).filter(has_text="Skills").click()
    expect(heading(page)).to_have_text("Skills")
    expect(page.locator(ADMIN_SIDEBAR).filter(has_text="Skills")).to_have_attribute("aria-current", "page")
    expect(page.locator("main table tbody")).to_contain_text("No skills yet.")
    browsing.shot(page, "empty-list")

    page.get_by_role("link", name="Add skill").click()
    expect(heading(page)).to_have_text("Add a skill to Acme Labs")
    validation = page.locator("#skill-validation")
    expect(page.get_by_label("SKILL.md")).to_have_value(re.compile(r"^---\nname: my-skill\n"))
    expect(validation.locator(".ok-line")).to_have_text("✓ Valid skill my-skill")
    browsing.shot(page, "editor-template")

    # An invalid name: the error appears while typing, before any save.
    set_marker(page)
    replace_content(page, RELEASE_NOTES.replace("name: release-notes", "name: Release_Notes"))
    expect(validation.locator(".form-errors")).to_contain_text(KEBAB_ERROR)
    expect(validation.locator(".ok-line")).to_have_count(0)
    assert marker(page) == "still here", "validation reloaded the page instead of swapping the panel"
    assert not OrganizationSkill.objects.exists()
    browsing.shot(page, "editor-invalid-name")

    # Saving it anyway is refused by the server, which keeps the text.
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("alert")).to_contain_text("Invalid skill name.")
    expect(page.get_by_label("SKILL.md")).to_have_value(re.compile("name: Release_Notes"))
    expect(validation.locator(".form-errors")).to_contain_text(KEBAB_ERROR)
    browsing.expect_error_status("/ai/settings/skills/new?org=acme", 400)
    assert not OrganizationSkill.objects.exists()
    browsing.shot(page, "editor-refused")

    # Fixed: valid, with a rendered preview of the body.
    set_marker(page)
    replace_content(page, RELEASE_NOTES)
    expect(validation.locator(".ok-line")).to_have_text("✓ Valid skill release-notes")
    expect(validation.locator(".form-errors")).to_have_count(0)
    preview = validation.locator(".markdown")
    expect(validation.get_by_role("heading", name="Preview")).to_be_visible()
    expect(preview.get_by_role("heading", level=2)).to_have_text("Release notes")
    expect(preview.locator("ol li")).to_have_count(2)
    expect(preview.locator("strong")).to_have_text("area")
    expect(preview.locator("code")).to_have_text("git log")
    assert marker(page) == "still here"
    browsing.shot(page, "editor-valid")

    page.get_by_role("button", name="Save").click()
    expect(page).to_have_url(re.compile(r"/ai/settings/skills\?org=acme$"))
    expect(page.locator("#messages")).to_contain_text("Skill release-notes added and shared with Everyone.")
    skill_row = row(page, "release-notes")
    expect(skill_row).to_have_count(1)
    expect(skill_row.locator("td.description")).to_have_text("Drafts release notes from merged pull requests.")
    expect(skill_row.locator("td.acl .pill")).to_have_text(["Everyone"])
    switch = skill_row.get_by_role("switch", name="Enabled: release-notes")
    expect(switch).to_have_attribute("aria-checked", "true")
    expect(switch).to_have_text("On")
    skill = OrganizationSkill.objects.get(organization=live_world.acme, name="release-notes")
    assert skill.enabled
    assert skill.content.replace("\r\n", "\n") == RELEASE_NOTES  # a form post sends a textarea's text with CRLF
    browsing.shot(page, "list-added")

    # Row menu → Manage permissions.
    menu = skill_row.locator("details.menu")
    skill_row.get_by_label("Actions for release-notes").click()
    expect(menu).to_have_attribute("open", "")
    expect(menu.get_by_role("link")).to_have_text(["View", "Edit", "Download", "Manage permissions", "Delete"])
    browsing.shot(page, "row-menu")
    menu.get_by_role("link", name="Manage permissions").click()
    expect(heading(page)).to_have_text("Skill permissions: release-notes")
    entries = page.locator("main table tbody tr")
    expect(entries).to_have_count(1)
    expect(entries.first).to_contain_text("Everyone")
    expect(entries.first).to_contain_text("Use")
    browsing.shot(page, "permissions")

    entries.filter(has_text="Everyone").get_by_role("button", name="Remove").click()
    expect(page.locator("#messages")).to_contain_text("Permissions updated.")
    expect(entries).to_have_count(1)
    expect(entries.first).to_contain_text("Nobody is on the list")
    assert list(skills_usable_by(live_world.member, live_world.acme)) == []
    browsing.shot(page, "permissions-nobody")

    page.get_by_label("Add a group").select_option(label="Platform")
    page.get_by_role("button", name="Add group").click()
    expect(page.locator("#messages")).to_contain_text("Permissions updated.")
    expect(entries).to_have_count(1)
    expect(entries.first).to_contain_text("Platform")
    expect(entries.first.locator(".pill")).to_have_text("group")
    # Everyone can be added back; Platform is no longer offered.
    expect(page.get_by_label("Add a group").locator("option")).to_have_text(["Everyone"])
    assert [s.name for s in skills_usable_by(live_world.member, live_world.acme)] == ["release-notes"]
    browsing.shot(page, "permissions-platform")

    # Back on the list: the new list, and the switch turns the skill off in place.
    page.get_by_role("link", name="Skills of Acme Labs").click()
    expect(page).to_have_url(re.compile(r"/ai/settings/skills\?org=acme$"))
    skill_row = row(page, "release-notes")
    expect(skill_row.locator("td.acl .pill")).to_have_text(["Platform"])
    set_marker(page)
    skill_row.get_by_role("switch", name="Enabled: release-notes").click()
    switch = row(page, "release-notes").get_by_role("switch", name="Enabled: release-notes")
    expect(switch).to_have_attribute("aria-checked", "false")
    expect(switch).to_have_text("Off")
    assert marker(page) == "still here", "the switch reloaded the whole page instead of swapping the table"
    skill.refresh_from_db()
    assert not skill.enabled
    browsing.shot(page, "list-turned-off")

    page.reload()
    assert marker(page) is None
    switch = row(page, "release-notes").get_by_role("switch", name="Enabled: release-notes")
    expect(switch).to_have_attribute("aria-checked", "false")
    expect(switch).to_have_text("Off")
    browsing.shot(page, "list-reloaded")

    browsing.assert_no_console_errors()


# 2. The auditor's read-only view -------------------------------------------------------------------------------------


def test_it_shows_the_auditor_organization_skills_read_only(browsing, live_world):
    services.organization_skill_create(actor=live_world.org_admin, organization=live_world.acme, content=RELEASE_NOTES)
    services.organization_skill_create(
        actor=live_world.org_admin, organization=live_world.acme, content=INCIDENT_REVIEW, enabled=False
    )
    page = signed_in(browsing, "audrey")

    page.locator(MAIN_NAV).filter(has_text="Admin settings").click()
    page.locator(ADMIN_SIDEBAR).filter(has_text="Skills").click()
    expect(heading(page)).to_have_text("Skills")
    expect(page.locator("main table tbody tr")).to_have_count(2)
    expect(page.get_by_role("switch")).to_have_count(0)
    expect(page.get_by_role("link", name="Add skill")).to_have_count(0)
    expect(page.locator("main form[method=post]")).to_have_count(0)
    expect(row(page, "release-notes").get_by_role("img", name="Enabled")).to_have_text("✓")
    expect(row(page, "incident-review").get_by_role("img", name="Disabled")).to_have_text("✗")
    expect(row(page, "release-notes").locator("td.acl")).to_have_text("Everyone")
    browsing.shot(page, "list")

    skill_row = row(page, "release-notes")
    skill_row.get_by_label("Actions for release-notes").click()
    menu = skill_row.locator("details.menu")
    expect(menu.get_by_role("link")).to_have_text(["View", "Download", "Permissions"])
    expect(menu.get_by_role("link", name="Edit")).to_have_count(0)
    expect(menu.get_by_role("link", name="Delete")).to_have_count(0)
    browsing.shot(page, "row-menu")

    # View opens a read-only dialog over the list; Escape closes it and gives focus back to the row menu.
    menu.get_by_role("link", name="View").click()
    dialog = page.locator("dialog#skill-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#skill-name")).to_have_text("release-notes")
    expect(dialog.locator("dl.facts")).to_contain_text("Drafts release notes from merged pull requests.")
    expect(dialog.locator(".markdown").get_by_role("heading", level=2)).to_have_text("Release notes")
    expect(page).to_have_url(re.compile(r"/ai/settings/skills(\?org=acme)?$"))  # still the list
    browsing.shot(page, "view-dialog")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(skill_row.get_by_label("Actions for release-notes")).to_be_focused()

    # Without the dialog (a link opened directly, or no JavaScript) View is a page of its own.
    page.goto("/ai/settings/skills/release-notes/view?org=acme")
    expect(heading(page)).to_have_text("release-notes")
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text("Drafts release notes from merged pull requests.")
    expect(facts).to_contain_text("Acme Labs")
    body = page.locator("article .markdown")
    expect(body.get_by_role("heading", level=2)).to_have_text("Release notes")
    expect(body.locator("ol li")).to_have_count(2)
    expect(body).not_to_contain_text("description:")  # the frontmatter is not part of the body
    expect(page.locator("main textarea")).to_have_count(0)
    expect(page.locator("main form[method=post]")).to_have_count(0)
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)
    browsing.shot(page, "view")

    # The permission list is read-only too.
    page.goto("/ai/settings/skills/release-notes/permissions?org=acme")
    expect(heading(page)).to_have_text("Skill permissions: release-notes")
    expect(page.locator("main table tbody")).to_contain_text("Everyone")
    expect(page.get_by_role("button", name="Remove")).to_have_count(0)
    expect(page.locator("main select")).to_have_count(0)
    browsing.shot(page, "permissions")

    browsing.assert_no_console_errors()


# 3. A member's From your organizations -------------------------------------------------------------------------------


def test_it_shows_a_member_the_organization_skills_shared_with_him(browsing, live_world, platform):
    acme, alice = live_world.acme, live_world.org_admin
    services.organization_skill_create(actor=alice, organization=acme, content=RELEASE_NOTES)
    deploy = services.organization_skill_create(actor=alice, organization=acme, content=DEPLOY_CHECKLIST)
    share_only_with(alice, deploy, platform)
    services.organization_skill_create(actor=alice, organization=acme, content=INCIDENT_REVIEW, enabled=False)
    finance = org_services.group_create(actor=alice, organization=acme, name="Finance")
    share_only_with(
        alice, services.organization_skill_create(actor=alice, organization=acme, content=FINANCE_CLOSE), finance
    )

    page = signed_in(browsing, "bob")
    page.locator(MAIN_NAV).filter(has_text="Settings").click()
    page.locator(SETTINGS_SIDEBAR).filter(has_text="Skills").click()
    expect(page).to_have_url(re.compile(r"/settings/skills/$"))
    expect(heading(page)).to_have_text("Skills")
    expect(page.locator(SETTINGS_SIDEBAR).filter(has_text="Skills")).to_have_attribute("aria-current", "page")
    expect(page.locator("#skill-table tbody")).to_contain_text("No personal skills yet.")
    shared = page.locator("section.shared")
    expect(shared.get_by_role("heading", name="From your organizations")).to_be_visible()
    expect(shared).to_contain_text("Skills Acme Labs shares with you.")
    expect(shared.locator("tbody tr code")).to_have_text(["deploy-checklist", "release-notes"])
    expect(shared.get_by_role("switch")).to_have_count(0)
    browsing.shot(page, "settings-skills")

    # Download from the list.
    with page.expect_download() as info:
        row(page, "deploy-checklist", "section.shared").get_by_role("link", name="Download").click()
    download = info.value
    assert download.suggested_filename == "deploy-checklist-SKILL.md"
    assert Path(download.path()).read_text(encoding="utf-8") == DEPLOY_CHECKLIST

    # View: name, description, rendered body; and download from there.
    view_link = row(page, "deploy-checklist", "section.shared").get_by_role("link", name="View")
    view_link.click()
    dialog = page.locator("dialog#skill-dialog")
    expect(dialog.locator("#skill-name")).to_have_text("deploy-checklist")
    browsing.shot(page, "view-dialog")
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_have_count(0)
    expect(view_link).to_be_focused()
    page.goto("/settings/skills/org/acme/deploy-checklist/view")
    expect(heading(page)).to_have_text("deploy-checklist")
    expect(page.locator("dl.facts")).to_contain_text("Walks through the production deploy checklist.")
    body = page.locator("article .markdown")
    expect(body.get_by_role("heading", level=2)).to_have_text("Deploy checklist")
    expect(body.locator("ul li")).to_have_count(2)
    expect(body.locator("strong")).to_have_text("staging")
    expect(page.locator("main form[method=post]")).to_have_count(0)
    browsing.shot(page, "view")
    with page.expect_download() as info:
        page.get_by_role("link", name="Download SKILL.md").click()
    assert info.value.suggested_filename == "deploy-checklist-SKILL.md"
    assert Path(info.value.path()).read_text(encoding="utf-8") == DEPLOY_CHECKLIST

    page.get_by_role("link", name="Back to skills").click()
    expect(page).to_have_url(re.compile(r"/settings/skills/\?org=acme$"))
    expect(page.locator("section.shared tbody tr code")).to_have_text(["deploy-checklist", "release-notes"])

    # Neither the turned-off skill nor the one shared with another group opens through the address bar.
    for name in ("incident-review", "finance-close"):
        url = f"/settings/skills/org/acme/{name}"
        response = page.goto(url)
        assert response.status == 404, f"{url} answered {response.status}"
        browsing.expect_error_status(url, 404)
    browsing.shot(page, "hidden-skill-not-found")

    browsing.assert_no_console_errors()


# 4. A member's personal skill ----------------------------------------------------------------------------------------


def test_it_lets_a_member_add_toggle_download_and_delete_a_personal_skill(browsing, live_world):
    page = signed_in(browsing, "bob")
    page.goto("/settings/skills/")
    expect(page.locator("section.shared")).to_have_count(0)  # acme has no skills: no section at all
    page.get_by_role("link", name="Add skill").click()
    expect(heading(page)).to_have_text("Add a personal skill")
    expect(page.locator(SETTINGS_SIDEBAR).filter(has_text="Skills")).to_have_attribute("aria-current", "page")
    validation = page.locator("#skill-validation")

    replace_content(page, SNIPPETS.replace("description: Bob's own code snippets for reviews.\n", ""))
    expect(validation.locator(".form-errors")).to_contain_text("frontmatter missing required 'description' field")
    browsing.shot(page, "editor-invalid")

    replace_content(page, SNIPPETS)
    expect(validation.locator(".ok-line")).to_have_text("✓ Valid skill my-snippets")
    expect(validation.locator(".markdown blockquote")).to_contain_text("Prefer small pull requests.")
    expect(validation.locator(".markdown code")).to_have_text("make test")
    browsing.shot(page, "editor-valid")

    page.get_by_role("button", name="Save").click()
    expect(page).to_have_url(re.compile(r"/settings/skills/$"))
    expect(page.locator("#messages")).to_contain_text("Skill my-snippets added.")
    skill_row = row(page, "my-snippets", "#skill-table")
    expect(skill_row.locator("td.description")).to_have_text("Bob's own code snippets for reviews.")
    switch = skill_row.get_by_role("switch", name="Enabled: my-snippets")
    expect(switch).to_have_attribute("aria-checked", "true")
    browsing.shot(page, "list-added")

    set_marker(page)
    switch.click()
    switch = row(page, "my-snippets", "#skill-table").get_by_role("switch", name="Enabled: my-snippets")
    expect(switch).to_have_attribute("aria-checked", "false")
    expect(switch).to_have_text("Off")
    assert not PersonalSkill.objects.get(owner=live_world.member, name="my-snippets").enabled
    browsing.shot(page, "list-off")
    switch.click()
    expect(switch).to_have_attribute("aria-checked", "true")
    expect(switch).to_have_text("On")
    assert marker(page) == "still here", "the switch reloaded the whole page instead of swapping the table"
    assert PersonalSkill.objects.get(owner=live_world.member, name="my-snippets").enabled
    page.reload()
    expect(row(page, "my-snippets", "#skill-table").get_by_role("switch")).to_have_attribute("aria-checked", "true")

    with page.expect_download() as info:
        row(page, "my-snippets", "#skill-table").get_by_role("link", name="Download").click()
    assert info.value.suggested_filename == "my-snippets-SKILL.md"
    assert Path(info.value.path()).read_text(encoding="utf-8") == SNIPPETS

    row(page, "my-snippets", "#skill-table").get_by_role("link", name="Delete").click()
    expect(page).to_have_url(re.compile(r"/settings/skills/my-snippets/delete$"))
    expect(heading(page)).to_have_text("Delete the skill my-snippets?")
    browsing.shot(page, "delete-confirm")
    page.get_by_role("button", name="Delete skill").click()
    expect(page).to_have_url(re.compile(r"/settings/skills/$"))
    expect(page.locator("#messages")).to_contain_text("Skill my-snippets deleted.")
    expect(page.locator("#skill-table tbody")).to_contain_text("No personal skills yet.")
    assert not PersonalSkill.objects.filter(owner=live_world.member).exists()
    browsing.shot(page, "list-deleted")

    browsing.assert_no_console_errors()


# 5. Keyboard access --------------------------------------------------------------------------------------------------


def test_it_opens_the_row_menu_and_reaches_its_links_with_the_keyboard(browsing, live_world):
    services.organization_skill_create(actor=live_world.org_admin, organization=live_world.acme, content=RELEASE_NOTES)
    page = signed_in(browsing, "alice")
    page.goto(ORG_SKILLS)

    skill_row = row(page, "release-notes")
    menu = skill_row.locator("details.menu")
    summary = skill_row.get_by_label("Actions for release-notes")
    summary.focus()
    expect(summary).to_be_focused()
    expect(menu).not_to_have_attribute("open", "")
    page.keyboard.press("Enter")
    expect(menu).to_have_attribute("open", "")
    browsing.shot(page, "menu-open")

    for name in ["View", "Edit", "Download", "Manage permissions", "Delete"]:
        page.keyboard.press("Tab")
        expect(menu.get_by_role("link", name=name)).to_be_focused()
    browsing.shot(page, "menu-last-link-focused")

    # Back to Manage permissions and follow it with Enter.
    page.keyboard.press("Shift+Tab")
    expect(menu.get_by_role("link", name="Manage permissions")).to_be_focused()
    page.keyboard.press("Enter")
    expect(heading(page)).to_have_text("Skill permissions: release-notes")

    # Enter on the summary closes the menu again.
    page.go_back()
    summary = row(page, "release-notes").get_by_label("Actions for release-notes")
    summary.focus()
    page.keyboard.press("Enter")
    expect(row(page, "release-notes").locator("details.menu")).to_have_attribute("open", "")
    page.keyboard.press("Enter")
    expect(row(page, "release-notes").locator("details.menu")).not_to_have_attribute("open", "")

    browsing.assert_no_console_errors()


# 6. Regressions: the clipped row menu, CRLF saves, focus after a switch -----------------------------------------


def covers_its_own_center(locator) -> bool:
    """True when a click at the element's center lands on it: it is not clipped or covered by something else.

    No scrolling first: Playwright's scroll-into-view (before a click or on focus) scrolls even an overflow:hidden
    box, which a person cannot do, so Playwright's own clicks reach links that people cannot see."""
    return locator.evaluate(
        """el => {
            const r = el.getBoundingClientRect();
            return el.contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2));
        }"""
    )


def test_it_shows_the_whole_row_menu_of_the_last_row(browsing, live_world):
    services.organization_skill_create(actor=live_world.org_admin, organization=live_world.acme, content=RELEASE_NOTES)
    page = signed_in(browsing, "alice")
    page.goto(ORG_SKILLS)
    skill_row = row(page, "release-notes")
    skill_row.get_by_label("Actions for release-notes").click()
    browsing.shot(page, "menu-open")
    links = skill_row.locator("details.menu").get_by_role("link")
    expect(links).to_have_count(5)
    clipped = [link.inner_text() for link in links.all() if not covers_its_own_center(link)]
    assert clipped == [], f"row menu entries hidden under the table's edge: {clipped}"
    browsing.assert_no_console_errors()


def test_it_leaves_a_skill_unchanged_when_saved_without_edits(browsing, live_world):
    skill = services.organization_skill_create(
        actor=live_world.org_admin, organization=live_world.acme, content=RELEASE_NOTES
    )
    page = signed_in(browsing, "alice")
    page.goto("/ai/settings/skills/release-notes/edit?org=acme")
    expect(heading(page)).to_have_text("Edit release-notes")
    browsing.shot(page, "editor")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#messages")).to_contain_text("Skill release-notes saved.")
    browsing.assert_no_console_errors()
    skill.refresh_from_db()
    assert (skill.revision, skill.content) == (1, RELEASE_NOTES)
    assert not AuditEvent.objects.filter(action="organization_skill.update").exists()


def test_it_keeps_keyboard_focus_on_the_switch_after_toggling(browsing, live_world):
    services.organization_skill_create(actor=live_world.org_admin, organization=live_world.acme, content=RELEASE_NOTES)
    page = signed_in(browsing, "alice")
    page.goto(ORG_SKILLS)
    page.get_by_role("switch", name="Enabled: release-notes").focus()
    page.keyboard.press("Space")
    switch = page.get_by_role("switch", name="Enabled: release-notes")
    expect(switch).to_have_attribute("aria-checked", "false")
    browsing.assert_no_console_errors()
    expect(switch).to_be_focused(timeout=1_000)
