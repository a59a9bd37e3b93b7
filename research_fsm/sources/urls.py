"""Web addresses from search results and documents, checked as a browser reads them."""

from __future__ import annotations

import ipaddress
import re
from typing import Final
from urllib.parse import urlsplit

__all__ = ["web_url"]

_NOT_IN_URL: Final = re.compile(r'[<>"`{}|\\^]')
"""Characters a URL carries percent-encoded, never as they are (``<script>``)."""
_BAD_HOST: Final = frozenset('%<>"`{}|\\^ ')


def _bad_ipv4(host: str) -> bool:
    """True for a host a browser reads as a broken IPv4 address (``1.2.3.4.5``)."""
    last = host.rstrip(".").rsplit(".", 1)[-1]
    if not last.isdigit():
        return False
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return True
    return False


def web_url(url: str) -> str | None:
    """``url`` when it is an absolute http(s) URL with a host that a browser parses too
    (not ``http://[``, ``https://x.example:99999/``, ``http://%zz/`` nor
    ``http://1.2.3.4.5/``), with the characters that never appear raw in a URL (``<``,
    ``>``, quotes...) percent-encoded; ``None`` otherwise."""
    if not url.lower().startswith(("http://", "https://")) or any(ch.isspace() for ch in url):
        return None
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # .port raises on a port out of range
    except ValueError:  # "http://[": an unclosed IPv6 bracket
        return None
    if not host or any(ch in _BAD_HOST for ch in host) or _bad_ipv4(host):
        return None
    return _NOT_IN_URL.sub(lambda m: f"%{ord(m.group()):02X}", url)
