"""The Japanese font of PDFs: Noto Sans JP (SIL Open Font License 1.1), as shipped by
the ``justmytype-intl-cjk`` package (the ``pdf-ja`` extra), embedded in each PDF.

reportlab's built-in Japanese CID fonts are never embedded: a reader without Japanese
fonts shows blank glyphs. Noto Sans JP is a variable TrueType font whose default
instance is Thin; reportlab embeds TrueType but knows nothing of variations, so each
document gets a font of its own: the variable font cut down (fontTools) to the
characters the document uses, then fixed at the Regular (400) and Bold (700) weights.
reportlab embeds those as subsets, so the text stays selectable and extractable.
"""

from __future__ import annotations

import hashlib
import importlib.util
from io import BytesIO
from pathlib import Path
from typing import Final

from ..errors import ResearchError

__all__ = ["FONT_LICENSE", "FONT_NAME", "FONT_PACKAGE", "MissingFontError", "japanese_fonts"]

FONT_NAME: Final = "Noto Sans JP"
FONT_LICENSE: Final = "SIL Open Font License 1.1"
FONT_PACKAGE: Final = "justmytype-intl-cjk"
_FONT_FILE: Final = "fonts/ofl/notosansjp/NotoSansJP[wght].ttf"
_ALWAYS: Final = "".join(chr(code) for code in range(0x20, 0x7F))


class MissingFontError(ResearchError, RuntimeError):
    """A Japanese PDF was asked for without the ``pdf-ja`` extra that ships its font."""


def font_file() -> Path:
    """The variable Noto Sans JP file; ``MissingFontError`` when its package is absent."""
    spec = importlib.util.find_spec("justmytype_intl_cjk")
    has_tools = importlib.util.find_spec("fontTools") is not None
    if spec is None or not spec.submodule_search_locations or not has_tools:
        raise MissingFontError(
            "Japanese PDFs need the Noto Sans JP font: pip install 'research-fsm[pdf-ja]' "
            "(the Markdown report needs nothing more)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _FONT_FILE
    if not path.is_file():
        raise MissingFontError(f"the {FONT_PACKAGE} package has no {_FONT_FILE}; reinstall it")
    return path


def _instance(path: Path, text: str, weight: int) -> bytes:
    """``path``'s variable font cut to the glyphs of ``text`` and fixed at ``weight``."""
    from fontTools import subset
    from fontTools.ttLib import TTFont
    from fontTools.varLib import instancer

    font = TTFont(str(path), lazy=True)
    options = subset.Options()
    options.layout_features = []  # reportlab shapes nothing: plain cmap lookups
    options.drop_tables += ["GSUB", "GPOS", "GDEF", "BASE", "STAT"]
    options.name_IDs = ["*"]  # keep the copyright and licence records
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text)
    subsetter.subset(font)
    fixed = instancer.instantiateVariableFont(font, {"wght": weight})
    style = "Bold" if weight >= 700 else "Regular"
    for record in fixed["name"].names:  # the instance keeps the default's "Thin" names
        if record.nameID in (2, 17):
            record.string = style
        elif record.nameID == 4:
            record.string = f"{FONT_NAME} {style}"
        elif record.nameID == 6:
            record.string = f"NotoSansJP-{style}"
    out = BytesIO()
    fixed.save(out)
    return out.getvalue()


def japanese_fonts(text: str) -> tuple[str, str]:
    """Register, once per set of characters, a regular and a bold Noto Sans JP for a
    document whose text is ``text``; their reportlab names (regular, bold)."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont as ReportlabFont

    path = font_file()
    chars = "".join(sorted(set(text) | set(_ALWAYS)))
    digest = hashlib.sha256(chars.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    names = (f"NotoSansJP-{digest}", f"NotoSansJP-Bold-{digest}")
    registered = set(pdfmetrics.getRegisteredFontNames())
    for name, weight in zip(names, (400, 700), strict=True):
        if name not in registered:
            data = _instance(path, chars, weight)
            pdfmetrics.registerFont(ReportlabFont(name, BytesIO(data)))
    regular, bold = names
    # <b> in a paragraph picks the family's bold
    pdfmetrics.registerFontFamily(
        regular, normal=regular, bold=bold, italic=regular, boldItalic=bold
    )
    return names
