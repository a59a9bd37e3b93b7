"""The page's past work: conversations, company reports and research sessions, reopened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from research_fsm.deep import sessions_home
from research_fsm.reports import reports_home

from .helpers import HOSTILE_TITLE, parse_sse


def ask(client: TestClient, thread: str, text: str) -> list[tuple[str, dict[str, Any]]]:
    response = client.post("/api/ask", json={"thread_id": thread, "text": text})
    assert response.status_code == 200, response.text
    return parse_sse(response.text)  # type: ignore[no-any-return]


def tags(nodes: list[Any]) -> list[str]:
    """The element names of a Markdown tree, depth first."""
    found: list[str] = []
    for node in nodes:
        if isinstance(node, dict):
            found += [node["t"], *tags(node["c"])]
    return found


def test_past_conversations_newest_first_titled_by_their_first_question(
    client: TestClient,
) -> None:
    """Each web conversation once, newest first, its first question as its title."""
    ask(client, "web-aaaaaaaa01", "What's happening with Apple?")
    ask(client, "web-bbbbbbbb02", "Tell me about Microsoft")
    ask(client, "web-bbbbbbbb02", "And its stock?")
    past = client.get("/api/past").json()
    titles = [(c["thread_id"], c["title"], c["turns"]) for c in past["conversations"]]
    assert titles == [
        ("web-bbbbbbbb02", "Tell me about Microsoft", 2),
        ("web-aaaaaaaa01", "What's happening with Apple?", 1),
    ]
    assert past["reports"] == [] and past["sessions"] == []


def test_saved_reports_and_sessions_reopen_as_trees(client: TestClient, home: Path) -> None:
    """A saved report and session are listed and come back as the page's tree (text only)."""
    report = reports_home() / "acme-20261207"
    report.mkdir(parents=True)
    (report / "meta.json").write_text(
        json.dumps({"company": HOSTILE_TITLE, "generated_at": "2026-12-07T10:00:00Z"}),
        encoding="utf-8",
    )
    (report / "report.md").write_text(f"## Overview\n\n{HOSTILE_TITLE} grew.\n", encoding="utf-8")
    session = sessions_home() / "deep-20261207-0123456789abcdef"
    session.mkdir(parents=True)
    (session / "session.json").write_text(
        json.dumps({"topic": "Spring Boot", "status": "completed", "created_at": "2026-12-07"}),
        encoding="utf-8",
    )
    (session / "report.md").write_text("## 概要\n\n本文。\n", encoding="utf-8")
    past = client.get("/api/past").json()
    assert [(r["id"], r["title"]) for r in past["reports"]] == [(report.name, HOSTILE_TITLE)]
    assert past["reports"][0]["files"] == [
        {"name": "report.md", "url": f"/api/files/reports/{report.name}/report.md"}
    ]
    assert [(s["id"], s["status"]) for s in past["sessions"]] == [(session.name, "completed")]
    opened = client.get(f"/api/saved/reports/{report.name}").json()
    assert opened["language"] == "en" and "img" not in tags(opened["tree"])
    assert HOSTILE_TITLE in json.dumps(opened["tree"], ensure_ascii=False)
    assert client.get(f"/api/saved/sessions/{session.name}").json()["language"] == "ja"
    assert client.get("/api/saved/reports/nope").status_code == 404
    assert client.get("/api/saved/reports/..%2Fx").status_code in (400, 404)
    assert client.get("/api/saved/other/x").status_code == 400
