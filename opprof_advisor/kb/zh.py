"""Chinese text of the KB for search: character bigrams (and single characters) of the entries' ``zh:`` texts.

SQLite's FTS5 ``unicode61`` tokenizer keeps a run of Han characters as one token, so "非极大值抑制"
matches only that exact run and "通信" nothing inside "通信未掩盖". Its ``trigram`` tokenizer matches
substrings of three characters or more only, while most Chinese terms of the hiascend docs (算子, 融合,
下发, 通信, 掩盖 …) are two. So each entry's Chinese is written out as its grams — every single Han
character, every pair of adjacent ones, and its lower-case Latin words — in the ``zh_grams`` column, which
a second FTS5 table (``entries_zh``, migrations.m007) indexes token by token: the usual dictionary-free
way to index Chinese (Lucene's CJK bigram analyser does the same), with no word list to load. jieba was
measured against it and not taken: its dictionary costs about a second to load on first use, several
times the search's whole budget, for no better ranking on short entries whose terms are two or four
characters long. The ranking itself is ``kb.search.rank_chinese``.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

#: The code points read as Han (CJK unified ideographs, extension A, compatibility ideographs).
HAN_RANGES = ((0x3400, 0x9FFF), (0xF900, 0xFAFF))
_HAN_PATTERN = "[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in HAN_RANGES) + "]+"
#: The Latin words of a text (lower-case), as grams finds them.
LATIN = re.compile(r"[a-z0-9_]+")
#: How often the zh title is repeated in what a query is matched against (kept from the entry's text).
TITLE_REPEAT = 3


@cache
def _han():
    # compiled on first use: a class this wide takes ~5 ms to compile, and most queries are ASCII
    return re.compile(_HAN_PATTERN)


def has_han(text: str) -> bool:
    """True when ``text`` holds a Chinese (Han) character."""
    return not text.isascii() and bool(_han().search(text))


def han_runs(text: str) -> list[str]:
    """The runs of Han characters of ``text``, in order."""
    return _han().findall(text) if not text.isascii() else []


def grams(text: str) -> Counter[str]:
    """Character bigrams and unigrams of the Han runs of ``text``, and its lower-case Latin words."""
    found: Counter[str] = Counter()
    for run in han_runs(text):
        found.update(run)
        found.update(run[i:i + 2] for i in range(len(run) - 1))
    found.update(LATIN.findall(text.lower()))
    return found


def entry_text(zh: dict[str, str], title: str, operators: list[str], tags: list[str]) -> str:
    """What a Chinese query is matched against: the zh title (weighted), zh summary and first step, the title."""
    return " ".join([zh.get("title", "")] * TITLE_REPEAT + [zh.get("summary", ""), zh.get("first_step", ""),
                                                             title, " ".join(operators), " ".join(tags)])


def gram_text(zh: dict[str, str], title: str, operators: list[str], tags: list[str]) -> str:
    """The entry's distinct grams, space-separated, for the ``entries_zh`` FTS5 table (an entry without Chinese
    has the Latin words of its title, operators and tags: ``NMS 回退`` may find it by ``nms``)."""
    return " ".join(sorted(grams(entry_text(zh, title, operators, tags))))


def fts_gram(gram: str) -> str:
    """The FTS5 query of one gram: a quoted token (grams hold Han characters, letters, digits and ``_`` only)."""
    return f'"{gram}"'
