"""Request bodies: a size limit, JSON objects with typed fields, ids checked."""

from __future__ import annotations

import json
import re
from typing import Any, Final, Literal

from starlette.requests import Request

from ..engine import validate_thread_id

__all__ = ["MAX_BODY_BYTES", "BadRequest", "TooLarge", "read_json", "text_field", "thread_id"]

MAX_BODY_BYTES: Final = 16 * 1024
"""Largest request body accepted (a 4,000-character question fits)."""
THREAD_RE: Final = re.compile(r"^web-[A-Za-z0-9_-]{8,64}$")
"""The page's conversation ids: ``web-`` and a random part."""


class BadRequest(ValueError):
    """A request the page (or a client) got wrong: 400 with this message."""


class TooLarge(ValueError):
    """A body over ``MAX_BODY_BYTES``: 413."""


async def read_json(request: Request) -> dict[str, Any]:
    """The body as a JSON object; ``TooLarge`` or ``BadRequest`` otherwise."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise BadRequest("send the body as JSON (Content-Type: application/json)")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise TooLarge(f"the request body is over the {MAX_BODY_BYTES:,}-byte limit")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise TooLarge(f"the request body is over the {MAX_BODY_BYTES:,}-byte limit")
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("the request body is not valid JSON") from None
    if not isinstance(value, dict):
        raise BadRequest("the request body must be a JSON object")
    return value


def text_field(body: dict[str, Any], name: str, *, required: bool = True) -> str:
    """A string field; ``BadRequest`` naming it when missing, not text, or blank."""
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"`{name}` must be a string")
    if required and not value.strip():
        raise BadRequest(f"`{name}` is empty")
    return value


def flag(body: dict[str, Any], name: str) -> bool:
    """A boolean field (absent: false)."""
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise BadRequest(f"`{name}` must be true or false")
    return value


def language(body: dict[str, Any]) -> Literal["en", "ja"]:
    """``lang``: ``en`` (default) or ``ja``."""
    value = body.get("lang", "en")
    if value == "en" or value == "ja":
        return value  # type: ignore[no-any-return]
    raise BadRequest("`lang` must be en or ja")


def topic_language(body: dict[str, Any]) -> Literal["en", "ja"] | None:
    """``lang``: ``en``, ``ja``, or ``auto`` (default: the topic's language)."""
    value = body.get("lang", "auto")
    if value == "auto" or value is None:
        return None
    if value == "en" or value == "ja":
        return value  # type: ignore[no-any-return]
    raise BadRequest("`lang` must be auto, en or ja")


def thread_id(value: object) -> str:
    """A conversation id of the page (``web-`` and 8-64 letters, digits, ``-`` or ``_``)."""
    if not isinstance(value, str) or not THREAD_RE.match(value):
        raise BadRequest("`thread_id` must be `web-` followed by 8-64 letters, digits, - or _")
    return validate_thread_id(value)
