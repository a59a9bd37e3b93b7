"""Markdown for the page: a tree of allow-listed elements, links only to parseable http(s)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("markdown_it", reason="the web extra is not installed")

from research_fsm.web._markdown import ATTRIBUTES, TAGS, markdown_tree


def walk(nodes: list[Any]) -> list[dict[str, Any]]:
    """Every element of a tree, depth first."""
    found = []
    for node in nodes:
        if isinstance(node, dict):
            found.append(node)
            found += walk(node["c"])
    return found


def test_a_table_and_a_list_become_elements() -> None:
    """Pipes and dashes become table, th, td, ul and li elements."""
    tree = markdown_tree("| | A | B |\n|---|---|--:|\n| Revenue | 1 | 2 |\n\n- one\n- two\n")
    tags = [node["t"] for node in walk(tree)]
    assert ["table", "thead", "tr", "th", "th", "th", "tbody", "tr", "td", "td", "td"] == tags[:11]
    assert ["ul", "li", "li"] == tags[11:]
    assert {"class": "align-right"} == walk(tree)[5]["a"]


def test_html_images_and_other_schemes_stay_text() -> None:
    """Raw HTML, images and javascript:/data: links are text; nothing outside the allow-list."""
    source = (
        "<script>alert(1)</script> <img src=x onerror=alert(2)> ![b](http://beacon.example/b.gif)"
        " [x](javascript:alert(3)) [d](data:text/html,hi) <javascript:alert(4)>"
    )
    tree = markdown_tree(source)
    elements = walk(tree)
    assert all(node["t"] in TAGS for node in elements)
    assert all(set(node["a"]) <= ATTRIBUTES.get(node["t"], set()) for node in elements)
    hrefs = [node["a"]["href"] for node in elements if "href" in node["a"]]
    assert ["http://beacon.example/b.gif"] == hrefs  # the image is a plain link, not loaded
    assert "<script>alert(1)</script>" in json.dumps(tree)  # as text


def test_unparseable_urls_are_text() -> None:
    """Links a browser cannot parse are not links."""
    tree = markdown_tree(
        "[a](https://x.example:99999/) [b](http://%zz/) [c](http://1.2.3.4.5/) <http://[>"
    )
    assert [] == [node for node in walk(tree) if node["t"] == "a"]


def test_citations_link_to_their_sources() -> None:
    """``[S1]`` links to S1's URL; a source without a web address is a marked span."""
    tree = markdown_tree("Java 17 [S1][S2].", {"S1": "https://a.example/", "S2": "docs/a.md"})
    (paragraph,) = tree
    expected = [
        "Java 17 ",
        {"t": "a", "a": {"class": "cite", "href": "https://a.example/"}, "c": ["[S1]"]},
        {"t": "span", "a": {"class": "cite"}, "c": ["[S2]"]},
        ".",
    ]
    assert expected == paragraph["c"]


def test_an_answer_keeps_its_line_breaks_a_report_joins_them() -> None:
    """In an answer (``breaks=True``) a line break inside a paragraph is a ``br``, so
    lines never run together on the page; in a report it joins the lines, as CommonMark says."""
    text = "Country: United States\nEmployees: 166,000"
    answer = markdown_tree(text, breaks=True)
    assert ["p", "br"] == [node["t"] for node in walk(answer)]
    assert ["Country: United States", "Employees: 166,000"] == [
        child for child in answer[0]["c"] if isinstance(child, str)
    ]
    assert ["p"] == [node["t"] for node in walk(markdown_tree(text))]
