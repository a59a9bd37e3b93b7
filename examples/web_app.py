"""Web app: one ResearchAssistant serving many conversations from one event loop.

Demo: ``python examples/web_app.py`` (needs ``starlette``: ``pip install -e '.[web]'``) drives the ASGI app
in-process via ``httpx.ASGITransport``: 50 concurrent conversations, plus 5 whose
clarification token goes to the client and back (stored in a temporary directory).
Serve it for real: ``uvicorn examples.web_app:app`` (stores under ``$RESEARCH_FSM_HOME``):

    POST /ask      {"thread_id": "...", "question": "..."}  -> reply as JSON
    POST /clarify  {"token": "...", "answer": "..."}        -> reply as JSON

Errors are JSON too: invalid token 400, busy thread or used token 409, bad input 422.
"""

from __future__ import annotations

import asyncio
import tempfile
import time

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from research_fsm import JsonFileCheckpointStore, Reply, ResearchAssistant, configure_logging
from research_fsm.engine import InvalidResumeToken, StaleResumeToken, ThreadBusy
from research_fsm.sources import MockDataSource

ERRORS: dict[type[Exception], int] = {  # the first match wins
    InvalidResumeToken: 400,
    ThreadBusy: 409,
    StaleResumeToken: 409,
    ValueError: 422,
}
COMPANIES = {
    "Apple": "Apple Inc.",
    "Tesla": "Tesla, Inc.",
    "Microsoft": "Microsoft Corporation",
    "Amazon": "Amazon.com, Inc.",
    "Google": "Alphabet Inc. (Google)",
}


async def fields(request: Request, *names: str) -> list[str]:
    """The named string fields of the JSON body (ValueError, hence 422, otherwise)."""
    body = await request.json()  # malformed JSON raises a ValueError too
    if not isinstance(body, dict) or not all(isinstance(body.get(n), str) for n in names):
        raise ValueError(f"the body must be a JSON object with string fields {list(names)}")
    return [body[n] for n in names]


def as_json(reply: Reply) -> JSONResponse:
    keys = ("status", "text", "token", "company", "confidence", "thread_id")
    return JSONResponse({key: getattr(reply, key) for key in keys})


async def on_error(request: Request, exc: Exception) -> JSONResponse:
    status = next(code for kind, code in ERRORS.items() if isinstance(exc, kind))
    return JSONResponse({"error": type(exc).__name__, "detail": str(exc)}, status)


def create_app(assistant: ResearchAssistant) -> Starlette:
    async def ask(request: Request) -> JSONResponse:
        thread_id, question = await fields(request, "thread_id", "question")
        return as_json(await assistant.ask(question, thread_id=thread_id))

    async def clarify(request: Request) -> JSONResponse:
        token, answer = await fields(request, "token", "answer")
        return as_json(await assistant.clarify(token, answer))

    routes = [Route("/ask", ask, methods=["POST"]), Route("/clarify", clarify, methods=["POST"])]
    return Starlette(routes=routes, exception_handlers=dict.fromkeys(ERRORS, on_error))


configure_logging()  # warnings only, on stderr
app = create_app(ResearchAssistant.from_env())


async def post(client: httpx.AsyncClient, path: str, **body: str) -> httpx.Response:
    return await client.post(path, json=body)


async def conversation(client: httpx.AsyncClient, n: int, name: str, vague: bool) -> bool:
    """One user: True if the final answer is about ``name``."""
    question = "Tell me about the company" if vague else f"What's happening with {name}?"
    reply = (await post(client, "/ask", thread_id=f"user-{n}", question=question)).json()
    if reply["status"] == "needs_clarification":  # the client keeps the token, sends it back
        reply = (await post(client, "/clarify", token=reply["token"], answer=name)).json()
    return bool(
        reply["status"] == "answered" and reply["company"] == COMPANIES[name] in reply["text"]
    )


async def status(client: httpx.AsyncClient, path: str, **body: str) -> int:
    return (await post(client, path, **body)).status_code


async def errors(client: httpx.AsyncClient) -> dict[str, object]:
    """The HTTP status of requests that go wrong."""
    tesla = {"thread_id": "busy", "question": "Tell me about Tesla"}
    twice = await asyncio.gather(post(client, "/ask", **tesla), post(client, "/ask", **tesla))
    vague = await post(client, "/ask", thread_id="vague", question="Tell me about the company")
    token = vague.json()["token"]
    return {
        "same thread twice at once": sorted(r.status_code for r in twice),
        "edited token": await status(client, "/clarify", token=token + "x", answer="Apple"),
        "token used twice": [
            await status(client, "/clarify", token=token, answer="Apple") for _ in "12"
        ],
        "bad thread id": await status(client, "/ask", thread_id="../x", question="Apple"),
        "missing field": await status(client, "/ask", thread_id="x"),
    }


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        source = MockDataSource(delay=0.2)  # every lookup waits 0.2 s, like a network call
        assistant = ResearchAssistant(source=source, store=JsonFileCheckpointStore(directory))
        transport = httpx.ASGITransport(app=create_app(assistant))
        async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
            users = [(n, list(COMPANIES)[n % 5], n >= 50) for n in range(55)]
            started = time.perf_counter()
            results = await asyncio.gather(*(conversation(client, *user) for user in users))
            took = time.perf_counter() - started
            print(f"served 50 conversations + 5 clarifications concurrently in {took:.2f} s")
            print(f"(each waited 0.2 s on its data source: {55 * 0.2:.0f} s if served one by one)")
            print(f"answered: {sum(results)}/55; each answer named its own company: {all(results)}")
            print("errors come back as JSON with a 4xx status:")
            for label, code in (await errors(client)).items():
                print(f"  {label:<26} -> {code}")


if __name__ == "__main__":
    asyncio.run(main())
