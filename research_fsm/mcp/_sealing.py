"""The key that seals an ``InputRequiredResult``'s ``request_state``, from the store.

The SDK seals the state a 2026-07-28 client echoes back with the answer to a question
back (AES-GCM, with expiry and a binding to the call). Its default key is made when the
process starts and lives only there, so a server restarted between the question and the
answer refuses the answer. Here the key derives from the checkpoint store's own secret
(``CheckpointStore.secret()``, the one that signs resume tokens; a label keeps the two
keys apart): every process on the same store seals and unseals alike, a process on
another store cannot. The store is async and the SDK's codec is not, so a middleware
outside the SDK's boundary loads the key before a state is unsealed."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from typing import Any, Final

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import (
    AESGCMRequestStateCodec,
    InvalidRequestState,
    RequestStateBoundary,
    RequestStateSecurity,
)
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

__all__ = ["STATE_TTL", "StoreSealing"]

_LABEL: Final = b"research-fsm/mcp/request-state/v1"
STATE_TTL: Final = 3600.0
"""Seconds a question back's sealed state stays good (the SDK's default is ten minutes:
a person may take longer to answer a form; the conversation id never expires)."""


class StoreSealing:
    """The SDK's ``RequestStateCodec`` under a key derived from the store's secret, set
    by ``use`` (before it, nothing is sealed, and every state is refused)."""

    def __init__(self) -> None:
        self._codec: AESGCMRequestStateCodec | None = None

    @property
    def ready(self) -> bool:
        """Whether the key is known."""
        return self._codec is not None

    def use(self, secret: bytes) -> None:
        """Derive the key from the store's ``secret`` (HMAC-SHA256 under a label)."""
        self._codec = AESGCMRequestStateCodec([hmac.new(secret, _LABEL, hashlib.sha256).digest()])

    def seal(self, payload: bytes) -> str:
        if self._codec is None:
            raise RuntimeError("the request-state key is not loaded from the store yet")
        return self._codec.seal(payload)

    def unseal(self, token: str) -> bytes:
        if self._codec is None:
            raise InvalidRequestState("no key")
        return self._codec.unseal(token)

    def security(self) -> RequestStateSecurity:
        """The policy to give ``MCPServer(request_state_security=...)``."""
        return RequestStateSecurity(codec=self, ttl=STATE_TTL)

    def install(self, middleware: list[Any], load: Callable[[], Awaitable[object]]) -> None:
        """Put, right outside the SDK's request-state boundary in ``middleware`` (the
        server's chain), a step that awaits ``load`` (which calls ``use``) before a
        request carrying a state is unsealed: the first call after a restart."""
        sealing = self

        async def load_key(
            ctx: ServerRequestContext[Any, Any], call_next: CallNext
        ) -> HandlerResult:
            params = ctx.params
            if not sealing.ready and params is not None and params.get("requestState") is not None:
                try:
                    await load()
                except Exception as exc:  # the store cannot be read: say so, no traceback
                    message = f"could not read the store's key for this answer: {exc}"
                    raise MCPError(code=INTERNAL_ERROR, message=message) from None
            return await call_next(ctx)

        at = next(
            (i for i, step in enumerate(middleware) if isinstance(step, RequestStateBoundary)),
            len(middleware),
        )
        middleware.insert(at, load_key)
