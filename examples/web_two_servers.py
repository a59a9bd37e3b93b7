"""Two web server processes on one PostgreSQL database: a conversation moves between them.

Run it with ``python examples/web_two_servers.py`` (needs ``starlette``, ``uvicorn``
and the ``postgres`` extra). The database is ``RESEARCH_FSM_STORE``
(``postgresql://...``); without it, a throwaway PostgreSQL server is started
the way the tests start theirs (needs the server binaries), else it says why
it cannot run and exits 0.

It starts two processes serving ``examples/web_app.py``'s app with uvicorn, each
on a unix socket, each with its own ``ResearchAssistant`` and
``PostgresCheckpointStore`` (from ``RESEARCH_FSM_STORE``), then as one user: asks
a vague question on server A, answers the clarification on server B with the
resume token A handed out, asks a follow-up on A (which must remember the company
that B settled), and sends the used token to A again (409: each token works once,
whichever server gets it). Offline: the mock data source, no keys.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
VAGUE = "Tell me about the company"


def serve(socket: str) -> None:
    """One server process: web_app's app (its store from RESEARCH_FSM_STORE) on ``socket``."""
    import uvicorn

    sys.path.insert(0, str(HERE))
    from web_app import app

    uvicorn.run(app, uds=socket, log_level="warning")


def throwaway_database(stack: ExitStack) -> str | None:
    """A ``postgresql://`` URL of a server started here, or ``None`` (with the reason printed)."""
    tests = HERE.parent / "tests"
    if not (tests / "servers" / "postgres.py").is_file():
        print("skipped: RESEARCH_FSM_STORE is not set and tests/servers is not beside examples/")
        return None
    sys.path.insert(0, str(tests))
    from servers.postgres import PostgresServer, ServerUnavailable

    try:
        server = PostgresServer()
        server.start()
    except ServerUnavailable as exc:
        print(f"skipped: RESEARCH_FSM_STORE is not set and no PostgreSQL server could start: {exc}")
        return None
    stack.callback(server.stop)
    user = server.dsn.split("user=")[1].split()[0]
    return f"postgresql://{user}@/postgres?host={server.socket_dir}&port=5432"


def start_server(stack: ExitStack, socket: Path, store: str) -> None:
    env = {**os.environ, "RESEARCH_FSM_STORE": store, "RESEARCH_DATA_SOURCE": "mock"}
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY"):
        env.pop(key, None)
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(socket)], env=env)
    stack.callback(proc.wait, 30)
    stack.callback(proc.terminate)


async def wait_ready(client: httpx.AsyncClient, deadline: float) -> None:
    while True:
        try:
            await client.get("/")  # 404 or 405: it answers
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


def show(server: str, request: str, outcome: object) -> None:
    print(f"{server}  {request:<36} -> {outcome}")


async def conversation(a: httpx.AsyncClient, b: httpx.AsyncClient) -> dict[str, bool]:
    """One user moving between servers A and B; what each step checked."""
    thread = {"thread_id": "traveller"}
    first = (await a.post("/ask", json={**thread, "question": VAGUE})).json()
    show("A", f"ask {VAGUE!r}", first["status"])
    token = first["token"] or ""
    second = (await b.post("/clarify", json={"token": token, "answer": "Apple"})).json()
    show("B", "clarify with A's token: 'Apple'", f"{second['status']}: {second['company']}")
    follow = "What about their stock?"
    third = (await a.post("/ask", json={**thread, "question": follow})).json()
    show("A", f"ask {follow!r}", f"{third['status']}: {third['company']}")
    again = await a.post("/clarify", json={"token": token, "answer": "Tesla"})
    show("A", "clarify with the same token again", f"{again.status_code} {again.json()['error']}")
    return {
        "A asked for a clarification": first["status"] == "needs_clarification",
        "B resumed A's conversation with the token": second["status"] == "answered"
        and second["company"] == "Apple Inc.",
        "A's follow-up remembered what B settled": third["status"] == "answered"
        and third["company"] == "Apple Inc.",
        "a used token is refused on the other server": again.status_code == 409,
    }


async def drive(sockets: list[Path]) -> dict[str, bool]:
    a, b = (
        httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(s)), base_url="http://demo")
        for s in sockets
    )
    async with a, b:
        deadline = time.monotonic() + 60
        await asyncio.gather(wait_ready(a, deadline), wait_ready(b, deadline))
        return await conversation(a, b)


def main() -> int:
    print("two servers on one database: a conversation moves between them")
    extras = {
        "uvicorn": "web",
        "starlette": "web",
        "psycopg": "postgres",
        "psycopg_pool": "postgres",
    }
    missing = [name for name in extras if importlib.util.find_spec(name) is None]
    if missing:
        needed = ",".join(sorted({extras[name] for name in missing}))
        print(f"skipped: {', '.join(missing)} not installed (pip install -e '.[{needed}]')")
        return 0
    with ExitStack() as stack:
        store = os.environ.get("RESEARCH_FSM_STORE", "").strip() or throwaway_database(stack)
        if store is None:
            return 0
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        sockets = [folder / "a.sock", folder / "b.sock"]
        for socket in sockets:
            start_server(stack, socket, store)
        checks = asyncio.run(drive(sockets))
    for label, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {label}")
    print(f"all checks passed: {all(checks.values())}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
    else:
        raise SystemExit(main())
