"""AI Core / AI Vector core counts per SoC name, for outputs that name the chip but not its cores.

msOpProf writes the SoC (``Run Soc Version`` in dump/op_basic_info.txt) but no core count, and the
DB exports name the chip in ``NPU_INFO`` (FORMATS.md §6: "core counts: not written"). Only exact
SoC names are listed: a family name such as ``Ascend910B`` covers parts with 20 and with 24 AI
Cores, so it maps to nothing rather than to a guess.

Sources: Ascend910B3 = 20 AIC + 40 AIV (catlass msOpProf sample, ../shared/real-profiles/
catlass-msprof-op/SOURCE.txt); A2 platform config with 24 AIC / 48 AIV (KB-SOURCES #43) for the
24-core Ascend910B1/B2; Ascend910B4 is the 20-core part like B3.
"""

from __future__ import annotations

#: SoC name -> (AI Cube cores, AI Vector cores).
CHIP_CORES: dict[str, tuple[int, int]] = {
    "Ascend910B1": (24, 48),
    "Ascend910B2": (24, 48),
    "Ascend910B3": (20, 40),
    "Ascend910B4": (20, 40),
}


def core_counts_for(chip: str | None) -> dict[str, int]:
    """``{"aic": n, "aiv": m}`` for a known SoC name, else ``{}``."""
    cores = CHIP_CORES.get((chip or "").strip())
    return {"aic": cores[0], "aiv": cores[1]} if cores else {}
