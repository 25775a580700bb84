"""What the executors share: timeouts read from the environment, the processes started for a run, signals,
one-time warnings.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Iterator

from opprof_advisor.core.errors import AdvisorWarning
from opprof_advisor.core.outputs import signals_raise
from opprof_advisor.core.i18n import M_

#: Environment variables overriding the executors' waits (seconds; for slow clusters, and for tests).
CLUSTER_TIMEOUT_ENV = "ADVISOR_CLUSTER_TIMEOUT"
RANK_TIMEOUT_ENV = "ADVISOR_RANK_TIMEOUT"
#: The longest wait a variable may ask for (a day): beyond it, "waits forever" in all but name.
MAX_TIMEOUT_S = 86400.0
#: How often the executors look at their workers (seconds): the delay before a signal or a death is seen.
POLL_S = 0.1


def seconds_from_env(name: str, default: float) -> float:
    """Seconds from the environment variable ``name`` (finite, above 0, at most a day), else ``default``.

    A value that is not such a number is not used: a warning says so, and ``default`` is.
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text) if len(text) <= 32 else math.nan
    except ValueError:
        value = math.nan
    if math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S:
        return value
    shown = text if len(text) <= 32 else text[:32] + "…"
    warn_once(M_("{name}={value} is not a number of seconds between 0 and {most}: {default} s is used instead",
                 name=name, value=repr(shown), most=format(MAX_TIMEOUT_S, "g"), default=format(default, "g")))
    return default


_warned: set[str] = set()


def warn_once(message: str) -> None:
    """Warn ``message`` (an AdvisorWarning: one line) the first time only."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, AdvisorWarning, stacklevel=3)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while a job was read: unwinds like Ctrl-C (so everything is cleaned up)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def stop_on_signals():
    """While the block runs, SIGTERM and SIGHUP raise ``Stopped`` (SIGINT raises KeyboardInterrupt already); only a
    signal left to its default action is taken over, and only in the main thread (core.outputs.signals_raise)."""
    return signals_raise(Stopped, only_default=True)


@contextmanager
def deaf_children() -> Iterator[None]:
    """The processes (and threads) started inside the block have SIGINT blocked; this process still gets it.

    A Ctrl-C at the terminal goes to the whole process group: worker processes starting up or working would
    print their tracebacks. This process kills them itself. SIGINT is blocked in the main thread only while
    the block runs (what it starts inherits the mask, through exec too), and a thread started before keeps
    receiving it for the process: Python runs the handler in the main thread, at its next poll (``POLL_S``).
    """
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    stop = threading.Event()
    listener = threading.Thread(target=stop.wait, name="advisor-sigint", daemon=True)
    listener.start()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        stop.set()


def children() -> set:
    """The live processes this process started with multiprocessing (pool workers, Dask's worker processes)."""
    return set(multiprocessing.active_children())


def kill(processes) -> None:
    """SIGKILL ``processes`` (those started for this run only) and reap them."""
    for process in processes:
        try:
            process.kill()
        except (OSError, ValueError, AttributeError):
            pass
    deadline = time.monotonic() + 1.0
    for process in processes:
        try:
            process.join(max(0.0, deadline - time.monotonic()))
        except (OSError, ValueError, AssertionError, AttributeError):
            pass
