"""The LLM the environment asks for: Claude, or a local model behind a Messages API."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from ._anthropic import DEFAULT_MODEL, MODEL_ENV, AnthropicLLM

__all__ = [
    "CLAUDE_TIMEOUT",
    "LLM_TIMEOUT_ENV",
    "LLM_URL_ENV",
    "LOCAL_TIMEOUT",
    "LLMSettings",
    "llm_from_env",
    "llm_settings",
]

LLM_URL_ENV = "RESEARCH_FSM_LLM_URL"
"""The address of a local server speaking the Anthropic Messages API (Ollama:
``http://localhost:11434``, llama.cpp's ``llama-server``: ``http://localhost:8080``)."""
LLM_TIMEOUT_ENV = "RESEARCH_FSM_LLM_TIMEOUT"
"""Seconds an LLM request may take (default 30 for Claude, ``LOCAL_TIMEOUT`` for a local server)."""
CLAUDE_TIMEOUT = 30.0
"""The default request timeout for Claude."""
LOCAL_TIMEOUT = 300.0
"""The default request timeout for a local server: a model on a laptop writes slowly."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMSettings:
    """The LLM the environment asks for, read without making a client."""

    kind: Literal["local", "claude", "none"]
    """A local server, Claude, or none (the rule-based agents)."""
    url: str | None
    """The server's address (``None``: the SDK's default, https://api.anthropic.com)."""
    model: str | None
    """The model every agent uses unless ``RESEARCH_FSM_MODEL_<AGENT>`` says otherwise."""
    timeout: float
    """Seconds a request may take."""
    source: str
    """Which variables chose it, for people (e.g. ``"RESEARCH_FSM_LLM_URL"``)."""


def llm_settings() -> LLMSettings:
    """What ``llm_from_env`` would make, read from the environment.

    Raises:
        ValueError: an address that is not ``http(s)://host[:port]``, or a timeout
            that is not a positive number of seconds.
    """
    url = os.environ.get(LLM_URL_ENV, "").strip()
    base = os.environ.get("ANTHROPIC_BASE_URL", "").strip()
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    model = os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL
    if url:
        checked = _checked(url, LLM_URL_ENV)
        return LLMSettings(
            kind="local",
            url=checked,
            model=model,
            timeout=_timeout(LOCAL_TIMEOUT),
            source=LLM_URL_ENV,
        )
    if key:
        return LLMSettings(
            kind="claude",
            url=_checked(base, "ANTHROPIC_BASE_URL") if base else None,
            model=model,
            timeout=_timeout(CLAUDE_TIMEOUT),
            source="ANTHROPIC_API_KEY",
        )
    if base:
        checked = _checked(base, "ANTHROPIC_BASE_URL")
        return LLMSettings(
            kind="local",
            url=checked,
            model=model,
            timeout=_timeout(LOCAL_TIMEOUT),
            source="ANTHROPIC_BASE_URL without ANTHROPIC_API_KEY",
        )
    return LLMSettings(
        kind="none", url=None, model=None, timeout=CLAUDE_TIMEOUT, source="no LLM variable set"
    )


def llm_from_env() -> AnthropicLLM | None:
    """The LLM configured by the environment, or ``None`` (the rule-based agents).

    * ``RESEARCH_FSM_LLM_URL``: a local server (no API key needed, no list prices);
    * else ``ANTHROPIC_API_KEY``: Claude (at ``ANTHROPIC_BASE_URL`` when set, e.g. a proxy);
    * else ``ANTHROPIC_BASE_URL`` alone: a local server, as with ``RESEARCH_FSM_LLM_URL``.

    ``RESEARCH_FSM_MODEL`` names the model, ``RESEARCH_FSM_LLM_TIMEOUT`` the seconds a
    request may take.

    Raises:
        ValueError: as ``llm_settings``.
    """
    settings = llm_settings()
    if settings.kind == "none":
        return None
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip() or None
    return AnthropicLLM(
        api_key=key,
        model=settings.model,
        base_url=settings.url,
        local=settings.kind == "local",
        timeout=settings.timeout,
    )


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
