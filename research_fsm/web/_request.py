"""Request bodies: a size limit, JSON objects with typed fields, ids checked."""

from __future__ import annotations

import json
import re
from typing import Any, Final, Literal

from starlette.requests import Request

from ..common.text import clean_text
from ..engine import validate_thread_id

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_NESTING",
    "BadRequest",
    "TooLarge",
    "nesting",
    "parse_json",
    "read_json",
    "text_field",
    "thread_id",
]

MAX_BODY_BYTES: Final = 16 * 1024
"""Largest request body accepted (a 4,000-character question fits)."""
MAX_NESTING: Final = 16
"""Deepest nesting of arrays and objects accepted in a body (the API's are flat)."""
THREAD_RE: Final = re.compile(r"^web-[A-Za-z0-9_-]{8,64}$")
"""The page's conversation ids: ``web-`` and a random part."""
_CHARSET_RE: Final = re.compile(r"charset\s*=\s*([^;\s]+)", re.I)
_STRING_RE: Final = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS_RE: Final = re.compile(r"[\[\]{}]")
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")
_JSON_TYPES: Final[dict[type, str]] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}


class BadRequest(ValueError):
    """A request the page (or a client) got wrong: 400 with this message."""


class TooLarge(ValueError):
    """A body over ``MAX_BODY_BYTES``: 413."""


async def read_json(request: Request) -> dict[str, Any]:
    """The body as a JSON object; ``TooLarge`` or ``BadRequest`` (naming the problem:
    not JSON, not UTF-8, nested too deep, not an object...) otherwise."""
    kind, _, params = request.headers.get("content-type", "").partition(";")
    if kind.strip().lower() != "application/json":
        raise BadRequest("send the body as JSON (Content-Type: application/json)")
    charset = _CHARSET_RE.search(params)
    if charset and charset.group(1).strip("\"'").lower() not in ("utf-8", "utf8"):
        raise BadRequest(f"send the body as UTF-8 (the Content-Type says {charset.group(1)})")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise TooLarge(f"the request body is over the {MAX_BODY_BYTES:,}-byte limit")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise TooLarge(f"the request body is over the {MAX_BODY_BYTES:,}-byte limit")
    return parse_json(body)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_json(body: bytes) -> dict[str, Any]:
    """``body`` (UTF-8 JSON, at most ``MAX_NESTING`` levels deep) as an object;
    ``BadRequest`` naming what is wrong with it."""
    try:
        text = body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise BadRequest(
            f"the request body is not valid JSON: it is not UTF-8 text (byte {exc.start})"
        ) from None
    depth = nesting(text)
    if depth > MAX_NESTING:
        raise BadRequest(f"the request body nests {depth} levels deep; the limit is {MAX_NESTING}")
    try:
        value = json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"the request body is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except (ValueError, RecursionError) as exc:  # NaN, a 5,000-digit number
        raise BadRequest(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest(
            f"the request body must be a JSON object, not {_JSON_TYPES.get(type(value), 'that')}"
        )
    return value


def nesting(text: str) -> int:
    """How deep the arrays and objects of JSON ``text`` nest (strings skipped)."""
    depth = deepest = 0
    for bracket in _BRACKETS_RE.findall(_STRING_RE.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def text_field(body: dict[str, Any], name: str, *, required: bool = True) -> str:
    """A string field; ``BadRequest`` naming it when missing, not text, not Unicode
    text (an unpaired surrogate escape such as ``\\ud800``), or blank."""
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"`{name}` must be a string, not {_JSON_TYPES.get(type(value), 'that')}")
    if _SURROGATE_RE.search(value):
        raise BadRequest(f"`{name}` is not valid Unicode text (it has an unpaired surrogate)")
    if required and not clean_text(value):
        raise BadRequest(f"`{name}` is empty (it has no printable characters)")
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
