"""Field-shape repairs of the directory's infobox values, applied at load time.

The scraped values carry what the infobox rendered around a fact: page references
after a figure ("US$64.4 billion (2025) : 10"), several years' figures in one field
("¥2.939 trillion (2024) ¥2.769 trillion (2023)"), brackets cut open or left over from
a template ("…(operational", "Moreira(board of directors)}}"), and items a line break
separated run together ("1 October 1847 Berlin", "1832 (as X) 28 May 1889 (as Y)").
Each function here repairs one shape and keeps every fact of the value it keeps.
"""

from __future__ import annotations

import re
from typing import Final

from ._people import NameModel

__all__ = [
    "balance_brackets",
    "drop_page_refs",
    "latest_figure",
    "separate_runs",
    "tidy_founded",
    "tidy_key_people",
]

_PAGE_REF_RE: Final = re.compile(
    r"(?<=[\d)a-z])\s*:\s*\d{1,3}(?![\d,.%])(?=\s*(?:\(|$|;|,))", re.IGNORECASE
)
_MONTHS: Final = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
)
_DATE: Final = (
    rf"(?:\d{{1,2}}\s+(?:{_MONTHS})\s+\d{{4}}|(?:{_MONTHS})\s+\d{{1,2}},\s*\d{{4}}"
    rf"|(?:{_MONTHS})\s+\d{{4}}|\d{{4}})"
)
_DATE_THEN_WORD_RE: Final = re.compile(rf"\b({_DATE})\s+(?!(?:{_MONTHS})\b)(?=[A-Z][a-z])")
_FUNCTION_WORD_RE: Final = re.compile(
    r"(?:\b(?:in|on|of|since|from|by|and|until|to|as|at|the|c|ca|circa|around|before|after"
    r"|between|early|late|mid|est|founded|established|incorporated)\.?|[,;:(\u2013-])$",
    re.IGNORECASE,
)
_RUN_RE: Final = re.compile(r"\)\s*(?=[A-Z0-9\u00c0-\u024f])")
_LABEL_RE: Final = re.compile(r"(?<=[\d)a-z.])\s+(?=[A-Z][\w-]*(?:\s[a-z][\w-]*)?\s?:\s)")
_FIGURE_START: Final = (
    r"(?:-?(?:US\$|A\$|C\$|HK\$|R\$|\$|€|£|¥|₹|₩|₽|CHF|SEK|NOK|DKK|EUR|USD|GBP|JPY)\s*\d"
    r"|\d[\d,.]*(?:\s*(?:million|billion|trillion))?\s*(?:\(|$))"
)
_YEAR_RE: Final = re.compile(r"\b(?:FY\s?)?((?:19|20)\d\d)\b|\bFY\s?(\d\d)\b")
_PIECE_RE: Final = re.compile(rf"(?<=\))\s+(?=\(?\s*{_FIGURE_START})")
_BRACKET_RE: Final = re.compile(r"[()\[\]{},]")
_PAIR_RE: Final = re.compile(r"\([^()]*\)")
_TEMPLATE_RE: Final = re.compile(r"[\[\]{}]")
_EMPTY_NOTE_RE: Final = re.compile(r"\(\s*[,;:]?\s*\)")
_COMMA_NOTE_RE: Final = re.compile(r"\s*,\s*(?=\()")
_NOTE_COMMA_RE: Final = re.compile(r"\(\s*,\s*")


def drop_page_refs(text: str) -> str:
    """``text`` without the page references a citation template left after a figure:
    "US$64.424 billion (2025) : 10" -> "US$64.424 billion (2025)"."""
    return _PAGE_REF_RE.sub("", text).strip() if ":" in text else text.strip()


def balance_brackets(text: str) -> str:
    """``text`` with every parenthesis paired: a ``)`` with no ``(`` goes, a ``(`` cut
    open at the end is closed; square and curly brackets (template residue) go, as do
    empty parentheses and the comma some values put before one ("Name, (CEO)")."""
    if not _BRACKET_RE.search(text):
        return " ".join(text.split())
    text = _TEMPLATE_RE.sub("", text)
    inner = text
    while (peeled := _PAIR_RE.sub("", inner)) != inner:
        inner = peeled
    if "(" in inner or ")" in inner:
        kept: list[str] = []
        depth = 0
        for char in text:
            if char == "(":
                depth += 1
            elif char == ")":
                if depth == 0:
                    continue
                depth -= 1
            kept.append(char)
        text = "".join(kept).rstrip(" ,;:(") + ")" * depth
    result = text.rstrip(" ,;:(")
    if "(" in result:
        result = _EMPTY_NOTE_RE.sub("", result)
        result = _COMMA_NOTE_RE.sub(" ", result)
        result = _NOTE_COMMA_RE.sub("(", result)
    return " ".join(result.split())


def separate_runs(text: str) -> str:
    """Items a line break separated, run together after a parenthesis or before a
    label, split by semicolons: "Hilversum (corporate) Santa Monica (operational)" ->
    "Hilversum (corporate); Santa Monica (operational)", "1904 Business: 1906" ->
    "1904; Business: 1906"."""
    return _LABEL_RE.sub("; ", _RUN_RE.sub("); ", text))


def _year_of(piece: str) -> int | None:
    years = [int(a or f"20{b}") for a, b in _YEAR_RE.findall(piece)]
    return max(years) if years else None


def latest_figure(text: str) -> str:
    """The figure of the latest year when a field lists several, each with its year:
    "¥2.939 trillion (2024) ¥2.769 trillion (2023)" -> "¥2.939 trillion (2024)"; a
    field of one figure (in one or two currencies) is returned as it is."""
    if len(_YEAR_RE.findall(text)) < 2:
        return text
    pieces = _PIECE_RE.split(text)
    dated = [(year, i) for i, piece in enumerate(pieces) if (year := _year_of(piece)) is not None]
    if len(pieces) < 2 or len({year for year, _ in dated}) < 2:
        return text
    latest = max(year for year, _ in dated)
    piece = pieces[min(i for year, i in dated if year == latest)].strip()
    # "(¥404.4 billion) (FY 2019)": the figure was the second currency of another year's
    return re.sub(r"^\(\s*([^()]*?)\s*\)", r"\1", piece)


def tidy_founded(text: str) -> str:
    """A founding value that reads as a list of events: a date and the place after it
    separated by a comma ("1 October 1847, Berlin"), each further dated event after a
    semicolon ("1832 (Barbier-Daubrée); 28 May 1889 (as Michelin)"), a date repeated
    in parentheses dropped."""
    text = re.sub(rf"({_DATE})\s*\(\s*\1\s*\)", r"\1", text)
    text = separate_runs(text)
    out: list[str] = []
    last = 0
    previous = ""
    for match in re.finditer(rf"\b{_DATE}\b", text):
        before = text[last : match.start()].rstrip()
        if not before.strip() and match.group() in previous:
            last = match.end()  # "1 June 1939 1939": a date repeated
            continue
        if (before or out) and not _FUNCTION_WORD_RE.search(before) and not before.endswith(";"):
            before += ";"
        out.append(f"{before} " if before else "")
        out.append(match.group())
        previous, last = match.group(), match.end()
    out.append(text[last:])
    text = "".join(out)
    text = _DATE_THEN_WORD_RE.sub(r"\1, ", text)
    return re.sub(r"\s*;\s*;\s*", "; ", text).strip(" ;,")


_OPEN_NOTE_RE: Final = re.compile(
    r"(\([^()]*?)\s+((?:[A-Z\u00c0-\u024f][\w.'\u2019-]*\s+){1,3}[A-Z\u00c0-\u024f][\w.'\u2019-]*)\s*(?=\()"
)


def _close_notes(text: str, names: NameModel) -> str:
    """A note the data left open before the next person ("(chairman of the Board Francesca
    Weissman (CFO)") closed before that person's name, when it reads as one."""

    def close(match: re.Match[str]) -> str:
        note, words = match.group(1), match.group(2).split()
        for size in range(len(words), 1, -1):
            name = " ".join(words[-size:])
            if names.is_person(name):
                rest = " ".join([note, *words[:-size]])
                return f"{rest}); {name} "
        return match.group()

    return _OPEN_NOTE_RE.sub(close, text)


def tidy_key_people(text: str, names: NameModel | None = None, company: str = "") -> str:
    """Key people as "Name (role)" entries separated by semicolons: "A (CEO), B (CFO)"
    and "A (CEO) B (CFO)" both -> "A (CEO); B (CFO)"; two notes of one person merged
    ("Takashi Tanaka (businessman) (CEO)" -> "(businessman, CEO)"). With ``names``,
    entries written without parentheses ("A, CEO B, CFO") or names run together are
    told apart too, when every part then reads as a person."""
    text = balance_brackets(re.sub(r"\s*\|\s*", " ", text))
    text = re.sub(r"\)\s*(and|&)\s*\(", r" \1 ", text)
    text = re.sub(r"\)\s*\(", ", ", text)
    text = re.sub(r"\)\s*[,;]?\s*(?=[A-Z\u00c0-\u024f])", "); ", text)
    text = re.sub(r"(?<=\w)\(", " (", text)
    # a note's own semicolons would read as the end of an entry
    text = re.sub(r"\([^()]*\)", lambda m: m.group().replace(";", ","), text)
    if names is None:
        return text
    text = balance_brackets(_close_notes(text, names))
    entries = []
    for entry in text.split("; "):
        if entry.startswith("("):
            continue  # a role without its person says nothing
        head, paren, note = entry.partition("(")
        if not re.search(r",|\w\s*[-\u2013:]\s", head) and len(head.split()) <= 5:
            entries.append(entry)
            continue
        people = names.people_with_roles(head, company)
        if paren and people:
            last = people[-1]
            people[-1] = f"{last[:-1]}, {note}" if last.endswith(")") else f"{last} ({note}"
        if people and all(names.is_person(person) for person in people):
            entries.extend(people)
        else:
            entries.append(entry)
    return "; ".join(entries)
