"""Self-tests of the loopback servers, driven by the real ``anthropic`` and ``tavily`` clients."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import anthropic
import httpx
import pytest
import tavily
from tavily.errors import ForbiddenError
from tavily.errors import TimeoutError as TavilyTimeout

from . import FakeAnthropic, FakeTavily
from . import anthropic as claude
from . import tavily as tv

USER = [{"role": "user", "content": "Tell me about Apple"}]


def client(server: FakeAnthropic, **options: Any) -> anthropic.AsyncAnthropic:
    """The real SDK client pointed at the fake server, without SDK retries."""
    return anthropic.AsyncAnthropic(
        api_key="test-key",
        base_url=server.url,
        max_retries=options.pop("max_retries", 0),
        **options,
    )


async def create(server: FakeAnthropic, **options: Any) -> anthropic.types.Message:
    """One non-streaming ``messages.create`` call."""
    return await client(server, **options).messages.create(
        model="claude-test-model", max_tokens=100, messages=USER
    )


async def wait_for(predicate: Any, seconds: float = 5.0) -> None:
    """Poll ``predicate`` until true (fails the test after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


# -- Anthropic: plain messages -----------------------------------------------------


async def test_text_message(anthropic_server: FakeAnthropic) -> None:
    """A text reply arrives as a message with the text, the model and word-count usage."""
    anthropic_server.enqueue(claude.text("Apple makes phones", input_tokens=12))
    reply = await create(anthropic_server)
    actual = (
        reply.content[0].type,
        getattr(reply.content[0], "text", None),
        reply.model,
        reply.stop_reason,
        reply.usage.input_tokens,
        reply.usage.output_tokens,
    )
    assert ("text", "Apple makes phones", "claude-test-model", "end_turn", 12, 3) == actual


async def test_request_is_recorded(anthropic_server: FakeAnthropic) -> None:
    """The server records path, lower-cased headers and the JSON body of each request."""
    await create(anthropic_server)
    request = anthropic_server.requests[0]
    actual = (
        request.path,
        request.headers["authorization"],
        request.body["messages"],
        request.body["max_tokens"],
        "anthropic-version" in request.headers,
    )
    assert ("/v1/messages", "Bearer test-key", USER, 100, True) == actual


async def test_tool_use_message(anthropic_server: FakeAnthropic) -> None:
    """A tool_use reply carries the tool name, its input and stop reason tool_use."""
    anthropic_server.enqueue(claude.tool_use("verdict", {"company": "Apple Inc.", "clear": True}))
    reply = await create(anthropic_server)
    block = reply.content[0]
    assert isinstance(block, anthropic.types.ToolUseBlock)
    actual = (block.name, block.input, block.id.startswith("toolu_"), reply.stop_reason)
    assert ("verdict", {"company": "Apple Inc.", "clear": True}, True, "tool_use") == actual


async def test_json_text_message(anthropic_server: FakeAnthropic) -> None:
    """json_text answers with the JSON document as text."""
    anthropic_server.enqueue(claude.json_text({"is_sufficient": False, "feedback": "more"}))
    reply = await create(anthropic_server)
    text = getattr(reply.content[0], "text", "")
    assert {"is_sufficient": False, "feedback": "more"} == json.loads(text)


async def test_queue_then_default(anthropic_server: FakeAnthropic) -> None:
    """Scripted replies are used in order, then the default text("ok")."""
    anthropic_server.enqueue(claude.text("first"), claude.text("second"))
    texts = [getattr((await create(anthropic_server)).content[0], "text", "") for _ in range(3)]
    assert ["first", "second", "ok"] == texts


async def test_auto_answers_from_the_request(anthropic_server: FakeAnthropic) -> None:
    """An auto function answers by looking at the request, e.g. the forced tool's name."""
    anthropic_server.auto(lambda body: claude.tool_use(body["tool_choice"]["name"], {"x": 1}))
    reply = await client(anthropic_server).messages.create(
        model="m",
        max_tokens=50,
        messages=USER,
        tools=[{"name": "clarity", "description": "d", "input_schema": {"type": "object"}}],
        tool_choice={"type": "tool", "name": "clarity"},
    )
    assert ("clarity", {"x": 1}) == (
        getattr(reply.content[0], "name", None),
        reply.content[0].input,
    )  # type: ignore[union-attr]


async def test_requests_are_counted_per_path(anthropic_server: FakeAnthropic) -> None:
    """Requests are counted per path; count_tokens answers a word count."""
    await create(anthropic_server)
    counted = await client(anthropic_server).messages.count_tokens(
        model="m", messages=[{"role": "user", "content": "one two three four"}]
    )
    expected = {"/v1/messages": 1, "/v1/messages/count_tokens": 1}
    assert (expected, 4, 2) == (
        dict(anthropic_server.counts),
        counted.input_tokens,
        anthropic_server.count(),
    )


# -- Anthropic: streaming ------------------------------------------------------------


async def test_stream_yields_words_and_final_usage(anthropic_server: FakeAnthropic) -> None:
    """messages.stream yields the text word by word and a final message with usage."""
    anthropic_server.enqueue(claude.text("Apple shares rose today", input_tokens=7))
    sdk = client(anthropic_server)
    async with sdk.messages.stream(model="m", max_tokens=100, messages=USER) as stream:
        pieces = [piece async for piece in stream.text_stream]
        final = await stream.get_final_message()
    actual = (
        pieces,
        getattr(final.content[0], "text", None),
        final.stop_reason,
        final.usage.input_tokens,
        final.usage.output_tokens,
    )
    assert (
        ["Apple ", "shares ", "rose ", "today"],
        "Apple shares rose today",
        "end_turn",
        7,
        4,
    ) == actual


async def test_stream_event_sequence(anthropic_server: FakeAnthropic) -> None:
    """The raw SSE events come in the API's order (the SDK drops the ping)."""
    anthropic_server.enqueue(claude.text("one two"))
    events = await client(anthropic_server).messages.create(
        model="m", max_tokens=10, messages=USER, stream=True
    )
    kinds = [event.type async for event in events]
    expected = [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert (expected, True) == (kinds, anthropic_server.requests[0].body["stream"])


async def test_stream_tool_use_accumulates_input(anthropic_server: FakeAnthropic) -> None:
    """A streamed tool_use sends input_json_delta pieces that rebuild the input."""
    tool_input = {"company": "Tesla, Inc.", "intent": "stock", "aliases": ["TSLA", "Tesla"]}
    anthropic_server.enqueue(claude.tool_use("clarity", tool_input))
    async with client(anthropic_server).messages.stream(
        model="m", max_tokens=100, messages=USER
    ) as stream:
        kinds = [event.delta.type async for event in stream if event.type == "content_block_delta"]
        final = await stream.get_final_message()
    assert ("input_json_delta" in kinds, tool_input, "tool_use") == (
        True,
        final.content[0].input,  # type: ignore[union-attr]
        final.stop_reason,
    )


async def test_stream_error_event(anthropic_server: FakeAnthropic) -> None:
    """An ``event: error`` mid-stream raises APIStatusError after the partial text."""
    anthropic_server.enqueue(
        claude.stream_error("overloaded_error", "Overloaded", partial_text="Half an")
    )
    pieces: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with client(anthropic_server).messages.stream(
            model="m", max_tokens=100, messages=USER
        ) as stream:
            async for piece in stream.text_stream:
                pieces.append(piece)
    assert (["Half ", "an"], "overloaded_error") == (pieces, caught.value.body["error"]["type"])  # type: ignore[index]


# -- Anthropic: errors ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "exception"),
    [
        (429, "rate_limit_error", anthropic.RateLimitError),
        (529, "overloaded_error", anthropic.OverloadedError),
        (500, "api_error", anthropic.InternalServerError),
        (401, "authentication_error", anthropic.AuthenticationError),
        (400, "invalid_request_error", anthropic.BadRequestError),
    ],
)
async def test_error_replies_raise_sdk_errors(
    anthropic_server: FakeAnthropic, status: int, error_type: str, exception: type[Exception]
) -> None:
    """Each error reply surfaces as the SDK's exception class with status and error type."""
    anthropic_server.enqueue(claude.error(status, error_type, "nope"))
    with pytest.raises(anthropic.APIStatusError) as caught:
        await create(anthropic_server)
    error = caught.value
    actual = (
        type(error),
        error.status_code,
        error.body["error"]["type"],
        error.body["error"]["message"],
    )  # type: ignore[index]
    assert (exception, status, error_type, "nope") == actual


async def test_retry_after_header_is_sent(anthropic_server: FakeAnthropic) -> None:
    """error(..., retry_after=) sets the retry-after header the SDK reads."""
    anthropic_server.enqueue(claude.error(429, "rate_limit_error", retry_after=2.5))
    with pytest.raises(anthropic.RateLimitError) as caught:
        await create(anthropic_server)
    assert "2.5" == caught.value.response.headers["retry-after"]


async def test_sdk_retries_against_the_server(anthropic_server: FakeAnthropic) -> None:
    """With SDK retries on, a 529 then a text reply succeeds in two requests."""
    anthropic_server.enqueue(claude.error(529, retry_after=0.01), claude.text("fine"))
    reply = await create(anthropic_server, max_retries=1)
    retry_counts = [r.headers["x-stainless-retry-count"] for r in anthropic_server.requests]
    assert ("fine", ["0", "1"]) == (getattr(reply.content[0], "text", None), retry_counts)


async def test_malformed_body_fails_the_call(anthropic_server: FakeAnthropic) -> None:
    """A 200 that is not JSON makes the SDK call fail (the client must treat it as an error)."""
    anthropic_server.enqueue(claude.raw(200, b"<html>proxy error</html>"))
    with pytest.raises(ValueError):
        await create(anthropic_server)


async def test_slow_reply_times_out(anthropic_server: FakeAnthropic) -> None:
    """A reply slower than the client's timeout raises APITimeoutError."""
    anthropic_server.enqueue(claude.delay(30, claude.text("late")))
    with pytest.raises(anthropic.APITimeoutError):
        await create(anthropic_server, timeout=0.2)


async def test_disconnect_is_a_connection_error(anthropic_server: FakeAnthropic) -> None:
    """A dropped connection raises APIConnectionError."""
    anthropic_server.enqueue(claude.disconnect())
    with pytest.raises(anthropic.APIConnectionError) as caught:
        await create(anthropic_server)
    assert anthropic.APIConnectionError is type(caught.value)


async def test_unknown_path_is_not_found(anthropic_server: FakeAnthropic) -> None:
    """Paths other than the Messages API get a 404 not_found_error."""
    with pytest.raises(anthropic.NotFoundError) as caught:
        await client(anthropic_server).models.list()
    assert ("not_found_error", 0) == (caught.value.body["error"]["type"], anthropic_server.pending)  # type: ignore[index]


# -- server lifecycle --------------------------------------------------------------


async def test_request_recorded_before_reply() -> None:
    """A request is recorded while its (slow) reply is still pending."""
    with FakeAnthropic() as server:
        server.enqueue(claude.delay(30, claude.text("late")))
        call = asyncio.create_task(create(server, timeout=10))
        await wait_for(lambda: server.count("/v1/messages") == 1)
        actual = (call.done(), server.requests[0].body["messages"])
        call.cancel()
    assert (False, USER) == actual


async def test_stop_does_not_wait_for_sleeping_handlers() -> None:
    """stop() returns within 2 s although a handler sleeps for 30 s."""
    server = FakeTavily().start()
    server.enqueue(tv.delay(30, tv.empty()))
    search = asyncio.create_task(
        tavily.AsyncTavilyClient(api_key="tvly-test", api_base_url=server.url).search(
            "q", timeout=20
        )
    )
    await wait_for(lambda: server.count() == 1)
    started = time.monotonic()
    await asyncio.to_thread(server.stop)
    elapsed = time.monotonic() - started
    with pytest.raises(httpx.TransportError):
        await search
    assert elapsed < 2.0


def test_servers_pick_free_ports_and_stop_their_threads() -> None:
    """Two servers get distinct loopback ports; stopping one ends its serving thread."""
    with FakeAnthropic() as one, FakeTavily() as two:
        urls = (one.url.startswith("http://127.0.0.1:"), two.url.startswith("http://127.0.0.1:"))
        distinct = one.port != two.port
        threads = [
            t for t in threading.enumerate() if t.name.endswith((f"-{one.port}", f"-{two.port}"))
        ]
    assert ((True, True), True, 2, []) == (
        urls,
        distinct,
        len(threads),
        [t.name for t in threads if t.is_alive()],
    )


# -- Tavily ---------------------------------------------------------------------------


def tavily_client(server: FakeTavily) -> tavily.AsyncTavilyClient:
    """The real Tavily client pointed at the fake server."""
    return tavily.AsyncTavilyClient(api_key="tvly-test", api_base_url=server.url)


async def test_tavily_search_returns_results(tavily_server: FakeTavily) -> None:
    """search() returns the scripted results and answer, the query echoed."""
    item = tv.result("Apple news", "https://example.com/a", "Apple launched a phone.", 0.9)
    tavily_server.enqueue(tv.results([item], answer="Apple launched a phone."))
    reply = await tavily_client(tavily_server).search("Apple latest news", topic="news")
    first = reply["results"][0]
    actual = (reply["query"], reply["answer"], first["title"], first["url"], first["score"])
    assert (
        "Apple latest news",
        "Apple launched a phone.",
        "Apple news",
        "https://example.com/a",
        0.9,
    ) == actual


async def test_tavily_request_shape(tavily_server: FakeTavily) -> None:
    """The server sees the JSON body the client sends and the Bearer key."""
    await tavily_client(tavily_server).search(
        "Apple stock", topic="finance", max_results=3, include_answer=True
    )
    request = tavily_server.requests[0]
    expected = (
        "/search",
        "Bearer tvly-test",
        {"query": "Apple stock", "topic": "finance", "max_results": 3, "include_answer": True},
    )
    assert expected == (request.path, request.headers["authorization"], request.body)


async def test_tavily_empty(tavily_server: FakeTavily) -> None:
    """empty() (also the default) answers no results."""
    reply = await tavily_client(tavily_server).search("nothing")
    assert ([], None) == (reply["results"], reply["answer"])


@pytest.mark.parametrize(
    ("status", "exception"),
    [
        (401, tavily.InvalidAPIKeyError),
        (403, ForbiddenError),
        (429, tavily.UsageLimitExceededError),
        (400, tavily.BadRequestError),
    ],
)
async def test_tavily_errors_raise_sdk_errors(
    tavily_server: FakeTavily, status: int, exception: type[Exception]
) -> None:
    """Tavily's {"detail": {"error": ...}} errors surface as the SDK's exceptions."""
    tavily_server.enqueue(tv.error(status, "Unauthorized: invalid key"))
    with pytest.raises(Exception) as caught:
        await tavily_client(tavily_server).search("q")
    assert (exception, "Unauthorized: invalid key") == (type(caught.value), str(caught.value))


async def test_tavily_server_error(tavily_server: FakeTavily) -> None:
    """A 500 surfaces as httpx.HTTPStatusError with the status."""
    tavily_server.enqueue(tv.error(500, "boom"))
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await tavily_client(tavily_server).search("q")
    assert 500 == caught.value.response.status_code


async def test_tavily_slow_reply_times_out(tavily_server: FakeTavily) -> None:
    """A reply slower than the search timeout raises the SDK's TimeoutError."""
    tavily_server.enqueue(tv.delay(30, tv.empty()))
    with pytest.raises(TavilyTimeout) as caught:
        await tavily_client(tavily_server).search("q", timeout=0.2)
    assert "Request timed out after 0.2 seconds." == str(caught.value)


async def test_tavily_unknown_path(tavily_server: FakeTavily) -> None:
    """Other endpoints get a 404 and do not consume the script."""
    tavily_server.enqueue(tv.empty())
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await tavily_client(tavily_server).crawl("https://example.com")
    assert (404, 1) == (caught.value.response.status_code, tavily_server.pending)
