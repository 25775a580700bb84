"""The SoC table: exact SoC names -> core counts, nominal clock, HBM bandwidth, cube ops per cycle.

Outputs name the chip but rarely everything else: msOpProf writes the SoC (``Run Soc Version`` in
dump/op_basic_info.txt) and a clock but no core count; the DB exports name the chip in ``NPU_INFO``
(FORMATS.md §6: "core counts: not written"). Only exact SoC names are listed: a family name such as
``Ascend910B`` covers parts with 20 and with 24 AI Cores, so it maps to nothing rather than to a
guess. A figure no source states is left out (None), never filled in from a neighbouring part.

What the profile itself records (core counts from info.json, the clock from info.json
``aic_frequency`` / msOpProf ``Current Freq`` / DB ``AICORE_FREQ``) always wins over this table; the
table fills gaps. Marketed TFLOPS figures (e.g. "376T" for a 24-core part, about 6 % above
cores x clock x 8192) are not used anywhere: peaks are computed from cores, clock and ops per cycle.

Sources (each figure below names one of these):

* ``CATLASS`` -- hicann/catlass ``include/acot/arch/arch.hpp``: ``AscendC910B3`` MaxBlock 20,
  MaxAivBlock 40, L2 192 MB; and the catlass msOpProf sample (../shared/real-profiles/catlass-msprof-op,
  hicann/catlass@87cbf79e): Ascend910B3, Block Dim 20 / Mix Block Dim 40, ``Rated Freq`` 1800.
* ``A2_CONFIG`` -- KB-SOURCES #43: the A2/A3 platform_config example shows 24 Cube / 48 Vector cores
  (hiascend CANN ATC ``atlasatcparam_16_0038.html``), the 24-core Ascend910B1/B2; Ascend910B4 is a
  20-core part like B3.
* ``GM_BW`` -- KB-AUDIT N50: hiascend canncommercial 800 ``atlas_ascendc_best_practices_10_0035.html``
  (Atlas A2, L2 192 MB): "L2 Cache读写混合带宽约为7TB/s,而GM的带宽约为1.6TB/s". Applied to the A2
  parts with that 192 MB L2 (B1, B2, B3); Ascend910B4 has a smaller L2 and HBM, so no figure.
* ``TILELANG`` -- the tilelang msOpProf sample (../shared/real-profiles/tilelang-ascend,
  tile-ai/tilelang-ascend@77f5caf3): ``Run Soc Version=Ascend910_9362``, ``Rated Freq=1650``.
* ``CANN_CONFIG`` -- the CANN 8.1.RC1 platform configs, leideng/CANN-8.1.RC1@4332a013:Ascend/ascend-toolkit/
  8.1.RC1/aarch64-linux/data/platform_config/<SoC>.ini: ``ai_core_cnt`` / ``vector_core_cnt`` (cores),
  ``cube_freq`` (MHz), ``l2_size`` (bytes), and ``Short_SoC_version``, the family name profiles often give
  instead of the part (``Ascend910B``: B1–B4, 20 or 24 AI Cores; ``Ascend910_93``: 9362 and 9391).
* ``CUBE_OPS`` -- Ascend/msprof-analyze@5f927748:msprof_analyze/cluster_analyse/cluster_kernels_analysis/
  operator_mfu/chip_peak_flops.py: ``OPS_PER_CYCLE`` FLOAT16 = 16*16*16*2, INT8 = 16*32*16*2 per AI
  Core per cycle, peak = ai_core_num x aic_frequency x ops per cycle; its operator_flops.py maps BF16
  onto the FLOAT16 rate. Same shapes in hiascend canncommercial 5046 ``tbedevg_000010.html``: one Cube
  step multiplies fp16 16x16 by 16x16, int8 16x32 by 32x16.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opprof_advisor.core.records import Record

#: Cube flop (or int op) per cycle per AI Core (Cube core), by dtype class [CUBE_OPS]. FP32 / HF32
#: are absent on purpose: no source we have states their cube rate (msprof-analyze measures FLOAT
#: kernels against the FP16 peak, a convention, not a hardware figure). Give it in --peaks.
CUBE_OPS_PER_CYCLE: dict[str, int] = {"fp16": 16 * 16 * 16 * 2, "bf16": 16 * 16 * 16 * 2, "int8": 16 * 32 * 16 * 2}
CUBE_OPS_SOURCE = ("Ascend/msprof-analyze@5f927748:msprof_analyze/cluster_analyse/cluster_kernels_analysis/"
                   "operator_mfu/chip_peak_flops.py (OPS_PER_CYCLE)")


@dataclass(frozen=True)
class SocSpec(Record):
    """What the sources say about one exact SoC name; None = no source states it."""

    name: str
    aic: int | None = None  # AI Cube cores (AI Cores)
    aiv: int | None = None  # AI Vector cores
    freq_mhz: float | None = None  # nominal (rated) AI Core clock
    hbm_gbps: float | None = None  # nominal HBM (GM) bandwidth, GB/s
    l2_mb: float | None = None  # L2 cache size, MB (an above-HBM-roof result may come from L2)
    hbm_gib: float | None = None  # device memory (platform config memory_size), GiB
    sources: dict[str, str] = field(default_factory=dict)  # figure -> source key (see module docstring)


_CATLASS = "hicann/catlass include/acot/arch/arch.hpp (AscendC910B3); catlass msOpProf sample (Rated Freq 1800)"
_A2_CONFIG = "KB-SOURCES #43 (A2 platform_config: 24 Cube / 48 Vector cores)"
_GM_BW = "hiascend canncommercial 800 atlas_ascendc_best_practices_10_0035 (GM about 1.6 TB/s, L2 192 MB)"
_TILELANG = "tile-ai/tilelang-ascend@77f5caf3 msOpProf sample (Run Soc Version=Ascend910_9362, Rated Freq=1650)"
_CANN = ("leideng/CANN-8.1.RC1@4332a013:Ascend/ascend-toolkit/8.1.RC1/aarch64-linux/data/platform_config/{soc}.ini "
         "(ai_core_cnt, vector_core_cnt, cube_freq, l2_size, memory_size)")


def _cann(soc: str) -> str:
    return _CANN.format(soc=soc)


#: Exact SoC name -> spec. Add a part only with a source for each figure.
SOCS: dict[str, SocSpec] = {
    spec.name: spec
    for spec in (
        SocSpec("Ascend910B1", aic=24, aiv=48, freq_mhz=1850.0, hbm_gbps=1600.0, l2_mb=192.0, hbm_gib=64.0,
                sources={"hbm_gib": _cann("Ascend910B1"), "cores": _cann("Ascend910B1"), "freq_mhz": _cann("Ascend910B1"), "hbm_gbps": _GM_BW}),
        SocSpec("Ascend910B2", aic=24, aiv=48, freq_mhz=1800.0, hbm_gbps=1600.0, l2_mb=192.0, hbm_gib=64.0,
                sources={"hbm_gib": _cann("Ascend910B2"), "cores": _cann("Ascend910B2"), "freq_mhz": _cann("Ascend910B2"), "hbm_gbps": _GM_BW}),
        SocSpec("Ascend910B3", aic=20, aiv=40, freq_mhz=1800.0, hbm_gbps=1600.0, l2_mb=192.0, hbm_gib=64.0,
                sources={"hbm_gib": _cann("Ascend910B3"), "cores": _CATLASS, "freq_mhz": _CATLASS, "hbm_gbps": _GM_BW}),
        SocSpec("Ascend910B4", aic=20, aiv=40, freq_mhz=1500.0, l2_mb=96.0, hbm_gib=32.0,
                sources={"hbm_gib": _cann("Ascend910B4"), "cores": _cann("Ascend910B4"), "freq_mhz": _cann("Ascend910B4")}),
        # A3: no HBM figure is sourced for these parts (the 1.6 TB/s page is about Atlas A2)
        SocSpec("Ascend910_9391", aic=24, aiv=48, freq_mhz=1850.0, l2_mb=192.0, hbm_gib=64.0,
                sources={"hbm_gib": _cann("Ascend910_9391"), "cores": _cann("Ascend910_9391"), "freq_mhz": _cann("Ascend910_9391")}),
        SocSpec("Ascend910_9362", aic=20, aiv=40, freq_mhz=1500.0, l2_mb=168.0, hbm_gib=32.0,
                sources={"hbm_gib": _cann("Ascend910_9362"), "cores": _cann("Ascend910_9362"), "freq_mhz": _cann("Ascend910_9362")}),
    )
}

#: SoC name -> (AI Cube cores, AI Vector cores), for the parts whose counts are sourced.
CHIP_CORES: dict[str, tuple[int, int]] = {
    name: (spec.aic, spec.aiv) for name, spec in SOCS.items() if spec.aic and spec.aiv
}


def soc_spec(chip: str | None) -> SocSpec | None:
    """The spec of an exact SoC name, else None (family names such as ``Ascend910B`` included)."""
    return SOCS.get((chip or "").strip())


def core_counts_for(chip: str | None) -> dict[str, int]:
    """``{"aic": n, "aiv": m}`` for a known SoC name, else ``{}``."""
    cores = CHIP_CORES.get((chip or "").strip())
    return {"aic": cores[0], "aiv": cores[1]} if cores else {}


#: Family names (the platform configs' ``Short_SoC_version``) -> the parts they cover [CANN_CONFIG].
FAMILIES: dict[str, tuple[str, ...]] = {
    "Ascend910B": ("Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4"),
    "Ascend910_93": ("Ascend910_9362", "Ascend910_9391"),
}


def fewest_cores(parts: tuple[str, ...]) -> dict[str, int]:
    """``{"aic": n, "aiv": m}``: the fewest cores among ``parts`` (a lower bound for whichever of them ran)."""
    counts = [CHIP_CORES[part] for part in parts if part in CHIP_CORES]
    return {"aic": min(aic for aic, _ in counts), "aiv": min(aiv for _, aiv in counts)} if counts else {}


def family_parts(chip: str | None) -> tuple[str, ...]:
    """The parts a family name covers (``Ascend910B`` -> B1–B4), else ()."""
    return FAMILIES.get((chip or "").strip(), ())


# ----------------------------------------------------------------------------------------------
# Expected link bandwidth per transport
# ----------------------------------------------------------------------------------------------

#: The bandwidth (GB/s) msprof's cluster analysis takes as a link's standard, by chip generation, and the share
#: of it below which it calls a link's bandwidth poorly used (BANDWIDTH_THRESHOLD) when most packets are
#: large (LARGE_MESSAGE_RATE). CHIP_V4_1_0 (platform_version 5) is the Atlas A2 / A3 class; CHIP_V2_1_0 the
#: first Ascend 910.
LINK_SOURCE = ("Ascend/msprof@a3989db0:analysis/common_func/ms_constant/number_constant.py (RDMA_/HCCS_/"
               "PCIE_BANDWIDTH_V2_1_0, _V4_1_0, BANDWIDTH_THRESHOLD, LARGE_MESSAGE_RATE), used by its "
               "HcclAnalysisTool.get_standard_bandwidth")
LINK_USE_THRESHOLD = 0.8
LARGE_PACKET_SHARE = 0.8
#: What Huawei's communication-analysis guide calls reasonable for large transfers (GB/s): cross-chip SDMA
#: (HCCS / PCIE / SIO) above 16 MB about 19 for copies and about 17 for inline reduce, RDMA above 1 MB about 21
#: (kb/patterns/hccl-expected-bandwidth.md). Collectives mix both: the lower SDMA figure is the floor.
REASONABLE_SOURCE = ("mindstudio-agent==26.1.3:resources/configs/default/skills/profiler/ascend-communication-analysis/"
                     "SKILL.md")
REASONABLE_GBPS = {"HCCS": 17.0, "PCIE": 17.0, "SIO": 17.0, "RDMA": 21.0}
_V4_LINKS = {"HCCS": 28.0, "RDMA": 25.0}
_V2_LINKS = {"HCCS": 18.0, "RDMA": 12.5, "PCIE": 20.0}
_V2_PARTS = ("Ascend910A", "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA")
#: Chip generation names used in messages, with their standard links.
LINK_CLASSES = {"Atlas A2 / A3 (Ascend910B, Ascend910_93)": _V4_LINKS, "Ascend 910 (Ascend910A, ProA, ProB)": _V2_LINKS}


#: info.json platform_version -> the standard links of that generation (msprof's ChipManager.CHIP_RELATION_MAP).
_PLATFORM_LINKS = {"5": _V4_LINKS, "1": _V2_LINKS}


def generation_name(platform_version: str | None) -> str | None:
    """The chip class info.json's platform_version names ("5" -> the Atlas A2 / A3 class), else None."""
    links = _PLATFORM_LINKS.get(platform_version or "")
    return next((name for name, known in LINK_CLASSES.items() if known is links), None)


def standard_links(chip: str | None, platform_version: str | None = None) -> dict[str, float]:
    """{transport: GB/s} msprof takes as the standard of the chip's links, by the chip's name or the generation
    info.json names (platform_version); {} for a chip of no known generation."""
    name = (chip or "").strip()
    if platform_version in _PLATFORM_LINKS:
        return dict(_PLATFORM_LINKS[platform_version])
    if name in SOCS or name in FAMILIES or any(name in parts for parts in FAMILIES.values()):
        return dict(_V4_LINKS)
    if name in _V2_PARTS:
        return dict(_V2_LINKS)
    return {}


def link_floor(transport: str, standard: float) -> float:
    """The bandwidth a large transfer on the link should reach: the lower of LINK_USE_THRESHOLD of the standard
    and the guide's reasonable figure (a link is called slow only when both sources agree)."""
    reasonable = REASONABLE_GBPS.get(transport)
    floor = LINK_USE_THRESHOLD * standard
    return min(floor, reasonable) if reasonable else floor


def hbm_capacity(chip: str | None) -> tuple[float, float] | None:
    """(smallest, largest) device memory in bytes of the part or family ``chip`` names; None when unknown."""
    name = (chip or "").strip()
    parts = FAMILIES.get(name) or ((name,) if name in SOCS else ())
    sizes = [SOCS[p].hbm_gib for p in parts if p in SOCS and SOCS[p].hbm_gib]
    return (min(sizes) * 2**30, max(sizes) * 2**30) if sizes else None
