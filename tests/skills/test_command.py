"""``manage.py skill``: lint files and directories; import, export, list, show, toggle stored skills."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from organizations.models import AuditEvent
from skills import selectors, services
from skills.models import OrganizationSkill, PersonalSkill


def md(name: str, description: str = "Helps with a thing.", body: str = "# Steps\n\nDo the thing.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


def run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("skill", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def fails(*args) -> tuple[CommandError, str, str]:
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError) as info:
        call_command("skill", *args, stdout=out, stderr=err)
    return info.value, out.getvalue(), err.getvalue()


def write(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return path


# lint ----------------------------------------------------------------------------------------------------------------


def test_it_lints_a_good_skill_directory_and_file(tmp_path):
    skill_file = write(tmp_path / "code-review" / "SKILL.md", md("code-review"))
    out, _ = run("lint", str(skill_file))
    assert out == "1 file(s) checked, no errors\n"
    out, _ = run("lint", str(skill_file.parent))
    assert out == "1 file(s) checked, no errors\n"


def test_it_reports_every_error_as_path_line_field_message_and_fails(tmp_path):
    skill_file = write(tmp_path / "bad-skill" / "SKILL.md", "---\nname: Bad\ndescription: Fine.\n---\n\n")
    error, out, _ = fails("lint", str(skill_file))
    assert error.returncode == 1
    assert str(error) == "1 file(s) checked, errors found"
    assert out.splitlines() == [
        f"{skill_file}:2: name: name must be kebab-case: lowercase letters and digits in groups joined by single "
        "hyphens, with no leading or trailing hyphen",
        f"{skill_file}:2: name: name 'Bad' does not match the skill's directory name 'bad-skill'",
        f"{skill_file}:5: body: Skill body is required",
    ]


def test_it_lints_a_directory_of_skills_and_reports_a_directory_name_mismatch(tmp_path):
    write(tmp_path / "alpha" / "SKILL.md", md("alpha"))
    mismatched = write(tmp_path / "beta" / "SKILL.md", md("gamma"))
    write(tmp_path / "notes" / "README.md", "not a skill\n")
    error, out, _ = fails("lint", str(tmp_path))
    assert error.returncode == 1 and str(error) == "2 file(s) checked, errors found"
    assert out.splitlines() == [f"{mismatched}:2: name: name 'gamma' does not match the skill's directory name 'beta'"]


def test_warnings_do_not_fail_the_lint(tmp_path):
    skill_file = write(
        tmp_path / "warned" / "SKILL.md", "---\nname: warned\ndescription: Ok.\ncolour: red\n---\n\nBody\n"
    )
    out, _ = run("lint", str(skill_file))
    assert out.splitlines() == [
        f"{skill_file}:4: colour: warning: unknown frontmatter key 'colour': product-specific fields go under "
        "'metadata.<product>'",
        "1 file(s) checked, no errors",
    ]


def test_it_fails_on_a_path_without_a_skill_and_on_bytes_that_are_not_utf8(tmp_path):
    error, _, err = fails("lint", str(tmp_path / "missing"))
    assert error.returncode == 1 and err == f"{tmp_path / 'missing'}: no SKILL.md found\n"
    binary = tmp_path / "binary" / "SKILL.md"
    binary.parent.mkdir()
    binary.write_bytes(b"---\nname: binary\ndescription: x\n---\n\n\xff\xfe\n")
    error, out, _ = fails("lint", str(binary))
    assert error.returncode == 1 and out.startswith(f"{binary}:6: content: SKILL.md is not valid UTF-8 text")


def test_a_standalone_file_is_not_held_to_a_directory_name(tmp_path):
    loose = write(tmp_path / "whatever.md", md("some-skill"))
    out, _ = run("lint", str(loose))
    assert out == "1 file(s) checked, no errors\n"


def test_the_lint_exits_with_status_1_from_the_shell(tmp_path):
    bad = write(tmp_path / "x" / "SKILL.md", md("y"))
    good = write(tmp_path / "z" / "SKILL.md", md("z"))
    env = {**os.environ, "SWITCHBOARD_VAR_DIR": str(settings.VAR_DIR)}
    manage = Path(settings.BASE_DIR) / "manage.py"
    failed = subprocess.run(
        [sys.executable, str(manage), "skill", "lint", str(bad)], capture_output=True, text=True, env=env, timeout=60
    )
    assert failed.returncode == 1
    assert f"{bad}:2: name: name 'y' does not match the skill's directory name 'x'" in failed.stdout
    assert "errors found" in failed.stderr
    passed = subprocess.run(
        [sys.executable, str(manage), "skill", "lint", str(good)], capture_output=True, text=True, env=env, timeout=60
    )
    assert passed.returncode == 0 and passed.stdout == "1 file(s) checked, no errors\n"


# import and export ---------------------------------------------------------------------------------------------------


def test_it_imports_files_and_directories_into_an_organization(world, tmp_path):
    single = write(tmp_path / "single" / "SKILL.md", md("single", "From a file."))
    write(tmp_path / "many" / "first" / "SKILL.md", md("first"))
    write(tmp_path / "many" / "second" / "SKILL.md", md("second"))
    out, _ = run("import", "--org", "acme", str(single), str(tmp_path / "many"))
    assert out.splitlines() == [
        f"{single}: stored single",
        f"{tmp_path / 'many' / 'first' / 'SKILL.md'}: stored first",
        f"{tmp_path / 'many' / 'second' / 'SKILL.md'}: stored second",
    ]
    skills = {s.name: s for s in OrganizationSkill.objects.filter(organization=world.acme)}
    assert set(skills) == {"single", "first", "second"}
    assert skills["single"].content == md("single", "From a file.") and skills["single"].created_by is None
    assert [e.name for e in selectors.acl_of([skills["first"]])[skills["first"].pk]] == ["Everyone"]
    events = AuditEvent.objects.filter(action="organization_skill.create", organization=world.acme)
    assert events.count() == 3 and {e.actor_id for e in events} == {None}


def test_importing_again_updates_and_disabled_stores_new_skills_off(world, tmp_path):
    path = write(tmp_path / "evolving" / "SKILL.md", md("evolving"))
    run("import", "--org", "acme", "--disabled", str(path))
    skill = OrganizationSkill.objects.get(name="evolving")
    assert (skill.enabled, skill.revision) == (False, 1)
    write(path, md("evolving", "Second take."))
    run("import", "--org", "acme", str(path))
    skill.refresh_from_db()
    assert (skill.description, skill.revision, skill.enabled) == ("Second take.", 2, False)


def test_a_bad_file_fails_the_import_but_the_good_ones_are_stored(world, tmp_path):
    good = write(tmp_path / "good" / "SKILL.md", md("good"))
    bad = write(tmp_path / "bad" / "SKILL.md", md("bad", body=""))
    error, out, err = fails("import", "--org", "acme", str(bad), str(good))
    assert error.returncode == 1 and str(error) == "1 skill(s) not imported"
    assert err.startswith(f"{bad}: Skill body is required. body: Skill body is required (line 5)")
    assert out == f"{good}: stored good\n"
    assert list(OrganizationSkill.objects.values_list("name", flat=True)) == ["good"]


def test_an_export_round_trips_through_import(world, tmp_path):
    contents = {"one": md("one", "First."), "two": md("two", "Second.", "# Two\n\nÜnïcode body.\n")}
    for name, content in contents.items():
        services.organization_skill_create(actor=None, organization=world.acme, content=content, enabled=name == "one")
    archive = tmp_path / "acme.zip"
    out, err = run("export", "--org", "acme", "-o", str(archive))
    assert err == f"wrote {archive}\n"
    with zipfile.ZipFile(archive) as zipped:
        assert {n: zipped.read(n).decode() for n in zipped.namelist()} == {
            f"{name}/SKILL.md": content for name, content in contents.items()
        }
    out, _ = run("import", "--org", "globex", str(archive))
    assert out.splitlines() == [f"{archive}:one/SKILL.md: stored one", f"{archive}:two/SKILL.md: stored two"]
    imported = {s.name: s.content for s in OrganizationSkill.objects.filter(organization=world.globex)}
    assert imported == contents


def test_it_imports_and_exports_personal_skills(world, tmp_path):
    path = write(tmp_path / "mine" / "SKILL.md", md("mine"))
    out, _ = run("import", "--user", "bob", str(path))
    assert out == f"{path}: stored mine\n"
    assert PersonalSkill.objects.get(owner=world.member).content == md("mine")
    archive = tmp_path / "bob.zip"
    run("export", "--user", "bob", "-o", str(archive))
    with zipfile.ZipFile(archive) as zipped:
        assert zipped.namelist() == ["mine/SKILL.md"]


def test_export_to_a_text_stream_asks_for_a_file(world):
    error, _, _ = fails("export", "--org", "acme")
    assert "use --output FILE" in str(error)


# list, info, view, enable, disable -----------------------------------------------------------------------------------


def test_it_lists_shows_and_toggles_organization_skills(world):
    content = md("visible", "Shown in lists.")
    services.organization_skill_create(actor=None, organization=world.acme, content=content)
    services.organization_skill_create(actor=None, organization=world.acme, content=md("hidden"), enabled=False)
    out, _ = run("list", "--org", "acme")
    assert [line.split() for line in out.splitlines()] == [
        ["off", "hidden", "Helps", "with", "a", "thing."],
        ["on", "visible", "Shown", "in", "lists."],
    ]
    info, _ = run("info", "--org", "acme", "visible")
    fields = dict(line.split(": ", 1) for line in info.splitlines())
    assert fields["name"] == "visible" and fields["description"] == "Shown in lists."
    assert (fields["enabled"], fields["revision"], fields["bytes"]) == ("yes", "1", str(len(content.encode())))
    view, _ = run("view", "--org", "acme", "visible")
    assert view == content

    assert run("disable", "--org", "acme", "visible")[0] == "visible turned off.\n"
    assert OrganizationSkill.objects.get(name="visible").enabled is False
    assert run("enable", "--org", "acme", "hidden")[0] == "hidden turned on.\n"
    assert OrganizationSkill.objects.get(name="hidden").enabled is True
    events = AuditEvent.objects.filter(action__in=["organization_skill.enable", "organization_skill.disable"])
    assert {(e.action, e.resource_name, e.actor_id, e.organization_id) for e in events} == {
        ("organization_skill.disable", "visible", None, world.acme.pk),
        ("organization_skill.enable", "hidden", None, world.acme.pk),
    }


def test_it_lists_shows_and_toggles_personal_skills(world):
    content = md("mine", "My own.")
    services.personal_skill_create(user=world.member, content=content)
    assert run("list", "--user", "bob")[0].split() == ["on", "mine", "My", "own."]
    assert run("view", "--user", "bob", "mine")[0] == content
    assert "enabled: yes" in run("info", "--user", "bob", "mine")[0]
    run("disable", "--user", "bob", "mine")
    assert PersonalSkill.objects.get(name="mine").enabled is False
    assert "enabled: no" in run("info", "--user", "bob", "mine")[0]
    run("enable", "--user", "bob", "mine")
    assert PersonalSkill.objects.get(name="mine").enabled is True
    assert run("list", "--user", "audrey")[0] == "No skills in audrey.\n"
    assert run("list", "--org", "globex")[0] == "No skills in globex.\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("list", "--org", "nope"), "No organization named nope."),
        (("list", "--user", "nobody"), "No user named nobody."),
        (("import", "--org", "nope", "x"), "No organization named nope."),
        (("enable", "--user", "nobody", "x"), "No user named nobody."),
        (("view", "--org", "acme", "missing"), "No skill named missing in acme."),
        (("disable", "--user", "bob", "missing"), "No skill named missing in bob."),
        (("info", "--org", "globex", "acme-only"), "No skill named acme-only in globex."),
    ],
)
def test_unknown_owners_and_skills_are_errors(world, args, message):
    services.organization_skill_create(actor=None, organization=world.acme, content=md("acme-only"))
    error, _, _ = fails(*args)
    assert str(error) == message


def test_an_owner_is_required_and_only_one(world):
    assert "one of the arguments --org --user is required" in str(fails("list")[0])
    assert "not allowed with argument" in str(fails("list", "--org", "acme", "--user", "bob")[0])


def test_import_refuses_bytes_that_are_not_utf8(world, tmp_path):
    binary = tmp_path / "binary" / "SKILL.md"
    binary.parent.mkdir()
    binary.write_bytes(b"---\nname: binary\ndescription: x\n---\n\nBody \xff\xfe\n")
    error, _, err = fails("import", "--org", "acme", str(binary))
    assert error.returncode == 1 and "not valid UTF-8" in err
    assert not OrganizationSkill.objects.exists()


def test_import_refuses_a_directory_name_mismatch(world, tmp_path):
    mismatched = write(tmp_path / "beta" / "SKILL.md", md("gamma"))
    error, _, err = fails("import", "--org", "acme", str(mismatched.parent))
    assert error.returncode == 1 and "does not match" in err
    assert not OrganizationSkill.objects.exists()


def test_import_ignores_entries_that_are_not_skill_files(world, tmp_path):
    archive = tmp_path / "from-a-mac.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("one/SKILL.md", md("one"))
        zipped.writestr("__MACOSX/one/._SKILL.md", b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ")
        zipped.writestr("one/NOT-A-SKILL.md", md("not-a-skill"))
    out, _ = run("import", "--org", "acme", str(archive))
    assert out == f"{archive}:one/SKILL.md: stored one\n"
    assert list(OrganizationSkill.objects.values_list("name", flat=True)) == ["one"]
