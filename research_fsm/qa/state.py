"""``ResearchState``: what one conversation carries from agent to agent."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..engine import Replace, add, append
from ..llm import Usage
from ..sources import ResearchFindings

__all__ = [
    "ClarityStatus",
    "ErrorContext",
    "Message",
    "ResearchState",
    "ValidationResult",
    "new_question_input",
]

ClarityStatus = Literal["pending", "clear", "needs_clarification", "cancelled", "off_topic"]
ValidationResult = Literal["pending", "sufficient", "insufficient"]
_CONFIG = ConfigDict(use_attribute_docstrings=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Message(BaseModel):
    """One turn of the conversation (frozen: nodes share it instead of copying it)."""

    model_config = ConfigDict(use_attribute_docstrings=True, frozen=True)

    role: Literal["user", "assistant"]
    """Who said it."""
    content: str
    """What was said."""
    timestamp: str = Field(default_factory=_now)
    """ISO-8601 UTC time."""
    confidence: int | None = None
    """An answer's confidence, 0-10, when research about a company went into it (kept
    so a page reloaded shows each answer's badge again); ``None`` otherwise."""


class ErrorContext(BaseModel):
    """Which agent failed and how; read by the error-recovery agent."""

    model_config = _CONFIG

    agent: str
    """The agent (node) that failed."""
    type: str
    """The exception's class name."""
    message: str
    """The exception's message."""


class ResearchState(BaseModel):
    """The research assistant's state; query-scoped fields reset on each question."""

    model_config = _CONFIG

    # conversation (persists across questions)
    messages: Annotated[list[Message], append] = Field(default_factory=list)
    """The whole conversation, oldest first: only ever appended to (a checkpoint saves
    just the new messages), never cut. The agents read ``recent_messages``."""
    conversation_summary: str | None = None
    """Condensed earlier conversation: the first ``summarised`` messages, for the agents."""
    summarised: int = 0
    """How many messages, from the start, ``conversation_summary`` stands for; the
    agents read only the messages after them."""
    detected_company: str | None = None
    """The company being discussed; inherited by follow-up questions."""

    # the question (reset per question)
    original_query: str = ""
    """The question being answered (or the latest clarification answer)."""
    clarity_status: ClarityStatus = "pending"
    """The clarity agent's verdict."""
    name_match: str = "exact"
    """How the company's name was matched: ``exact`` (a name, alias or ticker), or
    ``prefix``, ``typo`` or ``description``: then the answer is never of high confidence."""
    name_as_typed: str | None = None
    """The company's name as the question wrote it, when not matched exactly."""
    clarification_attempts: int = 0
    """Questions asked back for this question."""
    clarification_question: str | None = None
    """What to ask the user."""
    clarification_choices: list[str] = Field(default_factory=list)
    """Companies offered as answers to the clarification question, if any."""
    language: Literal["en", "ja"] = "en"
    """The language of the question, and of the answer."""
    query_intent: str = "overview"
    """What is asked: overview, news, stock, leadership, products, competitors, comparison."""
    comparison_companies: list[str] = Field(default_factory=list)
    """Other companies kept in view by a comparison ("Compare them to Apple")."""

    # research (reset per question)
    research_findings: ResearchFindings | None = None
    """Findings about ``detected_company``."""
    comparison_findings: list[ResearchFindings] = Field(default_factory=list)
    """Findings about ``comparison_companies``."""
    research_note: str | None = None
    """Why research came back empty (e.g. a data-source failure)."""
    confidence_score: int = 0
    """0-10: how much of what was asked the findings cover."""
    research_attempts: int = 0
    """Research rounds made for this question."""
    research_repeatable: bool = True
    """Whether another round can find more (False for a source that ignores feedback)."""
    validation_result: ValidationResult = "pending"
    """The validator's verdict."""
    validation_feedback: str | None = None
    """What the next research round should look for."""

    # output and metadata
    final_summary: str | None = None
    """The answer."""
    current_agent: str | None = None
    """The agent that ran last."""
    error_context: ErrorContext | None = None
    """Set when an agent failed; cleared by error recovery."""
    correlation_id: str | None = None
    """Id of the question, in every log line."""
    usage: Annotated[dict[str, Usage], add] = Field(default_factory=dict)
    """LLM usage per agent over the whole thread."""
    question_usage: Annotated[dict[str, Usage], add] = Field(default_factory=dict)
    """LLM usage per agent for the current question (reset per question)."""
    question_notes: Annotated[list[str], append] = Field(default_factory=list)
    """What degraded for the current question (reset per question): an LLM answer that
    could not be used (the rules did that step), or one that needed a second try."""

    @property
    def recent_messages(self) -> list[Message]:
        """The messages the summary does not stand for: what the agents read verbatim
        (a slice of the newest, however long the conversation)."""
        return self.messages[self.summarised :]


def new_question_input(text: str, correlation_id: str) -> dict[str, object]:
    """The run input for a new question: the message plus every query-scoped reset."""
    return {
        "messages": [Message(role="user", content=text)],
        "original_query": text,
        "clarity_status": "pending",
        "clarification_attempts": 0,
        "clarification_question": None,
        "clarification_choices": [],
        "name_match": "exact",
        "name_as_typed": None,
        "query_intent": "overview",
        "comparison_companies": [],
        "research_findings": None,
        "comparison_findings": [],
        "research_note": None,
        "confidence_score": 0,
        "research_attempts": 0,
        "research_repeatable": True,
        "validation_result": "pending",
        "validation_feedback": None,
        "final_summary": None,
        "error_context": None,
        "correlation_id": correlation_id,
        "question_usage": Replace({}),
        "question_notes": Replace([]),
    }
