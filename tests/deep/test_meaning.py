"""Deep research over documents with an embedding model: a passage sharing no word with
the question is retrieved (hybrid search, reciprocal-rank fusion), the Methodology names
the model, meaning moves scores by the model's weight above or below its floor, a sentence
that says it in other words is lifted, and a Japanese question is searched by words alone."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="the semantic extra (numpy) is not installed")

from research_fsm import ResearchAssistant  # noqa: E402
from research_fsm.deep import _meaning as meaning  # noqa: E402
from research_fsm.deep._meaning import applies, blend, by_meaning, fuse  # noqa: E402
from research_fsm.documents import EMBEDDER_ENV, Passage  # noqa: E402
from research_fsm.documents import _vectors as vectors  # noqa: E402
from research_fsm.engine import MemoryCheckpointStore  # noqa: E402

QUESTION = "Which commit broke my build?"


class TwoAxes:
    """A test model: "broke" and "bisect" share one axis, every other text the other."""

    name = "two-axes"
    dim = 2

    def embed(self, texts: Sequence[str]) -> Any:
        rows = [[1.0, 0.0] if ("broke" in t or "bisect" in t) else [0.0, 1.0] for t in texts]
        return np.array(rows, dtype=np.float32)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bisect.md").write_text(
        "# Bisecting\n\nUse binary search to bisect the history until the first bad "
        "revision shows up.\n",
        encoding="utf-8",
    )
    (folder / "commits.md").write_text(
        "# Commits\n\nA commit records a snapshot of the project with a message.\n",
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def semantic(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    vectors.register("two-axes", TwoAxes)
    monkeypatch.setenv(EMBEDDER_ENV, "two-axes")
    yield
    vectors.register("two-axes", lambda: None)


def _searched(report_folder: Path | None) -> list[str]:
    assert report_folder is not None
    found = json.loads((report_folder / "search_results.json").read_text(encoding="utf-8"))
    return sorted({source["locator"] for source in found})


async def test_a_passage_in_other_words_is_retrieved(
    home: Path, docs: Path, semantic: None
) -> None:
    """ "Which commit broke my build?" shares no word with the bisect page: only its
    meaning brings it among the sources, and the Methodology says which model did."""
    report = await ResearchAssistant(store=MemoryCheckpointStore()).deep_research(
        QUESTION, docs=docs
    )
    assert "bisect.md" in _searched(report.folder)
    assert "two-axes embedding model" in report.markdown


async def test_words_alone_miss_it(home: Path, docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same question without a model retrieves only what shares its words."""
    monkeypatch.setenv(EMBEDDER_ENV, "none")
    report = await ResearchAssistant(store=MemoryCheckpointStore()).deep_research(
        QUESTION, docs=docs
    )
    assert ["commits.md"] == _searched(report.folder)
    assert "two-axes" not in report.markdown
    assert 1 == report.markdown.count("searched by words alone: no embedding model")


def _passage(path: str, start: int) -> Passage:
    return Passage(
        path=path,
        title=path,
        text="x",
        start=start,
        end=start + 1,
        line_start=1,
        line_end=1,
        page=None,
        heading=None,
        score=0.0,
    )


def test_fusion_ranks_what_both_searches_found_first() -> None:
    """Reciprocal-rank fusion: a passage second in both rankings beats one first in a
    single ranking; each passage comes once."""
    a, b, c = _passage("a.md", 0), _passage("b.md", 0), _passage("c.md", 0)
    assert [b, a, c] == fuse([a, b], [c, b])


def test_meaning_moves_a_score_around_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the model's floor similarity lifts a score, below it lowers it (a passage the
    words match only loosely can fall under the cut-off); no model: the lexical score."""
    monkeypatch.setattr(meaning, "parameters", lambda: (0.6, 0.3, 0.0, 0.3))
    assert round(0.4 + 0.6 * 0.2, 4) == blend(0.4, 0.5)
    assert round(0.4 - 0.6 * 0.2, 4) == blend(0.4, 0.1)
    assert 0.4 == blend(0.4, None)


def test_the_sentence_that_says_it_in_other_words_is_lifted(
    monkeypatch: pytest.MonkeyPatch, semantic: None
) -> None:
    """By words the two units tie; by meaning the bisect sentence answers "which commit
    broke" and the other does not: it is lifted, the other lowered, none below zero."""
    monkeypatch.setattr(meaning, "parameters", lambda: (0.6, 0.3, 0.5, 0.5))
    units = ["Run bisect to reach the first bad revision.", "A commit has a message."]
    lifted = by_meaning(QUESTION, units, [0.3, 0.3])
    assert lifted[0] == 0.55 and lifted[1] == 0.05
    monkeypatch.setattr(meaning, "parameters", lambda: (0.6, 0.3, 0.0, 0.5))
    assert [0.3, 0.3] == by_meaning(QUESTION, units, [0.3, 0.3])


async def test_a_japanese_question_is_searched_by_words_alone(
    home: Path, tmp_path: Path, semantic: None
) -> None:
    """The model spells Japanese byte by byte: a Japanese question is not searched by
    meaning (no nearest passage joins, no score lifted), an English one is."""
    assert applies("Which commit broke my build?")
    assert not applies("どのコミットが壊した？")
    folder = tmp_path / "ja"
    folder.mkdir()
    (folder / "bisect.md").write_text(
        "# 二分探索\n\nbisect で最初の悪い版を探す。\n", encoding="utf-8"
    )
    (folder / "commit.md").write_text(
        "# コミット\n\nコミットは変更を記録する。\n", encoding="utf-8"
    )
    report = await ResearchAssistant(store=MemoryCheckpointStore()).deep_research(
        "どのコミットが壊した？", docs=folder
    )
    assert "bisect.md" not in _searched(report.folder)
