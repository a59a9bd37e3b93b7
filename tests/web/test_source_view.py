"""A cited local source opened at its cited lines: read-only, and never a file outside
the documents folder the session searched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from research_fsm import ResearchAssistant
from research_fsm.deep import new_session_id, sessions_home
from research_fsm.web import create_app

from .helpers import parse_sse

FILLER = [f"filler line {n} about nothing in particular." for n in range(1, 31)]
CITED = "Spring Boot 3 requires Java 17 as its minimum version."
SECRET = "the secret nobody may read"


def docs_folder(tmp_path: Path) -> Path:
    """Documents with the cited sentence on line 20 of ``guide/migration.md``."""
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    lines = [*FILLER[:18], "", CITED, *FILLER[18:]]
    text = "# Spring Boot 3 migration\n\n" + "\n\n".join(lines) + "\n"
    (docs / "guide" / "migration.md").write_text(text, encoding="utf-8")
    return docs


def test_a_cited_file_opens_at_its_cited_lines(
    assistant: ResearchAssistant, tmp_path: Path
) -> None:
    """Deep research over a folder links each file source to the page's view of it, which
    shows the cited lines (marked, numbered) as plain text; a saved session links it too."""
    docs = docs_folder(tmp_path)
    with TestClient(create_app(assistant, docs=str(docs)), base_url="http://127.0.0.1") as client:
        response = client.post(
            "/api/deep", json={"topic": "Which Java does Spring Boot 3 require?"}
        )
        result = next(d for k, d in parse_sse(response.text) if k == "deep")
        [source] = [s for s in result["sources"] if s["title"]][:1]
        session = result["session_id"]
        assert source["url"] == f"/api/source/{session}/{source['id']}"
        assert f'"href": "{source["url"]}"' in json.dumps(result["tree"])
        view = client.get(source["url"])
        assert view.status_code == 200, view.text
        assert view.headers["content-type"].startswith("text/plain")
        assert view.headers["x-content-type-options"] == "nosniff"
        cited = [line for line in view.text.splitlines() if line.startswith(">")]
        assert any(CITED in line for line in cited)
        assert view.text.startswith("guide/migration.md, line")
        saved = client.get(f"/api/saved/sessions/{session}").json()
        assert f'"href": "{source["url"]}"' in json.dumps(saved["tree"])


def session_with(home: Path, docs: Path, sources: list[dict[str, Any]]) -> str:
    """A finished session whose ``sources.json`` cites ``sources`` from ``docs``."""
    sid = new_session_id()
    folder = sessions_home() / sid
    folder.mkdir(parents=True)
    meta = {"id": sid, "docs": str(docs), "status": "completed", "topic": "t"}
    (folder / "session.json").write_text(json.dumps(meta), encoding="utf-8")
    (folder / "sources.json").write_text(json.dumps(sources), encoding="utf-8")
    return sid


@pytest.mark.parametrize(
    "locator",
    [
        "../secret.txt",
        "guide/../../secret.txt",
        "PLACEHOLDER_ABSOLUTE",
        "/etc/passwd",
        "C:\\secret.txt",
        "out/secret.txt",  # a folder symlinked out of the documents folder
        "guide/secret-link.txt",  # a file symlinked out
        "guide",  # not a file
        "missing.md",
    ],
)
def test_a_source_outside_the_documents_folder_is_never_read(
    client: TestClient, home: Path, tmp_path: Path, locator: str
) -> None:
    """``..``, absolute paths and symlinks leading out of the folder get 404 naming the
    reason, never the file."""
    docs = docs_folder(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    (tmp_path / "secret.txt").write_text(SECRET, encoding="utf-8")
    (docs / "out").symlink_to(outside)
    (docs / "guide" / "secret-link.txt").symlink_to(outside / "secret.txt")
    if locator == "PLACEHOLDER_ABSOLUTE":
        locator = str(outside / "secret.txt")
    source = {"id": "S1", "kind": "file", "locator": locator, "position": "line 1", "title": "x"}
    sid = session_with(home, docs, [source])
    response = client.get(f"/api/source/{sid}/S1")
    assert response.status_code == 404, response.text
    assert SECRET not in response.text and "root:" not in response.text
    assert response.json()["error"] == "SourceNotShown" and response.json()["message"]


def test_only_the_sessions_own_ids_are_taken(
    client: TestClient, home: Path, tmp_path: Path
) -> None:
    """Ids that are no session's or source's are refused before anything is read; a web
    source or a session without a documents folder says so."""
    docs = docs_folder(tmp_path)
    web = {"id": "S1", "kind": "web", "locator": "https://example.com/", "title": "w"}
    sid = session_with(home, docs, [web])
    assert client.get(f"/api/source/{sid}/S1").json()["message"].startswith("S1 is a web page")
    assert "no source S2" in client.get(f"/api/source/{sid}/S2").json()["message"]
    for path in (
        "/api/source/report-0123456789/S1",
        f"/api/source/{sid}/../S1",
        f"/api/source/{sid}/S1x",
        "/api/source/deep-..%2F..%2Fetc/S1",
    ):
        assert client.get(path).status_code in (400, 404), path
    nodocs = session_with(home, docs, [{**web, "kind": "file", "locator": "guide/migration.md"}])
    meta = sessions_home() / nodocs / "session.json"
    meta.write_text(json.dumps({"id": nodocs, "docs": None}), encoding="utf-8")
    assert "no documents folder" in client.get(f"/api/source/{nodocs}/S1").json()["message"]
