"""Founders' names told apart where the infobox joined them with spaces.

"Henry Sturgis Morgan Harold Stanley" is two people, "George Winthrop Fairchild
Charles Ranlett Flint Herman Hollerith" three: nothing in the value marks where a name
ends. The directory itself says which words open a name and which close one: every
key-people entry is bounded by its role ("Ted Pick (chairman and CEO)"), and founders
the infobox did separate with commas or "and" are bounded too. ``NameModel`` counts,
over the whole directory, how often each word opens, closes or sits inside such a
name, and splits a run of words where the names it yields are likeliest: given names
are a small set that repeats across the directory, family names a long tail (a word
never seen is far likelier to close a name than to open one), and a founder's family
name is often in the company's name (Morgan Stanley, Procter & Gamble).

Generational suffixes ("Jr.", "III") and post-nominals ("CBE", "M.D.") end a name;
initials ("W.", "C.L.") never do; particles ("van der") sit inside one. A list that
shares one family name ("Gerard and Anton Philips") is written out in full.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Final

__all__ = ["NameModel"]

PARTICLES: Final = frozenset(
    {
        "van",
        "der",
        "de",
        "den",
        "von",
        "da",
        "del",
        "di",
        "la",
        "le",
        "du",
        "dos",
        "das",
        "zu",
        "ter",
    }
)
"""Name particles: inside a name, never at its ends."""

TITLES: Final = frozenset({"Sir", "Dame", "Dr.", "Dr", "Prof.", "Lord"})
"""Titles that open a name before the given name."""

_SUFFIX_RE: Final = re.compile(
    r"(?:Jr|Sr|Snr|Jnr)\.?|I{1,3}|IV|(?:M\.D|Ph\.\s?D|R\.\s?Ph)\.?|[CKOMD]BE"
)
_INITIAL_RE: Final = re.compile(r"(?:[A-Z]\.){1,3}|[A-HJ-Z]|[A-Z]\.[A-Z]\.?")
_WORD_RE: Final = re.compile(r"[A-Z\u00c0-\u024f][\w'\u2019.-]*|[a-z]+['\u2019][A-Z][\w-]*")
_NICKNAME_RE: Final = re.compile(r"[\"\u201c][^\"\u201d]+[\"\u201d]|\([A-Z][\w.'-]*\)")
_COMPANY_SUFFIX_RE: Final = re.compile(r"(?:Inc|Ltd|Co|Corp|LLC|plc|AG|SA)\.?|Sons|Brothers")

# A word's place in a name, with the shares a word never seen gets: given names
# repeat across the directory, family names mostly do not.
_UNSEEN: Final = {"first": 0.15, "middle": 0.15, "last": 0.70}
_LENGTH: Final = {1: math.log(0.002), 2: math.log(0.6), 3: math.log(0.3), 4: math.log(0.05)}
_MIDDLE_FROM_FIRST: Final = 0.3
"""Middle names are given names too: a word's middle share is at least this part of its
given-name share."""
_COMPANY_BOOST: Final = 6
"""Pseudo-counts of "closes a name" for a word of the company's name."""


@cache
def _is_suffix(token: str) -> bool:
    return bool(_SUFFIX_RE.fullmatch(token.rstrip(",")))


@cache
def _is_initial(token: str) -> bool:
    return bool(_INITIAL_RE.fullmatch(token))


def _tokens(text: str) -> list[str]:
    """Words, nicknames in quotes and notes in parentheses, in order."""
    return re.findall(r"\([^()]*\)|[\"\u201c][^\"\u201d]+[\"\u201d]|[^\s\"\u201c()]+", text)


@dataclass
class NameModel:
    """How often each word opens, sits inside or closes a person's name, counted over
    names whose boundaries the data marks (see the module)."""

    first: Counter[str] = field(default_factory=Counter)
    middle: Counter[str] = field(default_factory=Counter)
    last: Counter[str] = field(default_factory=Counter)
    role: Counter[str] = field(default_factory=Counter)
    """How often each word is part of a role ("Chief", "Officer"), counted inside the
    parentheses of key-people values."""

    def learn(self, name: str) -> None:
        """Count one name whose boundaries are known ("Ted Pick", "James P. Gorman")."""
        words = name.split()
        if not words or not all(
            _WORD_RE.fullmatch(w) or w in PARTICLES or _is_initial(w) or _is_suffix(w)
            for w in words
        ):
            return
        core = [
            w
            for w in words
            if w not in PARTICLES and w not in TITLES and not _is_initial(w) and not _is_suffix(w)
        ]
        if not 2 <= len(core) <= 4:
            return
        self.first[core[0]] += 1
        self.last[core[-1]] += 1
        for word in core[1:-1]:
            self.middle[word] += 1

    @classmethod
    def from_values(cls, key_people: Iterable[str], founders: Iterable[str]) -> NameModel:
        """Learn from key-people values ("Name (role) Name (role)") and founders values
        the infobox separated ("A B, C D and E F")."""
        model = cls()
        for value in key_people:
            # a name right before its role in parentheses: "Ted Pick (chairman and CEO)"
            for part in re.findall(r"(?:^|\))\s*[,;]?\s*([^()]+?)\s*\(", value):
                model.learn(part.strip().rstrip(","))
            for note in re.findall(r"\(([^()]*)\)", value):
                model.role.update(re.findall(r"[\w&-]+", note))
        for value in founders:
            if re.search(r",|\band\b|&", value):
                for part in re.split(r"\s*(?:,|\band\b|&)\s*", re.sub(r"\([^()]*\)", " ", value)):
                    model.learn(part.strip())
        return model

    def _share(self, word: str, place: str, company: str) -> float:
        counts = {"first": self.first[word], "middle": self.middle[word], "last": self.last[word]}
        if len(word) >= 4 and word.lower() in company:  # "Dräger" of "Drägerwerk"
            counts["last"] += _COMPANY_BOOST
        total = sum(counts.values())
        share = (counts[place] + _UNSEEN[place]) / (total + 1.0)
        if place == "middle":
            first = (counts["first"] + _UNSEEN["first"]) / (total + 1.0)
            share = max(share, _MIDDLE_FROM_FIRST * first)
        return share

    def _name_score(self, words: list[str], company: str) -> float:
        """Log-likelihood of ``words`` being one whole name (``-inf`` if impossible)."""
        while words and _is_suffix(words[-1]) and len(words) > 1:
            words = words[:-1]
        if words and words[0] in TITLES:
            words = words[1:]
        if not words:
            return -math.inf
        core = [w for w in words if w not in PARTICLES and not _NICKNAME_RE.fullmatch(w)]
        if not core or _is_initial(core[-1]) or words[-1] in PARTICLES or words[0] in PARTICLES:
            return -math.inf
        if any(_is_suffix(w) for w in words[:-1] if not _is_initial(w)):
            return -math.inf
        named = [w for w in core if not _is_initial(w)]
        length = _LENGTH.get(len(named) + (1 if _is_initial(core[0]) else 0))
        if length is None:
            return -math.inf
        if len(core) == 1:
            return length + math.log(self._share(core[0], "last", company))
        score = length + math.log(self._share(core[-1], "last", company))
        if not _is_initial(core[0]):
            score += math.log(self._share(core[0], "first", company))
        for word in core[1:-1]:
            if not _is_initial(word):
                score += math.log(self._share(word, "middle", company))
        return score

    def split_run(self, words: list[str], company: str = "") -> list[str]:
        """The likeliest division of a run of words into names (dynamic programme over
        where each name ends)."""
        n = len(words)
        best: list[tuple[float, int]] = [(0.0, 0)] + [(-math.inf, 0)] * n
        for end in range(1, n + 1):
            for start in range(max(0, end - 8), end):
                if best[start][0] == -math.inf:
                    continue
                score = best[start][0] + self._name_score(words[start:end], company)
                if score > best[end][0]:
                    best[end] = (score, start)
        if best[n][0] == -math.inf:
            return [" ".join(words)] if words else []
        names: list[str] = []
        end = n
        while end > 0:
            start = best[end][1]
            names.append(" ".join(words[start:end]))
            end = start
        return names[::-1]

    def split(self, value: str, company: str = "") -> list[str]:
        """The people of a founders value, one whole name each (a note in parentheses
        stays with the name before it)."""
        # a family name: in the company's name, or repeated in the value (siblings)
        words = Counter(re.findall(r"[A-Z][\w'\u2019-]{2,}", value))
        company_name = " ".join([company, *(w for w, n in words.items() if n > 1)]).lower()
        text = re.sub(r"\s*,?\s*\bet al\b\.?", " et al.", value)
        groups: list[tuple[list[list[str]], str]] = []  # ([segments], note after them)
        segments: list[list[str]] = [[]]
        for token in _tokens(text):
            if _NICKNAME_RE.fullmatch(token) and len(segments[-1]) == 1:
                segments[-1].append(token)  # "Richard (Doc) Farmer": a nickname
            elif token.startswith("("):
                groups.append((segments, token))
                segments = [[]]
            elif token in {"and", "&", ",", ";"} or token.endswith((",", ";")):
                word = token.rstrip(",;")
                if word and word not in {"and", "&"}:
                    segments[-1].append(word)
                segments.append([])
            else:
                segments[-1].append(token)
        groups.append((segments, ""))
        names: list[str] = []
        for group, note in groups:
            people = self._group([s for s in group if s], company_name)
            if note and people:
                people[-1] = f"{people[-1]} {note}"
            elif note and names:
                names[-1] = f"{names[-1]} {note}"
            names.extend(people)
        return [name for name in names if name]

    def _group(self, segments: list[list[str]], company: str) -> list[str]:
        """Names of segments the value separated with commas or "and"."""
        merged: list[list[str]] = []
        for segment in segments:
            lead = 0
            while merged and lead < len(segment) and _is_suffix(segment[lead]):
                lead += 1  # "Jasper Rand, Jr. Robert Gardner": the suffix ends the name before
            if lead:
                merged[-1].extend(segment[:lead])
                segment = segment[lead:]
            if not segment:
                continue
            if merged and (
                all(_is_suffix(w) or _is_initial(w) for w in segment)
                or _is_suffix(" ".join(segment))
                or segment == ["et", "al."]
            ):
                merged[-1].append(" ".join(segment))  # "Vereen, Jr.", "Patel, R. Ph"
            elif merged and len(segment) == 1 and _COMPANY_SUFFIX_RE.fullmatch(segment[0]):
                joiner = [] if segment[0].endswith(".") else ["&"]
                merged[-1].extend([*joiner, segment[0]])  # "System, Inc.", "Zimmerer and Sons"
            else:
                merged.append(segment)
        if (
            len(merged) >= 2
            and len(merged[-1]) >= 2
            and all(len(s) == 1 and _WORD_RE.fullmatch(s[0]) for s in merged[:-1])
        ):
            # "Gerard and Anton Philips": the given names share the last family name
            family = merged[-1][1:]
            return [" ".join([s[0], *family]) for s in merged[:-1]] + [" ".join(merged[-1])]
        names: list[str] = []
        for segment in merged:
            if segment[-2:] == ["et", "al."]:
                segment = [*segment[:-2], "et al."]
            if _COMPANY_SUFFIX_RE.fullmatch(segment[-1]):
                names.append(" ".join(segment))  # "Tokyo Broadcasting System, Inc."
            elif segment[-1] == "et al." and len(segment) > 1:
                names.extend(self.split_run(segment[:-1], company))
                names[-1] += " et al."
            else:
                names.extend(self.split_run(segment, company))
        return names

    def _is_role(self, token: str) -> bool:
        """Whether ``token`` belongs to a role rather than a name: lower case, an
        acronym ("CEO"), or a word the directory's roles use more than its names."""
        word = token.strip(",:;")
        if not word or word in {"&", "-", "\u2013", "/"}:
            return True
        if word in PARTICLES or _is_suffix(word) or _is_initial(word):
            return False
        if word[0].islower() or (len(word) >= 2 and word.isupper() and word.isalpha()):
            return True
        names = self.first[word] + self.middle[word] + self.last[word]
        return self.role[word] > 2 * names or (self.role[word] >= 1 and names == 0)

    def _unseen(self, token: str) -> bool:
        word = token.strip(",:;")
        return bool(word[:1].isupper()) and not (
            self.first[word] or self.middle[word] or self.last[word] or _is_initial(word)
        )

    def _roles(self, tokens: list[str]) -> list[bool]:
        """Which tokens are role words; words never seen in a name, between two role
        words, are role words too ("Chief Consumer Banker")."""
        flags = [self._is_role(token) for token in tokens]
        i = 0
        while i < len(tokens):
            j = i
            while j < len(tokens) and not flags[j] and self._unseen(tokens[j]):
                j += 1
            bounded = j > i and i > 0 and flags[i - 1] and j < len(tokens) and flags[j]
            if bounded and not tokens[i - 1].endswith(",") and not tokens[j - 1].endswith(","):
                flags[i:j] = [True] * (j - i)
            i = max(j, i + 1)
        return flags

    def people_with_roles(self, text: str, company: str = "") -> list[str]:
        """Key people written without parentheses ("Robin Laik, CEO Mark Friedrich,
        CFO") as "Name (role)" entries: role words and names told apart by what the
        directory's roles and names use; a run of names without roles is split like
        founders. A role before a colon ("CFO: Cory Sindelar") is the next name's."""
        tokens = re.findall(r"[^\s,]+,?|,", re.sub(r"(?<=\w)[-\u2013](?=\s)", " -", text))
        people: list[tuple[list[str], list[str]]] = []  # (name words, role words)
        pending: list[str] = []  # roles before a colon, for the next name
        run: list[str] = []

        def close_run() -> None:
            if not run:
                return
            for name in self.split_run([w.rstrip(",") for w in run], company.lower()):
                people.append((name.split(), pending.copy()))
                pending.clear()
            run.clear()

        for token, is_role in zip(tokens, self._roles(tokens), strict=True):
            if not run and people and _is_suffix(token.rstrip(",")):
                people[-1][0].append(token.rstrip(","))  # "Edward L. Rand, Jr., CEO"
                continue
            if is_role:
                close_run()
                if token in {"-", "\u2013", ","}:
                    continue
                if token.endswith(":") or not people:
                    pending.append(token.rstrip(":"))  # "CFO: Cory Sindelar"
                else:
                    people[-1][1].append(token)
            else:
                run.append(token)
                if token.endswith(","):
                    close_run()
        close_run()
        entries = []
        for name, roles in people:
            role = " ".join(roles).strip(" ,&/-")
            role = re.sub(r"^(?:and|&)\s+|\s+(?:and|&)$", "", role)
            entries.append(f"{' '.join(name)} ({role})" if role else " ".join(name))
        return entries

    def is_person(self, name: str) -> bool:
        """Whether ``name`` (a note in parentheses aside) reads as one person's name."""
        words = re.sub(r"\([^()]*\)", " ", name).split()
        core = [
            w
            for w in words
            if not (w in PARTICLES or w in TITLES or _is_initial(w) or _is_suffix(w))
        ]
        return (
            2 <= len(core) <= 5
            and all(
                _WORD_RE.fullmatch(w)
                or w in PARTICLES
                or _is_suffix(w)
                or _NICKNAME_RE.fullmatch(w)
                for w in words
            )
            and not any(self._is_role(w) for w in core)
        )
