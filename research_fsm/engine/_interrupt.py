"""``interrupt(value)``: LangGraph's question asked from inside a node.

A node that calls ``interrupt(question)`` suspends the run with ``question`` as the
payload; ``resume(token, answer)`` calls the node again from its top, and this time
that call returns ``answer``. A node may ask several times, in a row or in a loop: on
each resume it runs again from the top, its k-th ``interrupt`` call returns the k-th
answer given so far, and the first call not answered yet suspends again (LangGraph's
replay, matched by position within the node's execution). The answers are saved with
the suspension (``SuspensionRecord.answers``, ``BranchRecord.answers``), so a resume in
another process, or from a fork, replays them; they are dropped once the node returns.

``_steps.invoke`` makes each attempt of a node the current ``Asker`` (a context
variable, so parallel branches and subgraphs each have their own) and turns the
``GraphInterrupt`` that ends it into an ``Interruption``, the node's ``Suspend``.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ._errors import InterruptMisused
from ._types import Suspend

__all__ = ["ASKER", "Asker", "GraphInterrupt", "Interruption", "interrupt", "swallowed"]


class GraphInterrupt(Exception):
    """Raised by ``interrupt()`` to suspend the node that called it (LangGraph's
    name). Let it through: a node with a broad ``except Exception`` around
    ``interrupt()`` re-raises it first (``except GraphInterrupt: raise``)."""

    def __init__(self, value: object) -> None:
        super().__init__(value)
        self.value = value


@dataclass(frozen=True, slots=True)
class Interruption(Suspend):
    """A node's suspension by ``interrupt()``: its payload, and the answers given to
    its earlier ``interrupt()`` calls (saved with the suspension)."""

    answers: tuple[object, ...] = ()


class Asker:
    """One attempt of one node execution: the answers ``interrupt()`` returns, in
    order, and how many of its calls it made."""

    __slots__ = ("answers", "asked", "ended", "node", "pending", "resumable")

    def __init__(self, node: str, answers: tuple[object, ...], resumable: bool) -> None:
        self.node = node
        self.answers = answers
        self.asked = 0
        """``interrupt()`` calls made in this attempt."""
        self.pending: GraphInterrupt | None = None
        """The ``GraphInterrupt`` raised by an unanswered call (the node must let it out)."""
        self.resumable = resumable
        """The node is an object with ``resume``: ``interrupt()`` is not for it."""
        self.ended = False
        """The attempt is over: a task it left running may not ask any more."""


ASKER: ContextVar[Asker | None] = ContextVar("research_fsm_asker", default=None)
"""The node attempt running now in this task (``None``: no node is running)."""


def interrupt(value: Any) -> Any:
    """Ask ``value`` (any JSON-serialisable value) and suspend the run; on
    ``resume(token, answer)`` the node runs again from its top and this call returns
    ``answer``. Several calls in one node (a loop too) are answered in order: the k-th
    call returns the k-th answer, the first unanswered one suspends again. As
    LangGraph's ``interrupt``, the code before it runs again on every resume.

    Raises ``InterruptMisused`` outside a node, and in a node object with ``resume``
    (return ``Suspend`` there instead)."""
    asker = ASKER.get()
    if asker is None:
        raise InterruptMisused(
            "interrupt() was called outside a node: call it inside a node of a "
            "compiled graph, which suspends the run (or return Suspend(payload) from a node)"
        )
    if asker.ended:
        raise InterruptMisused(
            f"interrupt({value!r:.60}) was called after node `{asker.node}` had returned, "
            "from a task it started and did not await: await the task (or gather it) "
            "inside the node, so its question suspends the node"
        )
    if asker.resumable:
        raise InterruptMisused(
            f"node `{asker.node}` is an object with `resume`, which takes the answer: "
            "return Suspend(payload) from its `run` instead of calling interrupt(), or "
            "drop `resume` so the node runs again from its top and interrupt() returns it"
        )
    index = asker.asked
    asker.asked = index + 1
    if index < len(asker.answers):
        return asker.answers[index]
    asker.pending = GraphInterrupt(value)
    raise asker.pending


def swallowed(asker: Asker) -> InterruptMisused:
    """The error of a node that returned after catching its ``interrupt()``'s
    ``GraphInterrupt``."""
    pending = asker.pending
    assert pending is not None
    return InterruptMisused(
        f"node `{asker.node}` returned after catching the GraphInterrupt that "
        f"interrupt({pending.value!r:.60}) raised to suspend it: let it through "
        "(`except GraphInterrupt: raise` before a broad `except Exception`; and await "
        "a task that calls interrupt(), so its GraphInterrupt reaches the node)"
    )
