"""Skill pages: Settings → Skills (personal skills, live validation, From your organizations) and
Admin settings → Skills (the table, the editor, Manage permissions, export, delete), with their query counts."""

from __future__ import annotations

import html
import io
import re
import zipfile
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from organizations import services as org_services
from organizations.models import AuditEvent, Organization, OrgGroup, Outcome, Role
from skills import selectors, services
from skills.models import OrganizationSkill, PersonalSkill

from ..conftest import make_user

HTMX = {"HX-Request": "true", "HX-Target": "skill-table"}


def md(name: str, description: str = "Helps with a thing.", body: str = "# Steps\n\nDo the thing.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


def org_skill(
    world,
    name: str,
    description: str = "Helps with a thing.",
    *,
    organization: Organization | None = None,
    enabled=True,
) -> OrganizationSkill:
    return services.organization_skill_create(
        actor=None, organization=organization or world.acme, content=md(name, description), enabled=enabled
    )


def everyone(organization: Organization) -> OrgGroup:
    return OrgGroup.objects.get(organization=organization, is_everyone=True)


def admin_url(name: str, *args, org: str = "acme") -> str:
    return reverse(name, args=args) + f"?org={org}"


def text(response) -> str:
    return response.content.decode()


def zip_entries(response) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        return {name: archive.read(name).decode() for name in archive.namelist()}


def denied(actor, action: str) -> AuditEvent | None:
    return AuditEvent.objects.filter(actor=actor, action=action, outcome=Outcome.DENIED).first()


class Elements(HTMLParser):
    """Every start tag with its attributes, to tell live HTML from escaped text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for t, attrs in self.tags if t == tag]


def select_options(html: str, select_id: str) -> list[str]:
    match = re.search(rf'<select id="{select_id}"[^>]*>(.*?)</select>', html, re.S)
    return re.findall(r"<option[^>]*>([^<(]+)", match.group(1)) if match else []


def shared_section(html: str) -> str:
    return html.split('id="shared-heading"', 1)[1] if 'id="shared-heading"' in html else ""


# Settings → Skills: personal skills ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", reverse("personal-skills")),
        ("get", reverse("personal-skill-new")),
        ("post", reverse("skill-validate")),
        ("get", reverse("personal-skills-export")),
        ("get", reverse("shared-skill", args=["acme", "x"])),
        ("get", reverse("org-skills") + "?org=acme"),
    ],
)
def test_it_sends_anonymous_visitors_to_sign_in(world, client_for, method, url):
    response = getattr(client_for("anonymous"), method)(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_it_shows_an_empty_personal_list(world, client_for):
    response = client_for("member").get(reverse("personal-skills"))
    body = text(response)
    assert response.status_code == 200
    assert "No personal skills yet." in body
    assert reverse("personal-skills-export") not in body
    assert 'id="shared-heading"' not in body


def test_it_lists_personal_skills_with_a_switch_and_links(world, client_for):
    services.personal_skill_create(user=world.member, content=md("code-review", "Reviews code."))
    services.personal_skill_create(user=world.member, content=md("quiet"), enabled=False)
    services.personal_skill_create(user=world.auditor, content=md("not-mine"))
    body = text(client_for("member").get(reverse("personal-skills")))
    assert "code-review" in body and "Reviews code." in body and "not-mine" not in body
    switches = [a for a in Elements(body).named("button") if a.get("role") == "switch"]
    assert [(a["aria-label"], a["aria-checked"]) for a in switches] == [
        ("Enabled: code-review", "true"),
        ("Enabled: quiet", "false"),
    ]
    for name in ("personal-skill-edit", "personal-skill-download", "personal-skill-delete"):
        assert reverse(name, args=["code-review"]) in body
    assert reverse("personal-skills-export") in body


def test_it_adds_a_personal_skill(world, client_for):
    client = client_for("member")
    form = client.get(reverse("personal-skill-new"))
    assert form.status_code == 200 and "name: my-skill" in text(form)
    content = md("from-the-form", "Made on the page.")
    response = client.post(reverse("personal-skill-new"), {"content": content})
    assert response.status_code == 302 and response["Location"] == reverse("personal-skills")
    skill = PersonalSkill.objects.get(owner=world.member)
    assert (skill.name, skill.content) == ("from-the-form", content)
    assert "Skill from-the-form added." in text(client.get(reverse("personal-skills")))


def test_it_keeps_the_text_and_shows_the_error_for_invalid_content(world, client_for):
    content = md("Not Valid", body="# Steps\n\nkeep-this-text-42 <b>bold</b>\n")
    response = client_for("member").post(reverse("personal-skill-new"), {"content": content})
    body = text(response)
    assert response.status_code == 400
    assert "Invalid skill name." in body
    assert "name: name must be kebab-case" in body
    textarea = re.search(r"<textarea[^>]*>(.*?)</textarea>", body, re.S).group(1)
    assert "keep-this-text-42 &lt;b&gt;bold&lt;/b&gt;" in textarea and "name: Not Valid" in textarea
    assert not PersonalSkill.objects.exists()


def test_it_answers_409_for_a_duplicate_and_for_the_101st_skill(world, client_for):
    client = client_for("member")
    services.personal_skill_create(user=world.member, content=md("twice"))
    response = client.post(reverse("personal-skill-new"), {"content": md("twice")})
    assert response.status_code == 409 and "A skill with that name already exists." in text(response)
    for i in range(99):
        services.personal_skill_create(user=world.member, content=md(f"s-{i}"), enabled=False)
    response = client.post(reverse("personal-skill-new"), {"content": md("one-more")})
    body = text(response)
    assert response.status_code == 409
    assert "Personal skill limit reached." in body and "Each user can have at most 100 personal skills." in body


def test_it_edits_a_personal_skill(world, client_for):
    services.personal_skill_create(user=world.member, content=md("editable"))
    client = client_for("member")
    url = reverse("personal-skill-edit", args=["editable"])
    assert "Helps with a thing." in text(client.get(url))
    response = client.post(url, {"content": md("editable", "Better now.")})
    assert response.status_code == 302
    skill = PersonalSkill.objects.get(name="editable")
    assert (skill.description, skill.revision) == ("Better now.", 2)
    # A browser sends the textarea with CRLF line ends: the same text saved again is no change.
    assert client.post(url, {"content": md("editable", "Better now.").replace("\n", "\r\n")}).status_code == 302
    assert PersonalSkill.objects.get(pk=skill.pk).revision == 2
    renamed = client.post(url, {"content": md("renamed")})
    assert renamed.status_code == 400
    assert "Skill name in path does not match frontmatter name." in text(renamed)
    assert "name: renamed" in text(renamed)
    assert PersonalSkill.objects.get(pk=skill.pk).revision == 2


def test_other_peoples_personal_skills_are_not_found(world, client_for):
    services.personal_skill_create(user=world.auditor, content=md("private"))
    client = client_for("member")
    for name in ("personal-skill-edit", "personal-skill-download", "personal-skill-delete"):
        assert client.get(reverse(name, args=["private"])).status_code == 404, name
    for name in ("personal-skill-edit", "personal-skill-enabled", "personal-skill-delete"):
        assert (
            client.post(reverse(name, args=["private"]), {"content": md("private"), "enabled": "false"}).status_code
            == 404
        )
    skill = PersonalSkill.objects.get(name="private")
    assert (skill.enabled, skill.revision) == (True, 1)


def test_it_toggles_a_personal_skill(world, client_for):
    services.personal_skill_create(user=world.member, content=md("toggled"))
    client = client_for("member")
    url = reverse("personal-skill-enabled", args=["toggled"])
    assert client.get(url).status_code == 405
    response = client.post(url, {"enabled": "false"})
    assert response.status_code == 302 and response["Location"] == reverse("personal-skills")
    assert PersonalSkill.objects.get(name="toggled").enabled is False
    assert "Skill toggled turned off." in text(client.get(reverse("personal-skills")))


def test_it_toggles_a_personal_skill_with_htmx_returning_only_the_table(world, client_for):
    services.personal_skill_create(user=world.member, content=md("toggled"))
    response = client_for("member").post(
        reverse("personal-skill-enabled", args=["toggled"]), {"enabled": "false"}, headers=HTMX
    )
    body = text(response)
    assert response.status_code == 200
    assert body.strip().startswith('<div id="skill-table">') and body.strip().endswith("</div>")
    assert "<html" not in body and 'id="personal-heading"' not in body
    assert 'aria-checked="false"' in body
    assert PersonalSkill.objects.get(name="toggled").enabled is False
    # The page itself asked for by htmx with that target gets the same partial.
    again = client_for("member").get(reverse("personal-skills"), headers=HTMX)
    assert text(again).strip().startswith('<div id="skill-table">')


def test_it_downloads_the_exact_skill_md(world, client_for):
    content = md("download-me", "Ünïcode description", "# Steps\n\nLine with trailing spaces   \n\n\n")
    services.personal_skill_create(user=world.member, content=content)
    response = client_for("member").get(reverse("personal-skill-download", args=["download-me"]))
    assert response.status_code == 200
    assert response.content == content.encode()
    assert response["Content-Disposition"] == 'attachment; filename="download-me-SKILL.md"'
    assert response["Content-Type"].startswith("text/markdown")


def test_it_exports_every_personal_skill_as_a_zip(world, client_for):
    contents = {name: md(name, f"About {name}.") for name in ("alpha", "beta", "gamma")}
    for name, content in contents.items():
        services.personal_skill_create(user=world.member, content=content, enabled=name != "beta")
    services.personal_skill_create(user=world.auditor, content=md("not-mine"))
    response = client_for("member").get(reverse("personal-skills-export"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="personal-skills.zip"'
    assert zip_entries(response) == {f"{name}/SKILL.md": content for name, content in contents.items()}
    assert client_for("member").post(reverse("personal-skills-export")).status_code == 405


def test_it_asks_before_deleting_a_personal_skill(world, client_for):
    services.personal_skill_create(user=world.member, content=md("doomed"))
    client = client_for("member")
    url = reverse("personal-skill-delete", args=["doomed"])
    confirm = client.get(url)
    assert confirm.status_code == 200 and "Delete the skill doomed?" in text(confirm)
    assert PersonalSkill.objects.filter(name="doomed").exists()
    response = client.post(url)
    assert response.status_code == 302 and response["Location"] == reverse("personal-skills")
    assert not PersonalSkill.objects.filter(name="doomed").exists()
    assert client.post(url).status_code == 404


# Live validation -----------------------------------------------------------------------------------------------------


def test_it_validates_live_with_errors_and_warnings(world, client_for):
    client = client_for("member")
    url = reverse("skill-validate")
    assert client.get(url).status_code == 405
    content = "---\nname: Bad Name\ndescription: Fine.\ncolour: blue\n---\n\n# Body\n"
    response = client.post(url, {"content": content})
    body = text(response)
    assert response.status_code == 200
    assert body.strip().startswith('<section id="skill-validation"') and "<html" not in body
    assert "Line 2: name: name must be kebab-case" in body
    assert "⚠ Line 4: colour: unknown frontmatter key &#x27;colour&#x27;" in body
    assert "Valid skill" not in body
    ok = text(client.post(url, {"content": md("good-one")}))
    assert "✓ Valid skill <code>good-one</code>" in ok and "form-errors" not in ok
    empty = text(client.post(url, {"content": md("no-body", body="")}))
    assert "body: Skill body is required" in empty and "Preview" not in empty
    assert not PersonalSkill.objects.exists() and not OrganizationSkill.objects.exists()


def test_the_live_preview_is_sanitized(world, client_for):
    body = (
        "# Title\n\n"
        '<script>alert("x")</script>\n\n'
        '<img src="x" onerror="alert(1)">\n\n'
        '<a href="javascript:alert(2)">raw link</a>\n\n'
        "[web](https://example.com/ok) [plain](http://example.com/p) [mail](mailto:someone@example.com) "
        "[js](javascript:alert(3)) [ftp](ftp://example.com/f) [data](data:text/html;base64,PHNjcmlwdD4=) "
        "[vb](vbscript:msgbox(1))\n\n"
        '![pic](javascript:alert(4) "t")\n'
    )
    response = client_for("member").post(reverse("skill-validate"), {"content": md("risky", body=body)})
    html = text(response)
    assert response.status_code == 200
    preview = html.split("<h2>Preview</h2>", 1)[1]
    elements = Elements(preview)
    assert not elements.named("script") and not elements.named("iframe")
    assert not [attrs for attrs in elements.named("img") if (attrs.get("src") or "").startswith("javascript")]
    assert not [a for _, attrs in elements.tags for a in attrs if a.lower().startswith("on")]
    assert "&lt;script&gt;" in preview and "&lt;img" in preview  # shown as text
    hrefs = [attrs.get("href") for attrs in elements.named("a")]
    assert [href for href in hrefs if href] == [
        "https://example.com/ok",
        "http://example.com/p",
        "mailto:someone@example.com",
    ]
    sources = [attrs.get("src") for attrs in elements.named("img")]
    assert all(src.split(":", 1)[0] in {"http", "https"} for src in sources if src)
    assert all("noopener" in (attrs.get("rel") or "") for attrs in elements.named("a") if attrs.get("href"))


def test_the_editor_preview_after_a_failed_save_is_sanitized_too(world, client_for):
    content = md("Bad Name", body='<script>alert("x")</script>\n\n[js](javascript:alert(1))\n')
    response = client_for("member").post(reverse("personal-skill-new"), {"content": content})
    html = text(response)
    assert response.status_code == 400
    scripts = Elements(html).named("script")
    assert scripts and all((s.get("src") or "").startswith("/static/") for s in scripts)
    assert 'href="javascript:' not in html


# Settings → Skills: From your organizations --------------------------------------------------------------------------


def test_the_section_is_absent_without_usable_skills(world, client_for):
    org_skill(world, "turned-off", enabled=False)
    hidden = org_skill(world, "hidden")
    services.organization_skill_set_acl(
        actor=world.org_admin, skill=hidden, group_roles={str(everyone(world.acme).pk): ""}
    )
    org_skill(world, "globex-skill", organization=world.globex)
    body = text(client_for("member").get(reverse("personal-skills")))
    assert 'id="shared-heading"' not in body and "From your organizations" not in body
    # An auditor may use every enabled skill, listed or not.
    body = text(client_for("auditor").get(reverse("personal-skills")))
    assert "hidden" in shared_section(body) and "turned-off" not in shared_section(body)


def test_one_organization_shows_its_skills_without_a_picker(world, client_for):
    org_skill(world, "shared-one", "Shared with everyone.")
    org_skill(world, "turned-off", enabled=False)
    section = shared_section(text(client_for("member").get(reverse("personal-skills"))))
    assert 'id="shared-org"' not in section
    assert "shared-one" in section and "Shared with everyone." in section and "turned-off" not in section
    assert reverse("shared-skill", args=["acme", "shared-one"]) in section
    assert reverse("shared-skill-download", args=["acme", "shared-one"]) in section
    assert reverse("shared-skills-export", args=["acme"]) in section
    assert 'role="switch"' not in section


def test_several_organizations_get_a_picker_starting_on_the_default_one(world, client_for):
    dave = make_user("dave")
    org_services.membership_add(actor=None, organization=world.acme, user=dave, role=Role.MEMBER)
    org_services.membership_add(actor=None, organization=world.globex, user=dave, role=Role.MEMBER)
    org_services.organization_create(actor=None, name="initech")  # no skills: never in the picker
    org_skill(world, "acme-skill")
    org_skill(world, "globex-skill", organization=world.globex)
    client = client_for("anonymous")
    client.force_login(dave)

    section = shared_section(text(client.get(reverse("personal-skills"))))
    assert select_options(section, "shared-org") == ["Acme Labs", "Globex"]
    assert '<option value="acme" selected>' in section
    assert "acme-skill" in section and "globex-skill" not in section

    section = shared_section(text(client.get(reverse("personal-skills") + "?org=globex")))
    assert '<option value="globex" selected>' in section
    assert "globex-skill" in section and "acme-skill" not in section

    org_services.user_set_default_organization(user=dave, organization=world.globex)
    section = shared_section(text(client.get(reverse("personal-skills"))))
    assert '<option value="globex" selected>' in section and "globex-skill" in section


def test_the_default_organization_without_usable_skills_is_skipped(world, client_for):
    dave = make_user("dave")
    org_services.membership_add(actor=None, organization=world.globex, user=dave, role=Role.MEMBER)
    org_services.membership_add(actor=None, organization=world.acme, user=dave, role=Role.MEMBER)
    assert dave.default_organization == world.globex
    org_skill(world, "acme-skill")
    client = client_for("anonymous")
    client.force_login(dave)
    section = shared_section(text(client.get(reverse("personal-skills"))))
    assert 'id="shared-org"' not in section and "acme-skill" in section


def test_it_shows_and_downloads_a_usable_skill(world, client_for):
    content = md("readable", "Read me.", "# Steps\n\nFollow **these** steps.\n\n<script>alert(1)</script>\n")
    services.organization_skill_create(actor=None, organization=world.acme, content=content)
    client = client_for("member")
    response = client.get(reverse("shared-skill", args=["acme", "readable"]))
    body = text(response)
    assert response.status_code == 200
    assert "readable" in body and "Read me." in body and "<strong>these</strong>" in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert reverse("shared-skill-download", args=["acme", "readable"]) in body
    download = client.get(reverse("shared-skill-download", args=["acme", "readable"]))
    assert download.content == content.encode()
    assert download["Content-Disposition"] == 'attachment; filename="readable-SKILL.md"'


@pytest.mark.parametrize("case", ["not-shared", "turned-off", "missing", "outsider"])
def test_a_skill_one_cannot_use_is_not_found(world, client_for, case):
    skill = org_skill(world, "target", enabled=case != "turned-off")
    if case == "not-shared":
        services.organization_skill_set_acl(
            actor=world.org_admin, skill=skill, group_roles={str(everyone(world.acme).pk): ""}
        )
    name = "nothing-here" if case == "missing" else "target"
    client = client_for("outsider" if case == "outsider" else "member")
    assert client.get(reverse("shared-skill", args=["acme", name])).status_code == 404
    assert client.get(reverse("shared-skill-download", args=["acme", name])).status_code == 404


def test_it_exports_the_usable_skills_of_an_organization(world, client_for):
    for name in ("one", "two"):
        org_skill(world, name)
    org_skill(world, "turned-off", enabled=False)
    hidden = org_skill(world, "hidden")
    services.organization_skill_set_acl(
        actor=world.org_admin, skill=hidden, group_roles={str(everyone(world.acme).pk): ""}
    )
    response = client_for("member").get(reverse("shared-skills-export", args=["acme"]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="acme-skills.zip"'
    assert zip_entries(response) == {"one/SKILL.md": md("one"), "two/SKILL.md": md("two")}
    assert client_for("outsider").get(reverse("shared-skills-export", args=["acme"])).status_code == 404


# Admin settings → Skills ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("persona", "status"), [("member", 404), ("outsider", 404), ("auditor", 200)])
def test_the_admin_page_is_for_readers_only(world, client_for, persona, status):
    org_skill(world, "listed")
    assert client_for(persona).get(admin_url("org-skills")).status_code == status
    assert client_for(persona).get(admin_url("org-skill", "listed")).status_code == status
    assert client_for(persona).get(admin_url("org-skill-download", "listed")).status_code == status
    assert client_for(persona).get(admin_url("org-skills-export")).status_code == status


def test_admins_get_switches_and_every_action(world, client_for):
    org_skill(world, "on-skill", "Is on.")
    org_skill(world, "off-skill", enabled=False)
    body = text(client_for("org_admin").get(admin_url("org-skills")))
    headers = re.findall(r'<th scope="col">([^<]+)</th>', body)
    assert headers == ["Name", "Description", "Enabled", "Who can use it", "Updated"]
    switches = {a["aria-label"]: a["aria-checked"] for a in Elements(body).named("button") if a.get("role") == "switch"}
    assert switches == {"Enabled: on-skill": "true", "Enabled: off-skill": "false"}
    assert "Add skill" in body and admin_url("org-skill-new") in body
    assert admin_url("org-skills-export") in body
    for name in ("org-skill", "org-skill-edit", "org-skill-download", "org-skill-permissions", "org-skill-delete"):
        assert admin_url(name, "on-skill") in body, name
    assert "Manage permissions" in body
    assert '<span class="pill group">Everyone</span>' in body
    assert "icon-yes" not in body


def test_auditors_get_icons_and_no_write_actions(world, client_for):
    org_skill(world, "on-skill")
    org_skill(world, "off-skill", enabled=False)
    body = text(client_for("auditor").get(admin_url("org-skills")))
    assert 'role="switch"' not in body
    assert '<span class="icon-yes" role="img" aria-label="Enabled">✓</span>' in body
    assert '<span class="icon-no" role="img" aria-label="Disabled">✗</span>' in body
    assert "Add skill" not in body and reverse("org-skill-new") not in body
    for name in ("org-skill-edit", "org-skill-delete", "org-skill-enabled"):
        assert reverse(name, args=["on-skill"]) not in body, name
    for name in ("org-skill", "org-skill-download", "org-skill-permissions"):
        assert admin_url(name, "on-skill") in body, name
    assert ">Permissions</a>" in body and "Manage permissions" not in body
    assert admin_url("org-skills-export") in body


def test_the_empty_admin_table_invites_admins_only(world, client_for):
    admin = text(client_for("org_admin").get(admin_url("org-skills")))
    assert "No skills yet." in admin and "Add the first one" in admin
    assert admin_url("org-skills-export") not in admin
    auditor = text(client_for("auditor").get(admin_url("org-skills")))
    assert "No skills yet." in auditor and "Add the first one" not in auditor


def test_site_owners_pick_the_organization(world, client_for):
    org_skill(world, "globex-skill", organization=world.globex)
    body = text(client_for("site_owner").get(admin_url("org-skills", org="globex")))
    assert 'id="org-picker"' in body and "globex-skill" in body
    assert '<option value="globex" selected>' in body


def test_admins_add_an_organization_skill(world, client_for):
    client = client_for("org_admin")
    assert client.get(admin_url("org-skill-new")).status_code == 200
    response = client.post(admin_url("org-skill-new"), {"content": md("team-skill")})
    assert response.status_code == 302 and response["Location"] == admin_url("org-skills")
    skill = OrganizationSkill.objects.get(organization=world.acme, name="team-skill")
    assert skill.created_by == world.org_admin
    assert [e.name for e in selectors.acl_of([skill])[skill.pk]] == ["Everyone"]
    bad = client.post(admin_url("org-skill-new"), {"content": md("team-skill", body="")})
    assert bad.status_code == 400 and "Skill body is required." in text(bad)
    dup = client.post(admin_url("org-skill-new"), {"content": md("team-skill")})
    assert dup.status_code == 409


def test_admins_edit_toggle_and_delete(world, client_for):
    org_skill(world, "managed")
    client = client_for("org_admin")
    assert "Helps with a thing." in text(client.get(admin_url("org-skill-edit", "managed")))
    assert client.post(admin_url("org-skill-edit", "managed"), {"content": md("managed", "New.")}).status_code == 302
    assert OrganizationSkill.objects.get(name="managed").revision == 2
    renamed = client.post(admin_url("org-skill-edit", "managed"), {"content": md("other")})
    assert renamed.status_code == 400 and "Skill name in path does not match frontmatter name." in text(renamed)

    assert client.get(admin_url("org-skill-enabled", "managed")).status_code == 405
    response = client.post(admin_url("org-skill-enabled", "managed"), {"enabled": "false"})
    assert response.status_code == 302 and OrganizationSkill.objects.get(name="managed").enabled is False
    partial = client.post(admin_url("org-skill-enabled", "managed"), {"enabled": "true"}, headers=HTMX)
    body = text(partial)
    assert partial.status_code == 200
    assert body.strip().startswith('<div id="skill-table">') and "<html" not in body
    assert 'aria-checked="true"' in body
    assert OrganizationSkill.objects.get(name="managed").enabled is True

    confirm = client.get(admin_url("org-skill-delete", "managed"))
    assert confirm.status_code == 200 and "Delete the skill managed from Acme Labs?" in text(confirm)
    assert OrganizationSkill.objects.filter(name="managed").exists()
    assert client.post(admin_url("org-skill-delete", "managed")).status_code == 302
    assert not OrganizationSkill.objects.filter(name="managed").exists()


def test_a_skill_of_another_organization_is_not_found(world, client_for):
    org_skill(world, "globex-skill", organization=world.globex)
    client = client_for("org_admin")
    for name in ("org-skill", "org-skill-edit", "org-skill-download", "org-skill-permissions", "org-skill-delete"):
        assert client.get(admin_url(name, "globex-skill")).status_code == 404, name
    assert client.post(admin_url("org-skill-delete", "globex-skill")).status_code == 404
    assert OrganizationSkill.objects.filter(name="globex-skill").exists()


@pytest.mark.parametrize(
    ("method", "name", "data", "action", "verb"),
    [
        ("get", "org-skill-new", None, "organization_skill.create", "create organization skills"),
        ("post", "org-skill-new", {"content": md("sneaky")}, "organization_skill.create", "create organization skills"),
        ("post", "org-skill-edit", {"content": md("target", "New.")}, "organization_skill.update", "update this"),
        ("post", "org-skill-enabled", {"enabled": "false"}, "organization_skill.disable", "update this"),
        ("post", "org-skill-delete", {}, "organization_skill.delete", "delete this"),
        ("post", "org-skill-permissions", {"kind": "group", "id": "0"}, "organization_skill.acl_update", "share this"),
    ],
)
def test_auditor_writes_are_refused_and_audited(world, client_for, method, name, data, action, verb):
    skill = org_skill(world, "target")
    args = () if name == "org-skill-new" else ("target",)
    response = getattr(client_for("auditor"), method)(admin_url(name, *args), data)
    assert response.status_code == 403
    message = f"You don't have permission to {verb}" + ("." if verb.endswith("skills") else " organization skill.")
    assert html.escape(message) in text(response)
    event = denied(world.auditor, action)
    assert event is not None and event.organization == world.acme and event.resource_type == "organization_skill"
    if args:
        assert (event.resource_id, event.resource_name) == (str(skill.pk), "target")
    skill.refresh_from_db()
    assert (skill.enabled, skill.revision) == (True, 1)
    assert list(OrganizationSkill.objects.values_list("name", flat=True)) == ["target"]
    assert [e.name for e in selectors.acl_of([skill])[skill.pk]] == ["Everyone"]


def test_auditors_view_download_and_export(world, client_for):
    content = md("inspect-me", "For inspection.")
    services.organization_skill_create(actor=None, organization=world.acme, content=content, enabled=False)
    org_skill(world, "second")
    client = client_for("auditor")
    view = text(client.get(admin_url("org-skill", "inspect-me")))
    assert "For inspection." in view and "Acme Labs" in view and admin_url("org-skill-download", "inspect-me") in view
    download = client.get(admin_url("org-skill-download", "inspect-me"))
    assert download.content == content.encode()
    assert download["Content-Disposition"] == 'attachment; filename="inspect-me-SKILL.md"'
    export = client.get(admin_url("org-skills-export"))
    assert export["Content-Disposition"] == 'attachment; filename="acme-skills.zip"'
    # The admin export holds every skill, turned off or not.
    assert zip_entries(export) == {"inspect-me/SKILL.md": content, "second/SKILL.md": md("second")}


# Manage permissions --------------------------------------------------------------------------------------------------


def test_admins_add_and_remove_groups_and_members(world, client_for):
    skill = org_skill(world, "guarded")
    engineering = org_services.group_create(actor=world.org_admin, organization=world.acme, name="Engineering")
    org_services.group_create(actor=world.outsider, organization=world.globex, name="Sales")
    make_user("stan")  # in no organization
    client = client_for("org_admin")
    url = admin_url("org-skill-permissions", "guarded")

    page = text(client.get(url))
    assert "Skill permissions" in page and "Everyone" in page
    assert select_options(page, "add-group") == ["Engineering"]
    assert [o.strip() for o in select_options(page, "add-user")] == ["alice", "audrey", "bob"]

    assert client.post(url, {"kind": "group", "id": engineering.pk, "role": "read"}).status_code == 302
    assert client.post(url, {"kind": "user", "id": world.member.pk, "role": "read"}).status_code == 302
    entries = [(e.kind, e.name) for e in selectors.acl_of([skill])[skill.pk]]
    assert entries == [("group", "Everyone"), ("group", "Engineering"), ("user", "bob")]
    page = text(client.get(url))
    assert select_options(page, "add-group") == []
    assert [o.strip() for o in select_options(page, "add-user")] == ["alice", "audrey"]
    assert "Permissions updated." in page

    # A member who leaves the organization is no longer offered (and their entry is gone).
    org_services.membership_remove(
        actor=world.org_admin, membership=world.member.memberships.get(organization=world.acme)
    )
    page = text(client.get(url))
    assert [o.strip() for o in select_options(page, "add-user")] == ["alice", "audrey"]
    assert "bob" not in page
    org_services.membership_add(actor=None, organization=world.acme, user=world.member, role=Role.MEMBER)
    assert client.post(url, {"kind": "user", "id": world.member.pk, "role": "read"}).status_code == 302

    everyone_id = everyone(world.acme).pk
    assert client.post(url, {"kind": "group", "id": everyone_id, "role": ""}).status_code == 302
    assert client.post(url, {"kind": "user", "id": world.member.pk, "role": ""}).status_code == 302
    assert [(e.kind, e.name) for e in selectors.acl_of([skill]).get(skill.pk, [])] == [("group", "Engineering")]
    assert AuditEvent.objects.filter(action="organization_skill.acl_update", actor=world.org_admin).count() == 5


def test_it_refuses_to_add_a_non_member_and_changes_nothing(world, client_for):
    skill = org_skill(world, "guarded")
    foreign = org_services.group_create(actor=world.outsider, organization=world.globex, name="Sales")
    client = client_for("org_admin")
    url = admin_url("org-skill-permissions", "guarded")
    for data in (
        {"kind": "user", "id": world.outsider.pk, "role": "read"},
        {"kind": "group", "id": foreign.pk, "role": "read"},
        {"kind": "robot", "id": world.member.pk, "role": "read"},
        {"kind": "user", "id": "bob", "role": "read"},
    ):
        response = client.post(url, data)
        assert response.status_code == 400, data
        assert 'class="message message-error"' in text(response), data
    assert f"user {world.outsider.pk} is not a member of acme" in text(
        client.post(url, {"kind": "user", "id": world.outsider.pk, "role": "read"})
    )
    assert [(e.kind, e.name) for e in selectors.acl_of([skill])[skill.pk]] == [("group", "Everyone")]


def test_auditors_see_the_list_without_forms(world, client_for):
    org_skill(world, "guarded")
    page = text(client_for("auditor").get(admin_url("org-skill-permissions", "guarded")))
    assert "Everyone" in page
    assert 'name="kind"' not in page and 'id="add-user"' not in page and "Remove" not in page


# Query counts --------------------------------------------------------------------------------------------------------


def grow(world) -> None:
    """30 more organization skills with groups and members on their lists, and 30 more personal skills for bob."""
    groups = [
        org_services.group_create(actor=world.org_admin, organization=world.acme, name=f"Group {i}") for i in range(10)
    ]
    people = [make_user(f"person{i}") for i in range(8)]
    for i, person in enumerate(people):
        org_services.membership_add(actor=None, organization=world.acme, user=person, role=Role.MEMBER)
        org_services.group_add_member(actor=world.org_admin, group=groups[i], user=person)
    org_services.group_add_member(actor=world.org_admin, group=groups[0], user=world.member)
    for i in range(30):
        skill = org_skill(world, f"org-{i:02}", enabled=i % 5 != 0)
        services.organization_skill_set_acl(
            actor=world.org_admin,
            skill=skill,
            user_roles={str(p.pk): "read" for p in [world.member, *people][: i % 9]},
            group_roles={str(g.pk): "read" for g in groups[: i % 10]},
        )
        services.personal_skill_create(user=world.member, content=md(f"mine-{i:02}"), enabled=i % 3 != 0)


@pytest.mark.parametrize(
    ("persona", "url"),
    [
        ("org_admin", admin_url("org-skills")),
        ("auditor", admin_url("org-skills")),
        ("member", reverse("personal-skills")),
        ("auditor", reverse("personal-skills")),
        ("org_admin", admin_url("org-skill-permissions", "org-first")),
    ],
)
def test_list_pages_run_a_fixed_number_of_queries(world, client_for, django_assert_max_num_queries, persona, url):
    org_skill(world, "org-first")
    services.personal_skill_create(user=world.member, content=md("mine-first"))
    client = client_for(persona)
    with django_assert_max_num_queries(40) as ctx:
        assert client.get(url).status_code == 200
    baseline = len(ctx.captured_queries)
    grow(world)
    with django_assert_max_num_queries(baseline):
        response = client.get(url)
    assert response.status_code == 200
    if url == admin_url("org-skills"):
        assert text(response).count("<tr>") == 32  # the header and 31 skills


def test_the_personal_page_does_not_grow_with_the_number_of_organizations(
    world, client_for, django_assert_max_num_queries
):
    org_skill(world, "acme-skill")
    client = client_for("site_owner")
    with django_assert_max_num_queries(40) as ctx:
        assert client.get(reverse("personal-skills")).status_code == 200
    baseline = len(ctx.captured_queries)
    for i in range(10):
        organization = org_services.organization_create(actor=None, name=f"org-{i}")
        org_skill(world, "skill", organization=organization)
    with django_assert_max_num_queries(baseline):
        response = client.get(reverse("personal-skills"))
    assert (
        len(select_options(shared_section(text(response)), "shared-org")) == 11
    )  # acme and the ten new ones; globex has no skills


@pytest.mark.parametrize("name", ["new", "export"])
def test_a_skill_named_like_a_page_can_still_be_viewed(world, client_for, name):
    org_skill(world, name, "Named like a page.")
    for client, url in (
        (client_for("org_admin"), admin_url("org-skill", name)),
        (client_for("member"), reverse("shared-skill", args=["acme", name])),
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response["Content-Type"].startswith("text/html"), url
        assert "Named like a page." in text(response), url


def test_an_htmx_view_request_gets_the_dialog_only(world, client_for):
    org_skill(world, "dialog-skill", "Shown in a dialog.")
    for client, url in (
        (client_for("auditor"), admin_url("org-skill", "dialog-skill")),
        (client_for("member"), reverse("shared-skill", args=["acme", "dialog-skill"])),
    ):
        body = text(client.get(url, headers={"HX-Request": "true", "HX-Target": "dialog-slot"}))
        assert body.lstrip().startswith('<dialog id="skill-dialog"'), url
        assert "Shown in a dialog." in body and "<html" not in body
