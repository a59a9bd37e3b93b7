"""The Markdown writer keeps data inert: no live link, image, autolink break-out or HTML."""

from __future__ import annotations

from markdown_it import MarkdownIt

from research_fsm.common.writer import drop_urls, md_escape, md_url


def render(markdown: str) -> str:
    """CommonMark with raw HTML allowed, as most Markdown viewers show a file."""
    return MarkdownIt("commonmark").render(markdown)


def test_md_escape_leaves_no_link_nor_image() -> None:
    """``[x](javascript:...)`` and ``![x](http://...)`` in data stay text."""
    html = render(md_escape("see [x](javascript:alert(1)) and ![b](http://beacon.example/b.gif)"))
    expected = "<p>see [x](javascript:alert(1)) and ![b](http://beacon.example/b.gif)</p>\n"
    assert expected == html


def test_md_url_percent_encodes_what_could_end_the_autolink() -> None:
    """A crafted URL cannot close ``<...>`` and open a ``<script>`` element."""
    url = 'https://x.example/a><script>alert(1)</script>"'
    expected = '<p><a href="https://x.example/a%3E%3Cscript%3Ealert(1)%3C/script%3E%22">'
    assert render(md_url(url)).startswith(expected)
    assert "<script" not in render(md_url(url))


def test_md_url_of_another_scheme_is_text() -> None:
    """``javascript:`` is written as text, not as a link."""
    assert "<p>javascript:alert(1)</p>\n" == render(md_url("javascript:alert(1)"))


def test_drop_urls_keeps_only_the_retrieved() -> None:
    """Addresses not retrieved become ``(link removed)``."""
    text = "a https://kept.example/x, b http://beacon.example/p.gif."
    expected = "a https://kept.example/x, b (link removed)."
    assert expected == drop_urls(text, {"https://kept.example/x"})
