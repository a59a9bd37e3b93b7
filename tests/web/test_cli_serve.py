"""``research-fsm serve``: the extra, the defaults, the warning, a real server."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from research_fsm.cli import main
from research_fsm.web import is_loopback

from .helpers import parse_sse


def test_without_the_web_extra_serve_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "research-fsm: the web page needs the web extra: pip install 'research-fsm[web]'"
    )


def test_serve_binds_loopback_by_default_and_warns_otherwise(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    assert main(["serve", "--source", "mock"]) == 0
    assert calls[-1]["host"] == "127.0.0.1" and calls[-1]["port"] == 8000
    assert "warning" not in capsys.readouterr().err
    wide = ["serve", "--host", "0.0.0.0", "--port", "9000", "--source", "mock"]
    assert main([*wide, "--allowed-host", "research.lan"]) == 0
    assert calls[-1]["host"] == "0.0.0.0" and calls[-1]["port"] == 9000
    assert "warning: serving on 0.0.0.0, not loopback" in capsys.readouterr().err
    assert main(["serve", "--port", "70000"]) == 2


def test_serving_beyond_loopback_needs_allowed_host_names(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    """``--host 0.0.0.0`` without ``--allowed-host`` refuses to start, in one line."""
    import uvicorn

    calls: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(app))
    assert 2 == main(["serve", "--host", "0.0.0.0", "--source", "mock"])
    expected = (
        "research-fsm: serving on 0.0.0.0 (beyond loopback) needs --allowed-host NAME for "
        "each name the page is reached by (there is no login: anyone who can reach it can "
        "use it)\n"
    )
    assert (expected, []) == (capsys.readouterr().err, calls)
    assert 2 == main(["serve", "--host", "0.0.0.0", "--allowed-host", "*", "--source", "mock"])
    assert "allowed host '*' is not a host name" in capsys.readouterr().err


def test_a_rebound_host_name_is_refused_when_serving_beyond_loopback(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    """Bound to 0.0.0.0, a DNS-rebinding page (another ``Host``) can neither ask nor read."""
    import uvicorn
    from starlette.testclient import TestClient

    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    wide = ["serve", "--host", "0.0.0.0", "--allowed-host", "research.lan", "--source", "mock"]
    assert 0 == main(wide)
    body = {"thread_id": "web-0123456789abcdef", "text": "Apple"}
    with TestClient(apps[0], base_url="http://attacker.example:8000") as client:
        rebound = [
            client.post("/api/ask", json=body, headers={"origin": "http://attacker.example:8000"}),
            client.get("/api/threads/web-0123456789abcdef"),
        ]
    with TestClient(apps[0], base_url="http://research.lan:8000") as client:
        evil = client.post("/api/ask", json=body, headers={"origin": "http://attacker.example"})
        own = client.post("/api/ask", json=body, headers={"origin": "http://research.lan:8000"})
    assert [400, 400, 403, 200] == [r.status_code for r in [*rebound, evil, own]]


def test_the_help_says_there_is_no_login(capsys: pytest.CaptureFixture[str]) -> None:
    """``serve --help`` says there is no login and names ``--allowed-host``."""
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert ["There is no login", "--allowed-host NAME"] == [
        phrase for phrase in ["There is no login", "--allowed-host NAME"] if phrase in out
    ]


def test_loopback_names() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"]))
    assert not any(map(is_loopback, ["0.0.0.0", "192.168.1.2", "example.com", "::"]))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_new_user_runs_serve_and_holds_a_conversation(home: Path) -> None:
    port = _free_port()
    env = {**os.environ, "RESEARCH_FSM_HOME": str(home)}
    process = subprocess.Popen(
        [sys.executable, "-m", "research_fsm", "serve", "--port", str(port), "--source", "mock"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, "serve did not start"
            time.sleep(0.1)
        body = {"thread_id": "web-newuser0001", "text": "Tell me about the company"}
        question = parse_sse(httpx.post(base + "/api/ask", json=body, timeout=30).text)[-2]
        assert question[0] == "question"
        body = {"token": question[1]["token"], "text": "Apple"}
        answer = parse_sse(httpx.post(base + "/api/clarify", json=body, timeout=30).text)[-2]
        assert answer[0] == "answer" and answer[1]["company"] == "Apple Inc."
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert f"the page is at http://127.0.0.1:{port}/" in err
    assert "Traceback" not in err
