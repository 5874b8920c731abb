"""The application shell in a real browser: signing in and out, navigation by role, the audit log's HTMX filters
(with and without JavaScript), read-only pages for auditors, and personal API tokens.

Each test also asserts that no page it visited logged a console error or threw (the Content-Security-Policy
forbids inline scripts, and a violation shows up as a console error).
"""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import PermissionDenied
from playwright.sync_api import expect

from organizations import access, services
from organizations.models import AuditEvent, Membership, Outcome
from organizations.permissions import ORGANIZATION_MANAGE
from tests.conftest import PASSWORD

pytestmark = pytest.mark.browser

ADMIN_SIDEBAR = ["Organizations", "Members", "Groups", "Roles", "Skills", "MCP servers", "Audit log"]
MAIN_NAV = "nav[aria-label=Main] a"
WRONG_CREDENTIALS = "That username or email and password do not match an account."


def nav_links(page) -> list[str]:
    return [text.strip() for text in page.locator(MAIN_NAV).all_inner_texts()]


def set_marker(page) -> None:
    """A value on ``window`` that survives an in-place HTMX swap and disappears on a full page load."""
    page.evaluate("window.__switchboardMarker = 'still here'")


def marker(page):
    return page.evaluate("window.__switchboardMarker")


# 1. Navigation by role -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("persona", "admin"),
    [("site_owner", True), ("org_admin", True), ("auditor", True), ("member", False), ("outsider", True)],
)
def test_it_shows_the_navigation_each_role_allows(browsing, live_world, persona, admin):
    user = live_world.user(persona)
    page = browsing.new_page()

    browsing.sign_in(page, user.username, shot="sign-in")
    expect(page).to_have_url(re.compile(r"/agents/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Agents")
    browsing.shot(page, "agents")

    expected = ["Agents", "Workspaces", "Settings", "Admin settings"] if admin else ["Agents", "Workspaces", "Settings"]
    assert nav_links(page) == expected
    expect(page.locator(MAIN_NAV).filter(has_text="Agents")).to_have_attribute("aria-current", "page")

    if not admin:
        # No link, and no way in through the address bar either: the same 404 as for something missing.
        response = page.goto("/ai/settings/members?org=acme")
        assert response.status == 404
        expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
        browsing.shot(page, "members-not-found")
        browsing.expect_error_status("/ai/settings/members?org=acme", 404)
        browsing.assert_no_console_errors()
        return

    page.locator(MAIN_NAV).filter(has_text="Admin settings").click()
    expect(page).to_have_url(re.compile(r"/ai/settings/organizations$"))
    expect(page.locator(MAIN_NAV).filter(has_text="Admin settings")).to_have_attribute("aria-current", "page")
    sidebar = page.locator("nav[aria-label='Admin settings'] a")
    # Site owners also configure the model providers.
    wanted = ADMIN_SIDEBAR[:-1] + ["Providers", "Audit log"] if persona == "site_owner" else ADMIN_SIDEBAR
    assert [t.strip() for t in sidebar.all_inner_texts()] == wanted
    browsing.shot(page, "organizations")

    for entry in wanted[1:]:
        sidebar.filter(has_text=entry).click()
        heading = "Model providers" if entry == "Providers" else entry
        expect(page.get_by_role("heading", level=1)).to_have_text(heading)
        expect(sidebar.filter(has_text=entry)).to_have_attribute("aria-current", "page")
        assert nav_links(page) == expected
        browsing.shot(page, entry.lower().replace(" ", "-"))

    browsing.assert_no_console_errors()


# 2. Signing in and out -----------------------------------------------------------------------------------------------


def test_it_signs_in_with_an_email_address_and_signs_out(browsing, live_world):
    page = browsing.new_page()

    browsing.sign_in(page, "bob@example.test", shot="sign-in")
    expect(page).to_have_url(re.compile(r"/agents/$"))
    expect(page.locator(".account .who")).to_have_text("bob")
    browsing.shot(page, "agents")

    page.locator(".account").get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/login/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    assert page.locator(MAIN_NAV).count() == 0
    browsing.shot(page, "signed-out")

    # Signed out for real: a private page sends us back to sign in.
    page.goto("/agents/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/agents/$"))

    browsing.assert_no_console_errors()


def test_it_refuses_a_wrong_password_and_stays_on_the_sign_in_page(browsing, live_world):
    page = browsing.new_page()

    browsing.sign_in(page, "bob", "not the password")
    expect(page.get_by_role("alert")).to_have_text(WRONG_CREDENTIALS)
    expect(page).to_have_url(re.compile(r"/login/$"))
    expect(page.get_by_label("Username or email")).to_have_value("bob")
    expect(page.get_by_label("Password")).to_have_value("")
    assert page.locator(MAIN_NAV).count() == 0
    browsing.shot(page, "wrong-password")

    # The form still works after the error.
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/agents/$"))

    browsing.expect_error_status("/login/", 400)
    browsing.assert_no_console_errors()


# 3. Audit log filters ------------------------------------------------------------------------------------------------


@pytest.fixture
def audited(live_world):
    """A few acme events: two groups created by alice, two refused attempts by the auditor."""
    services.group_create(actor=live_world.org_admin, organization=live_world.acme, name="Engineering")
    services.group_create(actor=live_world.org_admin, organization=live_world.acme, name="Research")
    for action, resource_type in [("group.create", "group"), ("role.create", "custom_role")]:
        with pytest.raises(PermissionDenied):
            access.require(
                live_world.auditor, live_world.acme, ORGANIZATION_MANAGE, action=action, resource_type=resource_type
            )
    events = AuditEvent.objects.filter(organization=live_world.acme)
    denied = events.filter(outcome=Outcome.DENIED)
    assert denied.count() == 2 and events.exclude(outcome=Outcome.DENIED).count() >= 2
    return {"all": events.count(), "denied": denied.count()}


def assert_only_denied_rows(page, count: int) -> None:
    rows = page.locator("#audit-results tbody tr")
    expect(rows).to_have_count(count)
    for row in rows.all():
        expect(row).to_have_class(re.compile(r"\boutcome-denied\b"))
        expect(row).to_contain_text("audrey")
    expect(page.locator("#audit-results .exports")).to_contain_text(f"{count} events")


def test_it_filters_the_audit_log_in_place_and_keeps_the_filter_in_the_url(browsing, live_world, audited):
    page = browsing.new_page()
    browsing.sign_in(page, "alice")
    expect(page).to_have_url(re.compile(r"/agents/$"))

    page.goto("/ai/settings/audit-log?org=acme")
    rows = page.locator("#audit-results tbody tr")
    expect(rows).to_have_count(audited["all"])
    expect(page.locator("#audit-results tbody tr.outcome-success").first).to_be_visible()
    browsing.shot(page, "audit-log")

    set_marker(page)
    page.get_by_label("Outcome").select_option("denied")
    expect(page).to_have_url(re.compile(r"[?&]outcome=denied(&|$)"))
    assert_only_denied_rows(page, audited["denied"])
    assert marker(page) == "still here", "the filter reloaded the whole page instead of swapping the table"
    expect(page.get_by_label("Outcome")).to_have_value("denied")
    browsing.shot(page, "audit-log-denied")

    # The pushed URL renders the same filtered page on the server.
    page.reload()
    assert marker(page) is None
    expect(page.get_by_label("Outcome")).to_have_value("denied")
    expect(page.get_by_label("Organization")).to_have_value("acme")
    assert_only_denied_rows(page, audited["denied"])
    browsing.shot(page, "audit-log-denied-reloaded")

    # And back to every outcome, in place again.
    set_marker(page)
    page.get_by_label("Outcome").select_option("")
    expect(rows).to_have_count(audited["all"])
    expect(page).to_have_url(re.compile(r"[?&]outcome=(&|$)"))
    assert marker(page) == "still here"

    # The browser's Back button returns to the denied-only view (htmx restores its history snapshot).
    page.go_back()
    expect(page).to_have_url(re.compile(r"[?&]outcome=denied(&|$)"))
    expect(page.get_by_label("Outcome")).to_have_value("denied")
    assert_only_denied_rows(page, audited["denied"])

    browsing.assert_no_console_errors()


def test_it_filters_the_audit_log_without_javascript(browsing, live_world, audited):
    page = browsing.new_page(javascript=False)
    browsing.sign_in(page, "alice")
    expect(page).to_have_url(re.compile(r"/agents/$"))

    page.goto("/ai/settings/audit-log?org=acme")
    expect(page.locator("#audit-results tbody tr")).to_have_count(audited["all"])
    page.get_by_label("Outcome").select_option("denied")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"[?&]outcome=denied(&|$)"))
    expect(page.get_by_label("Outcome")).to_have_value("denied")
    assert_only_denied_rows(page, audited["denied"])
    browsing.shot(page, "audit-log-denied")

    browsing.assert_no_console_errors()


# 4. Read-only pages for the auditor ----------------------------------------------------------------------------------


def test_it_shows_the_auditor_members_and_groups_read_only_and_refuses_a_write(browsing, live_world):
    page = browsing.new_page()
    browsing.sign_in(page, "audrey")
    expect(page).to_have_url(re.compile(r"/agents/$"))

    page.goto("/ai/settings/members?org=acme")
    expect(page.get_by_role("heading", level=1)).to_have_text("Members")
    table = page.locator("table.table tbody")
    for username, role in [("alice", "Admin"), ("audrey", "Auditor"), ("bob", "Member")]:
        expect(table.locator("tr", has_text=username)).to_contain_text(role)
    assert page.get_by_role("heading", name="Add a member").count() == 0
    assert page.locator("main form[method=post]").count() == 0
    assert page.get_by_role("button", name="Remove").count() == 0
    assert page.get_by_role("link", name="Remove").count() == 0
    assert page.get_by_role("button", name="Save").count() == 0
    assert page.locator("main select").count() == 0
    browsing.shot(page, "members")

    page.goto("/ai/settings/groups?org=acme")
    expect(page.get_by_role("heading", level=1)).to_have_text("Groups")
    assert page.get_by_role("heading", name="New group").count() == 0
    assert page.locator("main form[method=post]").count() == 0
    browsing.shot(page, "groups")

    # A hand-made POST with a valid CSRF token is refused, changes nothing, and is audited as denied.
    token = page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")
    response = page.request.post(
        "/ai/settings/members?org=acme",
        form={"csrfmiddlewaretoken": token, "user": "gina", "role": "member"},
        max_redirects=0,
    )
    assert response.status == 403
    assert "permission" in response.text()
    assert not Membership.objects.filter(organization=live_world.acme, user=live_world.outsider).exists()
    assert AuditEvent.objects.filter(
        organization=live_world.acme, actor=live_world.auditor, action="member.add", outcome=Outcome.DENIED
    ).exists()

    browsing.assert_no_console_errors()


# 5. API tokens -------------------------------------------------------------------------------------------------------


def test_it_creates_an_api_token_in_place_and_shows_it_once(browsing, live_world, playwright_driver, live_server):
    page = browsing.new_page()
    browsing.sign_in(page, "bob")
    expect(page).to_have_url(re.compile(r"/agents/$"))

    page.locator(MAIN_NAV).filter(has_text="Settings").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Skills")  # Settings opens on Skills
    page.locator("nav[aria-label=Settings] a", has_text="API tokens").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("API tokens")
    expect(page.locator("nav[aria-label=Settings] a", has_text="API tokens")).to_have_attribute("aria-current", "page")
    browsing.shot(page, "api-tokens")

    set_marker(page)
    page.locator("#token-panel").get_by_label("Name").fill("ci")
    page.get_by_role("button", name="Create token").click()
    new_token = page.locator("#new-token")
    expect(new_token).to_be_visible()
    assert marker(page) == "still here", "creating a token reloaded the whole page instead of the panel"
    token = new_token.inner_text().strip()
    assert token
    expect(page.locator("#token-panel tbody tr", has_text="ci")).to_have_count(1)
    expect(page.locator("#token-panel").get_by_label("Name")).to_have_value("")
    browsing.shot(page, "api-tokens-created")

    page.reload()
    expect(page.locator("#new-token")).to_have_count(0)
    assert token not in page.content()
    row = page.locator("#token-panel tbody tr", has_text="ci")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("active")
    browsing.shot(page, "api-tokens-reloaded")

    # A clean request context: no session cookie, so only the token can authenticate.
    api = playwright_driver.request.new_context(base_url=live_server.url)
    try:
        me = api.get("/api/v2/users/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status == 200, me.text()
        assert me.json()["username"] == "bob"
        assert api.get("/api/v2/users/me").status == 401
        assert api.get("/api/v2/users/me", headers={"Authorization": f"Bearer {token}x"}).status == 401
    finally:
        api.dispose()

    browsing.assert_no_console_errors()


# 6. No console errors or CSP violations anywhere ---------------------------------------------------------------------


def test_it_logs_no_console_errors_on_any_page(browsing, live_world, audited):
    group = services.group_create(actor=live_world.org_admin, organization=live_world.acme, name="Ops")
    role = services.custom_role_create(
        actor=live_world.org_admin, organization=live_world.acme, name="Readers", perms=["audit_log:read"]
    )
    api_token, _ = services.api_token_create(user=live_world.site_owner, name="laptop")

    page = browsing.new_page()
    browsing.sign_in(page, "olivia")
    expect(page).to_have_url(re.compile(r"/agents/$"))

    pages = {
        "agents": "/agents/",
        "api-tokens": "/settings/tokens/",
        "profile": "/settings/profile/",
        "organizations": "/ai/settings/organizations",
        "members": "/ai/settings/members?org=acme",
        "member-remove": f"/ai/settings/members/{live_world.member.pk}/remove?org=acme",
        "groups": "/ai/settings/groups?org=acme",
        "group": f"/ai/settings/groups/{group.pk}",
        "group-delete": f"/ai/settings/groups/{group.pk}/delete",
        "roles": "/ai/settings/roles?org=acme",
        "role": f"/ai/settings/roles/{role.pk}",
        "role-delete": f"/ai/settings/roles/{role.pk}/delete",
        "audit-log": "/ai/settings/audit-log?org=acme",
        "audit-log-all": "/ai/settings/audit-log?org=*",
        "token-revoke": f"/settings/tokens/{api_token.pk}/revoke/",
    }
    for name, url in pages.items():
        response = page.goto(url)
        assert response.status == 200, f"{url} answered {response.status}"
        csp = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in csp, f"{url} has no strict CSP: {csp!r}"
        expect(page.locator("html.js")).to_have_count(1)  # our script ran (CSP allows 'self')
        browsing.shot(page, name)

    browsing.assert_no_console_errors()


def test_it_declares_a_favicon(browsing, live_world):
    page = browsing.new_page()
    page.goto("/login/")
    icons = page.locator("link[rel~=icon]")
    if icons.count():
        href = icons.first.get_attribute("href")
        assert href.startswith("data:") or page.request.get(href).ok, f"the declared icon {href} does not load"
    else:
        assert page.request.get("/favicon.ico").ok, "no <link rel=icon> and no /favicon.ico"
