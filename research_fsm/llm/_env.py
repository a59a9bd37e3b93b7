"""The LLM the environment asks for: Claude, or a local model behind a Messages API."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from ._anthropic import AnthropicLLM

__all__ = ["LLM_TIMEOUT_ENV", "LLM_URL_ENV", "LOCAL_TIMEOUT", "llm_from_env"]

LLM_URL_ENV = "RESEARCH_FSM_LLM_URL"
"""The address of a local server speaking the Anthropic Messages API (Ollama:
``http://localhost:11434``, llama.cpp's ``llama-server``: ``http://localhost:8080``)."""
LLM_TIMEOUT_ENV = "RESEARCH_FSM_LLM_TIMEOUT"
"""Seconds an LLM request may take (default 30 for Claude, ``LOCAL_TIMEOUT`` for a local server)."""
LOCAL_TIMEOUT = 300.0
"""The default request timeout for a local server: a model on a laptop writes slowly."""


def llm_from_env() -> AnthropicLLM | None:
    """The LLM configured by the environment, or ``None`` (the rule-based agents).

    * ``RESEARCH_FSM_LLM_URL``: a local server (no API key needed, no list prices);
    * else ``ANTHROPIC_API_KEY``: Claude (at ``ANTHROPIC_BASE_URL`` when set, e.g. a proxy);
    * else ``ANTHROPIC_BASE_URL`` alone: a local server, as with ``RESEARCH_FSM_LLM_URL``.

    ``RESEARCH_FSM_MODEL`` names the model, ``RESEARCH_FSM_LLM_TIMEOUT`` the seconds a
    request may take.

    Raises:
        ValueError: an address that is not ``http(s)://host[:port]``, or a timeout
            that is not a positive number of seconds.
    """
    url = os.environ.get(LLM_URL_ENV, "").strip()
    base = os.environ.get("ANTHROPIC_BASE_URL", "").strip()
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if url:
        return AnthropicLLM(
            api_key=key or None,
            base_url=_checked(url, LLM_URL_ENV),
            local=True,
            timeout=_timeout(LOCAL_TIMEOUT),
        )
    if key:
        return AnthropicLLM(timeout=_timeout(30.0))
    if base:
        return AnthropicLLM(
            base_url=_checked(base, "ANTHROPIC_BASE_URL"),
            local=True,
            timeout=_timeout(LOCAL_TIMEOUT),
        )
    return None


def _checked(url: str, name: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{name} must be an http:// or https:// address such as http://localhost:11434, "
            f"got {url!r}"
        )
    return url.rstrip("/")


def _timeout(default: float) -> float:
    value = os.environ.get(LLM_TIMEOUT_ENV, "").strip()
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{LLM_TIMEOUT_ENV} must be a positive number of seconds, got {value!r}")
    return seconds
