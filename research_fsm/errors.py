"""The root of the assistant's errors: ``except ResearchError`` catches every error the
apps raise on purpose (bad input, nothing found, a failing service, a folder that
cannot be written), each also keeping the built-in base it has always had, so
``except ValueError`` or ``except OSError`` still work. The engine's errors have their
own root, ``research_fsm.engine.EngineError``.

The hierarchy (where each error is importable from)::

    ResearchError
    ├── InvalidQuestion (ValueError)          research_fsm, research_fsm.qa
    ├── InvalidReportRequest (ValueError)     research_fsm.reports
    ├── CompanyNotFound (LookupError)         research_fsm.reports
    ├── ReportStoreError (OSError)            research_fsm.reports
    ├── MissingFontError (RuntimeError)       research_fsm.common.writer (pdf-ja extra)
    ├── InvalidResearchRequest (ValueError)   research_fsm.deep
    │   └── NoResearchSource
    ├── DataSourceError                       research_fsm.sources
    ├── LLMError                              research_fsm.llm
    ├── InvalidServeOptions (ValueError)      research_fsm.web
    ├── InspectorRefused (PermissionError)    research_fsm.web
    ├── FolderNotAllowed (PermissionError)    research_fsm.mcp
    ├── InvalidDocsRoot (ValueError)          research_fsm.mcp
    └── DocumentsError (ValueError)           research_fsm.documents
        ├── DocumentsNotFound
        ├── NotADirectory
        └── DamagedIndex
"""

from __future__ import annotations

__all__ = ["ResearchError"]


class ResearchError(Exception):
    """Any error the research assistant raises on purpose; its message says what is wrong."""
