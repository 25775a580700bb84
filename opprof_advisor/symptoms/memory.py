"""The memory symptoms: the gap at the memory peak, memory held outside the allocator, a peak near the part's memory.

They read the memory summary a reader left in ``extra["memory"]`` (readers/memory.py); their shares are of the
reserved peak (``base`` "memory peak") or of the device's memory ("device memory").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.core.thresholds import (
    ACTIVATION_SHARE, FRAGMENTATION_SHARE, MEMORY_MIN_BYTES, NEAR_CAPACITY, OPTIMIZER_TEMPORARY_SHARE, OUTSIDE_SHARE,
    STATIC_SHARE,
)
from opprof_advisor.readers import chips

if TYPE_CHECKING:
    from opprof_advisor.profile.builder import Kernels


MIB = 1024.0 * 1024.0


def check_memory(ctx: Kernels) -> None:
    """Memory symptoms from the memory summary (readers/memory.py); their shares are of the reserved peak."""
    memory = ctx.raw.extra.get("memory")
    if not memory:
        return
    peak = memory.get("peak")
    if peak is None:
        ctx.notes.extend(note for note in memory.get("notes") or [] if note not in ctx.notes)
        return
    gap, reserved = peak.get("gap"), peak.get("reserved") or 0.0
    if gap is not None and reserved and gap >= MEMORY_MIN_BYTES and gap / reserved >= FRAGMENTATION_SHARE:
        ctx.add("memory_fragmentation", [], 0.0, M_(
            "at the {component} peak ({reserved:.0f} MiB reserved) {gap:.0f} MiB = {share:.1%} is reserved by the allocator "
            "but held by no tensor", component=peak["component"], reserved=reserved / MIB,
            gap=gap / MIB, share=gap / reserved), share=gap / reserved, base="memory peak")
    _check_optimizer_temporaries(ctx, memory, peak)
    _check_activations(ctx, memory, peak)
    _check_static(ctx, memory, peak)
    outside = memory.get("outside_allocator")
    if outside and reserved:
        held = outside["bytes"]
        if held >= MEMORY_MIN_BYTES and held / reserved >= OUTSIDE_SHARE:
            modules = [m for m in memory.get("modules") or [] if m["module"] not in ("APP", "GE")][:3]
            listed = ", ".join("{} {:.0f} MiB".format(m["module"], m["peak_reserved"] / MIB) for m in modules)
            named = M_("; largest modules: {modules}", modules=listed) if modules else ""
            ctx.add("memory_outside_allocator", [], 0.0, M_(
                "the process holds {app:.0f} MiB of HBM at the peak, {held:.0f} MiB more than the allocator's {reserved:.0f} MiB: "
                "memory outside the framework's allocator{named}", app=outside['app_hbm'] / MIB,
                held=held / MIB, reserved=reserved / MIB, named=named),
                share=held / reserved, base="memory peak")
    _check_capacity(ctx, memory)
    ctx.notes.extend(note for note in memory.get("notes") or [] if note not in ctx.notes)


def optimizer_holders(memory: dict) -> list[dict]:
    """The tensors held at the peak by the optimizer's multi-tensor operators (``aten::_foreach_add`` ...): torch.optim's
    foreach implementation keeps a list of intermediates as large as the parameters it steps."""
    return [holder for holder in memory.get("holders") or [] if "_foreach_" in str(holder.get("name") or "")]


def _check_optimizer_temporaries(ctx: Kernels, memory: dict, peak: dict) -> None:
    reserved = peak.get("reserved") or 0.0
    holders = optimizer_holders(memory)
    held = sum(holder["bytes"] for holder in holders)
    if not reserved or held < MEMORY_MIN_BYTES or held / reserved < OPTIMIZER_TEMPORARY_SHARE:
        return
    names = [holder["name"] for holder in holders]
    ctx.add("memory_optimizer_temporaries", [], 0.0, M_(
        "at the {component} peak ({reserved:.0f} MiB reserved) multi-tensor (foreach) operators such as the "
        "optimizer step's ({ops}) hold {held:.0f} MiB = {share:.1%} in {tensors} tensor(s)", component=peak["component"], reserved=reserved / MIB,
        ops=", ".join(names[:3]), held=held / MIB, share=held / reserved,
        tensors=sum(holder.get("tensors") or 0 for holder in holders)), share=held / reserved, base="memory peak")


def _check_activations(ctx: Kernels, memory: dict, peak: dict) -> None:
    """Activations at the peak (readers/memory.py ``_activations``): forward tensors kept for the backward pass."""
    activations, reserved = memory.get("activations"), peak.get("reserved") or 0.0
    held = (activations or {}).get("bytes") or 0.0
    if not reserved or held < MEMORY_MIN_BYTES or held / reserved < ACTIVATION_SHARE:
        return
    ctx.add("memory_activations", [], 0.0, M_(
        "at the {component} peak ({reserved:.0f} MiB reserved) {held:.0f} MiB = {share:.1%} is held by {tensors} tensor(s) "
        "the forward pass allocated and the backward pass freed (activations; largest from {ops})",
        component=peak["component"], reserved=reserved / MIB, held=held / MIB, share=held / reserved,
        tensors=activations["tensors"], ops=", ".join(activations["operators"])), share=held / reserved,
        base="memory peak")


def _check_static(ctx: Kernels, memory: dict, peak: dict) -> None:
    """Static memory at the peak: allocated before the profiled window and still held (readers/memory.py)."""
    held, reserved = (memory.get("before_window") or {}).get("bytes") or 0.0, peak.get("reserved") or 0.0
    if not reserved or held < MEMORY_MIN_BYTES or held / reserved < STATIC_SHARE:
        return
    ctx.add("memory_static", [], 0.0, M_(
        "at the {component} peak ({reserved:.0f} MiB reserved) {held:.0f} MiB = {share:.1%} was allocated before the "
        "profiled window and is still held (static memory: weights, gradients and optimizer states in training)",
        component=peak["component"], reserved=reserved / MIB, held=held / MIB, share=held / reserved),
        share=held / reserved, base="memory peak")


def _check_capacity(ctx: Kernels, memory: dict) -> None:
    """The device's HBM at its peak against the part's memory (platform config memory_size); a family name gives a
    range, judged only where both ends agree."""
    hbm = memory.get("device_hbm") or {}
    used = hbm.get("device_peak") or hbm.get("app_peak")
    if not used:
        return
    capacity = chips.hbm_capacity(ctx.raw.chip)
    if capacity is None:
        ctx.note(N_("headroom against the device's memory"), M_(
            "the chip is not in the profile (the device's HBM peaks at {used:.1f} GiB)", used=used / 2**30), "cores")
        return
    low, high = capacity
    if used >= NEAR_CAPACITY * high:
        ctx.add("memory_near_capacity", [], 0.0, M_(
            "the device's HBM peaks at {used:.1f} GiB of {cap:.0f} GiB ({share:.0%}): {free:.1f} GiB of headroom",
            used=used / 2**30, cap=high / 2**30, share=used / high, free=(high - used) / 2**30),
            share=used / high, base="device memory")
    elif used >= NEAR_CAPACITY * low:
        ctx.notes.append(M_("the device's HBM peaks at {used:.1f} GiB: near the memory of a {low:.0f} GiB {chip} part, "
                            "far from a {high:.0f} GiB one (the profile names the family, not the part)",
                            used=used / 2**30, low=low / 2**30, chip=ctx.raw.chip, high=high / 2**30))
