"""One way to open the advisor: the KB index, its entries, the fitted matcher and the recorded outcomes.

``advisor suggest``, ``advisor eval`` and ``advisor scan`` all rank the knowledge base; each opens
it with ``open_advisor(db)`` and passes the result's parts to ``recommend.suggest``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opprof_advisor.core.i18n import M_
from opprof_advisor.core.errors import OutcomesError
from opprof_advisor.core.records import Record
from opprof_advisor.advice import outcomes_store
from opprof_advisor.advice.matcher import load_matcher
from opprof_advisor.advice.outcomes import Outcome, outcomes_by_entry
from opprof_advisor.advice.recommend import suggest
from opprof_advisor.advice.suggest import advise
from opprof_advisor.kb import store

if TYPE_CHECKING:
    from opprof_advisor.advice.matcher import EntryMatcher
    from opprof_advisor.core.models import Entry
    from opprof_advisor.kb.rows import Index


@dataclass
class Advisor(Record):
    """An opened knowledge base, ready to rank: ``outcomes`` maps entry ids to their recorded outcomes."""

    index: Index
    entries: list[Entry]
    matcher: EntryMatcher
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what could not be loaded, for the CLI to say

    def suggest(self, profile: Any, **options: Any):
        """``recommend.suggest`` on this knowledge base, calibrated by the recorded outcomes."""
        options.setdefault("outcomes", self.outcomes)
        return suggest(profile, self.entries, matcher=self.matcher, **options)


    def advise(self, profile: Any, **options: Any) -> dict[str, Any]:
        """The ``suggest/2`` document (advice/suggest.py) on this knowledge base, with the recorded outcomes."""
        options.setdefault("outcomes", self.outcomes)
        return advise(profile, self.entries, matcher=self.matcher, **options)


def open_advisor(db: Path | str | None = None, *, outcomes: bool = True) -> Advisor:
    """Open (and build when needed) the index at ``db``, fit or load its matcher, read the recorded outcomes.

    Outcomes that cannot be read do not stop the advice: the advisor opens without them and says why
    in ``warnings`` (the gains are then the KB ranges alone).
    """
    index = store.open_index(db)
    advisor = Advisor(index, index.entries(), load_matcher(index))
    if outcomes:
        _read_outcomes(advisor)
    return advisor


def _read_outcomes(advisor: Advisor) -> None:
    try:
        rows = outcomes_store.list_outcomes(path=advisor.index.db_path)
    except OutcomesError as exc:
        where = f"{exc.location()}: " if exc.location() else ""
        advisor.warnings.append(M_("{where}{message}; the gains below are not calibrated by recorded outcomes",
                                   where=where, message=exc.message))
        return
    if rows:  # most users record none
        advisor.outcomes = outcomes_by_entry(Outcome.from_dict(row) for row in rows)
