"""Where opprof-advisor keeps its files: the built-in KB, the user KB folder and the index.

Environment overrides (used by tests so no test touches a real home):
``ADVISOR_HOME`` — the per-user folder (user KB in ``$ADVISOR_HOME/kb``, index in
``$ADVISOR_HOME/advisor.db``); ``ADVISOR_DB`` — the index file itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.core.i18n import M_, N_

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # opprof_advisor/


def builtin_kb_dir() -> Path:
    """The knowledge base shipped with the code: ``kb/`` of a source checkout, else the wheel copy."""
    source_tree = _PACKAGE_DIR.parent / "kb"
    if source_tree.is_dir():
        return source_tree
    return _PACKAGE_DIR / "_kb"


def home_dir() -> Path:
    """The per-user data folder (``ADVISOR_HOME`` or the platform's user data dir)."""
    env = os.environ.get("ADVISOR_HOME")
    if env:
        return _from_environment("ADVISOR_HOME", env)
    common = _xdg_default_data_dir()
    if common is not None:
        return Path(common) / "opprof-advisor"
    from platformdirs import user_data_dir

    try:
        return Path(user_data_dir("opprof-advisor", appauthor=False))
    except RuntimeError:  # no $HOME and no home in the password database (a container's bare user id)
        raise AdvisorError(N_("cannot tell where advisor's files go: $HOME is not set and this user has no home"),
                           hint=N_("set HOME, or ADVISOR_HOME to a folder for advisor's index and your KB entries")) \
            from None


def _xdg_default_data_dir() -> str | None:
    """``~/.local/share`` on Linux with an absolute $HOME and no $XDG_DATA_HOME: what platformdirs answers there
    (tests/test_paths.py holds them together), without importing it (with tempfile and shutil, ~5 ms of every
    command's start-up). None for anything else, which platformdirs decides."""
    home = os.environ.get("HOME", "")
    if sys.platform != "linux" or hasattr(sys, "getandroidapilevel") or "ANDROID_DATA" in os.environ or \
            os.environ.get("XDG_DATA_HOME") or not os.path.isabs(home):
        return None
    return os.path.expanduser("~/.local/share")


def user_kb_dir() -> Path:
    """Where ``advisor add`` puts user entries."""
    return home_dir() / "kb"


def default_db_path() -> Path:
    """The index database (``ADVISOR_DB`` or ``<home>/advisor.db``)."""
    env = os.environ.get("ADVISOR_DB")
    if env:
        return _from_environment("ADVISOR_DB", env)
    return home_dir() / "advisor.db"


#: The longest file name and path the file systems advisor runs on take (Linux: NAME_MAX, PATH_MAX less its NUL).
NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4095


def too_long(path: Path | str) -> str | None:
    """Why ``path`` is longer than a file system takes (what would fail with ENAMETOOLONG), or None."""
    raw = os.fsencode(path)
    longest = max(raw.split(os.fsencode(os.sep)), key=len)
    if len(raw) > PATH_MAX_BYTES:
        size, limit = format(len(raw), ","), format(PATH_MAX_BYTES, ",")
        return M_("the path is {size} bytes long, over the {limit} bytes a path may have", size=size, limit=limit)
    if len(longest) > NAME_MAX_BYTES:
        size = format(len(longest), ",")
        return M_("a name in it is {size} bytes long, over the {limit} bytes a file name may have", size=size,
                  limit=NAME_MAX_BYTES)
    return None


def _from_environment(variable: str, value: str) -> Path:
    """The path an environment variable names; AdvisorError when no file system takes it."""
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # "~..." with no $HOME and no home in the password database
        raise AdvisorError(M_("{variable} cannot be used: it starts with ~ and this user has no home",
                              variable=variable), path=value,
                           hint=M_("set {variable} to an absolute path, or set HOME", variable=variable)) from None
    reason = too_long(path)
    if reason is not None:
        raise AdvisorError(M_("{variable} cannot be used: {reason}", variable=variable, reason=reason), path=path,
                           hint=M_("set {variable} to a shorter path", variable=variable))
    return path


def _data_dir(name: str) -> Path:
    source_tree = _PACKAGE_DIR.parent / "data" / name
    return source_tree if source_tree.is_dir() else _PACKAGE_DIR / "_data" / name


def bench_dir() -> Path:
    """The synthetic quality bench: ``data/bench`` of a source checkout, else the wheel copy."""
    return _data_dir("bench")


def real_labels_path() -> Path:
    """The labels of the real-profile bench (``data/real_bench/labels.yaml``, or the wheel copy)."""
    return _data_dir("real_bench") / "labels.yaml"


def real_profiles_dir() -> Path | None:
    """Where the labelled real profiles are by default: ``ADVISOR_REAL_PROFILES``, else
    ``../shared/real-profiles`` beside a source checkout; None for an installed package without either."""
    env = os.environ.get("ADVISOR_REAL_PROFILES")
    if env:
        return Path(env).expanduser()
    if (_PACKAGE_DIR.parent / "pyproject.toml").is_file():  # a source checkout, not site-packages
        return _PACKAGE_DIR.parent.parent / "shared" / "real-profiles"
    return None
