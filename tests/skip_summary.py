"""The test run's skips as one summary line with their reasons, instead of one SKIPPED line per test.

On a fresh clone without ../shared, some sixty tests skip for one reason; pytest's ``-ra`` printed
each of them as a ``SKIPPED [1] ...`` line, which reads like a list of failures. pyproject's addopts
now ask for failures and errors only (``-rfEX``), and this hook (imported by conftest.py) adds::

    skipped 57: ../shared/real-profiles is not beside the project (55); mounting a tmpfs needs root (2)

``-rs`` on the command line still lists every skipped test.
"""

from __future__ import annotations

from collections import Counter

#: Reasons named on the line; the rest are counted ("and N more reasons").
SHOWN_REASONS = 4


def skip_reason(report) -> str:
    """The reason a test was skipped (pytest keeps it as ``(path, line, "Skipped: reason")``)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ").strip() or "no reason given"


def skip_summary_line(reports) -> str | None:
    """``skipped N: reason (n); reason (m) ...`` for the skipped reports, or None when nothing was skipped."""
    reasons = Counter(skip_reason(report) for report in reports)
    if not reasons:
        return None
    shown = "; ".join(f"{reason} ({count})" for reason, count in reasons.most_common(SHOWN_REASONS))
    more = len(reasons) - SHOWN_REASONS
    if more > 0:
        shown += f"; and {more} more reason(s) (-rs lists every skipped test)"
    return f"skipped {sum(reasons.values())}: {shown}"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    line = skip_summary_line(terminalreporter.stats.get("skipped", []))
    if line:
        terminalreporter.write_line(line, yellow=True)
