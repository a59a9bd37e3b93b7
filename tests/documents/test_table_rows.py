"""A table row is one line: its cells joined by ``" | "``, whatever blocks the cells wrap
their text in (AsciiDoc's ``<p class="table">``, Sphinx's ``<p>``, DocBook's ``<div>``)."""

from __future__ import annotations

import pytest

from research_fsm.documents._html import html_text

ROWS = [
    (
        "<td><p>/</p></td><td><p>Search the view. Opens a prompt.</p></td>",
        "/ | Search the view. Opens a prompt.",
    ),
    (
        "<td><div><p>n</p></div></td><td><p>Find next.</p><p>Wraps around.</p></td>",
        "n | Find next. Wraps around.",
    ),
    ("<td>q<br/>Q</td><td>Quit.</td>", "q Q | Quit."),
    ("<td><code>search</code></td><td>Search the view</td>", "search | Search the view"),
]


@pytest.mark.parametrize(("cells", "line"), ROWS)
def test_a_row_whose_cells_wrap_paragraphs_stays_one_line(cells: str, line: str) -> None:
    """The key and its action are on one line, so a passage and a quote hold both."""
    page = html_text(f"<html><body><h2>Keys</h2><table><tr>{cells}</tr></table></body></html>")
    assert line in page.text.splitlines()


def test_rows_stay_apart_and_lists_outside_tables_keep_one_item_a_line() -> None:
    """Only cells join their blocks: two rows are two lines, list items stay one a line."""
    page = html_text(
        "<html><body><table><tr><td><p>a</p></td><td><p>first</p></td></tr>"
        "<tr><td><p>b</p></td><td><p>second</p></td></tr></table>"
        "<ul><li><p>one</p></li><li><p>two</p></li></ul></body></html>"
    )
    lines = page.text.splitlines()
    assert "a | first" in lines and "b | second" in lines
    assert "one" in lines and "two" in lines
