"""The SKILL.md format: parse and validate one file's text, with no Django import.

A SKILL.md is a ``---`` fenced YAML frontmatter (a mapping with ``name``, ``description`` and a few optional keys)
followed by a markdown body. ``parse_skill`` never raises and never executes YAML tags: every problem comes back as
an ``Issue`` naming the field and the rule, with the 1-based line in the SKILL.md text where it is known.

The YAML is read with PyYAML's pure-Python safe composer, extended to refuse aliases (which defeats "billion
laughs" expansion bombs), to bound nesting depth, and to report duplicate keys; the node tree is then turned into
Python values here, for an allow-list of standard tags only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_SKILL_BYTES = 64 * 1024  # whole SKILL.md
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_BYTES = 4096  # stored limit
CATALOG_DESCRIPTION_CHARS = 1024  # prompt catalog: longer ones are cut to 1023 chars + "…"; warn above 1024
MAX_COMPATIBILITY_CHARS = 500
MAX_LICENSE_CHARS = 200
MAX_NESTING_DEPTH = 20  # nested YAML collections, the top-level mapping counting as 1
MAX_PATH_CHARS = 500
KNOWN_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools", "version"})
# Kept exactly as the format states it. Note that ``$`` also matches before a trailing newline: use
# ``NAME_RE.fullmatch`` (as ``validate_name`` does), never ``NAME_RE.match``.
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
PATH_CHARS_RE = re.compile(r"[A-Za-z0-9._/-]+")

OVERSIZE_MESSAGE = "SKILL.md is larger than 64 KiB"
MISSING_NAME_MESSAGE = "frontmatter missing required 'name' field"
MISSING_DESCRIPTION_MESSAGE = "frontmatter missing required 'description' field"
DESCRIPTION_TOO_LARGE_MESSAGE = "description is longer than 4096 bytes"
EMPTY_BODY_MESSAGE = "Skill body is required"

_YAML_TAG_PREFIX = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(
    _YAML_TAG_PREFIX + suffix for suffix in ("null", "bool", "int", "float", "str", "timestamp", "binary")
)
# PyYAML resolves a plain "<<" to the merge tag and a plain "=" to the value tag; neither has a safe constructor.
_MERGE_TAG = _YAML_TAG_PREFIX + "merge"
_VALUE_TAG = _YAML_TAG_PREFIX + "value"
_SEQ_TAG = _YAML_TAG_PREFIX + "seq"
_MAP_TAG = _YAML_TAG_PREFIX + "map"
_DISPLAY_CHARS = 80


@dataclass(frozen=True)
class Issue:
    field: str
    message: str
    line: int | None = None
    severity: str = "error"


@dataclass(frozen=True)
class ParsedSkill:
    name: str | None
    description: str | None
    frontmatter: dict
    body: str
    allowed_tools: list[str]
    errors: tuple[Issue, ...]
    warnings: tuple[Issue, ...]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def oversize(self) -> bool:
        """The file was over 64 KiB and was not read at all (the scanner's ``oversize`` status)."""
        return any(issue.message == OVERSIZE_MESSAGE for issue in self.errors)


def validate_name(name: object) -> str | None:
    """The error message for a skill name that breaks the format's rule, or None when the name is fine."""
    if not isinstance(name, str):
        return "name must be a string"
    if not name:
        return "name must not be empty"
    if len(name) > MAX_NAME_CHARS:
        return f"name is longer than {MAX_NAME_CHARS} characters"
    if not NAME_RE.fullmatch(name):
        return (
            "name must be kebab-case: lowercase letters and digits in groups joined by single hyphens, "
            "with no leading or trailing hyphen"
        )
    return None


def catalog_description(description: str) -> str:
    """The description as the prompt catalog shows it: longer than 1,024 characters becomes 1,023 characters + '…'."""
    if not isinstance(description, str):
        description = "" if description is None else str(description)
    if len(description) > CATALOG_DESCRIPTION_CHARS:
        return description[: CATALOG_DESCRIPTION_CHARS - 1] + "…"
    return description


def check_relative_path(path: str) -> str | None:
    """The error message for a supporting-file path that ``read_skill_file`` must refuse, or None when it is safe.

    Security-relevant refusals come first so that a hostile path gets the message that names the attempt."""
    if path is None or path == "":
        return "path is required"
    if not isinstance(path, str):
        return "path must be a string"
    if path.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", path):
        return "absolute paths are not allowed"
    segments = re.split(r"[/\\]", path)
    if ".." in segments:
        return "path traversal is not allowed"
    if any(segment.startswith(".") and segment != "." for segment in segments):
        return "hidden file components are not allowed"
    if not PATH_CHARS_RE.fullmatch(path):
        return "path may only contain letters, digits, '.', '_', '-' and '/'"
    if len(path) > MAX_PATH_CHARS:
        return f"path is longer than {MAX_PATH_CHARS} characters"
    if any(segment in ("", ".") for segment in segments):
        return "path must not contain empty or '.' segments"
    return None


def parse_skill(
    text: str | bytes, *, directory_name: str | None = None, unknown_keys_are_errors: bool = False
) -> ParsedSkill:
    """Parse and validate a whole SKILL.md. Never raises; check ``.ok`` and read ``.errors`` and ``.warnings``.

    ``directory_name``: for a file-based skill, the name of its directory, which ``name`` must equal.
    ``unknown_keys_are_errors``: make unknown top-level keys errors rather than warnings (the product's own form).
    """
    report = _Report()
    decoded = _decode(text, report)
    if decoded is None:
        return report.result()
    text = decoded.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    nul = text.find("\x00")
    if nul != -1:
        report.error("content", "SKILL.md contains a NUL character, which text files cannot hold", _line_at(text, nul))

    lines = text.split("\n")
    if lines[0].rstrip(" \t") != "---":
        report.error("frontmatter", "SKILL.md must start with a '---' line that opens the YAML frontmatter", 1)
        return report.result()
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip(" \t") == "---"), None)
    if closing is None:
        report.error("frontmatter", "frontmatter is not closed: add a '---' line after it", 1)
        return report.result()

    body = re.sub(r"\A(?:[ \t]*\n)+", "", "\n".join(lines[closing + 1 :]))
    report.body = body if body.strip() else ""

    # Line i (0-based) of the YAML text is line i + 2 of the file: the opening fence is line 1.
    yaml_text = "\n".join(lines[1:closing]) + "\n"
    frontmatter, key_lines = _load_frontmatter(yaml_text, report)
    if frontmatter is not None:
        _check_fields(frontmatter, key_lines, report, directory_name, unknown_keys_are_errors)
        if any(issue.field == "frontmatter" for issue in report.errors):
            # Some YAML value was refused: what was read is not the author's frontmatter, so none of it is returned.
            report.frontmatter, report.name, report.description, report.allowed_tools = {}, None, None, []
        else:
            report.frontmatter = frontmatter
    if not report.body:
        report.error("body", EMPTY_BODY_MESSAGE, closing + 2)
    return report.result()


class _Report:
    """What parse_skill has found so far."""

    def __init__(self) -> None:
        self.errors: list[Issue] = []
        self.warnings: list[Issue] = []
        self.name: str | None = None
        self.description: str | None = None
        self.frontmatter: dict = {}
        self.body = ""
        self.allowed_tools: list[str] = []

    def error(self, field: str, message: str, line: int | None = None) -> None:
        self.errors.append(Issue(field, message, line))

    def warning(self, field: str, message: str, line: int | None = None) -> None:
        self.warnings.append(Issue(field, message, line, "warning"))

    def result(self) -> ParsedSkill:
        return ParsedSkill(
            name=self.name,
            description=self.description,
            frontmatter=self.frontmatter,
            body=self.body,
            allowed_tools=self.allowed_tools,
            errors=tuple(self.errors),
            warnings=tuple(self.warnings),
        )


def _decode(text: object, report: _Report) -> str | None:
    """The text as a str, or None after reporting why it cannot be read. The size is checked before anything else."""
    if isinstance(text, bytearray | memoryview):
        text = bytes(text)
    if isinstance(text, bytes):
        if len(text) > MAX_SKILL_BYTES:
            report.error("content", OVERSIZE_MESSAGE)
            return None
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = text.count(b"\n", 0, exc.start) + 1
            report.error("content", f"SKILL.md is not valid UTF-8 text (byte {exc.start} cannot be decoded)", line)
            return None
    if not isinstance(text, str):
        report.error("content", "SKILL.md content must be text")
        return None
    # Every character takes at least one byte, so a long str is oversize without encoding all of it.
    if len(text) > MAX_SKILL_BYTES or len(text.encode("utf-8", errors="surrogatepass")) > MAX_SKILL_BYTES:
        report.error("content", OVERSIZE_MESSAGE)
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # A str can hold lone surrogates, which no UTF-8 file can.
        report.error(
            "content", "SKILL.md is not valid UTF-8 text (it holds a lone surrogate)", _line_at(text, exc.start)
        )
        return None
    return text


def _line_at(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _shorten(value: str) -> str:
    return value if len(value) <= _DISPLAY_CHARS else value[: _DISPLAY_CHARS - 1] + "…"


def _display_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_YAML_TAG_PREFIX) if tag.startswith(_YAML_TAG_PREFIX) else tag


class _Refused(Exception):
    """YAML that is well-formed but that this format refuses; stops reading the frontmatter."""

    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


class _FrontmatterLoader(yaml.SafeLoader):
    """PyYAML's pure-Python safe loader, whose composer refuses aliases and deep nesting.

    Only the composer is used: the node tree is converted by ``_Builder``, never by PyYAML's constructors for
    collections, so no tag outside the allow-list is ever constructed."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(f"YAML aliases are not allowed (found '*{_shorten(str(event.anchor))}')", event.start_mark)
        nests = isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent)
        if nests:
            self._depth += 1
            if self._depth > MAX_NESTING_DEPTH:
                raise _Refused(f"frontmatter is nested more than {MAX_NESTING_DEPTH} levels deep", event.start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            if nests:
                self._depth -= 1


def _load_frontmatter(yaml_text: str, report: _Report) -> tuple[dict | None, dict]:
    """The frontmatter mapping and the file line of each top-level key, or (None, {}) after reporting why not."""

    def line_of(mark: Any) -> int:
        index = getattr(mark, "index", None)
        return _line_at(yaml_text, index) + 1 if isinstance(index, int) else 1

    loader = None
    try:
        loader = _FrontmatterLoader(yaml_text)
        root = loader.get_single_node()
    except _Refused as exc:
        report.error("frontmatter", exc.message, line_of(exc.mark))
        return None, {}
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        words = ", ".join(str(part) for part in (exc.context, exc.problem) if part)
        report.error("frontmatter", f"frontmatter is not valid YAML: {words}", line_of(mark))
        return None, {}
    except yaml.reader.ReaderError as exc:
        character = exc.character if isinstance(exc.character, int) else 0
        report.error(
            "frontmatter",
            f"frontmatter is not valid YAML: it holds the control character U+{character:04X}",
            _line_at(yaml_text, exc.position) + 1,
        )
        return None, {}
    except RecursionError:
        report.error("frontmatter", "frontmatter is nested too deeply to read", 1)
        return None, {}
    except Exception as exc:  # a third-party parser must never take the caller down with it
        report.error("frontmatter", f"frontmatter could not be read: {type(exc).__name__}", 1)
        return None, {}
    finally:
        if loader is not None:
            loader.dispose()

    if root is None:  # an empty frontmatter, or only comments: its required keys are missing
        return {}, {}
    if not isinstance(root, MappingNode) or root.tag != _MAP_TAG:
        report.error("frontmatter", "frontmatter must be a YAML mapping of keys to values", line_of(root.start_mark))
        return None, {}
    builder = _Builder(loader, line_of)
    try:
        frontmatter = builder.build(root)
    except RecursionError:
        report.error("frontmatter", "frontmatter is nested too deeply to read", 1)
        return None, {}
    for message, line in builder.issues:
        report.error("frontmatter", message, line)
    key_lines = {builder.keys[node]: line_of(node.start_mark) for node, _ in root.value if node in builder.keys}
    return frontmatter, key_lines


class _Invalid:
    """Stands for a YAML value that was refused (and reported): the field checks skip it rather than pile on."""

    def __repr__(self) -> str:
        return "<invalid>"


_INVALID = _Invalid()
_MISSING = object()


class _Builder:
    """Turns a composed node tree into Python values, collecting every problem instead of stopping at the first.

    A refused value becomes ``_INVALID``; of duplicate keys the first is kept."""

    def __init__(self, constructor: SafeConstructor, line_of: Any) -> None:
        self.constructor = constructor
        self.line_of = line_of
        self.issues: list[tuple[str, int]] = []
        self.keys: dict[Node, Any] = {}

    def refuse(self, message: str, node: Node) -> _Invalid:
        self.issues.append((message, self.line_of(node.start_mark)))
        return _INVALID

    def refuse_tag(self, node: Node) -> _Invalid:
        return self.refuse(f"YAML tag '{_shorten(_display_tag(node.tag))}' is not allowed", node)

    def build(self, node: Node) -> Any:
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if isinstance(node, SequenceNode):
            items = [self.build(item) for item in node.value]
            return items if node.tag == _SEQ_TAG else self.refuse_tag(node)
        if isinstance(node, MappingNode):
            mapping = self.mapping(node)
            return mapping if node.tag == _MAP_TAG else self.refuse_tag(node)
        return self.refuse("frontmatter holds a YAML node that cannot be read", node)

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag in (_MERGE_TAG, _VALUE_TAG):
            return node.value
        if node.tag not in _SCALAR_TAGS:
            return self.refuse_tag(node)
        try:
            return SafeConstructor.yaml_constructors[node.tag](self.constructor, node)
        except Exception:  # e.g. "!!int abc", "2024-13-45", an int of more than 4300 digits
            return self.refuse(f"'{_shorten(node.value)}' is not a valid {_display_tag(node.tag)} value", node)

    def mapping(self, node: MappingNode) -> dict:
        result: dict = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag == _MERGE_TAG:
                self.refuse("YAML merge keys ('<<') are not allowed", key_node)
                self.build(value_node)
                continue
            key = self.build(key_node)
            value = self.build(value_node)
            if key is _INVALID:
                continue
            try:
                duplicate = key in result
            except TypeError:
                self.refuse("frontmatter keys must be plain values, not lists or mappings", key_node)
                continue
            if duplicate:
                shown = key_node.value if isinstance(key_node, ScalarNode) else str(key)
                self.refuse(f"duplicate key '{_shorten(shown)}'", key_node)
                continue
            self.keys[key_node] = key
            result[key] = value
        return result


def _display_key(key: object) -> str:
    if key == "":
        return "''"
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _not_a_string(field: str, value: object) -> str:
    if isinstance(value, bool | int | float) or value is None:
        return f"{field} must be a string (put the value in quotes)"
    return f"{field} must be a string"


def _check_fields(
    frontmatter: dict, key_lines: dict, report: _Report, directory_name: str | None, unknown_keys_are_errors: bool
) -> None:
    """Check every known key and report every unknown one. A value already refused as YAML is not checked again."""

    def value_of(key: str) -> Any:
        return frontmatter.get(key, _MISSING)

    name = value_of("name")
    line = key_lines.get("name")
    if name is _MISSING:
        report.error("name", MISSING_NAME_MESSAGE)
    elif name is not _INVALID:
        problem = validate_name(name)
        if problem:
            report.error("name", _not_a_string("name", name) if not isinstance(name, str) else problem, line)
        if isinstance(name, str):
            report.name = name
            if directory_name is not None and name != directory_name:
                report.error(
                    "name",
                    f"name '{_shorten(name)}' does not match the skill's directory name '{_shorten(directory_name)}'",
                    line,
                )

    description = value_of("description")
    line = key_lines.get("description")
    if description is _MISSING:
        report.error("description", MISSING_DESCRIPTION_MESSAGE)
    elif not isinstance(description, str):
        if description is not _INVALID:
            report.error("description", _not_a_string("description", description), line)
    else:
        report.description = description
        if not description.strip():
            report.error("description", "description must not be empty", line)
        if len(description.encode("utf-8")) > MAX_DESCRIPTION_BYTES:
            report.error("description", DESCRIPTION_TOO_LARGE_MESSAGE, line)
        if len(description) > CATALOG_DESCRIPTION_CHARS:
            report.warning(
                "description",
                f"description is longer than {CATALOG_DESCRIPTION_CHARS} characters: the prompt catalog shows only "
                f"its first {CATALOG_DESCRIPTION_CHARS - 1} characters followed by '…'",
                line,
            )

    for key, limit in (("license", MAX_LICENSE_CHARS), ("compatibility", MAX_COMPATIBILITY_CHARS)):
        value, line = value_of(key), key_lines.get(key)
        if value is _MISSING or value is _INVALID:
            continue
        if not isinstance(value, str):
            report.error(key, _not_a_string(key, value), line)
        elif not value.strip():
            report.error(key, f"{key} must not be empty", line)
        elif len(value) > limit:
            report.error(key, f"{key} is longer than {limit} characters", line)

    tools = value_of("allowed-tools")
    if isinstance(tools, str):
        report.allowed_tools = tools.split()
    elif isinstance(tools, list) and all(isinstance(tool, str) and tool.strip() for tool in tools):
        report.allowed_tools = [tool.strip() for tool in tools]
    elif tools is not _MISSING and tools is not _INVALID:
        report.error(
            "allowed-tools",
            "allowed-tools must be a space-separated string or a list of strings",
            key_lines.get("allowed-tools"),
        )

    metadata = value_of("metadata")
    if metadata is not _MISSING and metadata is not _INVALID and not isinstance(metadata, dict):
        report.error("metadata", "metadata must be a mapping of keys to values", key_lines.get("metadata"))

    version = value_of("version")
    if version is not _MISSING and version is not _INVALID:
        if isinstance(version, bool) or not isinstance(version, str | int | float):
            report.error("version", "version must be a string or a number", key_lines.get("version"))

    for key in frontmatter:
        if key in KNOWN_KEYS:
            continue
        shown = _shorten(_display_key(key))
        message = f"unknown frontmatter key '{shown}': product-specific fields go under 'metadata.<product>'"
        if unknown_keys_are_errors:
            report.error(shown, message, key_lines.get(key))
        else:
            report.warning(shown, message, key_lines.get(key))
