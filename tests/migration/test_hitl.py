"""Human in the loop: approve-or-reject and validate-the-input, ported from
``langgraph_programs`` word for word (``interrupt`` becomes ``Suspend`` and the
node is called again with ``ctx.resume_value``, as LangGraph re-runs it) and in this
engine's idiom (a node object whose ``resume`` gets the answer)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    Command,
    MemoryCheckpointStore,
    NodeContext,
    StateGraph,
    Suspend,
    add,
)

from .conftest import recorded


class Plan(BaseModel):
    task: str = ""
    plan: str = ""
    outcome: str = ""


async def propose(state: Plan) -> dict[str, Any]:
    return {"plan": f"steps for {state.task}"}


async def carry_out(state: Plan) -> dict[str, Any]:
    return {"outcome": f"did {state.plan}"}


async def drop(state: Plan) -> dict[str, Any]:
    return {"outcome": "dropped"}


def word_for_word_review() -> Any:
    async def review(
        state: Plan, ctx: NodeContext
    ) -> Command[Literal["carry_out", "drop"]] | Suspend:
        if not ctx.resuming:  # interrupt(...)
            return Suspend({"question": "Approve this plan?", "plan": state.plan})
        verdict = ctx.resume_value
        return Command(goto="carry_out" if verdict == "approve" else "drop")

    return review


class Review:
    """The idiom: the question, then the answer in ``resume`` (nothing runs twice)."""

    async def run(self, state: Plan, ctx: NodeContext) -> Suspend:
        return Suspend({"question": "Approve this plan?", "plan": state.plan})

    async def resume(self, state: Plan, verdict: Any, ctx: NodeContext) -> Command:
        return Command(goto="carry_out" if verdict == "approve" else "drop")


async def approve_or_reject(review: object, **destinations: Any) -> dict[str, Any]:
    builder = StateGraph(Plan)
    builder.add_node("propose", propose)
    builder.add_node("review", review, **destinations)
    builder.add_node("carry_out", carry_out).add_node("drop", drop)
    builder.add_edge(START, "propose").add_edge("propose", "review")
    builder.add_edge("carry_out", END).add_edge("drop", END)
    app = builder.compile(store=MemoryCheckpointStore())
    out: dict[str, Any] = {}
    for thread, verdict in [("yes", "approve"), ("no", "reject")]:
        first = await app.run({"task": "move house"}, thread_id=thread)
        assert first.suspension is not None
        out[f"{thread}_question"] = first.suspension.payload
        final = await app.resume(first.suspension.token, verdict)
        out[f"{thread}_final"] = final.state.model_dump()
    return out


async def test_approve_or_reject_word_for_word() -> None:
    """`interrupt` as Suspend + ctx.resume_value, `-> Command[Literal[...]]` as the
    destinations: LangGraph's questions and final states."""
    assert await approve_or_reject(word_for_word_review()) == recorded("approve_or_reject")


async def test_approve_or_reject_idiomatic() -> None:
    """A node object with `resume`, destinations declared: the same results."""
    got = await approve_or_reject(Review(), destinations=["carry_out", "drop"])
    assert got == recorded("approve_or_reject")


class Person(BaseModel):
    age: int = 0
    asked: Annotated[list[str], add] = []


def question_for(answer: object) -> str | None:
    """The next question for ``answer`` (``None``: it is a valid age)."""
    if isinstance(answer, int) and 0 < answer < 150:
        return None
    return f"{answer!r} is not an age; how old are you?"


async def ask_age_word_for_word(state: Person, ctx: NodeContext) -> dict[str, Any] | Suspend:
    # LangGraph's loop of interrupts replays every answer; here the node is called
    # again with the last one, so the question it last asked comes from that answer.
    if not ctx.resuming:
        return Suspend("How old are you?")
    question = question_for(ctx.resume_value)
    if question is not None:
        return Suspend(question)
    return {"age": ctx.resume_value}  # the question it answered is not at hand


class AskAge:
    """The idiom: the question asked last is kept on the node's suspension payload."""

    async def run(self, state: Person, ctx: NodeContext) -> Suspend:
        return Suspend("How old are you?")

    async def resume(self, state: Person, answer: Any, ctx: NodeContext) -> Any:
        question = question_for(answer)
        if question is not None:
            self.last = question
            return Suspend(question)
        return {"age": answer, "asked": [getattr(self, "last", "How old are you?")]}


async def validate(node: object) -> dict[str, Any]:
    builder = StateGraph(Person).add_node("ask_age", node)
    builder.add_edge(START, "ask_age").add_edge("ask_age", END)
    app = builder.compile(store=MemoryCheckpointStore())
    questions = []
    result = await app.run({"asked": []}, thread_id="v")
    for answer in ["forty", -3, 41]:
        assert result.suspension is not None
        questions.append(result.suspension.payload)
        result = await app.resume(result.suspension.token, answer)
    return {"questions": questions, "final": result.state.model_dump()}


async def test_validate_input_idiomatic() -> None:
    """Each invalid answer asks again with the reason; the valid one is stored with
    the question it answered: LangGraph's questions and final state."""
    assert await validate(AskAge()) == recorded("validate_input")


async def test_validate_input_word_for_word_asks_the_same_questions() -> None:
    """Word for word, the questions asked are LangGraph's; the loop's local
    `question` is not kept between calls (the node starts from the top with the last
    answer only), which is the one thing the port had to change (docs/langgraph.md)."""
    got = await validate(ask_age_word_for_word)
    assert got["questions"] == recorded("validate_input")["questions"]
    assert got["final"]["age"] == recorded("validate_input")["final"]["age"]
