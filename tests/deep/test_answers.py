"""Offline deep research answers the question: the best passage's words first (a step with
its command), passages ranked for the question rather than taken in text order, an honest
"the documents do not answer it" with the closest sources, citations numbered in order of
first use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from research_fsm import ResearchAssistant
from research_fsm.deep import grounding_problems
from research_fsm.deep._answer import clean, parse_question, units
from research_fsm.deep._cite import renumbered
from research_fsm.deep._model import (
    Claim,
    ClaimCheck,
    DeepSource,
    DeepState,
    Draft,
    QuotedFact,
    Verification,
)
from research_fsm.deep._rules import _lead
from research_fsm.engine import MemoryCheckpointStore

WIDGET = """# Widgetlib

Widgetlib is a small HTTP client library for Python. It has a command line client and
supports both HTTP/1.1 and HTTP/2.

## Features

* Connection pooling and keep-alive.
* Strict timeouts everywhere.
* Fully type annotated.

## Installation

Install with pip:

```shell
$ pip install widgetlib
```

Or, to include the optional HTTP/2 support, use:

```shell
$ pip install widgetlib[http2]
```

Widgetlib requires Python 3.9+.
"""
GADGET = """# Gadgetd

Gadgetd is a web server for Python applications. It supports HTTP/1.1 and WebSockets.

## Running

Start the server for the application in app.py:

```shell
$ gadgetd app:main --port 9000
```

The server listens on port 9000 by default when no port is given.
"""
NOTES = """# Team notes

We met on Tuesday to talk about the office move. Lunch will be served at noon and the
new kitchen opens next week. Parking permits are handed out at the front desk.
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "widgetlib.md").write_text(WIDGET, encoding="utf-8")
    (folder / "gadgetd.md").write_text(GADGET, encoding="utf-8")
    (folder / "notes.md").write_text(NOTES, encoding="utf-8")
    return folder


@pytest.fixture
def assistant(home: Path) -> ResearchAssistant:
    return ResearchAssistant(store=MemoryCheckpointStore())


def test_a_step_keeps_the_command_that_follows_its_colon() -> None:
    """ "..., use:" and the code line after it are one unit, quoted verbatim."""
    found = units(WIDGET)
    step = next(u for u in found if "HTTP/2 support, use:" in u.statement)
    assert "pip install widgetlib[http2]" in step.statement
    assert step.code
    quote = WIDGET[step.start : step.end]
    assert quote.startswith("Or, to include") and quote.endswith("$ pip install widgetlib[http2]")


def test_a_prompt_line_ends_the_step_it_is_the_command_of() -> None:
    """A PDF's code line ("$ ./bootstrap") with no blank line around it is the command of
    the sentence before it, not run into the sentence after it ("This will:")."""
    text = (
        "Groff uses its bootstrap script. When compiling from the git\n"
        "repository, you should first invoke this script:\n$ ./bootstrap\nThis will:\n"
        "• Clone the gnulib repository as a git submodule.\n"
    )
    step = next(u for u in units(text) if "first invoke" in u.statement)
    assert step.statement.endswith("\n./bootstrap") or step.statement.endswith("\n$ ./bootstrap")
    assert step.code
    assert text[step.start : step.end].endswith("$ ./bootstrap")


def test_identifiers_and_link_text_survive_cleaning() -> None:
    """Underscores of identifiers stay; link targets and emphasis marks go."""
    text = "Call `__init__()` on **snake_case** names, see [the guide](https://x.example/g)."
    assert "Call __init__() on snake_case names, see the guide." == clean(text)


def test_a_question_knows_what_it_asks() -> None:
    """Kinds, fillers dropped, versioned names whole, exclusions left out."""
    howto = parse_question("How do I install widgetlib with HTTP/2 support?", ["widgetlib"])
    assert ("howto", {"widgetlib"}) == (howto.kind, set(howto.named))
    assert "http/2" in howto.terms and "i" not in howto.terms and "2" not in howto.terms
    compare = parse_question("Compare widgetlib and gadgetd", ["widgetlib", "gadgetd"])
    assert ("compare", 2) == (compare.kind, len(compare.sides))
    other = parse_question("Which servers other than gadgetd run apps?", ["gadgetd"])
    assert "gadgetd" not in other.terms


async def test_how_do_i_is_answered_with_the_command(
    assistant: ResearchAssistant, docs: Path
) -> None:
    """The summary opens with the step and its command, from the passage that has it; the
    command is a code block of the report."""
    report = await assistant.deep_research(
        "How do I install widgetlib with HTTP/2 support?", docs=docs
    )
    assert "completed" == report.status
    first, command = report.summary.split(" [S1]")[0], report.summary.split("\n")[1]
    assert "to include the optional HTTP/2 support, use:" in first
    assert "$ pip install widgetlib[http2]" == command
    assert "```\n$ pip install widgetlib[http2]\n```" in report.markdown
    assert "widgetlib.md" == report.sources[0]["locator"]


async def test_the_answer_is_ranked_not_taken_in_text_order(
    assistant: ResearchAssistant, docs: Path
) -> None:
    """The value asked for comes first, though other sentences of the file come before it."""
    report = await assistant.deep_research("What Python version does widgetlib require?", docs=docs)
    assert report.summary.startswith("Widgetlib requires Python 3.9+.")


async def test_a_question_the_documents_do_not_answer_is_refused(
    assistant: ResearchAssistant, docs: Path
) -> None:
    """A plausible question about something the folder never covers: no claims, the
    closest sources listed as under the bar (never as "not about it"), nothing cited."""
    report = await assistant.deep_research(
        "What is the default port of the Redis server?", docs=docs
    )
    assert "no_sources" == report.status
    assert ("", [], []) == (report.summary, report.key_points, report.sources)
    assert "do not answer" in report.markdown
    assert (
        "under the bar for an answer" in report.markdown and "not about it" not in report.markdown
    )
    assert "[S" not in report.markdown.split("## Methodology")[0]
    assert report.folder is not None
    assert [] == json.loads((report.folder / "sources.json").read_text(encoding="utf-8"))


async def test_citations_agree_everywhere(assistant: ResearchAssistant, docs: Path) -> None:
    """Numbered in order of first use with no gaps; Sources list, sources.json and the
    ResearchReport agree; the session is grounded."""
    report = await assistant.deep_research(
        "How do I start the gadgetd server for app.py?", docs=docs
    )
    assert report.folder is not None
    body = report.markdown.split("## Methodology")[0]
    used = list(dict.fromkeys(part.split("]")[0] for part in body.split("[S")[1:]))
    assert [str(n) for n in range(1, len(used) + 1)] == used
    listed = json.loads((report.folder / "sources.json").read_text(encoding="utf-8"))
    assert [f"S{n}" for n in range(1, len(used) + 1)] == [s["id"] for s in listed]
    assert listed == report.sources
    sources_section = report.markdown.split("## Sources")[1].split("## Verification")[0]
    assert [f"S{n}" for n in range(1, len(used) + 1)] == [
        line.split("]")[0].lstrip("- [") for line in sources_section.split("\n") if "[S" in line
    ]
    assert [] == grounding_problems(report.folder)


def _source(sid: str) -> DeepSource:
    return DeepSource(id=sid, kind="file", title=sid, locator=f"{sid}.md", text=f"text of {sid}")


def test_renumbering_follows_first_use() -> None:
    """Sources cited S3 then S1 become S1 then S2; the uncited one comes last; every
    reference follows."""
    claims = [
        Claim(id="C1", section="summary", text="a", sources=["S3"]),
        Claim(id="C2", section="key_points", text="b", sources=["S1", "S3"]),
    ]
    checks = [
        ClaimCheck(claim="C1", text="a", sources=["S3"], supported=True, source="S3"),
        ClaimCheck(claim="C2", text="b", sources=["S1", "S3"], supported=True, source="S1"),
    ]
    state = DeepState(
        topic="t",
        sources=[_source("S1"), _source("S2"), _source("S3")],
        draft=Draft(claims=claims),
        verifications=[Verification(round=1, checks=checks, threshold=0.8)],
    )
    new = renumbered(state)
    assert ["S1", "S2", "S3"] == [s.id for s in new.sources]
    assert ["S3.md", "S1.md", "S2.md"] == [s.locator for s in new.sources]
    assert new.draft is not None
    assert [["S1"], ["S2", "S1"]] == [c.sources for c in new.draft.claims]
    assert ["S1", "S2"] == [c.source for c in new.verifications[0].checks]


ERROR_PAGE = """<html><head><title>{code} - Error codes index</title></head><body>
<nav class="sidebar"><ol><li><a href="E0133.html">E0133</a></li></ol></nav>
<main><h1 id="error-code-{code}">Error code {code}</h1>
<p>{meaning}</p>
<p>Erroneous code example:</p>
<pre><code>{example}</code></pre>
<p>{remedy}</p>
<p>See the unsafe section of the Book for more details.</p>
</main></body></html>
"""


@pytest.fixture
def error_pages(tmp_path: Path) -> Path:
    """HTML pages shaped like the Rust compiler's error index: a heading naming the
    code, its meaning, a code example, how to fix it."""
    folder = tmp_path / "errors"
    folder.mkdir()
    pages = {
        "E0133": (
            "Unsafe code was used outside of an unsafe block.",
            "fn main() { f(); // error: call to unsafe function }",
            "Wrapping the call in an unsafe block makes it compile.",
        ),
        "E0499": (
            "A variable was borrowed as mutable more than once.",
            "let mut i = 0; let mut x = &amp;mut i; let mut a = &amp;mut i; // error",
            "Keep one mutable reference at a time, or use a RefCell.",
        ),
    }
    for code, (meaning, example, remedy) in pages.items():
        page = ERROR_PAGE.format(code=code, meaning=meaning, example=example, remedy=remedy)
        (folder / f"{code}.html").write_text(page, encoding="utf-8")
    return folder


def test_what_does_it_mean_asks_for_a_definition() -> None:
    """ "What does X mean" and "What is X" ask what X is; "mean" and "fix" are the
    question's form, not terms an answer must hold."""
    define = parse_question("What does error E0133 mean and how do I fix it?", ["e0133"])
    assert "define" == define.kind
    assert {"error", "e0133"} == set(define.terms)
    assert "define" == parse_question("What is E0499?").kind
    assert "define" == parse_question("What causes error E0106?").kind
    assert "value" == parse_question("What is the default port of gadgetd?").kind


def test_a_section_title_is_no_statement() -> None:
    """A paragraph of a few words without a sentence end (an HTML heading) is not a
    unit; the sentence after it opens its section."""
    text = (
        "Error code E0133\n\nUnsafe code was used outside of an unsafe block.\n\n"
        "Calling functions marked unsafe needs one too."
    )
    found = units(text)
    assert [
        "Unsafe code was used outside of an unsafe block.",
        "Calling functions marked unsafe needs one too.",
    ] == [u.statement for u in found]
    assert [True, False] == [u.opens_section for u in found]


async def test_what_an_error_code_means_is_answered_by_its_definition(
    assistant: ResearchAssistant, error_pages: Path
) -> None:
    """The summary opens with the sentence that defines the code, not its code example
    nor its title; an unknown code is refused."""
    report = await assistant.deep_research("What does error E0133 mean?", docs=error_pages)
    assert report.summary.startswith("Unsafe code was used outside of an unsafe block. [S1]")
    assert "E0133.html" == report.sources[0]["locator"]
    fix = await assistant.deep_research("How do I fix error E0499?", docs=error_pages)
    assert "E0499.html" == fix.sources[0]["locator"]
    unknown = await assistant.deep_research("What is error E0999?", docs=error_pages)
    assert "no_sources" == unknown.status


def _ranked(*facts: tuple[str, float]) -> list[tuple[QuotedFact, str]]:
    """Facts (statement, score), best first, each from source S1."""
    return [
        (QuotedFact(kind="finding", statement=s, quote=s, score=score), "S1") for s, score in facts
    ]


@pytest.mark.parametrize(
    ("question", "facts", "lead"),
    [
        (
            "How do I tell gnuplot my data columns are separated by commas?",
            [
                ("This creates a plot of the sum of the data.", 0.80),
                ("The same result comes from set datafile separator `comma`.", 0.76),
            ],
            1,
        ),
        (
            "Which file holds the keys apt trusts?",
            [
                ("To trust an archive, fetch the key that signs its index.", 0.80),
                ("The keys apt trusts are listed in /etc/apt/trusted.gpg for apt.", 0.75),
            ],
            1,
        ),
        (
            "How do I reset links to their normal colour in mom?",
            [
                ("The colour of links is set with", 0.80),
                ("The default colour is restored by calling PDF_LINK_COLOR alone.", 0.74),
            ],
            1,
        ),
        (
            "How do I tell gnuplot my data columns are separated by commas?",
            [
                ("This creates a plot of the sum of the data.", 0.80),
                ("Use set datafile separator `comma` for commas.", 0.60),
            ],
            0,
        ),
        (
            "What's the first step when building groff from a git checkout?",
            [
                ("You should first invoke this script:\n$ ./bootstrap\nThis will:", 0.80),
                ("Groff uses the gnulib bootstrap script.", 0.79),
            ],
            0,
        ),
        (
            "What is a datafile?",
            [
                ("A datafile holds the points to plot, one per line.", 0.80),
                ("Use `plot 'file'` to read one.", 0.79),
            ],
            0,
        ),
    ],
)
def test_the_lead_is_the_near_best_fact_shaped_for_the_question(
    question: str, facts: list[tuple[str, float]], lead: int
) -> None:
    """Among facts scoring near the best, "how do I" leads with a command, "which" with a
    value (a path), and no lead-in without its end leads; a shaped fact far below the best,
    or a definition question's best statement, leaves the best fact first."""
    assert lead == _lead(parse_question(question), _ranked(*facts))
