"""The public surface: exported names, re-exports, error hierarchy, import hygiene."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import research_fsm
import research_fsm.engine as engine
import research_fsm.engine.store as store_module
from research_fsm.engine import EngineError

REPO = Path(__file__).resolve().parents[2]

EXPECTED_ALL = [
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
]


def isort_key(name: str) -> tuple[int, str]:
    """Ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_engine_all_is_the_explicit_sorted_list() -> None:
    """``research_fsm.engine.__all__`` is exactly the reviewed list, sorted, with no duplicates."""
    assert EXPECTED_ALL == engine.__all__
    assert sorted(engine.__all__, key=isort_key) == engine.__all__
    assert len(set(engine.__all__)) == len(engine.__all__)


def test_every_exported_name_exists() -> None:
    """Each name in ``__all__`` is importable from the engine."""
    missing = [name for name in engine.__all__ if not hasattr(engine, name)]
    assert [] == missing


def test_store_module_exports_what_store_authors_need() -> None:
    """``research_fsm.engine.store`` is the public module for store authors: the protocol,
    the records a checkpoint carries, the argument checks and the JSON-shape facts the
    stores' codec shares with the engine."""
    assert [
        "MAX_NESTING",
        "NO_ITEM",
        "THREAD_STATUSES",
        "BranchRecord",
        "CheckpointStore",
        "Lease",
        "OriginRecord",
        "SuspensionRecord",
        "ThreadListing",
        "ThreadQuery",
        "UpdateEntry",
        "encode_cursor",
        "hint_matches",
        "loose_fields",
        "new_checkpoint_id",
        "seq_hint",
        "standing_node",
        "thread_info",
        "thread_query",
        "validate_keep",
        "validate_limit",
        "validate_thread_id",
    ] == store_module.__all__
    assert (engine.CheckpointStore, engine.Lease, engine.validate_thread_id) == (
        store_module.CheckpointStore,
        store_module.Lease,
        store_module.validate_thread_id,
    )


def test_package_reexports_every_engine_name() -> None:
    """``research_fsm`` re-exports every engine name as the very same object."""
    assert list(engine.__all__) == list(research_fsm._ENGINE)  # the lazy list, kept equal
    assert [] == [n for n in engine.__all__ if n not in research_fsm.__all__]
    assert [] == [n for n in engine.__all__ if getattr(research_fsm, n) is not getattr(engine, n)]


ERRORS = {
    "GraphValidationError": ValueError,
    "RoutingError": LookupError,
    "NodeTimeout": TimeoutError,
    "NodeFailed": Exception,
    "StepLimitExceeded": RuntimeError,
    "ThreadBusy": RuntimeError,
    "LeaseLost": RuntimeError,
    "ThreadSuspended": RuntimeError,
    "ThreadNotFound": LookupError,
    "StaleResumeToken": ValueError,
    "InvalidResumeToken": ValueError,
    "InvalidUpdate": ValueError,
    "InvalidCommand": LookupError,
    "InvalidStreamMode": ValueError,
    "InvalidResumeValue": ValueError,
    "CheckpointConflict": RuntimeError,
    "CorruptCheckpoint": ValueError,
    "StateSerializationError": TypeError,
    "StoreWriteError": OSError,
    "IncompatibleCheckpoint": LookupError,
    "UnsafeStoreDirectory": PermissionError,
    "CheckpointNotFound": LookupError,
    "ThreadExists": ValueError,
    "UpdateRefused": RuntimeError,
    "ChildThreadMissing": LookupError,
    "UnknownSubgraph": ValueError,
    "InvalidThreadQuery": ValueError,
    "InvalidCall": TypeError,
    "StateMisread": AttributeError,
    "InterruptMisused": RuntimeError,
}


@pytest.mark.parametrize("name, builtin", list(ERRORS.items()))
def test_errors_share_engine_error_and_a_builtin(name: str, builtin: type[Exception]) -> None:
    """Every engine error subclasses EngineError and the matching built-in exception."""
    cls = getattr(engine, name)
    assert issubclass(cls, EngineError)
    assert issubclass(cls, builtin)


def test_every_exported_error_is_listed_above() -> None:
    """No exported EngineError subclass escapes the hierarchy check."""
    exported = {
        n
        for n in engine.__all__
        if isinstance(getattr(engine, n), type) and issubclass(getattr(engine, n), EngineError)
    }
    assert set(ERRORS) | {"EngineError"} == exported


IMPORT_PROBE = """
import json, sys
before = set(sys.modules)
import research_fsm.engine
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_engine_import_loads_nothing_of_the_assistant() -> None:
    """Importing the engine (fresh interpreter) loads no agent, source, LLM or search-client module."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out)
    assert "research_fsm.engine" in loaded
    forbidden = (
        "research_fsm.qa.agents",
        "research_fsm.sources",
        "research_fsm.llm",
        "research_fsm.qa.assistant",
        "research_fsm.qa.state",
        "anthropic",
        "tavily",
        "tiktoken",
    )
    assert [] == [m for m in loaded if m.startswith(forbidden)]


def test_engine_source_imports_only_stdlib_pydantic_structlog_and_otel_api() -> None:
    """Every import in research_fsm/engine names the stdlib, pydantic (and its
    typing_extensions), structlog or OpenTelemetry."""
    allowed = set(sys.stdlib_module_names) | {
        "pydantic",
        "pydantic_core",
        "typing_extensions",
        "structlog",
        "opentelemetry",
    }
    found: set[str] = set()
    for path in (REPO / "research_fsm" / "engine").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    assert {"pydantic", "structlog"} <= found
    assert set() == found - allowed


def test_engine_imports_nothing_of_the_package_outside_it() -> None:
    """No module in research_fsm/engine imports another part of research_fsm (a store
    among them): its only store is the memory store; the others are in research_fsm.stores."""
    outside = []
    for path in sorted((REPO / "research_fsm" / "engine").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            outside += [
                f"{path.name}: {name}"
                for name in names
                if name.startswith("..") or name.split(".")[0] == "research_fsm"
            ]
    assert [] == outside
