"""Offline answers that read like an assistant (issue 14), through ``ResearchAssistant``
on the bundled directory: paths, honest confidence, missing-data sentences,
comparisons, descriptions, off-topic messages and Japanese questions."""

from __future__ import annotations

import json
import re

import pytest

from research_fsm import ResearchAssistant
from research_fsm.engine import MemoryCheckpointStore
from research_fsm.qa.agents._compare import MARGIN_LABEL
from research_fsm.qa.agents._synthesis import LOW_PREFIX, MEDIUM_PREFIX, OFF_TOPIC_MESSAGE
from research_fsm.sources import DirectorySource, SearchContext, SearchResult

NO_NEWS = "The offline directory has no news; set TAVILY_API_KEY for live data."


class CountingDirectory(DirectorySource):
    """The directory, counting its searches."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, SearchContext]] = []

    async def search(self, company: str, context: SearchContext) -> SearchResult:
        self.calls.append((company, context))
        return await super().search(company, context)


@pytest.fixture
def source() -> CountingDirectory:
    """A counting directory source."""
    return CountingDirectory()


@pytest.fixture
def offline(source: CountingDirectory) -> ResearchAssistant:
    """The offline assistant over the counting directory, in memory."""
    return ResearchAssistant(source=source, store=MemoryCheckpointStore())


async def test_whats_happening_with_apple_offline(
    offline: ResearchAssistant, source: CountingDirectory
) -> None:
    """The README's first question: one research round, no "limited information"
    warning, and a plain sentence that news needs a Tavily key."""
    reply = await offline.ask("What's happening with Apple?", thread_id="a")
    assert ["clarity", "research", "synthesis"] == reply.path
    assert 1 == len(source.calls)
    assert not reply.text.startswith((LOW_PREFIX, MEDIUM_PREFIX))
    assert NO_NEWS in reply.text
    assert "Tim Cook" in reply.text


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        (
            "What about Apple's stock?",
            "The offline directory has no share prices; set TAVILY_API_KEY for live data.",
        ),
        ("What's the latest news on Apple?", NO_NEWS),
        (
            "Tell me more about Apple's AI strategy",
            "The offline directory has no strategy or plans; set TAVILY_API_KEY for live data.",
        ),
    ],
)
async def test_missing_data_is_said_plainly(
    offline: ResearchAssistant, source: CountingDirectory, question: str, sentence: str
) -> None:
    """Price, news and strategy questions say what is missing, still give what there
    is, carry the low-information prefix, and are researched once."""
    reply = await offline.ask(question, thread_id="m")
    assert sentence in reply.text
    assert reply.text.startswith(LOW_PREFIX)
    assert reply.confidence < 5
    assert "Here's what I found about Apple Inc.:" in reply.text
    assert 1 == len(source.calls)
    assert ["clarity", "research", "validator", "synthesis"] == reply.path


async def test_validator_reason_is_kept_when_the_loop_ends(
    offline: ResearchAssistant, source: CountingDirectory
) -> None:
    """On the directory the validator's "insufficient" ends the loop at once: one
    research round, and its feedback stays in the state for the answer."""
    reply = await offline.ask("What about Apple's stock?", thread_id="v")
    assert (1, 1, "insufficient") == (
        len(source.calls),
        reply.state.research_attempts,
        reply.state.validation_result,
    )
    assert reply.state.validation_feedback is not None
    assert "stock" in reply.state.validation_feedback


async def test_strategy_question_is_not_confident(offline: ResearchAssistant) -> None:
    """A strategy question answered with a profile scores low, an overview high."""
    strategy = await offline.ask("Tell me more about Apple's AI strategy", thread_id="s1")
    overview = await offline.ask("Tell me about Apple", thread_id="s2")
    assert (3, True) == (strategy.confidence, overview.confidence >= 8)


async def test_competitors_offline_rank_by_revenue(offline: ResearchAssistant) -> None:
    """Competitors come from the directory's industry peers with the company's position."""
    reply = await offline.ask("Who are Nvidia's competitors?", thread_id="c")
    expected = (
        "Nvidia is 1st of 18 companies classified as Semiconductors & Semiconductor Equipment"
        " in the directory by revenue."
    )
    assert expected in reply.text
    assert "- Broadcom: revenue US$63.89 billion (2025)" in reply.text
    assert reply.confidence >= 8


async def test_competitors_of_a_company_with_no_peers_say_so(offline: ResearchAssistant) -> None:
    """A company that shares no industry with another gets the missing-competitors sentence."""
    assert await DirectorySource().peers("Melexis") is None
    reply = await offline.ask("Who are Melexis's competitors?", thread_id="c2")
    assert "I couldn't find competitor information for Melexis in my sources." in reply.text
    assert reply.text.startswith(LOW_PREFIX)


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:[.,]\d+)*", text)


async def test_comparison_table_uses_only_the_profiles_figures(
    offline: ResearchAssistant,
) -> None:
    """ "Compare them to Microsoft" after Apple gives a table whose every number is in
    one of the two profiles, a labelled computed margin, and sentences on differences."""
    await offline.ask("Tell me about Apple", thread_id="cmp")
    reply = await offline.ask("Compare them to Microsoft", thread_id="cmp")
    assert ["Microsoft"] == reply.compared
    rows = [line for line in reply.text.splitlines() if line.startswith("| ")]
    labels = [row.split("|")[1].strip() for row in rows[1:]]
    expected_labels = [
        "Revenue",
        "Net income",
        MARGIN_LABEL["en"],
        "Employees",
        "Headquarters",
        "Founded",
        "CEO",
        "Index memberships",
    ]
    assert expected_labels == labels
    findings = [reply.state.research_findings, *reply.state.comparison_findings]
    raw = " ".join(json.dumps(f.raw_data["profile"]) for f in findings if f is not None)
    for row in rows[1:]:
        if MARGIN_LABEL["en"] in row:
            continue
        for number in _numbers(row):
            assert number in raw, f"{number} of {row!r} is in neither profile"
    margin_row = next(row for row in rows if MARGIN_LABEL["en"] in row)
    assert ["26.9%", "36.1%"] == re.findall(r"\d+\.\d%", margin_row)  # 112/416, 101.8/281.7
    assert "Apple Inc. has the larger revenue" in reply.text
    assert "Microsoft keeps more of each sale as profit" in reply.text


async def test_description_resolves_one_clear_match(offline: ResearchAssistant) -> None:
    """ "the one that makes iphones" is Apple."""
    reply = await offline.ask("the one that makes iphones", thread_id="d1")
    assert ("answered", "Apple Inc.") == (reply.status, reply.company)


async def test_ambiguous_description_asks_with_choices(offline: ResearchAssistant) -> None:
    """ "the electric car company" fits several: ask back naming them; a choice answers."""
    reply = await offline.ask("the electric car company", thread_id="d2")
    assert "needs_clarification" == reply.status
    choices = reply.state.clarification_choices
    assert 2 <= len(choices) <= 3 and "Tesla, Inc." in choices
    for choice in choices:
        assert choice in reply.text
    assert reply.token is not None
    final = await offline.clarify(reply.token, "Tesla")
    assert "Tesla, Inc." == final.company


@pytest.mark.parametrize(
    "message", ["What's the capital of France?", "What's the weather like today?"]
)
async def test_off_topic_gets_a_short_reply(
    offline: ResearchAssistant, source: CountingDirectory, message: str
) -> None:
    """A question not about companies gets what the assistant does, no research, no wait."""
    reply = await offline.ask(message, thread_id="o")
    assert ("answered", OFF_TOPIC_MESSAGE, ["clarity", "synthesis"]) == (
        reply.status,
        reply.text,
        reply.path,
    )
    assert [] == source.calls


async def test_thanks_after_an_answer(offline: ResearchAssistant) -> None:
    """ "thanks" after an answer is acknowledged, keeps the company, researches nothing."""
    await offline.ask("Tell me about Apple", thread_id="t")
    reply = await offline.ask("thanks", thread_id="t")
    assert reply.text.startswith("You're welcome!")
    assert ("answered", "Apple Inc.", ["clarity", "synthesis"]) == (
        reply.status,
        reply.company,
        reply.path,
    )


@pytest.mark.parametrize(
    ("question", "company", "heading"),
    [
        ("アップルについて教えて", "Apple Inc.", "**概要**"),
        ("トヨタの競合は？", "Toyota", "**競合と同業**"),
        ("ソニーの社長は誰ですか", "Sony", "**経営陣**"),
        ("任天堂の業績は？", "Nintendo", "**株式と財務**"),
        ("マイクロソフトの最新ニュース", "Microsoft", "**概要**"),
    ],
)
async def test_japanese_questions(
    offline: ResearchAssistant, question: str, company: str, heading: str
) -> None:
    """Japanese questions name companies in katakana/kanji and get Japanese labels."""
    reply = await offline.ask(question, thread_id="ja")
    assert (company, "ja") == (reply.company, reply.state.language)
    assert f"{company}について分かったことです:" in reply.text
    assert heading in reply.text
    assert "Here's what I found" not in reply.text
    assert "出典:" in reply.text


async def test_japanese_peer_ranking_wording(offline: ResearchAssistant) -> None:
    """The peer ranking of a Japanese question is worded in Japanese."""
    reply = await offline.ask("トヨタの競合は？", thread_id="jc")
    assert "Toyotaは、ディレクトリでAutomotiveに分類される25社のうち売上高で1位です。" in reply.text
    assert "classified as" not in reply.text


async def test_japanese_missing_news_sentence(offline: ResearchAssistant) -> None:
    """A Japanese news question says, in Japanese, that news needs a Tavily key."""
    reply = await offline.ask("マイクロソフトの最新ニュース", thread_id="jn")
    expected = (
        "オフラインのディレクトリにはニュースがありません。"
        "最新のデータを使うには TAVILY_API_KEY を設定してください。"
    )
    assert expected in reply.text


async def test_japanese_question_without_a_company_asks_in_japanese(
    offline: ResearchAssistant,
) -> None:
    """ "会社について教えて" asks back in Japanese."""
    reply = await offline.ask("会社について教えて", thread_id="jq")
    assert "needs_clarification" == reply.status
    assert reply.text.startswith("どの会社について調べますか")


async def test_greeting_is_not_thanked(offline: ResearchAssistant) -> None:
    """ "hello" gets a greeting that says what the assistant does, not "You're welcome"."""
    reply = await offline.ask("hello", thread_id="g")
    assert reply.text.startswith("Hello! I'm a company research assistant.")


async def test_unknown_lowercase_word_is_looked_up_not_dismissed(
    offline: ResearchAssistant,
) -> None:
    """ "tell me about zenvia" may be a company: it is looked up and said not found, not
    called off-topic."""
    reply = await offline.ask("tell me about zenvia", thread_id="u")
    assert "answered" == reply.status
    assert reply.text.startswith(
        '"zenvia" is not in the offline directory of about 1,800 companies'
    )


async def test_comparison_with_an_unknown_company_says_so(offline: ResearchAssistant) -> None:
    """ "Compare Apple to Acme Corp" researches both, and says Acme Corp was not found."""
    reply = await offline.ask("Compare Apple to Acme Corp", thread_id="cu")
    assert ("Apple Inc.", ["Acme Corp"]) == (reply.company, reply.compared)
    expected = 'I couldn\'t find "Acme Corp" in my sources, so there is nothing to compare with.'
    assert expected in reply.text


async def test_japanese_comparison(offline: ResearchAssistant) -> None:
    """ "トヨタとホンダを比べて" gives the table with Japanese labels and Japanese sentences."""
    reply = await offline.ask("トヨタとホンダを比べて", thread_id="jcmp")
    assert ("Toyota", ["Honda"], "comparison") == (
        reply.company,
        reply.compared,
        reply.state.query_intent,
    )
    assert "| 純利益率（純利益÷売上高、計算値） | 11.0% | 5.8% |" in reply.text
    assert "売上高はToyotaの方が大きく" in reply.text
