"""Where deep research finds sources: the ``TopicSearch`` seam, the web (Tavily) and
local documents behind it, and ``StaticSearch``, an in-memory corpus for tests."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, Protocol, runtime_checkable

from ._answer import Question, family, idf, one_line_blocks, parse_question, passage_score
from ._japanese import spelled_by_kanji
from ._labels import label
from ._meaning import applies, blend, fuse
from ._model import Mode
from ._text import coverage, terms

if TYPE_CHECKING:
    from ..documents import DocumentIndex, Passage

    _Ranked = tuple[float, int, Passage]
    from ..sources import TavilyWebSearch

__all__ = [
    "NAME_BOOST",
    "POOL",
    "DocumentSearch",
    "Found",
    "StaticSearch",
    "TopicSearch",
    "WebSearch",
]

POOL: Final = 40
"""Passages BM25 hands to the question's ranking per search."""
MAX_VARIANTS: Final = 6
"""Searches more per question, one per other word of a family verb it asks with."""
NAME_BOOST: Final = 2.0
"""How much more a question's term weighs when it names a document (a product, a package):
a passage about another product should not answer for it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """One search result, before the session numbers it ``S#``."""

    kind: Literal["web", "file"]
    """A web page or a passage of a local file."""
    title: str
    """The page's or document's title."""
    locator: str
    """The URL, or the path relative to the documents folder."""
    text: str
    """What was retrieved: the page text or the passage."""
    score: float = 0.0
    """The search's own score."""
    similarity: float | None = None
    """How close the passage is in meaning to the query (with an embedding model)."""
    snippet: str = ""
    """The search's query-focused extract, when ``text`` is the whole page."""
    position: str | None = None
    """Where in a file (``lines 3-9``, ``page 2``)."""
    heading: str | None = None
    """The heading path the passage sits under (outermost first, joined by ``HEADING_PATH``)."""


@runtime_checkable
class TopicSearch(Protocol):
    """A search over a corpus by topic."""

    name: str
    """Shown under Methodology (e.g. ``Tavily web search``)."""
    mode: Mode
    """``web`` or ``docs``."""

    async def search(self, query: str, *, limit: int, broadened: bool) -> list[Found]:
        """Results for ``query``, best first; ``broadened`` matches any of its terms
        instead of all. Raises ``DataSourceError`` when the search itself fails."""
        ...


class StaticSearch:
    """An in-memory corpus ranked by term coverage: for tests, examples and benchmarks.

    Args:
        documents: the corpus.
        mode: reported as the session's mode.
        latency: seconds each search sleeps (to simulate a network).
    """

    name = "static corpus"

    def __init__(
        self, documents: Sequence[Found], *, mode: Mode = "docs", latency: float = 0.0
    ) -> None:
        self.documents = list(documents)
        self.mode: Mode = mode
        self.latency = latency
        self.queries: list[tuple[str, bool]] = []
        """Every search made: (query, broadened)."""

    async def search(self, query: str, *, limit: int, broadened: bool) -> list[Found]:
        """Documents holding all the query's terms (any when ``broadened``), by coverage."""
        self.queries.append((query, broadened))
        if self.latency:
            await asyncio.sleep(self.latency)
        wanted = terms(query)
        scored = [(coverage(wanted, f"{doc.title} {doc.text}"), doc) for doc in self.documents]
        need = 1.0 if not broadened else 1e-9
        hits = [(score, doc) for score, doc in scored if wanted and score >= need]
        hits.sort(key=lambda pair: -pair[0])
        return [doc for _, doc in hits[:limit]]


def described(search: TopicSearch, language: str) -> str:
    """What ``search`` searches, in ``language`` (shown under Methodology): the documents
    (and the embedding model), or the web; another search's own ``name``."""
    if isinstance(search, DocumentSearch):
        model = search.index.semantic
        if model is None:
            return label(language, "b_docs")
        return label(language, "b_docs_model").format(model=model)
    if isinstance(search, WebSearch):
        return label(language, "b_web")
    return search.name


class WebSearch:
    """The web through Tavily: page text (``raw_content``) when Tavily returns it, else
    the snippet; the snippet is kept beside the page text for the relevance filter."""

    name = "Tavily web search"
    mode: Mode = "web"

    def __init__(self, client: TavilyWebSearch) -> None:
        self.client = client

    async def search(self, query: str, *, limit: int, broadened: bool) -> list[Found]:
        """Search the web (``broadened`` changes nothing here: the query itself is broader)."""
        results = await self.client.search(query, max_results=limit)
        return [
            Found(
                kind="web",
                title=item.title or item.url,
                locator=item.url,
                text=item.raw_content or item.content,
                snippet=item.content if item.raw_content else "",
                score=item.score,
            )
            for item in results
            if (item.raw_content or item.content).strip()
        ]


class DocumentSearch:
    """A folder of the user's own documents (indexed once): BM25 finds the passages that
    hold the query's salient terms, which are then ranked for the question
    (``_answer.passage_score``: weighted coverage, proximity, answer cues, headings)."""

    name = label("en", "b_docs")
    """Shown under Methodology (``described`` gives it in the report's language); with an
    embedding model, it names it too."""
    mode: Mode = "docs"

    def __init__(self, index: DocumentIndex) -> None:
        self.index = index
        self.name = described(self, "en")

    async def term_weights(self, question: str) -> tuple[dict[str, float], list[str]]:
        """The weight of each salient term of ``question`` (its inverse document frequency;
        doubled for a term naming a document of the folder), and those naming terms."""
        names = await self.index.names()
        parsed = parse_question(question, names)
        words = [parsed.words[t] for t in parsed.terms]
        total, counts = await self.index.frequencies(words)
        frequencies = {t: counts.get(parsed.words[t], 0) for t in parsed.terms}
        found = idf(total, frequencies)
        weights = {
            t: round(w * (NAME_BOOST if t in parsed.named else 1.0), 4) for t, w in found.items()
        }
        for term, count in frequencies.items():  # a word no passage uses, its kanji spell
            if count == 0 and spelled_by_kanji(term, parsed.terms):
                weights[term] = 0.0
        return weights, sorted(parsed.named)

    async def search(self, query: str, *, limit: int, broadened: bool) -> list[Found]:
        """Passages holding all the query's salient terms (any when ``broadened``), the
        best ``POOL`` by BM25 ranked for the question; the top ``limit``."""
        names = await self.index.names()
        question = parse_question(query, names)
        words = " ".join(question.words[t] for t in question.terms) or query
        match: Literal["all", "any"] = "any" if broadened else "all"
        lexical = await self.index.search(words, limit=max(limit, POOL), match=match)
        if match == "all":  # a verb of a family: its other words find passages too
            seen = {(p.path, p.start) for p in lexical}
            for variant in _variants(question)[:MAX_VARIANTS]:
                for passage in await self.index.search(variant, limit=POOL, match="all"):
                    if (passage.path, passage.start) not in seen:
                        seen.add((passage.path, passage.start))
                        lexical.append(passage)
        nearest = []
        if applies(query):
            nearest = await self.index.nearest(query, limit=max(limit, POOL))
        passages = fuse(lexical, nearest) if nearest else lexical
        weights = (await self.term_weights(query))[0] if passages else {}
        close = await self.index.similarity(query, passages) if nearest else None
        near = dict(zip((id(p) for p in passages), close or (), strict=False))
        ranked: list[_Ranked] = []
        for order, passage in enumerate(passages):
            context = " ".join([passage.title, *passage.headings, _stem_of(passage.path)])
            score, _, _ = passage_score(
                question,
                passage.text,
                context,
                weights,
                headings=passage.headings,
                lines=one_line_blocks(passage.path),
            )
            score = blend(score, close[order] if close is not None else None)
            ranked.append((-score, order, passage))
        ranked.sort(key=lambda item: item[:2])
        ranked = _distinct(ranked)
        return [
            Found(
                kind="file",
                title=passage.title,
                locator=passage.path,
                text=passage.text,
                score=passage.score,
                similarity=near.get(id(passage)),
                position=_position(passage.page, passage.line_start, passage.line_end),
                heading=HEADING_PATH.join(passage.headings) or passage.heading,
            )
            for _, _, passage in ranked[:limit]
        ]


HEADING_PATH: Final = " \u203a "
"""Between the headings of a passage's heading path as a source shows it."""


def _variants(question: Question) -> list[str]:
    """The question's search words with one family verb (``_answer.FAMILIES``) replaced
    by each other word of its family."""
    out = []
    for term in question.terms:
        for word in family(term):
            if word != question.words[term]:
                swapped = [word if t == term else question.words[t] for t in question.terms]
                out.append(" ".join(swapped))
    return out


def _distinct(ranked: list[_Ranked]) -> list[_Ranked]:
    """``ranked`` without a passage whose words another file's passage ranked before it
    already has (the same page twice in a folder: one source, not two)."""
    seen: set[str] = set()
    kept = []
    for item in ranked:
        key = " ".join(item[2].text.split()).lower()
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def _stem_of(path: str) -> str:
    """The file's name without folders and extension, as words ("pytest-xdist")."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _position(page: int | None, first: int, last: int) -> str:
    if page is not None:
        return f"page {page}"
    return f"line {first}" if first == last else f"lines {first}-{last}"
