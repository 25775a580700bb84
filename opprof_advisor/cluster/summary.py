"""The map: one rank folder → a compact summary (a dict of plain values, kilobytes).

The rank is read by its own reader and profiled by the same builder as a single profile, so its
bound classes, symptoms and notes are judged exactly as they would be alone. What leaves the
function is only the summary below; the rank's kernel rows are garbage once it returns, so a
worker holds one rank at a time whatever the size of the job.

Summary keys (``SCHEMA``): ``path``, ``label`` (``rank<rank_id>``), ``error`` (why the rank could not be
read, else None), ``figures`` (the rank table row: device time, computing, exposed, free, stage),
``window`` (first task start, last task end, µs: ranks of one job overlap), ``split`` (the rank's step
split summed over steps), ``ops`` (one row per op type × unit with its bound class: count, total,
p50 / p95 / max launch), ``symptoms`` (the kernel-level ones; the job-level ones are judged again on
the job), ``notes``, ``communication`` (communication.json time totals), ``transports`` ({transport:
[MB, ms, packets, large packets]}), ``matrix`` (communication_matrix.json links summed: [src, dst, transport, MB, ms]), and
the rank's device facts and versions.

The per-op-type group-by runs in pyarrow compute (benchmarks/bench_cluster.py --engines measures it
against DuckDB): pyarrow is already a dependency, and on a 400k-launch rank both take milliseconds
beside the seconds of parsing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opprof_advisor.core import steps
from opprof_advisor.core.errors import AdvisorError, ProfileError
from opprof_advisor.profile.builder import Kernels
from opprof_advisor.symptoms import is_link_note, profile_of
from opprof_advisor.readers import multirank, read_raw

SCHEMA = "opprof-advisor/rank-summary/5"  # 5: memory; 4: transports with packets, symptom bases, no link notes
#: Symptoms of the whole job, judged again on the reduced job (the mean rank's split, every rank's
#: computation and links); a rank's own are not carried over.
JOB_SYMPTOMS = frozenset({"communication_exposed", "host_bound", "communication_wait", "slow_rank", "slow_link",
                          "memory_fragmentation", "memory_outside_allocator"})
OP_COLUMNS = ("op_type", "family", "unit", "bound", "busiest_pipe", "busiest_ratio", "bound_why", "count", "time_us",
              "p50_us", "p95_us", "max_us", "wait_us", "block_dim", "dtypes", "formats")


def summarize_rank(path: str) -> dict[str, Any]:
    """The summary of the rank folder at ``path``; a rank that cannot be read gets ``error`` and no figures."""
    try:
        return _summarize(path)
    except AdvisorError as exc:
        # where and what, without the hint: it is repeated once per rank in the output
        error = f"{exc.location()}: {exc.message}" if exc.location() else exc.message
    except Exception as exc:  # noqa: BLE001 - one broken rank must not hide the others
        error = f"{path}: {exc.__class__.__name__}: {exc}"
    return {"schema": SCHEMA, "path": path, "label": multirank.rank_label(Path(path)), "error": error}


def _summarize(path: str) -> dict[str, Any]:
    raw = read_raw(path)
    if raw.extra.get("rank_dirs") is not None:
        raise ProfileError("a folder of ranks inside a folder of ranks", path=path,
                           hint="point advisor at the folder that holds the ranks themselves")
    label = multirank.rank_label(Path(path), raw)
    split = steps.total(multirank.rank_steps(raw))
    ctx = Kernels(raw)
    profile = profile_of(ctx)
    figures = multirank.rank_summary(label, path, raw)
    if ctx.light:  # a light export has no launches: its device time is the profile's, from its op types
        figures["device_time_us"] = profile.device_time_us
    return {
        "schema": SCHEMA, "path": path, "label": label, "error": None, "figures": figures,
        "window": multirank.task_window(raw), "split": None if split is None else split.to_dict(),
        "format": raw.format, "producer": profile.producer, "workload": profile.workload,
        "versions": {k: v for k, v in raw.versions.items() if k != "rank_id"}, "rank_id": raw.versions.get("rank_id"),
        "chip": raw.chip, "platform_version": raw.extra.get("platform_version"), "core_counts": dict(raw.core_counts), "freq_mhz": raw.freq_mhz, "device": profile.device,
        "device_time_us": profile.device_time_us, "compute_time_us": profile.compute_time_us,
        "communication_time_us": profile.communication_time_us,
        "ops": op_rows(ctx, profile),
        "symptoms": [{"id": s.id, "op_types": list(s.op_types), "share": s.share, "detail": s.detail,
                      "time_us": s.time_us, "ceiling_us": s.ceiling_us, "base": s.base}
                     for s in profile.symptoms if s.id not in JOB_SYMPTOMS],
        "notes": [note for note in profile.notes if not is_link_note(note)],  # links are judged on the job
        "communication": dict(raw.extra.get("communication") or {}),
        "memory": raw.extra.get("memory"),
        **collectives(raw),
    }


def op_rows(ctx, profile) -> list[dict[str, Any]]:
    """The rank's op-type rows with launch percentiles (grouped in pyarrow; t-digest p50 / p95)."""
    percentiles = _launch_percentiles(ctx)
    rows = []
    for row in profile.op_types:
        p50, p95, longest = percentiles.get((row.op_type, row.unit), (None, None, None))
        rows.append({"op_type": row.op_type, "family": row.family, "unit": row.unit, "bound": row.bound,
                     "busiest_pipe": row.busiest_pipe, "busiest_ratio": row.busiest_ratio,
                     "bound_why": row.bound_why, "count": row.count, "time_us": row.time_us,
                     "p50_us": p50, "p95_us": p95, "max_us": longest, "wait_us": row.wait_us,
                     "block_dim": row.block_dim, "dtypes": list(row.dtypes), "formats": list(row.formats)})
    return rows


def _launch_percentiles(ctx) -> dict[tuple[str, str], tuple[float, float, float]]:
    if not ctx.frame.n:
        return {}
    import pyarrow as pa
    import pyarrow.compute as pc

    def strings(column, spell=lambda value: value):  # an encoded column as Arrow strings, row by row in C++
        return pa.array([spell(v) for v in column.values], pa.string()).take(pa.array(column.codes, pa.int64()))

    table = pa.table({"op_type": strings(ctx.ops, lambda op: op or "(unknown)"), "unit": strings(ctx.units),
                      "duration_us": pa.array(ctx.duration, pa.float64())})
    grouped = table.group_by(["op_type", "unit"]).aggregate([
        ("duration_us", "tdigest", pc.TDigestOptions(q=[0.5, 0.95])), ("duration_us", "max")])
    found = {}
    for op, unit, digest, longest in zip(*(grouped[c].to_pylist() for c in (
            "op_type", "unit", "duration_us_tdigest", "duration_us_max"))):
        found[(op, unit)] = (round(digest[0], 3), round(digest[1], 3), round(longest, 3))
    return found


# ----------------------------------------------------------------------------------------------
# Collectives: communication.json bandwidth per transport, communication_matrix.json links
# ----------------------------------------------------------------------------------------------


def collectives(raw) -> dict[str, Any]:
    """``transports`` {transport: [MB, ms, packets, large packets]} and ``matrix`` [[src, dst, transport, MB, ms]]
    of a rank, as its reader found them in communication.json and communication_matrix.json."""
    return {"transports": dict(raw.extra.get("transports") or {}), "matrix": list(raw.extra.get("matrix") or [])}
