"""Deep research on any topic, over the web or your own documents.

``ResearchAssistant.deep_research("Spring Boot 2 to 3 migration", docs="./notes")``
enhances the query, searches (and retries broader), filters for relevance, analyses
the top sources in parallel (one engine branch each), drafts a summary whose every
sentence cites ``[S#]``, verifies each claim against the passage it cites (searching
again for the gaps when too few hold) and writes a Markdown/PDF report in English or
Japanese. Every stage's output is kept in ``$RESEARCH_FSM_HOME/sessions/<id>/``
(``sessions_home()``). ``DeepRunner`` runs the sessions (the assistant delegates to it).
"""

from ._agent_table import AGENTS
from ._api import (
    DOCS_ENV,
    DeepEvent,
    DeepProgress,
    DeepRunner,
    DeepText,
    InvalidResearchRequest,
    NoResearchSource,
    ResearchReport,
    default_web_search,
)
from ._graph import STAGES, build_deep_graph
from ._grounding import grounding_problems
from ._model import DEFAULT_THRESHOLD, DEFAULT_TOP_K, DeepSource, DeepState, Language, QuotedFact
from ._search import DocumentSearch, Found, StaticSearch, TopicSearch, WebSearch
from ._session import SessionEntry, list_sessions, mark_session, new_session_id, sessions_home
from ._text import quote_in

__all__ = [
    "AGENTS",
    "DEFAULT_THRESHOLD",
    "DEFAULT_TOP_K",
    "DOCS_ENV",
    "STAGES",
    "DeepEvent",
    "DeepProgress",
    "DeepRunner",
    "DeepSource",
    "DeepState",
    "DeepText",
    "DocumentSearch",
    "Found",
    "InvalidResearchRequest",
    "Language",
    "NoResearchSource",
    "QuotedFact",
    "ResearchReport",
    "SessionEntry",
    "StaticSearch",
    "TopicSearch",
    "WebSearch",
    "build_deep_graph",
    "default_web_search",
    "grounding_problems",
    "list_sessions",
    "mark_session",
    "new_session_id",
    "quote_in",
    "sessions_home",
]
