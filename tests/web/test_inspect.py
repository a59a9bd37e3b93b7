"""The thread inspector's API: listing, timelines, diffs, actions, refusals and safety."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from starlette.testclient import TestClient

from research_fsm import JsonFileCheckpointStore
from research_fsm.cli import main
from research_fsm.engine import END, START, CompiledGraph, StateGraph, interrupt
from research_fsm.web import create_app, inspector

from .inspect_helpers import HOSTILE_STATE, seeded

BASE = "http://127.0.0.1:8001"


@pytest.fixture
def graph(tmp_path: Path) -> CompiledGraph[Any]:
    return seeded(tmp_path / "threads")


@pytest.fixture
def client(graph: CompiledGraph[Any]) -> Iterator[TestClient]:
    with TestClient(inspector(graph), base_url=BASE) as test_client:
        yield test_client


def csrf(client: TestClient) -> str:
    page = client.get("/").text
    found = re.search(r'<meta name="csrf-token" content="([^"]+)">', page)
    assert found is not None
    return found.group(1)


def post(client: TestClient, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json=body, headers={"X-CSRF-Token": csrf(client)})


def rows(client: TestClient, thread: str, **params: str) -> list[dict[str, Any]]:
    response = client.get("/api/thread", params={"thread": thread, **params})
    assert response.status_code == 200, response.text
    return response.json()["rows"]  # type: ignore[no-any-return]


def test_thread_list_pages_by_cursor_and_filters(client: TestClient) -> None:
    """Newest first; a cursor gives the next page; prefix, status and children filter."""
    everything = client.get("/api/threads").json()["threads"]
    assert [t["id"] for t in everything] == [
        "paused",
        "hostile",
        "article-4",
        "article-3",
        "article-2",
        "article-1",
    ]
    assert everything[1]["status"] == "suspended" and everything[1]["node"] == "review"
    assert everything[3]["checkpoints"] == 10
    failed = client.get("/api/threads", params={"status": "failed"}).json()["threads"]
    assert [(t["id"], t["node"]) for t in failed] == [("article-4", "publish")]
    first = client.get("/api/threads", params={"limit": "3"}).json()
    second = client.get("/api/threads", params={"limit": "3", "cursor": first["next"]}).json()
    assert [t["id"] for t in first["threads"] + second["threads"]] == [t["id"] for t in everything]
    assert second["next"] is None
    suspended = client.get("/api/threads", params={"status": "suspended"}).json()["threads"]
    assert {t["id"] for t in suspended} == {"paused", "hostile", "article-1"}
    prefixed = client.get("/api/threads", params={"prefix": "article-2"}).json()["threads"]
    assert [t["id"] for t in prefixed] == ["article-2"]
    children = client.get("/api/threads", params={"prefix": "article-2", "children": "1"}).json()[
        "threads"
    ]
    assert {t["parent"] for t in children} == {None, "article-2"} and len(children) == 2
    bad = client.get("/api/threads", params={"status": "sleeping"})
    assert bad.status_code == 400 and "sleeping" in bad.json()["message"]


def test_timeline_names_nodes_children_and_parallel_branches(client: TestClient) -> None:
    """Each checkpoint: node, step, status; a subgraph's child thread under the checkpoint
    that runs it, and the fan-out's branches under the checkpoint that started them."""
    timeline = rows(client, "article-3")
    assert [r["seq"] for r in timeline] == list(range(10, 0, -1))
    assert timeline[0]["node"] == "publish" and timeline[0]["status"] == "completed"
    first = timeline[-1]
    assert first["next"] == "draft" and first["children"][0]["node"] == "draft"
    child = first["children"][0]["thread"]
    fan_out = next(r for r in timeline if r["branches"])
    assert {b["id"] for b in fan_out["branches"]} == {"facts[0]", "tone[1]"}
    opened = client.get("/api/thread", params={"thread": child}).json()
    assert opened["path"] == "draft" and opened["editable"] is True
    assert [r["node"] for r in opened["rows"]][:2] == ["write", "outline"]
    assert "outline" in opened["graph"]["nodes"] and "facts" not in opened["graph"]["nodes"]


def test_timeline_pages_with_before(client: TestClient) -> None:
    """``before`` gives the older checkpoints, and the page says where the next starts."""
    page = client.get("/api/thread", params={"thread": "article-3", "limit": "4"}).json()
    assert [r["seq"] for r in page["rows"]] == [10, 9, 8, 7] and page["next"]
    older = client.get(
        "/api/thread", params={"thread": "article-3", "limit": "4", "before": page["next"]}
    ).json()
    assert [r["seq"] for r in older["rows"]] == [6, 5, 4, 3]


def test_checkpoint_state_and_its_diff(client: TestClient) -> None:
    """A checkpoint's whole state, and per field what changed since its parent."""
    timeline = rows(client, "article-2")
    written = next(r for r in timeline if r["node"] == "draft")
    data = client.get(
        "/api/checkpoint", params={"thread": "article-2", "checkpoint": written["id"]}
    ).json()
    assert data["state"]["topic"] == "sourdough"
    changed = {d["path"]: d for d in data["diff"]}
    assert set(changed) == {"outline", "draft", "revisions"}
    assert changed["outline"]["list"]["appended"][0] == "What sourdough is"
    assert changed["revisions"]["old"] == "0" and changed["revisions"]["new"] == "1"
    assert data["against"] == written["parent"]
    assert any("style" in line for line in data["graph"]["mermaid"].splitlines()[-2:])


def test_edit_needs_the_csrf_token_and_makes_a_new_checkpoint(client: TestClient) -> None:
    """Without the page's token an edit is refused; with it, a new ``update`` checkpoint."""
    body = {"thread": "article-2", "values": {"verdict": "retracted"}}
    assert client.post("/api/update", json=body).status_code == 403
    wrong = client.post("/api/update", json=body, headers={"X-CSRF-Token": "x" * 43})
    assert wrong.status_code == 403
    done = post(client, "/api/update", body)
    assert done.status_code == 200, done.text
    head = rows(client, "article-2")[0]
    assert head["by"] == "update" and head["id"] == done.json()["checkpoint"]


def test_refusals_carry_the_engine_message(client: TestClient, graph: CompiledGraph[Any]) -> None:
    """UpdateRefused on a waiting thread, ThreadBusy while a run holds it, ThreadExists."""
    refused = post(client, "/api/update", {"thread": "article-1", "values": {"topic": "x"}})
    assert refused.status_code == 409
    assert refused.json()["error"] == "UpdateRefused"
    assert "update_state refused on thread `article-1`" in refused.json()["message"]

    async def hold() -> Any:
        return await graph.store.acquire("article-2")

    lease = asyncio.run(hold())
    try:
        busy = post(client, "/api/update", {"thread": "article-2", "values": {"topic": "x"}})
    finally:
        asyncio.run(lease.release())
    assert busy.status_code == 409 and busy.json()["error"] == "ThreadBusy"
    assert "thread `article-2` is busy" in busy.json()["message"]
    exists = post(client, "/api/fork", {"thread": "article-2", "new_thread": "article-3"})
    assert exists.status_code == 409 and exists.json()["error"] == "ThreadExists"


def test_edit_as_node_then_resume_continues_the_run(client: TestClient) -> None:
    """A waiting thread: its payload and token shown; edited, then resumed with JSON."""
    head = client.get("/api/thread", params={"thread": "article-1"}).json()["head"]
    (waiting,) = head["suspensions"]
    assert waiting["node"] == "review" and waiting["payload"]["question"] == "Approve this draft?"
    edited = post(client, "/api/update", {"thread": "article-2", "values": {"topic": "rye"}})
    assert edited.status_code == 200
    done = post(
        client,
        "/api/resume",
        {"thread": "article-1", "token": waiting["token"], "value": "approve"},
    )
    assert done.json() == {"checkpoint": done.json()["checkpoint"], "status": "completed"}
    again = post(
        client, "/api/resume", {"thread": "article-1", "token": waiting["token"], "value": "x"}
    )
    assert again.status_code == 409 and again.json()["error"] == "StaleResumeToken"


def test_a_failed_run_is_edited_and_continued(client: TestClient) -> None:
    """The failure shown on its checkpoint; the topic fixed by hand; the run goes on."""
    head = client.get("/api/thread", params={"thread": "article-4"}).json()["head"]
    assert head["status"] == "failed" and head["error"]["node"] == "publish"
    assert "is unfinished" in head["error"]["message"]
    again = post(client, "/api/continue", {"thread": "article-4"})
    assert again.status_code == 422 and again.json()["error"] == "NodeFailed"
    fixed = post(client, "/api/update", {"thread": "article-4", "values": {"topic": "qubits"}})
    assert fixed.status_code == 200, fixed.text
    done = post(client, "/api/continue", {"thread": "article-4"})
    assert done.status_code == 200 and done.json()["status"] == "completed"
    assert rows(client, "article-4")[0]["node"] == "publish"


def test_rerun_from_a_checkpoint_starts_a_new_line(client: TestClient) -> None:
    """Re-running from the third checkpoint adds checkpoints whose line starts there."""
    third = rows(client, "article-2")[::-1][2]
    done = post(client, "/api/rerun", {"thread": "article-2", "checkpoint": third["id"]})
    assert done.status_code == 200 and done.json()["status"] == "suspended"
    timeline = rows(client, "article-2")
    rewind = next(r for r in timeline if r["by"] == "rewind")
    assert rewind["parent"] == third["id"] and timeline[0]["status"] == "suspended"
    assert len(timeline) > 6


def test_fork_copies_a_checkpoint_to_a_new_thread(client: TestClient) -> None:
    """A fork is a new thread whose first checkpoint names where it came from."""
    source = rows(client, "article-2")[2]
    done = post(
        client,
        "/api/fork",
        {"thread": "article-2", "checkpoint": source["id"], "new_thread": "article-2b"},
    )
    assert done.status_code == 200, done.text
    (first,) = rows(client, "article-2b")
    assert first["by"] == "fork"
    assert first["forked_from"] == {"thread": "article-2", "checkpoint": source["id"]}
    diff = client.get(
        "/api/checkpoint", params={"thread": "article-2b", "checkpoint": first["id"]}
    ).json()
    assert diff["diff"] == [] and diff["against"] == source["id"]


def test_a_threads_forks_are_listed_with_the_checkpoint_they_left(client: TestClient) -> None:
    """The source thread's forks come with the checkpoint each was forked at; other
    threads have none."""
    source = rows(client, "article-2")[2]
    for name in ("article-2b", "article-2c"):
        body = {"thread": "article-2", "checkpoint": source["id"], "new_thread": name}
        assert post(client, "/api/fork", body).status_code == 200
    found = client.get("/api/forks", params={"thread": "article-2"}).json()
    assert sorted((f["thread"], f["checkpoint"]) for f in found["forks"]) == [
        ("article-2b", source["id"]),
        ("article-2c", source["id"]),
    ]
    assert found["complete"] is True
    assert client.get("/api/forks", params={"thread": "article-3"}).json()["forks"] == []
    assert client.get("/api/forks", params={"thread": "../x"}).status_code == 400


def test_delete_needs_the_thread_id_as_confirmation(client: TestClient) -> None:
    """Delete refuses without the id typed back, then removes the thread and its children."""
    refused = post(client, "/api/delete", {"thread": "article-2", "confirm": "yes"})
    assert refused.status_code == 403 and "confirm" in refused.json()["message"]
    assert post(client, "/api/delete", {"thread": "article-2", "confirm": "article-2"}).json() == {
        "deleted": "article-2"
    }
    gone = client.get("/api/thread", params={"thread": "article-2"})
    assert gone.status_code == 404 and gone.json()["error"] == "ThreadNotFound"
    listed = client.get("/api/threads", params={"children": "1", "prefix": "article-2"})
    assert listed.json()["threads"] == []


def test_without_a_graph_the_page_is_read_only(graph: CompiledGraph[Any]) -> None:
    """A store alone: threads and states shown, every action refused saying why."""
    with TestClient(inspector(graph.store), base_url=BASE) as client:
        data = client.get("/api/thread", params={"thread": "article-1"}).json()
        assert data["editable"] is False and data["graph"] is None
        assert data["head"]["suspensions"][0]["token"] is None
        refused = post(client, "/api/update", {"thread": "article-1", "values": {}})
        assert refused.status_code == 403 and "--graph" in refused.json()["message"]


def test_hostile_state_is_json_and_the_page_holds_no_state(client: TestClient) -> None:
    """State strings leave as JSON strings; the page itself carries none, and its policy
    runs only its own scripts."""
    head = client.get("/api/thread", params={"thread": "hostile"}).json()["head"]
    assert head["suspensions"][0]["payload"]["draft"].startswith("What " + HOSTILE_STATE)
    page = client.get("/")
    assert "alert(7)" not in page.text and "onerror" not in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "unsafe-eval" not in policy
    assert page.headers["x-frame-options"] == "DENY"


def test_other_hosts_and_origins_are_refused(client: TestClient) -> None:
    """DNS rebinding (another Host) and cross-site posts are refused, as on ``serve``."""
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    body = {"thread": "article-2", "values": {}}
    cross = client.post(
        "/api/update",
        json=body,
        headers={"Origin": "http://evil.example", "X-CSRF-Token": csrf(client)},
    )
    assert cross.status_code == 403 and cross.json()["error"] == "CrossOrigin"


def test_a_token_is_required_on_every_request(graph: CompiledGraph[Any]) -> None:
    """With a token: 401 without it; ``?token=`` sets a cookie; a bearer header works."""
    app = inspector(graph, token="s3cret-token")
    with TestClient(app, base_url="http://10.0.0.5:8001") as client:
        assert client.get("/").status_code == 401
        assert client.get("/static/inspect.js").status_code == 401
        assert client.get("/?token=wrong").status_code == 401
        first = client.get("/?token=s3cret-token", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/"
        assert "httponly" in first.headers["set-cookie"].lower()
        assert client.get("/api/threads").status_code == 200  # the cookie
    with TestClient(app, base_url="http://10.0.0.5:8001") as fresh:
        bearer = {"Authorization": "Bearer s3cret-token"}
        assert fresh.get("/api/threads", headers=bearer).status_code == 200


def test_the_assistant_page_mounts_the_inspector(assistant: Any) -> None:
    """``serve``'s page links the inspector, mounted at /inspect/ on the same store."""
    with TestClient(create_app(assistant), base_url="http://127.0.0.1:8000") as served:
        assert 'href="/inspect/"' in served.get("/").text
        page = served.get("/inspect/")
        assert page.status_code == 200 and 'name="csrf-token"' in page.text
        assert "'unsafe-inline'" in page.headers["content-security-policy"]
        assert "'unsafe-inline'" not in served.get("/").headers["content-security-policy"]
        assert served.get("/inspect/api/threads").json() == {"threads": [], "next": None}


def test_cli_refuses_bad_options_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A graph that is not there, a wide host without --allow-remote: exit 2, one line."""
    assert main(["inspect", "--store", str(tmp_path), "--graph", "nowhere.at_all:app"]) == 2
    assert "cannot import 'nowhere.at_all'" in capsys.readouterr().err
    assert main(["inspect", "--store", str(tmp_path), "--graph", "json:dumps"]) == 2
    assert "not a compiled graph" in capsys.readouterr().err
    assert main(["inspect", "--store", str(tmp_path), "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err


def test_cli_prints_a_token_when_serving_beyond_loopback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--allow-remote: the address printed carries the token the app then requires."""
    import uvicorn

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append((app, kw)))
    JsonFileCheckpointStore(tmp_path)
    assert main(["inspect", "--store", str(tmp_path), "--host", "0.0.0.0", "--allow-remote"]) == 0
    err = capsys.readouterr().err
    token = re.search(r"\?token=([A-Za-z0-9_-]+)", err)
    assert token is not None and "read-only" in err
    app, options = served[-1]
    assert options["host"] == "0.0.0.0"
    with TestClient(app, base_url="http://192.168.1.9:8001") as client:
        assert client.get("/api/threads").status_code == 401
        ok = client.get("/api/threads", headers={"Authorization": f"Bearer {token.group(1)}"})
        assert ok.status_code == 200


def test_diff_of_long_strings_lists_and_nested_fields() -> None:
    """Long strings diff by words, lists by items, objects per key; none are dumped whole."""
    from research_fsm.web._inspect_data import diff_states

    old_text = "The quick brown fox jumps over the lazy dog. " * 5
    new_text = old_text.replace("lazy dog. The", "sleepy cat. The", 1)
    diff = diff_states(
        {"text": old_text, "items": [1, 2, 3], "meta": {"a": 1, "gone": True}, "x": 1},
        {"text": new_text, "items": [1, 3, 4], "meta": {"a": 2, "new": "y"}, "y": 2},
    )
    by_path = {d["path"]: d for d in diff}
    assert set(by_path) == {"text", "items", "meta.a", "meta.gone", "meta.new", "x", "y"}
    segments = by_path["text"]["text"]
    assert {"op": "delete", "text": "lazy"} in segments
    assert {"op": "insert", "text": "sleepy"} in segments
    assert all(len(s["text"]) <= 90 for s in segments if s["op"] == "equal")
    assert by_path["items"]["list"]["ops"] == [
        {"at": 1, "removed": ["2"], "added": []},
        {"at": 3, "removed": [], "added": ["4"]},
    ]
    assert by_path["meta.gone"]["kind"] == "removed" and by_path["y"]["kind"] == "added"
    assert diff_states({"a": [1]}, {"a": [1]}) == []
    huge = diff_states({"a": 0}, {"a": 1, "b": "z" * 10_000})
    assert len(huge[-1]["new"]) < 2_100 and "more characters" in huge[-1]["new"]


def test_the_drawn_graph_highlights_the_current_node() -> None:
    """The current node gets a style line under its Mermaid id, also for odd names."""
    from research_fsm.engine import END, START, StateGraph
    from research_fsm.web._inspect_data import drawn_graph

    class S(BaseModel):
        n: int = 0

    async def step(state: S) -> dict[str, int]:
        return {"n": 1}

    g = StateGraph(S).add_node("plain", step).add_node("odd name", step)
    g.add_edge(START, "plain").add_edge("plain", "odd name").add_edge("odd name", END)
    drawn = drawn_graph(g.compile().to_mermaid(), ["odd name", "plain"])
    assert drawn["nodes"] == ["plain", "odd name"]
    assert "    style n1 fill:#ffe08a,stroke:#b8860b,stroke-width:3px" in drawn["mermaid"]
    assert "    style plain stroke:#b8860b" in drawn["mermaid"]


def test_the_inspector_page_puts_no_data_in_html_and_loads_nothing_remote(
    client: TestClient,
) -> None:
    """Data goes in with textContent; the one HTML insertion is Mermaid's own SVG; the
    page and the drawing library come from the package (no CDN), with its licence."""
    static = Path(__file__).parents[2] / "research_fsm/web/static"
    script = (static / "inspect.js").read_text(encoding="utf-8")
    assert [line.strip() for line in script.splitlines() if "innerHTML" in line] == [
        "if (view.graphText === text) box.innerHTML = svg;  // Mermaid's own sanitised SVG"
    ]
    assert "insertAdjacentHTML" not in script and "eval(" not in script
    assert 'securityLevel: "strict"' in script
    page = client.get("/").text
    assert "http" not in page
    library = client.get("/static/mermaid.min.js")
    assert library.status_code == 200 and "javascript" in library.headers["content-type"]
    assert "MIT License" in (static / "mermaid.LICENSE.txt").read_text(encoding="utf-8")


def test_graphs_by_prefix_and_a_graph_on_another_store(graph: CompiledGraph[Any]) -> None:
    """``graphs`` runs each thread with the graph of its longest prefix; a graph compiled
    with another store is refused before anything is served."""
    from research_fsm.engine import MemoryCheckpointStore
    from research_fsm.web import InvalidServeOptions

    from .inspect_helpers import demo

    app = inspector(graph.store, graphs={"article-": demo().graph})
    with TestClient(app, base_url=BASE) as client:
        assert client.get("/api/thread", params={"thread": "article-2"}).json()["editable"]
        assert not client.get("/api/thread", params={"thread": "paused"}).json()["editable"]
    other = demo().article.compile(store=MemoryCheckpointStore())
    with pytest.raises(InvalidServeOptions, match="runs on another store"):
        inspector(graph.store, graphs={"": other})


def test_an_unexpected_error_is_one_line_without_a_traceback(
    graph: CompiledGraph[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A bug behind the page: 500 with a fixed message; the traceback goes to the log."""
    from research_fsm.web import inspector_app

    async def broken(thread: str) -> CompiledGraph[Any] | None:
        raise RuntimeError("secret internals /home/x")

    with TestClient(inspector_app(graph.store, broken), base_url=BASE) as client:
        response = client.get("/api/thread", params={"thread": "article-1"})
    assert response.status_code == 500
    assert response.json() == {
        "error": "RuntimeError",
        "message": "Unexpected error on the server (see its log).",
    }
    assert any("secret internals" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


class Asked(BaseModel):
    got: list[str] = []


async def asks_twice(state: Asked) -> dict[str, Any]:
    first = interrupt("First question?")
    second = interrupt("Second question?")
    return {"got": [first, second]}


def test_a_node_at_its_second_question_shows_its_first_answer(tmp_path: Path) -> None:
    """A node waiting at its second interrupt(): the page's data carries the first
    answer beside the question, and resuming from the page completes the node with
    both answers."""
    builder = StateGraph(Asked).add_node("ask", asks_twice)
    app = builder.add_edge(START, "ask").add_edge("ask", END)
    graph = app.compile(store=JsonFileCheckpointStore(tmp_path / "threads"))

    async def first_answer() -> None:
        first = await graph.run({}, thread_id="t")
        assert first.suspension is not None
        await graph.resume(first.suspension.token, "one")

    asyncio.run(first_answer())
    with TestClient(inspector(graph), base_url=BASE) as client:
        head = client.get("/api/thread", params={"thread": "t"}).json()["head"]
        (waiting,) = head["suspensions"]
        assert waiting["payload"] == "Second question?" and waiting["answers"] == ["one"]
        done = post(
            client, "/api/resume", {"thread": "t", "token": waiting["token"], "value": "two"}
        )
        assert done.status_code == 200 and done.json()["status"] == "completed"
    final = asyncio.run(graph.get_state("t"))
    assert final is not None and final.state.got == ["one", "two"]
