"""Rendering skill bodies safely, and packing skills into archives."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

# Raw HTML in a body is shown as text, and whatever the Markdown makes is sanitized again.
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def markdown_to_html(text: str) -> SafeString:
    """Render a skill body. Headings move one level down (# → h2) so the page keeps its own single h1."""
    tokens = _markdown.parse(text)
    for token in tokens:
        if token.type in {"heading_open", "heading_close"}:
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"
    html = _markdown.renderer.render(tokens, _markdown.options, {})
    clean = nh3.clean(html, url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer nofollow")
    return mark_safe(clean)  # noqa: S308 - sanitized by nh3 just above


def zip_skills(skills: Iterable) -> bytes:
    """A zip with one ``<name>/SKILL.md`` per skill, the stored text byte for byte."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for skill in skills:
            info = zipfile.ZipInfo(f"{skill.name}/SKILL.md", date_time=skill.updated_at.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, skill.content.encode("utf-8"))
    return buffer.getvalue()
