"""Side-by-side comparisons: a table of the facts both companies have, and a few
sentences on the differences the figures support. Nothing is invented: a row
appears only when both sides have the fact, and the one computed row (net margin)
is labelled as computed."""

from __future__ import annotations

import re
from typing import Final

from ...sources import FACT_KEYS, ResearchFindings, fiscal_year, parse_money

__all__ = ["MARGIN_LABEL", "comparison_table", "difference_sentences", "net_margin"]

ROW_LABELS: Final[dict[str, dict[str, str]]] = {
    "en": {
        "revenue": "Revenue",
        "net_income": "Net income",
        "employees": "Employees",
        "headquarters": "Headquarters",
        "founded": "Founded",
        "ceo": "CEO",
        "indices": "Index memberships",
    },
    "ja": {
        "revenue": "売上高",
        "net_income": "純利益",
        "employees": "従業員数",
        "headquarters": "本社",
        "founded": "設立",
        "ceo": "CEO",
        "indices": "株価指数",
    },
}
MARGIN_LABEL: Final[dict[str, str]] = {
    "en": "Net margin (net income ÷ revenue, computed)",
    "ja": "純利益率（純利益÷売上高、計算値）",
}
_NUMBER_RE: Final = re.compile(r"\d[\d,]*")


def net_margin(findings: ResearchFindings) -> float | None:
    """Net income over revenue, in percent, when both are in the same currency."""
    revenue = parse_money(findings.facts.get("revenue"))
    income = parse_money(findings.facts.get("net_income"))
    if revenue is None or income is None or revenue.currency != income.currency:
        return None
    if revenue.amount <= 0:
        return None
    return 100 * income.amount / revenue.amount


def _mixed_years_note(findings: ResearchFindings, lang: str) -> str:
    """ " (revenue FY2024, net income FY2023)" when the margin mixes fiscal years."""
    revenue = fiscal_year(findings.facts.get("revenue"))
    income = fiscal_year(findings.facts.get("net_income"))
    if revenue is None or income is None or revenue == income:
        return ""
    if lang == "ja":
        return f"（売上高{revenue}、純利益{income}：年度が異なる）"
    return f" (revenue {revenue}, net income {income}: different years)"


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def comparison_table(items: list[ResearchFindings], lang: str = "en") -> str | None:
    """A Markdown table of the facts every company has; ``None`` if they share none."""
    labels = ROW_LABELS["ja" if lang == "ja" else "en"]
    keys = [key for key in FACT_KEYS if all(key in item.facts for item in items)]
    if not keys:
        return None
    header = "| | " + " | ".join(_cell(item.company) for item in items) + " |"
    rows = [header, "|---" * (len(items) + 1) + "|"]
    for key in keys:
        cells = " | ".join(_cell(item.facts[key]) for item in items)
        rows.append(f"| {labels[key]} | {cells} |")
        if key == "net_income":
            margins = [net_margin(item) for item in items]
            if all(margin is not None for margin in margins):
                cells = " | ".join(
                    f"{margin:.1f}%" + _mixed_years_note(item, lang)
                    for item, margin in zip(items, margins, strict=True)
                    if margin is not None
                )
                rows.append(f"| {MARGIN_LABEL['ja' if lang == 'ja' else 'en']} | {cells} |")
    return "\n".join(rows)


def _headcount(text: str | None) -> int | None:
    match = _NUMBER_RE.search(text or "")
    return int(match.group().replace(",", "")) if match else None


def difference_sentences(
    first: ResearchFindings, second: ResearchFindings, lang: str = "en"
) -> list[str]:
    """Up to three sentences on revenue, margin and headcount, each only when both
    figures exist and are comparable (same currency)."""
    ja = lang == "ja"
    a, b = first.company, second.company
    sentences = []
    rev_a, rev_b = parse_money(first.facts.get("revenue")), parse_money(second.facts.get("revenue"))
    if rev_a and rev_b and rev_a.currency == rev_b.currency and min(rev_a.amount, rev_b.amount) > 0:
        big, small = (rev_a, rev_b) if rev_a.amount >= rev_b.amount else (rev_b, rev_a)
        names = (a, b) if big is rev_a else (b, a)
        ratio = big.amount / small.amount
        sentences.append(
            f"売上高は{names[0]}の方が大きく、{big.text}対{small.text}（{ratio:.1f}倍）です。"
            if ja
            else f"{names[0]} has the larger revenue ({big.text} against {small.text}, "
            f"{ratio:.1f} times as much)."
        )
    margin_a, margin_b = net_margin(first), net_margin(second)
    if margin_a is not None and margin_b is not None:
        best, other = (a, b) if margin_a >= margin_b else (b, a)
        high, low = max(margin_a, margin_b), min(margin_a, margin_b)
        sentences.append(
            f"純利益率は{best}の方が高く、{high:.1f}%対{low:.1f}%です。"
            if ja
            else f"{best} keeps more of each sale as profit: a net margin of {high:.1f}% "
            f"against {low:.1f}% for {other.rstrip('.')}."
        )
    staff_a, staff_b = (
        _headcount(first.facts.get("employees")),
        _headcount(second.facts.get("employees")),
    )
    if staff_a and staff_b and staff_a != staff_b:
        more, fewer = (a, b) if staff_a > staff_b else (b, a)
        high_staff, low_staff = max(staff_a, staff_b), min(staff_a, staff_b)
        sentences.append(
            f"従業員数は{more}の方が多く、{high_staff:,}人対{low_staff:,}人です。"
            if ja
            else f"{more} employs more people ({high_staff:,} against {low_staff:,} at {fewer})."
        )
    return sentences
