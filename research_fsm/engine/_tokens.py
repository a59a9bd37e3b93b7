"""Resume tokens: parse, sign and verify them, list the suspensions they answer, and
``ThreadSuspended``, the error that hands one back."""

from __future__ import annotations

import hashlib
import hmac

from ._errors import EngineError, InvalidResumeToken
from ._family import child_thread
from ._records import BranchRecord
from ._types import Checkpoint, SuspendToken, Suspension, _b64
from .store import CheckpointStore, validate_thread_id

__all__ = [
    "ThreadSuspended",
    "branch_suspensions",
    "first_token",
    "in_order",
    "parse_token",
    "sign",
    "verify",
]


class ThreadSuspended(EngineError, RuntimeError):
    """New input was given to a thread that waits for a resume value."""

    def __init__(self, thread_id: str, token: SuspendToken) -> None:
        self.thread_id = thread_id
        self.token = token
        super().__init__(
            f"thread `{thread_id}` is suspended waiting for input; call "
            "resume(token, value) with the token this error carries as `.token`: "
            "resume(error.token, value) (LangGraph's invoke(None) at a pause is "
            "resume(error.token, None); (await app.get_state(thread_id)).suspension.token "
            "is the same token)"
        )


def parse_token(token: SuspendToken | str) -> SuspendToken:
    """``token`` as a ``SuspendToken`` naming a valid thread id."""
    parsed = token if isinstance(token, SuspendToken) else SuspendToken.parse(token)
    try:
        validate_thread_id(parsed.thread_id)
    except ValueError:
        raise InvalidResumeToken("resume token names an invalid thread") from None
    return parsed


async def _signature(store: CheckpointStore, thread_id: str, checkpoint_id: str) -> str:
    key = await store.secret()
    message = f"{thread_id}\n{checkpoint_id}".encode()
    return _b64(hmac.new(key, message, hashlib.sha256).digest()[:18])


async def sign(store: CheckpointStore, thread_id: str, checkpoint_id: str) -> SuspendToken:
    """A token for the suspension saved at ``checkpoint_id``, signed with the store's secret."""
    return SuspendToken(
        thread_id=thread_id,
        checkpoint_id=checkpoint_id,
        signature=await _signature(store, thread_id, checkpoint_id),
    )


async def verify(store: CheckpointStore, token: SuspendToken) -> None:
    """Raise ``InvalidResumeToken`` unless ``token`` was signed by ``store``'s secret."""
    expected = await _signature(store, token.thread_id, token.checkpoint_id)
    given = token.signature.encode("utf-8", "replace") if isinstance(token.signature, str) else b""
    if not hmac.compare_digest(expected.encode(), given):
        raise InvalidResumeToken(
            "resume token signature does not match: it was edited, or issued by another store"
        )


def in_order(records: dict[str, BranchRecord]) -> list[tuple[str, BranchRecord]]:
    """Branch records in declared order, each fan-out's branches after their owner."""

    def key(branch_id: str) -> list[int]:
        chain = []
        for _ in range(len(records)):  # bounded: a damaged record cannot loop
            if branch_id not in records:
                break
            saved = records[branch_id]
            chain.append(saved.position)
            branch_id = saved.owner
        return chain[::-1]

    return sorted(records.items(), key=lambda pair: key(pair[0]))


async def branch_suspensions(
    store: CheckpointStore,
    thread_id: str,
    records: dict[str, BranchRecord],
    run_id: str | None = None,
) -> list[Suspension]:
    """The suspended branches of a fan-out's ``records``, in declared order, each with its
    token (and, given the ``run_id``, the child thread a subgraph's came from)."""
    found = []
    for branch_id, record in in_order(records):
        if record.status == "suspended" and record.at is not None:
            token = await sign(store, thread_id, record.at)
            paused = record.breakpoint  # (where, node) of a pause at a breakpoint
            key, node = record.key, record.node
            child = None
            if run_id is not None and record.child is not None and key is not None and node:
                child = child_thread(thread_id, node, run_id, f"k{key}")
            suspension = Suspension(
                node=(node or "") if paused is None else paused[1],
                payload=record.payload,
                branch=branch_id,
                token=token,
                breakpoint=None if paused is None else paused[0],
                child_thread_id=child,
                answers=record.answers,
            )
            found.append(suspension)
    return found


async def first_token(store: CheckpointStore, latest: Checkpoint) -> SuspendToken:
    """The token of a suspended thread's first suspension (a branch's, if any)."""
    if latest.branches:
        found = await branch_suspensions(store, latest.thread_id, latest.branches)
        if found:
            return found[0].token
    return await sign(store, latest.thread_id, latest.checkpoint_id)
