"""A folder of documentation pages as Sphinx, MkDocs and GitHub render them (generated,
deterministic): navigation bars, side bars with a table of contents, breadcrumbs,
footers with "Previous / Next" links around the page's content, whose prose is the
docstrings of the standard library's modules and code blocks highlighted the way
Pygments writes them. ``make_pages(folder, 500)`` writes 500 of them (~40 KB each)."""

from __future__ import annotations

import html
import importlib
import inspect
import random
from pathlib import Path

__all__ = ["make_pages"]

_MODULES = [
    "abc",
    "argparse",
    "ast",
    "asyncio",
    "base64",
    "bisect",
    "calendar",
    "collections",
    "configparser",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "enum",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "getopt",
    "gettext",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "imaplib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "lzma",
    "mailbox",
    "mimetypes",
    "operator",
    "optparse",
    "os",
    "pathlib",
    "pickle",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "pprint",
    "queue",
    "quopri",
    "random",
    "re",
    "reprlib",
    "sched",
    "secrets",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "smtplib",
    "socket",
    "sqlite3",
    "ssl",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "timeit",
    "tokenize",
    "trace",
    "traceback",
    "types",
    "typing",
    "unittest",
    "urllib",
    "uuid",
    "warnings",
    "wave",
    "weakref",
    "zipfile",
    "zipimport",
    "zlib",
]


def _docstrings() -> list[tuple[str, str, str]]:
    """(module, name, docstring) of the standard library's public functions and classes."""
    found: list[tuple[str, str, str]] = []
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for attr in sorted(vars(module)):
            if attr.startswith("_"):
                continue
            value = getattr(module, attr)
            doc = inspect.getdoc(value) if callable(value) else None
            if doc and len(doc) > 80:
                found.append((name, attr, doc))
    return found


def _code(module: str, attr: str) -> str:
    span = '<span class="{}">{}</span>'
    lines = [
        f"{span.format('o', '&gt;&gt;&gt;')} {span.format('kn', 'import')} "
        f"{span.format('nn', module)}",
        f"{span.format('o', '&gt;&gt;&gt;')} {span.format('n', 'result')} "
        f"{span.format('o', '=')} {span.format('n', module)}{span.format('o', '.')}"
        f"{span.format('n', attr)}{span.format('p', '(')}"
        f"{span.format('s1', '&#39;https://example.org/data&#39;')}{span.format('p', ')')}",
    ]
    return '<div class="highlight"><pre><span></span>' + "\n".join(lines) + "\n</pre></div>"


def _body(rng: random.Random, docs: list[tuple[str, str, str]], title: str) -> str:
    parts = [f'<h1>{html.escape(title)}<a class="headerlink" href="#top">¶</a></h1>']
    size = 0
    while size < 14_000:
        module, attr, doc = rng.choice(docs)
        paragraphs = [p for p in doc.split("\n\n") if p.strip()]
        parts.append(
            f'<section id="{module}-{attr}"><h2><code class="docutils literal"><span class="pre">'
            f'{module}.{attr}</span></code><a class="headerlink" href="#{module}-{attr}">¶</a>'
            "</h2>"
        )
        for paragraph in paragraphs[:4]:
            parts.append(f"<p>{html.escape(paragraph)}</p>")
            size += len(paragraph)
        if rng.random() < 0.5:
            parts.append(_code(module, attr))
        if rng.random() < 0.3:
            parts.append(
                '<ul class="simple">'
                + "".join(f"<li><p>{html.escape(p[:120])}</p></li>" for p in paragraphs[:3])
                + "</ul>"
            )
        parts.append("</section>")
    return "\n".join(parts)


def _toc(rng: random.Random, titles: list[str]) -> str:
    links = "".join(
        f'<li class="toctree-l1"><a class="reference internal" href="page-{i:04d}.html">'
        f"{html.escape(t)}</a></li>"
        for i, t in enumerate(rng.sample(titles, min(60, len(titles))))
    )
    return f"<ul>{links}</ul>"


def _sphinx(title: str, body: str, toc: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8" />
<title>{html.escape(title)} &#8212; Python Library 3.11 documentation</title>
<link rel="stylesheet" href="_static/pygments.css" /><script src="_static/doctools.js"></script>
</head><body>
<div class="related" role="navigation" aria-label="related navigation"><h3>Navigation</h3>
<ul><li class="right"><a href="genindex.html" title="General Index">index</a></li>
<li class="right"><a href="next.html" title="next" accesskey="N">next</a> |</li>
<li class="nav-item nav-item-0"><a href="index.html">Python Library 3.11</a> &#187;</li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper">
<div class="body" role="main">
{body}
</div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="main navigation">
<div class="sphinxsidebarwrapper"><h3>Table of Contents</h3>{toc}
<div id="searchbox" role="search"><form class="search" action="search.html" method="get">
<input type="text" name="q" /></form></div></div></div></div>
<div class="footer" role="contentinfo">&#169; Copyright 2001-2024, Python Software Foundation.
Created using <a href="https://www.sphinx-doc.org/">Sphinx</a> 7.2.6.</div>
</body></html>
"""


def _mkdocs(title: str, body: str, toc: str) -> str:
    return f"""<!doctype html>
<html lang="en" class="no-js"><head><meta charset="utf-8">
<title>{html.escape(title)} - Python Library</title></head><body dir="ltr">
<header class="md-header" data-md-component="header"><nav class="md-header__inner md-grid"
aria-label="Header"><a href="index.html" title="Python Library" class="md-header__button
md-logo">Python Library</a></nav></header>
<div class="md-container" data-md-component="container"><main class="md-main"
data-md-component="main"><div class="md-main__inner md-grid">
<div class="md-sidebar md-sidebar--primary" data-md-component="sidebar"><nav class="md-nav
md-nav--primary" aria-label="Navigation">{toc}</nav></div>
<div class="md-content" data-md-component="content"><article class="md-content__inner
md-typeset">
{body}
</article></div></div></main>
<footer class="md-footer"><nav class="md-footer__inner md-grid" aria-label="Footer">
<a href="prev.html" class="md-footer__link md-footer__link--prev" rel="prev">Previous
Introduction</a><a href="next.html" class="md-footer__link md-footer__link--next"
rel="next">Next Reference</a></nav>
<div class="md-copyright">Made with Material for MkDocs</div></footer></div></body></html>
"""


def _github(title: str, body: str, toc: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} · GitHub</title></head>
<body><div class="position-relative js-header-wrapper"><header class="Header" role="banner">
<nav aria-label="Global"><a href="/features">Features</a><a href="/pricing">Pricing</a></nav>
</header></div><main id="js-repo-pjax-container"><nav aria-label="Breadcrumb"><ol>
<li><a href="/python">python</a></li><li>docs</li></ol></nav>
<div class="Layout-sidebar">{toc}</div>
<article class="markdown-body entry-content container-lg" itemprop="text">
{body}
</article></main><footer class="footer" role="contentinfo"><ul><li>&#169; 2024 GitHub,
Inc.</li><li><a href="/site/terms">Terms</a></li></ul></footer></body></html>
"""


def make_pages(folder: Path, count: int, seed: int = 5) -> int:
    """Write ``count`` pages (Sphinx, MkDocs and GitHub layouts in turn) into ``folder``;
    the bytes written."""
    rng = random.Random(seed)
    docs = _docstrings()
    folder.mkdir(parents=True, exist_ok=True)
    titles = [f"{m}.{a}" for m, a, _ in docs]
    layouts = (_sphinx, _mkdocs, _github)
    total = 0
    for i in range(count):
        title = f"{titles[i % len(titles)]} and friends"
        page = layouts[i % 3](title, _body(rng, docs, title), _toc(rng, titles))
        path = folder / f"page-{i:04d}.html"
        path.write_text(page, encoding="utf-8")
        total += len(page.encode("utf-8"))
    return total
