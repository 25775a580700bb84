"""Serving: the figures of an ms_service_profiler run and the findings they support (FORMATS-SERVING.md §7).

Figures: TTFT and TPOT (p50 / p90 / p99), throughput, batch size per iteration (prefill and decode apart),
the concurrency the clients offered, queue wait, KV-cache use and preemptions, the host gap between forwards.

Findings, each with what it can win and the basis (GAIN-MODELS.md "Serving"):

* **batch-limited-by-clients** — the decode batch follows the requests alive (the clients keep few in flight)
  while the KV cache is far from full: throughput can rise by at most (batch the cache allows / batch seen),
  the cache's allowance measured as batch / peak KV use (blocks grow with the sequences held), or by
  FORMATS-SERVING.md's formula (total blocks / blocks a mean request needs) where the engine's block size is known
  and that is smaller; bounded by the compute roof of decode, which the profile cannot show — the high end is an
  upper bound.
* **kv-cache-exhausted** — KV use reaches SERVING_KV_FULL or requests are swapped / preempted: the batch is
  capped by memory; queue wait is the latency at stake.
* **prefill-stalls-decode** — TPOT p99 at least SERVING_TAIL_RATIO x p50 while prefill and decode share
  iterations: the tail down to p50 is what chunked prefill or a prefill / decode split can win at most.
* **host-gap-between-forwards** — the device waits for the scheduler between forwards (``bubble_time``) for at
  least SERVING_BUBBLE_SHARE of the forward time: that wait is the most async scheduling / graph capture wins.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from statistics import mean, quantiles
from typing import Any, Sequence

from opprof_advisor.advice.finding import Finding
from opprof_advisor.advice.remedies import misfit, remedy_json
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.core.models import Entry
from opprof_advisor.readers.serving import ServingData, is_exec, number, res_list

#: This project's thresholds (named here; the gains are bounds, not forecasts).
SERVING_KV_FULL = 0.95
SERVING_KV_ROOM = 0.5  # a peak KV use below this leaves room for at least twice the batch
SERVING_FOLLOWS = 0.8  # decode batch / requests alive at or above this: the batch follows the clients
SERVING_TAIL_RATIO = 2.0
SERVING_BUBBLE_SHARE = 0.1
#: Iterations kept for the picture of batch size and duration per iteration (every n-th beyond it).
SERIES_POINTS = 500


def percentiles(values: list[float]) -> dict[str, float] | None:
    """mean, p50, p90, p99 (inclusive quantiles) of ``values``; None when empty."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    if len(values) == 1:
        only = round(values[0], 3)
        return {"mean": only, "p50": only, "p90": only, "p99": only, "n": 1}
    cuts = quantiles(values, n=100, method="inclusive")
    return {"mean": round(mean(values), 3), "p50": round(cuts[49], 3), "p90": round(cuts[89], 3),
            "p99": round(cuts[98], 3), "n": len(values)}


def _from_summary(data: ServingData, label: str) -> dict[str, float] | None:
    row = data.summary.get(label)
    if not row or row.get("p50") is None:
        return None
    return {"mean": row.get("average"), "p50": row["p50"], "p90": row.get("p90"), "p99": row.get("p99"), "n": None}


def _tpot(data: ServingData) -> list[float]:
    """Gaps (ms) between consecutive iteration ends of each request, from the executed batches' res_list."""
    ends: dict[str, dict[float, float]] = {}
    for row in data.batch:
        end = number(row, "end_time(ms)")
        if end is None or not is_exec(row):
            continue
        for item in res_list(row):
            rid, step = item.get("rid"), item.get("iter")
            if rid is not None and isinstance(step, (int, float)):
                ends.setdefault(str(rid), {})[float(step)] = end / 1000.0  # epoch µs in a "(ms)" column (§3)
    gaps = []
    for by_iter in ends.values():
        times = [by_iter[k] for k in sorted(by_iter)]
        gaps += [b - a for a, b in zip(times, times[1:]) if b >= a]
    return gaps


def _lifetimes(requests: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """(arrivals, finishes) of the requests with an arrival time, each sorted (ms)."""
    spans = [(start, start + (number(r, "execution_time(ms)") or 0.0))
             for r in requests if (start := number(r, "start_time(ms)")) is not None]
    return sorted(s for s, _ in spans), sorted(e for _, e in spans)


def _alive(requests: list[dict[str, Any]]) -> list[int]:
    """Requests alive (arrived, not yet finished) at each arrival, by a sweep over sorted starts and ends."""
    starts, ends = _lifetimes(requests)
    return [bisect_right(starts, t) - bisect_right(ends, t) for t in starts]


def _busy_bubbles(forwards: list[dict[str, Any]], requests: list[dict[str, Any]]) -> list[float]:
    """The gaps after each forward (``bubble_time``) while requests were in flight: a gap with nothing to run is the
    clients' pause, not the scheduler's (with no request table every gap counts)."""
    starts, ends = _lifetimes(requests)
    found = []
    for row in forwards:
        gap, end = number(row, "bubble_time(ms)"), number(row, "end_time(ms)")
        if gap is None:
            continue
        if starts and end is not None and bisect_right(starts, end) - bisect_right(ends, end + gap) <= 0:
            continue  # no request alive across the gap
        found.append(gap)
    return found


#: The KV block size in tokens each engine uses when none is configured, with where it is stated: the profile does
#: not record it (FORMATS-SERVING.md §7, "Max batch the KV cache allows").
DEFAULT_BLOCK_TOKENS = {
    "vllm-ascend": (128, N_("vllm-ascend's platform hook sets 128 when no --block-size is given "
                            "(vllm-project/vllm-ascend@007f5b6b:vllm_ascend/platform.py)")),
    "mindie": (128, N_("MindIE's recommended cacheBlockSize (https://hiascend.com/doc_center/source/zh/mindie/1.0.RC1/"
                       "mindieservice/servicedev/mindie_service0005.html)")),
}


def max_batch(total_blocks: float | None, prompt: float | None, output: float | None, block: int | None) -> int | None:
    """The sequences the KV blocks hold at once: floor(total_blocks / ceil((prompt + output) / block_size))."""
    if not (total_blocks and block and prompt is not None and output is not None and prompt + output > 0):
        return None
    return int(total_blocks // math.ceil((prompt + output) / block))


def serving_figures(data: ServingData, engine: str | None = None) -> dict[str, Any]:
    """The figures of the run (ms, tokens/s, counts); a figure the tables cannot give is None. ``engine`` gives the
    KV block size when the run's configuration does not (DEFAULT_BLOCK_TOKENS)."""
    requests = data.request
    ttft = percentiles([number(r, "first_token_latency(ms)") for r in requests]) or \
        _from_summary(data, "first_token_latency (ms)")
    tpot = _from_summary(data, "subsequent_token_latency (ms)") or percentiles(_tpot(data))
    queue = percentiles([number(r, "queue_wait_time(ms)") for r in requests])
    executed = [r for r in data.batch if is_exec(r)] or data.batch or data.forward
    sizes = [number(r, "batch_size") for r in executed if number(r, "batch_size") is not None]
    decode = [number(r, "decode_batch_size") for r in executed if number(r, "decode_batch_size")]
    if not decode:
        decode = [number(r, "batch_size") for r in executed if number(r, "batch_size") is not None
                  and "decode" in str(r.get("batch_type") or "").lower()
                  and "prefill" not in str(r.get("batch_type") or "").lower()]
    mixed = sum(1 for r in executed if (number(r, "prefill_batch_size") or 0) > 0 and (number(r, "decode_batch_size")
                                                                                          or 0) > 0
                or "," in str(r.get("batch_type") or ""))
    usage = [u for u in (number(r, "kvcache_usage_rate") for r in data.kvcache + data.batch) if u is not None]
    if usage and max(usage) > 1.0:  # a table in percent (vLLM's UsagePercent): every value of it, not row by row
        usage = [u / 100.0 for u in usage]
    blocks = [number(r, "total_blocks") for r in data.kvcache + data.batch if number(r, "total_blocks")]
    prompts = [number(r, "recv_token_size") for r in requests if number(r, "recv_token_size") is not None]
    outputs = [number(r, "reply_token_size") for r in requests if number(r, "reply_token_size") is not None]
    block, block_from = DEFAULT_BLOCK_TOKENS.get(engine or "", (None, None))
    allowed = max_batch(max(blocks) if blocks else None, mean(prompts) if prompts else None,
                        mean(outputs) if outputs else None, block)
    alive = _alive(requests)
    starts, ends = _lifetimes(requests)
    tokens = sum(number(r, "reply_token_size") or 0.0 for r in requests)
    window_s = (max(ends) - min(starts)) / 1000.0 if starts and ends and max(ends) > min(starts) else None
    throughput = tokens / window_s if window_s and tokens else data.service.get("generate_token_speed (token/s)")
    forwards = [number(r, "during_time(ms)") for r in data.forward if number(r, "during_time(ms)") is not None]
    bubbles = _busy_bubbles(data.forward, requests)
    swapped = [number(r, "swapped") for r in data.status if number(r, "swapped") is not None]
    step = max(1, len(executed) // SERIES_POINTS)
    series = [[i, number(r, "batch_size"), number(r, "during_time(ms)")] for i, r in enumerate(executed)][::step]
    return {
        "requests": len(requests) or None, "ttft_ms": ttft, "tpot_ms": tpot, "queue_wait_ms": queue,
        "throughput_tok_s": round(throughput, 3) if throughput else None,
        "window_s": round(window_s, 3) if window_s else None,
        "batch": {"iterations": len(sizes), "mean": round(mean(sizes), 3) if sizes else None,
                  "max": max(sizes) if sizes else None, "decode_mean": round(mean(decode), 3) if decode else None,
                  "mixed_iterations": mixed},
        "concurrency": {"mean": round(mean(alive), 3) if alive else None, "max": max(alive) if alive else None},
        "kv": {"peak_usage": round(max(usage), 6) if usage else None,
               "mean_usage": round(mean(usage), 6) if usage else None,
               "total_blocks": max(blocks) if blocks else None,
               # FORMATS-SERVING.md's formula over the mean prompt and output of the requests
               "max_batch": allowed, "block_tokens": block if allowed else None,
               "block_tokens_from": block_from if allowed else None},
        "preempted": max(swapped) if swapped else None,
        "forward": {"mean_ms": round(mean(forwards), 3) if forwards else None,
                    "bubble_mean_ms": round(mean(bubbles), 3) if bubbles else None,
                    "bubble_share": round(sum(bubbles) / sum(forwards), 6) if bubbles and sum(forwards) else None},
        "iterations": series,  # [iteration, batch size, duration ms], at most SERIES_POINTS of them
    }


def serving_findings(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings the figures support, first the one with the most at stake (see the module docstring)."""
    out = []
    batch, kv, alive = figures["batch"], figures["kv"], figures["concurrency"]
    seen = batch["decode_mean"] or batch["mean"]
    peak = kv["peak_usage"]
    if seen and alive["mean"] and peak and seen >= SERVING_FOLLOWS * alive["mean"] and peak < SERVING_KV_ROOM:
        allowed = seen / peak
        basis = M_("the cache would hold about {allowed:.0f} sequences (batch / peak KV use): throughput up to {x:.1f}x "
                   "if the clients send that many, bounded by the decode compute roof the profile cannot show",
                   allowed=allowed, x=allowed / seen)
        if kv["max_batch"] and kv["max_batch"] < allowed:  # the formula's is the smaller: the bound
            allowed = kv["max_batch"]
            basis = M_("the {blocks:.0f} KV blocks hold {allowed} sequences of the mean prompt + output in blocks of "
                       "{block} tokens ({where}): throughput up to {x:.1f}x if the clients send that many, bounded by "
                       "the decode compute roof the profile cannot show", blocks=kv["total_blocks"], allowed=allowed,
                       block=kv["block_tokens"], where=kv["block_tokens_from"], x=allowed / seen)
        out.append({"id": "batch-limited-by-clients", "symptom": "serving_batch_small", "title": M_(
            "The batch follows the clients: {batch:.1f} sequences a decode iteration with {alive:.1f} requests in flight "
            "on average, while the KV cache peaks at {peak:.0%} of its blocks", batch=seen, alive=alive["mean"],
            peak=peak),
            "gain": {"throughput_x_high": round(allowed / seen, 3), "basis": basis}})
    preempted = figures["preempted"]
    if (peak is not None and peak >= SERVING_KV_FULL) or (preempted or 0) > 0:
        queue = figures["queue_wait_ms"]
        out.append({"id": "kv-cache-exhausted", "symptom": "serving_kv_exhausted", "title": M_(
            "The KV cache runs out: peak use {peak}, {preempted} request(s) swapped or preempted",
            peak="-" if peak is None else "{:.0%}".format(peak), preempted=int(preempted or 0)),
            "gain": {"latency_ms_high": queue["p90"] if queue else None, "basis": M_(
                "requests wait for blocks: at most their queue wait (p90 {wait} ms) is won by more blocks or fewer "
                "sequences per batch", wait="-" if not queue else "{:.1f}".format(queue["p90"]))}})
    tpot = figures["tpot_ms"]
    if tpot and tpot.get("p99") and tpot["p50"] and tpot["p99"] >= SERVING_TAIL_RATIO * tpot["p50"] \
            and batch["mixed_iterations"]:
        out.append({"id": "prefill-stalls-decode", "symptom": "serving_prefill_stall", "title": M_(
            "Prefill stalls decode: TPOT p99 {p99:.1f} ms is {ratio:.1f}x its p50 {p50:.1f} ms, and {mixed} iterations "
            "run prefill and decode together", p99=tpot["p99"], ratio=tpot["p99"] / tpot["p50"], p50=tpot["p50"],
            mixed=batch["mixed_iterations"]),
            "gain": {"latency_ms_high": round(tpot["p99"] - tpot["p50"], 3), "basis": M_(
                "TPOT p99 down to p50 at most: what chunked prefill or a prefill / decode split can win")}})
    forward = figures["forward"]
    if forward["bubble_share"] is not None and forward["bubble_share"] >= SERVING_BUBBLE_SHARE:
        out.append({"id": "host-gap-between-forwards", "symptom": "serving_host_gap", "title": M_(
            "The device waits {bubble:.2f} ms for the scheduler after each {forward:.2f} ms forward ({share:.0%})",
            bubble=forward["bubble_mean_ms"], forward=forward["mean_ms"], share=forward["bubble_share"]),
            "gain": {"step_share_high": forward["bubble_share"] / (1.0 + forward["bubble_share"]), "basis": M_(
                "the gaps between forwards at most: what async scheduling or graph capture can hide")}})
    return out


SERVING_SCHEMA = "opprof-advisor/serving/1"
#: Span names only one engine writes (FORMATS-SERVING.md §5).
_VLLM_NAMES = frozenset({"batchframeworkprocessing", "modelrunnerexec"})
_MINDIE_NAMES = frozenset({"batchschedule", "decodeend"})
#: Remedies listed per finding.
MAX_REMEDIES = 3


def engine_of(data: ServingData) -> str | None:
    """``vllm-ascend`` or ``mindie`` by the span names of the batch table, else None."""
    names = {str(r.get("name") or "").strip().lower() for r in data.batch}
    if names & _VLLM_NAMES:
        return "vllm-ascend"
    if names & _MINDIE_NAMES:
        return "mindie"
    return None


def serving_document(data: ServingData, path: str, entries: Sequence[Entry], matcher: Any) -> dict[str, Any]:
    """The ``serving/1`` document: files read, figures, findings with their remedies, what could not be judged."""
    engine = engine_of(data)
    figures = serving_figures(data, engine)
    context = {"producer": "run", "phase": "serving", "framework": engine}
    findings = serving_findings(figures)
    for finding in findings:
        remedies = _remedies(finding, entries, matcher, context)
        finding["remedies"] = [remedy_json(entry, Finding(finding["id"], "serving", finding["title"], 0.0, None,
                                                          [finding["symptom"]])) for entry in remedies]
        finding["first_step"] = finding["remedies"][0]["first_step"] if finding["remedies"] else None
    notes = list(data.notes)
    if figures["ttft_ms"] is None:
        notes.append(M_("cannot judge TTFT: no request.csv with first_token_latency(ms) (run msserviceprofiler "
                        "parse with the request domain on)"))
    if figures["tpot_ms"] is None:
        notes.append(M_("cannot judge TPOT: batch.csv has no per-request iterations (res_list) and there is no "
                        "request_summary.csv (run msserviceprofiler analyze)"))
    if figures["kv"]["peak_usage"] is None:
        notes.append(M_("cannot judge the batch the KV cache allows: no kvcache.csv or KV columns in batch.csv "
                        "(collect with the KVCache domain on)"))
    elif figures["kv"]["max_batch"] is None:
        notes.append(M_("cannot compute the batch the KV blocks allow from their count: {missing} (the batch / peak KV "
                        "use estimate stands)", missing=N_("the engine, and so its block size, is not known")
                        if engine is None else N_("no total_blocks, or no prompt and output token counts per request")))
    return {"schema": SERVING_SCHEMA, "path": path, "engine": context["framework"], "files": dict(data.files),
            "figures": figures, "findings": findings, "notes": notes}


def _remedies(finding: dict[str, Any], entries: Sequence[Entry], matcher: Any, context: dict[str, Any]) -> list[Entry]:
    """KB entries that name the finding's symptom and fit the run, best match to the finding first."""
    fits = [e for e in entries if e.kind != "case" and finding["symptom"] in e.symptoms and misfit(e, context) is None]
    if not fits:
        return []
    scores = dict(zip(matcher.entry_ids_, matcher.score(" ".join([finding["symptom"]] * 3 + [str(finding["title"])]))))
    return sorted(fits, key=lambda e: (-scores.get(e.id, 0.0), e.id))[:MAX_REMEDIES]
