"""Text in, clean and faithful, as offline deep research answers from it: option names
and shell symbols are single terms, quotes hold the source's characters and nothing a
page only shows (fences, list glyphs, permalink signs), list items are claims of their
own, a man page's NAME line is a statement. ``pages/`` holds pages cut from what Debian's
``dpkg`` (its man page through groff) and ``tig`` (AsciiDoc) packages ship."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from research_fsm import ResearchAssistant
from research_fsm.deep import quote_in
from research_fsm.deep._answer import parse_question, units, with_previous
from research_fsm.deep._text import quote_of, terms
from research_fsm.documents import DocumentIndex
from research_fsm.documents._terms import query_terms
from research_fsm.engine import MemoryCheckpointStore

PAGES = Path(__file__).parent / "pages"
MAN_PAGE = Path(__file__).parents[1] / "documents" / "manpages" / "tig.1.html"
"""tig's AsciiDoc man page: one copy, shared with the documents' man-page tests."""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(PAGES, folder)
    shutil.copy(MAN_PAGE, folder / MAN_PAGE.name)
    return folder


@pytest.fixture
def assistant(home: Path) -> ResearchAssistant:
    return ResearchAssistant(store=MemoryCheckpointStore())


def test_options_and_shell_symbols_are_single_terms() -> None:
    """``--force-all``, ``$@`` and ``$*`` stay whole in the answerer's terms and in the
    index's query; an option keeps its case, a hyphenated word is no option."""
    found = terms("Use --force-all, then $@ or $* and -F; a well-known flag.")
    assert {"--force-all", "$@", "$*", "-F"} <= set(found)
    assert "-known" not in found and "well" in found
    assert parse_question("What does --force-all do?").terms[0] == "--force-all"
    at, star = query_terms("$@"), query_terms("$*")
    assert len(at) == 1 and len(star) == 1 and at != star
    assert query_terms("-f") != query_terms("-F")


async def test_the_index_finds_an_option_only_where_it_is(tmp_path: Path) -> None:
    """A search for ``$@`` does not find the passage about ``$*``, and ``--force-all``
    not the one that only says "force" and "all"."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "at.md").write_text('# At\n\n"$@" expands to each parameter quoted.\n')
    (folder / "star.md").write_text("# Star\n\n$* expands to all parameters as one word.\n")
    (folder / "all.md").write_text("# All\n\nTo force all packages, use --force-depends.\n")
    (folder / "force.md").write_text("# Force\n\nThe --force-all option turns on all.\n")
    index = await DocumentIndex.open(folder, cache_dir=tmp_path / "cache")
    try:
        assert ["at.md"] == [p.path for p in await index.search("$@")]
        assert ["star.md"] == [p.path for p in await index.search("$*")]
        assert ["force.md"] == [p.path for p in await index.search("--force-all")]
        assert {"all.md", "force.md"} == {p.path for p in await index.search("force all")}
    finally:
        await index.aclose()


async def test_an_option_the_manual_lacks_is_refused(
    assistant: ResearchAssistant, docs: Path
) -> None:
    """No neighbouring option's text answers a question about an option that does not
    exist; the option that does exist is answered from its own entry."""
    refused = await assistant.deep_research("What does --force-overwrite-all do?", docs=docs)
    assert "no_sources" == refused.status
    answered = await assistant.deep_research("What does --force-confold do?", docs=docs)
    assert "completed" == answered.status
    assert "--force-confold" in answered.summary or "confold:" in answered.summary


async def test_a_man_page_purpose_line_answers_what_is_it(
    assistant: ResearchAssistant, docs: Path
) -> None:
    """The NAME line ("tig - text-mode interface for Git") is a statement, not a title."""
    report = await assistant.deep_research("What is tig?", docs=docs)
    assert "tig - text-mode interface for Git" in report.summary


def test_html_list_items_are_units_of_their_own() -> None:
    """Lines of HTML text (one per list item) are not run together into one sentence."""
    text = "Views\n\nMain view shows commits\nDiff view shows changes\nBlame view shows authors"
    joined = [u.statement for u in units(text)]
    apart = [u.statement for u in units(text, lines=True)]
    assert 1 == len(joined)
    assert ["Main view shows commits", "Diff view shows changes", "Blame view shows authors"] == (
        apart
    )


def test_a_quote_holds_no_fence_glyph_or_permalink_and_is_verbatim() -> None:
    """The quote of a step with its code leaves the fence lines out, a list item's quote
    its glyph; ``quote_in`` finds both in the source, and a permalink sign never fails one."""
    text = "Intro.\n\nInstall it with:\n\n```\n$ pip install tig\n```\n\n- Run tig in a repository."
    step = next(u for u in units(text) if "Install it" in u.statement)
    quote = quote_of(text, step.start, step.end)
    assert "Install it with:\n\n$ pip install tig" == quote
    assert quote_in(quote, text)
    item = next(u for u in units(text) if "Run tig" in u.statement)
    assert "Run tig in a repository." == quote_of(text, item.start, item.end)
    signed = "sleep(seconds) \u00b6\nWaits for the given number of seconds."
    assert quote_in("sleep(seconds)\nWaits for the given number of seconds.", signed)
    assert not quote_in("sleep(minutes)", signed)


async def test_the_same_text_in_two_files_is_one_source(
    assistant: ResearchAssistant, tmp_path: Path
) -> None:
    """Two copies of one README answer with one source, not two."""
    root = tmp_path / "docs"
    (root / "copy").mkdir(parents=True)
    text = "# Widget\n\nWidget renders JSON logs with the JSONRenderer processor.\n"
    (root / "widget.md").write_text(text, encoding="utf-8")
    (root / "copy" / "widget.md").write_text(text, encoding="utf-8")
    report = await assistant.deep_research("How does widget render JSON logs?", docs=root)
    assert "completed" == report.status
    assert 1 == len(report.sources)


async def test_how_do_i_is_answered_by_the_sentence_that_does_it(
    assistant: ResearchAssistant, tmp_path: Path
) -> None:
    """ "How do I make structlog output JSON logs?" beside structlog's README (its opening
    lines) is answered by "structlog renders JSON logs with the JSONRenderer processor":
    'make' asks for the action after it, 'renders' is 'output' in other words."""
    folder = tmp_path / "docs"
    shutil.copytree(Path(__file__).parent / "structlog", folder)
    report = await assistant.deep_research("How do I make structlog output JSON logs?", docs=folder)
    assert report.summary.startswith("structlog renders JSON logs with the JSONRenderer")


def test_a_claim_that_refers_back_carries_its_subject() -> None:
    """ "This command does not update your branch" is quoted with the sentence before it,
    which says which command; a sentence with its own subject stays alone."""
    text = (
        "tig fetch downloads objects and refs from another repository.\n\n"
        "This command does not update your branch. Your files stay as they are."
    )
    found = units(text)
    joined = with_previous(found, 1, text)
    assert joined.statement.startswith("tig fetch downloads objects")
    assert joined.statement.endswith("This command does not update your branch.")
    assert text[joined.start : joined.end].startswith("tig fetch")
    assert with_previous(found, 2, text) is found[2]


REFERENCE = """3.162. mail_check_stats

Type: boolean
Default: no

When set, mutt will periodically calculate message statistics.

3.163. mail_check

Type: number
Default: 5

This variable configures how often (in seconds) mutt should look for new mail. Also see the $timeout variable.

Sending mail

The first sentence of a section states its own subject.
"""


def test_a_sentence_under_a_reference_entry_carries_its_name_and_attributes() -> None:
    """The sentences that open a reference entry (its name, then "Type:"/"Default:" lines)
    are claimed with them, quoted from the name on; a sentence under a plain title, or
    later in the entry, stays alone."""
    found = units(REFERENCE, lines=True)
    claims = {u.statement: with_previous(found, i, REFERENCE) for i, u in enumerate(found)}
    checked = claims[
        "This variable configures how often (in seconds) mutt should look for new mail."
    ]
    assert checked.statement == (
        "3.163. mail_check — Type: number — Default: 5 — This variable configures how often "
        "(in seconds) mutt should look for new mail."
    )
    assert quote_in(quote_of(REFERENCE, checked.start, checked.end), REFERENCE)
    assert REFERENCE[checked.start :].startswith("3.163. mail_check\n")
    stats = claims["When set, mutt will periodically calculate message statistics."]
    assert stats.statement.startswith("3.162. mail_check_stats — Type: boolean — Default: no — ")
    for alone in (
        "Also see the $timeout variable.",
        "The first sentence of a section states its own subject.",
    ):
        assert claims[alone] is next(u for u in found if u.statement == alone)


async def test_what_is_the_default_is_answered_with_the_value(
    tmp_path: Path, assistant: ResearchAssistant
) -> None:
    """ "How often does mutt look for new mail, and what's the default?" leads with the
    entry's sentence and its "Default: 5", not with a "This variable ..." on its own."""
    folder = tmp_path / "docs"
    folder.mkdir()
    page = "".join(f"<p>{block}</p>" for block in REFERENCE.split("\n\n"))
    (folder / "reference.html").write_text(f"<html><body>{page}</body></html>")
    report = await assistant.deep_research(
        "How often does mutt look for new mail, and what's the default?", docs=folder
    )
    assert "Default: 5" in report.summary and "how often (in seconds)" in report.summary
    assert not report.summary.startswith("This")


def test_a_definition_table_gives_one_claim_per_row() -> None:
    """The rows of a Markdown table after "...are described below:" are units (term —
    meaning); the rule under the header is none."""
    text = (
        "The options are described below:\n\n| Option | Meaning |\n|---|---|\n"
        "| `--force` | Overwrite existing files without asking. |\n"
        "| `--quiet` | Print nothing but errors. |\n"
    )
    statements = [u.statement for u in units(text)]
    assert "--force — Overwrite existing files without asking." in statements
    assert "--quiet — Print nothing but errors." in statements
    assert not any("---" in statement for statement in statements)


def test_what_does_it_do_asks_for_a_definition() -> None:
    """ "What does X do?" and "What is the X?" want the sentence that defines X; "what is
    the default ..." wants a value."""
    assert "define" == parse_question("What does --force-confold do?").kind
    assert "define" == parse_question("What is the JSONRenderer?").kind
    assert "value" == parse_question("What is the default port?").kind


def test_a_definition_list_entry_names_its_term() -> None:
    """Under a term that is an option ("-O: optimize your code", as the rustc book's
    HTML gives it), the sentence is claimed with its term, quoted from the term on."""
    text = (
        "-g: include debug information\n\nA synonym for -C debuginfo=2.\n\n"
        "-O: optimize your code\n\nA synonym for -C opt-level=2."
    )
    found = units(text, lines=True)
    optimize = next(u for u in found if "opt-level" in u.statement)
    assert "-O: optimize your code — A synonym for -C opt-level=2." == optimize.statement
    assert text[optimize.start : optimize.end].startswith("-O: optimize your code")
    assert "-O" in optimize.prose


def test_a_definition_list_term_on_its_own_line_joins_its_description() -> None:
    """ "TIG_EDITOR" above its description (an AsciiDoc man page's ``<dt>``/``<dd>``, one
    line each) is claimed with it, and no shorter copy of the claim is kept."""
    text = (
        "TIG_NO_DISPLAY\nOpen Tig without rendering anything to the terminal.\n"
        "TIG_EDITOR\nThe editor command to use when visiting files."
    )
    statements = [u.statement for u in units(text, lines=True)]
    assert [
        "TIG_NO_DISPLAY — Open Tig without rendering anything to the terminal.",
        "TIG_EDITOR — The editor command to use when visiting files.",
    ] == statements


def test_a_short_term_above_its_sentence_is_claimed_with_it() -> None:
    """A command of a definition list ("aptitude update", as aptitude's Japanese manual
    lists it) is claimed with its description, "このコマンドは…" included; a list's
    items, each ending its sentence, stay items of their own."""
    text = (
        "aptitude update\nこのコマンドは、パッケージ一覧を更新します。\n"
        "aptitude safe-upgrade\nThis command will upgrade as many packages as it can."
    )
    assert [
        "aptitude update — このコマンドは、パッケージ一覧を更新します。",
        "aptitude safe-upgrade — This command will upgrade as many packages as it can.",
    ] == [u.statement for u in units(text, lines=True)]
    listed = "Main view shows commits.\nDiff view shows changes.\nBlame view shows authors."
    assert 3 == len(units(listed, lines=True))
