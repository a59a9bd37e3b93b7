"""HTML to text: the page's main content only, as a reader sees it.

The page is parsed with **lxml** (entities decoded, broken markup repaired). The main
content is the first of ``<main>``, ``[role=main]``, ``<article>``, Sphinx's
``div.body`` / ``div.document``, MkDocs' ``div.md-content`` or GitHub's
``.markdown-body``, else ``<body>``; inside it, page chrome is dropped: navigation
(``<nav>``, ``[role=navigation]``, breadcrumbs, Sphinx's ``div.related`` and
``div.sphinxsidebar``, MkDocs' side bars and tabs), headers, footers, "Previous / Next"
links, permalink signs (``¶``), scripts, styles and forms.

What is kept is written one block per paragraph (blank line between blocks), list
items one per line with no glyph added, table rows with ``" | "`` between cells, and
preformatted code verbatim between fence lines (```` ``` ````). Each block remembers the
line of the original file it starts on (``anchors``), and each heading its level, so
a passage can be cited by the file's own line numbers and by its heading path.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Final

from lxml import etree

__all__ = ["MAX_DEPTH", "HtmlText", "TooDeep", "html_text"]

_DROP_TAGS: Final = frozenset(
    [
        "script",
        "style",
        "noscript",
        "template",
        "nav",
        "header",
        "footer",
        "aside",
        "form",
        "button",
        "svg",
        "iframe",
        "object",
        "embed",
        "canvas",
        "select",
        "textarea",
        "input",
        "label",
        "head",
        "title",
        "meta",
        "link",
        "dialog",
    ]
)
_DROP_ROLES: Final = frozenset(
    ["navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "toolbar"]
)
_DROP_CLASSES: Final = frozenset(
    [
        "related",
        "sphinxsidebar",
        "sphinxsidebarwrapper",
        "headerlink",
        "breadcrumb",
        "breadcrumbs",
        "wy-breadcrumbs",
        "wy-nav-side",
        "wy-side-scroll",
        "rst-versions",
        "rst-footer-buttons",
        "footer",
        "prev-next-area",
        "prev-next-footer",
        "prev-next-bottom",
        "bd-sidebar",
        "bd-sidebar-primary",
        "bd-sidebar-secondary",
        "bd-toc",
        "bd-header",
        "bd-footer",
        "bd-header-article",
        "md-header",
        "md-sidebar",
        "md-footer",
        "md-footer__inner",
        "md-nav",
        "md-tabs",
        "md-search",
        "md-source",
        "md-clipboard",
        "md-content__button",
        "md-top",
        "md-skip",
        "md-banner",
        "md-announce",
        "skip-link",
        "skip-to-content",
        "navbar",
        "navigation",
        "nav-links",
        "sidebar",
        "toc-drawer",
        "sticky-header",
        "edit-this-page",
        "copybtn",
        "copybutton",
        "sphinx-tabs-tab",
        "headerlink-anchor",
        "anchorjs-link",
        "anchor",
        "octicon-link",
        "pagination",
        "navheader",
        "navfooter",
    ]
)
_DROP_IDS: Final = frozenset(
    [
        "sidebar",
        "toc",
        "navigation",
        "nav",
        "header",
        "footer",
        "breadcrumbs",
        "searchbox",
        "search-box",
        "relations",
    ]
)
_MAIN_RULES: Final[list[tuple[set[str] | None, bool, str]]] = [
    # (tags, role=main, class): the most specific first, as a theme's <main> often
    # holds its side bars too
    (None, False, "markdown-body"),
    ({"article"}, False, ""),
    (None, True, ""),
    ({"div"}, False, "body"),
    ({"main"}, False, ""),
    ({"div"}, False, "md-content"),
    ({"div"}, False, "document"),
]
_BLOCKS: Final = frozenset(
    [
        "p",
        "div",
        "section",
        "article",
        "main",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "dl",
        "blockquote",
        "table",
        "figure",
        "figcaption",
        "details",
        "hr",
        "address",
        "center",
        "body",
        "html",
        "fieldset",
    ]
)
_HEADINGS: Final = {f"h{n}": n for n in range(1, 7)}
_PLAIN_BLOCKS: Final = _BLOCKS - _HEADINGS.keys()
_PRE: Final = frozenset({"pre", "xmp", "listing", "plaintext"})
_CELLS: Final = frozenset({"td", "th"})
_INLINE: Final = frozenset(
    [
        "a",
        "abbr",
        "b",
        "bdi",
        "bdo",
        "big",
        "cite",
        "code",
        "data",
        "del",
        "dfn",
        "em",
        "font",
        "i",
        "ins",
        "kbd",
        "mark",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "time",
        "tt",
        "u",
        "var",
        "wbr",
    ]
)
_ITEMS: Final = frozenset({"li", "dt", "dd", "tr", "caption", "summary"})
"""Elements written as one line each (their paragraphs and nested lists too)."""
_PREV_NEXT: Final = re.compile(
    r"^\W*(?:previous|next|prev|back to top|edit on github|edit this page|view page source|"
    r"show source|skip to (?:main )?content)\b.{0,120}$",
    re.I | re.S,
)
_SPACES: Final = re.compile(r"[ \t\n\r\f\v\u00a0\u200b]+")
_PERMALINKS: Final = frozenset({"¶", "#", "§", "🔗", "\uf0c1"})
_PARSER: Final = etree.HTMLParser(
    remove_comments=True,
    remove_pis=True,
    no_network=True,
    collect_ids=False,
    encoding="utf-8",
    huge_tree=True,
)
"""Plain elements (no per-element Python class lookup, as ``lxml.html`` does), read from
UTF-8 bytes (quicker than from a ``str``; the page was decoded before); ``huge_tree``:
elements nested up to ``MAX_DEPTH`` deep and text nodes of any size are read whole."""
MAX_DEPTH: Final = 2048
"""How deep libxml2 reads nested elements with ``huge_tree`` (256 without)."""


class TooDeep(ValueError):
    """A page the parser cannot read fully: its elements are nested deeper than it goes."""


_CHROME_TAG: Final = "research-fsm-chrome"
"""What page chrome is renamed to, to be stripped in one C call."""
_XML_DECLARATION: Final = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
_ODD_SPACES: Final = re.compile("[\x1c-\x1f\x85\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000]")
"""Characters ``str.split()`` takes for spaces and ``_SPACES`` does not (or the reverse:
the zero-width space): where the faster ``split`` would clean a line differently. An
ASCII line is cleaned by ``split`` without looking (its control characters ``\x1c`` to
``\x1f`` become spaces: no text needs them, and ``\x1f`` separates headings in the
index)."""


@dataclass(slots=True, kw_only=True)
class HtmlText:
    """A page's readable text and where its pieces come from."""

    title: str
    """``<title>``, else the first heading, entities decoded, spaces collapsed."""
    text: str
    """The main content, one block per paragraph."""
    anchors: list[tuple[int, int]] = field(default_factory=list)
    """``(offset in text, line in the file)`` at the start of every block, ascending."""
    headings: list[tuple[int, int, str]] = field(default_factory=list)
    """``(offset in text, level 1-6, heading)`` for every heading kept."""
    blocks: list[tuple[int, int]] = field(default_factory=list)
    """``(start, end)`` of every block (paragraph, list, table, code) in ``text``."""


def _is_chrome(element: etree._Element) -> bool:
    tag = element.tag
    if not isinstance(tag, str):
        return True  # comments, processing instructions
    if tag in _DROP_TAGS:
        return True
    items = element.items()
    if not items:
        return False
    attributes = {name: str(value).lower() for name, value in items}
    if "hidden" in attributes or attributes.get("aria-hidden") == "true":
        return True
    if attributes.get("role", "") in _DROP_ROLES:
        return True
    label = attributes.get("aria-label", "")
    if label and ("breadcrumb" in label or label in {"navigation", "pagination", "footer"}):
        return True
    if attributes.get("rel", "") in {"prev", "next"}:
        return True
    if attributes.get("id", "") in _DROP_IDS:
        return True
    return not _DROP_CLASSES.isdisjoint(attributes.get("class", "").split())


def _clean(raw: str) -> str:
    """A line's text: spaces collapsed, a table row's last cell separator dropped."""
    if raw.isascii() or _ODD_SPACES.search(raw) is None:  # the common cases, at C speed
        text = " ".join(raw.split())
    else:
        text = _SPACES.sub(" ", raw).strip()
    if text.endswith(" |"):
        text = text[:-2].rstrip()
    if text.endswith("\u00b6"):  # a permalink sign no class marked
        text = text[:-1].rstrip()
    return text


class _Writer:
    """Blocks of text, each line with the file line it starts on."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.anchors: list[tuple[int, int]] = []
        self.headings: list[tuple[int, int, str]] = []
        self.blocks: list[tuple[int, int]] = []
        self.line: list[str] = []  # cleared, never replaced: ``walk`` holds it
        self.line_source = 0
        self.block: list[tuple[str, int]] = []
        self.cells = 0  # table cells open around the element being walked

    def _space(self) -> None:
        """Inside a table cell a paragraph or line break is a space: the row stays one line."""
        line = self.line
        if line and not line[-1].endswith((" ", "\n")):
            line.append(" ")

    def walk(self, element: etree._Element, in_item: bool = False) -> None:
        """Write ``element``'s text (inline markup is already merged into it)."""
        tag = element.tag
        if tag in _PRE:
            self.code("".join(element.itertext()), element.sourceline or 0)
            return
        if tag == "br":
            if self.cells:
                self._space()
            else:
                self.end_line()
            return
        heading = _HEADINGS.get(tag, 0)
        is_block = tag in _BLOCKS
        block = heading or (is_block and not in_item)
        line = self.line
        cell = tag in _CELLS
        if cell:
            self.cells += 1
        if block:
            if line or self.block:
                self.end_block()
        elif in_item and is_block:
            if self.cells:
                self._space()
            else:
                self.end_line()
        inner = in_item or tag in _ITEMS
        source = element.sourceline or 0
        text = element.text
        if text:
            if line:
                line.append(text)
            elif not text.isspace():
                self.line_source = source
                line.append(text)
        for child in element:
            if len(child) or child.tag not in _PLAIN_BLOCKS:
                self.walk(child, inner)
            elif inner:  # a paragraph of text only: as ``walk`` writes it, quicker
                text = child.text
                if self.cells:  # a paragraph in a table cell stays on the row's line
                    if text:
                        if line:
                            self._space()
                        else:
                            self.line_source = child.sourceline or 0
                        line.append(text)
                else:
                    self.end_line()
                    if text:
                        self.line_source = child.sourceline or 0
                        line.append(text)
                        self.end_line()
            else:
                if line or self.block:
                    self.end_block()
                text = _clean(child.text or "")
                if text and text not in _PERMALINKS and not _PREV_NEXT.match(text):
                    self._emit_line(text, child.sourceline or 0)
            tail = child.tail
            if tail:
                if line:
                    line.append(tail)
                elif not tail.isspace():  # a line starts with its first words
                    self.line_source = child.sourceline or source
                    line.append(tail)
        if cell:
            self.cells -= 1
        if heading:
            self.end_block(heading)
        elif self.cells and (tag in _ITEMS or is_block):
            self._space()
        elif tag in _ITEMS or (in_item and is_block):
            self.end_line()
        elif cell:
            if not line:
                self.line_source = source
            line.append(" | ")
        elif block and (line or self.block):
            self.end_block()

    def end_line(self) -> None:
        """The current line ends (a list item, a table row, ``<br>``)."""
        line = self.line
        if not line:
            return
        text = "".join(line)
        line.clear()
        if text.isspace():  # most often: the spaces between two blocks
            return
        text = _clean(text)
        if text and text not in _PERMALINKS:
            self.block.append((text, self.line_source))

    def end_block(self, heading: int = 0) -> None:
        self.end_line()
        lines = self.block
        if not lines:
            return
        self.block = []
        if len(lines) == 1 and _PREV_NEXT.match(lines[0][0]):
            return
        if heading:
            title = " ".join(text for text, _ in lines).rstrip("¶#§ ").strip()
            if not title:
                return
            lines = [(title, lines[0][1])]
        self._emit(lines, heading)

    def code(self, text: str, source: int) -> None:
        self.end_block()
        text = text.strip("\n")
        if not text.strip():
            return
        # the fence lines: one above and one below the code, as the file's lines go
        body = [(line.rstrip(), source + n) for n, line in enumerate(text.split("\n"))]
        self._emit([("```", max(source - 1, 1)), *body, ("```", source + len(body))], 0)

    def _emit_line(self, text: str, source: int) -> None:
        """``_emit`` of a block of one line, the most common one, made quick."""
        size = self.size
        if self.parts:
            self.parts.append("\n\n")
            size += 2
        anchors = self.anchors
        if not anchors or anchors[-1][1] != source:
            anchors.append((size, source))
        self.parts.append(text)
        self.size = size + len(text)
        self.blocks.append((size, self.size))

    def _emit(self, lines: list[tuple[str, int]], heading: int) -> None:
        parts, anchors = self.parts, self.anchors
        size = self.size
        if parts:
            parts.append("\n\n")
            size += 2
        if heading:
            self.headings.append((size, heading, lines[0][0]))
        start = size
        last = anchors[-1][1] if anchors else None
        first = True
        for text, source in lines:
            if first:
                first = False
            else:
                parts.append("\n")
                size += 1
            if source != last:
                anchors.append((size, source))
                last = source
            parts.append(text)
            size += len(text)
        self.blocks.append((start, size))
        self.size = size


def _chrome(main: etree._Element) -> list[etree._Element]:
    """The page chrome under ``main`` marked by its attributes (an element inside
    another may be listed too); chrome by tag name is stripped before, at C speed."""
    found: list[etree._Element] = []
    drop_classes = _DROP_CLASSES.isdisjoint
    elements = main.iter(etree.Element)
    next(elements)  # ``main`` itself
    for element in elements:
        items = element.items()
        if not items:
            continue
        if len(items) == 1:  # the common cases, made quick
            name, value = items[0]
            if name == "class":
                if not drop_classes(value.lower().split()):
                    found.append(element)
                continue
            if name == "id":
                if value.lower() in _DROP_IDS and not _holds_sections(element):
                    found.append(element)
                continue
        if _is_chrome(element) and not _holds_sections(element):
            found.append(element)
    return found


def _holds_sections(element: etree._Element) -> bool:
    """Whether a "header" holds the page's own sections, as the header of an AsciiDoc
    or Asciidoctor man page holds its NAME section (the command's one-line purpose):
    a section heading with its body, content and no page chrome."""
    if element.tag != "div" or str(element.get("id", "")).lower() != "header":
        return False
    return element.find(".//h2") is not None and element.find(".//p") is not None


def _main(root: etree._Element) -> etree._Element:
    candidates: list[list[etree._Element]] = [[] for _ in _MAIN_RULES]
    for element in root.iter("main", "article", "div", "section"):
        tag, names, is_main = element.tag, element.get("class"), element.get("role") == "main"
        if names is None and not is_main and tag in ("div", "section"):
            continue  # the common case: no rule takes it
        classes = f" {names or ''} "
        for rule, (tags, role, name) in enumerate(_MAIN_RULES):
            if (tags is None or tag in tags) and (
                (role and is_main) or (name and f" {name} " in classes) or (not role and not name)
            ):
                candidates[rule].append(element)
    for rule, found in enumerate(candidates):
        kept = [e for e in found if not _inside_chrome(e)]
        if len(kept) == 1 or (kept and _MAIN_RULES[rule] != ({"article"}, False, "")):
            return kept[0]
    body = root.find(".//body")
    return body if body is not None else root


def _inside_chrome(element: etree._Element) -> bool:
    return any(_is_chrome(parent) for parent in element.iterancestors())


def _title(root: etree._Element, headings: list[tuple[int, int, str]]) -> str:
    found = root.find("head/title")
    if found is None:
        found = root.find(".//title")
    if found is not None:
        title = _SPACES.sub(" ", "".join(found.itertext())).strip()
        if title:
            return title[:200]
    return headings[0][2][:200] if headings else ""


def html_text(markup: str) -> HtmlText:
    """The page's title and main content (see the module's docstring)."""
    markup = _XML_DECLARATION.sub("", markup, count=1)
    if not markup.strip():
        return HtmlText(title="", text="")
    try:
        root = etree.fromstring(markup.encode("utf-8", "surrogatepass"), _PARSER)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        root = None
    for error in _PARSER.error_log:
        if error.type_name == "ERR_RESOURCE_LIMIT":
            what = " ".join(str(error.message).split())[:120]
            if "depth" in what:
                what = f"nested deeper than {MAX_DEPTH:,} levels"
            raise TooDeep(f"HTML the parser cannot read fully ({what})")
    if root is None:
        return HtmlText(title="", text="")
    # the writer recurses once a level: room for the deepest page the parser reads
    limit = sys.getrecursionlimit()
    if limit < MAX_DEPTH * 2 + 500:
        sys.setrecursionlimit(MAX_DEPTH * 2 + 500)
    main = _main(root)
    etree.strip_tags(main, "span")  # highlighted code's thousands of spans, at C speed
    etree.strip_elements(main, *_DROP_TAGS, with_tail=False)
    chrome = _chrome(main)
    if chrome:
        for element in chrome:
            element.tag = _CHROME_TAG
        etree.strip_elements(main, _CHROME_TAG, with_tail=False)
    etree.strip_tags(main, *_INLINE)  # inline markup merged into its block's text
    out = _Writer()
    out.walk(main)
    out.end_block()
    return HtmlText(
        title=_title(root, out.headings),
        text="".join(out.parts),
        anchors=out.anchors,
        headings=out.headings,
        blocks=out.blocks,
    )
