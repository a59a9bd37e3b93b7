"""A real server for the browser tests: uvicorn in a thread on a loopback port."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Without the networking switches Chromium waits on this closed network; as root it
needs --no-sandbox."""


@contextlib.contextmanager
def chromium(sync_api: Any) -> Iterator[Any]:
    """Chromium, headless, through Playwright's ``sync_api``; the test is skipped when it
    does not start."""
    import pytest

    with sync_api.sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
            )
        except Exception as exc:
            pytest.skip(f"{CHROMIUM} does not start: {exc}")
        yield browser
        browser.close()


def artifacts_dir() -> Path:
    """Where screenshots go: ``$RESEARCH_FSM_ARTIFACTS``, else ``test-artifacts/web``."""
    root = os.environ.get("RESEARCH_FSM_ARTIFACTS")
    path = Path(root) if root else Path(__file__).parents[2] / "test-artifacts"
    (path / "web").mkdir(parents=True, exist_ok=True)
    return path / "web"


class LiveServer:
    """Serves ``app`` on 127.0.0.1 (``port`` 0: a free one) until ``stop``."""

    def __init__(self, app: Starlette, port: int = 0) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the web server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)
        self._socket.close()
