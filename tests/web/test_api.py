"""The web page's API: conversations, clarification tokens, reports, files and errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from servers.local_llm import LocalLLM
from starlette.testclient import TestClient

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import llm_from_env
from research_fsm.sources import DirectorySource, MockDataSource
from research_fsm.web import MAX_BODY_BYTES, create_app

from .helpers import (
    HOSTILE_NEWS,
    HOSTILE_TITLE,
    LOCAL_MODEL,
    HostileSource,
    parse_sse,
    qa_brain,
)

THREAD = "web-0123456789abcdef"


def post(client: TestClient, path: str, **body: Any) -> Any:
    return client.post(path, json=body)


def events(client: TestClient, path: str, **body: Any) -> list[tuple[str, dict[str, Any]]]:
    response = post(client, path, **body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


def last(stream: list[tuple[str, dict[str, Any]]], name: str) -> dict[str, Any]:
    return next(data for kind, data in reversed(stream) if kind == name)


def test_page_and_its_files_are_served_with_a_strict_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and '<script src="/static/app.js"' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    for name, kind in [("app.js", "javascript"), ("app.css", "text/css"), ("favicon.svg", "svg")]:
        response = client.get(f"/static/{name}")
        assert response.status_code == 200 and kind in response.headers["content-type"]
    assert "http" not in page.text.replace("http-equiv", "")  # no CDN: everything is local


def test_the_page_never_puts_data_in_html() -> None:
    script = (Path(__file__).parents[2] / "research_fsm/web/static/app.js").read_text()
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script
    assert "document.write" not in script and "eval(" not in script


def test_ask_streams_progress_tokens_then_the_answer(client: TestClient) -> None:
    stream = events(client, "/api/ask", thread_id=THREAD, text="What's happening with Apple?")
    kinds = [kind for kind, _ in stream]
    assert kinds[0] == "progress" and "token" in kinds and kinds[-2:] == ["answer", "done"]
    assert kinds.index("progress") < kinds.index("token") < kinds.index("answer")
    answer = last(stream, "answer")
    assert answer["company"] == "Apple Inc." and "Sources:" not in answer["text"]
    assert answer["confidence_label"].startswith("High confidence")
    assert {"title": "Apple Investor Relations", "url": "https://investor.apple.com/"} in answer[
        "sources"
    ]
    progress = [data["message"] for kind, data in stream if kind == "progress"]
    assert "Researching Apple Inc..." in progress


def test_clarification_round_trip_then_the_thread_reloads(client: TestClient) -> None:
    stream = events(client, "/api/ask", thread_id=THREAD, text="Tell me about the company")
    question = last(stream, "question")
    assert question["thread_id"] == THREAD and question["token"].startswith("rt1.")
    thread = client.get(f"/api/threads/{THREAD}").json()
    assert thread["pending"] == {"text": question["text"], "token": question["token"]}
    answer = last(events(client, "/api/clarify", token=question["token"], text="Tesla"), "answer")
    assert answer["company"] == "Tesla, Inc."
    follow = events(client, "/api/ask", thread_id=THREAD, text="What about its stock price?")
    assert last(follow, "answer")["company"] == "Tesla, Inc."
    thread = client.get(f"/api/threads/{THREAD}").json()
    assert thread["pending"] is None
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant"] * 3
    assert thread["messages"][3]["sources"] and "Sources:" not in thread["messages"][3]["text"]


def test_a_reloaded_conversation_has_each_answers_confidence_badge(client: TestClient) -> None:
    """The thread's messages carry each answer's confidence as it was streamed; a greeting
    (no research) has none."""
    streamed = []
    for text in ("What's happening with Apple?", "thanks!", "And Tesla's stock price?"):
        streamed.append(last(events(client, "/api/ask", thread_id=THREAD, text=text), "answer"))
    assert streamed[0]["confidence_label"] and streamed[2]["confidence_label"]
    assert streamed[1]["confidence_label"] is None
    answers = [
        m
        for m in client.get(f"/api/threads/{THREAD}").json()["messages"]
        if m["role"] == "assistant"
    ]
    assert [(a["confidence"], a["confidence_label"]) for a in answers] == [
        (s["confidence"] if s["confidence_label"] else None, s["confidence_label"])
        for s in streamed
    ]


def test_forged_and_replayed_tokens_get_clear_messages(client: TestClient) -> None:
    token = last(
        events(client, "/api/ask", thread_id=THREAD, text="Tell me about the company"), "question"
    )["token"]
    forged = post(client, "/api/clarify", token=token[:-2] + "xx", text="Apple")
    assert forged.status_code == 400 and "not valid" in forged.json()["message"]
    garbage = post(client, "/api/clarify", token="<script>", text="Apple")
    assert garbage.status_code == 400 and garbage.json()["error"] == "InvalidResumeToken"
    assert last(events(client, "/api/clarify", token=token, text="Apple"), "answer")["company"]
    replayed = post(client, "/api/clarify", token=token, text="Apple")
    assert replayed.status_code == 409 and "already answered" in replayed.json()["message"]


def test_unknown_thread_is_empty_and_bad_ids_are_refused(client: TestClient) -> None:
    assert client.get(f"/api/threads/{THREAD}").json() == {
        "thread_id": THREAD,
        "messages": [],
        "pending": None,
    }
    for bad in ["x", "web-short", "report-0123456789", "web-" + "a" * 65]:
        response = client.get(f"/api/threads/{bad}")
        assert response.status_code == 400 and "thread_id" in response.json()["message"]
        assert post(client, "/api/ask", thread_id=bad, text="Apple").status_code == 400


@pytest.mark.parametrize(
    ("content", "headers", "message"),
    [
        (b"{not json", {}, "not valid JSON"),
        (b"[1, 2]", {}, "JSON object"),
        (b'{"thread_id": "web-0123456789abcdef"}', {}, "`text` must be a string"),
        (b'{"thread_id": "web-0123456789abcdef", "text": "  "}', {}, "`text` is empty"),
        (b'{"thread_id": "web-0123456789abcdef", "text": 3}', {}, "`text` must be a string"),
        (b'{"text": "hi"}', {"content-type": "text/plain"}, "Content-Type: application/json"),
        (b"\xff\xfe", {}, "not valid JSON"),
    ],
)
def test_bad_bodies_get_400_naming_the_problem(
    client: TestClient, content: bytes, headers: dict[str, str], message: str
) -> None:
    response = client.post(
        "/api/ask", content=content, headers={"content-type": "application/json", **headers}
    )
    assert response.status_code == 400 and message in response.json()["message"]


def test_bodies_over_the_limit_get_413(client: TestClient) -> None:
    big = {"thread_id": THREAD, "text": "a" * MAX_BODY_BYTES}
    assert client.post("/api/ask", json=big).status_code == 413

    def chunks() -> Any:  # no Content-Length: counted as it arrives
        yield b'{"thread_id": "web-0123456789abcdef", "text": "'
        for _ in range(20):
            yield b"a" * 1024
        yield b'"}'

    response = client.post(
        "/api/ask", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413 and "16,384-byte limit" in response.json()["message"]
    question = "a" * 4001  # fits the body limit, not the assistant's
    response = post(client, "/api/ask", thread_id=THREAD, text=question)
    assert response.status_code == 400 and "limit is 4,000" in response.json()["message"]


def test_other_sites_and_other_host_names_are_refused(client: TestClient) -> None:
    body = {"thread_id": THREAD, "text": "Apple"}
    evil = client.post("/api/ask", json=body, headers={"origin": "http://evil.example"})
    assert evil.status_code == 403
    same = client.post("/api/ask", json=body, headers={"origin": "http://127.0.0.1:8000"})
    assert same.status_code == 200
    rebound = client.get("/", headers={"host": "attacker.example"})  # DNS rebinding
    assert rebound.status_code == 400
    assert client.get("/", headers={"host": "localhost:8000"}).status_code == 200


def test_a_hostile_search_result_is_sent_as_plain_text(home: Path) -> None:
    assistant = ResearchAssistant(source=HostileSource(), store=MemoryCheckpointStore())
    with TestClient(create_app(assistant), base_url="http://127.0.0.1") as client:
        answer = last(events(client, "/api/ask", thread_id=THREAD, text="Apple news?"), "answer")
    assert HOSTILE_NEWS in answer["text"]
    assert {"title": HOSTILE_TITLE, "url": "javascript:alert(4)"} in answer["sources"]


def test_report_streams_progress_then_files_to_download(client: TestClient, home: Path) -> None:
    stream = events(client, "/api/report", company="Apple", lang="en", pdf=True)
    steps = [data for kind, data in stream if kind == "progress"]
    assert {
        "agent": "researcher",
        "branch": None,
        "finished": False,
        "message": "Researching the company",
    } in steps
    report = last(stream, "report")
    assert report["company"] == "Apple Inc." and "coverage" in report["summary"]
    urls = {f["name"]: f["url"] for f in report["files"]}
    assert set(urls) == {"report.md", "report.pdf"}
    markdown = client.get(urls["report.md"])
    assert markdown.status_code == 200 and "Apple Inc." in markdown.text
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert "attachment" in markdown.headers["content-disposition"]
    assert client.get(urls["report.pdf"]).content.startswith(b"%PDF")


def tags(nodes: list[Any]) -> list[str]:
    """The element names of a Markdown tree, depth first."""
    found: list[str] = []
    for node in nodes:
        if isinstance(node, dict):
            found += [node["t"], *tags(node["c"])]
    return found


def test_a_japanese_report_comes_whole_as_markdown_with_linked_citations(
    client: TestClient,
) -> None:
    """The report event carries the whole report as a tree, its language, [S#] linked."""
    report = last(events(client, "/api/report", company="Apple", lang="ja"), "report")
    tree = report["tree"]
    assert ("ja", "h1", "h2") == (report["language"], tree[0]["t"], tree[1]["t"])
    assert "概要" == tree[1]["c"][0]
    assert "a" in tags(tree) and "ul" in tags(tree)
    assert '"class": "cite", "href": "https://' in json.dumps(tree)


def test_an_answer_with_a_table_comes_as_a_table(home: Path) -> None:
    """A comparison's Markdown table reaches the page as table elements, also on reload."""
    assistant = ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())
    with TestClient(create_app(assistant), base_url="http://127.0.0.1") as client:
        stream = events(client, "/api/ask", thread_id=THREAD, text="Compare Nvidia with AMD")
        answer = last(stream, "answer")
        restored = client.get(f"/api/threads/{THREAD}").json()["messages"][-1]
    assert ["table", "table"] == [
        next(t for t in tags(data["tree"]) if t == "table") for data in (answer, restored)
    ]


def test_report_errors(client: TestClient) -> None:
    stream = events(client, "/api/report", company="Zzyzx Nonexistent Holdings")
    assert stream[-1][0] == "error" and "couldn't find" in stream[-1][1]["message"]
    response = post(client, "/api/report", company="../etc")
    assert response.status_code == 400 and "path characters" in response.json()["message"]
    assert post(client, "/api/report", company="Apple", lang="fr").status_code == 400
    assert post(client, "/api/report", company="Apple", pdf="yes").status_code == 400
    bad = post(client, "/api/report/answer", thread_id="../x", text="Apple")
    assert bad.status_code == 400
    missing = post(client, "/api/report/answer", thread_id="report-0123456789", text="Apple")
    assert missing.status_code == 400 and "no report" in missing.json()["message"]


def test_deep_research_without_sources_says_how_to_give_some(client: TestClient) -> None:
    response = post(client, "/api/deep", topic="Spring Boot migration")
    assert response.status_code == 400
    assert "RESEARCH_DOCS" in response.json()["message"]
    assert post(client, "/api/deep", topic="").status_code == 400


def test_deep_research_over_a_documents_folder(
    assistant: ResearchAssistant, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "migration.md").write_text(
        "# Spring Boot 3 migration\n\nSpring Boot 3 requires Java 17. Jakarta EE 9 replaces "
        "the javax namespace with jakarta, so imports must change.\n",
        encoding="utf-8",
    )
    app = create_app(assistant, docs=str(docs))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        stream = events(client, "/api/deep", topic="Spring Boot 3 migration", lang="en")
        result = last(stream, "deep")
        assert result["session_id"].startswith("deep-")
        assert any(kind == "progress" for kind, _ in stream)
        [markdown] = [f["url"] for f in result["files"] if f["name"] == "report.md"]
        assert markdown.startswith("/api/files/sessions/")
        assert "Spring Boot" in client.get(markdown).text
        assert "h1" == result["tree"][0]["t"] and "en" == result["language"]
        assert '"class": "cite"' in json.dumps(result["tree"])


def test_files_never_leave_the_reports_and_sessions_folders(
    client: TestClient, home: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "report.md").write_text("secret")
    (home / "reports").mkdir(parents=True)
    (home / "reports" / "link").symlink_to(secret)
    for path, code in [
        ("/api/files/reports/link/report.md", 404),  # a symlink out of the folder
        ("/api/files/reports/..%2Fsecret/report.md", 404),
        ("/api/files/reports/%2E%2E/report.md", 400),
        ("/api/files/reports/.hidden/report.md", 400),
        ("/api/files/reports/nothing-here/report.md", 404),
        ("/api/files/reports/x/meta.json", 400),
        ("/api/files/threads/x/report.md", 400),
    ]:
        response = client.get(path)
        assert response.status_code == code, path
        assert "secret" not in response.text


def test_no_secret_reaches_the_browser(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-very-secret-key")
    assistant = ResearchAssistant(source=HostileSource(), store=MemoryCheckpointStore())
    with TestClient(create_app(assistant), base_url="http://127.0.0.1") as client:
        bodies = [client.get(p).text for p in ("/", "/static/app.js", f"/api/threads/{THREAD}")]
        bodies.append(post(client, "/api/ask", thread_id=THREAD, text="Apple?").text)
        bodies.append(post(client, "/api/clarify", token="rt1.x.y", text="Apple").text)
    assert not any("tvly-very-secret-key" in body for body in bodies)


def test_a_japanese_pdf_without_its_font_is_a_clear_error(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Japanese PDF asked for without the pdf-ja extra: 501 naming the extra, no 'unexpected'."""
    from research_fsm.common import _jafont

    def no_font() -> None:
        raise _jafont.MissingFontError("Japanese PDFs need the Noto Sans JP font: pip install x")

    monkeypatch.setattr(_jafont, "font_file", no_font)
    response = post(client, "/api/report", company="Toyota", lang="ja", pdf=True)
    assert (501, True) == (response.status_code, "Noto Sans JP" in response.json()["message"])


def test_an_answer_carries_what_degraded_once(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local model that answers the forced tool call in text: the answer event carries
    the run's note (JSON asked for in text) once; with no LLM, no note."""
    with LocalLLM(qa_brain, mode="text_for_tool") as server:
        monkeypatch.setenv("RESEARCH_FSM_LLM_URL", server.url)
        monkeypatch.setenv("RESEARCH_FSM_MODEL", LOCAL_MODEL)
        helper = ResearchAssistant(
            llm=llm_from_env(), source=MockDataSource(), store=MemoryCheckpointStore()
        )
        with TestClient(create_app(helper), base_url="http://127.0.0.1:8000") as local:
            answer = last(
                events(local, "/api/ask", thread_id=THREAD, text="What does Apple do?"), "answer"
            )
    wanted = "did not answer through the tool (schema); its answer was asked for as JSON in text"
    assert answer["notes"] == [f"clarity: the model {LOCAL_MODEL} {wanted}"]
    offline = ResearchAssistant(source=MockDataSource(), store=MemoryCheckpointStore())
    with TestClient(create_app(offline), base_url="http://127.0.0.1:8000") as plain:
        quiet = last(
            events(plain, "/api/ask", thread_id=THREAD, text="What does Apple do?"), "answer"
        )
    assert quiet["notes"] == []
