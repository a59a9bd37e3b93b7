"""Human in the loop: approve-or-reject and validate-the-input, ported from
``langgraph_programs`` word for word (``interrupt`` is this engine's ``interrupt``:
the node runs again from its top on resume and each ``interrupt`` call gets its
answer back, a loop of them too, as LangGraph's) and in this engine's idiom (a node
object whose ``resume`` gets the answer, so nothing before the question runs twice)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel

from research_fsm.engine import (
    END,
    START,
    Command,
    MemoryCheckpointStore,
    NodeContext,
    Replace,
    StateGraph,
    Suspend,
    add,
    interrupt,
)

from .conftest import as_langgraph_positions, recorded


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
    async def review(state: Plan) -> Command[Literal["carry_out", "drop"]]:
        verdict = interrupt({"question": "Approve this plan?", "plan": state.plan})
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
    """`interrupt` as it is, `-> Command[Literal[...]]` as the destinations:
    LangGraph's questions and final states."""
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


async def ask_age_word_for_word(state: Person) -> dict[str, Any]:
    question = "How old are you?"
    while True:
        answer = interrupt(question)
        if isinstance(answer, int) and 0 < answer < 150:
            return {"age": answer, "asked": [question]}
        question = f"{answer!r} is not an age; how old are you?"


class AskAge:
    """The idiom: ``resume`` gets each answer once (nothing runs again); the question
    it asks is kept in the state (``Replace``: the one being answered), not on the
    node object, which every thread shares."""

    async def run(self, state: Person, ctx: NodeContext) -> Suspend:
        return ask("How old are you?")

    async def resume(self, state: Person, answer: Any, ctx: NodeContext) -> Any:
        question = question_for(answer)
        if question is not None:
            return ask(question)
        return {"age": answer}


def ask(question: str) -> Suspend:
    """Ask ``question``, keeping it as the one being answered."""
    return Suspend(question, update={"asked": Replace([question])})


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
    states = as_langgraph_positions([s async for s in app.history("v")])
    history = [[s.next] if s.next else [] for s in states]
    return {"questions": questions, "final": result.state.model_dump(), "history_next": history}


def but_the_input_checkpoint(want: dict[str, Any]) -> dict[str, Any]:
    """LangGraph's record less its history's oldest, the input checkpoint (none here)."""
    return {**want, "history_next": want["history_next"][:-1]}


async def test_validate_input_idiomatic() -> None:
    """Each invalid answer asks again with the reason; the valid one is stored with
    the question it answered: LangGraph's questions, final state and history (by the
    translation of positions)."""
    assert await validate(AskAge()) == but_the_input_checkpoint(recorded("validate_input"))


async def test_validate_input_word_for_word() -> None:
    """LangGraph's loop of `interrupt` calls as it is: each resume runs the node
    again, replaying the earlier answers, so the question it asked last is the one
    stored: LangGraph's questions and final state exactly, and its history by the
    translation of positions (each question is a checkpoint here, LangGraph's one)."""
    got = await validate(ask_age_word_for_word)
    assert got == but_the_input_checkpoint(recorded("validate_input"))
