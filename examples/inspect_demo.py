"""Threads to look at in the inspector: a graph with a subgraph, a fan-out and a pause.

    python examples/inspect_demo.py threads/          # runs three threads into ./threads
    research-fsm inspect --store threads/ --graph examples.inspect_demo:graph

``draft`` is a subgraph (outline, then write, on a child thread of its own); ``facts`` and
``tone`` check the draft in parallel; ``review`` pauses for a person's verdict; ``publish``
fails on a topic with ``??`` in it. Thread ``article-1`` waits at the review, ``article-2``
is approved and done, ``article-3`` was rejected once and rewritten, ``article-4`` failed
at ``publish`` (fix its topic in the inspector and continue it).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    CheckpointStore,
    NodeFailed,
    StateGraph,
    Suspend,
    append,
)
from research_fsm.stores import JsonFileCheckpointStore


class Article(BaseModel):
    topic: str = ""
    outline: list[str] = []
    draft: str = ""
    checks: Annotated[list[str], append] = []
    verdict: str | None = None
    revisions: int = 0


async def outline(state: Article) -> dict[str, Any]:
    return {"outline": [f"What {state.topic} is", "Why it matters", "What to do next"]}


async def write(state: Article) -> dict[str, Any]:
    parts = [
        f"{heading}: {state.topic} explained, part {i + 1}."
        for i, heading in enumerate(state.outline)
    ]
    return {"draft": " ".join(parts), "revisions": state.revisions + 1}


async def facts(state: Article) -> dict[str, Any]:
    return {"checks": [f"facts: {len(state.outline)} sections sourced"]}


async def tone(state: Article) -> dict[str, Any]:
    return {"checks": ["tone: plain"]}


class Review:
    """Asks a person to approve the draft (``"approve"``, or anything else to rewrite)."""

    async def run(self, state: Article, ctx: Any) -> Suspend:
        return Suspend({"question": "Approve this draft?", "draft": state.draft[:200]})

    async def resume(self, state: Article, value: Any, ctx: Any) -> dict[str, Any]:
        return {"verdict": str(value)}


def after_review(state: Article) -> str:
    return "done" if state.verdict == "approve" else "again"


async def publish(state: Article) -> dict[str, Any]:
    if "??" in state.topic:
        raise ValueError(f"cannot publish: the topic {state.topic!r} is unfinished")
    return {"checks": ["published"]}


writer = StateGraph(Article)
writer.add_node("outline", outline).add_node("write", write)
writer.add_edge(START, "outline").add_edge("outline", "write").add_edge("write", END)

article = StateGraph(Article)
article.add_node("draft", writer.compile())
article.add_node("facts", facts).add_node("tone", tone)
article.add_node("review", Review()).add_node("publish", publish)
article.add_edge(START, "draft")
article.add_edge("draft", ["facts", "tone"])
article.add_edge(["facts", "tone"], "review")
article.add_router("review", after_review, {"done": "publish", "again": "draft"})
article.add_edge("publish", END)

graph = article.compile()
"""Compiled without a store: the inspector runs it on the store it opens."""


async def seed(store: CheckpointStore) -> None:
    """Four threads: one waiting at the review, two done, one failed at ``publish``."""
    app = graph.on_store(store)
    await app.run({"topic": "tide pools"}, thread_id="article-1")
    first = await app.run({"topic": "sourdough"}, thread_id="article-2")
    assert first.suspension is not None
    await app.resume(first.suspension.token, "approve")
    again = await app.run({"topic": "night trains"}, thread_id="article-3")
    assert again.suspension is not None
    second = await app.resume(again.suspension.token, "shorter, please")
    assert second.suspension is not None
    await app.resume(second.suspension.token, "approve")
    broken = await app.run({"topic": "quantum ?? computing"}, thread_id="article-4")
    assert broken.suspension is not None
    try:
        await app.resume(broken.suspension.token, "approve")
    except NodeFailed as failed:
        assert failed.node == "publish"
    else:
        raise AssertionError("publish should have refused the topic with ??")


def main() -> None:
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        print("usage: python examples/inspect_demo.py [FOLDER]  (default: ./threads)")
        raise SystemExit(0 if sys.argv[1] in ("-h", "--help") else 2)
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "threads")
    asyncio.run(seed(JsonFileCheckpointStore(folder)))
    print(f"four threads in {folder}/: article-1 waits for review, article-2 and 3 are done,")
    print("article-4 failed at publish")
    print(
        f"look at them: research-fsm inspect --store {folder} --graph examples.inspect_demo:graph"
    )


if __name__ == "__main__":
    main()
