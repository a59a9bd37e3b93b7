"""The documentation-set evaluation (``python -m benchmarks.answers --set ...``): its
question files, the frozen split, the cache of sets, the offline smoke form, and (when a
set is cached, or the network reaches Debian) the facts found where they are recorded."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.answers import _docsets
from benchmarks.answers.__main__ import (
    fact_in,
    file_text,
    main,
    set_questions,
    stale_set_facts,
)

KINDS = {"direct", "spread", "number", "command", "unanswerable"}


def _all() -> list[dict[str, Any]]:
    return set_questions("all")


def test_question_files_meet_the_brief() -> None:
    """150+ questions over 5+ sets, 25+ unanswerable, 30+ Japanese over the Japanese set,
    half or more of the answerable ones in the user's words, each fact with a file and a
    line or page, ids unique and the two parts disjoint."""
    questions = _all()
    sets = _docsets.load_sets()
    assert len(questions) >= 150
    assert len({q["set"] for q in questions}) >= 5
    assert {q["set"] for q in questions} <= set(sets)
    assert len({q["id"] for q in questions}) == len(questions)
    assert Counter(q["kind"] for q in questions)["unanswerable"] >= 25
    japanese = [q for q in questions if q["lang"] == "ja"]
    assert len(japanese) >= 30
    assert {sets[q["set"]].language for q in japanese} == {"ja"}
    answerable = [q for q in questions if q["kind"] != "unanswerable"]
    assert sum(q["words"] == "user" for q in answerable) * 2 >= len(answerable)
    for q in questions:
        assert q["kind"] in KINDS, q["id"]
        assert bool(q["facts"]) == (q["kind"] != "unanswerable"), q["id"]
        for fact in q["facts"]:
            assert fact["any"] and fact["file"], q["id"]
            assert ("line" in fact) != ("page" in fact), q["id"]
        if q["kind"] == "spread":
            assert len(q["facts"]) >= 2, q["id"]


def test_the_split_is_the_recorded_rule() -> None:
    """Each question is in the part the frozen rule puts it: within a set, sorted by
    (kind, sha256(id)), every third is held out."""
    by_set: dict[str, list[dict[str, Any]]] = {}
    for q in _all():
        by_set.setdefault(q["set"], []).append(q)
    for group in by_set.values():
        ordered = sorted(
            group, key=lambda q: (q["kind"], hashlib.sha256(q["id"].encode()).hexdigest())
        )
        for i, q in enumerate(ordered):
            assert q["split"] == ("heldout" if i % 3 == 2 else "dev"), q["id"]


def test_facts_match_ignoring_case_spacing_and_width() -> None:
    """A fact is found whatever the spacing and case; a Japanese one whatever the spaces
    between characters and the width of letters; a wrong value is not found."""
    assert fact_in("The default is 8 spaces", "the  default is\n8 spaces.")
    assert fact_in("dpkg --listfiles", "\uff44\uff50\uff4b\uff47 --listfiles foo を実行")
    assert fact_in("パッケージを削除", "パッケージ を 削除 します")
    assert not fact_in("Default is 500", "Default is 50")


def test_html_is_read_as_text(tmp_path: Path) -> None:
    """An HTML file's text has no tags and decoded entities; a PDF's is left to the
    extractor (``None``)."""
    page = tmp_path / "a.html"
    page.write_text("<p>Use <code>-C &lt;path&gt;</code> here</p>", encoding="utf-8")
    assert "Use -C <path> here" == file_text(page)
    assert file_text(tmp_path / "b.pdf") is None


def test_stale_facts_are_reported(tmp_path: Path) -> None:
    """A fact on its recorded line is not stale; one whose file changed, or is gone, is."""
    (tmp_path / "p.html").write_text("<h1>x</h1>\n<p>The default is <b>8</b> spaces</p>\n")
    fact = {"any": ["The default is 8 spaces"], "file": "p.html", "line": 2}
    question = {"id": "q1", "facts": [fact]}
    assert [] == stale_set_facts([question], tmp_path)
    moved = {**fact, "any": ["The default is 9 spaces"]}
    gone = {**fact, "file": "nowhere.html"}
    stale = stale_set_facts([{"id": "q2", "facts": [moved, gone]}], tmp_path)
    assert ["q2: p.html:2", "q2: nowhere.html:2"] == stale


def test_offline_sets_not_cached_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CI smoke form (``--set all --quick``) never downloads: with an empty cache every
    set is skipped with its name and the reason, and the JSON says so."""
    monkeypatch.setenv("RESEARCH_FSM_DOCSETS", str(tmp_path / "cache"))
    monkeypatch.setenv("RESEARCH_FSM_HOME", str(tmp_path / "home"))
    out = tmp_path / "answers.json"
    assert 0 == main(["--set", "all", "--quick", "--out", str(out)])
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert set(_docsets.load_sets()) == set(payload["skipped"])
    assert all("not cached" in reason for reason in payload["skipped"].values())
    assert ([], False) == (payload["questions"], payload["met"])
    assert not (tmp_path / "cache").exists()
    with pytest.raises(SystemExit):
        main(["--set", "nosuchset", "--offline", "--out", str(out)])


def test_a_cached_set_is_found_by_its_manifest(tmp_path: Path) -> None:
    """A set is cached only once its manifest is written: before that ``ensure`` offline
    raises naming the set, after it returns the docs folder."""
    docset = _docsets.load_sets()["tig"]
    folder = tmp_path / docset.key
    (folder / "docs").mkdir(parents=True)
    with pytest.raises(_docsets.SetUnavailable, match="'tig'"):
        _docsets.ensure(docset, offline=True, root=tmp_path)
    (folder / "MANIFEST.json").write_text('{"name": "tig", "files": 0, "sources": []}')
    assert folder / "docs" == _docsets.ensure(docset, offline=True, root=tmp_path)


def test_globs_choose_files_below_any_depth() -> None:
    """``usage/**/*.html`` takes pages at any depth below ``usage/``, and nothing else."""
    patterns = ["usage/**/*.html"]
    assert _docsets._matches("usage/quickstart.html", patterns)
    assert _docsets._matches("usage/extensions/todo.html", patterns)
    assert not _docsets._matches("_sources/usage/quickstart.txt", patterns)
    assert not _docsets._matches("extdev/index.html", patterns)


@pytest.mark.slow
def test_cached_sets_hold_every_fact_where_recorded() -> None:
    """Every fact of every cached set is on its recorded line or page (sets not cached
    here are skipped: this test never downloads)."""
    cached = {
        name: _docsets.cached(docset)
        for name, docset in _docsets.load_sets().items()
        if _docsets.cached(docset) is not None
    }
    if not cached:
        pytest.skip("no documentation set is cached (python -m benchmarks.answers --set all)")
    for name, folder in cached.items():
        assert folder is not None
        questions = [q for q in _all() if q["set"] == name]
        assert [] == stale_set_facts(questions, folder), name


@pytest.mark.slow
def test_a_set_is_fetched_from_its_debian_package(tmp_path: Path) -> None:
    """The small ``tig`` set is downloaded with apt-get, unpacked with dpkg-deb and cached
    with its manifest (skipped when apt-get or the network is not there)."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("apt-get and dpkg-deb are needed to fetch a Debian set")
    docset = _docsets.load_sets()["tig"]
    try:
        docs = _docsets.ensure(docset, offline=False, root=tmp_path)
    except _docsets.SetUnavailable as error:
        pytest.skip(f"the tig package could not be fetched here: {error}")
    names = sorted(p.name for p in docs.iterdir())
    assert ["NEWS.html", "manual.html", "tig.1.html", "tigrc.5.html"] == names
    record = _docsets.manifest(docset, root=tmp_path)
    assert ("tig", 4) == (record["sources"][0]["package"], record["files"])
    questions = [q for q in _all() if q["set"] == "tig"]
    if record["sources"][0]["version"] == docset.sources[0]["version"]:
        assert [] == stale_set_facts(questions, docs)


def _session(
    folder: Path, sources: list[str], checks: list[tuple[str, bool]], facts: list[str]
) -> Path:
    folder.mkdir()
    found = [{"id": f"S{i}", "text": text} for i, text in enumerate(sources, 1)]
    (folder / "search_results.json").write_text(json.dumps(found), encoding="utf-8")
    history = [{"checks": [{"text": text, "supported": ok} for text, ok in checks]}]
    (folder / "verification.json").write_text(json.dumps({"history": history}), encoding="utf-8")
    analyses = [{"source": "S1", "facts": [{"statement": s} for s in facts]}]
    (folder / "evidence.json").write_text(json.dumps(analyses), encoding="utf-8")
    return folder


def test_the_diagnosis_puts_a_fact_at_the_stage_that_lost_it(tmp_path: Path) -> None:
    """A fact is lost at extraction (in no passage), retrieval (in no retrieved source),
    refusal (retrieved, no claim at all), sentence choice (its source analysed, no fact
    holds it), verification (drafted, unsupported), or found."""
    from benchmarks.answers.diagnose import stage_of

    fact = {"any": ["The default is 8"]}
    held = "Tab size. The default is 8 spaces."
    other = "Colours are set with the color option."
    assert stage_of(fact, tmp_path, in_passages=False) == "extraction"
    cases = {
        "retrieval": ([other], [(other, True)], [other]),
        "refused": ([held], [], []),
        "choice": ([held], [(other, True)], [other]),
        "verify": ([held], [(held, False)], [held]),
        "found": ([held], [(held, True)], [held]),
    }
    for stage, (sources, checks, facts) in cases.items():
        folder = _session(tmp_path / stage, sources, checks, facts)
        assert stage_of(fact, folder, in_passages=True) == stage, stage


def test_the_calibration_counts_answers_among_the_analysed_passages() -> None:
    """The blend's fit tells an answering passage ranked among the analysed ones (the
    first ``top_k``) from one ranked lower but still among the eight judged."""
    from benchmarks.answers.calibrate import ANALYSED, evaluate

    def row(rank: int) -> dict[str, Any]:
        cands = [{"lex": 1.0 - i / 20, "cos": None, "holds": i == rank} for i in range(8)]
        return {"kind": "direct", "cands": cands}

    low = evaluate([row(ANALYSED)], 0.0, 0.0)
    high = evaluate([row(ANALYSED - 1)], 0.0, 0.0)
    assert (low["in_analysed"], low["in_top"]) == (0.0, 1.0)
    assert (high["in_analysed"], high["in_top"]) == (1.0, 1.0)
