"""The SKILL.md format (skills/format.py): every rule by example, then hostile and random input by property."""

from __future__ import annotations

import re
import time
import tracemalloc

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skills import format as skill_format
from skills.format import (
    CATALOG_DESCRIPTION_CHARS,
    KNOWN_KEYS,
    MAX_DESCRIPTION_BYTES,
    MAX_NAME_CHARS,
    MAX_SKILL_BYTES,
    NAME_RE,
    Issue,
    ParsedSkill,
    catalog_description,
    check_relative_path,
    parse_skill,
    validate_name,
)

# No example database: failing examples are not saved between runs (Hypothesis still keeps a small cache, with its
# own .gitignore, in .hypothesis/).
# A deadline of 2 s per example turns a pathological input that takes seconds into a failure.
BASE = settings(database=None, deadline=2000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MEMORY_LIMIT = 50 * 1024 * 1024


def skill(frontmatter: str = "name: deep-review\ndescription: Multi-reviewer code review\n", body: str = "# Body\n"):
    return f"---\n{frontmatter}---\n\n{body}"


def messages(parsed: ParsedSkill) -> list[str]:
    return [issue.message for issue in parsed.errors]


def only_error(parsed: ParsedSkill) -> Issue:
    assert len(parsed.errors) == 1, parsed.errors
    return parsed.errors[0]


def assert_well_formed(parsed: object) -> None:
    """The invariants every answer holds, whatever the input."""
    assert isinstance(parsed, ParsedSkill)
    assert parsed.ok == (not parsed.errors)
    assert parsed.name is None or isinstance(parsed.name, str)
    assert parsed.description is None or isinstance(parsed.description, str)
    assert isinstance(parsed.frontmatter, dict)
    assert isinstance(parsed.body, str)
    assert isinstance(parsed.allowed_tools, list) and all(isinstance(tool, str) for tool in parsed.allowed_tools)
    for issues, severity in ((parsed.errors, "error"), (parsed.warnings, "warning")):
        assert isinstance(issues, tuple)
        for issue in issues:
            assert isinstance(issue, Issue)
            assert issue.severity == severity
            assert isinstance(issue.field, str) and issue.field
            assert isinstance(issue.message, str) and issue.message
            assert issue.line is None or (isinstance(issue.line, int) and issue.line >= 1)
    if parsed.ok:
        assert validate_name(parsed.name) is None
        assert parsed.description and parsed.description.strip()
        assert parsed.body.strip()


def measure(text: str | bytes) -> tuple[ParsedSkill, float, int]:
    """Parse, returning the answer, the seconds taken and the peak memory allocated while parsing.

    The time is taken on a run of its own: tracing allocations slows parsing down several times."""
    started = time.perf_counter()
    parsed = parse_skill(text)
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    try:
        assert parse_skill(text) == parsed
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return parsed, elapsed, peak


def billion_laughs(width: int = 9, levels: int = 10) -> str:
    lines = ["lol0: &lol0 [" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"lol{level}: &lol{level} [" + ", ".join([f"*lol{level - 1}"] * width) + "]")
    return skill("name: bomb\ndescription: d\n" + "\n".join(lines) + "\n")


# The interface ---------------------------------------------------------------------------------------------------


def test_it_exposes_the_documented_limits():
    assert MAX_SKILL_BYTES == 65536
    assert MAX_NAME_CHARS == 64
    assert MAX_DESCRIPTION_BYTES == 4096
    assert CATALOG_DESCRIPTION_CHARS == 1024
    assert KNOWN_KEYS == {"name", "description", "license", "compatibility", "metadata", "allowed-tools", "version"}
    assert NAME_RE.pattern == r"^[a-z0-9]+(-[a-z0-9]+)*$"


def test_it_has_no_django_import():
    with open(skill_format.__file__, encoding="utf-8") as source:
        assert not re.search(r"^\s*(from|import)\s+django", source.read(), re.MULTILINE)


# A valid skill -----------------------------------------------------------------------------------------------------


def test_it_parses_a_valid_skill():
    parsed = parse_skill(skill(body="# Deep Review\n\nInstructions for the skill go here...\n"))
    assert parsed.ok
    assert parsed.name == "deep-review"
    assert parsed.description == "Multi-reviewer code review"
    assert parsed.frontmatter == {"name": "deep-review", "description": "Multi-reviewer code review"}
    assert parsed.body == "# Deep Review\n\nInstructions for the skill go here...\n"
    assert parsed.allowed_tools == []
    assert parsed.errors == () and parsed.warnings == ()
    assert not parsed.oversize


def test_it_parses_every_known_key():
    parsed = parse_skill(
        skill(
            "name: pdf\ndescription: Read PDFs\nlicense: Apache-2.0\ncompatibility: Needs python3\n"
            "allowed-tools: Read Bash(pdftotext:*)\nversion: 1.2\nmetadata:\n  acme:\n    owner: docs-team\n"
        )
    )
    assert parsed.ok, parsed.errors
    assert parsed.warnings == ()
    assert parsed.allowed_tools == ["Read", "Bash(pdftotext:*)"]
    assert parsed.frontmatter["metadata"] == {"acme": {"owner": "docs-team"}}
    assert parsed.frontmatter["version"] == 1.2


def test_it_strips_only_leading_blank_lines_from_the_body():
    parsed = parse_skill("---\nname: a\ndescription: b\n---\n\n  \n\t\n    indented code\n\ntext  \n\n")
    assert parsed.body == "    indented code\n\ntext  \n\n"


def test_it_keeps_later_fence_lines_in_the_body():
    parsed = parse_skill(skill(body="one\n---\ntwo\n"))
    assert parsed.ok
    assert parsed.body == "one\n---\ntwo\n"


def test_it_accepts_bytes():
    parsed = parse_skill(skill(body="Grüße\n").encode("utf-8"))
    assert parsed.ok
    assert parsed.body == "Grüße\n"


@pytest.mark.parametrize("as_bytes", [False, True])
def test_it_strips_a_utf8_bom(as_bytes):
    text = "\ufeff" + skill()
    parsed = parse_skill(text.encode("utf-8") if as_bytes else text)
    assert parsed.ok, parsed.errors
    assert parsed.name == "deep-review"


def test_it_normalises_crlf_and_cr_and_keeps_line_numbers_right():
    crlf = "---\r\nname: a\r\ndescription: b\r\nname: c\r\n---\r\n\r\nline one\r\nline two\r\n"
    parsed = parse_skill(crlf)
    assert only_error(parsed) == Issue("frontmatter", "duplicate key 'name'", 4)
    assert parsed.body == "line one\nline two\n"

    cr = crlf.replace("\r\n", "\r")
    assert parse_skill(cr) == parsed

    fixed = parse_skill(crlf.replace("name: c\r\n", ""))
    assert fixed.ok
    assert fixed.body == "line one\nline two\n"


def test_it_accepts_fences_with_trailing_spaces():
    assert parse_skill("--- \nname: a\ndescription: b\n---\t\nbody").ok


# Size and encoding -----------------------------------------------------------------------------------------------


def sized_skill(size: int, filler: str = "x") -> str:
    head = skill(body="")
    padding = size - len(head.encode("utf-8"))
    width = len(filler.encode("utf-8"))
    return head + filler * (padding // width) + "y" * (padding % width)


@pytest.mark.parametrize("filler", ["x", "€"])
def test_it_accepts_exactly_64_kib_and_rejects_one_byte_more(filler):
    exact = sized_skill(MAX_SKILL_BYTES, filler)
    assert len(exact.encode("utf-8")) == MAX_SKILL_BYTES
    assert parse_skill(exact).ok
    assert parse_skill(exact.encode("utf-8")).ok

    over = exact + "z"
    for content in (over, over.encode("utf-8")):
        parsed = parse_skill(content)
        assert parsed.errors == (Issue("content", "SKILL.md is larger than 64 KiB"),)
        assert parsed.oversize


def test_it_measures_a_str_by_its_utf8_length():
    # 30,000 characters but 90,000 bytes.
    parsed = parse_skill(skill(body="€" * 30_000))
    assert parsed.oversize


def test_it_reads_no_content_from_an_oversize_file():
    parsed = parse_skill(skill(body="x" * MAX_SKILL_BYTES))
    assert parsed == ParsedSkill(None, None, {}, "", [], (Issue("content", "SKILL.md is larger than 64 KiB"),), ())


def test_it_checks_the_size_before_decoding():
    parsed = parse_skill(b"\xff" * (MAX_SKILL_BYTES + 1))
    assert messages(parsed) == ["SKILL.md is larger than 64 KiB"]


def test_it_reports_bytes_that_are_not_utf8():
    parsed = parse_skill(b"---\nname: a\ndescription: caf\xe9\n---\nbody")
    assert only_error(parsed) == Issue("content", "SKILL.md is not valid UTF-8 text (byte 28 cannot be decoded)", 3)
    assert parsed.name is None and parsed.body == ""


def test_it_reports_a_str_holding_a_lone_surrogate():
    parsed = parse_skill(skill(body="a\udc80b"))
    error = only_error(parsed)
    assert (error.field, error.line) == ("content", 6)
    assert "not valid UTF-8" in error.message


@pytest.mark.parametrize("content", [None, 42, ["---"], bytearray(skill().encode()), memoryview(skill().encode())])
def test_it_answers_for_content_of_any_type(content):
    parsed = parse_skill(content)
    if isinstance(content, bytearray | memoryview):
        assert parsed.ok
    else:
        assert only_error(parsed) == Issue("content", "SKILL.md content must be text")


def test_it_reports_a_nul_character():
    parsed = parse_skill(skill(body="one\ntwo\x00\n"))
    assert only_error(parsed) == Issue("content", "SKILL.md contains a NUL character, which text files cannot hold", 7)


# Fences ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "# Just markdown\n", "\n---\nname: a\ndescription: b\n---\nbody", " ---\nname: a\n---\nbody", "---x\n---\nb"],
)
def test_it_requires_an_opening_fence_on_the_first_line(text):
    parsed = parse_skill(text)
    assert only_error(parsed) == Issue(
        "frontmatter", "SKILL.md must start with a '---' line that opens the YAML frontmatter", 1
    )


@pytest.mark.parametrize("text", ["---", "---\n", "---\nname: a\ndescription: b\n", "---\nname: a\n--- \u00a0\nb"])
def test_it_requires_a_closing_fence(text):
    parsed = parse_skill(text)
    assert only_error(parsed) == Issue("frontmatter", "frontmatter is not closed: add a '---' line after it", 1)


# YAML ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frontmatter", "line", "words"),
    [
        ("name: a\ndescription: [unclosed\n", 4, "expected ',' or ']'"),
        ("name: a\n  description: b\n", 3, "mapping values are not allowed here"),
        ("name: a\ndescription: 'open\n", 4, "found unexpected end of stream"),
        ("name: a\n\tdescription: b\n", 3, "found character '\\t' that cannot start any token"),
        ("name: a\ndescription: b\nx: a\x07b\n", 4, "control character U+0007"),
        ("name: a\ndescription: b\n...\nmore: 1\n", 5, "expected '<document start>'"),
        ("name: a\ndescription: &x a\nlicense: &x b\n", 4, "found duplicate anchor 'x'"),
    ],
)
def test_it_reports_yaml_errors_with_their_line(frontmatter, line, words):
    error = only_error(parse_skill(skill(frontmatter)))
    assert (error.field, error.line) == ("frontmatter", line)
    assert error.message.startswith("frontmatter is not valid YAML: ")
    assert words in error.message


def test_it_reports_every_duplicate_key_at_any_level_with_its_line():
    parsed = parse_skill(
        skill(
            "name: a\n"  # 2
            "description: b\n"  # 3
            "metadata:\n"  # 4
            "  acme: {x: 1, x: 2}\n"  # 5
            "  list:\n"  # 6
            "    - k: 1\n"  # 7
            "      k: 2\n"  # 8
            "description: c\n"  # 9
        )
    )
    assert parsed.errors == (
        Issue("frontmatter", "duplicate key 'x'", 5),
        Issue("frontmatter", "duplicate key 'k'", 8),
        Issue("frontmatter", "duplicate key 'description'", 9),
    )
    # What was read is not what the author meant, so none of it is handed back.
    assert (parsed.name, parsed.description, parsed.frontmatter) == (None, None, {})


def test_it_still_checks_the_fields_when_a_value_is_refused():
    parsed = parse_skill(skill("name: Bad_Name\nname: again\ndescription: !!python/name:os.system\nversion: [1]\n"))
    assert [(issue.field, issue.line) for issue in parsed.errors] == [
        ("frontmatter", 3),
        ("frontmatter", 4),
        ("name", 2),
        ("version", 5),
    ]


def test_it_refuses_aliases():
    parsed = parse_skill(skill("name: a\ndescription: &d text\nlicense: *d\n"))
    assert only_error(parsed) == Issue("frontmatter", "YAML aliases are not allowed (found '*d')", 4)


def test_it_refuses_a_billion_laughs_quickly_and_in_little_memory():
    parsed, elapsed, peak = measure(billion_laughs(width=9, levels=10))
    error = only_error(parsed)
    assert (error.message, error.line) == ("YAML aliases are not allowed (found '*lol0')", 5)
    assert elapsed < 2
    assert peak < MEMORY_LIMIT


def test_it_allows_anchors_that_nothing_refers_to():
    parsed = parse_skill(skill("name: a\ndescription: &d text\nmetadata: &m {x: 1}\n"))
    assert parsed.ok
    assert parsed.frontmatter["metadata"] == {"x": 1}


def test_it_refuses_merge_keys():
    parsed = parse_skill(skill("name: a\ndescription: b\nmetadata:\n  <<: {x: 1}\n"))
    assert only_error(parsed) == Issue("frontmatter", "YAML merge keys ('<<') are not allowed", 5)


def test_it_reads_plain_merge_and_value_markers_as_text():
    parsed = parse_skill(skill("name: a\ndescription: <<\nlicense: =\n"))
    assert parsed.ok
    assert (parsed.description, parsed.frontmatter["license"]) == ("<<", "=")


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_it_allows_twenty_levels_of_nesting():
    # The frontmatter mapping is level 1.
    parsed = parse_skill(skill(f"name: a\ndescription: b\nmetadata: {{x: {nested(18)}}}\n"))
    assert parsed.ok, parsed.errors


def test_it_refuses_more_than_twenty_levels_of_nesting():
    parsed = parse_skill(skill(f"name: a\ndescription: b\nmetadata: {{x: {nested(19)}}}\n"))
    assert only_error(parsed) == Issue("frontmatter", "frontmatter is nested more than 20 levels deep", 4)


@pytest.mark.parametrize(
    "nesting",
    [
        "metadata: " + nested(30_000) + "\n",
        "metadata: " + "{a: " * 12_000 + "1" + "}" * 12_000 + "\n",
        "metadata:\n" + "- " * 30_000 + "x\n",
        "metadata:\n" + "".join(" " * level + "k:\n" for level in range(1, 300)) + " " * 300 + "k: x\n",
    ],
    ids=["flow-sequences", "flow-mappings", "block-sequences", "block-mappings"],
)
def test_it_refuses_thousands_of_levels_quickly_and_in_little_memory(nesting):
    parsed, elapsed, peak = measure(skill("name: a\ndescription: b\n" + nesting))
    assert messages(parsed) == ["frontmatter is nested more than 20 levels deep"]
    assert elapsed < 2
    assert peak < MEMORY_LIMIT


def test_it_turns_a_recursion_error_into_an_error(monkeypatch):
    def overflow(self, parent, index):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(skill_format._FrontmatterLoader, "compose_node", overflow)
    parsed = parse_skill(skill())
    assert only_error(parsed) == Issue("frontmatter", "frontmatter is nested too deeply to read", 1)


def test_it_never_constructs_python_objects(tmp_path):
    marker = tmp_path / "pwned"
    hostile = [
        f"!!python/object/apply:os.system ['touch {marker}']",
        f"!!python/object/apply:subprocess.call [[touch, '{marker}']]",
        f"!!python/object/new:subprocess.Popen [[touch, '{marker}']]",
        f"!!python/object/apply:builtins.exec [\"open('{marker}', 'w').close()\"]",
    ]
    for value in hostile:
        parsed = parse_skill(skill(f"name: a\ndescription: {value}\n"))
        error = only_error(parsed)
        assert error.field == "frontmatter" and error.line == 3
        assert re.fullmatch(r"YAML tag '!!python/object/(apply|new):[\w.]+' is not allowed", error.message)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("!!python/name:os.system ''", "!!python/name:os.system"),
        ("!!python/module:os ''", "!!python/module:os"),
        ("!!python/tuple [1, 2]", "!!python/tuple"),
        ("!!set {a, b}", "!!set"),
        ("!!omap [{a: 1}]", "!!omap"),
        ("!custom value", "!custom"),
        ("!<tag:example.com,2000:thing> value", "tag:example.com,2000:thing"),
    ],
)
def test_it_refuses_tags_outside_the_standard_scalars_and_collections(value, tag):
    error = only_error(parse_skill(skill(f"name: a\ndescription: b\nmetadata: {{x: {value}}}\n")))
    assert error == Issue("frontmatter", f"YAML tag '{tag}' is not allowed", 4)


def test_it_accepts_standard_explicit_tags():
    parsed = parse_skill(
        skill("name: !!str a\ndescription: !!str 12\nversion: !!int '3'\nmetadata: !!map {x: !!seq []}\n")
    )
    assert parsed.ok, parsed.errors
    assert (parsed.description, parsed.frontmatter["version"]) == ("12", 3)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("!!int abc", "'abc' is not a valid !!int value"),
        ("!!bool maybe", "'maybe' is not a valid !!bool value"),
        ("!!float x", "'x' is not a valid !!float value"),
        ("2024-13-45", "'2024-13-45' is not a valid !!timestamp value"),
        ("!!binary 'a'", "'a' is not a valid !!binary value"),
        ("1" * 5000, "'" + "1" * 79 + "…' is not a valid !!int value"),
    ],
)
def test_it_reports_scalars_that_cannot_be_read(value, message):
    assert only_error(parse_skill(skill(f"name: a\ndescription: b\nversion: {value}\n"))) == Issue(
        "frontmatter", message, 4
    )


@pytest.mark.parametrize("frontmatter", ["- name\n- description\n", "just text\n", "42\n", "!!set {name}\n"])
def test_it_requires_the_frontmatter_to_be_a_mapping(frontmatter):
    parsed = parse_skill(skill(frontmatter))
    assert only_error(parsed) == Issue("frontmatter", "frontmatter must be a YAML mapping of keys to values", 2)


def test_it_treats_an_empty_frontmatter_as_missing_its_required_keys():
    for frontmatter in ("", "# only a comment\n", "\n\n"):
        assert messages(parse_skill(skill(frontmatter))) == [
            "frontmatter missing required 'name' field",
            "frontmatter missing required 'description' field",
        ]


def test_it_refuses_keys_that_are_lists_or_mappings():
    parsed = parse_skill(skill("name: a\ndescription: b\n? [x, y]\n: 1\n"))
    assert only_error(parsed) == Issue("frontmatter", "frontmatter keys must be plain values, not lists or mappings", 4)


# name ------------------------------------------------------------------------------------------------------------


def test_it_requires_a_name():
    parsed = parse_skill(skill("description: b\n"))
    assert only_error(parsed) == Issue("name", "frontmatter missing required 'name' field")


KEBAB = (
    "name must be kebab-case: lowercase letters and digits in groups joined by single hyphens, "
    "with no leading or trailing hyphen"
)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Deep-Review", KEBAB),
        ("deep_review", KEBAB),
        ("-deep", KEBAB),
        ("deep-", KEBAB),
        ("deep--review", KEBAB),
        ("deep review", KEBAB),
        ("déep", KEBAB),
        ("deep\n", KEBAB),
        ("ｄeep", KEBAB),
        ("", "name must not be empty"),
        ("a" * 65, "name is longer than 64 characters"),
        (123, "name must be a string"),
        (None, "name must be a string"),
        (["a"], "name must be a string"),
    ],
)
def test_it_rejects_bad_names(name, message):
    assert validate_name(name) == message


@pytest.mark.parametrize("name", ["a", "0", "deep-review", "a1-b2-c3", "a" * 64, "-".join("ab" * 10 for _ in range(3))])
def test_it_accepts_kebab_case_names(name):
    assert validate_name(name) is None
    assert parse_skill(skill(f"name: '{name}'\ndescription: d\n")).ok


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("Bad_Name", KEBAB),
        ("''", "name must not be empty"),
        ("a" * 65, "name is longer than 64 characters"),
        ("123", "name must be a string (put the value in quotes)"),
        ("true", "name must be a string (put the value in quotes)"),
        ("", "name must be a string (put the value in quotes)"),
        ("[a]", "name must be a string"),
        ("|\n  abc", KEBAB),
    ],
)
def test_it_reports_a_bad_name_on_its_line(value, message):
    parsed = parse_skill(skill(f"description: d\nname: {value}\n"))
    assert only_error(parsed) == Issue("name", message, 3)


def test_it_requires_the_name_to_match_the_directory():
    parsed = parse_skill(skill(), directory_name="deep-review")
    assert parsed.ok
    parsed = parse_skill(skill(), directory_name="review")
    assert only_error(parsed) == Issue(
        "name", "name 'deep-review' does not match the skill's directory name 'review'", 2
    )
    assert parsed.name == "deep-review"


def test_it_reports_both_a_bad_name_and_a_directory_mismatch():
    parsed = parse_skill(skill("name: Review\ndescription: d\n"), directory_name="review")
    assert messages(parsed) == [KEBAB, "name 'Review' does not match the skill's directory name 'review'"]


# description -----------------------------------------------------------------------------------------------------


def test_it_requires_a_description():
    parsed = parse_skill(skill("name: a\n"))
    assert only_error(parsed) == Issue("description", "frontmatter missing required 'description' field")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("''", "description must not be empty"),
        ("'   '", "description must not be empty"),
        ("", "description must be a string (put the value in quotes)"),
        ("42", "description must be a string (put the value in quotes)"),
        ("{a: 1}", "description must be a string"),
    ],
)
def test_it_reports_a_bad_description_on_its_line(value, message):
    assert only_error(parse_skill(skill(f"name: a\ndescription: {value}\n"))) == Issue("description", message, 3)


def test_it_limits_the_description_to_4096_bytes():
    at_limit = "€" * 1365 + "a"  # 4096 bytes, 1366 characters
    parsed = parse_skill(skill(f"name: a\ndescription: {at_limit}\n"))
    assert parsed.ok
    assert parsed.description == at_limit

    parsed = parse_skill(skill(f"name: a\ndescription: {at_limit}b\n"))
    assert only_error(parsed) == Issue("description", "description is longer than 4096 bytes", 3)


def test_it_warns_about_a_description_the_catalog_shortens():
    exact = "d" * CATALOG_DESCRIPTION_CHARS
    parsed = parse_skill(skill(f"name: a\ndescription: {exact}\n"))
    assert parsed.ok and parsed.warnings == ()

    parsed = parse_skill(skill(f"name: a\ndescription: {exact}d\n"))
    assert parsed.ok
    assert parsed.warnings == (
        Issue(
            "description",
            "description is longer than 1024 characters: the prompt catalog shows only its first 1023 characters "
            "followed by '…'",
            3,
            "warning",
        ),
    )


def test_it_shortens_long_descriptions_for_the_catalog():
    assert catalog_description("short") == "short"
    exact = "é" * 1024
    assert catalog_description(exact) == exact
    shortened = catalog_description("x" * 1023 + "yz")
    assert shortened == "x" * 1023 + "…"
    assert len(shortened) == 1024
    assert catalog_description("😀" * 2000) == "😀" * 1023 + "…"


# Optional keys ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("compatibility: ''", "compatibility", "compatibility must not be empty"),
        ("compatibility: " + "c" * 501, "compatibility", "compatibility is longer than 500 characters"),
        ("compatibility: 3", "compatibility", "compatibility must be a string (put the value in quotes)"),
        ("compatibility: [py3]", "compatibility", "compatibility must be a string"),
        ("license: " + "l" * 201, "license", "license is longer than 200 characters"),
        ("license: ''", "license", "license must not be empty"),
        ("license: {spdx: MIT}", "license", "license must be a string"),
        ("allowed-tools: 3", "allowed-tools", "allowed-tools must be a space-separated string or a list of strings"),
        (
            "allowed-tools: [Read, 3]",
            "allowed-tools",
            "allowed-tools must be a space-separated string or a list of strings",
        ),
        (
            "allowed-tools: [Read, '']",
            "allowed-tools",
            "allowed-tools must be a space-separated string or a list of strings",
        ),
        (
            "allowed-tools: {Read: yes}",
            "allowed-tools",
            "allowed-tools must be a space-separated string or a list of strings",
        ),
        ("metadata: [a]", "metadata", "metadata must be a mapping of keys to values"),
        ("metadata: text", "metadata", "metadata must be a mapping of keys to values"),
        ("metadata:", "metadata", "metadata must be a mapping of keys to values"),
        ("version: true", "version", "version must be a string or a number"),
        ("version: [1]", "version", "version must be a string or a number"),
        ("version: 2024-01-01", "version", "version must be a string or a number"),
    ],
)
def test_it_checks_the_optional_keys(line, field, message):
    assert only_error(parse_skill(skill(f"name: a\ndescription: d\n{line}\n"))) == Issue(field, message, 4)


@pytest.mark.parametrize(
    "line",
    [
        "compatibility: " + "c" * 500,
        "license: " + "l" * 200,
        "version: 2",
        "version: '1.0.0'",
        "version: 1.5",
        "metadata: {}",
        "allowed-tools: ''",
    ],
)
def test_it_accepts_optional_keys_at_their_limits(line):
    assert parse_skill(skill(f"name: a\ndescription: d\n{line}\n")).ok


@pytest.mark.parametrize(
    ("value", "tools"),
    [("'Read  Grep\tBash'", ["Read", "Grep", "Bash"]), ("[Read, 'Bash(git status)']", ["Read", "Bash(git status)"])],
)
def test_it_reads_allowed_tools_as_a_string_or_a_list(value, tools):
    parsed = parse_skill(skill(f"name: a\ndescription: d\nallowed-tools: {value}\n"))
    assert parsed.ok
    assert parsed.allowed_tools == tools


def test_it_warns_about_unknown_keys():
    parsed = parse_skill(skill("name: a\ndescription: d\nauthor: me\n1: one\n"))
    assert parsed.ok
    assert parsed.warnings == (
        Issue(
            "author",
            "unknown frontmatter key 'author': product-specific fields go under 'metadata.<product>'",
            4,
            "warning",
        ),
        Issue("1", "unknown frontmatter key '1': product-specific fields go under 'metadata.<product>'", 5, "warning"),
    )


def test_it_can_make_unknown_keys_errors():
    parsed = parse_skill(skill("name: a\ndescription: d\nauthor: me\n"), unknown_keys_are_errors=True)
    assert only_error(parsed) == Issue(
        "author", "unknown frontmatter key 'author': product-specific fields go under 'metadata.<product>'", 4
    )
    assert parsed.warnings == ()


# Body ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", ["", "\n", "\n\n  \n\t\n", "   "])
def test_it_requires_a_body(body):
    parsed = parse_skill(f"---\nname: a\ndescription: d\n---\n{body}")
    assert only_error(parsed) == Issue("body", "Skill body is required", 5)
    assert parsed.body == ""


def test_it_collects_every_error_in_one_pass():
    parsed = parse_skill(
        "---\nname: Bad\ndescription: ''\nlicense: 1\nversion: [x]\nextra: 1\n---\n", directory_name="bad"
    )
    assert [issue.field for issue in parsed.errors] == ["name", "name", "description", "license", "version", "body"]
    assert [issue.field for issue in parsed.warnings] == ["extra"]


# Supporting-file paths -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "path is required"),
        (None, "path is required"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("\\windows\\system.ini", "absolute paths are not allowed"),
        ("C:/boot.ini", "absolute paths are not allowed"),
        ("..", "path traversal is not allowed"),
        ("../secret", "path traversal is not allowed"),
        ("roles/../../secret", "path traversal is not allowed"),
        ("roles\\..\\secret", "path traversal is not allowed"),
        (".env", "hidden file components are not allowed"),
        ("roles/.git/config", "hidden file components are not allowed"),
        ("roles/..hidden", "hidden file components are not allowed"),
        ("roles/file name.md", "path may only contain letters, digits, '.', '_', '-' and '/'"),
        ("roles/ünïcode.md", "path may only contain letters, digits, '.', '_', '-' and '/'"),
        ("roles/a\x00b", "path may only contain letters, digits, '.', '_', '-' and '/'"),
        ("roles/file\n", "path may only contain letters, digits, '.', '_', '-' and '/'"),
        ("a/" + "b" * 499, "path is longer than 500 characters"),
        ("roles//a.md", "path must not contain empty or '.' segments"),
        ("roles/", "path must not contain empty or '.' segments"),
        ("./roles/a.md", "path must not contain empty or '.' segments"),
        ("roles/./a.md", "path must not contain empty or '.' segments"),
        (".", "path must not contain empty or '.' segments"),
    ],
)
def test_it_refuses_unsafe_supporting_file_paths(path, message):
    assert check_relative_path(path) == message


@pytest.mark.parametrize("path", ["SKILL.md", "roles/security-reviewer.md", "scripts/run_1.sh", "a" * 500, "a.b.c"])
def test_it_accepts_safe_supporting_file_paths(path):
    assert check_relative_path(path) is None


# Properties: nothing raises --------------------------------------------------------------------------------------


def repeated(chunks: st.SearchStrategy[str], min_size: int = 0, max_size: int = 100_000) -> st.SearchStrategy[str]:
    """Long strings, cheaply: a short random chunk repeated to a random size between the bounds."""
    return st.builds(
        lambda chunk, size: (chunk * (size // len(chunk) + 1))[:size], chunks, st.integers(min_size, max_size)
    )


YAML_ALPHABET = st.sampled_from(
    list("-:[]{},?&*!|>'\"#%@`\\ \t\n\r\ufeff\x00\x85aZ0.~") + ["---", "...", "<<", "\u2028"]
)
yaml_ish = st.lists(YAML_ALPHABET, max_size=200).map("".join)


@settings(BASE, max_examples=400)
@given(st.text(max_size=2000) | st.text(alphabet=st.characters(codec="utf-8"), max_size=500))
def test_it_never_raises_on_random_text(text):
    assert_well_formed(parse_skill(text))
    assert_well_formed(parse_skill("---\n" + text))
    assert_well_formed(parse_skill("---\n" + text + "\n---\nbody"))


@settings(BASE, max_examples=400)
@given(st.binary(max_size=2000))
def test_it_never_raises_on_random_bytes(data):
    assert_well_formed(parse_skill(data))
    assert_well_formed(parse_skill(b"---\n" + data + b"\n---\nbody"))
    assert_well_formed(parse_skill(b"\xef\xbb\xbf---\nname: a\ndescription: " + data + b"\n---\nbody"))


@settings(BASE, max_examples=400)
@given(yaml_ish, yaml_ish)
def test_it_never_raises_on_yaml_like_text(frontmatter, body):
    assert_well_formed(parse_skill(f"---\n{frontmatter}\n---\n{body}"))
    assert_well_formed(parse_skill(f"---\nname: a\ndescription: d\nmetadata:\n  {frontmatter}\n---\n{body}"))


@settings(BASE, max_examples=40)
@given(repeated(st.text(min_size=1, max_size=8)) | repeated(yaml_ish.filter(bool), max_size=70_000))
def test_it_never_raises_on_huge_text(text):
    for content in (text, "---\n" + text + "\n---\nbody", "---\nname: a\ndescription: " + text + "\n---\nbody"):
        parsed = parse_skill(content)
        assert_well_formed(parsed)
        assert parsed.oversize == (len(content.encode("utf-8", "surrogatepass")) > MAX_SKILL_BYTES)


@settings(BASE, max_examples=40)
@given(st.binary(min_size=1, max_size=16), st.integers(0, 100_000))
def test_it_never_raises_on_huge_bytes(chunk, size):
    data = (chunk * (size // len(chunk) + 1))[:size]
    parsed = parse_skill(data)
    assert_well_formed(parsed)
    assert parsed.oversize == (size > MAX_SKILL_BYTES)


# Properties: hostile YAML ----------------------------------------------------------------------------------------


NESTING_STYLES = {
    "flow-sequences": lambda n: "metadata: " + "[" * n + "]" * n,
    "flow-mappings": lambda n: "metadata: " + "{a: " * n + "1" + "}" * n,
    "flow-mixed": lambda n: "metadata: " + "[{a: " * (n // 2 + 1) + "1" + "}]" * (n // 2 + 1),
    "block-sequences": lambda n: "metadata:\n" + "- " * n + "x",
    "block-mappings": lambda n: "metadata:\n" + "".join(" " * i + "k:\n" for i in range(1, n)) + " " * n + "k: x",
    "unclosed": lambda n: "metadata: " + "[" * n,
}


@settings(BASE, max_examples=60)
@given(st.sampled_from(sorted(NESTING_STYLES)), st.integers(20, 5000))
def test_it_refuses_deep_nesting_of_any_style(style, levels):
    if style == "block-mappings":
        levels = min(levels, 340)  # its size grows with the square of the depth
    parsed = parse_skill(skill("name: a\ndescription: b\n" + NESTING_STYLES[style](levels) + "\n"))
    assert_well_formed(parsed)
    assert messages(parsed) == ["frontmatter is nested more than 20 levels deep"]


@settings(BASE, max_examples=10)
@given(st.sampled_from(["[", "{", "- ", "[{a: ", "? ", "{a: ["]), st.integers(1_000, 100_000))
def test_it_never_raises_on_unwrapped_deep_nesting(opener, levels):
    for text in (opener * levels, "---\n" + opener * levels + "\n---\nbody"):
        assert_well_formed(parse_skill(text))


@settings(BASE, max_examples=40)
@given(st.integers(2, 30), st.integers(2, 30))
def test_it_refuses_alias_bombs(width, levels):
    parsed = parse_skill(billion_laughs(width, levels))
    assert_well_formed(parsed)
    assert messages(parsed) == ["YAML aliases are not allowed (found '*lol0')"]


@settings(BASE, max_examples=20)
@given(st.integers(1, 2500), st.booleans())
def test_it_reads_many_anchors_and_refuses_any_alias_to_them(count, with_alias):
    anchors = "".join(f"  - &anchor{i} value{i}\n" for i in range(count))
    alias = f"  - *anchor{count - 1}\n" if with_alias else ""
    parsed = parse_skill(skill("name: a\ndescription: b\nmetadata:\n list:\n" + anchors + alias))
    assert_well_formed(parsed)
    if with_alias:
        assert messages(parsed) == [f"YAML aliases are not allowed (found '*anchor{count - 1}')"]
    else:
        assert parsed.ok
        assert len(parsed.frontmatter["metadata"]["list"]) == count


PYTHON_TAGS = [
    "!!python/object/apply:os.system ['echo pwned']",
    "!!python/object/new:os.system ['echo pwned']",
    "!!python/object:builtins.object {}",
    "!!python/name:os.system ''",
    "!!python/module:os ''",
    "!!python/str text",
    "!!python/bytes aGk=",
    "!!python/tuple [1]",
    "!!python/dict {a: 1}",
    "!<tag:yaml.org,2002:python/object/apply:os.system> ['echo pwned']",
]


TAG_PLACES = {
    "name": lambda value: f"description: d\nname: {value}\n",
    "description": lambda value: f"name: a\ndescription: {value}\n",
    "nested value": lambda value: f"name: a\ndescription: d\nmetadata: {{k: [{value}]}}\n",
    "key": lambda value: f"name: a\ndescription: d\n? {value}\n: v\n",
}


@settings(BASE, max_examples=40)
@given(st.sampled_from(PYTHON_TAGS), st.sampled_from(sorted(TAG_PLACES)))
def test_it_refuses_python_tags_anywhere(tagged, place):
    parsed = parse_skill(skill(TAG_PLACES[place](tagged)))
    assert_well_formed(parsed)
    assert [issue.field for issue in parsed.errors] == ["frontmatter"]
    assert re.fullmatch(r"YAML tag '(!!|tag:yaml\.org,2002:)python/[^']+' is not allowed", parsed.errors[0].message)


@settings(BASE, max_examples=20)
@given(st.integers(1, 60_000), st.sampled_from(["explicit", "simple", "quoted"]))
def test_it_never_raises_on_huge_keys(length, style):
    key = "k" * length
    entry = {"explicit": f"? {key}\n: v\n", "simple": f"{key}: v\n", "quoted": f'"{key}": v\n'}[style]
    parsed = parse_skill(skill("name: a\ndescription: d\n" + entry))
    assert_well_formed(parsed)
    if style == "explicit":
        assert parsed.ok
        assert [issue.field for issue in parsed.warnings] == [key if length <= 80 else key[:79] + "…"]
    elif length > 1024:  # YAML caps a simple key at 1024 characters
        assert not parsed.ok


# Properties: valid skills round-trip -----------------------------------------------------------------------------


names = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,6}", fullmatch=True).filter(lambda n: len(n) <= MAX_NAME_CHARS)
line_characters = st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp"), exclude_characters="\ufeff")
descriptions = (
    st.text(alphabet=line_characters, min_size=1, max_size=300)
    | repeated(st.text(alphabet=line_characters, min_size=1, max_size=6), 1000, 1500)
).filter(lambda d: d.strip() and len(d.encode("utf-8")) <= MAX_DESCRIPTION_BYTES)
body_characters = st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\r\x00")
bodies = (
    st.text(alphabet=body_characters, min_size=1, max_size=2000)
    | repeated(st.text(alphabet=body_characters, min_size=1, max_size=6), 2000, 50_000)
).filter(lambda b: b.strip() and not re.match(r"[ \t]*(\n|$)", b) and len(b.encode("utf-8")) <= 50_000)
optional_keys = st.fixed_dictionaries(
    {},
    optional={
        "license": st.text(alphabet=line_characters, min_size=1, max_size=200).filter(str.strip),
        "compatibility": st.text(alphabet=line_characters, min_size=1, max_size=500).filter(str.strip),
        "allowed-tools": st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,15}", fullmatch=True), max_size=5),
        "version": st.integers(0, 10**6) | st.from_regex(r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}", fullmatch=True),
        "metadata": st.dictionaries(
            st.from_regex(r"[a-z]{1,10}", fullmatch=True), st.text(alphabet=line_characters, max_size=50), max_size=3
        ),
    },
)


def render(frontmatter: dict, body: str, blank_lines: int) -> str:
    dumped = yaml.safe_dump(frontmatter, allow_unicode=True, sort_keys=False, width=10**9)
    return "---\n" + dumped + "---\n" + "\n" * blank_lines + body


@settings(BASE, max_examples=200)
@given(names, descriptions, optional_keys, bodies, st.integers(0, 3))
def test_it_round_trips_valid_skills(name, description, extra, body, blank_lines):
    frontmatter = {"name": name, "description": description, **extra}
    text = render(frontmatter, body, blank_lines)
    for content in (text, text.encode("utf-8"), "\ufeff" + text):
        parsed = parse_skill(content, directory_name=name, unknown_keys_are_errors=True)
        assert parsed.ok, parsed.errors
        assert (parsed.name, parsed.description, parsed.body) == (name, description, body)
        assert parsed.frontmatter == frontmatter
        assert parsed.allowed_tools == extra.get("allowed-tools", [])
        assert [issue.field for issue in parsed.warnings] == (
            ["description"] if len(description) > CATALOG_DESCRIPTION_CHARS else []
        )


@settings(BASE, max_examples=200)
@given(names, descriptions, bodies, st.randoms(use_true_random=False))
def test_it_round_trips_valid_skills_with_any_mix_of_line_endings(name, description, body, random):
    text = render({"name": name, "description": description}, body, 1)
    mixed = []
    for index, character in enumerate(text):
        if character != "\n":
            mixed.append(character)
            continue
        # A lone CR directly followed by a LF would read as one CRLF line break, so it is only drawn before other text.
        followed_by_lf = text[index + 1 : index + 2] == "\n"
        mixed.append(random.choice(["\n", "\r\n"] if followed_by_lf else ["\n", "\r\n", "\r"]))
    parsed = parse_skill("".join(mixed))
    assert parsed.ok, parsed.errors
    assert (parsed.name, parsed.description, parsed.body) == (name, description, body)
