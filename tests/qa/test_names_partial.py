"""Lower-case, partial and ambiguous company names, as a person means them: a unique
match answers, several matches ask which (with the candidates), none says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.llm import ScriptedLLM
from research_fsm.reports import Report
from research_fsm.sources import DirectorySource

DEUTSCHE = [
    "Deutsche Bank",
    "Deutsche Börse",
    "Deutsche Post",
    "Deutsche Telekom",
    "Deutsche Beteiligungs AG",
    "Deutsche EuroShop",
    "Deutsche Pfandbriefbank",
]
MITSUBISHI = [
    "Mitsubishi Corporation",
    "Mitsubishi Motors",
    "Mitsubishi UFJ Financial Group",
    "Mitsubishi Chemical Holdings",
    "Mitsubishi Electric",
    "Mitsubishi Heavy Industries",
    "Mitsubishi Materials",
    "Mitsubishi Estate",
]


@pytest.fixture
def offline() -> ResearchAssistant:
    """The offline assistant over the bundled directory, in memory."""
    return ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())


@pytest.mark.parametrize(
    ("question", "companies"),
    [
        ("nvidia vs amd", ["Nvidia", "AMD"]),
        ("how does nvidia compare to intel?", ["Nvidia", "Intel"]),
        ("intel vs amd", ["Intel", "AMD"]),
        ("nvidia vs AMD", ["Nvidia", "AMD"]),
    ],
)
async def test_comparisons_typed_in_lower_case(
    offline: ResearchAssistant, question: str, companies: list[str]
) -> None:
    """A comparison typed in lower case compares both companies."""
    reply = await offline.ask(question, thread_id="t")
    assert ("answered", companies) == (reply.status, [reply.company, *reply.compared])


@pytest.mark.parametrize(
    ("question", "company"),
    [
        ("tell me about intel", "Intel"),
        ("Tell me about Delta", "Delta Air Lines"),
        ("tell me about delta", "Delta Air Lines"),
        ("Tell me about Mitsubishi Electric", "Mitsubishi Electric"),
        ("whats up with nvidea", "Nvidia"),
        ("How does Toyota rank among companies in Japan?", "Toyota"),
        ("Tell me about Apple and its American rivals", "Apple Inc."),
    ],
)
async def test_one_match_answers(offline: ResearchAssistant, question: str, company: str) -> None:
    """A name that fits one company, a word that is also its name or the start of its
    name, is answered about it."""
    reply = await offline.ask(question, thread_id="t")
    assert ("answered", company) == (reply.status, reply.company)


@pytest.mark.parametrize(
    ("question", "choices"),
    [
        ("Tell me about Deutsche", DEUTSCHE),
        ("deutsche", DEUTSCHE),
        ("Tell me about Mitsubishi", MITSUBISHI),
        ("三菱について教えて", MITSUBISHI),
    ],
)
async def test_several_matches_ask_which(
    offline: ResearchAssistant, question: str, choices: list[str]
) -> None:
    """A name that fits several companies asks which, listing them as choices."""
    reply = await offline.ask(question, thread_id="t")
    listed = [name for name in choices if name in reply.text]
    assert ("needs_clarification", choices, choices) == (
        reply.status,
        reply.state.clarification_choices,
        listed,
    )


async def test_answering_which_mitsubishi(offline: ResearchAssistant) -> None:
    """Answering "which Mitsubishi?" with a full name researches that company."""
    first = await offline.ask("Tell me about Mitsubishi", thread_id="t")
    assert first.token is not None
    reply = await offline.clarify(first.token, "Mitsubishi Heavy Industries")
    assert ("answered", "Mitsubishi Heavy Industries") == (reply.status, reply.company)


@pytest.mark.parametrize(("name", "choices"), [("Deutsche", DEUTSCHE), ("Mitsubishi", MITSUBISHI)])
async def test_report_on_an_ambiguous_name_asks_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, choices: list[str]
) -> None:
    """A report on "Deutsche" or "Mitsubishi" asks which company, listing them all."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path))
    offline = ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())
    report = await offline.report(name)
    assert ("needs_clarification", choices) == (report.status, report.choices)


async def test_report_on_a_partial_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report on "Delta" is about Delta Air Lines, the one company it fits."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path))
    offline = ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())
    report = await offline.report("Delta")
    assert ("completed", "Delta Air Lines") == (report.status, report.company)


@pytest.mark.parametrize(
    ("question", "answer", "company"),
    [
        ("Tell me about Mitsubishi", "heavy industries", "Mitsubishi Heavy Industries"),
        ("Tell me about Deutsche", "the bank", "Deutsche Bank"),
    ],
)
async def test_answering_which_one_by_part_of_its_name(
    offline: ResearchAssistant, question: str, answer: str, company: str
) -> None:
    """ "Which one?" is answered by the words that tell the offered companies apart."""
    first = await offline.ask(question, thread_id="t")
    assert first.token is not None
    reply = await offline.clarify(first.token, answer)
    assert ("answered", company) == (reply.status, reply.company)


async def test_report_which_one_by_part_of_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report on "Mitsubishi" answered with "electric" is about Mitsubishi Electric."""
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path))
    offline = ResearchAssistant(source=DirectorySource(), store=MemoryCheckpointStore())
    first = await offline.report("Mitsubishi")
    events = [event async for event in offline.continue_report(first.thread_id, answer="electric")]
    report = events[-1]
    assert isinstance(report, Report)
    assert ("completed", "Mitsubishi Electric") == (report.status, report.company)


async def test_llm_guess_of_an_ambiguous_name_asks_which() -> None:
    """With an LLM that guesses "Mitsubishi Corporation" for "Mitsubishi", the assistant
    still asks which of the eight, listing them."""
    llm = ScriptedLLM(
        {"clarity": [{"is_clear": True, "detected_company": "Mitsubishi Corporation"}]}
    )
    assistant = ResearchAssistant(llm=llm, source=DirectorySource(), store=MemoryCheckpointStore())
    reply = await assistant.ask("Tell me about Mitsubishi", thread_id="t")
    assert ("needs_clarification", MITSUBISHI) == (
        reply.status,
        reply.state.clarification_choices,
    )


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        (
            "tell me about zenvia",
            '"zenvia" is not in the offline directory of about 1,800 companies',
        ),
        ("compare apple vs zork", 'I couldn\'t find "zork" in my sources'),
    ],
)
async def test_unknown_lower_case_name_says_not_found(
    offline: ResearchAssistant, question: str, sentence: str
) -> None:
    """A lower-case name no company has is answered "not found", not asked back nor
    silently dropped from a comparison."""
    reply = await offline.ask(question, thread_id="t")
    assert ("answered", True) == (reply.status, sentence in reply.text)
