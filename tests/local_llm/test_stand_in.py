"""The local stand-in itself, through the real ``anthropic`` client: it differs from the
Anthropic API where Ollama's and llama.cpp's layers are documented to."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import pytest
from servers.local_llm import LocalLLM

TOOL: Any = {
    "name": "respond",
    "description": "Answer.",
    "input_schema": {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
    },
}
USER: Any = [{"role": "user", "content": "Are you there?"}]


def yes(body: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """Yes, as a value or as text."""
    return {"ok": True} if schema is not None else "Yes."


def client(server: LocalLLM) -> anthropic.AsyncAnthropic:
    """The SDK client as Ollama's docs set it up: any key, the server's address."""
    return anthropic.AsyncAnthropic(api_key="ollama", base_url=server.url, max_retries=0)


async def test_usage_has_no_caching_fields_and_thinking_comes_first() -> None:
    """Usage holds input and output tokens only; a thinking block precedes the answer."""
    with LocalLLM(yes) as server:
        sdk = client(server)
        message = await sdk.messages.create(model="qwen3:4b", max_tokens=64, messages=USER)
        await sdk.close()
    assert ["thinking", "text"] == [block.type for block in message.content]
    assert {"input_tokens", "output_tokens"} == set(message.usage.model_dump(exclude_none=True))


async def test_tool_choice_is_ignored_by_ollama() -> None:
    """A model that writes prose is not forced to call the tool (Ollama ignores tool_choice)."""
    with LocalLLM(yes, mode="text_for_tool") as server:
        sdk = client(server)
        message = await sdk.messages.create(
            model="qwen3:4b",
            max_tokens=64,
            messages=USER,
            tools=[TOOL],
            tool_choice={"type": "tool", "name": "respond"},
        )
        await sdk.close()
    assert ("end_turn", ["thinking", "text"]) == (
        message.stop_reason,
        [block.type for block in message.content],
    )


@pytest.mark.parametrize(("flavour", "status"), [("ollama", 404), ("llamacpp", 200)])
async def test_count_tokens_only_on_llamacpp(flavour: str, status: int) -> None:
    """``/v1/messages/count_tokens``: Ollama has none (404), llama.cpp counts."""
    with LocalLLM(yes, flavour=flavour) as server:  # type: ignore[arg-type]
        async with httpx.AsyncClient() as http:
            reply = await http.post(
                f"{server.url}/v1/messages/count_tokens", json={"model": "m", "messages": USER}
            )
    assert status == reply.status_code


async def test_errors_are_statuses_even_when_streaming() -> None:
    """An unknown model is a 404 ``not_found_error`` before any event, also for a stream."""
    with LocalLLM(yes) as server:
        sdk = client(server)
        with pytest.raises(anthropic.NotFoundError, match="model 'nope' not found"):
            async with sdk.messages.stream(model="nope", max_tokens=64, messages=USER) as stream:
                await stream.get_final_message()
        await sdk.close()
