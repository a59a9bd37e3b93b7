"""Markdown to readable text, line for line.

The text keeps every line of the file where it was (a line dropped becomes an empty
line), so a passage's line numbers are the file's. Outside code (fenced blocks and
`` `code spans` `` stay exactly as written, URLs included):

- lines made only of images, badges, links, HTML tags or link reference definitions
  (a project's badge row, a table of contents, ``<p align="center"><img ...></p>``)
  are emptied, and so are sponsor lines (a line naming sponsors, backers or donations
  with a link or an image) and the lines under a "Sponsors" or "Backers" heading;
- an image is dropped, a link ``[text](url)`` becomes its text;
- ``**bold**``, ``*emphasis*`` and ``__bold__`` lose their markers; underscores are
  emphasis only around words with a space between them, so ``__init__`` and
  ``snake_case`` stay as they are;
- HTML entities are decoded and inline HTML tags dropped.

Headings (``#`` lines outside code) are reported with their level, for passages'
heading paths; the title is the first heading when it is a level-1 heading (a README's
first "## Quickstart" names a section, not the document).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Final

__all__ = ["MarkdownText", "markdown_text"]

_FENCE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING: Final = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_HTML_HEADING: Final = re.compile(r"^\s*<h([1-6])(?:\s[^>]*)?>(.*?)</h\1>\s*$", re.I)
_CODE_SPAN: Final = re.compile(r"(`+)(.+?)\1")
_IMAGE: Final = re.compile(r"!\[[^\]]*\]\([^)\s]*(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\[[^\]]*\]")
_LINKED_IMAGE: Final = re.compile(r"\[\s*!\[[^\]]*\]\([^)]*\)\s*\]\([^)]*\)")
_LINK: Final = re.compile(r"\[([^\]]*)\]\(\s*<?[^)\s>]*>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REF_LINK: Final = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_REF_DEFINITION: Final = re.compile(r"^ {0,3}\[[^\]]+\]:\s*\S+")
_AUTOLINK: Final = re.compile(r"<(?:https?|ftp|mailto):[^>\s]*>")
_TAG: Final = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>|<!--.*?-->")
_STRONG: Final = re.compile(r"(?<![\w*])\*\*(?=\S)(.+?)(?<=\S)\*\*(?![\w*])")
_EMPHASIS: Final = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])")
_UNDERSCORES: Final = re.compile(r"(?<![\w_])(__?)(?=[^\s_])([^_]*?\s[^_]*?)(?<=[^\s_])\1(?![\w_])")
_NOTHING_LEFT: Final = re.compile(r"^[\s|·•*+>\-\u2013\u2014,;:/()\[\]]*$")
_SPONSOR: Final = re.compile(
    r"\b(?:sponsor(?:s|ed|ing|ship)?|backers?|donat(?:e|ions?)|patreon|open ?collective|"
    r"buy me a coffee|ko-fi|github sponsors|funding)\b",
    re.I,
)
_SPONSOR_HEADING: Final = re.compile(r"^\W*(?:sponsors?|backers|sponsorship|donations?)\W*$", re.I)
_CODE_MARK: Final = "\x00"


@dataclass(slots=True, kw_only=True)
class MarkdownText:
    """A Markdown file's readable text, line for line, and its headings."""

    title: str
    """The first heading (markup dropped, entities decoded), else ``""``."""
    text: str
    """The text: as many lines as the file."""
    headings: list[tuple[int, int, str]] = field(default_factory=list)
    """``(offset in text, level 1-6, heading)`` for every heading outside code."""


def _inline(line: str) -> str:
    """A line of prose with its inline markup removed (code spans untouched)."""
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:
        spans.append(match.group())
        return f"{_CODE_MARK}{len(spans) - 1}{_CODE_MARK}"

    line = _CODE_SPAN.sub(keep, line)
    line = _LINKED_IMAGE.sub("", line)
    line = _IMAGE.sub("", line)
    line = _LINK.sub(lambda m: m.group(1), line)
    line = _REF_LINK.sub(lambda m: m.group(1), line)
    line = _AUTOLINK.sub(lambda m: m.group()[1:-1], line)
    line = _TAG.sub("", line)
    line = _STRONG.sub(lambda m: m.group(1), line)
    line = _EMPHASIS.sub(lambda m: m.group(1), line)
    line = _UNDERSCORES.sub(lambda m: m.group(2), line)
    line = html.unescape(line)
    if spans:
        line = re.sub(f"{_CODE_MARK}(\\d+){_CODE_MARK}", lambda m: spans[int(m.group(1))], line)
    return line


def _only_links(line: str) -> bool:
    """A line of nothing but images, badges, links, tags or a reference definition."""
    if _REF_DEFINITION.match(line):
        return True
    stripped = _CODE_SPAN.sub("code", line)
    rest = _LINK.sub("", _IMAGE.sub("", _LINKED_IMAGE.sub("", stripped)))
    rest = _TAG.sub("", _AUTOLINK.sub("", rest))
    changed = rest != stripped
    return changed and bool(_NOTHING_LEFT.match(html.unescape(rest)))


def _sponsor(line: str) -> bool:
    """A short line about sponsors or donations that links somewhere."""
    has_link = bool(_LINK.search(line) or _IMAGE.search(line) or _TAG.search(line))
    return has_link and len(line) < 400 and bool(_SPONSOR.search(line))


def markdown_text(source: str) -> MarkdownText:
    """The readable text of a Markdown file (see the module's docstring)."""
    lines = source.split("\n")
    out: list[str] = []
    headings: list[tuple[int, int, str]] = []
    fence = ""
    sponsors_level = 0
    offset = 0
    for raw in lines:
        line = raw
        opened = _FENCE.match(raw)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
        elif opened:
            fence = opened.group(1)
        else:
            heading = _HEADING.match(raw) or _HTML_HEADING.match(raw)
            if heading:
                marks = heading.group(1)
                level = int(marks) if marks.isdigit() else len(marks)
                title = " ".join(_inline(heading.group(2) or "").split())
                if sponsors_level and level <= sponsors_level:
                    sponsors_level = 0
                if _SPONSOR_HEADING.match(title):
                    sponsors_level = level
                    line = ""
                elif title:
                    headings.append((offset + len(raw) - len(raw.lstrip()), level, title))
                    line = raw[: len(raw) - len(raw.lstrip())] + "#" * level + " " + title
                else:
                    line = ""
            elif sponsors_level or _only_links(raw) or _sponsor(raw):
                line = ""
            else:
                line = _inline(raw)
        out.append(line)
        offset += len(line) + 1
    title = headings[0][2] if headings and headings[0][1] == 1 else ""  # else a section's name
    return MarkdownText(title=title[:200], text="\n".join(out), headings=headings)
