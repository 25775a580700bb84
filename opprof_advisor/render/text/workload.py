"""The terminal views of the ``memory/1`` and ``serving/1`` documents: figures, then findings with what each gives back."""

from __future__ import annotations

from typing import Any

from opprof_advisor.core.i18n import _, localize
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.render.phrases import entry_text
from opprof_advisor.render.text.styled import Text

MIB = 1024.0 * 1024.0


def first_step(finding: dict[str, Any]) -> str:
    """A memory or serving finding's first step in the language in use: its lead remedy's (Chinese when the entry
    has it), else the finding's own."""
    remedies = finding.get("remedies") or []
    return entry_text(remedies[0], "first_step") if remedies else localize(finding.get("first_step") or "")


def _mib(value: Any) -> str:
    return "-" if value is None else f"{float(value) / MIB:,.0f} MiB"


def memory_table(doc: dict[str, Any], **_options: Any) -> list:
    """Lines: the peak and its gap, each allocator component, the tensors at the peak, what is outside the
    allocator, then each finding with what it can give back and its first step."""
    out: list = []
    peak = doc.get("peak")
    if peak:
        out.append(Text.assemble((_("memory peak"), "bold"), f" ({peak['component']}, device {peak['device']}): "
                                 + _("{reserved} reserved, {allocated} allocated, gap {gap} ({share})").format(
                                     reserved=_mib(peak["reserved"]), allocated=_mib(peak["allocated"]),
                                     gap=_mib(peak["gap"]), share=U.share(peak.get("gap_share")))))
        for c in doc.get("components") or []:
            out.append(Text("  " + _("{component}: peak reserved {reserved}, peak allocated {allocated}, "
                                     "{rows} records").format(component=c["component"], reserved=_mib(c["peak_reserved"]),
                                                              allocated=_mib(c["peak_allocated"]), rows=c["rows"])))
    holders = doc.get("holders") or []
    if holders:
        out.append(Text(_("held at the peak, largest first:"), "bold"))
        out += [Text(f"  {h['name']}  {_mib(h['bytes'])}  " + _("{n} tensor(s), held {time}").format(
            n=h["tensors"], time=U.time(h["held_for_us"]))) for h in holders]
    outside = doc.get("outside_allocator")
    if outside:
        modules = ", ".join(f"{m['module']} {_mib(m['peak_reserved'])}" for m in doc.get("modules") or [])
        out.append(Text(_("outside the allocator: {held} (process HBM {app}); modules: {modules}").format(
            held=_mib(outside["bytes"]), app=_mib(outside["app_hbm"]), modules=modules or "-")))
    findings = doc.get("findings") or []
    if findings:
        out.append(Text(_("findings"), "bold"))
    for number, f in enumerate(findings, start=1):
        saving = f["saving"]
        out.append(Text(f"{number}. {localize(f['title'])}"))
        out.append(Text("   " + _("gives back at most {mib} MiB ({share} of the peak): {basis}").format(
            mib=f"{saving['high_mib']:,.0f}", share=U.share(saving["share_of_peak"]), basis=localize(saving["basis"]))))
        out.append(Text("   " + _("first step: {step}").format(step=first_step(f))))
        if f.get("remedies"):
            out.append(Text("   " + _("remedies: {ids}").format(ids=", ".join(r["id"] for r in f["remedies"]))))
    if not peak and not findings:
        out.append(Text(_("no memory data")))
    out += [Text(_("note: {note}").format(note=localize(note))) for note in doc.get("notes") or []]
    return out


def _or_dash(value: Any) -> Any:
    return "-" if value is None else value


def _dist(figure: dict[str, Any] | None) -> str:
    if not figure:
        return "-"
    return _("p50 {p50} / p90 {p90} / p99 {p99} ms").format(
        **{k: "-" if figure.get(k) is None else f"{figure[k]:,.1f}" for k in ("p50", "p90", "p99")})


def serving_table(doc: dict[str, Any], **_options: Any) -> list:
    """Lines of a ``serving/1`` document: the figures, then each finding with what it can win and its first step."""
    f = doc.get("figures") or {}
    batch, kv, alive, forward = (f.get(k) or {} for k in ("batch", "kv", "concurrency", "forward"))
    engine = doc.get("engine") or _("engine not named")
    out: list = [Text.assemble((_("serving"), "bold"), " (" + engine + "): "
                               + _("{n} requests").format(n=f.get("requests") or "-"))]
    out.append(Text("  TTFT " + _dist(f.get("ttft_ms"))))
    out.append(Text("  TPOT " + _dist(f.get("tpot_ms"))))
    out.append(Text("  " + _("queue wait {dist}").format(dist=_dist(f.get("queue_wait_ms")))))
    out.append(Text("  " + _("throughput {tps} tokens/s; batch mean {mean} (decode {decode}), max {max}; in flight "
                             "mean {alive}").format(tps="-" if f.get("throughput_tok_s") is None else
                                                    f"{f['throughput_tok_s']:,.1f}", mean=_or_dash(batch.get("mean")),
                                                    decode=batch.get("decode_mean") or "-", max=_or_dash(batch.get("max")),
                                                    alive=alive.get("mean") or "-")))
    out.append(Text("  " + _("KV cache peak {peak}, mean {mean}; preempted {preempted}; gap between forwards "
                             "{bubble}").format(peak=U.share(kv.get("peak_usage")), mean=U.share(kv.get("mean_usage")),
                                                preempted="-" if f.get("preempted") is None else int(f["preempted"]),
                                                bubble=U.share(forward.get("bubble_share")))))
    if kv.get("max_batch"):
        out.append(Text("  " + _("the {blocks} KV blocks hold {n} sequences of the mean request (blocks of {block} "
                                 "tokens)").format(blocks=f"{kv['total_blocks']:,.0f}", n=kv["max_batch"],
                                                   block=kv["block_tokens"])))
    findings = doc.get("findings") or []
    if findings:
        out.append(Text(_("findings"), "bold"))
    for number, item in enumerate(findings, start=1):
        out.append(Text(f"{number}. {localize(item['title'])}"))
        out.append(Text("   " + localize(item["gain"]["basis"])))
        if item.get("first_step"):
            out.append(Text("   " + _("first step: {step}").format(step=first_step(item))))
        if item.get("remedies"):
            out.append(Text("   " + _("remedies: {ids}").format(ids=", ".join(r["id"] for r in item["remedies"]))))
    out += [Text(_("note: {note}").format(note=localize(note))) for note in doc.get("notes") or []]
    return out
