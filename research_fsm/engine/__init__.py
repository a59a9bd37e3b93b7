"""research_fsm.engine: a small asyncio state machine with suspend/resume and checkpoints.

Build a :class:`StateGraph` over a pydantic model, add async nodes, edges and
routers, ``compile()`` it with a :class:`CheckpointStore`, then ``run``,
``stream``, ``resume`` threads. See the package README for a tour.

The engine keeps checkpoints in memory (``MemoryCheckpointStore``); durable stores
are in ``research_fsm.stores``, built on the store protocol in
``research_fsm.engine.store``.
"""

from ._command import Command
from ._compiled import CompiledGraph
from ._context import NodeContext
from ._errors import (
    CheckpointConflict,
    CheckpointNotFound,
    ChildThreadMissing,
    CorruptCheckpoint,
    EngineError,
    GraphValidationError,
    IncompatibleCheckpoint,
    InterruptMisused,
    InvalidCommand,
    InvalidResumeToken,
    InvalidResumeValue,
    InvalidStreamMode,
    InvalidThreadQuery,
    InvalidUpdate,
    LeaseLost,
    NodeFailed,
    NodeTimeout,
    RoutingError,
    StaleResumeToken,
    StateSerializationError,
    StepLimitExceeded,
    StoreWriteError,
    ThreadBusy,
    ThreadExists,
    ThreadNotFound,
    UnknownSubgraph,
    UnsafeStoreDirectory,
    UpdateRefused,
)
from ._events import Completed, Emitted, Event, NodeFinished, NodeStarted, Suspended
from ._graph import StateGraph
from ._interrupt import GraphInterrupt, interrupt
from ._memory import MemoryCheckpointStore
from ._reducers import Reducer, Replace, add, append, replace
from ._stream import RunStream
from ._tokens import ThreadSuspended
from ._types import (
    END,
    START,
    BranchInfo,
    BranchStatus,
    Checkpoint,
    ChildThread,
    ErrorInfo,
    RetryPolicy,
    RunResult,
    Send,
    StateSnapshot,
    Suspend,
    SuspendToken,
    Suspension,
    ThreadInfo,
    ThreadPage,
    is_transient,
)
from .store import CheckpointStore, Lease, validate_thread_id

__all__ = [
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
