"""Where the per-rank map runs: in this process, in worker processes, or on a Dask cluster.

Every executor calls the same function on the same rank paths and returns the results in the
order of the paths, so the job's profile does not depend on where it was computed. ``auto`` uses
worker processes when it pays (two or more ranks, two or more cores, and at least
``PARALLEL_MIN_BYTES`` of files to read: below that, starting workers costs more than it saves), and
Dask when a scheduler address is given.

Dask (``dask.distributed``) is optional: ``pip install 'opprof-advisor[cluster]'``. Without an
address a ``LocalCluster`` of worker processes is started for the run; with ``--scheduler`` the map
runs on that cluster, whose workers must see the rank folders at the same paths (a shared file system).
"""

from __future__ import annotations

from dataclasses import dataclass
import os
from typing import Any, Callable, Sequence

from opprof_advisor.core.errors import ClusterError
from opprof_advisor.core.records import Record
import logging
from concurrent.futures import ProcessPoolExecutor  # only here: importing it costs start-up time

EXECUTORS = ("auto", "serial", "processes", "dask")
#: Below this many bytes of rank files in total, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 8 * 1024 * 1024
#: Worker processes (the target machines have few cores; each worker holds one rank in memory).
MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))
#: How long to try to reach a Dask scheduler before giving up (seconds).
CONNECT_TIMEOUT_S = 10.0
INSTALL_HINT = "pip install 'opprof-advisor[cluster]'"


@dataclass(frozen=True)
class ExecutorChoice(Record):
    """``--executor`` and ``--scheduler``: how the per-rank map of a folder of ranks runs."""

    name: str = "auto"
    scheduler: str | None = None
    workers: int | None = None  # processes / LocalCluster workers (default MAX_WORKERS)

    def __post_init__(self) -> None:
        if self.name not in EXECUTORS:
            raise ClusterError(f"unknown executor {self.name!r}", hint=f"use one of {', '.join(EXECUTORS)}")
        if self.scheduler and self.name not in ("auto", "dask"):
            raise ClusterError(f"--scheduler runs the map on Dask, not with --executor {self.name}",
                               hint="use --executor dask (or leave --executor out)")

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
        return _dask_map(func, items, choice, tick)
    if executor == "processes" and len(items) >= 2:
        return _process_map(func, items, choice.workers or MAX_WORKERS, tick)
    results = []
    for item in items:
        results.append(func(item))
        tick()
    return results


def _process_map(func, items: Sequence[str], workers: int, tick) -> list[Any]:
    workers = min(workers, len(items))
    # a few ranks per task: a thousand small ranks would otherwise spend their time in pickling round trips
    chunk = max(1, len(items) // (workers * 16))
    results = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for result in pool.map(func, items, chunksize=chunk):
            results.append(result)
            tick()
    return results


def _dask_map(func, items: Sequence[str], choice: ExecutorChoice, tick) -> list[Any]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ClusterError("--executor dask needs Dask, which is not installed", hint=INSTALL_HINT) from None

    cluster = None
    try:
        if choice.scheduler:
            client = _connect(Client, choice.scheduler)
        else:
            cluster = LocalCluster(n_workers=min(choice.workers or MAX_WORKERS, len(items)), threads_per_worker=1,
                                   processes=True, dashboard_address=None, silence_logs=logging.ERROR)
            client = Client(cluster)
        with client:
            futures = client.map(func, list(items), pure=False)
            for _ in as_completed(futures):
                tick()
            return client.gather(futures)
    finally:
        if cluster is not None:
            cluster.close()


def _connect(client_class, address: str):
    try:
        return client_class(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {reason}",
                           hint="check the address (tcp://host:8786) and that the scheduler is running") from None
