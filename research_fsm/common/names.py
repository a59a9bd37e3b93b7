"""Company names as people type them: lower-case tickers, typos, possessives, brands,
katakana and kanji; and the question asked back when several companies fit."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from ..sources import COMMON_WORDS, PLACES, CompanyIndex, Token, tokenize
from .text import is_japanese

__all__ = [
    "JA_NAMES",
    "MAX_CHOICES",
    "Mentions",
    "ask_choices",
    "find_companies",
    "mentions",
    "pick_choice",
    "slot_name",
    "typed_companies",
]

MAX_CHOICES: Final = 10
"""Most companies offered when a name fits several."""

JA_NAMES: Final[dict[str, str]] = {
    # the best-known foreign companies
    "アップル": "Apple",
    "マイクロソフト": "Microsoft",
    "グーグル": "Google",
    "アルファベット": "Alphabet",
    "アマゾン": "Amazon",
    "テスラ": "Tesla",
    "エヌビディア": "Nvidia",
    "メタ": "Meta Platforms",
    "フェイスブック": "Facebook",
    "インテル": "Intel",
    "ネットフリックス": "Netflix",
    "コカ・コーラ": "Coca-Cola",
    "コカコーラ": "Coca-Cola",
    "ナイキ": "Nike",
    "ディズニー": "Disney",
    "オラクル": "Oracle",
    "ボーイング": "Boeing",
    "シーメンス": "Siemens",
    "ネスレ": "Nestlé",
    "フォルクスワーゲン": "Volkswagen",
    "マクドナルド": "McDonald's",
    "スターバックス": "Starbucks",
    "ウォルマート": "Walmart",
    "ファイザー": "Pfizer",
    # the directory's Japanese companies
    "トヨタ自動車": "Toyota",
    "トヨタ": "Toyota",
    "ソニー": "Sony",
    "任天堂": "Nintendo",
    "本田技研工業": "Honda",
    "ホンダ": "Honda",
    "日産自動車": "Nissan",
    "日産": "Nissan",
    "パナソニック": "Panasonic",
    "ソフトバンク": "SoftBank",
    "日立製作所": "Hitachi",
    "日立": "Hitachi",
    "三菱UFJ": "Mitsubishi UFJ Financial Group",
    "三菱": "Mitsubishi",
    "三井": "Mitsui",
    "住友": "Sumitomo",
    "三井住友フィナンシャル": "Sumitomo Mitsui Financial Group",
    "みずほ": "Mizuho Financial Group",
    "富士通": "Fujitsu",
    "東京エレクトロン": "Tokyo Electron",
    "キーエンス": "Keyence",
    "ファナック": "FANUC",
    "武田薬品": "Takeda Pharmaceutical Company",
    "ファーストリテイリング": "Fast Retailing",
    "ユニクロ": "Fast Retailing",
    "楽天": "Rakuten",
    "村田製作所": "Murata Manufacturing",
    "デンソー": "Denso",
    "京セラ": "Kyocera",
    "信越化学": "Shin-Etsu Chemical",
    "ダイキン": "Daikin Industries",
    "資生堂": "Shiseido",
    "花王": "Kao Corporation",
    "味の素": "Ajinomoto",
    "キリン": "Kirin Company",
    "アサヒ": "Asahi Breweries",
    "日本電信電話": "Nippon Telegraph & Telephone",
    "三菱商事": "Mitsubishi Corporation",
    "三井物産": "Mitsui & Co.",
    "伊藤忠": "Itochu",
    "丸紅": "Marubeni",
    "住友商事": "Sumitomo Corporation",
    "日本製鉄": "Nippon Steel",
    "ブリヂストン": "Bridgestone",
    "オリンパス": "Olympus Corporation",
    "ニコン": "Nikon",
    "リクルート": "Recruit",
    "野村ホールディングス": "Nomura Holdings",
    "東京海上": "Tokio Marine Holdings",
    "セブン&アイ": "Seven & I Holdings Co.",
    "イオン": "AEON",
    "ニトリ": "Nitori",
    "無印良品": "Muji",
    "コナミ": "Konami",
    "バンダイナムコ": "Bandai Namco Holdings",
    "スバル": "Subaru Corporation",
    "マツダ": "Mazda",
    "三菱電機": "Mitsubishi Electric",
    "三菱重工": "Mitsubishi Heavy Industries",
    "シャープ": "Sharp Corporation",
    "富士フイルム": "Fujifilm",
    "日本航空": "Japan Airlines",
    "全日空": "All Nippon Airways",
    "JR東日本": "East Japan Railway Company",
    "ヤマハ発動機": "Yamaha Motor Company",
    "ヤマハ": "Yamaha Corporation",
    "カシオ": "Casio",
    "リコー": "Ricoh",
    "オムロン": "Omron",
    "第一三共": "Daiichi Sankyo",
    "アステラス": "Astellas Pharma",
    "エーザイ": "Eisai Co.",
    "塩野義": "Shionogi",
    "三菱自動車": "Mitsubishi Motors",
    "いすゞ": "Isuzu",
    "コマツ": "Komatsu Limited",
    "小松製作所": "Komatsu Limited",
    "クボタ": "Kubota Corporation",
    "日本郵政": "Japan Post Holdings",
    "日野自動車": "Hino Motors",
    "あおぞら銀行": "Aozora Bank",
    "千葉銀行": "Chiba Bank",
    "横浜銀行": "Bank of Yokohama",
    "りそな": "Resona Holdings",
    "三井住友トラスト": "Sumitomo Mitsui Trust Holdings",
    "旭化成": "Asahi Kasei",
    "デンカ": "Denka",
    "クラレ": "Kuraray",
    "三菱ケミカル": "Mitsubishi Chemical Holdings",
    "三井化学": "Mitsui Chemicals",
    "日産化学": "Nissan Chemical Industries",
    "レゾナック": "Resonac",
    "住友化学": "Sumitomo Chemical",
    "トクヤマ": "Tokuyama Corporation",
    "東ソー": "Tosoh",
    "宇部興産": "Ube Industries",
    "KDDI": "KDDI",
    "NTTデータ": "NTT Data",
    "NTT": "Nippon Telegraph & Telephone",
    "コムシス": "Comsys",
    "大和ハウス": "Daiwa House Industry",
    "長谷工": "Haseko",
    "日揮": "JGC Corporation",
    "鹿島建設": "Kajima Construction",
    "大林組": "Obayashi Corp.",
    "積水ハウス": "Sekisui House",
    "清水建設": "Shimizu Corporation",
    "アドバンテスト": "Advantest",
    "富士電機": "Fuji Electric",
    "ジーエス・ユアサ": "GS Yuasa",
    "レーザーテック": "Lasertec Corporation",
    "ミネベアミツミ": "MinebeaMitsumi",
    "日本電気": "NEC",
    "NEC": "NEC",
    "ニデック": "Nidec",
    "日本電産": "Nidec",
    "ルネサス": "Renesas Electronics",
    "SCREEN": "SCREEN Holdings",
    "ソシオネクスト": "Socionext",
    "太陽誘電": "Taiyo Yuden",
    "TDK": "TDK",
    "安川電機": "Yaskawa Electric Corporation",
    "中部電力": "Chubu Electric Power",
    "関西電力": "Kansai Electric Power Company",
    "東京電力": "Tokyo Electric Power Company",
    "ニッスイ": "Nissui",
    "日本たばこ産業": "Japan Tobacco",
    "キッコーマン": "Kikkoman",
    "明治ホールディングス": "Meiji Holdings",
    "日本ハム": "Nippon Ham",
    "日清製粉": "Nisshin Seifun Group",
    "サッポロ": "Sapporo Breweries",
    "大阪ガス": "Osaka Gas",
    "東京ガス": "Tokyo Gas",
    "AGC": "AGC Inc.",
    "日本ガイシ": "NGK Insulators",
    "日本電気硝子": "Nippon Electric Glass",
    "太平洋セメント": "Taiheiyo Cement",
    "東海カーボン": "Tokai Carbon",
    "第一生命": "Dai-ichi Life",
    "MS&AD": "MS&AD Insurance Group",
    "ヤマト運輸": "Yamato Transport",
    "アマダ": "Amada Co",
    "荏原製作所": "Ebara Corporation",
    "日立建機": "Hitachi Construction Machinery",
    "カナデビア": "Kanadevia",
    "IHI": "IHI Corporation",
    "日本製鋼所": "Japan Steel Works",
    "ジェイテクト": "JTEKT",
    "日本精工": "NSK Ltd.",
    "NTN": "NTN Corporation",
    "オークマ": "Okuma Holdings",
    "住友重機械": "Sumitomo Heavy Industries",
    "SMC": "SMC Corporation",
    "川崎汽船": "K Line",
    "商船三井": "Mitsui O.S.K. Lines",
    "日本郵船": "Nippon Yusen",
    "INPEX": "Inpex",
    "DOWA": "Dowa Holdings",
    "フジクラ": "Fujikura",
    "古河電気工業": "Furukawa Electric",
    "古河電工": "Furukawa Electric",
    "三菱マテリアル": "Mitsubishi Materials",
    "三井金属": "Mitsui Mining & Smelting",
    "SUMCO": "SUMCO",
    "住友電気工業": "Sumitomo Electric Industries",
    "住友電工": "Sumitomo Electric Industries",
    "住友金属鉱山": "Sumitomo Metal Mining",
    "クレディセゾン": "Credit Saison",
    "日本取引所": "Japan Exchange Group",
    "オリックス": "Orix",
    "TOPPAN": "Toppan Printing",
    "凸版印刷": "Toppan Printing",
    "ENEOS": "Eneos Holdings",
    "出光興産": "Idemitsu Kosan",
    "協和キリン": "Kyowa Hakko Kirin",
    "住友ファーマ": "Sumitomo Dainippon Pharma",
    "ディスコ": "Disco Corporation",
    "コニカミノルタ": "Konica Minolta",
    "テルモ": "Terumo",
    "王子製紙": "Oji Paper Company",
    "王子ホールディングス": "Oji Paper Company",
    "JR東海": "Central Japan Railway Company",
    "京王": "Keio Corporation",
    "京成電鉄": "Keisei Electric Railway",
    "東武鉄道": "Tobu Railway",
    "東急不動産": "Tokyu Land",
    "東急": "Tokyu Corporation",
    "JR西日本": "West Japan Railway Company",
    "三菱地所": "Mitsubishi Estate",
    "三井不動産": "Mitsui Fudosan",
    "東京建物": "Tokyo Tatemono",
    "Jフロント": "J. Front Retailing",
    "丸井": "Marui",
    "高島屋": "Takashimaya",
    "大和証券": "Daiwa Securities Group",
    "サイバーエージェント": "CyberAgent",
    "DeNA": "DeNA",
    "電通": "Dentsu",
    "LINEヤフー": "LY Corporation",
    "メルカリ": "Mercari",
    "ネクソン": "Nexon",
    "野村総合研究所": "Nomura Research Institute",
    "オリエンタルランド": "The Oriental Land Company",
    "セコム": "Secom",
    "SHIFT": "SHIFT Inc.",
    "東宝": "Toho",
    "川崎重工": "Kawasaki Heavy Industries",
    "JFE": "JFE Holdings",
    "神戸製鋼": "Kobe Steel",
    "帝人": "Teijin",
    "東レ": "Toray Industries",
    "双日": "Sojitz",
    "豊田通商": "Toyota Tsusho",
}
"""Names written in katakana or kanji (or in the Latin letters Japanese text uses for
them) -> a name the company index resolves: every Japanese company of the directory,
and the best-known foreign ones."""

_JA_KEYS: Final = sorted((key for key in JA_NAMES if not key.isascii()), key=len, reverse=True)
"""The keys in Japanese script (names in Latin letters are found as any other name)."""
_KATAKANA_RE: Final = re.compile(r"[\u30a0-\u30ff]")
_JA_SUFFIXES: Final = ("グループ", "ホールディングス", "ジャパン")


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether a katakana name at ``text[start:end]`` is a word of its own, not part of a
    longer katakana word ("イオン" in "リチウムイオン電池"); "グループ" may follow."""
    key = text[start:end]
    if not _KATAKANA_RE.match(key[-1]):
        return True
    before = text[start - 1] if start > 0 else ""
    if before and _KATAKANA_RE.match(before) and _KATAKANA_RE.match(key[0]):
        return False
    after = text[end:]
    return not (after and _KATAKANA_RE.match(after[0]) and not after.startswith(_JA_SUFFIXES))


_NOT_NAME_WORDS: Final = frozenset({"i", "you", "tell", "whats", "please", "about", "me"})


def _japanese_keys(text: str) -> list[str]:
    """The ``JA_NAMES`` keys written in ``text`` as words of their own, longest first
    where they overlap, in order of appearance."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for key in _JA_KEYS:
        start = text.find(key)
        while start >= 0:
            end = start + len(key)
            if not any(a < end and start < b for a, b in taken) and _stands_alone(text, start, end):
                found.append((start, key))
                taken.append((start, end))
            start = text.find(key, end)
    return [key for _, key in sorted(found)]


_DESCRIPTIVE: Final = frozenset(
    [
        "american",
        "british",
        "swiss",
        "japanese",
        "german",
        "french",
        "european",
        "chinese",
        "korean",
        "indian",
        "canadian",
        "dutch",
        "italian",
        "spanish",
        "international",
        "national",
        "global",
        "world",
        "first",
        "standard",
        "public",
        "federal",
        "central",
        "western",
        "northern",
        "southern",
        "eastern",
    ]
)
"""Words that start several companies' names but, alone, describe ("American companies")."""

_SLOT_BEFORE: Final = frozenset({"about", "vs", "versus", "to", "with", "and", "or", "compare"})
_SLOT_AFTER: Final = frozenset({"vs", "versus", "and", "or"})
_CLAUSE_END_RE: Final = re.compile(r"\s*(?:[?.!,;:]|$)")


def _in_name_slot(text: str, tokens: list[Token], position: int) -> bool:
    """Whether the word at ``position`` stands where a company name goes: after
    "about", "vs", "compare ... to" and before the end of the clause ("tell me about
    intel", "nvidia vs intel?"), or before "vs" ("intel vs amd")."""
    token = tokens[position]
    before = tokens[position - 1].norm if position else ""
    after = tokens[position + 1].norm if position + 1 < len(tokens) else ""
    rest = text[token.start + len(token.raw) :]
    clause_ends = after in _SLOT_AFTER or bool(_CLAUSE_END_RE.match(rest))
    return len(tokens) == 1 or (before in _SLOT_BEFORE and clause_ends) or after in _SLOT_AFTER


@dataclass(frozen=True, slots=True)
class Mentions:
    """The companies a text names, or the candidates of a name that fits several."""

    names: list[str] = field(default_factory=list)
    """Companies named, in order."""
    choices: list[str] = field(default_factory=list)
    """When a name fits several companies ("Deutsche", "Mitsubishi"), or matched too
    weakly to answer (a short typo): the candidates."""
    unknown: list[str] = field(default_factory=list)
    """Names as written that no company of the index has ("SpaceX")."""
    weak: str | None = None
    """When ``choices`` come from a match too weak to answer (a short typo, "Dyson"
    for Tyson Foods): the name as written, which no company has exactly."""
    evidence: dict[str, str] = field(default_factory=dict)
    """Per company named: ``exact``, ``ticker``, ``prefix`` or ``typo``."""
    matched: dict[str, str] = field(default_factory=dict)
    """Per company named: the text as written."""


def mentions(index: CompanyIndex, text: str, *, typed: bool = False) -> Mentions:
    """The companies ``text`` names, as a person means them: katakana and kanji names,
    then names, aliases, tickers, starts of names and clear typos in any case, as
    ``CompanyIndex.find_names`` finds them (``typed`` is accepted for compatibility:
    names typed in any case are always read). A name that fits several companies
    ("Deutsche", "Mitsubishi") gives those companies as ``choices``."""
    del typed
    names: list[str] = []
    if is_japanese(text):
        for key in _japanese_keys(text):
            found = index.candidates(JA_NAMES[key])
            if len(found) > 1:  # 三菱: eight companies
                return Mentions(names, [ref.name for ref in found][:MAX_CHOICES])
            if found and found[0].name not in names:
                names.append(found[0].name)
    resolution = index.find_names(text)
    for name in resolution.companies:
        if name not in names:
            names.append(name)
    unknown = [name for name in resolution.unknown if name.lower() not in PLACES]
    return Mentions(
        names,
        resolution.choices[:MAX_CHOICES],
        unknown,
        resolution.weak,
        dict(resolution.evidence),
        dict(resolution.matched),
    )


_ANSWER_FILLERS: Final = frozenset({"the", "a", "an", "one", "mean", "that", "it", "is", "its"})


def slot_name(text: str) -> str | None:
    """A word in any case where a company name goes that no company has ("tell me about
    acme" -> "acme"): the name to say was not found, rather than asking which company."""
    tokens = tokenize(text)
    for position, token in enumerate(tokens):
        word = token.norm
        if (
            len(tokens) > 1
            and word.isalpha()
            and len(word) >= 3
            and word not in COMMON_WORDS | _NOT_NAME_WORDS | PLACES | _DESCRIPTIVE
            and _in_name_slot(text, tokens, position)
        ):
            return token.raw
    return None


def pick_choice(choices: list[str], answer: str) -> str | None:
    """The one offered company an answer to "which one?" names by some of its words
    ("heavy industries" among the Mitsubishis), or ``None``."""
    words = {token.norm for token in tokenize(answer)} - _NOT_NAME_WORDS - _ANSWER_FILLERS
    if not words:
        return None
    fitting = [choice for choice in choices if words <= {token.norm for token in tokenize(choice)}]
    return fitting[0] if len(fitting) == 1 else None


def typed_companies(index: CompanyIndex, text: str) -> list[str]:
    """Companies written the way people type them (lower-case tickers, typos, names in
    any case, the start of one company's name): those ``mentions`` answers with."""
    return mentions(index, text).names


def find_companies(index: CompanyIndex, text: str) -> list[str]:
    """Companies named in ``text``, in order: katakana/kanji names, then names, aliases,
    tickers and clear typos as ``CompanyIndex.find_names`` finds them."""
    return mentions(index, text).names


def ask_choices(choices: list[str], lang: str, weak: str | None = None) -> str:
    """The question asked back when a name or description fits several companies; for
    a ``weak`` match (a short typo), says plainly that the name as written is not in
    the directory and offers the near names."""
    if lang == "ja":
        if weak is not None:
            return (
                f"「{weak}」はオフラインのディレクトリにありません。"
                f"{'、'.join(choices)}のことですか？会社名で答えてください。"
            )
        return f"どの会社ですか: {'、'.join(choices)}？会社名で答えてください。"
    listed = ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]
    if weak is not None:
        return (
            f'"{weak}" is not in the offline directory. Did you mean {listed}? Reply with its name.'
        )
    return f"Which company do you mean: {listed}? Reply with its name."
