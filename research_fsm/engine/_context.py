"""``NodeContext``: what a node gets besides the state."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._errors import InvalidCall
from ._events import Emitted, Event
from ._logs import engine_logger
from ._types import ErrorInfo

__all__ = ["CHILD_OF", "NodeContext", "parent_thread_of"]

CHILD_OF: ContextVar[tuple[str, str] | None] = ContextVar("research_fsm_child_of", default=None)
"""``(child thread, parent thread)`` while a subgraph node runs its child (``_subgraph``):
the child's run saves its parent's thread id with each checkpoint."""


def parent_thread_of(thread_id: str) -> str | None:
    """The parent thread of ``thread_id`` when a subgraph node is running it now."""
    running = CHILD_OF.get()
    return running[1] if running is not None and running[0] == thread_id else None


def _as_config(read: str) -> InvalidCall:
    """The error for a ``NodeContext`` read as LangGraph's config dict."""
    return InvalidCall(
        f"a node's second parameter is a NodeContext, not LangGraph's config dict ({read})",
        "ctx.thread_id (config['configurable']['thread_id']), ctx.node, ctx.step, "
        "ctx.run_id, ctx.item (a Send's argument), ctx.resume_value, ctx.emit(kind, "
        "data) (get_stream_writer()); other settings: close over them when you "
        "build the graph",
    )


@dataclass(slots=True, kw_only=True)
class NodeContext:
    """Per-step context handed to nodes that accept a second parameter
    (``async def node(state, ctx)``): LangGraph's ``config`` and runtime, as attributes.

    Attributes:
        thread_id: The thread (conversation) being run; LangGraph's
            ``config["configurable"]["thread_id"]``.
        run_id: The run, from START to END across suspensions.
        step: This node's step number in the run (0 for the first node).
        node: The name of the node being run.
        resume_value: The value ``resume(token, value)`` passed, when this call
            resumes this node's suspension; else ``None``.
        resuming: True when this call resumes a suspension of this node.
        answers: When resumed, every answer this node execution was given, in order
            (``interrupt()`` calls return them one by one); else ``()``.
        error: For an ``on_error`` node, what failed (an ``ErrorInfo``); else ``None``.
        item: In a branch started by ``Send(node, item)``, the item (LangGraph's
            ``Send`` argument); else ``None``.
        branch: The parallel branch this node runs in (``None`` outside fan-outs).
        scope: In a parallel branch of a graph with subgraphs, the key of this node
            execution; else ``None``.
        sink: Where the run's events go while it is streamed (``None``: it is not).
        log: A structlog logger bound with thread_id, run_id, node and step.
    """

    thread_id: str
    """The thread (conversation) being run."""
    run_id: str
    """The run, from START to END across suspensions."""
    step: int
    """This node's step number in the run (0 for the first node)."""
    node: str
    """The name of the node being run."""
    resume_value: Any = None
    """The value passed to ``resume`` when this node is being resumed, else ``None``.

    A function node is resumed by calling it again from the top with this set,
    so everything it does before returning ``Suspend`` must be safe to re-run."""
    resuming: bool = False
    """True when this call resumes a suspension of this node."""
    answers: tuple[Any, ...] = ()
    """When resumed: every answer this node execution was given, in order (the last
    is ``resume_value``); ``interrupt()`` calls return them one by one (a node that
    suspended with ``Suspend`` has just the last). Else ``()``."""
    error: ErrorInfo | None = None
    """For an ``on_error`` node: what failed; otherwise ``None``."""
    item: Any = None
    """In a branch started by ``Send(node, item)``: the item; otherwise ``None``."""
    branch: str | None = None
    """The parallel branch this node runs in (``None`` outside fan-outs)."""
    scope: str | None = field(default=None, repr=False)
    """In a parallel branch of a graph with subgraphs: the key of this node execution
    (saved with the branch), from which a subgraph node derives its child thread;
    otherwise ``None``."""
    _sink: Callable[[Event], None] | None = field(default=None, repr=False)
    _log: Any = field(default=None, repr=False)

    if not TYPE_CHECKING:  # to the type checker not subscriptable, as it is not

        def __getitem__(self, key):
            raise _as_config(f"ctx[{key!r}]")

        def get(self, key, default=None):
            raise _as_config(f"ctx.get({key!r})")

    def emit(self, kind: str, data: Any = None) -> None:
        """Send ``data`` to stream consumers now, while the node still runs."""
        if self._sink is not None:
            self._sink(Emitted(node=self.node, kind=kind, data=data, branch=self.branch))

    @property
    def sink(self) -> Callable[[Event], None] | None:
        """Where the run's events go while it is streamed (``None``: it is not); a
        subgraph node passes its child run's events on through it."""
        return self._sink

    @property
    def log(self) -> Any:
        """A structlog logger bound with thread_id, run_id, node and step."""
        if self._log is None:
            bound: dict[str, Any] = dict(
                thread_id=self.thread_id, run_id=self.run_id, node=self.node, step=self.step
            )
            if self.branch is not None:
                bound["branch"] = self.branch
            self._log = engine_logger(**bound)
        return self._log
