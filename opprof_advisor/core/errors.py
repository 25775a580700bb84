"""Named errors raised by the core; the CLI turns each into one line and exit code 1."""

from __future__ import annotations

import errno
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

from opprof_advisor.core.text import one_line
from opprof_advisor.core.i18n import _, localize, M_, N_
import signal

_DEFAULT_FORMAT = warnings.formatwarning


class AdvisorError(Exception):
    """Base of every error the core raises on purpose.

    ``path`` and ``line`` locate the problem; ``hint`` tells the user what to do.
    """

    def __init__(self, message: str, *, path: object = None, line: int | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.hint = hint

    def location(self) -> str:
        if self.path is None:
            return ""
        return f"{self.path}:{self.line}" if self.line else self.path

    def __str__(self) -> str:
        return self._joined(self.message, self.hint)

    def localized(self) -> str:
        """The one line of ``str(self)`` in the language in use (a Message message or hint from its template)."""
        return self._joined(localize(self.message), localize(self.hint) if self.hint else None)

    def _joined(self, message: str, hint: str | None) -> str:
        where = self.location()
        text = f"{where}: {message}" if where else message
        if hint:
            text += f" — {hint}"
        return text


class KnowledgeBaseError(AdvisorError):
    """A knowledge-base file or the index is unusable."""


class EntryValidationError(KnowledgeBaseError):
    """One or more problems in KB markdown files; ``problems`` holds every one."""

    def __init__(self, problems: list["Problem"]):
        self.problems = problems
        first = problems[0] if problems else None
        super().__init__(
            f"{len(problems)} problem(s) in knowledge-base files",
            path=first.path if first else None,
            line=first.line if first else None,
        )


class Problem:
    """One validation problem at ``path:line``."""

    __slots__ = ("path", "line", "message")

    def __init__(self, path: object, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}:{self.line or 1}: {self.message}"

    def __repr__(self) -> str:
        return f"Problem({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Problem) and (self.path, self.line, self.message) == (
            other.path,
            other.line,
            other.message,
        )


class EntryNotFound(KnowledgeBaseError):
    """No entry with the requested id; ``suggestions`` holds close ids."""

    def __init__(self, entry_id: str, suggestions: list[str] | None = None):
        self.entry_id = entry_id
        self.suggestions = suggestions or []

        hint = M_("did you mean {ids}?", ids=", ".join(self.suggestions)) if self.suggestions else \
            N_("see `advisor kb list`")
        super().__init__(M_("no knowledge-base entry with id {id}", id=repr(entry_id)), hint=hint)


class EntryReadOnly(KnowledgeBaseError):
    """The entry is part of the shipped knowledge base, which `advisor remove` never writes."""

    def __init__(self, entry_id: str):
        self.entry_id = entry_id
        super().__init__(M_("{id} is part of the shipped knowledge base, which is read-only", id=repr(entry_id)),
                         hint=N_("only entries you added with `advisor add` (in your KB folder) can be removed"))


class EntryExists(KnowledgeBaseError):
    """An entry with that id already exists (use --replace)."""


class StoreNotWritable(KnowledgeBaseError):
    """The index or the outcomes database cannot be written there: read-only or full disk, or no lock file."""


class OutcomesError(AdvisorError):
    """The outcomes database cannot be read or written, or an outcome id is unknown."""


class OutcomeRefused(OutcomesError):
    """The comparison cannot support a measured outcome."""


class DuplicateOutcome(OutcomesError):
    """This pair of profiles is already recorded as an outcome; ``outcome_id`` and ``entry_id`` name it."""

    def __init__(self, message: str, *, outcome_id: int, entry_id: str, hint: str):
        super().__init__(message, hint=hint)
        self.outcome_id = outcome_id
        self.entry_id = entry_id

    def __reduce__(self):  # keyword-only arguments: pickle (a process pool) needs to be told how to rebuild it
        return _rebuild_duplicate, (self.message, self.outcome_id, self.entry_id, self.hint)


def _rebuild_duplicate(message: str, outcome_id: int, entry_id: str, hint: str) -> DuplicateOutcome:
    return DuplicateOutcome(message, outcome_id=outcome_id, entry_id=entry_id, hint=hint)


class ProfileError(AdvisorError):
    """A profile path cannot be read."""


class UnknownFormat(ProfileError):
    """Nothing under the path looks like a supported profiler output."""


class MalformedProfile(ProfileError):
    """A profile file exists but its content is broken (missing column, bad number, bad encoding...)."""


class ClusterError(AdvisorError):
    """A folder of ranks cannot be mapped as asked: Dask is not installed, or its scheduler cannot be reached."""


class PeaksError(AdvisorError):
    """A --peaks file or the user peaks.yaml is unreadable or holds an invalid figure."""


class OutputError(AdvisorError):
    """An output file (report, export) cannot or may not be written there."""


class DocumentError(AdvisorError):
    """A saved JSON document cannot be read back or rendered in the format asked for."""


class MatcherError(AdvisorError):
    """The recommender cannot be fitted or queried (e.g. empty knowledge base)."""


class ToolNotFound(AdvisorError):
    """An external tool (msprof, msopprof) is not installed."""


class SupportTableError(AdvisorError):
    """The support table file is missing or malformed."""


class ScanError(AdvisorError):
    """The path given to ``advisor scan`` cannot be scanned."""


class CollectError(AdvisorError):
    """The profiler could not be run or produced no usable output."""


class ProfilerFailed(CollectError):
    """The profiler exited with a non-zero code; ``tail`` holds its last output lines."""

    def __init__(self, command: Sequence[str], exit_code: int, tail: Sequence[str]):
        self.command = list(command)
        self.exit_code = exit_code
        self.tail = list(tail)
        name = Path(self.command[0]).name if self.command else "the profiler"
        super().__init__(
            f"{name} exited with code {exit_code}",
            hint="see its last lines above; fix the application or the options and rerun",
        )


class ProfilerTimedOut(ProfilerFailed):
    """The profiler ran longer than the timeout and was stopped (with everything it started)."""

    def __init__(self, command: Sequence[str], timeout: float, tail: Sequence[str]):
        super().__init__(command, -int(signal.SIGTERM), tail)
        name = Path(self.command[0]).name if self.command else "the profiler"
        self.timeout = timeout
        self.message = f"{name} did not finish within {timeout:g} s; it was stopped, with what it started"
        self.hint = "raise --timeout (0 = no limit), or see its last lines above for what it waits for"


class ProfilerInterrupted(CollectError):
    """advisor was interrupted (Ctrl-C) or told to stop (SIGTERM, SIGHUP) while the profiler ran."""

    def __init__(self, signum: int):
        self.signum = signum

        name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)
        super().__init__(f"stopped by {name}; the profiler and what it started were stopped too")


class AdvisorWarning(UserWarning):
    """Something the user should know that did not stop the command (printed as one line)."""


def format_warning(message, category, filename, lineno, line=None) -> str:
    """``warnings`` formatter: an AdvisorWarning is one line, ``warning: <message>``; others as usual."""
    if issubclass(category, AdvisorWarning):
        return f"warning: {one_line(message)}\n"
    return _DEFAULT_FORMAT(message, category, filename, lineno, line)


#: What to do about a file the system refused, by errno (the rest: check the path).
_FILE_HINTS = {
    errno.ENAMETOOLONG: N_("use a shorter path: a name may have at most 255 bytes, a path 4,095"),
    errno.EACCES: N_("check its permissions, or run as a user who may use it"),
    errno.EPERM: N_("check its permissions, or run as a user who may use it"),
    errno.ENOSPC: N_("make room on that disk, or choose another location"),
    errno.EROFS: N_("choose a writable location"),
    errno.ENOTDIR: N_("a part of the path is a file, not a folder: check the path"),
    errno.EISDIR: N_("it is a folder: give a file"),
    errno.ELOOP: N_("a symbolic link in the path loops: check the path"),
}


def file_error(exc: OSError) -> AdvisorError:
    """An OSError about a file (a name too long, no permission, a full disk ...) as the one line naming the file."""
    return AdvisorError(M_("cannot be used: {reason}", reason=exc.strerror or exc.__class__.__name__),
                        path=os.fsdecode(exc.filename) if isinstance(exc.filename, bytes) else exc.filename,
                        hint=_FILE_HINTS.get(exc.errno, N_("check the path")))


def error_lines(exc: BaseException) -> list[str]:
    """What an entry point prints for ``exc``: ``error: ...`` lines, one per problem, each on one line.

    An exception that is not an AdvisorError is a bug: one "internal error" line asks for a report.
    """
    label = _("error:")
    if isinstance(exc, EntryValidationError):
        return [f"{label} {one_line(problem)}" for problem in exc.problems]
    if isinstance(exc, OSError) and exc.filename is not None:  # the system refused a file: the CLI's and MCP's line
        exc = file_error(exc)
    if isinstance(exc, AdvisorError):
        return [f"{label} {one_line(exc.localized())}"]
    return [f"{label} internal error ({exc.__class__.__name__}: {one_line(exc)}) — rerun with --debug and report it"]
