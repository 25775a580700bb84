"""A folder of ranks read as map → cache → reduce, so memory stays flat from 2 ranks to thousands.

* ``summary.summarize_rank`` (the map) reads one rank with its own reader, builds that rank's
  profile and keeps only a compact summary: op type × unit × bound (count, total, p50 / p95), the
  rank's step split, collectives (transit / wait / idle, bytes and time per transport, the
  communication matrix), device facts, the rank's kernel-level symptoms and notes. The kernel rows
  are dropped when the function returns: a few kilobytes leave it.
* ``cache`` keeps each summary as Parquet under the advisor home, keyed by the fingerprints of the
  rank's files (path, size, mtime_ns): a second run re-reads nothing that did not change.
* ``executors.run_map`` runs the same map function serially, in worker processes, or on Dask
  (``dask_map``: a ``LocalCluster``, or the scheduler given by ``--scheduler``). A rank whose worker
  dies is mapped once more, then named; every wait is bounded; SIGTERM / SIGHUP / Ctrl-C stop the map
  at once and kill its workers (``runtime``: what the executors share).
* ``reduce`` turns the summaries into the job's profile: op types summed over ranks, the mean rank's
  step split, the slow and fast rank by computation, which op types make the slow rank slow, slow
  links and the communication matrix.

``job.read_job`` ties them together for ``readers.multirank``.
"""
