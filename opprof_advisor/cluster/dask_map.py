"""The per-rank map on Dask: a LocalCluster started for the run, or the scheduler given by ``--scheduler``.

Imported only when Dask runs the map (``executors.run_map``). Everything is driven from one asyncio loop of
ours, so that every wait is bounded by us: Dask bounds the TCP connect to a scheduler but not the handshake
after it (a server that accepts and never answers kept ``Client()`` waiting forever), nor a scheduler without
workers. The run is watched once a second: workers present, the scheduler answering, no rank mapped for
longer than its limit. The local cluster listens on 127.0.0.1 only, its HTTP server on a free port (a busy
8787 printed warnings), and its scheduler retries a rank once when its worker dies. Dask's log lines and
warnings are not printed: what matters reaches the user as one of our errors.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import warnings
from typing import Any

import dask
from distributed import Client, KilledWorker, LocalCluster
from distributed.utils import silence_logging_cmgr

from opprof_advisor.cluster.runtime import CLUSTER_TIMEOUT_ENV, POLL_S, RANK_TIMEOUT_ENV, children, kill
from opprof_advisor.core.errors import ClusterError
from opprof_advisor.core.i18n import M_, N_

#: How long closing a Dask client or cluster may take once the run failed or was stopped (its workers are dead).
ABANDON_S = 0.25
#: Dask's log lines are not shown (their substance reaches the user as our errors).
_QUIET = logging.CRITICAL + 1


def map_on_dask(func, items: list[str], scheduler: str | None, workers: int, tick,
                timeouts: tuple[float, float, float]) -> list[Any]:
    """``[func(item) for item in items]`` on the scheduler at ``scheduler``, or on a LocalCluster of ``workers``
    processes; ``timeouts``: each wait on the scheduler, the local cluster's start, one rank's map (seconds)."""
    try:
        with warnings.catch_warnings(), silence_logging_cmgr(_QUIET):
            warnings.simplefilter("ignore")  # Dask's: a busy port, a version mismatch ... (its errors reach us)
            return _run_here(func, items, scheduler, workers, tick, timeouts)
    except KeyboardInterrupt:
        # stopped (Ctrl-C, or SIGTERM / SIGHUP as runtime.Stopped): the process is on its way out, and the local
        # cluster's nanny threads may still report their killed workers ("exit status was already read") as it goes
        for handler in logging.getLogger("distributed").handlers:
            handler.setLevel(_QUIET)
        raise


def _run_here(func, items: list[str], scheduler: str | None, workers: int, tick,
              timeouts: tuple[float, float, float]) -> list[Any]:
    """The map in this thread's new event loop, or in a thread of its own when one runs here already."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_dask_run(func, items, scheduler, workers, tick, timeouts))
    # called from a running event loop (a notebook): run ours in a thread of its own
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = asyncio.run(_dask_run(func, items, scheduler, workers, tick, timeouts))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="advisor-dask", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


async def _dask_run(func, items: list[str], scheduler: str | None, workers: int, tick, timeouts) -> list[Any]:
    # what Dask leaves behind when a run is cut short ("Task exception was never retrieved" ...) is not shown
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: None)
    wait_s, start_s, limit = timeouts
    before = children()
    cluster = client = None
    finished = False
    try:
        if scheduler:
            address = scheduler
            client = await _dask_client(address, wait_s)
        else:
            cluster = await _local_cluster(workers, start_s, before)
            address = cluster.scheduler_address
            client = await _dask_client(cluster, wait_s)
        results = await _dask_results(client, address, cluster is not None, func, items, tick, wait_s, limit)
        finished = True
        return results
    finally:
        try:
            if not finished:  # an error or a signal: the local workers go at once, not after a graceful close
                kill(children() - before)
            await _closed(client, wait_s if finished else ABANDON_S)
            await _closed(cluster, wait_s if finished else ABANDON_S)
        finally:
            kill(children() - before)  # whatever the close left (or a signal during it)


async def _closed(thing, seconds: float) -> None:
    if thing is None:
        return
    try:
        await asyncio.wait_for(thing.close(), seconds)
    except Exception:  # noqa: BLE001 - closing is best effort (a signal or a cancellation still goes up)
        pass


async def _local_cluster(workers: int, seconds: float, before: set):
    """A LocalCluster of ``workers`` processes on 127.0.0.1; one failed start is tried again."""
    for attempt in (1, 2):
        cluster = None
        try:
            # a lost rank is retried once; a worker holds only the rank it maps (with a second one queued on it, a
            # death would count against that one too)
            with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                                  "distributed.scheduler.worker-saturation": 1.0}):
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, silence_logs=_QUIET, asynchronous=True,
                                       scheduler_kwargs={"dashboard_address": "127.0.0.1:0", "allowed_failures": 1})
                await asyncio.wait_for(cluster, seconds)
            return cluster
        except BaseException as exc:
            if not isinstance(exc, Exception):  # a signal, or the run cancelled: no second try
                kill(children() - before)
                await _closed(cluster, ABANDON_S)
                raise
            kill(children() - before)
            await _closed(cluster, ABANDON_S)
            if attempt == 2:
                reason = _reason(exc, seconds)
                raise ClusterError(M_("the local Dask cluster did not start, twice: {reason}", reason=reason),
                                   hint=N_("see whether the system kills its workers (memory, process limits), "
                                           "or use --executor processes")) from None
    raise AssertionError("unreachable")


async def _dask_client(address, seconds: float):
    """A client of the scheduler at ``address`` (or of a LocalCluster), connected within ``seconds``."""
    where = address if isinstance(address, str) else address.scheduler_address
    # Dask bounds the connect (and says why it failed), not the handshake after it: ours is a little longer
    longest = seconds + min(seconds, 2.0)
    client = None
    try:
        client = Client(address, asynchronous=True, timeout=seconds, set_as_default=False)
        await asyncio.wait_for(client, longest)
        return client
    except BaseException as exc:
        await _closed(client, ABANDON_S)
        if not isinstance(exc, Exception):  # a signal, or the run cancelled
            raise
        raise ClusterError(M_("cannot reach the Dask scheduler at {address}: {reason}", address=where,
                              reason=_reason(exc, longest)),
                           hint=N_("check the address (tcp://host:8786) and that the scheduler is running")) from None


def _reason(exc: BaseException | None, seconds: float) -> str:
    """What went wrong, in a few words on one line (asyncio.TimeoutError is TimeoutError from Python 3.11)."""
    if isinstance(exc, TimeoutError):
        return M_("no answer within {seconds} s", seconds=format(seconds, "g"))
    cause = getattr(exc, "__cause__", None)
    if isinstance(exc, OSError) and isinstance(cause, OSError) and cause.strerror:  # "Connection refused"
        return cause.strerror
    text = str(exc).strip().splitlines() if exc is not None else []
    return text[0][:200] if text else exc.__class__.__name__


async def _answer(awaitable, address: str, seconds: float):
    """An answer of the scheduler within ``seconds``, or a ClusterError saying it stopped answering."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except (TimeoutError, OSError) as exc:
        raise ClusterError(M_("the Dask scheduler at {address} stopped answering: {reason}", address=address,
                              reason=_reason(exc, seconds)),
                           hint=M_("check that it is running and reachable, or raise {name} (seconds)",
                                   name=CLUSTER_TIMEOUT_ENV)) from None


async def _dask_results(client, address: str, local: bool, func, items: list[str], tick, wait_s: float,
                        limit: float) -> list[Any]:
    """Map ``items`` on the cluster (``local``: ours), watching it: workers present, the scheduler answering, no
    rank overdue."""
    futures = client.map(func, items, pure=False, retries=1)
    position = {future.key: i for i, future in enumerate(futures)}
    remaining = set(range(len(items)))
    running_since: dict[Any, float] = {}
    workerless_since: float | None = None
    next_look = 0.0
    while remaining:
        for i in sorted(remaining):
            future = futures[i]
            if not future.done():
                continue
            remaining.discard(i)
            if future.status == "finished":
                tick()
            elif future.status == "cancelled":
                raise ClusterError(M_("the Dask scheduler at {address} dropped the run (it restarted, or the "
                                      "connection to it was lost): {count} ranks not mapped", address=address,
                                      count=len(remaining) + 1),
                                   hint=N_("check the scheduler and run again"))
            else:
                raise await _rank_failed(future, items[i])
        if not remaining:
            break
        now = time.monotonic()
        if now >= next_look:
            next_look = now + 1.0
            workers = await _answer(client.nthreads(), address, wait_s)
            if workers:
                workerless_since = None
            elif workerless_since is None:
                workerless_since = now
            elif now - workerless_since > wait_s and local:
                raise ClusterError(M_("the local Dask cluster has had no workers for {seconds} s ({count} ranks "
                                      "not mapped): they died and were not restarted", seconds=format(wait_s, "g"),
                                      count=len(remaining)),
                                   hint=N_("see whether the system kills them (memory, process limits), or use "
                                           "--executor processes"))
            elif now - workerless_since > wait_s:
                raise ClusterError(M_("the Dask scheduler at {address} has had no workers for {seconds} s "
                                      "({count} ranks not mapped)", address=address, seconds=format(wait_s, "g"),
                                      count=len(remaining)),
                                   hint=M_("start workers (`dask worker {address}`), or raise {name} (seconds)",
                                           address=address, name=CLUSTER_TIMEOUT_ENV))
            processing = await _answer(client.processing(), address, wait_s)
            busy = {key for keys in (processing or {}).values() for key in keys}
            for key in busy:
                running_since.setdefault(key, now)
            overdue = [position[key] for key in busy if key in position and now - running_since[key] > limit]
            if overdue:
                i = min(overdue)
                raise ClusterError(M_("not read within {seconds} s on the Dask cluster: the run stops",
                                      seconds=format(limit, "g")), path=items[i],
                                   hint=M_("raise {name} (seconds), or read this rank alone with `advisor profile`",
                                           name=RANK_TIMEOUT_ENV))
        await asyncio.sleep(POLL_S)
    return await _answer(client.gather(futures), address, max(wait_s, 10.0 + len(items) / 100))


async def _rank_failed(future, item: str) -> ClusterError:
    """The error of a rank whose task failed: its workers kept dying, or the task itself failed."""
    try:
        exc = await future.exception(timeout=1.0)
    except Exception as error:  # noqa: BLE001 - the scheduler did not say why
        exc = error
    if isinstance(exc, KilledWorker):
        return ClusterError(M_("the Dask workers reading this rank died each time it was tried (killed, or out of "
                               "memory): the run stops"), path=item,
                            hint=N_("see the workers' logs, read this rank alone with `advisor profile`, or use "
                                    "--executor processes"))
    reason = _reason(exc, 0)
    return ClusterError(M_("the Dask cluster could not map this rank: {reason}", reason=reason), path=item,
                        hint=N_("its workers need opprof-advisor installed, of the same version, and the rank "
                                "folders at the same paths"))
