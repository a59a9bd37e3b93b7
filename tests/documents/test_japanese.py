"""Japanese in the index: Sudachi's normalised content words (the ``ja`` extra), the
variants they fold, and the bigrams fallback when the segmenter is not there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from research_fsm.documents import DocumentIndex
from research_fsm.documents import _japanese as japanese
from research_fsm.documents._terms import query_terms

pytest.importorskip("sudachidict_core", reason="the ja extra (Sudachi) is not installed")


def _reset() -> None:
    japanese.segmentation.cache_clear()
    japanese._tokenizer.cache_clear()
    japanese._cached.cache_clear()


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test chooses its own segmentation; the caches never carry one over."""
    monkeypatch.delenv(japanese.SEGMENTER_ENV, raising=False)
    _reset()
    yield
    _reset()


def test_inflections_and_okurigana_fold_to_one_term() -> None:
    """消して/消した/消す are one verb; まとめて is 纏める; particles and endings go."""
    assert query_terms("消して") == query_terms("消した") == query_terms("消す")
    assert query_terms("まとめて") == query_terms("纏める")
    assert query_terms("要らない") == query_terms("要る")
    assert "する" not in query_terms("削除することは") and "は" not in query_terms("削除は")


def test_long_vowel_and_width_variants_are_one_term() -> None:
    """メンテナー/メンテナ, サーバー/サーバ/ｻｰﾊﾞｰ fold to one term; キー keeps its mark."""
    assert query_terms("メンテナー") == query_terms("メンテナ") == ["メンテナ"]
    assert query_terms("サーバー") == query_terms("ｻｰﾊﾞｰ") == query_terms("サーバ")
    assert japanese.long_vowel("キー") == "キー"


def test_no_term_straddles_a_word_boundary() -> None:
    """The pieces bigrams make across words (保存|パス: 存パ, 基本|時刻: 本時) are no terms."""
    terms = query_terms("保存パスと基本時刻")
    assert "存パ" not in terms and "本時" not in terms
    assert {"保存", "パス", "基本", "時刻"} <= set(terms)


def test_a_verb_meets_the_compound_words_that_hold_its_kanji() -> None:
    """選ぶ is searched by its kanji, which 選択 holds: a verb with one kanji is no rare term."""
    assert set(query_terms("選ぶ")) <= set(query_terms("選択"))
    assert set(query_terms("要る")) <= set(query_terms("不要"))


async def test_a_verbs_kanji_is_counted_and_searched_as_the_question_has_it(
    tmp_path: Path,
) -> None:
    """The question's term 消 (of 消す) is searched and counted as itself: segmented again
    alone it was no word, so it weighed as if no passage used it and was left unsearched."""
    assert query_terms("消") == ["消"] and query_terms("上") == ["上"]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# 整理\n\n古いファイルを消去します。\n", "utf-8")
    (docs / "b.md").write_text("# 追加\n\n新しいファイルを作ります。\n", "utf-8")
    async with await DocumentIndex.open(docs, cache_dir=tmp_path / "cache", workers=1) as index:
        _, counts = await index.frequencies(["消", "ファイル"])
        assert counts == {"消": 1, "ファイル": 2}
        assert ["a.md"] == [p.path for p in await index.search("ファイル 消")]


def test_grammar_words_are_no_terms_by_their_part_of_speech() -> None:
    """Adverbial nouns of kana or one kanji (いま, とき), a numeral with its counter (何台, 一回) and an
    auxiliary after a verb (使って|いる) are no terms; a verb that can be an auxiliary
    but stands alone (誰が始めた: 始める) is one."""
    terms = query_terms("いまマシンが何台もあるとき、全部一回で済ませる")
    assert {"マシン", "済"} <= set(terms)
    assert not {"いま", "今", "時", "台", "回", "何"} & set(terms)
    assert "始" in query_terms("誰が始めたの") and "始" not in query_terms("使い始める")


async def test_the_index_finds_an_inflected_verb(tmp_path: Path) -> None:
    """A passage that says 消します is found by 消す, 消した and 消して."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# 整理\n\n不要なパッケージをまとめて消します。\n", "utf-8")
    (docs / "b.md").write_text("# 追加\n\n新しいパッケージを入れます。\n", "utf-8")
    async with await DocumentIndex.open(docs, cache_dir=tmp_path / "cache", workers=1) as index:
        for query in ("消す", "消した", "まとめて消して", "不要なパッケージ"):
            assert ["a.md"] == [p.path for p in await index.search(query)], query


async def test_bigrams_when_asked_and_the_index_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``RESEARCH_FSM_JA_SEGMENTER=bigrams`` searches by bigrams; an index built with the
    other segmentation is rebuilt, not read with the wrong terms."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# 移行\n\n移行手順を確認します。\n", "utf-8")
    cache = tmp_path / "cache"
    async with await DocumentIndex.open(docs, cache_dir=cache, workers=1) as index:
        assert index.stats.read == 1
    monkeypatch.setenv(japanese.SEGMENTER_ENV, "bigrams")
    _reset()
    assert ["移行", "行手", "手順"] == query_terms("移行手順")
    async with await DocumentIndex.open(docs, cache_dir=cache, workers=1) as index:
        assert index.stats.read == 1  # rebuilt: the schema names the segmentation
        assert ["a.md"] == [p.path for p in await index.search("行手")]


def test_without_the_package_bigrams_and_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Sudachi: Japanese falls back to bigrams and a warning says how to install it, once."""
    monkeypatch.setattr(japanese, "segmenter_available", lambda: False)
    monkeypatch.setattr(japanese, "_warned", False)
    with structlog.testing.capture_logs() as logs:
        first, second = query_terms("移行手順"), query_terms("手順")
    assert (["移行", "行手", "手順"], ["手順"]) == (first, second)
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert 1 == len(warnings) and "ja" in warnings[0]["install"]


def test_a_run_longer_than_sudachi_takes_is_cut_not_fatal() -> None:
    """60,000 kanji in one run (Sudachi refuses over 48 KB at once) are segmented in pieces."""
    found = japanese.words("漢字" * 30_000)
    assert found is not None and "漢字" in found
