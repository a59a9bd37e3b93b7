"""The numbers a sentence states, compared as numbers: a claim is grounded in a quote
only when every number it states is one the quote states.

``figures("Revenue rose 12.0% to $1,234 million")`` is ``{"12", "1234"}``: text
NFKC-normalised (full-width digits count), thousands separators dropped, a decimal
written without its trailing zeros; a version such as ``2.7.1`` stays as written.

A number the writer calculated is labelled with its calculation right after it:
``"grew 10% (computed: (110 - 100) / 100)"``. ``missing_figures`` accepts such a number
when every operand of the calculation (besides the constants 1 and 100) is a number the
evidence states and the calculation gives the number, within the rounding of the digits
written (a number followed by ``%`` may be the result times 100). A label that does not
hold exempts nothing: its number and its operands are checked like any other.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Final

__all__ = ["COMPUTED_LABEL", "figures", "missing_figures"]

COMPUTED_LABEL: Final = "computed"
"""The word that opens a calculation's label: ``(computed: EXPRESSION)``."""
_LABEL: Final = re.compile(r"\(\s*(?:computed|計算)\s*:", re.IGNORECASE)
_EXPRESSION: Final = re.compile(r"[\d\s.,+\-*/()]*")
_CONSTANTS: Final = frozenset({"1", "100"})

_NUMBER: Final = re.compile(r"(?<![\w.])\d+(?:,\d{3})+(?:\.\d+)?(?![\d,])|\d+(?:\.\d+)*")


def _canonical(raw: str) -> str:
    plain = raw.replace(",", "")
    if plain.count(".") > 1:
        return plain
    try:
        value = Decimal(plain).normalize()
    except InvalidOperation:  # pragma: no cover - the pattern only matches digits
        return plain
    return format(value, "f")


def figures(text: str) -> set[str]:
    """The numbers ``text`` states, each in one canonical form."""
    return {_canonical(raw) for raw in _NUMBER.findall(unicodedata.normalize("NFKC", text))}


def _evaluate(expression: str) -> Fraction | None:
    """The value of ``+ - * /`` on numbers and parentheses, exactly; ``None`` otherwise."""
    try:
        tree = ast.parse(expression.replace(",", "").strip(), mode="eval")
    except (SyntaxError, ValueError):
        return None

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return Fraction(str(node.value))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp):
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div) and right != 0:
                return left / right
        raise ValueError(expression)

    try:
        return value(tree.body)
    except ValueError:
        return None


def _matches(written: str, result: Fraction, percent: bool) -> bool:
    """``written`` is ``result`` (or, after ``%``, ``result`` x 100) to its digits."""
    digits = len(written.partition(".")[2])
    tolerance = Fraction(1, 2 * 10**digits)
    stated = Fraction(written)
    return any(
        abs(stated - candidate) <= tolerance
        for candidate in ((result, result * 100) if percent else (result,))
    )


def _labels(text: str) -> list[tuple[int, int, str]]:
    """Each ``(computed: EXPRESSION)`` in ``text``: its start, end and expression (the
    expression's own parentheses balanced)."""
    found = []
    for label in _LABEL.finditer(text):
        tail = _EXPRESSION.match(text, label.end())
        assert tail is not None  # the pattern matches the empty string
        depth = 0
        for index in range(label.end(), tail.end()):
            if text[index] == "(":
                depth += 1
            elif text[index] == ")":
                if depth == 0:
                    found.append((label.start(), index + 1, text[label.end() : index]))
                    break
                depth -= 1
    return found


def _computed(text: str, stated: set[str]) -> tuple[str, set[str]]:
    """``text`` without its labels that hold, and the numbers those labels calculate."""
    exempt: set[str] = set()
    kept: list[str] = []
    position = 0
    for start, end, expression in _labels(text):
        before = text[position:start]
        numbers = list(_NUMBER.finditer(before))
        operands = figures(expression) - _CONSTANTS
        result = _evaluate(expression)
        if numbers and result is not None and operands <= stated:
            target = numbers[-1]
            percent = before[target.end() :].lstrip().startswith("%")
            written = _canonical(target.group())
            if written.count(".") <= 1 and _matches(written, result, percent):
                exempt.add(written)
                kept.append(before[: target.start()] + before[target.end() :])
                position = end
                continue
        kept.append(text[position:end])
        position = end
    kept.append(text[position:])
    return "".join(kept), exempt


def missing_figures(claim: str, evidence: str) -> list[str]:
    """The numbers of ``claim`` that ``evidence`` does not state (empty: all are there),
    a labelled calculation from numbers it states counting as stated (see above)."""
    stated = figures(evidence)
    rest, _ = _computed(unicodedata.normalize("NFKC", claim), stated)
    return sorted(figures(rest) - stated)
