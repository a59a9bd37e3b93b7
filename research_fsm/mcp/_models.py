"""The tools' typed results (their MCP output schemas)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "AskResult",
    "ContinueResult",
    "DeepResult",
    "ReportItem",
    "ReportList",
    "ReportResult",
    "SessionItem",
    "SessionList",
    "SourceItem",
]


class SourceItem(BaseModel):
    """A source an answer or report cites."""

    title: str
    url: str = ""
    """The address (or, for a document, its path and position)."""


class AskResult(BaseModel):
    """An answer, or the question the assistant asks back."""

    status: Literal["answered", "needs_clarification"]
    text: str = Field(description="The answer (Markdown), or the question asked back.")
    conversation: str = Field(
        description="The conversation id: pass it to the next ask to follow up or to answer "
        "the question asked back (it survives server restarts)."
    )
    company: str | None = None
    confidence: int = Field(default=0, description="0-10; 0 for a question back.")
    choices: list[str] = Field(
        default_factory=list, description="The candidates when the question asks which one."
    )
    sources: list[SourceItem] = Field(default_factory=list)


class ReportResult(BaseModel):
    """A saved company report, or the question asked back about the company."""

    status: Literal["completed", "needs_clarification"]
    run_id: str = Field(description="The run: continue_run takes it (after a cancellation too).")
    company: str | None = None
    summary: str = Field(default="", description="One line: score, iterations, sources, LLM cost.")
    question: str | None = Field(
        default=None,
        description="The question back (which company?): answer with continue_run(run_id, answer).",
    )
    choices: list[str] = Field(default_factory=list)
    score: int | None = Field(default=None, description="The quality score, 0-100.")
    markdown: str = ""
    resources: list[str] = Field(
        default_factory=list, description="The report's MCP resources (Markdown, PDF, sources)."
    )
    sources: list[SourceItem] = Field(default_factory=list)


class DeepResult(BaseModel):
    """A finished deep-research session."""

    status: Literal["completed", "no_sources"]
    session_id: str = Field(description="The session: continue_run takes it.")
    topic: str
    language: str
    mode: Literal["web", "docs"]
    summary: str = ""
    markdown: str = ""
    verified_ratio: float | None = Field(
        default=None, description="Claims supported / claims checked."
    )
    notes: list[str] = Field(default_factory=list)
    resources: list[str] = Field(default_factory=list)
    sources: list[SourceItem] = Field(default_factory=list)


class ContinueResult(BaseModel):
    """A continued run: a report or a deep-research session."""

    kind: Literal["report", "deep_research"]
    report: ReportResult | None = None
    research: DeepResult | None = None


class ReportItem(BaseModel):
    """A saved report."""

    id: str
    company: str
    generated_at: str
    score: int | None = None
    resources: list[str] = Field(default_factory=list)


class ReportList(BaseModel):
    """Saved reports, newest first."""

    reports: list[ReportItem]


class SessionItem(BaseModel):
    """A deep-research session."""

    id: str
    topic: str
    status: str = Field(description="running (or interrupted: continue_run), completed, no_sources")
    created_at: str
    mode: str
    resources: list[str] = Field(default_factory=list)


class SessionList(BaseModel):
    """Deep-research sessions, newest first."""

    sessions: list[SessionItem]
