"""research_fsm: a small asyncio agent-workflow engine and the company research
assistant built on it.

The engine's names (``StateGraph``, ``Suspend``, ``MemoryCheckpointStore``...) are
importable from here and from ``research_fsm.engine``; ``JsonFileCheckpointStore``, the
durable default, from here and from ``research_fsm.stores``; the assistant's
(``ResearchAssistant`` from ``research_fsm.assistant``, ``Reply``... from
``research_fsm.qa``; ``ResearchError``,
the root of its errors) load on first use, the engine's too, so ``import research_fsm``
stays fast (and the command line can answer Ctrl-C while it loads).

The packages, bottom up: ``engine`` and ``stores``; ``llm``, ``sources`` and
``documents``; ``common`` (what the apps share); the apps side by side, ``qa``
(conversations), ``reports`` and ``deep`` (deep research), none importing another;
``assistant``, the ``ResearchAssistant`` that composes them; ``cli``, ``web`` and ``mcp``
(the MCP server) on top. ``errors`` holds the apps' root error.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _moved

if TYPE_CHECKING:
    from ._logging import configure_logging as configure_logging
    from .assistant import ResearchAssistant as ResearchAssistant
    from .engine import *  # noqa: F403
    from .errors import ResearchError as ResearchError
    from .qa import Answer as Answer
    from .qa import InvalidQuestion as InvalidQuestion
    from .qa import Progress as Progress
    from .qa import Reply as Reply
    from .qa import ResearchState as ResearchState
    from .qa import Token as Token
    from .stores import JsonFileCheckpointStore as JsonFileCheckpointStore

__version__ = "0.1.0"

_ENGINE = (
    "END",
    "START",
    "BranchInfo",
    "BranchStatus",
    "Checkpoint",
    "CheckpointConflict",
    "CheckpointNotFound",
    "CheckpointStore",
    "ChildThread",
    "ChildThreadMissing",
    "Command",
    "CompiledGraph",
    "Completed",
    "CorruptCheckpoint",
    "Emitted",
    "EngineError",
    "ErrorInfo",
    "Event",
    "GraphInterrupt",
    "GraphValidationError",
    "IncompatibleCheckpoint",
    "InterruptMisused",
    "InvalidCall",
    "InvalidCommand",
    "InvalidResumeToken",
    "InvalidResumeValue",
    "InvalidStreamMode",
    "InvalidThreadQuery",
    "InvalidUpdate",
    "Lease",
    "LeaseLost",
    "MemoryCheckpointStore",
    "NodeContext",
    "NodeFailed",
    "NodeFinished",
    "NodeStarted",
    "NodeTimeout",
    "Reducer",
    "Replace",
    "RetryPolicy",
    "RoutingError",
    "RunResult",
    "RunStream",
    "Send",
    "StaleResumeToken",
    "StateGraph",
    "StateMisread",
    "StateSerializationError",
    "StateSnapshot",
    "StepLimitExceeded",
    "StoreWriteError",
    "Suspend",
    "SuspendToken",
    "Suspended",
    "Suspension",
    "ThreadBusy",
    "ThreadExists",
    "ThreadInfo",
    "ThreadNotFound",
    "ThreadPage",
    "ThreadSuspended",
    "UnknownSubgraph",
    "UnsafeStoreDirectory",
    "UpdateRefused",
    "add",
    "append",
    "interrupt",
    "is_transient",
    "replace",
    "validate_thread_id",
)
"""The engine's names (``research_fsm.engine.__all__``; a test keeps the two equal)."""

_LAZY = {
    **dict.fromkeys(_ENGINE, "engine"),
    "JsonFileCheckpointStore": "stores",
    "Answer": "qa",
    "InvalidQuestion": "qa",
    "Progress": "qa",
    "Reply": "qa",
    "ResearchAssistant": "assistant",
    "ResearchError": "errors",
    "ResearchState": "qa",
    "Token": "qa",
    "configure_logging": "_logging",
}

__all__ = sorted([*_LAZY, "__version__"])


_ROOT = "research_fsm.assistant"
_QA_RUNNER = "research_fsm.qa.runner"
_moved.register(
    "research_fsm.qa",
    {
        "ResearchAssistant": (_ROOT, "from research_fsm import ResearchAssistant"),
        "DEFAULT_KEEP": (_ROOT, "from research_fsm.assistant import DEFAULT_KEEP"),
        "default_store": (_ROOT, "from research_fsm.assistant import default_store"),
    },
)
_moved.register(
    "research_fsm.qa.assistant",
    {
        name: (home, f"from {'research_fsm.qa' if home == _QA_RUNNER else home} import {name}")
        for name, home in {
            "ResearchAssistant": _ROOT,
            "DEFAULT_KEEP": _ROOT,
            "default_store": _ROOT,
            "default_home": _ROOT,
            "Answer": _QA_RUNNER,
            "AssistantStream": _QA_RUNNER,
            "InvalidQuestion": _QA_RUNNER,
            "Progress": _QA_RUNNER,
            "Reply": _QA_RUNNER,
            "Token": _QA_RUNNER,
        }.items()
    },
)
"""The names that moved up from the Q&A app to the composition root (deprecated at
their old places, which cannot import the floor above them: ``research_fsm._moved``)."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'research_fsm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
