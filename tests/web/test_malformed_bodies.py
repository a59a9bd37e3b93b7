"""Malformed request bodies, to every endpoint that takes one: a 400 (413 when too
large) naming the problem, never a 500 or a traceback in the server's log."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from research_fsm.web import MAX_BODY_BYTES

THREAD = "web-0123456789abcdef"
ENDPOINTS = ("/api/ask", "/api/clarify", "/api/report", "/api/report/answer", "/api/deep")
JSON = {"content-type": "application/json"}


def _nested(depth: int, inner: bytes = b"1") -> bytes:
    return b"[" * depth + inner + b"]" * depth


MALFORMED: list[tuple[str, bytes, dict[str, str], int, str]] = [
    ("nested arrays", b'{"text":' + _nested(5000) + b"}", JSON, 400, "levels deep; the limit"),
    ("nested objects", b'{"a":' * 2000 + b"1" + b"}" * 2000, JSON, 400, "levels deep"),
    ("nested in a string's place", b'{"text": ' + _nested(40, b'"x"') + b"}", JSON, 400, "deep"),
    ("over the size limit", b'{"text": "' + b"a" * MAX_BODY_BYTES + b'"}', JSON, 413, "limit"),
    ("latin-1 bytes", '{"text": "café"}'.encode("latin-1"), JSON, 400, "not UTF-8"),
    ("UTF-16", json.dumps({"text": "Apple"}).encode("utf-16"), JSON, 400, "not UTF-8"),
    (
        "a charset not UTF-8",
        b'{"text": "a"}',
        {"content-type": "application/json; charset=latin-1"},
        400,
        "UTF-8",
    ),
    ("truncated", b'{"text": "Apple', JSON, 400, "not valid JSON"),
    ("empty", b"", JSON, 400, "not valid JSON"),
    ("NaN", b'{"text": NaN}', JSON, 400, "NaN is not a JSON value"),
    ("a 5,000-digit number", b'{"text": ' + b"9" * 5000 + b"}", JSON, 400, "not valid JSON"),
    ("an array", b'["Apple"]', JSON, 400, "must be a JSON object, not an array"),
    ("null", b"null", JSON, 400, "not null"),
    ("a string", b'"Apple"', JSON, 400, "not a string"),
    (
        "not JSON at all",
        b"text=Apple",
        {"content-type": "application/x-www-form-urlencoded"},
        400,
        "Content-Type: application/json",
    ),
]
WRONG_TYPES: list[tuple[str, dict[str, Any], str]] = [
    ("/api/ask", {"thread_id": THREAD, "text": ["Apple"]}, "`text` must be a string, not an array"),
    ("/api/ask", {"thread_id": THREAD, "text": {"a": 1}}, "`text` must be a string, not an object"),
    ("/api/ask", {"thread_id": 12345678, "text": "Apple"}, "`thread_id` must be"),
    ("/api/ask", {"thread_id": THREAD, "text": "\ud800 Apple"}, "unpaired surrogate"),
    ("/api/ask", {"thread_id": THREAD, "text": "\x00\x01\x1b"}, "`text` is empty"),
    ("/api/clarify", {"token": None, "text": "Apple"}, "`token` must be a string, not null"),
    ("/api/clarify", {"token": "abc", "text": 5}, "`text` must be a string, not a number"),
    ("/api/report", {"company": "Apple", "lang": ["en"]}, "`lang` must be en or ja"),
    ("/api/report", {"company": True}, "`company` must be a string, not true or false"),
    ("/api/report", {"company": "Apple", "pdf": "yes"}, "`pdf` must be true or false"),
    ("/api/report/answer", {"thread_id": ["report-0123456789"], "text": "x"}, "report run's id"),
    ("/api/deep", {"topic": 1.5}, "`topic` must be a string, not a number"),
]


@pytest.fixture
def strict_client(client: TestClient, caplog: pytest.LogCaptureFixture) -> Iterator[TestClient]:
    """The client; after the test, no unexpected error (a traceback) was logged."""
    with caplog.at_level(logging.ERROR, logger="research_fsm.web"):
        yield client
    assert [] == [r.getMessage() for r in caplog.records if r.name == "research_fsm.web"]


def _check(response: Any, status: int, message: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert message in body["message"], body
    assert "Traceback" not in response.text and "Unexpected error" not in body["message"]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize(
    ("content", "headers", "status", "message"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
def test_malformed_bodies_name_the_problem(
    strict_client: TestClient,
    endpoint: str,
    content: bytes,
    headers: dict[str, str],
    status: int,
    message: str,
) -> None:
    """Each malformed body, to each endpoint: 400 (413 over the size limit) with a
    message naming the problem."""
    _check(strict_client.post(endpoint, content=content, headers=headers), status, message)


@pytest.mark.parametrize(("endpoint", "body", "message"), WRONG_TYPES)
def test_fields_of_the_wrong_type_are_named(
    strict_client: TestClient, endpoint: str, body: dict[str, Any], message: str
) -> None:
    """A field of the wrong type (or text that is no text) is a 400 naming the field."""
    content = json.dumps(body).encode()
    _check(strict_client.post(endpoint, content=content, headers=JSON), 400, message)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(["text", "token", "lang", "x"]), inner, max_size=3
                )
            ),
            max_leaves=60,
        ).map(lambda value: json.dumps(value).encode()),
    ),
    endpoint=st.sampled_from(ENDPOINTS),
)
def test_no_body_is_a_server_error(strict_client: TestClient, body: bytes, endpoint: str) -> None:
    """Random bytes and random JSON values: the answer is never a 5xx, and any error
    carries a message."""
    response = strict_client.post(endpoint, content=body, headers=JSON)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.json()["message"]
