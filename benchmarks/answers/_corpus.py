"""The evaluation corpus: the long descriptions (README text) of packages the project
installs, read from their installed ``METADATA`` with ``importlib.metadata`` and written
one file per package. Nothing is downloaded: a fresh ``pip install -e '.[test]'`` has
every one of them."""

from __future__ import annotations

import email
import email.policy
from importlib import metadata
from pathlib import Path
from typing import Final

__all__ = ["PACKAGES", "build_corpus", "versions"]

PACKAGES: Final = (
    "httpx",
    "h11",
    "uvicorn",
    "starlette",
    "structlog",
    "pypdf",
    "inscriptis",
    "tavily-python",
    "pytest-xdist",
    "pytest-asyncio",
    "markdown-it-py",
    "tiktoken",
    "psycopg",
    "psycopg-pool",
    "hypothesis",
)
"""Distributions of the runtime dependencies and the ``test`` extra."""


def _body(dist: metadata.Distribution) -> tuple[str, str]:
    raw = dist.read_text("METADATA") or ""
    message = email.message_from_string(raw, policy=email.policy.compat32)
    body = message.get_payload()
    text = body if isinstance(body, str) else ""
    kind = str(message.get("Description-Content-Type", "text/plain"))
    return text.strip() + "\n", ".md" if "markdown" in kind else ".txt"


def versions() -> dict[str, str]:
    """Each corpus package's installed version."""
    return {name: metadata.version(name) for name in PACKAGES}


def build_corpus(folder: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Writes one file per package into ``folder``; returns {file name: version}."""
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for name in packages:
        dist = metadata.distribution(name)
        text, suffix = _body(dist)
        target = folder / f"{name}{suffix}"
        target.write_text(text, encoding="utf-8")
        written[target.name] = dist.version
    return written
