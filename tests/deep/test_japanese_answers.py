"""Japanese questions answered offline: their form recognised (「〜するには？」, 「〜は何？」,
「違いは？」), table rows read as answers in both languages, a Japanese note found by a
Japanese question, and the report in the question's language unless one is asked for."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from research_fsm import ResearchAssistant
from research_fsm.deep._answer import parse_question, units

from .test_cli_deep import cli

NOTES = Path(__file__).resolve().parents[2] / "examples" / "notes"
TABLE = """# パッケージの削除

| コマンド | 説明 |
|---|---|
| apt remove | パッケージを削除します（設定ファイルは残します） |
| apt purge | パッケージを設定ファイルごと削除します |
| apt autoremove | もう要らなくなった自動インストールのパッケージをまとめて消去します |
"""


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("パッケージを削除するには？", "howto"),
        ("パッケージを削除する方法", "howto"),
        ("どうやってパッケージを探すの？", "howto"),
        ("不要なパッケージを消すコマンドは？", "howto"),
        ("aptitude とは？", "define"),
        ("dselect は何？", "define"),
        ("tasksel って何？", "define"),
        ("apt と aptitude の違いは？", "compare"),
        ("apt remove と apt purge は何が違う？", "compare"),
        ("キャッシュのデフォルトの上限は？", "value"),
        ("起動時にフォントを読み込ませたい", "howto"),
        ("ユーザーに権限を与えるにはどうする？", "howto"),
        ("ファイル名ってなんであんなに長いの？", "define"),
        ("デフォルトのランレベルって何番？", "value"),
        ("Spring Boot 3 への移行で注意することは？", "general"),
    ],
)
def test_japanese_question_forms(question: str, kind: str) -> None:
    """Each Japanese form asks for its kind of answer, and its form words are no terms."""
    parsed = parse_question(question)
    assert kind == parsed.kind
    assert not {"方法", "違い", "違う", "何", "注意", "する"} & set(parsed.terms)


@pytest.mark.parametrize(
    "question",
    [
        "ファイルって残しとかないとダメ？",
        "ファイルを残さなければならない？",
        "ファイルは残さないといけない？",
    ],
)
def test_an_obligation_is_a_form_not_a_subject(question: str) -> None:
    """「〜ないとダメ？」, 「〜なければならない？」 ask whether one must: their words
    (駄目) are no terms a passage must hold."""
    parsed = parse_question(question)
    assert {"ファイル", "残"} == set(parsed.terms)


def test_a_comparison_has_a_side_for_each_thing_compared() -> None:
    """「A と B は何が違う？」: one side per command, what they share in neither."""
    parsed = parse_question("apt remove と apt purge は何が違う？")
    assert [{"remov"}, {"purg"}] == [set(side) for side in parsed.sides]


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        (TABLE, ["apt remove — パッケージを削除します（設定ファイルは残します）"]),
        (
            "Commands:\n\napt-get autoremove | Remove packages no longer needed\n"
            "apt-get clean | Clear the local repository of retrieved files\n",
            ["apt-get autoremove — Remove packages no longer needed"],
        ),
    ],
)
def test_table_rows_are_answers_in_both_languages(text: str, rows: list[str]) -> None:
    """A row is one unit, its cells joined, its quote the row as written; a command in
    its first cell makes it a step; the rule line is none."""
    found = units(text)
    statements = [unit.statement for unit in found]
    assert set(rows) <= set(statements)
    assert not any(set(s) <= set("-|: —") for s in statements)
    row = next(unit for unit in found if unit.statement == rows[0])
    assert row.code and text[row.start : row.end].strip().startswith(("| apt", "apt-get"))


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A copy of the example notes (English and a Japanese Spring Boot note)."""
    return Path(shutil.copytree(NOTES, tmp_path / "notes"))


async def test_a_japanese_question_finds_the_japanese_note(
    assistant: ResearchAssistant, notes: Path
) -> None:
    """「Spring Boot 3 への移行で注意することは？」 is answered from spring-boot-3-ja.md,
    in Japanese headings (the question's language)."""
    report = await assistant.deep_research("Spring Boot 3 への移行で注意することは？", docs=notes)
    assert "completed" == report.status and "ja" == report.language
    assert "Java 17 以上が必要です" in report.summary
    assert report.folder is not None
    markdown = (report.folder / "report.md").read_text(encoding="utf-8")
    assert "## 概要" in markdown and "## Summary" not in markdown


async def test_the_methodology_comes_in_the_report_language(
    assistant: ResearchAssistant, notes: Path
) -> None:
    """Under 調査方法, a Japanese report names what it searched in Japanese (no English
    line left); the same question reported in English says it in English."""
    question = "Spring Boot 3 への移行で注意することは？"
    japanese = await assistant.deep_research(question, docs=notes)
    english = await assistant.deep_research(question, docs=notes, language="en")
    assert japanese.folder is not None and english.folder is not None
    method_ja = _section((japanese.folder / "report.md").read_text(encoding="utf-8"), "調査方法")
    method_en = _section((english.folder / "report.md").read_text(encoding="utf-8"), "Methodology")
    assert "検索対象: 手元の資料（SQLite FTS5" in method_ja
    assert "Sources searched: local documents (SQLite FTS5" in method_en
    english_lines = [
        line
        for line in method_ja.splitlines()
        if line.startswith("- ") and not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", line)
    ]
    assert english_lines == []


def _section(markdown: str, title: str) -> str:
    """The text of the report's section ``## title``, up to the next section."""
    return markdown.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


async def test_a_table_row_answers_a_question_in_other_words(
    assistant: ResearchAssistant, tmp_path: Path
) -> None:
    """「もう要らないものをまとめて消すコマンドは？」 is answered by the autoremove row."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "apt.md").write_text(TABLE, encoding="utf-8")
    report = await assistant.deep_research("もう要らないものをまとめて消すコマンドは？", docs=docs)
    assert report.summary.startswith("apt autoremove — ")
    compared = await assistant.deep_research("apt remove と apt purge は何が違う？", docs=docs)
    assert "apt remove — " in compared.summary and "apt purge — " in compared.summary


FAQ = """# よくある質問

1.1. 起動時にコンソール用フォントを読み込む方法は?

kbd パッケージがこれをサポートしています。/etc/kbd/config ファイルを編集してください。

1.2. 端末の色を変える方法は?

端末の設定画面で配色を選んでください。
"""


async def test_an_faq_answer_is_about_the_question_above_it(
    assistant: ResearchAssistant, tmp_path: Path
) -> None:
    """An FAQ's answer, which does not repeat its question's words, answers it: the
    summary gives the file to edit, not the FAQ's question again."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "faq.md").write_text(FAQ, encoding="utf-8")
    report = await assistant.deep_research(
        "起動時にコンソールのフォントを読み込ませたい", docs=docs
    )
    assert report.summary.startswith("/etc/kbd/config ファイルを編集してください。")


async def test_a_refusal_comes_in_the_question_language_unless_asked(
    assistant: ResearchAssistant, notes: Path
) -> None:
    """A Japanese question the notes cannot answer is refused in Japanese; with
    ``language="en"`` the same refusal is in English."""
    question = "Kotlin 2 で Gradle のビルドキャッシュを暗号化するには？"
    report = await assistant.deep_research(question, docs=notes)
    assert ("no_sources", "ja") == (report.status, report.language)
    assert report.folder is not None
    assert "回答していません" in (report.folder / "report.md").read_text(encoding="utf-8")
    english = await assistant.deep_research(question, docs=notes, language="en")
    assert english.folder is not None and "en" == english.language
    text = (english.folder / "report.md").read_text(encoding="utf-8")
    assert "do not answer" in text and "## Summary" in text


def test_the_cli_answers_in_the_question_language(tmp_path: Path, notes: Path) -> None:
    """``research-fsm deep`` without ``--lang`` reports a Japanese question in Japanese;
    ``--lang en`` reports it in English."""
    question = "Spring Boot 3 への移行で注意することは？"
    found = cli(tmp_path / "home", "deep", question, "--docs", str(notes), "--json")
    english = cli(
        tmp_path / "home", "deep", question, "--docs", str(notes), "--json", "--lang", "en"
    )
    assert (0, 0) == (found.returncode, english.returncode), found.stderr + english.stderr
    assert ("ja", "en") == (
        json.loads(found.stdout)["language"],
        json.loads(english.stdout)["language"],
    )
