"""Markdown for the page, made safe on the server: answers and reports are parsed by
markdown-it-py (raw HTML off, images off, links only to http(s) URLs a browser can
parse) and sent as a tree of allow-listed elements, which the page builds with
``createElement`` and ``textContent``: no HTML string from the data ever reaches it.

A node is a string (text) or ``{"t": tag, "a": {attribute: value}, "c": [nodes]}`` with
``tag`` in ``TAGS`` and attributes in ``ATTRIBUTES``. ``[S#]`` citations become links
to their source when it has a web address (class ``cite``), text otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from ..common.urls import web_url
from ._sourceview import SOURCE_VIEW_RE

__all__ = ["ATTRIBUTES", "TAGS", "Node", "markdown_tree"]

Node = str | dict[str, Any]
TAGS: Final = frozenset(
    [
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "strong",
        "em",
        "code",
        "pre",
        "blockquote",
        "hr",
        "br",
        "a",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "span",
    ]
)
"""The only elements the page builds from Markdown."""
ATTRIBUTES: Final = {
    "a": frozenset({"href", "class"}),
    "th": frozenset({"class"}),
    "td": frozenset({"class"}),
    "span": frozenset({"class"}),
    "ol": frozenset({"start"}),
}
"""The only attributes, per element (``href``: http(s) only)."""
_CITE: Final = re.compile(r"\[(S\d+)\]")
_ALIGN: Final = re.compile(r"text-align:(left|center|right)")
_MAX_DEPTH: Final = 40


def safe_href(url: str) -> str | None:
    """``url`` when it is an http(s) URL a browser can parse, else ``None``."""
    return web_url(url) if isinstance(url, str) else None


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False})
    md.enable("table").disable("image")
    md.validateLink = lambda url: safe_href(url) is not None  # type: ignore[method-assign]
    return md


_MD: Final = _parser()


def _text(text: str, sources: Mapping[str, str]) -> list[Node]:
    """Text with each ``[S#]`` a link to its source (or a marked span)."""
    out: list[Node] = []
    last = 0
    for match in _CITE.finditer(text):
        if match.start() > last:
            out.append(text[last : match.start()])
        url = sources.get(match.group(1), "")
        href = safe_href(url) or (url if SOURCE_VIEW_RE.match(url) else None)
        attrs = {"class": "cite", "href": href} if href else {"class": "cite"}
        out.append({"t": "a" if href else "span", "a": attrs, "c": [match.group()]})
        last = match.end()
    if last < len(text):
        out.append(text[last:])
    return out


class _Breaking(dict[str, str]):
    """The sources of a text whose soft line breaks stay line breaks."""


def _children(node: SyntaxTreeNode, sources: Mapping[str, str], depth: int) -> list[Node]:
    out: list[Node] = []
    for child in node.children:
        out += _convert(child, sources, depth + 1)
    return out


def _convert(node: SyntaxTreeNode, sources: Mapping[str, str], depth: int) -> list[Node]:
    """The node as allow-listed elements (unknown ones as their text, or nothing)."""
    if depth > _MAX_DEPTH:
        return [node.content] if node.type == "text" else []
    kind = node.type
    if kind == "text":
        return _text(node.content, sources)
    if kind == "softbreak":
        return [{"t": "br", "a": {}, "c": []}] if isinstance(sources, _Breaking) else ["\n"]
    if kind == "hardbreak":
        return [{"t": "br", "a": {}, "c": []}]
    if kind == "code_inline":
        return [{"t": "code", "a": {}, "c": [node.content]}]
    if kind in ("fence", "code_block"):
        return [{"t": "pre", "a": {}, "c": [{"t": "code", "a": {}, "c": [node.content]}]}]
    if kind == "hr":
        return [{"t": "hr", "a": {}, "c": []}]
    if kind == "inline":
        return _children(node, sources, depth)
    nester = node.nester_tokens
    if kind == "paragraph" and nester is not None and nester.opening.hidden:
        return _children(node, sources, depth)  # a tight list's item: no <p>
    tag = node.tag
    if tag not in TAGS:
        return _children(node, sources, depth)
    attrs: dict[str, str] = {}
    if tag == "a":
        href = safe_href(str(node.attrs.get("href", "")))
        if href is None:
            return _children(node, sources, depth)
        attrs["href"] = href
    elif tag in ("th", "td"):
        align = _ALIGN.search(str(node.attrs.get("style", "")))
        if align:
            attrs["class"] = f"align-{align.group(1)}"
    elif tag == "ol" and str(node.attrs.get("start", "1")).isdigit():
        attrs["start"] = str(node.attrs.get("start", "1"))
    return [{"t": tag, "a": attrs, "c": _children(node, sources, depth)}]


def markdown_tree(
    markdown: str, sources: Mapping[str, str] | None = None, *, breaks: bool = False
) -> list[Node]:
    """``markdown`` as the page's element tree; ``sources`` maps ``S#`` ids to URLs.
    ``breaks``: a line break inside a paragraph stays a line break (``<br>``), as a
    chat answer's lines are meant (a report's wrapped lines join, as CommonMark says)."""
    root = SyntaxTreeNode(_MD.parse(markdown))
    links = _Breaking(sources or {}) if breaks else dict(sources or {})
    return _children(root, links, 0)
