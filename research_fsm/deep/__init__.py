"""Deep research on any topic, over the web or your own documents.

``ResearchAssistant.deep_research("Spring Boot 2 to 3 migration", docs="./notes")``
enhances the query, searches (and retries broader), filters for relevance, analyses
the top sources in parallel (one engine branch each), drafts a summary whose every
sentence cites ``[S#]``, verifies each claim against the passage it cites (searching
again for the gaps when too few hold) and writes a Markdown/PDF report in English or
Japanese. Every stage's output is kept in ``$RESEARCH_FSM_HOME/sessions/<id>/``.
"""

from ._api import (
    DOCS_ENV,
    DeepProgress,
    DeepRunner,
    DeepText,
    InvalidResearchRequest,
    NoResearchSource,
    ResearchReport,
)
from ._graph import STAGES, build_deep_graph
from ._grounding import grounding_problems
from ._model import DeepState
from ._search import DocumentSearch, Found, StaticSearch, TopicSearch, WebSearch
from ._session import SessionEntry, list_sessions

__all__ = [
    "DOCS_ENV",
    "STAGES",
    "DeepProgress",
    "DeepRunner",
    "DeepState",
    "DeepText",
    "DocumentSearch",
    "Found",
    "InvalidResearchRequest",
    "NoResearchSource",
    "ResearchReport",
    "SessionEntry",
    "StaticSearch",
    "TopicSearch",
    "WebSearch",
    "build_deep_graph",
    "grounding_problems",
    "list_sessions",
]
