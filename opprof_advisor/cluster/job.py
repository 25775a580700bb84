"""Read a folder of ranks: fingerprint each rank, map the ones not cached, reduce them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opprof_advisor.cluster import cache
from opprof_advisor.cluster.executors import ExecutorChoice, run_map, stop_on_signals
from opprof_advisor.cluster.reduce import job_raw
from opprof_advisor.cluster.summary import SCHEMA, summarize_rank
from opprof_advisor.core.errors import ClusterError
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.readers.base import Progress, RawProfile


def read_job(path: Path, ranks: list[Path], progress: Progress | None = None,
             executor: ExecutorChoice | None = None) -> RawProfile:
    """The job of the rank folders ``ranks`` under ``path`` (see ``reduce.job_raw``); progress counts ranks.

    SIGTERM and SIGHUP stop it as Ctrl-C does (``executors.Stopped``, a KeyboardInterrupt): the workers
    started for it are killed and no temporary file is left."""
    with stop_on_signals():
        summaries = map_ranks([str(rank) for rank in ranks], progress, executor or ExecutorChoice())
    return job_raw(path, summaries)


def map_ranks(names: list[str], progress: Progress | None, choice: ExecutorChoice) -> list[dict[str, Any]]:
    """Each rank's summary, from the cache where its files did not change, else mapped on ``choice``."""
    keys, sizes = zip(*(cache.fingerprint(Path(name)) for name in names)) if names else ((), ())
    cached = [cache.cacheable(Path(name)) for name in names]
    summaries: list[dict[str, Any] | None] = [cache.load(key) if ok else None for key, ok in zip(keys, cached)]
    missing = [i for i, summary in enumerate(summaries) if summary is None]
    done = [len(names) - len(missing)]

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], len(names))

    if progress is not None:
        progress(done[0], len(names))
    mapped = run_map(summarize_rank, [names[i] for i in missing], choice, sum(sizes[i] for i in missing), tick)
    for index, summary in zip(missing, mapped):
        if not isinstance(summary, dict) or summary.get("schema") != SCHEMA or "error" not in summary:
            # a Dask worker with another opprof-advisor: its summary is not one the reduce can read
            found = summary.get("schema") if isinstance(summary, dict) else type(summary).__name__
            raise ClusterError(M_("the worker that mapped this rank sent a summary of another kind ({found}; this "
                                  "advisor reads {schema})", found=str(found)[:80], schema=SCHEMA), path=names[index],
                               hint=N_("install the same opprof-advisor on the Dask workers as here"))
    stored, foreign = False, []
    for index, summary in zip(missing, mapped):
        summaries[index] = summary
        if summary["error"] is None and cached[index]:  # an unreadable rank is tried again next time
            if cache.store(keys[index], summary) is False:
                foreign.append(keys[index])  # another file in its place, left as it is
            else:
                stored = True
    cache.warn_foreign(foreign)
    if stored:
        cache.prune(set(keys))
    return summaries  # type: ignore[return-value]
