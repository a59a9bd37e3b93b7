"""The page's deep research answers in the question's language unless ``lang`` says
otherwise; a language it does not have is a 400 naming the allowed values."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from research_fsm import ResearchAssistant
from research_fsm.web import create_app

from .test_api import events, last, post

NOTES = Path(__file__).resolve().parents[2] / "examples" / "notes"
QUESTION = "Spring Boot 3 への移行で注意することは？"


@pytest.fixture
def docs_client(assistant: ResearchAssistant, tmp_path: Path) -> TestClient:
    """The page over a copy of the example notes."""
    docs = shutil.copytree(NOTES, tmp_path / "notes")
    return TestClient(create_app(assistant, docs=str(docs)), base_url="http://127.0.0.1")


@pytest.mark.parametrize(("lang", "expected"), [(None, "ja"), ("auto", "ja"), ("en", "en")])
def test_deep_research_answers_in_the_question_language(
    docs_client: TestClient, lang: str | None, expected: str
) -> None:
    """No ``lang`` or ``auto``: a Japanese question gets a Japanese report; ``en`` wins."""
    body = {"topic": QUESTION} | ({"lang": lang} if lang else {})
    with docs_client as client:
        result = last(events(client, "/api/deep", **body), "deep")
    assert expected == result["language"]
    headings = [node for node in result["tree"] if node["t"] == "h2"]
    assert headings and ("概要" in str(headings[0])) == (expected == "ja")


def test_an_unknown_language_is_a_400(docs_client: TestClient) -> None:
    """``lang`` other than auto, en or ja names the allowed values."""
    with docs_client as client:
        response = post(client, "/api/deep", topic=QUESTION, lang="fr")
    assert 400 == response.status_code and "auto, en or ja" in response.text
