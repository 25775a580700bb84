"""The text the matcher scores knowledge-base entries against for one profile (step 1 of recommend.py's ranking).

Each op family repeated ``1 + round(20 × share)`` times, each symptom id ``2 + round(20 × share)`` times
plus the words of its meaning, the units that carry >= 1 % of device time, the dtypes of those rows and
the ``--model`` hint.
"""

from __future__ import annotations

import re
from typing import Sequence

from opprof_advisor.core.models import OpTypeStat, Profile
from opprof_advisor.core.operators import FAMILIES
from opprof_advisor.core.vocabulary import SYMPTOMS

_UNIT_WORDS = {
    "ai_cpu": "aicpu ai_cpu cpu fallback", "communication": "hccl communication", "ai_vector": "vector",
    "ai_core": "cube", "mix_aic": "mix cube", "mix_aiv": "mix vector",
}


def build_query(profile: Profile, model: str | None = None) -> str:
    """The text the matcher scores entries against: families by share, symptoms, units, dtypes, model."""
    words: list[str] = []
    for family, share in sorted(profile.family_shares().items(), key=lambda kv: (-kv[1], kv[0])):
        words.extend([_family_words(family)] * (1 + round(20 * share)))
    for symptom in profile.symptoms:
        words.extend([symptom.id] * (2 + round(20 * min(1.0, symptom.share))))
        words.extend(_meaning_words(symptom.id))
    words.extend(_unit_words(profile.op_types))
    words.extend(_dtype_words(profile.op_types))
    if model:
        words.extend(_model_words(model) * 4)
    return " ".join(words)


_STOP_WORDS = frozenset(
    "a an the of to in on or and as by for from than their its is are be not no run runs instead "
    "that whose which with without".split()
)


def _family_words(family: str) -> str:
    # A custom kernel ("MatmulLeakyRelu") has no family: its name's parts still say what it does.
    if family in FAMILIES:
        return family
    return " ".join(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", family)) or family


def _meaning_words(symptom_id: str) -> list[str]:
    text = SYMPTOMS.get(symptom_id, "")
    return [w for w in re.findall(r"[A-Za-z0-9_]+", text.lower()) if w not in _STOP_WORDS and len(w) > 1]


def _unit_words(rows: Sequence[OpTypeStat]) -> list[str]:
    unit_share: dict[str, float] = {}
    for row in rows:
        unit_share[row.unit] = unit_share.get(row.unit, 0.0) + row.share
    return [_UNIT_WORDS.get(unit, unit) for unit, share in sorted(unit_share.items()) if share >= 0.01]


def _dtype_words(rows: Sequence[OpTypeStat]) -> list[str]:
    seen: list[str] = []
    for row in rows:
        if row.share < 0.01:
            continue
        for dtype in row.dtypes:
            for word in re.split(r"[^A-Za-z0-9_]+", dtype.lower()):
                if word and word not in seen:
                    seen.append(word)
    return seen


def _model_words(model: str) -> list[str]:
    name = model.strip().lower()
    base = re.sub(r"(\d)[nsmlxb]$", r"\1", name)  # "yolov8s" also says "yolov8"
    return [name] if base == name else [name, base]
