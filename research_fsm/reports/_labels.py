"""The report's words in English and Japanese: section titles, fact labels, phrases."""

from __future__ import annotations

from typing import Final

__all__ = ["FACT_LABELS", "TEXT", "fact_label", "missing_label", "text"]

TEXT: Final[dict[str, dict[str, str]]] = {
    "en": {
        "title": "Company report: {company}",
        "summary": "Summary",
        "financial": "Financial",
        "market": "Market",
        "product": "Products",
        "methodology": "Methodology",
        "sources": "Sources",
        "verification": "Quality and verification",
        "metadata": "Metadata",
        "unavailable": "This section is unavailable: the {agent} specialist failed ({error}).",
        "none_found": "Nothing found for this section.",
        "missing": "Not found",
        "computed": "computed from {parts}",
        "computed_mixed": "computed from {parts}; figures of different fiscal years",
        "method_source": "Data source: {source}.",
        "method_iterations": "Research iterations: {iterations}.",
        "method_model": "Model: {models}.",
        "method_agents": (
            "A researcher gathered the sources; financial, market and product specialists "
            "worked on them in parallel; a synthesiser wrote the summary from their facts; "
            "a quality check scored the report."
        ),
        "method_missing": "What was missing: {items}.",
        "method_nothing_missing": "Nothing the specialists look for was missing.",
        "score": "Quality score: {score}/100 ({method}).",
        "score_meaning": (
            "The score measures coverage: how many of the fields the specialists look "
            "for were found and sourced. It does not check that the figures are accurate."
        ),
        "rules": "rule-based",
        "llm": "scored by the LLM",
        "combined": "the mean of the rules' coverage score and the LLM's score",
        "combined_parts": (
            "Rules (coverage of the fields looked for, and sources): {rules}/100. LLM, judging "
            "the facts and their sources: {llm}/100 (completeness {completeness}/40, accuracy "
            "{accuracy}/30, depth {depth}/30)."
        ),
        "breakdown": "{part}: {points}/{maximum}",
        "grounding": (
            "Every figure above is taken from the listed sources or computed from them "
            "(labelled); every [S#] refers to a source retrieved for this report."
        ),
        "grounding_offline": (
            "Every figure above is taken from the bundled offline directory or computed from "
            "it (labelled); every [S#] refers to a page the directory cites, not fetched for "
            "this report."
        ),
        "grounding_none": (
            "No source is listed for this report, so nothing above could be checked "
            "against a source."
        ),
        "bundled": "cited by the bundled directory, {dataset}; not fetched",
        "generated_at": "Generated at",
        "data_source": "Data source",
        "model": "Model",
        "model_none": "none (rule-based agents, offline)",
        "cost": "Estimated LLM cost",
        "language": "Language",
        "retrieved": "retrieved",
        "part_sources": "Sources",
        "sentence_hq": "{company} is headquartered in {hq}.",
        "sentence_money": "It reported revenue of {revenue} and net income of {net}.",
        "sentence_margin": "Its net margin is {margin} (computed from revenue and net income).",
        "sentence_products": "Its products include {products}.",
        "sentence_people": "Key people: {people}.",
        "list_sep": ", ",
        "missing_item": "{part}: {item}",
        "missing_unavailable": "{part} (section unavailable)",
        "missing_more": "{part}: more facts",
        "missing_unsourced": "no fact is sourced",
    },
    "ja": {
        "title": "企業レポート：{company}",
        "summary": "概要",
        "financial": "財務",
        "market": "市場",
        "product": "製品",
        "methodology": "調査方法",
        "sources": "出典",
        "verification": "品質と検証",
        "metadata": "メタデータ",
        "unavailable": "このセクションは利用できません（{agent}担当エージェントの失敗：{error}）。",
        "none_found": "このセクションの情報は見つかりませんでした。",
        "missing": "見つからなかった項目",
        "computed": "{parts}から算出",
        "computed_mixed": "{parts}から算出、会計年度の異なる数値",
        "method_source": "データソース：{source}。",
        "method_iterations": "調査の反復回数：{iterations}回。",
        "method_model": "モデル：{models}。",
        "method_agents": (
            "リサーチャーが情報源を収集し、財務・市場・製品の各専門エージェントが並行して分析し、"
            "統合エージェントがその事実のみから概要を書き、品質チェックがレポートを採点しました。"
        ),
        "method_missing": "不足していた項目：{items}。",
        "method_nothing_missing": "専門エージェントが探した項目に不足はありません。",
        "score": "品質スコア：{score}/100（{method}）。",
        "score_meaning": (
            "このスコアは網羅性（専門エージェントが探す項目のうち、出典付きで見つかった割合）を"
            "示すもので、数値の正確さを検証したものではありません。"
        ),
        "rules": "ルールによる採点",
        "llm": "LLMによる採点",
        "combined": "ルールによる網羅性スコアとLLMによるスコアの平均",
        "combined_parts": (
            "ルール（探した項目の網羅性と出典）：{rules}/100。LLM（事実とその出典を評価）："
            "{llm}/100（網羅性 {completeness}/40、正確性 {accuracy}/30、深さ {depth}/30）。"
        ),
        "breakdown": "{part}：{points}/{maximum}",
        "grounding": (
            "上記の数値はすべて出典に記載されたもの、またはそこから算出したもの（明記）です。"
            "[S#] はすべて本レポートのために取得した出典を指します。"
        ),
        "grounding_offline": (
            "上記の数値はすべて同梱のオフラインディレクトリに記載されたもの、またはそこから"
            "算出したもの（明記）です。[S#] はディレクトリが出典として挙げるページを指し、"
            "本レポートのために取得したものではありません。"
        ),
        "grounding_none": "このレポートには出典がないため、上記の内容は出典で確認できていません。",
        "bundled": "同梱ディレクトリ（{dataset}）の出典、取得はしていません",
        "generated_at": "作成日時",
        "data_source": "データソース",
        "model": "モデル",
        "model_none": "なし（ルールベース、オフライン）",
        "cost": "推定LLMコスト",
        "language": "言語",
        "retrieved": "取得",
        "part_sources": "出典",
        "sentence_hq": "{company}の本社は{hq}にあります。",
        "sentence_money": "売上高は{revenue}、純利益は{net}です。",
        "sentence_margin": "純利益率は{margin}です（売上高と純利益から算出）。",
        "sentence_products": "主な製品：{products}。",
        "sentence_people": "主要人物：{people}。",
        "list_sep": "、",
        "missing_item": "{part}：{item}",
        "missing_unavailable": "{part}（セクション利用不可）",
        "missing_more": "{part}：事実の追加",
        "missing_unsourced": "出典のある事実がありません",
    },
}
"""Phrases by language."""

FACT_LABELS: Final[dict[str, dict[str, str]]] = {
    "en": {
        "revenue": "Revenue",
        "operating_income": "Operating income",
        "net_income": "Net income",
        "total_assets": "Total assets",
        "total_equity": "Total equity",
        "employees": "Employees",
        "net_margin": "Net margin",
        "operating_margin": "Operating margin",
        "revenue_per_employee": "Revenue per employee",
        "industry": "Industry",
        "peer_position": "Position",
        "peers": "Largest peers by revenue",
        "indices": "Index memberships",
        "country": "Country",
        "products": "Products",
        "key_people": "Key people",
        "founders": "Founders",
        "headquarters": "Headquarters",
        "founded": "Founded",
    },
    "ja": {
        "revenue": "売上高",
        "operating_income": "営業利益",
        "net_income": "純利益",
        "total_assets": "総資産",
        "total_equity": "純資産",
        "employees": "従業員数",
        "net_margin": "純利益率",
        "operating_margin": "営業利益率",
        "revenue_per_employee": "従業員一人当たり売上高",
        "industry": "業種",
        "peer_position": "順位",
        "peers": "売上高上位の同業他社",
        "indices": "構成指数",
        "country": "国",
        "products": "製品",
        "key_people": "主要人物",
        "founders": "創業者",
        "headquarters": "本社",
        "founded": "設立",
    },
}
"""Fact labels by language and key."""


def text(language: str, key: str, **values: object) -> str:
    """The phrase ``key`` in ``language`` (English when unknown), formatted."""
    phrases = TEXT.get(language, TEXT["en"])
    return phrases[key].format(**values) if values else phrases[key]


def fact_label(language: str, key: str, label: str | None = None) -> str:
    """The label of a fact key (the fact's own label for keys the writer does not know)."""
    labels = FACT_LABELS.get(language, FACT_LABELS["en"])
    return labels.get(key) or label or key.replace("_", " ").capitalize()


_PARTS: Final = ("financial", "market", "product")


def missing_label(language: str, item: str) -> str:
    """A quality check's missing item (``"product: products"``, ``"market (section
    unavailable)"``...) in the report's words; free text (Claude's) as it is."""
    part, sep, rest = item.partition(": ")
    if item == "sources: no fact is sourced":
        return text(language, "missing_unsourced")
    if item.endswith(" (section unavailable)") and item.split(" ")[0] in _PARTS:
        return text(language, "missing_unavailable", part=text(language, item.split(" ")[0]))
    if not sep or part not in _PARTS:
        return item
    if rest == "more facts":
        return text(language, "missing_more", part=text(language, part))
    label = FACT_LABELS["en"].get(rest) and fact_label(language, rest)
    return text(language, "missing_item", part=text(language, part), item=label) if label else item
