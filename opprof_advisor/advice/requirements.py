"""An entry's preconditions against a profile: its ``requires:`` items, and its hardware and CANN range.

Each item of ``Entry.requires`` is ``{key: [values]}`` (vocabulary.REQUIRE_KEYS); all must hold and a
list means "any of these". A requirement the profile cannot answer (no dtypes recorded, a profile that
cannot tell training from inference) counts as not met: advice that may not apply is worse than none.
The recommender never suggests an entry with an unmet requirement; ``--explain`` lists them.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Sequence

from opprof_advisor.core.i18n import M_, N_, Message, join_messages
from opprof_advisor.core.models import Entry, OpTypeStat, Profile
from opprof_advisor.core.vocabulary import canonical_dtype


class Check(NamedTuple):  # a NamedTuple: built at start-up, ~5x cheaper than a frozen dataclass
    """One requirement and what the profile said about it."""

    key: str
    values: tuple[Any, ...]
    met: bool
    why: str  # what was found, or why it cannot be judged (a Message: --explain says it in Chinese)

    def text(self) -> Message:
        # key and values in one placeholder: a Message's text values are looked up in the catalogue, and a
        # requirement is written as the KB writes it ("symptom", not the Chinese word for it)
        requirement = f"{self.key} {', '.join(str(v) for v in self.values)}"
        template = N_("{requirement}: met ({why})") if self.met else N_("{requirement}: not met ({why})")
        return Message(template, requirement=requirement, why=self.why)


def check_requirements(entry: Entry, profile: Profile, rows: Sequence[OpTypeStat],
                       stake_share: float) -> list[Check]:
    """Every requirement of ``entry`` against ``profile``; ``rows`` are the rows the entry addresses."""
    return [_check(key, tuple(values), profile, rows, stake_share)
            for item in entry.requires for key, values in item.items()]


def unmet(checks: Sequence[Check]) -> list[Check]:
    return [c for c in checks if not c.met]


def _check(key: str, values: tuple[Any, ...], profile: Profile, rows: Sequence[OpTypeStat],
           stake_share: float) -> Check:
    wanted = set(values)
    if key == "symptom":
        found = sorted(profile.symptom_ids() & wanted)
        return Check(key, values, bool(found), M_("found {symptoms}", symptoms=", ".join(found)) if found
                     else M_("none of them in the profile"))
    if key == "operator":
        present = {row.family for row in profile.op_types if row.time_us > 0}
        found = sorted(present & wanted)
        return Check(key, values, bool(found), M_("{operators} ran", operators=", ".join(found)) if found
                     else M_("none of them ran"))
    if key == "unit":
        addressed = rows or profile.op_types
        units = sorted({row.unit for row in addressed})
        if set(units) <= {"unknown"}:
            return Check(key, values, False, M_("the unit is not recorded (profiler level0 or a timeline)"))
        found = sorted(set(units) & wanted)
        return Check(key, values, bool(found), M_("ran on {units}", units=", ".join(units)))
    if key == "dtype":
        addressed = rows or profile.op_types
        dtypes = sorted({canonical_dtype(d) for row in addressed for d in row.dtypes})
        if not dtypes:
            return Check(key, values, False, M_("input data types are not recorded"))
        found = sorted(set(dtypes) & wanted)
        return Check(key, values, bool(found), M_("inputs are {dtypes}", dtypes=", ".join(dtypes)))
    if key == "producer":
        return Check(key, values, profile.producer in wanted,
                     M_("written by {producer}", producer=profile.producer or N_("an unknown tool")))
    if key == "workload":
        if profile.workload is None:
            return Check(key, values, False, M_("the profile cannot tell training from inference"))
        return Check(key, values, profile.workload in wanted, M_("the run is {workload}", workload=profile.workload))
    if key == "min_share":
        least = float(values[0])
        return Check(key, values, stake_share >= least, M_("{share:.1%} of the {reference} at stake", share=stake_share,
                                                            reference=profile.reference))
    return Check(key, values, False, M_("unknown requirement {key!r}", key=key))


# --------------------------------------------------------------------------------------------
# Hardware and CANN applicability
# --------------------------------------------------------------------------------------------

#: Product names -> chip-name prefixes (normalised: lower case, no spaces, ``_`` or ``-``).
_HARDWARE_CHIPS = {
    "atlasa2": ("ascend910b",), "atlas800ta2": ("ascend910b",), "atlas800ia2": ("ascend910b",),
    "atlas900a2": ("ascend910b",), "atlasa3": ("ascend91093",), "atlas300i": ("ascend310p", "ascend310"),
    "atlas300iduo": ("ascend310p",), "atlas300ipro": ("ascend310p",), "atlas800": ("ascend910",),
    "atlas900": ("ascend910",),
}


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).lower()


def hardware_mismatch(entry: Entry, profile: Profile) -> str | None:
    """A sentence when the entry's hardware or CANN range excludes the profile's, else None."""
    problems = []
    chip = profile.chip
    if chips_fit(entry.hardware, chip) is False:
        problems.append(M_("written for {hardware}; this profile ran on {chip}",
                           hardware=", ".join(entry.hardware), chip=chip))
    cann = profile.versions.get("cann")
    if entry.cann and cann and cann_matches(cann, entry.cann) is False:
        problems.append(M_("applies to CANN {wanted}; this profile used CANN {cann}", wanted=entry.cann, cann=cann))
    return join_messages(problems, "; ") if problems else None


def chips_fit(hardware: list[str], chip: str | None) -> bool | None:
    """Whether ``chip`` (a profile's) is one of ``hardware`` (``Atlas A2``, ``Ascend950`` …); None when either says
    nothing that can be compared (no chip named, or only product names the table does not know)."""
    prefixes = [p for hw in hardware for p in _chip_prefixes(hw)]
    if not prefixes or not chip:
        return None
    return any(_norm(chip).startswith(p) for p in prefixes)


def _chip_prefixes(hardware: str) -> tuple[str, ...]:
    key = _norm(hardware)
    if key in _HARDWARE_CHIPS:
        return _HARDWARE_CHIPS[key]
    return (key,) if key.startswith("ascend") else ()  # unknown product names: cannot judge


def _version_tuple(text: str) -> tuple[int, ...] | None:
    numbers = re.findall(r"\d+", text.split("RC")[0].split("rc")[0]) or re.findall(r"\d+", text)
    return tuple(int(n) for n in numbers[:3]) if numbers else None


def cann_matches(version: str, spec: str) -> bool | None:
    """Whether a CANN version satisfies a specifier like ``>=8.0,<8.3``; None when unparseable."""
    have = _version_tuple(version)
    if have is None:
        return None
    for clause in spec.split(","):
        m = re.match(r"\s*(>=|<=|==|!=|>|<|~=)?\s*([\w.]+)\s*$", clause)
        want = _version_tuple(m.group(2)) if m else None
        if want is None:
            return None
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        op = m.group(1) or "=="
        ok = {
            ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b, "!=": a != b,
            "==": a[: len(want)] == b[: len(want)], "~=": a >= b,
        }[op]
        if not ok:
            return False
    return True
