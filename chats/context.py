"""What one step of a chat sees: the skills of its three sources, their aliases, and the prompt catalog.

Sources: the owner's enabled personal skills, the organization's enabled skills the owner may use (read again at
every step, so enabling, disabling and sharing take effect on the next step), and the workspace skills of the
chat's pinned snapshot (only from the pin). No source overrides another: a name held by one source gets a bare
alias, a name held by several gets ``personal/…``, ``org/…`` or ``workspace/…`` for each holder.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skills import format as skill_format
from skills.models import PersonalSkill
from skills.selectors import skills_usable_by
from workspaces.models import SnapshotResource

from .models import Chat

SOURCES = ("personal", "org", "workspace")
SOURCE_LABELS = {"personal": "Personal skills", "org": "Organization skills", "workspace": "Workspace skills"}


class SkillLookupError(Exception):
    pass


@dataclass
class SkillEntry:
    source: str
    name: str
    description: str
    content: str | None = None  # stored skills: the whole SKILL.md (the body is parsed from it on demand)
    body: str | None = None  # workspace skills: the body from the pin
    dir: str | None = None
    files: list[dict] = field(default_factory=list)

    def read_body(self) -> str:
        if self.body is not None:
            return self.body
        return skill_format.parse_skill(self.content or "").body


@dataclass
class ChatContext:
    entries: list[SkillEntry]
    workspace_note: str = ""
    aliases: dict[str, SkillEntry] = field(init=False)

    def __post_init__(self) -> None:
        holders: dict[str, set[str]] = {}
        for entry in self.entries:
            holders.setdefault(entry.name, set()).add(entry.source)
        self._holders = holders
        self.aliases = {self.alias_of(entry): entry for entry in self.entries}

    def alias_of(self, entry: SkillEntry) -> str:
        return entry.name if len(self._holders[entry.name]) == 1 else f"{entry.source}/{entry.name}"

    def lookup(self, name: str) -> SkillEntry:
        """Find a skill by bare name or qualified alias. A bare name held by several sources is ambiguous."""
        name = (name or "").strip().lstrip("/")
        if "/" in name:
            source, _, bare = name.partition("/")
            for entry in self.entries:
                if entry.source == source and entry.name == bare:
                    return entry
            raise SkillLookupError(f"skill not found: {name}")
        matches = [e for e in self.entries if e.name == name]
        if not matches:
            raise SkillLookupError(f"skill not found: {name}")
        if len(matches) > 1:
            qualified = ", ".join(f"{e.source}/{e.name}" for e in matches)
            raise SkillLookupError(f"skill lookup is ambiguous: {name} matches {qualified}")
        return matches[0]

    def grouped(self) -> list[tuple[str, str, list[tuple[str, SkillEntry]]]]:
        """For the / menu: (source, label, [(alias, entry)…]) in the order personal, organization, workspace."""
        groups = []
        for source in SOURCES:
            items = sorted(
                ((self.alias_of(e), e) for e in self.entries if e.source == source), key=lambda item: item[0]
            )
            groups.append((source, SOURCE_LABELS[source], items))
        return groups

    def catalog(self) -> str:
        """The ``<available-skills>`` block of the system prompt, or "" when no skill is available."""
        if not self.entries:
            return ""
        lines = [
            # One line per skill: a multi-line description must not be able to add lines of its own.
            f"- {alias}: {skill_format.catalog_description(' '.join(entry.description.split()))}"
            for alias, entry in sorted(self.aliases.items())
        ]
        return "<available-skills>\n" + "\n".join(lines) + "\n</available-skills>"


def build_context(chat: Chat) -> ChatContext:
    """The chat's skills right now. A bounded number of queries whatever the number of skills and resources."""
    entries: list[SkillEntry] = []
    for skill in PersonalSkill.objects.filter(owner_id=chat.owner_id, enabled=True).order_by("name"):
        entries.append(SkillEntry("personal", skill.name, skill.description, content=skill.content))
    for skill in skills_usable_by(chat.owner, chat.organization):
        entries.append(SkillEntry("org", skill.name, skill.description, content=skill.content))
    note = ""
    if chat.workspace_id:
        if chat.pinned_snapshot_id is None:
            note = "The workspace is still starting: its skills appear once its agent has pushed a snapshot."
        else:
            resources = SnapshotResource.objects.filter(
                snapshot_id=chat.pinned_snapshot_id, kind="skill", status="ok"
            ).order_by("position")
            for resource in resources:
                skill = resource.data.get("skill") or {}
                entries.append(
                    SkillEntry(
                        "workspace",
                        skill.get("name") or resource.name,
                        skill.get("description") or "",
                        body=skill.get("body") or "",
                        dir=skill.get("dir"),
                        files=list(skill.get("files") or []),
                    )
                )
    return ChatContext(entries, workspace_note=note)
