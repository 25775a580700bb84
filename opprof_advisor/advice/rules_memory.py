"""Memory findings: what the memory summary (readers/memory.py) says can be saved, in bytes.

Gain models (GAIN-MODELS.md "Memory"): fragmentation saves at most the gap at the peak (reserved − allocated:
memory the allocator holds that no tensor uses); memory outside the allocator saves at most what the largest
module holds beyond the allocator (communication buffers sized by HCCL_BUFFSIZE, for one); the optimizer's
foreach temporaries save at most what the ``_foreach_*`` operators hold at the peak (PyTorch's optimizer
documentation: the foreach implementation uses about the parameters' size more peak memory than the for-loop
one); activations save RECOMPUTE_SAVES of what the forward pass keeps for the backward pass at the peak (recompute or
offload them); static memory in data-parallel training (weights, gradients, optimizer states held since before the
window) saves what sharding the optimizer state over the ranks gives back (DISTRIBUTED_OPTIMIZER_SAVES), if it is
not sharded yet. None of them is time: a
smaller peak is worth a larger batch or a model that fits, and time only where it avoids running out of memory.
"""

from __future__ import annotations

from typing import Any

from opprof_advisor.advice.finding import Finding
from opprof_advisor.core.i18n import M_
from opprof_advisor.core.models import Profile
from opprof_advisor.core.operators import COMMUNICATION_FAMILIES
from opprof_advisor.core.thresholds import DISTRIBUTED_OPTIMIZER_SAVES, RECOMPUTE_SAVES
from opprof_advisor.symptoms.memory import optimizer_holders

MIB = 1024.0 * 1024.0


def memory_findings(profile: Profile, ranks: str | None = None) -> list[tuple[Finding, dict[str, Any]]]:
    """(finding, saving) for each memory symptom, the most it can give back first (a peak near capacity leads);
    ``saving``: ``high_bytes`` (the most the remedy can give back), ``share_of_peak`` and ``basis``. ``ranks`` is
    the workload context's: only several ranks can shard a state."""
    memory = profile.memory or {}
    peak = memory.get("peak") or {}
    reserved = peak.get("reserved") or 0.0
    found = {s.id: s for s in profile.symptoms}
    out = []
    gap = found.get("memory_fragmentation")
    if gap is not None and reserved:
        saved = peak["gap"]
        out.append((Finding("memory-fragmentation", "memory", M_("Memory the allocator holds but no tensor uses: {detail}",
                                                                 detail=gap.detail), 0.0, None, [gap.id],
                            story="memory-fragmentation-static-memory"),
                    {"high_bytes": saved, "share_of_peak": saved / reserved, "basis": M_(
                        "the gap at the {component} peak: {gap:.0f} MiB of {reserved:.0f} MiB reserved (what an allocator "
                        "setting such as expandable segments can give back at most)", component=peak["component"],
                        gap=saved / MIB, reserved=reserved / MIB)}))
    temporaries = found.get("memory_optimizer_temporaries")
    if temporaries is not None and reserved:
        saved = sum(holder["bytes"] for holder in optimizer_holders(memory))
        out.append((Finding("optimizer-foreach-temporaries", "memory", M_(
            "Foreach temporaries of the optimizer step are part of the peak: {detail}", detail=temporaries.detail), 0.0, None,
            [temporaries.id]),
                    {"high_bytes": saved, "share_of_peak": saved / reserved, "basis": M_(
                        "what the multi-tensor operators hold at the {component} peak: {held:.0f} MiB of {reserved:.0f} "
                        "MiB reserved (stepping the parameters one tensor at a time keeps one tensor's intermediates "
                        "instead: what it gives back at most)", component=peak["component"], held=saved / MIB,
                        reserved=reserved / MIB)}))
    activations = found.get("memory_activations")
    if activations is not None and reserved:
        held = memory["activations"]["bytes"]
        low, high = RECOMPUTE_SAVES
        out.append((Finding("activations-at-peak", "memory", M_(
            "Activations kept for the backward pass make up the peak: {detail}", detail=activations.detail), 0.0, None,
            [activations.id]),
                    {"high_bytes": high * held, "share_of_peak": high * held / reserved, "basis": M_(
                        "{low:.0%}–{high:.0%} of the {held:.0f} MiB of activations at the {component} peak: what "
                        "recomputation (full or selective) or offloading them gives back (GAIN-MODELS.md), for more "
                        "compute in the backward pass", low=low, high=high, held=held / MIB,
                        component=peak["component"])}))
    static = found.get("memory_static")
    if static is not None and reserved and profile.workload == "training" and ranks == "multi":
        out.append(_optimizer_state(static, memory["before_window"]["bytes"], reserved))
    outside = found.get("memory_outside_allocator")
    if outside is not None and reserved:
        held = memory["outside_allocator"]["bytes"]
        modules = [m for m in memory.get("modules") or [] if m["module"] not in ("APP", "GE")]
        top = modules[0] if modules else None
        saved = min(held, top["peak_reserved"]) if top else held
        out.append((Finding("memory-outside-allocator", "memory", M_("Memory held outside the allocator: {detail}",
                                                                     detail=outside.detail), 0.0, None, [outside.id],
                            # HCCL's memory is its collectives' buffers: remedies written for them apply
                            operators=sorted(COMMUNICATION_FAMILIES) if top and top["module"] == "HCCL" else []),
                    {"high_bytes": saved, "share_of_peak": saved / reserved, "basis": M_(
                        "what {module} holds beyond the allocator: at most {saved:.0f} MiB ({held:.0f} MiB in all outside it)",
                        module=top["module"] if top else M_("the process"), saved=saved / MIB,
                        held=held / MIB)}))
    out.sort(key=lambda found_saving: -found_saving[1]["high_bytes"])  # what gives back most first
    near = found.get("memory_near_capacity")
    if near is not None:
        gains = sum(saving["high_bytes"] for _, saving in out)
        out.insert(0, (Finding("memory-near-capacity", "memory", M_("Little memory left on the device: {detail}",
                                                                    detail=near.detail), 0.0, None, [near.id]),
                       {"high_bytes": gains, "share_of_peak": gains / reserved if reserved else 0.0, "basis": M_(
                           "running out is the risk; what the findings below give back ({gains:.0f} MiB) and the "
                           "remedies' savings (recompute, offload) are the room to win", gains=gains / MIB)}))
    return out


def _optimizer_state(static: Any, held: float, reserved: float) -> tuple[Finding, dict[str, Any]]:
    """Static memory of a data-parallel training run: if it holds Adam states every rank keeps whole, sharding them
    (a distributed optimizer, ZeRO-1) gives back DISTRIBUTED_OPTIMIZER_SAVES of it."""
    at_two, most = DISTRIBUTED_OPTIMIZER_SAVES
    return (Finding("optimizer-state", "memory", M_(
        "Static memory (weights, gradients, optimizer states) makes up the peak: {detail}", detail=static.detail),
        0.0, None, [static.id], remedy_tags=["distributed-optimizer", "zero", "optimizer"]),
            {"high_bytes": most * held, "share_of_peak": most * held / reserved, "basis": M_(
                "if the {held:.0f} MiB held since before the window are parameters with Adam's state kept whole on "
                "every data-parallel rank, sharding the state over d ranks gives back {two:.0%} of them at d = 2, up "
                "to {most:.0%} as d grows (the optimizer's state is two thirds of the bytes per parameter: Adam's "
                "moments, 8 of 12 for fp32 parameters; master weights and moments, 12 of 18 for 16-bit parameters "
                "with fp32 gradients); nothing if it is already sharded", held=held / MIB, two=at_two, most=most)})


def saving_json(saving: dict[str, Any]) -> dict[str, Any]:
    return {"high_bytes": round(saving["high_bytes"]), "high_mib": round(saving["high_bytes"] / MIB, 1),
            "share_of_peak": round(saving["share_of_peak"], 6), "basis": saving["basis"], "model": "model"}
