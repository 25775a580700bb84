"""Where the per-rank map runs: in this process, in worker processes, or on a Dask cluster.

Every executor calls the same function on the same rank paths and returns the results in the
order of the paths, so the job's profile does not depend on where it was computed. ``auto`` uses
worker processes when it pays (two or more ranks, two or more cores, and at least
``PARALLEL_MIN_BYTES`` of files to read: below that, starting workers costs more than it saves), and
Dask when a scheduler address is given.

Dask (``dask.distributed``) is optional: ``pip install 'opprof-advisor[cluster]'``. Without an
address a ``LocalCluster`` of worker processes is started for the run (listening on 127.0.0.1 only,
its HTTP server on a free port); with ``--scheduler`` the map runs on that cluster, whose workers must
see the rank folders at the same paths (a shared file system).

What can go wrong, and what happens then:

* **A worker dies** (killed, out of memory) while it reads a rank: that rank is *lost*. It is mapped
  once more, alone in a fresh worker process (processes) or on another worker (Dask: the local
  cluster's scheduler allows one failure per task); lost a second time, the run stops with one line
  naming the rank. Ranks that were only waiting are mapped again without counting as lost.
* **Every wait is bounded**, each with its own message: reaching the scheduler and every answer from it
  (``ADVISOR_CLUSTER_TIMEOUT`` seconds, default ``CONNECT_TIMEOUT_S``), a scheduler with no workers
  (the same), the local cluster's start (``START_TIMEOUT_S``, or ``ADVISOR_CLUSTER_TIMEOUT`` when set),
  and one rank's map (``ADVISOR_RANK_TIMEOUT`` seconds, default ``RANK_TIMEOUT_S``: a rank over it is
  lost, as above). A value that is not a number of seconds above 0 warns and the default is used.
* **SIGINT, SIGTERM, SIGHUP**: ``stop_on_signals`` (around the whole job read) turns SIGTERM and SIGHUP
  into ``Stopped``, a ``KeyboardInterrupt``, as Ctrl-C is; the worker processes started for the run
  are killed at once (they ignore SIGINT themselves, so a Ctrl-C in the terminal does not make them
  print), and the temporary files of the cache are removed on the way out.
* Dask's own log lines and warnings (a busy port, a version mismatch) are not printed: what matters
  reaches the user as one of the errors above.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from opprof_advisor.cluster.runtime import (  # noqa: F401 - Stopped, stop_on_signals: the executors' API
    CLUSTER_TIMEOUT_ENV, POLL_S, RANK_TIMEOUT_ENV, Stopped, children, deaf_children, kill, seconds_from_env,
    stop_on_signals, warn_once,
)
from opprof_advisor.core.errors import ClusterError
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.core.records import Record

EXECUTORS = ("auto", "serial", "processes", "dask")
#: Below this many bytes of rank files in total, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 8 * 1024 * 1024
#: Worker processes (the target machines have few cores; each worker holds one rank in memory).
MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))
#: How long each wait on a Dask scheduler may take (seconds): reaching it, each answer, workers to appear.
CONNECT_TIMEOUT_S = 10.0
#: How long a local Dask cluster may take to start its workers (seconds).
START_TIMEOUT_S = 60.0
#: How long one rank's map may run before it counts as lost (seconds).
RANK_TIMEOUT_S = 1800.0
INSTALL_HINT = "pip install 'opprof-advisor[cluster]'"
#: The longest --scheduler address taken (a URL with a host name fits many times over).
MAX_ADDRESS = 1000


@dataclass(frozen=True)
class ExecutorChoice(Record):
    """``--executor`` and ``--scheduler``: how the per-rank map of a folder of ranks runs."""

    name: str = "auto"
    scheduler: str | None = None
    workers: int | None = None  # processes / LocalCluster workers (default MAX_WORKERS)

    def __post_init__(self) -> None:
        if self.scheduler is not None and (len(self.scheduler) > MAX_ADDRESS or not self.scheduler.isprintable()):
            raise ClusterError(M_("--scheduler takes an address such as tcp://host:8786, not {count} characters",
                                  count=len(self.scheduler)) if len(self.scheduler) > MAX_ADDRESS else
                               M_("--scheduler takes an address such as tcp://host:8786: {address} has a control "
                                  "character", address=ascii(self.scheduler)),
                               hint=N_("give the address the scheduler printed when it started"))
        if self.workers is not None and not (isinstance(self.workers, int) and 1 <= self.workers <= 1024):
            raise ClusterError(M_("{count} worker processes: give a whole number from 1 to 1024",
                                  count=ascii(self.workers)[:40]))
        if self.name not in EXECUTORS:
            raise ClusterError(M_("unknown executor {name!r}", name=self.name),
                               hint=M_("use one of {names}", names=", ".join(EXECUTORS)))
        if self.scheduler and self.name not in ("auto", "dask"):
            raise ClusterError(M_("--scheduler runs the map on Dask, not with --executor {name}", name=self.name),
                               hint=N_("use --executor dask (or leave --executor out)"))

    def resolve(self, items: int, total_bytes: int) -> str:
        """The executor that runs ``items`` ranks of ``total_bytes`` in all."""
        if self.name != "auto":
            return self.name
        if self.scheduler:
            return "dask"
        workers = self.workers or MAX_WORKERS
        return "processes" if items >= 2 and workers >= 2 and total_bytes >= PARALLEL_MIN_BYTES else "serial"


def run_map(func: Callable[[str], Any], items: Sequence[str], choice: ExecutorChoice, total_bytes: int = 0,
            done: Callable[[], None] | None = None) -> list[Any]:
    """``[func(item) for item in items]`` on the chosen executor; ``done()`` after each item finishes."""
    tick = done or (lambda: None)
    if not items:
        return []
    executor = choice.resolve(len(items), total_bytes)
    if executor == "dask":
        try:
            import distributed  # noqa: F401 - the optional dependency (dask_map imports it, once)
        except ImportError:
            raise ClusterError(N_("--executor dask needs Dask, which is not installed"), hint=INSTALL_HINT) from None
        from opprof_advisor.cluster import dask_map

        timeouts = (cluster_timeout(), cluster_timeout(START_TIMEOUT_S), rank_timeout())
        with deaf_children():
            return dask_map.map_on_dask(func, list(items), choice.scheduler or None,
                                        min(choice.workers or MAX_WORKERS, len(items)), tick, timeouts)
    results: list[Any] = [_MISSING] * len(items)
    if executor == "processes" and len(items) >= 2:
        try:
            with deaf_children():
                return _process_map(func, items, choice.workers or MAX_WORKERS, tick, results)
        except WorkersUnavailable as exc:
            if choice.name != "auto":
                raise
            warn_once(M_("worker processes cannot start ({reason}): the ranks are read in this process",
                         reason=exc.reason))
    for i, item in enumerate(items):
        if results[i] is _MISSING:  # all of them, but those worker processes mapped before they could not start
            results[i] = func(item)
            tick()
    return results


class WorkersUnavailable(ClusterError):
    """Worker processes cannot be started (a process limit, no memory, no /dev/shm): ``auto`` maps serially."""

    def __init__(self, reason: str):
        super().__init__(M_("worker processes cannot start: {reason}", reason=reason),
                         hint=N_("free some memory or processes, or use --executor serial"))
        self.reason = reason


# ----------------------------------------------------------------------------------------------
# Timeouts
# ----------------------------------------------------------------------------------------------


def cluster_timeout(default: float | None = None) -> float:
    """Each wait on the Dask machinery (``ADVISOR_CLUSTER_TIMEOUT``, else ``default``, else ``CONNECT_TIMEOUT_S``)."""
    return seconds_from_env(CLUSTER_TIMEOUT_ENV, CONNECT_TIMEOUT_S if default is None else default)


def rank_timeout() -> float:
    """How long one rank's map may run (``ADVISOR_RANK_TIMEOUT``, else ``RANK_TIMEOUT_S``)."""
    return seconds_from_env(RANK_TIMEOUT_ENV, RANK_TIMEOUT_S)


# ----------------------------------------------------------------------------------------------
# Worker processes
# ----------------------------------------------------------------------------------------------


def _worker_init(state) -> None:
    """A pool worker: SIGINT is the parent's to handle (it kills us); SIGTERM / SIGHUP end us as usual."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if signum is not None:
            signal.signal(signum, signal.SIG_DFL)
    global _STATE
    _STATE = state


#: In a pool worker: one byte per rank of the round, 0 waiting, 1 being mapped, 2 mapped.
_STATE: Any = None


def _run_chunk(func, chunk: list[tuple[int, str]]) -> list[Any]:
    results = []
    for position, item in chunk:
        _STATE[position] = 1
        results.append(func(item))
        _STATE[position] = 2
    return results


_MISSING = object()


def _process_map(func, items: Sequence[str], workers: int, tick, results: list[Any]) -> list[Any]:
    """The map in worker processes into ``results``; a rank whose worker died is mapped once more, alone, then
    named."""
    limit = rank_timeout()
    waiting = list(range(len(items)))  # never lost: mapped in parallel
    lost_once: list[int] = []  # lost once: each mapped again alone, so a second loss names the right rank
    fruitless = 0
    while waiting or lost_once:
        batch, width = (waiting, workers) if waiting else ([lost_once[0]], 1)
        before = sum(result is not _MISSING for result in results)
        lost, why = _pool_round(func, items, batch, width, results, tick, limit)
        if not waiting:
            if lost:
                raise _lost_twice(items[batch[0]], why, limit)
            if results[batch[0]] is not _MISSING:
                lost_once.pop(0)
        else:
            lost_once.extend(lost)
            waiting = [i for i in waiting if results[i] is _MISSING and i not in lost]
        done = sum(result is not _MISSING for result in results)
        fruitless = 0 if done > before or lost else fruitless + 1
        if fruitless >= 2:
            raise ClusterError(M_("the worker processes stopped before they read a rank, twice"),
                               hint=N_("see whether the system kills them (memory, process limits), or use "
                                       "--executor serial"))
    return results


def _lost_twice(item: str, why: str, limit: float) -> ClusterError:
    if why == "timeout":
        return ClusterError(M_("not read within {seconds} s, twice: the rank is left out and the run stops",
                               seconds=format(limit, "g")), path=item,
                            hint=M_("raise {name} (seconds), or read this rank alone with `advisor profile`",
                                    name=RANK_TIMEOUT_ENV))
    return ClusterError(M_("the worker process reading this rank died, twice (killed, or out of memory): "
                           "the run stops"), path=item,
                        hint=N_("read this rank alone with `advisor profile` to see why, or use --executor serial"))


def _pool_round(func, items, batch: list[int], width: int, results: list[Any], tick,
                limit: float) -> tuple[list[int], str]:
    """Map ``items[batch]`` in a fresh pool into ``results``; the ranks lost (if its pool broke) and why."""
    context = multiprocessing.get_context()
    try:
        state = context.Array("b", len(batch), lock=False)
    except OSError as exc:  # no room in /dev/shm
        raise WorkersUnavailable(exc.strerror or str(exc)) from None
    width = max(1, min(width, len(batch)))
    # a few ranks per task: a thousand small ranks would otherwise spend their time in pickling round trips
    size = max(1, len(batch) // (width * 16))
    chunks = [list(range(start, min(start + size, len(batch)))) for start in range(0, len(batch), size)]
    before = children()
    pool = ProcessPoolExecutor(max_workers=width, mp_context=context, initializer=_worker_init, initargs=(state,))
    started: dict[int, float] = {}
    lost: list[int] = []
    why = ""
    calm = False
    try:
        futures = {}
        try:
            for chunk in chunks:
                futures[pool.submit(_run_chunk, func, [(p, items[batch[p]]) for p in chunk])] = chunk
        except BrokenProcessPool:  # a worker died already
            why = "died"
            lost = [p for p, flag in enumerate(state[:]) if flag == 1]
        except OSError as exc:  # fork failed: a process limit, no memory
            raise WorkersUnavailable(exc.strerror or str(exc)) from None
        while futures and not why:
            finished, _ = wait(futures, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for future in finished:
                chunk = futures.pop(future)
                try:
                    values = future.result()
                except BrokenProcessPool:
                    why = "died"  # a worker died: the pool's other workers are stopped too
                    continue
                for position, value in zip(chunk, values):
                    results[batch[position]] = value
                    tick()
            now = time.monotonic()
            flags = state[:]
            if why:
                lost = [p for p, flag in enumerate(flags) if flag == 1]  # being mapped when it broke
                break
            for position, flag in enumerate(flags):
                if flag == 1:
                    started.setdefault(position, now)
            overdue = [p for p, since in started.items() if flags[p] == 1 and now - since > limit]
            if overdue:
                why, lost = "timeout", overdue
        calm = not why
    finally:
        if not calm:  # a signal, an error, a death or a timeout: the workers go at once, their work is dropped
            kill(children() - before)
        pool.shutdown(wait=True, cancel_futures=True)
        kill(children() - before)
    return [batch[p] for p in lost], why


