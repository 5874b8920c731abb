"""manage.py skill lint|list|info|view|enable|disable|import|export — operate on stored skills from a shell.

Stored-skill subcommands take ``--org NAME`` (organization skills) or ``--user USERNAME`` (personal skills). They act
as the operator: changes are audited with no actor.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from organizations.models import Organization, User
from skills import format as skill_format
from skills import services
from skills.models import OrganizationSkill, PersonalSkill
from skills.rendering import zip_skills
from skills.services import SkillError


class LintFailed(CommandError):
    pass


class Command(BaseCommand):
    help = "Lint SKILL.md files, and list, show, enable, disable, import or export stored skills."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        lint = sub.add_parser("lint", help="check SKILL.md files or skill directories; exit 1 on any error")
        lint.add_argument("paths", nargs="+", metavar="PATH")
        for name, text in (
            ("list", "list stored skills"),
            ("info", "show a skill's metadata"),
            ("view", "print a skill's SKILL.md"),
            ("enable", "turn a skill on"),
            ("disable", "turn a skill off"),
            ("import", "store SKILL.md files, skill directories or .zip exports (existing names are updated)"),
            ("export", "write every skill to a .zip (one <name>/SKILL.md each)"),
        ):
            p = sub.add_parser(name, help=text)
            owner = p.add_mutually_exclusive_group(required=True)
            owner.add_argument("--org", metavar="NAME")
            owner.add_argument("--user", metavar="USERNAME")
            if name in {"info", "view", "enable", "disable"}:
                p.add_argument("name")
            if name == "import":
                p.add_argument("paths", nargs="+", metavar="PATH")
                p.add_argument("--disabled", action="store_true", help="store new skills turned off")
            if name == "export":
                p.add_argument("-o", "--output", help="the .zip to write (default: standard output)")

    def handle(self, *args, action, **options):
        if action == "lint":
            return self.lint(options["paths"])
        owner = self._owner(options)
        getattr(self, f"do_{action}")(owner, options)

    # lint ------------------------------------------------------------------------------------------------------------

    def lint(self, paths: list[str]) -> None:
        failed = False
        checked = 0
        for raw in paths:
            path = Path(raw)
            files = self._skill_files(path)
            if not files:
                self.stderr.write(f"{raw}: no SKILL.md found")
                failed = True
            for file, directory_name in files:
                checked += 1
                parsed = skill_format.parse_skill(file.read_bytes(), directory_name=directory_name)
                for issue in parsed.errors:
                    failed = True
                    self.stdout.write(f"{file}:{issue.line or 1}: {issue.field}: {issue.message}")
                for issue in parsed.warnings:
                    self.stdout.write(f"{file}:{issue.line or 1}: {issue.field}: warning: {issue.message}")
        if failed:
            raise LintFailed(f"{checked} file(s) checked, errors found", returncode=1)
        self.stdout.write(f"{checked} file(s) checked, no errors")

    @staticmethod
    def _skill_files(path: Path) -> list[tuple[Path, str | None]]:
        """A SKILL.md file; a skill directory (holding SKILL.md, whose name must match); or a directory of skills."""
        if path.is_file():
            return [(path, path.parent.name if path.name == "SKILL.md" and path.parent.name else None)]
        if (path / "SKILL.md").is_file():
            return [(path / "SKILL.md", path.resolve().name)]
        if path.is_dir():
            return [
                (child / "SKILL.md", child.name) for child in sorted(path.iterdir()) if (child / "SKILL.md").is_file()
            ]
        return []

    # stored skills ---------------------------------------------------------------------------------------------------

    def _owner(self, options) -> Organization | User:
        if options.get("org"):
            org = Organization.objects.filter(name=options["org"]).first()
            if org is None:
                raise CommandError(f"No organization named {options['org']}.")
            return org
        user = User.objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user named {options['user']}.")
        return user

    @staticmethod
    def _skills(owner):
        if isinstance(owner, Organization):
            return OrganizationSkill.objects.filter(organization=owner).order_by("name")
        return PersonalSkill.objects.filter(owner=owner).order_by("name")

    def _skill(self, owner, name: str):
        skill = self._skills(owner).filter(name=name).first()
        if skill is None:
            raise CommandError(f"No skill named {name} in {owner}.")
        return skill

    def do_list(self, owner, options) -> None:
        skills = list(self._skills(owner))
        if not skills:
            self.stdout.write(f"No skills in {owner}.")
        for skill in skills:
            state = "on " if skill.enabled else "off"
            self.stdout.write(f"{state} {skill.name:<40} {skill.description[:80]}")

    def do_info(self, owner, options) -> None:
        skill = self._skill(owner, options["name"])
        for label, value in (
            ("name", skill.name),
            ("description", skill.description),
            ("enabled", "yes" if skill.enabled else "no"),
            ("revision", skill.revision),
            ("bytes", len(skill.content.encode())),
            ("created", skill.created_at.isoformat()),
            ("updated", skill.updated_at.isoformat()),
        ):
            self.stdout.write(f"{label}: {value}")

    def do_view(self, owner, options) -> None:
        self.stdout.write(self._skill(owner, options["name"]).content, ending="")

    def _set_enabled(self, owner, name: str, enabled: bool) -> None:
        skill = self._skill(owner, name)
        if isinstance(owner, Organization):
            services.organization_skill_update(actor=None, skill=skill, enabled=enabled)
        else:
            services.personal_skill_update(skill=skill, enabled=enabled)
        self.stdout.write(f"{skill.name} turned {'on' if enabled else 'off'}.")

    def do_enable(self, owner, options) -> None:
        self._set_enabled(owner, options["name"], True)

    def do_disable(self, owner, options) -> None:
        self._set_enabled(owner, options["name"], False)

    def _sources(self, raw: str) -> list[tuple[str, bytes, str | None]]:
        """(label, raw bytes, the directory name the skill must carry) for each SKILL.md in a file, a directory or a
        .zip export. Zip entries count only when named exactly SKILL.md outside hidden folders (no __MACOSX)."""
        path = Path(raw)
        if path.suffix == ".zip" and path.is_file():
            sources = []
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    parts = info.filename.split("/")
                    if parts[-1] != "SKILL.md" or any(p.startswith((".", "__MACOSX")) for p in parts[:-1]):
                        continue
                    if info.file_size > skill_format.MAX_SKILL_BYTES + 1:
                        sources.append((f"{raw}:{info.filename}", b"x" * (skill_format.MAX_SKILL_BYTES + 1), None))
                        continue
                    directory = parts[-2] if len(parts) > 1 else None
                    sources.append((f"{raw}:{info.filename}", archive.read(info), directory))
            return sources
        return [(str(file), file.read_bytes(), directory) for file, directory in self._skill_files(path)]

    def do_import(self, owner, options) -> None:
        failures = 0
        for raw in options["paths"]:
            sources = self._sources(raw)
            if not sources:
                self.stderr.write(f"{raw}: no SKILL.md found")
                failures += 1
            for label, data, directory in sources:
                try:
                    content = data.decode("utf-8")
                except UnicodeDecodeError:
                    failures += 1
                    self.stderr.write(f"{label}: Invalid skill content. content: SKILL.md is not valid UTF-8")
                    continue
                try:
                    name = self._store(owner, content, directory=directory, enabled=not options["disabled"])
                    self.stdout.write(f"{label}: stored {name}")
                except SkillError as exc:
                    failures += 1
                    details = "; ".join(f"{v['field']}: {v['detail']}" for v in exc.validations) or exc.detail
                    self.stderr.write(f"{label}: {exc.message} {details}".rstrip())
        if failures:
            raise CommandError(f"{failures} skill(s) not imported", returncode=1)

    def _store(self, owner, content: str, *, directory: str | None, enabled: bool) -> str:
        parsed = services.validate_content(services.normalize_content(content), expected_name=directory)
        existing = self._skills(owner).filter(name=parsed.name).first()
        if isinstance(owner, Organization):
            if existing:
                services.organization_skill_update(actor=None, skill=existing, content=content)
            else:
                services.organization_skill_create(actor=None, organization=owner, content=content, enabled=enabled)
        elif existing:
            services.personal_skill_update(skill=existing, content=content)
        else:
            services.personal_skill_create(user=owner, content=content, enabled=enabled)
        return parsed.name

    def do_export(self, owner, options) -> None:
        data = zip_skills(self._skills(owner))
        if options.get("output"):
            Path(options["output"]).write_bytes(data)
            self.stderr.write(f"wrote {options['output']}")
        else:
            target = getattr(self.stdout, "_out", sys.stdout)
            buffer = getattr(target, "buffer", None)
            if buffer is None:
                raise CommandError("standard output takes no binary data here; use --output FILE")
            buffer.write(data)
            buffer.flush()
