"""Loopback HTTP servers that speak the Anthropic and Tavily wire formats.

Tests drive the real ``anthropic`` and ``tavily`` clients against them through the
clients' base-URL settings: ``FakeAnthropic`` (``POST /v1/messages``, JSON and SSE)
and ``FakeTavily`` (``POST /search``). Each is scripted with ``enqueue(...)``; the
reply constructors live in ``servers.anthropic`` and ``servers.tavily``.
"""

from ._http import Exchange, LoopbackServer, RecordedRequest, Reply
from .anthropic import FakeAnthropic
from .tavily import FakeTavily

__all__ = ["Exchange", "FakeAnthropic", "FakeTavily", "LoopbackServer", "RecordedRequest", "Reply"]
