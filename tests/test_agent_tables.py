"""Each app describes its agents once, in its agent table beside its graph: every node
has a row, the LLM calls carry the row's budget, and no layer below the apps names them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import research_fsm
from research_fsm import ResearchAssistant
from research_fsm.common.agents import AgentSpec, AgentTable
from research_fsm.deep import AGENTS as DEEP_AGENTS
from research_fsm.engine import MemoryCheckpointStore, NodeStarted
from research_fsm.llm import Agent
from research_fsm.qa import AGENTS as QA_AGENTS
from research_fsm.qa import Progress
from research_fsm.reports import AGENTS as REPORT_AGENTS
from research_fsm.sources import MockDataSource

PACKAGE = Path(research_fsm.__file__).parent
APPS = {"qa": QA_AGENTS, "reports": REPORT_AGENTS, "deep": DEEP_AGENTS}


async def test_every_node_of_every_app_graph_has_a_row_in_its_apps_table() -> None:
    """The Q&A, report and deep-research graphs' nodes are each in their app's table."""
    assistant = ResearchAssistant(source=MockDataSource(), store=MemoryCheckpointStore())
    graphs = {
        "qa": await assistant.qa.graph(),
        "reports": await assistant.reports.graph(),
        "deep": await assistant.deep.graph(),
    }
    missing = {app: sorted(set(graph.plan.nodes) - set(APPS[app])) for app, graph in graphs.items()}
    assert {"qa": [], "reports": [], "deep": []} == missing
    assert all(len(graph.plan.nodes) >= 6 for graph in graphs.values())


@pytest.mark.parametrize("app", sorted(APPS))
def test_every_row_has_both_labels_and_a_sane_budget(app: str) -> None:
    """A row has an English and a Japanese label, and a budget of at most 16,384 tokens."""
    for spec in APPS[app].values():
        assert spec.label.strip() and spec.label_ja.strip(), spec.name
        assert spec.label != spec.label_ja, spec.name
        assert spec.max_tokens is None or 256 <= spec.max_tokens <= 16_384, spec.name
        assert isinstance(spec.llm, Agent) and spec.llm == spec.name
        assert spec.llm.max_tokens == spec.max_tokens


def _llm_calls(path: Path) -> list[tuple[int, ast.expr | None]]:
    """Each ``.structured(...)``/``.generate(...)`` call in ``path`` and its ``agent=``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("structured", "generate")
        ):
            agent = next((k.value for k in node.keywords if k.arg == "agent"), None)
            found.append((node.lineno, agent))
    return found


@pytest.mark.parametrize("app", sorted(APPS))
def test_every_llm_call_of_an_app_passes_its_tables_agent(app: str) -> None:
    """Every LLM call in an app passes ``AGENTS[name].llm`` (the name with its budget),
    never a bare name the client would have to look up."""
    calls = {
        f"{path.relative_to(PACKAGE)}:{line}": ast.unparse(agent) if agent else None
        for path in sorted((PACKAGE / app).rglob("*.py"))
        for line, agent in _llm_calls(path)
    }
    assert len(calls) >= 2
    wrong = {
        where: agent
        for where, agent in calls.items()
        if agent is None or not (agent.startswith("AGENTS[") and agent.endswith("].llm"))
    }
    assert {} == wrong


def _string_literals(folder: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.setdefault(node.value, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_no_layer_outside_the_apps_names_their_agents() -> None:
    """llm/, common/, web/ and cli/ hold no string naming an app's agent with an
    underscore or a role word only agents have (``clarity``, ``financial``...)."""
    names = {name for table in APPS.values() for name in table}
    distinctive = {n for n in names if "_" in n} | {
        "clarity",
        "validator",
        "financial",
        "synthesizer",
        "researcher",
    }
    named = {
        name: sorted(where)
        for folder in ("llm", "common", "web", "cli")
        for name, where in _string_literals(PACKAGE / folder).items()
        if name in distinctive
    }
    assert {} == named


def test_a_node_without_a_row_gets_its_words_as_its_progress_line() -> None:
    """A node added to the Q&A graph without a row streams ``Progress`` with its name's
    words (no KeyError, as the hard-coded labels once raised)."""
    assistant = ResearchAssistant(source=MockDataSource(), store=MemoryCheckpointStore())
    event = NodeStarted(node="fact_checker", step=3)
    assert Progress("fact_checker", "fact checker") == assistant.qa.translate(event, {})
    known = assistant.qa.translate(NodeStarted(node="research", step=1), {})
    assert Progress("research", "Researching the company...") == known


def test_labels_follow_the_runs_language_and_fill_in_the_company() -> None:
    """A row's label is in the run's language, naming the company once it is known
    (the trailing dot of ``Inc.`` dropped before ``...``)."""
    run = {"language": "ja", "detected_company": "トヨタ自動車"}
    assistant = ResearchAssistant(source=MockDataSource(), store=MemoryCheckpointStore())
    japanese = assistant.qa.translate(NodeStarted(node="research", step=1), run)
    assert Progress("research", "トヨタ自動車を調査しています...") == japanese
    spec = AgentSpec(name="x", label="Reading {company}...", label_ja="{company}を読む")
    assert "Reading Apple Inc..." == spec.label_in("en", {"company": "Apple Inc."})
    assert "Reading the company..." == spec.label_in("en")


def test_a_table_refuses_an_agent_listed_twice() -> None:
    """Two rows with one name are a mistake the table names."""
    row = AgentSpec(name="twice", label="a", label_ja="あ")
    with pytest.raises(ValueError, match="'twice' is listed twice"):
        AgentTable(row, row)


_COUNTS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_SAYS_A_COUNT = re.compile(rf"\b({'|'.join(_COUNTS)}|\d+) agents\b", re.IGNORECASE)


def agents_sentence(table: AgentTable) -> str:
    """How the docs name an app's agents, derived from its table: ``Six agents (Clarity,
    ..., Error Recovery)``."""
    titles = ", ".join(name.replace("_", " ").title() for name in table)
    return f"{_COUNTS[len(table)].capitalize()} agents ({titles})"


def test_the_docs_count_the_qa_agents_once_as_the_table_does() -> None:
    """docs/assistant.md names the Q&A agents as ``research_fsm.qa.AGENTS`` lists them, and
    no other page of the README or docs says how many agents there are."""
    root = PACKAGE.parent
    assert agents_sentence(QA_AGENTS) in " ".join(
        (root / "docs" / "assistant.md").read_text(encoding="utf-8").split()
    )
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    counted = [
        f"{page.relative_to(root)}: {match.group()}"
        for page in pages
        if page.name != "assistant.md"
        for match in _SAYS_A_COUNT.finditer(page.read_text(encoding="utf-8"))
    ]
    assert [] == counted


def test_the_sentence_follows_the_table() -> None:
    """A table with one more agent reads "Seven agents (..., Error Recovery, Fact Check)"."""
    grown = AgentTable(*QA_AGENTS.values(), AgentSpec(name="fact_check", label="x", label_ja="x"))
    assert agents_sentence(grown).startswith("Seven agents (Clarity, ")
    assert agents_sentence(grown).endswith(", Error Recovery, Fact Check)")
