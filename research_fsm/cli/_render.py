"""Answers in the terminal: Markdown drawn by ``rich`` on a terminal, plain text when
the output is piped or saved (no ``**``, no table pipes), the raw text never.

Every text is passed through ``for_terminal`` first (no escape sequences from the
data), and ``rich`` draws Markdown as text, never as its own markup.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from typing import Any, Final, TextIO

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from ..common.text import for_terminal

__all__ = ["AnswerView", "plain_text", "print_markdown"]

_MD: Final = MarkdownIt("commonmark", {"html": False}).enable("table")
_NO_RICH: Final = (
    "research-fsm: the `rich` package is missing, so answers print as plain text "
    "(pip install rich for formatted answers)"
)
_warned: list[bool] = []


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal (wide East Asian characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _inline(node: SyntaxTreeNode) -> str:
    """An inline run as plain text: emphasis dropped, a link as ``text (url)``."""
    out: list[str] = []
    for child in node.children:
        kind = child.type
        if kind in ("text", "code_inline"):
            out.append(child.content)
        elif kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind == "link":
            text, href = _inline(child), str(child.attrs.get("href", ""))
            out.append(text if not href or href in (text, f"mailto:{text}") else f"{text} ({href})")
        else:
            out.append(_inline(child))
    return "".join(out)


def _table(node: SyntaxTreeNode) -> list[str]:
    """A table as aligned columns, a rule under the header."""
    rows: list[list[str]] = []
    for section in node.children:
        for row in section.children:
            cells = [_inline(cell.children[0]) if cell.children else "" for cell in row.children]
            rows.append([" ".join(cell.split()) for cell in cells])
    if not rows:
        return []
    count = max(len(row) for row in rows)
    rows = [row + [""] * (count - len(row)) for row in rows]
    widths = [max(_width(row[i]) for row in rows) for i in range(count)]

    def line(row: list[str]) -> str:
        cells = [cell + " " * (widths[i] - _width(cell)) for i, cell in enumerate(row)]
        return "  ".join(cells).rstrip()

    return [line(rows[0]), "  ".join("-" * w for w in widths), *(line(r) for r in rows[1:])]


def _blocks(node: SyntaxTreeNode, indent: str = "") -> list[str]:
    """Block nodes as paragraphs of plain text (each a string, maybe several lines)."""
    out: list[str] = []
    for child in node.children:
        kind = child.type
        if kind in ("paragraph", "heading"):
            text = _inline(child.children[0]) if child.children else ""
            out.append("\n".join(indent + line for line in text.split("\n")))
        elif kind in ("bullet_list", "ordered_list"):
            out.append(_list(child, indent))
        elif kind in ("fence", "code_block"):
            out.append(
                "\n".join(f"{indent}    {line}" for line in child.content.rstrip("\n").split("\n"))
            )
        elif kind == "blockquote":
            out.extend(_blocks(child, indent + "  "))
        elif kind == "hr":
            out.append(indent + "-" * 20)
        elif kind == "table":
            out.append("\n".join(indent + line for line in _table(child)))
        else:
            out.extend(_blocks(child, indent))
    return out


def _list(node: SyntaxTreeNode, indent: str) -> str:
    start = int(str(node.attrs.get("start", 1) or 1))
    lines: list[str] = []
    for number, item in enumerate(node.children, start=start):
        marker = f"{number}. " if node.type == "ordered_list" else "- "
        body = "\n".join(_blocks(item, indent + " " * len(marker)))
        body = (
            body[len(indent) + len(marker) :]
            if body.startswith(indent + " " * len(marker))
            else body.lstrip()
        )
        lines.append(indent + marker + body)
    return "\n".join(lines)


def plain_text(markdown: str) -> str:
    """``markdown`` as plain text for a pipe or a file: headings and bold as their
    words, lists as ``- `` lines, tables as aligned columns, links as ``text (url)``."""
    return "\n\n".join(_blocks(SyntaxTreeNode(_MD.parse(for_terminal(markdown)))))


def _rich(out: TextIO) -> tuple[Any, Any] | None:
    """``rich``'s console on ``out`` and its Markdown class, or ``None`` (said once)."""
    try:
        from rich.console import Console
        from rich.markdown import Markdown
    except ImportError:
        if not _warned:
            _warned.append(True)
            print(_NO_RICH, file=sys.stderr)
        return None
    return Console(file=out, highlight=False, emoji=False), Markdown


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def print_markdown(markdown: str, out: TextIO, head: str = "") -> None:
    """Print ``head`` then ``markdown``: drawn by ``rich`` on a terminal (``head`` on a
    line of its own), plain text otherwise (starting on ``head``'s line)."""
    rich = _rich(out) if _is_terminal(out) else None
    if rich is None:
        print(for_terminal(head) + plain_text(markdown), file=out, flush=True)
        return
    if head:
        print(for_terminal(head).rstrip(), file=out)
    console, markdown_class = rich
    console.print(markdown_class(for_terminal(markdown), hyperlinks=False))
    out.flush()


_ESCAPE: Final = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _visible(line: str) -> bool:
    """Whether a drawn line shows anything (escape sequences and spaces do not)."""
    return bool(_ESCAPE.sub("", line).strip())


def _complete_blocks(text: str) -> int:
    """Where the finished blocks of a Markdown text being written end: after its last
    blank line outside a code fence (0: none finished yet)."""
    end = 0
    fenced = False
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.strip() and line.endswith("\n"):
            end = position
    return end


class AnswerView:
    """An answer as it is written. On a terminal with ``rich``, each Markdown block is
    drawn once it is finished (a blank line after it), so the answer appears as it is
    written and nothing is drawn twice; otherwise nothing shows until ``finish`` prints
    the whole answer as plain text (a table needs all its rows to be laid out)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._pending = ""
        self._streamed = False
        self._drawn = False
        self._rich = _rich(out) if _is_terminal(out) else None

    def _draw(self, markdown: str) -> None:
        assert self._rich is not None
        console, markdown_class = self._rich
        with console.capture() as captured:
            console.print(markdown_class(for_terminal(markdown), hyperlinks=False))
        lines = captured.get().split("\n")
        while lines and not _visible(lines[0]):
            lines.pop(0)
        while lines and not _visible(lines[-1]):
            lines.pop()
        if lines:  # one blank line between blocks drawn apart, as within one
            self.out.write(("\n" if self._drawn else "") + "\n".join(lines) + "\n")
            self._drawn = True
        self.out.flush()

    def token(self, piece: str) -> None:
        """A piece of the answer."""
        if self._rich is None:
            return
        self._streamed = True
        self._pending += piece
        end = _complete_blocks(self._pending)
        if end and self._pending[:end].strip():
            self._draw(self._pending[:end])
            self._pending = self._pending[end:]

    def finish(self, markdown: str) -> None:
        """The whole answer: the rest of it drawn, or all of it printed."""
        if self._rich is None:
            print(plain_text(markdown), file=self.out, flush=True)
        elif not self._streamed:
            self._draw(markdown)
        elif self._pending.strip():
            self._draw(self._pending)
        self._pending = ""
