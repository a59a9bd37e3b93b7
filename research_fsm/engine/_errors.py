"""Every exception the engine raises on purpose.

All of them share :class:`EngineError`; where a built-in exception fits, they
subclass it too, so ``except ValueError`` keeps working for callers that do not
know about the engine. ``ThreadSuspended``, which carries a resume token, is
defined with the tokens (``_tokens``), above the token type it names.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = [
    "CheckpointConflict",
    "CheckpointNotFound",
    "ChildThreadMissing",
    "CorruptCheckpoint",
    "EngineError",
    "GraphValidationError",
    "InterruptMisused",
    "InvalidCall",
    "InvalidCommand",
    "InvalidResumeToken",
    "InvalidResumeValue",
    "InvalidStreamMode",
    "InvalidThreadQuery",
    "InvalidUpdate",
    "LeaseLost",
    "NodeFailed",
    "NodeTimeout",
    "RoutingError",
    "StaleResumeToken",
    "StateMisread",
    "StateSerializationError",
    "StepLimitExceeded",
    "StoreWriteError",
    "ThreadBusy",
    "ThreadExists",
    "ThreadNotFound",
    "UnknownSubgraph",
    "UpdateRefused",
]


class EngineError(Exception):
    """Base class of every error raised by ``research_fsm.engine``."""


class GraphValidationError(EngineError, ValueError):
    """The graph is malformed; raised by ``StateGraph`` methods and ``compile()``.

    ``problems`` lists every problem found, one sentence each.
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            message = self.problems[0]
        else:
            message = f"{len(self.problems)} problems in the graph:\n" + "\n".join(
                f"  - {p}" for p in self.problems
            )
        super().__init__(message)


class RoutingError(EngineError, LookupError):
    """A router returned a key that its ``targets`` do not declare."""

    def __init__(
        self, source: str, key: object, allowed: Sequence[Hashable], *, what: str = "key"
    ) -> None:
        self.source = source
        self.key = key
        self.allowed = list(allowed)
        allowed_text = ", ".join(repr(k) for k in self.allowed) or "(none)"
        verb = "sent a branch to node" if what == "node" else "returned"
        super().__init__(
            f"router of node `{source}` {verb} {key!r}, which is not one of its "
            f"declared {what}s: {allowed_text}"
        )


class InvalidCommand(RoutingError):
    """A node's ``Command(goto=...)`` names a place it did not declare in
    ``add_node(..., destinations=[...])`` (or the node declares none, or a node
    with destinations returned no ``goto``)."""

    def __init__(self, node: str, goto: object, allowed: Sequence[str], reason: str) -> None:
        self.source = self.node = node
        self.key = self.goto = goto
        self.allowed = list(allowed)
        Exception.__init__(self, f"node `{node}` {reason}")


class InvalidCall(EngineError, TypeError):
    """An engine object used the way LangGraph's is, which this engine spells otherwise:
    a call with arguments it does not take (a config dict, ``stream_mode=``, no
    ``thread_id``, ``output_schema=``), a ``NodeContext`` read as a config dict, a
    stream iterated without ``async for``. The message names this engine's way."""

    def __init__(self, what: str, fix: str) -> None:
        self.what = what
        """What was done, as the message says it."""
        self.fix = fix
        """This engine's way to write it."""
        super().__init__(f"{what}; here: {fix} (see docs/langgraph.md)")


class StateMisread(EngineError, AttributeError, TypeError):
    """A node read its state as LangGraph's: ``state["x"]`` (the state is a pydantic
    model: ``state.x``), or, reached through ``Send(node, item)``, a field only the
    item has (the item is ``ctx.item``; ``state`` is the graph's). Raised inside the
    node, so it reaches the caller as a ``NodeFailed``'s cause."""

    def __init__(self, node: str, model: str, field: str | None, sent: bool) -> None:
        self.node = node
        self.field = field
        item = (
            f"node `{node}` was reached through Send(node, item): it reads the item as "
            "ctx.item (`async def node(state, ctx)`), its `state` is the graph's, not the "
            "Send argument as in LangGraph"
        )
        if field is not None:
            message = f"the state `{model}` has no field `{field}`; {item}"
            message += f" (ctx.item[{field!r}] for a dict item)"
        else:
            message = (
                f"the state `{model}` is a pydantic model, not a dict: read a field as "
                "`state.field`, not `state['field']`"
            )
            if sent:
                message += f"; {item} (ctx.item['key'] for a dict item)"
        super().__init__(message)


class InvalidStreamMode(EngineError, ValueError):
    """``stream(..., mode=...)`` names a mode that does not exist."""

    def __init__(self, mode: object, allowed: Sequence[str]) -> None:
        self.mode = mode
        self.allowed = list(allowed)
        super().__init__(
            f"stream mode {mode!r} does not exist; the modes are "
            f"{', '.join(repr(m) for m in self.allowed)} (or a list of them)"
        )


class InvalidThreadQuery(EngineError, ValueError):
    """A thread listing's argument (``threads(...)``) is not one the stores accept:
    a cursor no listing gave, an unknown status, a bad limit or prefix."""

    def __init__(self, what: str, value: object, allowed: str) -> None:
        self.what = what
        self.value = value
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:60] + "..."
        super().__init__(f"invalid {what} {shown} for a thread listing: {allowed}")


class InvalidResumeValue(EngineError, ValueError):
    """A run paused at a breakpoint was resumed with a value it does not take: resume
    it with ``None`` (or a ``Command``, as the message says); or a node's question was
    answered with a ``Command`` (``where="question"``), which it would take as the
    answer itself."""

    def __init__(
        self,
        thread_id: str,
        node: str,
        where: str,
        value: object,
        allowed: str = "None, or Command(goto=..., update=...) to go on elsewhere",
    ) -> None:
        self.thread_id = thread_id
        self.node = node
        if where == "question":
            super().__init__(
                f"thread `{thread_id}` is suspended at a question of node `{node}`, whose "
                f"answer is the value itself, not a Command (got {value!r:.80}): resume it "
                "with resume(token, value) (LangGraph's Command(resume=value)); the node's "
                "update after the answer changes the state"
            )
            return
        super().__init__(
            f"thread `{thread_id}` is paused at a breakpoint {where} node `{node}`, which "
            f"takes no value: resume it with {allowed} (got {value!r:.80})"
        )


class InterruptMisused(EngineError, RuntimeError):
    """``interrupt()`` was called where it cannot suspend: outside a node, in a node
    object with ``resume``, or its suspension was caught by the node (an ``except
    Exception`` around it). The message names the fix."""


class NodeTimeout(EngineError, TimeoutError):
    """A node ran longer than the ``timeout`` given to ``add_node``."""

    def __init__(self, node: str, timeout: float) -> None:
        self.node = node
        self.timeout = timeout
        super().__init__(f"node `{node}` did not finish within {timeout:g} s")


class NodeFailed(EngineError):
    """A node raised, its retries are exhausted and it has no ``on_error`` node.

    The state as of the last completed step is checkpointed before this is raised,
    so ``run(None, thread_id=...)`` retries the failed node.
    """

    def __init__(self, node: str, step: int, cause: BaseException) -> None:
        self.node = node
        self.step = step
        self.cause = cause
        super().__init__(f"node `{node}` failed at step {step}: {type(cause).__name__}: {cause}")


class StepLimitExceeded(EngineError, RuntimeError):
    """A single ``run``/``resume`` call executed more nodes than ``step_limit``."""

    def __init__(self, limit: int, path: Sequence[str]) -> None:
        self.limit = limit
        self.path = list(path)
        super().__init__(f"step limit of {limit} exceeded; path taken: {' -> '.join(self.path)}")


class ThreadBusy(EngineError, RuntimeError):
    """Another run (in this process or another) holds the thread."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"thread `{thread_id}` is busy: another run holds it; try again when it ends"
        )


class LeaseLost(EngineError, RuntimeError):
    """A run's store can no longer prove the run holds the thread's lease (the
    connection holding it ended, so another run may take the thread): the run stopped
    before running more node code, and the save that found the lease gone wrote nothing."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"thread `{thread_id}`: the run stopped because its lease on the thread was lost "
            "(the store's connection holding it ended); continue the thread with "
            f"run(None, thread_id={thread_id!r}), or resume(token, value) if it is suspended"
        )


class ThreadNotFound(EngineError, LookupError):
    """An operation needs an existing thread and there is none with that id."""

    def __init__(self, thread_id: str, hint: str = "") -> None:
        self.thread_id = thread_id
        super().__init__(f"thread `{thread_id}` does not exist{hint}")


class ThreadExists(EngineError, ValueError):
    """``fork`` was asked to copy onto a thread that already has checkpoints."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"thread `{thread_id}` already exists: fork onto a new thread id, or "
            "delete_thread it first"
        )


class CheckpointNotFound(EngineError, LookupError):
    """A ``checkpoint_id`` that is not one of the thread's checkpoints: unknown, of
    another thread, or pruned by the store's ``keep``."""

    def __init__(self, thread_id: str, checkpoint_id: str) -> None:
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id
        shown = checkpoint_id if len(checkpoint_id) <= 64 else checkpoint_id[:64] + "..."
        super().__init__(
            f"thread `{thread_id}` has no checkpoint {shown!r}: it is unknown, belongs to "
            "another thread, or was pruned by the store's keep; history(thread_id) lists "
            "the thread's checkpoints"
        )


class ChildThreadMissing(EngineError, LookupError):
    """A parent thread waits on a child thread (a subgraph node's) that is gone: a
    ``delete_thread`` stopped midway (a crash) after deleting the child. The call
    stops without running the node (no finished child step runs again, and a resume
    value is not taken): delete the parent thread to finish the job."""

    def __init__(self, thread_id: str, node: str, child: str) -> None:
        self.thread_id = thread_id
        self.node = node
        self.child = child
        super().__init__(
            f"thread `{thread_id}` waits on the child thread `{child}` of subgraph node "
            f"`{node}`, which is gone (deleted by a delete_thread that stopped midway); "
            "nothing was run: call delete_thread on the thread to finish deleting it"
        )


class UnknownSubgraph(EngineError, ValueError):
    """``app.subgraph(node)`` names no subgraph node of the graph."""

    def __init__(self, node: str, path: str, allowed: Sequence[str]) -> None:
        self.node = node
        self.allowed = list(allowed)
        shown = ", ".join(f"`{name}`" for name in allowed) or "none"
        where = "this graph" if path == node else f"the graph at `{path}`"
        super().__init__(
            f"`{node}` is not a subgraph node of {where}; its subgraph nodes are: {shown}"
        )


class UpdateRefused(EngineError, RuntimeError):
    """``update_state`` cannot change the thread as it is now (it waits on a
    suspension the update does not answer, or parallel branches are in flight)."""

    def __init__(self, thread_id: str, reason: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"update_state refused on thread `{thread_id}`: {reason}")


class InvalidResumeToken(EngineError, ValueError):
    """A resume token is malformed, edited, or signed for another store."""


class InvalidUpdate(EngineError, ValueError):
    """Input or a node's update does not fit the state model (unknown field, wrong type)."""


class StaleResumeToken(EngineError, ValueError):
    """A genuine resume token that no longer matches the thread's latest checkpoint.

    It was already used, or the thread moved on (or was deleted) since.
    """

    def __init__(self, thread_id: str, checkpoint_id: str, reason: str) -> None:
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id
        super().__init__(f"resume token for thread `{thread_id}` is stale: {reason}")


class CheckpointConflict(EngineError, RuntimeError):
    """A save lost the race: its parent is no longer the thread's latest checkpoint."""

    def __init__(self, thread_id: str, parent_id: str | None) -> None:
        self.thread_id = thread_id
        self.parent_id = parent_id
        super().__init__(
            f"checkpoint conflict on thread `{thread_id}`: another writer saved after "
            f"checkpoint {parent_id!r}; nothing was overwritten"
        )


class CorruptCheckpoint(EngineError, ValueError):
    """No readable checkpoint is left for a thread that has checkpoints on disk."""

    def __init__(self, thread_id: str, detail: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"thread `{thread_id}`: {detail}")


class StateSerializationError(EngineError, TypeError):
    """A state value cannot be written to a checkpoint as JSON."""

    def __init__(self, node: str | None, path: str, detail: str) -> None:
        self.node = node
        self.path = path
        origin = f" produced by node `{node}`" if node else ""
        super().__init__(f"cannot serialise state value at `{path}`{origin}: {detail}")


class StoreWriteError(EngineError, OSError):
    """The checkpoint store could not write; the previous checkpoint is intact."""

    def __init__(self, thread_id: str, cause: OSError) -> None:
        self.thread_id = thread_id
        self.cause = cause
        super().__init__(
            f"could not write a checkpoint for thread `{thread_id}`: "
            f"{cause.strerror or cause} ({type(cause).__name__}); "
            "the previous checkpoint is intact"
        )


class IncompatibleCheckpoint(EngineError, LookupError):
    """A saved thread the graph no longer fits: its next or suspended node is gone,
    or its state no longer validates against the state model."""

    def __init__(
        self, thread_id: str, detail: str, *, node: str | None = None, field: str | None = None
    ) -> None:
        self.thread_id = thread_id
        self.node = node
        self.field = field
        super().__init__(
            f"thread `{thread_id}` cannot continue with this graph: {detail}; pass new input "
            "to start a fresh run on it, or delete the thread"
        )


class UnsafeStoreDirectory(EngineError, PermissionError):
    """A file store's directory that others could change: writable by other users,
    or owned by another user. The store refuses to use it."""

    def __init__(self, directory: str, reason: str) -> None:
        self.directory = directory
        super().__init__(
            f"refusing the checkpoint store directory {directory}: {reason}; "
            "use a directory of your own that only you can write (chmod 700)"
        )
