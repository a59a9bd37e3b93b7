"""``serve``: the web page on uvicorn, on loopback unless told otherwise."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from ..assistant import ResearchAssistant
from ._app import create_app
from ._guard import allowed_host_names, is_loopback

__all__ = ["serve"]


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    docs: str | None = None,
    assistant: ResearchAssistant | None = None,
    allowed_hosts: Sequence[str] = (),
    err: TextIO | None = None,
) -> None:
    """Serve the page until interrupted. There is no login: off loopback, anyone who
    can reach ``host`` can use the assistant (and the API keys it holds), so serving
    there needs ``allowed_hosts`` (the names the page is reached by;
    ``InvalidServeOptions`` otherwise, before anything starts) and a warning says so."""
    import uvicorn

    err = err if err is not None else sys.stderr
    hosts = allowed_host_names(allowed_hosts, bind=host)
    loopback = is_loopback(host)
    if not loopback:
        print(
            f"research-fsm: warning: serving on {host}, not loopback: anyone who can reach "
            "this address can use the assistant and its API keys; there is no login",
            file=err,
        )
    app = create_app(
        assistant if assistant is not None else ResearchAssistant.from_env(),
        docs=docs,
        allowed_hosts=hosts,
        close_assistant=assistant is None,
    )
    name = host if loopback else allowed_hosts[0]  # 0.0.0.0 is no address to open
    shown = f"[{name}]" if ":" in name else name
    print(f"research-fsm: the page is at http://{shown}:{port}/ (Ctrl-C stops)", file=err)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
    )  # an open stream does not hold Ctrl-C up
