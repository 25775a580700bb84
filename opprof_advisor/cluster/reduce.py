"""The reduce: rank summaries → the job's profile, on one node, with pyarrow compute.

* ``job_raw`` checks the ranks belong to one job (their task windows overlap, ``SAME_JOB_GAP_S``),
  names unreadable ranks, and returns a RawProfile without kernels that carries the rank table, the
  mean rank's step split, the mean communication.json totals, each rank's bandwidth per transport and
  (in ``extra["job"]``) the summaries. ``profiles.build_profile`` hands it to ``build_job_profile``.
* ``build_job_profile``: op types summed over ranks (count, time, share of the job's device time;
  the bound class and busiest pipe that carry the most time), the job-level checks of
  ``symptoms.CHECKS`` on the job (step split, waiting, slow rank, slow link), the ranks' kernel-level
  symptoms merged (time summed, share weighted by device time, as the concatenated kernels would
  give), and ``Profile.cluster``: slow and fast rank by computation with the gap as a share of the
  step, per-op-type dispersion across ranks (which op types make the slow rank slow), links and the
  communication matrix.

pyarrow compute groups the summaries (the same engine as the map; benchmarks/bench_cluster.py
--engines measures it against DuckDB). Only the slowest rank is re-read in detail, for the roofline,
which needs its launches' shapes; the notes say so.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from pathlib import Path
from statistics import median
from typing import Any

from opprof_advisor import symptoms

from opprof_advisor.cluster.summary import JOB_SYMPTOMS
from opprof_advisor.core import steps
from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.core.i18n import M_
from opprof_advisor.core.models import OpTypeStat, Profile, StepSplit, Symptom
from opprof_advisor.readers.base import KernelTable, RawProfile
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.profile import roofline
from opprof_advisor.profile.builder import Kernels
from opprof_advisor.readers import read_raw
from opprof_advisor.readers.multirank import check_windows

#: The checks that judge the job as a whole (they read the ranks, the mean split and the links).
JOB_CHECKS = tuple(check for check in symptoms.CHECKS if check in (
    symptoms.check_step_split, symptoms.check_communication_wait, symptoms.check_slow_rank,
    symptoms.check_slow_link, symptoms.check_memory))
#: How many op types the slow-rank finding and the dispersion table name.
DISPERSION_TOP = 5
#: Distinct notes of the ranks kept in the job's notes (the rest are counted).
RANK_NOTES_MAX = 20
#: Notes the job recomputes over its own op-type rows.
_REDONE_NOTES = ("bound class not judged for ",)


def job_raw(path: Path, summaries: list[dict[str, Any]]) -> RawProfile:
    """The job of ``summaries`` (one per rank folder, in folder order) as a RawProfile without kernels."""
    readable = [s for s in summaries if s["error"] is None]
    notes = [f"rank {s['label']} not read: {s['error']}" for s in summaries if s["error"] is not None]
    if not readable:
        raise MalformedProfile(f"none of the {len(summaries)} ranks could be read ({notes[0]})", path=path)
    check_windows(path, [(s["path"], s["window"]) for s in readable])
    table = _rank_table(summaries, notes)
    _add_rank_notes(notes, readable)
    first = readable[0]
    versions: dict[str, str] = {}
    for summary in readable:
        for key, value in summary["versions"].items():
            versions.setdefault(key, value)
    versions["ranks"] = str(len(summaries))
    raw = RawProfile(path=str(path), format="multi-rank", kernels=KernelTable(), versions=versions,
                     core_counts=next((dict(s["core_counts"]) for s in readable if s["core_counts"]), {}),
                     notes=notes, chip=first["chip"],
                     freq_mhz=next((s["freq_mhz"] for s in readable if s["freq_mhz"]), None))
    raw.extra["ranks"] = _sorted_ranks(table)
    raw.extra["rank_format"] = first["format"]
    if generation := next((s.get("platform_version") for s in readable if s.get("platform_version")), None):
        raw.extra["platform_version"] = generation
    splits = [StepSplit(**s["split"]) for s in readable if s["split"]]
    typical = steps.mean(splits)
    if typical is not None:
        raw.extra["steps"] = [typical]
        raw.extra["step_source"] = f"mean of {len(splits)} ranks' step splits"
    raw.extra["communication"] = _mean_totals([s["communication"] for s in readable])
    links = _links(readable, {s["path"]: row["rank"] for s, row in zip(summaries, table)})
    if links:
        raw.extra["link_bandwidth"] = links
    matrix = [link for summary in readable for link in summary.get("matrix") or []]
    matrix = [row for row in matrix if isinstance(row, list) and len(row) == 5 and _numbers(row[3:], 2)]
    if matrix:
        raw.extra["matrix"] = matrix
    memory = _job_memory(readable, {s["path"]: row["rank"] for s, row in zip(summaries, table)})
    if memory:
        raw.extra["memory"] = memory
    raw.extra["job"] = readable
    raw.extra["labels"] = {s["path"]: row["rank"] for s, row in zip(summaries, table)}
    return raw


def _rank_table(summaries: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
    """One row per rank folder (``rank`` label, figures or error); a label two folders share → folder names."""
    rows = []
    for summary in summaries:
        if summary["error"] is None:
            rows.append(dict(summary["figures"]))
        else:
            rows.append({"rank": summary["label"], "path": summary["path"], "device_time_us": None,
                         "error": summary["error"]})
    labels = Counter(row["rank"] for row in rows)
    duplicates = sorted(label for label, n in labels.items() if n > 1)
    if duplicates:
        notes.append(f"several folders report the same rank ({', '.join(duplicates)}): each is shown by its folder")
        for row in rows:
            if row["rank"] in duplicates:
                row["rank"] = Path(row["path"]).name
    return rows


def _sorted_ranks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: _natural(row["rank"]))


def _add_rank_notes(notes: list[str], readable: list[dict[str, Any]]) -> None:
    seen = dict.fromkeys(n for s in readable for n in s["notes"] if not n.startswith(_REDONE_NOTES) and n not in notes)
    kept = list(seen)[:RANK_NOTES_MAX]
    notes.extend(kept)
    if len(seen) > len(kept):
        notes.append(f"{len(seen) - len(kept)} more distinct notes of single ranks are not listed")


def _natural(label: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label)]


def _mean_totals(tables: list[dict[str, float]]) -> dict[str, float]:
    """The mean over the ranks that have it of a table of totals (communication.json); ranks without do not count."""
    tables = [t for t in tables if t]
    if not tables:
        return {}
    keys = set().union(*tables)
    return {key: sum(t.get(key, 0.0) for t in tables) / len(tables) for key in sorted(keys)}


def _job_memory(readable: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, Any] | None:
    """The memory of the rank with the highest peak (ranks run the same program: the highest one is the one that
    runs out first), with a note giving every rank's peak and gap."""
    ranks = [(s, s["memory"]) for s in readable if (s.get("memory") or {}).get("peak")]
    if not ranks:
        return None
    def size(peak: dict[str, Any]) -> float:
        return peak.get("reserved") or peak.get("allocated") or 0.0
    # ranks that recorded what the allocator reserves first (their gap can be judged), then the highest peak
    summary, memory = max(ranks, key=lambda item: (item[1]["peak"].get("reserved") is not None, size(item[1]["peak"])))
    memory = dict(memory)
    if len(ranks) > 1:
        listed = ", ".join(f"{labels[s['path']]} {size(m['peak']) / 2**20:.0f} MiB"
                           + (f" (gap {m['peak']['gap_share']:.0%})" if m["peak"].get("gap_share") is not None else "")
                           for s, m in ranks[:16])
        memory["notes"] = list(memory.get("notes") or []) + [
            M_("memory of {rank}, the highest peak of {n} ranks: {listed}", rank=labels[summary["path"]], n=len(ranks),
               listed=listed)]
    return memory


def _numbers(values: Any, at_least: int) -> bool:
    """True for a list of at least ``at_least`` finite numbers (a rank summary's figures)."""
    return (isinstance(values, (list, tuple)) and len(values) >= at_least
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values))


def _links(readable: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, dict[str, list[float]]]:
    """{transport: {rank label: [MB, ms]}} for the slow-link check."""
    links: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for summary in readable:
        for transport, entry in (summary.get("transports") or {}).items():
            if _numbers(entry, 2):
                links[transport][labels[summary["path"]]] = list(entry)
    return dict(links)


# ----------------------------------------------------------------------------------------------
# The job's profile
# ----------------------------------------------------------------------------------------------


def build_job_profile(raw: RawProfile, peaks=None) -> Profile:
    """The profile of a job whose RawProfile came from ``job_raw``."""
    job = raw.extra["job"]
    ctx = Kernels(raw)
    ctx.device_time = float(sum(s["device_time_us"] for s in job))
    ctx.comm_time = float(sum(s["communication_time_us"] for s in job))
    ctx.compute_time = ctx.device_time - ctx.comm_time
    ctx.rows = op_type_rows(job, ctx.device_time)
    profile = symptoms.profile_of(ctx, peaks=None, checks=JOB_CHECKS + (lambda c: merge_symptoms(c, job),),
                                   roofline=False)
    profile.workload = _workload(job)
    profile.cluster = cluster_block(raw, profile)
    _explain_slow_rank(profile)
    profile.roofline = _outlier_roofline(raw, profile, peaks)
    return profile


def per_rank_of(profile: Profile) -> int:
    """How many ranks a job's sums are over: those read of a folder of ranks, or the devices of one file split
    into ranks (0 for one rank, or an msprof-analyze summary: per rank already)."""
    if profile.producer == "cluster" or profile.format != "multi-rank":
        return 0
    read = int((profile.cluster or {}).get("read") or 0) or sum(1 for rank in profile.ranks if rank.error is None)
    return read if read >= 2 else 0


def per_rank(profile: Profile) -> Profile:
    """A job's profile as its mean rank, for advice taken of one rank's step.

    A job's op-type times, totals and merged kernel symptoms are sums over its ranks (as the concatenated kernels
    would give), while its step split is the mean rank's: a share of the one taken of the other read "MatMulV2, Add
    (380.6 % of the step)". Dividing the sums by the ranks read puts both on one base; shares of device time and the
    job-level symptoms (step split, waiting, slow rank, slow link: per rank already) are unchanged.
    """
    read = per_rank_of(profile)
    if not read:
        return profile
    scale = 1.0 / read
    rows = [row.replace(time_us=round(row.time_us * scale, 3), count=max(1, round(row.count * scale)),
                        wait_us=None if row.wait_us is None else round(row.wait_us * scale, 3))
            for row in profile.op_types]
    found = [symptom if symptom.id in JOB_SYMPTOMS else symptom.replace(
        time_us=round(symptom.time_us * scale, 3),
        ceiling_us=None if symptom.ceiling_us is None else round(symptom.ceiling_us * scale, 3))
        for symptom in profile.symptoms]
    return profile.replace(op_types=rows, symptoms=found, device_time_us=round(profile.device_time_us * scale, 3),
                           compute_time_us=round(profile.compute_time_us * scale, 3),
                           communication_time_us=round(profile.communication_time_us * scale, 3))


def _workload(job: list[dict[str, Any]]) -> str | None:
    found = {s["workload"] for s in job}
    return "training" if "training" in found else "inference" if "inference" in found else None


def _op_table(job: list[dict[str, Any]]):
    """Every rank's op rows as one pyarrow table (``rank`` = the index of the rank in ``job``)."""
    import pyarrow as pa

    columns: dict[str, list] = defaultdict(list)
    for index, summary in enumerate(job):
        for row in summary["ops"]:
            columns["rank"].append(index)
            for key in ("op_type", "family", "unit", "bound", "busiest_pipe", "bound_why"):
                columns[key].append(row[key] or "")
            for key in ("count", "time_us", "busiest_ratio", "wait_us", "block_dim"):
                columns[key].append(row[key])
    types = {"rank": pa.int64(), "count": pa.int64(), "time_us": pa.float64(), "busiest_ratio": pa.float64(),
             "wait_us": pa.float64(), "block_dim": pa.int64()}
    return pa.table({key: pa.array(columns.get(key, []), types.get(key, pa.string())) for key in (
        "rank", "op_type", "family", "unit", "bound", "busiest_pipe", "bound_why", "count", "time_us",
        "busiest_ratio", "wait_us", "block_dim")})


def op_type_rows(job: list[dict[str, Any]], device_time: float) -> list[OpTypeStat]:
    """Op types summed over ranks; bound class, pipe and block dim are those carrying the most time."""
    import pyarrow.compute as pc

    table = _op_table(job)
    if not table.num_rows:
        return []
    table = table.append_column("ratio_time", pc.multiply(table["busiest_ratio"], table["time_us"]))
    totals = table.group_by(["op_type", "unit"], use_threads=False).aggregate([
        ("count", "sum"), ("time_us", "sum"), ("wait_us", "sum"), ("wait_us", "count"), ("family", "first")])
    votes = table.group_by(["op_type", "unit", "bound", "busiest_pipe", "bound_why"]).aggregate([
        ("time_us", "sum"), ("ratio_time", "sum"), ("ratio_time", "count")]).to_pylist()
    blocks = table.filter(pc.is_valid(table["block_dim"])).group_by(["op_type", "unit", "block_dim"]).aggregate(
        [("count", "sum")]).to_pylist()
    best = _winners(votes, "time_us_sum")
    block = _winners(blocks, "count_sum")
    detail = _detail_rows(job)
    rows = []
    for total in totals.to_pylist():
        key = (total["op_type"], total["unit"])
        vote = best[key]
        ratio = vote["ratio_time_sum"] / vote["time_us_sum"] if vote["ratio_time_count"] and vote["time_us_sum"] \
            else None
        time_us = total["time_us_sum"]
        rows.append(OpTypeStat(
            op_type=key[0], family=total["family_first"] or key[0], unit=key[1], count=total["count_sum"],
            time_us=round(time_us, 3), share=round(time_us / device_time, 6) if device_time else 0.0,
            bound=vote["bound"], dtypes=detail[key][0], formats=detail[key][1],
            block_dim=block[key]["block_dim"] if key in block else None,
            wait_us=round(total["wait_us_sum"], 3) if total["wait_us_count"] else None,
            busiest_pipe=vote["busiest_pipe"] or None, busiest_ratio=None if ratio is None else round(ratio, 4),
            bound_why=vote["bound_why"]))
    rows.sort(key=lambda r: (-r.time_us, r.op_type, r.unit))
    return rows


def _winners(groups: list[dict[str, Any]], weight: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (op type, unit) the group with the largest ``weight`` (ties: the first in sorted order)."""
    winners: dict[tuple[str, str], dict[str, Any]] = {}
    for group in sorted(groups, key=lambda g: tuple(str(v) for v in g.values())):
        key = (group["op_type"], group["unit"])
        if key not in winners or group[weight] > winners[key][weight]:
            winners[key] = group
    return winners


def _detail_rows(job: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[list[str], list[str]]]:
    """(dtypes, formats) of each op type: the most frequent over ranks, weighted by the rank's launch count."""
    dtypes: dict[tuple[str, str], Counter] = defaultdict(Counter)
    formats: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for summary in job:
        for row in summary["ops"]:
            key = (row["op_type"], row["unit"])
            for position, value in enumerate(row["dtypes"]):
                dtypes[key][value] += row["count"] / (position + 1)
            for position, value in enumerate(row["formats"]):
                formats[key][value] += row["count"] / (position + 1)
    keys = set(dtypes) | set(formats) | {(r["op_type"], r["unit"]) for s in job for r in s["ops"]}
    return {key: ([v for v, _ in dtypes[key].most_common(4)], [v for v, _ in formats[key].most_common(4)])
            for key in keys}


def merge_symptoms(ctx, job: list[dict[str, Any]]) -> None:
    """The ranks' kernel-level symptoms on the job: time summed, share weighted by each rank's device time.

    The same figures the ranks' kernels concatenated would give for device-time shares; the detail
    is that of the rank where it weighs most, and says on how many ranks it was found.
    """
    found: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for summary in job:
        for symptom in summary["symptoms"]:
            found.setdefault(symptom["id"], []).append((summary, symptom))
    device = sum(s["device_time_us"] for s in job) or 1.0
    labels = ctx.raw.extra["labels"]
    for symptom_id, hits in found.items():
        time_us = sum(s["time_us"] for _, s in hits)
        share = sum(s["share"] * r["device_time_us"] for r, s in hits) / device
        ceilings = [s["ceiling_us"] for _, s in hits if s["ceiling_us"] is not None]
        op_types = list(dict.fromkeys(op for _, s in hits for op in s["op_types"]))
        where, top = max(hits, key=lambda hit: hit[1]["time_us"])
        detail = top["detail"]
        base = top.get("base") or "device time"
        if base == "step":  # the ranks share the step: the mean rank's share of it, not a device-time weighting
            share = sum(s["share"] for _, s in hits) / len(job)
        if len(job) > 1:
            detail += f" (on {len(hits)} of {len(job)} ranks; figures of {labels[where['path']]})"
        ctx.symptoms.append(Symptom(id=symptom_id, op_types=op_types, share=round(share, 6), detail=detail,
                                    time_us=round(time_us, 3),
                                    ceiling_us=round(sum(ceilings), 3) if ceilings else None, base=base))


# ----------------------------------------------------------------------------------------------
# Slow and fast rank, dispersion per op type, links and the matrix
# ----------------------------------------------------------------------------------------------


def cluster_block(raw: RawProfile, profile: Profile) -> dict[str, Any]:
    """``Profile.cluster``: the slow / fast rank, the per-op-type dispersion, links, the matrix."""
    job, labels = raw.extra["job"], raw.extra["labels"]
    ranks = [r for r in profile.ranks if r.computing_us is not None]
    block: dict[str, Any] = {"ranks": len(profile.ranks), "read": len(job)}
    if len(ranks) >= 2:
        slow = max(ranks, key=lambda r: r.computing_us)
        fast = min(ranks, key=lambda r: r.computing_us)
        stages = [r.stage_us for r in ranks if r.stage_us]
        base = median(stages) if stages else median(r.device_time_us or 0.0 for r in ranks)
        gap = slow.computing_us - fast.computing_us
        block.update({"slow_rank": slow.rank, "fast_rank": fast.rank, "gap_us": round(gap, 3),
                      "gap_share": round(gap / base, 6) if base else None})
        block["dispersion"] = dispersion(job, [labels[s["path"]] for s in job], slow.rank)
    block["links"] = link_summary(raw.extra.get("link_bandwidth") or {})
    block["matrix"] = matrix_summary(job)
    return block


def dispersion(job: list[dict[str, Any]], labels: list[str], slow: str) -> list[dict[str, Any]]:
    """Compute op types by the slow rank's excess over the median rank (a rank without the op type counts 0)."""
    import pyarrow.compute as pc

    table = _op_table(job)
    table = table.filter(pc.invert(pc.is_in(table["unit"], value_set=_comm_units())))
    if not table.num_rows:
        return []
    per_op = table.group_by(["op_type", "unit", "rank"]).aggregate([("time_us", "sum")])
    times: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for row in per_op.to_pylist():
        times[(row["op_type"], row["unit"])][row["rank"]] = row["time_us_sum"]
    slow_index = labels.index(slow) if slow in labels else None
    found = []
    for (op_type, unit), by_rank in times.items():
        values = [by_rank.get(i, 0.0) for i in range(len(job))]
        middle = median(values)
        slowest = max(range(len(values)), key=lambda i: values[i])
        mean = sum(values) / len(values)
        spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        slow_us = values[slow_index] if slow_index is not None else None
        found.append({"op_type": op_type, "unit": unit, "median_us": round(middle, 3), "min_us": round(min(values), 3),
                      "max_us": round(values[slowest], 3), "max_rank": labels[slowest],
                      "cv": round(spread / mean, 4) if mean else None,
                      "slow_rank_us": None if slow_us is None else round(slow_us, 3),
                      "slow_excess_us": None if slow_us is None else round(slow_us - middle, 3)})
    found.sort(key=lambda d: (-(d["slow_excess_us"] or 0.0), -d["max_us"], d["op_type"]))
    return found[:max(DISPERSION_TOP, 20)]


def _comm_units():
    import pyarrow as pa

    return pa.array(["communication"])


def _explain_slow_rank(profile: Profile) -> None:
    """Name the op types that make the slow rank slow in its finding (from the dispersion)."""
    slow = next((s for s in profile.symptoms if s.id == "slow_rank"), None)
    rows = [d for d in (profile.cluster or {}).get("dispersion") or [] if (d["slow_excess_us"] or 0.0) > 0]
    if slow is None or not rows or not slow.detail.startswith("the slowest rank by computation"):
        return  # (a rank late for its idle time is not explained by its kernels)
    named = ", ".join(f"{d['op_type']} (+{U.time(d['slow_excess_us'])} over the median rank)"
                      for d in rows[:DISPERSION_TOP])
    slow.detail += f"; its extra computation is in {named}"


def link_summary(links: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    """Per transport: ranks, total MB, the median and the slowest rank's bandwidth (GB/s)."""
    found = []
    for transport, ranks in sorted(links.items()):
        rates = {rank: entry[0] / entry[1] for rank, entry in ranks.items() if entry[1] > 0 and entry[0] > 0}
        if not rates:
            continue
        slowest = min(rates, key=rates.get)
        found.append({"transport": transport, "ranks": len(rates), "size_mb": round(sum(e[0] for e in ranks.values()), 3),
                      "median_gbps": round(median(rates.values()), 3), "slowest_rank": slowest,
                      "slowest_gbps": round(rates[slowest], 3)})
    return found


def matrix_summary(job: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """communication_matrix.json over every rank, per transport: links, MB, median and slowest link (GB/s)."""
    per_transport: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for summary in job:
        for row in summary.get("matrix") or []:
            if not (isinstance(row, list) and len(row) == 5 and _numbers(row[3:], 2)):
                continue  # (a summary is ours; one of another shape is not read, never trusted)
            src, dst, transport, size, ms = row
            if src != dst:
                per_transport[transport or "unknown"].append((f"{src}-{dst}", size, ms))
    if not per_transport:
        return None
    found = []
    for transport, links in sorted(per_transport.items()):
        rates = [(size / ms, link) for link, size, ms in links if ms > 0 and size > 0]
        entry: dict[str, Any] = {"transport": transport, "links": len(links),
                                 "size_mb": round(sum(size for _, size, _ in links), 3)}
        if rates:
            slowest = min(rates)
            entry.update({"median_gbps": round(median(r for r, _ in rates), 3), "slowest_link": slowest[1],
                          "slowest_gbps": round(slowest[0], 3)})
        found.append(entry)
    return found


# ----------------------------------------------------------------------------------------------
# The outlier re-read in detail
# ----------------------------------------------------------------------------------------------


def _outlier_roofline(raw: RawProfile, profile: Profile, peaks):
    """The roofline needs launches (shapes, dtypes): that of the slowest rank, re-read in detail."""
    slow = (profile.cluster or {}).get("slow_rank")
    labels = raw.extra["labels"]
    path = next((p for p, label in labels.items() if label == slow), None) or raw.extra["job"][0]["path"]
    if not roofline.has_roofs(profile.device, peaks):
        # says what is missing, in the words of the ranks' producer; no rank needs reading
        result = roofline.compute(raw, profile.replace(format=raw.extra["rank_format"], notes=[]), peaks)
        profile.notes.extend(note for note in result.notes if note not in profile.notes)
        return result
    rank = symptoms.profile_of(Kernels(read_raw(path)), peaks)
    note = f"the roofline is that of {labels.get(path, path)} (the slowest rank by computation), re-read in detail"
    profile.notes.append(note)
    for extra in rank.roofline.notes if rank.roofline else []:
        if extra not in profile.notes:
            profile.notes.append(extra)
    return rank.roofline
