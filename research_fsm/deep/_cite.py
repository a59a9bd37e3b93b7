"""Citations numbered in order of first use: ``renumbered(state)`` gives the session's
sources new ``S#`` ids, the ones the report cites first (``S1`` is the first source its
body cites, ``S2`` the next new one, ...), then the others in retrieval order, and
rewrites every reference to them (relevance, analyses, the draft, verification). The
report, ``search_results.json``, ``verification.json``, ``sources.json``, the
``ResearchReport`` and the web page all show these numbers, so they agree, with no gaps."""

from __future__ import annotations

from typing import Any, Final

from ._model import DeepState, SectionName

__all__ = ["cited_order", "renumbered", "sources_json"]

_SECTIONS: Final[tuple[SectionName, ...]] = ("summary", "key_points", "steps", "caveats")


def cited_order(state: DeepState) -> list[str]:
    """The ids the report's body cites, in order of first use (supported claims only,
    section by section as the report prints them)."""
    final = state.verifications[-1] if state.verifications else None
    if state.draft is None or final is None:
        return []
    supported = {check.claim for check in final.checks if check.supported}
    known = {source.id for source in state.sources}
    order: dict[str, None] = {}
    for section in _SECTIONS:
        for claim in state.draft.claims:
            if claim.section == section and claim.id in supported:
                order.update((sid, None) for sid in claim.sources if sid in known)
    return list(order)


def _number(sid: str) -> int:
    return int(sid[1:]) if sid[1:].isdigit() else 0


def renumbered(state: DeepState) -> DeepState:
    """``state`` with its sources numbered in order of first citation (unchanged when
    they already are)."""
    first = cited_order(state)
    rest = [s.id for s in state.sources if s.id not in set(first)]
    mapping = {old: f"S{i}" for i, old in enumerate([*first, *rest], 1)}
    if all(old == new for old, new in mapping.items()):
        return state

    def new(sid: str) -> str:
        return mapping.get(sid, sid)

    sources = sorted(
        (s.model_copy(update={"id": new(s.id)}) for s in state.sources),
        key=lambda s: _number(s.id),
    )
    update: dict[str, Any] = {
        "sources": sources,
        "candidates": [new(sid) for sid in state.candidates],
        "relevance": [v.model_copy(update={"source": new(v.source)}) for v in state.relevance],
        "analyses": [a.model_copy(update={"source": new(a.source)}) for a in state.analyses],
        "verifications": [
            v.model_copy(
                update={
                    "checks": [
                        c.model_copy(
                            update={
                                "sources": [new(s) for s in c.sources],
                                "source": new(c.source) if c.source else None,
                            }
                        )
                        for c in v.checks
                    ]
                }
            )
            for v in state.verifications
        ],
    }
    if state.draft is not None:
        claims = [
            c.model_copy(update={"sources": [new(s) for s in c.sources]})
            for c in state.draft.claims
        ]
        update["draft"] = state.draft.model_copy(update={"claims": claims})
    return state.model_copy(update=update)


def sources_json(state: DeepState) -> list[dict[str, Any]]:
    """``sources.json``: the cited sources, numbered as the report cites them."""
    out = []
    for sid in cited_order(state):
        source = state.source(sid)
        if source is None:
            continue
        out.append(
            {
                "n": _number(source.id),
                "id": source.id,
                "kind": source.kind,
                "title": source.title,
                "locator": source.locator,
                "position": source.position,
                "heading": source.heading,
            }
        )
    return out
