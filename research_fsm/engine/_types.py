"""The small value types of the engine: what nodes return, what runs produce."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from ._errors import EngineError, InvalidResumeToken, NodeTimeout
from ._langgraph import missing
from ._records import BranchRecord, BranchStatus, OriginRecord, SuspensionRecord

__all__ = [
    "END",
    "START",
    "BranchInfo",
    "BranchStatus",
    "Checkpoint",
    "CheckpointStatus",
    "ChildThread",
    "ErrorInfo",
    "Origin",
    "RetryOn",
    "RetryPolicy",
    "RunResult",
    "RunStatus",
    "Send",
    "StateSnapshot",
    "Suspend",
    "SuspendToken",
    "Suspension",
    "ThreadInfo",
    "ThreadPage",
    "is_transient",
]

START = "__start__"
"""The name of the virtual node every run starts from."""
END = "__end__"
"""The name of the virtual node that ends a run."""

StateT = TypeVar("StateT", bound=BaseModel)

RunStatus = Literal["completed", "suspended"]
Origin = Literal["run", "update", "rewind", "fork"]
CheckpointStatus = Literal["running", "suspended", "completed", "failed"]


@dataclass(frozen=True, slots=True)
class Send:
    """Returned in a router's list to run ``node`` as a branch of its own with ``item``.

    The node reads the item as ``ctx.item``. Items are saved with the branch, so
    give JSON values (dicts, lists, strings, numbers); after a restart they come
    back as parsed JSON.
    """

    node: str
    """The node the branch starts at; one of the router's declared targets."""
    item: Any = None
    """The branch's input, available to its nodes as ``ctx.item``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchInfo:
    """One parallel branch of an unfinished fan-out, as snapshots show it."""

    id: str
    """``node[index]`` of the branch's first node and its position in the fan-out;
    a branch inside another branch's fan-out is ``outer/inner``."""
    node: str | None
    """The node the branch runs next (``None`` once it reached its join)."""
    status: BranchStatus
    """``pending`` (not finished), ``forked`` (waits for a fan-out of its own),
    ``suspended``, ``failed`` or ``done``."""
    join: str | None
    """The node that runs once every branch of this fan-out is done (``None``: END)."""


@dataclass(frozen=True, slots=True)
class Suspend:
    """Returned by a node to pause the run until ``resume(token, value)``."""

    payload: Any
    """What the node asks for; any JSON-serialisable value. Handed to the caller."""
    update: dict[str, Any] | BaseModel | None = None
    """State changes applied before pausing (e.g. an attempt counter)."""


_TRANSIENT_NAMES = (
    "ConnectionError",
    "ConnectError",
    "TimeoutError",
    "TimeoutException",
    "Timeout",
)
_TRANSIENT_STATUS = frozenset({408, 425, 429})


def is_transient(exc: BaseException) -> bool:
    """The default ``RetryPolicy.retry_on``: whether ``exc`` is plausibly transient.

    Retried: an exception with ``retryable = True`` (on the class or the instance;
    ``False`` opts out of everything below); ``ConnectionError`` and ``TimeoutError``
    (a node's own ``NodeTimeout`` included); an HTTP client's connection or timeout
    error, told by class name as their packages do not share a base
    (``httpx.ConnectError``, ``anthropic.APIConnectionError``, ``requests.Timeout``...);
    an error carrying an HTTP ``status_code`` (on itself or its ``response``) of
    408, 425, 429 or 5xx. Not retried: programming errors (``ValueError``,
    ``TypeError``, ``KeyError``, ...) and everything else.
    """
    marked = getattr(exc, "retryable", None)
    if isinstance(marked, bool):
        return marked
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    if any(cls.__name__.endswith(_TRANSIENT_NAMES) for cls in type(exc).__mro__):
        return True
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return isinstance(status, int) and (status in _TRANSIENT_STATUS or 500 <= status <= 599)


RetryOn = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]
"""What ``RetryPolicy.retry_on`` accepts: exception types, or a predicate."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often, and how patiently, a failing node is retried.

    By default only plausibly transient failures are retried (``is_transient``:
    connection errors, timeouts, HTTP 408/425/429/5xx, exceptions marked
    ``retryable = True``); a bug in a node fails at once. Pass ``retry_on`` to choose.
    """

    max_attempts: int = 3
    """Total attempts, the first one included (1 means no retry)."""
    backoff: float = 0.1
    """Seconds to wait before the second attempt; doubles after each failure."""
    max_backoff: float = 5.0
    """Upper bound of one wait, in seconds."""
    retry_on: RetryOn = is_transient
    """Which failures are retried: an exception type or a tuple of them (``(Exception,)``
    retries everything), or a predicate ``retry_on(exc) -> bool``. The engine's own
    control errors never are (a ``NodeTimeout`` is a node failure and is retried when
    it matches)."""

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise ValueError(
                f"RetryPolicy.max_attempts must be an int >= 1, got {self.max_attempts!r}"
            )
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        if self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("RetryPolicy.backoff and max_backoff must be >= 0")
        retry_on = self.retry_on
        types_ = retry_on if isinstance(retry_on, tuple) else (retry_on,)
        is_types = all(isinstance(t, type) and issubclass(t, BaseException) for t in types_)
        if not is_types and (isinstance(retry_on, (tuple, type)) or not callable(retry_on)):
            raise ValueError(
                "RetryPolicy.retry_on must be an exception type, a tuple of exception types "
                f"or a callable (exc) -> bool, got {retry_on!r}"
            )

    def should_retry(self, exc: BaseException, attempt: int) -> bool:
        """Whether a failure on attempt ``attempt`` (1-based) is retried."""
        if attempt >= self.max_attempts:
            return False
        if isinstance(exc, EngineError) and not isinstance(exc, NodeTimeout):
            return False
        retry_on = self.retry_on
        if isinstance(retry_on, (type, tuple)):
            return isinstance(exc, retry_on)
        return bool(retry_on(exc))

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based)."""
        return float(min(self.backoff * 2.0 ** (attempt - 1), self.max_backoff))


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What failed, handed to an ``on_error`` node as ``ctx.error``."""

    node: str
    """The node that failed."""
    exc_type: str
    """The exception's class name."""
    message: str
    """The exception's message."""
    branch: str | None = None
    """The parallel branch the node ran in, if any (see ``BranchInfo.id``)."""


_TOKEN_PREFIX = "rt1."


@dataclass(frozen=True, slots=True, kw_only=True)
class SuspendToken:
    """The handle to a suspended run; ``str(token)`` is safe to give a browser.

    The token names its thread and checkpoint and carries an HMAC made with the
    store's secret; ``resume`` refuses one that was edited or minted elsewhere.
    """

    thread_id: str
    """The suspended thread."""
    checkpoint_id: str
    """The checkpoint the run was suspended at."""
    signature: str
    """URL-safe base64 HMAC-SHA256 (truncated) over thread and checkpoint ids."""

    def __str__(self) -> str:
        body = _b64(f"{self.thread_id}\n{self.checkpoint_id}".encode())
        return f"{_TOKEN_PREFIX}{body}.{self.signature}"

    @classmethod
    def parse(cls, text: str) -> SuspendToken:
        """Parse ``str(token)`` back; raises ``InvalidResumeToken`` if malformed."""
        if not isinstance(text, str):
            raise InvalidResumeToken(
                f"a resume token must be a str or SuspendToken, got {type(text).__name__}"
            )
        if not text.startswith(_TOKEN_PREFIX) or len(text) > 1024:
            raise InvalidResumeToken("malformed resume token: unknown format")
        body, _, signature = text[len(_TOKEN_PREFIX) :].partition(".")
        try:
            thread_id, sep, checkpoint_id = _unb64(body).decode().partition("\n")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise InvalidResumeToken("malformed resume token: bad encoding") from None
        if not sep or not thread_id or not checkpoint_id or not signature:
            raise InvalidResumeToken("malformed resume token: missing parts")
        return cls(thread_id=thread_id, checkpoint_id=checkpoint_id, signature=signature)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not text.isascii():
        raise ValueError("not ascii")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    # The decoder skips stray characters, accepts '+' '/' '=' and ignores unused
    # low bits: accept only the one spelling ``_b64`` produces, so no edited
    # token string is ever taken for the genuine one.
    if _b64(data) != text:
        raise ValueError("not the canonical encoding")
    return data


@dataclass(frozen=True, slots=True, kw_only=True)
class Suspension:
    """A pending request for human input (LangGraph's ``Interrupt``).

    Attributes:
        node: The node that suspended and will be resumed.
        payload: What the node asked (LangGraph's ``Interrupt.value``).
        token: The resume token: ``resume(token, value)`` answers it.
        branch: The parallel branch that suspended, if any; else ``None``.
        breakpoint: ``"before"``/``"after"`` at a breakpoint (resume it with ``None``);
            else ``None``.
        child_thread_id: When a subgraph passed on its child's suspension, the child's
            thread; else ``None``.
        answers: Asked by ``interrupt()``: the answers already given to the node's
            earlier ``interrupt()`` calls, in order (replayed on resume); else ``()``.
    """

    node: str
    """The node that suspended and will be resumed."""
    payload: Any
    """What the node asked (the ``Suspend.payload``)."""
    token: SuspendToken
    """Pass this (or its ``str``) to ``resume``."""
    branch: str | None = None
    """The parallel branch that suspended, if any (its token resumes just it)."""
    breakpoint: Literal["before", "after"] | None = None
    """``"before"``/``"after"`` when the run paused at a breakpoint (``interrupt_before``/
    ``interrupt_after``) of ``node``: resume it with ``None``; else ``None``."""
    child_thread_id: str | None = None
    """When ``node`` is a subgraph that passed on a suspension of its child graph: the
    child's thread (``get_state(thread, subgraphs=True)`` shows its state; edit it with
    ``app.subgraph(node).update_state(child_thread_id, ...)``); else ``None``."""
    answers: tuple[Any, ...] = ()
    """Asked by ``interrupt()``: the answers already given to the node's earlier
    ``interrupt()`` calls in this execution, in order (each resume replays them); else
    ``()``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult(Generic[StateT]):
    """The outcome of one ``run`` or ``resume`` call (LangGraph's returned dict is
    ``result.state.model_dump()``).

    Attributes:
        status: ``"completed"`` (reached END) or ``"suspended"`` (waits for ``resume``).
        state: The state after the last step (a model of the graph's state class).
        path: Names of the nodes this call executed, in order.
        checkpoint_id: The checkpoint saved last.
        thread_id: The thread this call ran on.
        suspension: When suspended, the first of ``suspensions`` (its ``payload`` and
            ``token``); else ``None``.
        suspensions: Every pending suspension: one, or one per suspended branch.
    """

    status: RunStatus
    """``"completed"`` (reached END) or ``"suspended"`` (waits for ``resume``)."""
    state: StateT
    """The state after the last step."""
    path: list[str]
    """Names of the nodes executed by this call, in order."""
    checkpoint_id: str
    """The checkpoint saved last."""
    thread_id: str
    """The thread this call ran on."""
    suspension: Suspension | None = None
    """Set when ``status == "suspended"``: the first of ``suspensions``."""
    suspensions: tuple[Suspension, ...] = ()
    """Every pending suspension: one, or one per suspended parallel branch."""

    if not TYPE_CHECKING:  # LangGraph's invoke() returns a dict: name this one's fields

        def __getitem__(self, key: object) -> Any:
            if key == "__interrupt__":
                hint = ".suspensions (each .payload is an Interrupt's .value; .token resumes it)"
            else:
                hint = f".state.{key} (the state is a model; .state.model_dump() for a dict)"
            raise TypeError(
                f"'RunResult' object is not subscriptable (LangGraph's invoke returns a "
                f"dict); here result[{key!r}] is result{hint} (see docs/langgraph.md)"
            )

        def __getattr__(self, name: str) -> Any:
            raise missing("RunResult", name)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildThread:
    """A subgraph node's child thread, as its parent's snapshot lists it."""

    node: str
    """The subgraph node, in the parent graph (``app.subgraph(node)`` is its graph)."""
    thread_id: str
    """The child's thread, in the parent's store."""
    status: CheckpointStatus | None
    """The child thread's latest status (``None``: not started yet)."""
    branch: str | None = None
    """The parent's parallel branch that runs the node, if any."""
    snapshot: StateSnapshot[Any] | None = None
    """The child's latest snapshot (its own children listed the same way), with
    ``get_state(..., subgraphs=True)``; else ``None``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadInfo:
    """One thread of a store, as a listing (``threads(...)``) shows it: what its
    latest checkpoint says, read without loading the thread."""

    thread_id: str
    """The thread."""
    status: CheckpointStatus
    """Its latest checkpoint's: ``completed``, ``suspended`` (a node's question or a
    pause at a breakpoint), ``failed``, or ``running`` (a run is saving steps, or
    stopped midway: a crash, a cancellation)."""
    node: str | None
    """The node it stands at: the one it runs next, waits on or failed in; for a
    completed thread the last node that ran (``None``: none did)."""
    updated_at: str
    """ISO-8601 UTC time of its latest checkpoint; the listing's order, newest first."""
    checkpoints: int
    """How many checkpoints its history holds (every line; what ``keep`` kept)."""
    parent_thread_id: str | None
    """The thread whose subgraph node runs it (``None``: a top-level thread)."""
    checkpoint_id: str
    """Its latest checkpoint."""
    unreadable: str | None = None
    """Why its latest checkpoint cannot be read (a newer research_fsm wrote it...); the
    other fields are then what the store knew of it before, or guesses. ``None``: it reads."""


@dataclass(frozen=True, slots=True)
class ThreadPage:
    """A page of a thread listing: the threads, newest first, and the cursor of the
    next page (``None``: this is the last)."""

    threads: tuple[ThreadInfo, ...]
    """The page's threads, most recently updated first."""
    next_cursor: str | None
    """Pass it as ``cursor=`` for the next page; opaque, ``None`` after the last."""


class LazyState:
    """A snapshot's state not validated yet (``history()``): ``load()`` validates it."""

    __slots__ = ("load",)

    def __init__(self, load: Callable[[], BaseModel]) -> None:
        self.load = load


class _StateField:
    """``StateSnapshot.state``: a state given as ``LazyState`` is validated on first
    read (``IncompatibleCheckpoint`` then, at every read, if it no longer fits) and
    kept; any other value is the state as given."""

    def __get__(self, snapshot: Any, owner: Any = None) -> Any:
        if snapshot is None:  # on the class: a field without a default
            raise AttributeError("state")
        try:
            state = snapshot.__dict__["_state"]
        except KeyError:  # not set yet (an unpickling)
            raise AttributeError("state") from None
        if type(state) is LazyState:
            loaded = snapshot.__dict__.get("_loaded")
            if loaded is None:  # one instance for every reader, threads racing too
                loaded = snapshot.__dict__.setdefault("_loaded", state.load())
            return loaded
        return state

    def __set__(self, snapshot: Any, state: Any) -> None:
        snapshot.__dict__["_state"] = state


@dataclass(frozen=True, kw_only=True)
class StateSnapshot(Generic[StateT]):
    """A saved checkpoint of a thread, as ``get_state`` (the latest, or one by id),
    ``history`` and ``update_state`` return it.

    Attributes:
        state: The state saved (LangGraph's ``.values``, as a model).
        status: ``running`` (stopped midway), ``suspended``, ``completed`` or ``failed``.
        next: The node that runs next (one name, not a tuple), or ``None`` when completed.
        suspension: The pending suspension when suspended (its ``token`` resumes it);
            else ``None``.
        checkpoint_id: Id of the checkpoint.
        created_at: ISO-8601 UTC time the checkpoint was written.
        error: What failed, when ``status == "failed"``; else ``None``.
        suspensions: Every pending suspension (one per suspended parallel branch).
        branches: The branches of an unfinished fan-out, each a ``BranchInfo``.
        parent_id: The checkpoint this one follows in its line of history (``None``
            for a thread's first).
        origin: What wrote it (LangGraph's ``metadata["source"]``): ``"run"``,
            ``"update"``, ``"rewind"`` or ``"fork"``.
        forked_from: For a fork's first checkpoint, the thread and checkpoint it was
            copied from; else ``None``.
        children: The child threads of the subgraph nodes this checkpoint runs next,
            waits on or paused at.
    """

    if TYPE_CHECKING:
        state: StateT
    else:
        state: StateT = _StateField()
    """The state saved. A ``history()`` snapshot validates it on first read (a page
    whose states nobody reads costs no validation): a state the model no longer
    fits raises ``IncompatibleCheckpoint`` there."""
    status: CheckpointStatus
    """``running`` (stopped midway), ``suspended``, ``completed`` or ``failed``."""
    next: str | None
    """The node that runs next, or ``None`` when completed."""
    suspension: Suspension | None
    """The pending suspension, when suspended."""
    checkpoint_id: str
    """Id of the checkpoint."""
    created_at: str
    """ISO-8601 UTC time the checkpoint was written."""
    error: ErrorInfo | None = None
    """What failed, when ``status == "failed"``."""
    suspensions: tuple[Suspension, ...] = ()
    """Every pending suspension (one per suspended parallel branch)."""
    branches: tuple[BranchInfo, ...] = ()
    """The branches of an unfinished fan-out (which finished, which are pending);
    ``next`` is then the node that runs after the fan-out."""
    parent_id: str | None = None
    """The checkpoint this one follows in its line of history: the one saved before
    it, or, for the first checkpoint of a line continued from a past checkpoint
    (``run(..., checkpoint_id=...)``), that past checkpoint. ``None`` for a thread's
    first checkpoint."""
    origin: Origin = "run"
    """What wrote it: ``"run"`` (a run's step), ``"update"`` (``update_state``),
    ``"rewind"`` (a run continued from a past checkpoint: its copy, starting the new
    line) or ``"fork"`` (``fork``: the new thread's first checkpoint)."""
    forked_from: tuple[str, str] | None = None
    """For a fork's first checkpoint: the thread and checkpoint it was copied from."""
    children: tuple[ChildThread, ...] = ()
    """The child threads of the subgraph nodes this checkpoint runs next, waits on or
    paused at (one per node execution, in a fan-out one per branch), in order."""

    def __repr__(self) -> str:
        """As a dataclass's, with a state that no longer fits shown as its error."""
        shown = []
        for name in _SNAPSHOT_FIELDS:
            try:
                value = repr(getattr(self, name))
            except EngineError as exc:  # IncompatibleCheckpoint: say so, never raise
                value = f"<{type(exc).__name__}: {exc}>"
            shown.append(f"{name}={value}")
        return f"{type(self).__qualname__}({', '.join(shown)})"

    def __getstate__(self) -> dict[str, Any]:
        """For pickle and copy: the state validated (a ``LazyState`` holds a function)."""
        return {name: getattr(self, name) for name in _SNAPSHOT_FIELDS}

    def __setstate__(self, saved: dict[str, Any]) -> None:
        for name, value in saved.items():
            object.__setattr__(self, name, value)

    if not TYPE_CHECKING:  # LangGraph's names (.values, .config...), to the type checker unknown

        def __getattr__(self, name: str) -> Any:
            raise missing("StateSnapshot", name)


_SNAPSHOT_FIELDS = tuple(f.name for f in fields(StateSnapshot))


@dataclass(slots=True, kw_only=True)
class Checkpoint:
    """One saved step of a thread; what a ``CheckpointStore`` keeps.

    ``state`` is the state model instance when saving; stores that serialise
    return it as a JSON ``dict`` when loading and the engine validates it.
    """

    thread_id: str
    """The thread."""
    checkpoint_id: str
    """Unique, unguessable id; never reused."""
    parent_id: str | None
    """The checkpoint this one follows; ``None`` for the first of a thread."""
    seq: int
    """Position in the thread's history: the first checkpoint is 1."""
    run_id: str
    """The run (START to END, across suspensions) this checkpoint belongs to."""
    step: int
    """Nodes completed in this run so far."""
    status: CheckpointStatus
    """``running``, ``suspended``, ``completed`` or ``failed``."""
    next: str | None
    """The node to run next (``None`` when completed)."""
    state: BaseModel | dict[str, Any]
    """The state after the step."""
    created_at: str
    """ISO-8601 UTC creation time."""
    suspension: SuspensionRecord | None = None
    """The suspension, when suspended."""
    error: dict[str, str] | None = None
    """``{"node", "exc_type", "message"}`` when failed."""
    last_node: str | None = None
    """The node whose step produced this checkpoint."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Store-specific metadata (not interpreted by the engine)."""
    changes: dict[str, int | None] | None = None
    """Set by the engine when saving: the fields changed since the parent
    checkpoint, each mapped to the number of items its ``append`` reducer added
    at the end, or to ``None`` when the field got a new value. ``None`` (the
    default) means unknown. The engine sets it only for stores whose
    ``CheckpointStore.saves_changes`` is true; such a store may save just these
    (and leaves the checkpoint as it got it)."""
    branches: dict[str, BranchRecord] | None = None
    """The in-flight parallel branches by id (``None`` when no fan-out is in flight).
    Records are never changed in place: a changed branch gets a new record."""
    changed_branches: tuple[str, ...] | None = None
    """Set with ``changes``: ids of the branch records added, replaced or removed
    since the parent checkpoint (``None``: unknown, save them all)."""
    origin: OriginRecord | None = None
    """How a checkpoint not made by a run's step came about (``None``: a run's step):
    ``update_state`` (``by="update"``, with its ``as_node``), the first checkpoint of a
    new line of history continued from the thread's past checkpoint, whose state it
    copies (``by="rewind"``, with that ``checkpoint_id``), or the first checkpoint of a
    thread made by ``fork`` (``by="fork"``, with the ``thread_id`` and
    ``checkpoint_id`` it was copied from)."""
    parent_thread_id: str | None = None
    """The thread whose subgraph node runs this thread (``None``: a top-level thread),
    set on every checkpoint of a child thread: thread listings show it."""
