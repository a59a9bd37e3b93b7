"""What a report cites and shows: no answer from what the question rules out, the heading
path of each citation, addresses in quoted code kept as written, URLs before a closing
quote read as the address retrieved."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_fsm import ResearchAssistant
from research_fsm.deep._answer import parse_question, score_units, units
from research_fsm.deep._grounding import _report_problems
from research_fsm.deep._search import HEADING_PATH
from research_fsm.engine import MemoryCheckpointStore

SERVERS = """# Servers

## Other servers

### Boltd

Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.
Boltd keeps every connection it accepts in one pool of workers.

### Hoverd

Hoverd is another web server that can run Python applications.

```
$ pip install hoverd
```
"""
GADGET = """# Gadgetd

## Running

Run the application with gadgetd, a web server for Python applications:

```shell
$ gadgetd app:main
```

Then open `http://localhost:9000/status` in a browser to see the server's status.
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "servers.md").write_text(SERVERS, encoding="utf-8")
    (folder / "gadgetd.md").write_text(GADGET, encoding="utf-8")
    return folder


@pytest.fixture
def assistant(home: Path) -> ResearchAssistant:
    return ResearchAssistant(store=MemoryCheckpointStore())


def test_a_unit_naming_what_the_question_rules_out_answers_nothing() -> None:
    """ "Other than gadgetd": a sentence that answers with gadgetd scores 0, one about
    another server does not."""
    question = parse_question(
        "Which web servers other than gadgetd can run Python applications?", ["gadgetd"]
    )
    found = units(GADGET) + units(SERVERS)
    scores = dict(
        zip((u.statement for u in found), score_units(question, found, "", {}), strict=True)
    )
    ruled_out = next(s for s in scores if s.startswith("Run the application with gadgetd"))
    other = next(s for s in scores if s.startswith("Hoverd is another"))
    assert 0.0 == scores[ruled_out]
    assert scores[other] > 0.5


async def test_claims_cite_only_what_the_question_asks_about(
    assistant: ResearchAssistant, docs: Path
) -> None:
    report = await assistant.deep_research(
        "Which web servers other than gadgetd can run Python applications?", docs=docs
    )
    assert "completed" == report.status
    assert ["servers.md"] == [s["locator"] for s in report.sources]


async def test_a_citation_shows_its_heading_path_and_lines(
    assistant: ResearchAssistant, docs: Path
) -> None:
    report = await assistant.deep_research("How do I install hoverd?", docs=docs)
    assert HEADING_PATH.join(["Servers", "Other servers", "Hoverd"]) == report.sources[0]["heading"]
    shown = HEADING_PATH.join(["Other servers", "Hoverd"])  # the title is shown already
    assert f"Servers — servers.md § {shown}, lines " in report.markdown


async def test_an_address_in_quoted_code_is_kept_as_written(
    assistant: ResearchAssistant, docs: Path
) -> None:
    """A URL in a code span of the user's own document is no "(link removed)"."""
    report = await assistant.deep_research("How do I see the gadgetd server's status?", docs=docs)
    assert "http://localhost:9000/status" in report.summary
    assert "(link removed)" not in report.markdown


def test_a_url_before_a_closing_quote_is_the_address_retrieved() -> None:
    source = {
        "kind": "file",
        "locator": "a.md",
        "text": "Docs are at https://a.example/.",
    }
    markdown = "- C1 [S1]: “Docs are at https://a.example/.”\n"
    assert [] == _report_problems(markdown, {"S1": source})


def test_a_name_with_digits_is_no_number_and_a_value_needs_one() -> None:
    """ "Which versions": "h11 - HTTP/1.1 support." states no version, "3.8-3.12" does."""
    question = parse_question("Which Python versions does h11 support?", ["h11"])
    found = units("* h11 - HTTP/1.1 support.\n\nh11 supports Python 3 (testing on 3.8-3.12).\n")
    named, versions = score_units(question, found, "", {})
    assert versions > 0.9
    assert named < 0.5


def test_a_sentence_about_another_product_scores_less() -> None:
    """The question names orjson: a changelog line of another package's file is not about
    it, the same line in orjson's own file is."""
    question = parse_question("Which Python versions does orjson support?", ["orjson"])
    found = units("- Add support for Python 3.12.\n")
    (elsewhere,) = score_units(question, found, "httpcore", {})
    (own,) = score_units(question, found, "orjson", {})
    assert elsewhere <= own / 2
