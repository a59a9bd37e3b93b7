"""Nine LangGraph programs of the shapes people write (human in the loop, input
validation, map-reduce, a ReAct tool loop, subgraphs, Command handoffs, breakpoints
and time travel, streaming, a multi-turn chat), written for this suite. Each
``program()`` runs the LangGraph original and returns what it printed as plain data;
``python -m tests.migration.record`` stores that in ``fixtures/<name>.json`` (LangGraph
is in the ``bench`` extra, not the test environment). The ports are in ``test_*.py``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Send, interrupt


def _cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


# -- 1. approve or reject ----------------------------------------------------------


class Plan(TypedDict, total=False):
    task: str
    plan: str
    outcome: str


def approve_or_reject() -> dict[str, Any]:
    def propose(state: Plan) -> dict[str, Any]:
        return {"plan": f"steps for {state['task']}"}

    def review(state: Plan) -> Command[Literal["carry_out", "drop"]]:
        verdict = interrupt({"question": "Approve this plan?", "plan": state["plan"]})
        return Command(goto="carry_out" if verdict == "approve" else "drop")

    def carry_out(state: Plan) -> dict[str, Any]:
        return {"outcome": f"did {state['plan']}"}

    def drop(state: Plan) -> dict[str, Any]:
        return {"outcome": "dropped"}

    builder = StateGraph(Plan)
    for name, fn in [
        ("propose", propose),
        ("review", review),
        ("carry_out", carry_out),
        ("drop", drop),
    ]:
        builder.add_node(name, fn)
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "review")
    builder.add_edge("carry_out", END)
    builder.add_edge("drop", END)
    app = builder.compile(checkpointer=InMemorySaver())
    out: dict[str, Any] = {}
    for thread, verdict in [("yes", "approve"), ("no", "reject")]:
        first = app.invoke({"task": "move house"}, _cfg(thread))
        out[f"{thread}_question"] = first["__interrupt__"][0].value
        final = app.invoke(Command(resume=verdict), _cfg(thread))
        out[f"{thread}_final"] = final
    return out


# -- 2. validate the input ---------------------------------------------------------


class Person(TypedDict, total=False):
    age: int
    asked: Annotated[list[str], operator.add]


def validate_input() -> dict[str, Any]:
    def ask_age(state: Person) -> dict[str, Any]:
        question = "How old are you?"
        while True:
            answer = interrupt(question)
            if isinstance(answer, int) and 0 < answer < 150:
                return {"age": answer, "asked": [question]}
            question = f"{answer!r} is not an age; how old are you?"

    builder = StateGraph(Person)
    builder.add_node("ask_age", ask_age)
    builder.add_edge(START, "ask_age")
    builder.add_edge("ask_age", END)
    app = builder.compile(checkpointer=InMemorySaver())
    questions = []
    result = app.invoke({"asked": []}, _cfg("v"))
    for answer in ["forty", -3, 41]:
        questions.append(result["__interrupt__"][0].value)
        result = app.invoke(Command(resume=answer), _cfg("v"))
    history = [list(s.next) for s in app.get_state_history(_cfg("v"))]
    return {"questions": questions, "final": result, "history_next": history}


# -- 3. map-reduce with Send ---------------------------------------------------------


class Topics(TypedDict, total=False):
    topic: str
    subjects: list[str]
    notes: Annotated[list[str], operator.add]
    summary: list[str]


def map_reduce() -> dict[str, Any]:
    calls: list[str] = []

    def split(state: Topics) -> dict[str, Any]:
        return {"subjects": [f"{state['topic']} {n}" for n in (1, 2, 3)]}

    def each(state: Topics) -> list[Send]:
        return [Send("note", {"subject": s}) for s in state["subjects"]]

    def note(state: dict[str, Any]) -> dict[str, Any]:
        calls.append("note")
        return {"notes": [f"note on {state['subject']}"]}

    def gather(state: Topics) -> dict[str, Any]:
        calls.append("gather")
        return {"summary": [f"summary of {len(state['notes'])} notes"]}

    builder = StateGraph(Topics)
    builder.add_node("split", split)
    builder.add_node("note", note)
    builder.add_node("gather", gather)
    builder.add_edge(START, "split")
    builder.add_conditional_edges("split", each, ["note"])
    builder.add_edge("note", "gather")
    builder.add_edge("gather", END)
    final = builder.compile().invoke({"topic": "tea", "notes": []})
    return {"final": {**final, "notes": sorted(final["notes"])}, "calls": calls}


# -- 4. a ReAct loop with tools --------------------------------------------------------


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


def _scripted_model(turns: list[dict[str, Any]]) -> Callable[[MessagesState], dict[str, Any]]:
    def model(state: MessagesState) -> dict[str, Any]:
        asked = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        turn = turns[asked]
        return {"messages": [AIMessage(content=turn["text"], tool_calls=turn.get("calls", []))]}

    return model


REACT_TURNS: list[dict[str, Any]] = [
    {
        "text": "",
        "calls": [
            {"id": "c1", "name": "multiply", "args": {"a": 6, "b": 7}},
            {"id": "c2", "name": "divide", "args": {"a": 1, "b": 0}},
        ],
    },
    {"text": "", "calls": [{"id": "c3", "name": "divide", "args": {"a": 42, "b": 4}}]},
    {"text": "6 x 7 = 42, and 42 / 4 = 10.5; 1 / 0 has no value."},
]


def _shown(message: BaseMessage) -> dict[str, Any]:
    shown: dict[str, Any] = {"type": message.type, "content": message.content}
    if isinstance(message, AIMessage) and message.tool_calls:
        shown["calls"] = [c["name"] for c in message.tool_calls]
    if isinstance(message, ToolMessage):
        shown["status"] = message.status
        if message.status == "error":
            shown["content"] = "error"  # LangGraph's wording is its own
    return shown


def react_tools() -> dict[str, Any]:
    builder = StateGraph(MessagesState)
    builder.add_node("agent", _scripted_model(REACT_TURNS))
    builder.add_node("tools", ToolNode([multiply, divide], handle_tool_errors=True))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    final = builder.compile().invoke({"messages": [("user", "What is 6 x 7, 1 / 0 and then / 4?")]})
    return {"messages": [_shown(m) for m in final["messages"]]}


# -- 5. subgraphs in parallel ------------------------------------------------------------


class Logs(TypedDict, total=False):
    logs: Annotated[list[str], operator.add]
    report: str


def subgraphs() -> dict[str, Any]:
    def checker(prefix: str) -> Any:
        def read(state: Logs) -> dict[str, Any]:
            return {"logs": [f"{prefix} read"]}

        def judge(state: Logs) -> dict[str, Any]:
            return {"logs": [f"{prefix} judged {len(state['logs'])}"]}

        child = StateGraph(Logs)
        child.add_node("read", read)
        child.add_node("judge", judge)
        child.add_edge(START, "read")
        child.add_edge("read", "judge")
        child.add_edge("judge", END)
        return child.compile()

    def report(state: Logs) -> dict[str, Any]:
        return {"report": f"{len(state['logs'])} lines"}

    builder = StateGraph(Logs)
    builder.add_node("errors", checker("errors"))
    builder.add_node("latency", checker("latency"))
    builder.add_node("report", report)
    builder.add_edge(START, "errors")
    builder.add_edge(START, "latency")
    builder.add_edge("errors", "report")
    builder.add_edge("latency", "report")
    builder.add_edge("report", END)
    final = builder.compile().invoke({"logs": []})
    return {"final": {**final, "logs": sorted(final["logs"])}}


# -- 6. Command handoffs between agents ---------------------------------------------------


class Desk(TypedDict, total=False):
    request: str
    trail: Annotated[list[str], operator.add]


def handoffs() -> dict[str, Any]:
    def triage(state: Desk) -> Command[Literal["billing", "tech", "__end__"]]:
        if len(state["trail"]) >= 3:
            return Command(goto=END, update={"trail": ["triage: done"]})
        target = "billing" if "refund" in state["request"] else "tech"
        return Command(goto=target, update={"trail": [f"triage -> {target}"]})

    def billing(state: Desk) -> Command[Literal["triage"]]:
        return Command(goto="triage", update={"trail": ["billing: refunded"]})

    def tech(state: Desk) -> Command[Literal["billing", "triage"]]:
        return Command(goto="billing", update={"trail": ["tech: needs a refund"]})

    builder = StateGraph(Desk)
    builder.add_node("triage", triage)
    builder.add_node("billing", billing)
    builder.add_node("tech", tech)
    builder.add_edge(START, "triage")
    app = builder.compile()
    return {
        "refund": app.invoke({"request": "refund please", "trail": []}),
        "broken": app.invoke({"request": "it is broken", "trail": []}),
    }


# -- 7. breakpoints and time travel -------------------------------------------------------


class Trip(TypedDict, total=False):
    city: str
    steps: Annotated[list[str], operator.add]


def time_travel() -> dict[str, Any]:
    def plan(state: Trip) -> dict[str, Any]:
        return {"steps": [f"plan {state['city']}"]}

    def book(state: Trip) -> dict[str, Any]:
        return {"steps": [f"book {state['city']}"]}

    def confirm(state: Trip) -> dict[str, Any]:
        return {"steps": ["confirm"]}

    builder = StateGraph(Trip)
    builder.add_node("plan", plan)
    builder.add_node("book", book)
    builder.add_node("confirm", confirm)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "book")
    builder.add_edge("book", "confirm")
    builder.add_edge("confirm", END)
    app = builder.compile(checkpointer=InMemorySaver(), interrupt_before=["book"])
    cfg = _cfg("trip")
    paused = app.invoke({"city": "Oslo", "steps": []}, cfg)
    nxt = app.get_state(cfg).next
    done = app.invoke(None, cfg)
    history = list(app.get_state_history(cfg))
    before_book = history[-3]  # the tutorial's index: the checkpoint paused before book
    edited = app.update_state(before_book.config, {"city": "Rome"})
    again = app.invoke(None, edited)
    return {
        "paused": paused,
        "next": list(nxt),
        "done": done,
        "history_next": [list(s.next) for s in history],
        "picked": {"next": list(before_book.next), "values": before_book.values},
        "again": again,
    }


# -- 8. streaming -------------------------------------------------------------------------


class Count(TypedDict, total=False):
    n: int
    seen: Annotated[list[str], operator.add]


def streaming() -> dict[str, Any]:
    def step(name: str) -> Any:
        def node(state: Count) -> dict[str, Any]:
            return {"n": state["n"] + 1, "seen": [name]}

        return node

    builder = StateGraph(Count)
    for name in ("one", "two", "three"):
        builder.add_node(name, step(name))
    builder.add_edge(START, "one")
    builder.add_edge("one", "two")
    builder.add_edge("two", "three")
    builder.add_edge("three", END)
    app = builder.compile()
    return {
        "updates": list(app.stream({"n": 0, "seen": []}, stream_mode="updates")),
        "values": list(app.stream({"n": 0, "seen": []}, stream_mode="values")),
    }


# -- 9. a multi-turn chat -----------------------------------------------------------------


def chat() -> dict[str, Any]:
    def bot(state: MessagesState) -> dict[str, Any]:
        heard = state["messages"][-1].content
        return {"messages": [AIMessage(content=f"you said {heard!r} ({len(state['messages'])})")]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    app = builder.compile(checkpointer=InMemorySaver())
    cfg = _cfg("chat")
    for said in ["hello", "how are you", "bye"]:
        app.invoke({"messages": [{"role": "user", "content": said}]}, cfg)
    first = app.get_state(cfg).values["messages"][0]
    app.update_state(cfg, {"messages": [{"role": "user", "content": "HELLO", "id": first.id}]})
    final = app.get_state(cfg).values["messages"]
    return {"messages": [(m.type, m.content) for m in final]}


PROGRAMS: dict[str, Callable[[], dict[str, Any]]] = {
    "approve_or_reject": approve_or_reject,
    "validate_input": validate_input,
    "map_reduce": map_reduce,
    "react_tools": react_tools,
    "subgraphs": subgraphs,
    "handoffs": handoffs,
    "time_travel": time_travel,
    "streaming": streaming,
    "chat": chat,
}
