"""Safety around every response: no cross-site requests, a strict content policy."""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ResearchError

__all__ = [
    "LOOPBACK_HOSTS",
    "GuardMiddleware",
    "InvalidServeOptions",
    "allowed_host_names",
    "is_loopback",
]

LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1", "[::1]")
"""The ``Host`` names accepted when serving on loopback."""
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


_HOST_NAME_RE: Final = re.compile(
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
    r"[A-Za-z0-9])?)*$"
)


class InvalidServeOptions(ResearchError, ValueError):
    """``serve`` / ``create_app`` options that would expose the page unsafely: serving
    beyond loopback without ``allowed_hosts``, or a host name that is not one."""


def allowed_host_names(names: Iterable[str], *, bind: str | None = None) -> list[str]:
    """The ``Host`` names the page answers to: the loopback names and ``names``;
    ``InvalidServeOptions`` for a wildcard, a name that is not a host name or an IP
    address, or ``bind`` (the address served on) beyond loopback with no ``names``."""
    given = [name.strip().lower() for name in names]
    for name in given:
        if not (_HOST_NAME_RE.match(name) or _is_ip(name)):
            raise InvalidServeOptions(
                f"allowed host {name!r} is not a host name or an IP address "
                "(no wildcards, ports or schemes: e.g. research.example.lan or 192.168.1.20)"
            )
    if bind is not None and not is_loopback(bind) and not given:
        raise InvalidServeOptions(
            f"serving on {bind} (beyond loopback) needs --allowed-host NAME for each name "
            "the page is reached by (there is no login: anyone who can reach it can use it)"
        )
    return list(dict.fromkeys([*LOOPBACK_HOSTS, *given]))


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class GuardMiddleware:
    """Adds ``SECURITY_HEADERS`` to every response and refuses (403) a request that
    changes something when it comes from another site's page (its ``Origin`` is not
    this server under an allowed name), so no web page the user visits can ask
    questions in their name."""

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Iterable[str] = LOOPBACK_HOSTS,
        *,
        headers: Mapping[str, str] = SECURITY_HEADERS,
        any_host: bool = False,
    ) -> None:
        self.app = app
        self.allowed = frozenset(allowed_hosts)
        self.headers = dict(headers)
        self.any_host = any_host
        """Any ``Host`` is this server (something else guards it, e.g. a token): a
        change's ``Origin`` must still be that ``Host``."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        changes = scope["method"] not in ("GET", "HEAD")
        if changes and origin is not None and not self._same_site(origin, headers.get("host")):
            await _forbidden(send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in self.headers.items():  # an app mounted inside sets its own
                    headers.setdefault(key, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _same_site(self, origin: str, host: str | None) -> bool:
        """The page's own origin: ``Origin`` is this ``Host``, and an allowed name."""
        try:
            name = urlsplit(origin).hostname
        except ValueError:
            return False
        if urlsplit(origin).netloc != host or name is None:
            return False
        return self.any_host or self._allows(name)

    def _allows(self, name: str) -> bool:
        return name in self.allowed or f"[{name}]" in self.allowed


async def _forbidden(send: Send) -> None:
    body = json.dumps(
        {"error": "CrossOrigin", "message": "requests from other sites are refused"}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body})
