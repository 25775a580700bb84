"""Test data: synthetic profiler output written in the documented on-disk formats (../shared/FORMATS.md).

Not runtime code: the tests, the benchmarks and ``data/make_examples.py`` / ``data/make_bench.py``
use it (as ``datasette.fixtures`` serves datasette's tests). One writer module per producer, as
``readers/`` has one reader per format: ``torch_npu``, ``msprof``, ``database`` (the SQLite
exports of both), ``msopprof``; ``spec`` (the workload), ``headers`` (the documented headers).

A workload is a list of ``KernelSpec`` (or plain dicts with the same keys), written as any producer
would have written it:

* ``write_torch_npu_text(dir, kernels, level="Level2")``  ``*_ascend_pt/ASCEND_PROFILER_OUTPUT/``
* ``write_torch_npu_job(dir, kernels, ranks=8, slow_rank=3)`` a data-parallel job: one ``*_ascend_pt`` per rank
* ``write_torch_npu_db(dir, kernels)``                     ``*_ascend_pt/.../ascend_pytorch_profiler_<rank>.db``
* ``write_op_summary(dir, kernels)``                       system msprof ``PROF_*`` tree
* ``write_msprof_db(path, kernels)``                       ``PROF_*/msprof_<ts>.db``
* ``write_msopprof_device(dir, kernel)``                   ``msprof op`` ``OPPROF_*`` directory
* ``write_msopprof_simulator(dir, kernel)``                ``msprof op simulator`` ``OPPROF_*`` directory
* ``write_all_formats(dir, kernels)``                      the four whole-run formats above, side by side

Directory rule shared by every writer: pass either the producer-named directory itself
(``…_ascend_pt``, ``PROF_…``, ``OPPROF_…``) or any other directory, in which one with a realistic
name is created; the writer returns the producer directory (or the DB file).

Every writer expands the specs with ``expand_launches`` from one seed, so the same workload written
in two formats has identical per-launch durations (rounded to whole nanoseconds, so the µs text
and the ns databases agree exactly), and ``spec_totals`` gives the expected per-op-type totals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from opprof_advisor.testing.database import DB_SCHEMAS, write_msprof_db, write_torch_npu_db
from opprof_advisor.testing.headers import KERNEL_DETAILS_HEADER, KERNEL_DETAILS_TO_OP_SUMMARY, OP_SUMMARY_HEADER
from opprof_advisor.testing.msopprof import MSOPPROF_GENERATIONS, write_msopprof_device, write_msopprof_simulator
from opprof_advisor.testing.msprof import API_STATISTIC_HEADER, write_device_info, write_op_summary
from opprof_advisor.testing.spec import (
    CHIP_CORES, COMMUNICATION_TYPES, KernelSpec, Launch, as_specs, expand_launches, spec_totals, unit_sides,
)
from opprof_advisor.testing.torch_npu import TORCH_NPU_VARIANTS, write_torch_npu_job, write_torch_npu_text

__all__ = [
    "API_STATISTIC_HEADER", "CHIP_CORES", "COMMUNICATION_TYPES", "DB_SCHEMAS", "KERNEL_DETAILS_HEADER",
    "KERNEL_DETAILS_TO_OP_SUMMARY", "KernelSpec", "Launch", "MSOPPROF_GENERATIONS", "OP_SUMMARY_HEADER",
    "TORCH_NPU_VARIANTS", "as_specs", "expand_launches", "spec_totals", "unit_sides", "write_all_formats",
    "write_device_info", "write_msopprof_device", "write_msopprof_simulator", "write_msprof_db", "write_op_summary",
    "write_torch_npu_db", "write_torch_npu_job", "write_torch_npu_text",
]


def write_all_formats(out: Path | str, kernels: Iterable[KernelSpec | Mapping[str, Any]], *, seed: int = 0,
                      chip: str = "Ascend910B1", level: str = "Level2") -> dict[str, Path]:
    """Write one workload as torch_npu text, torch_npu DB, system msprof text and msprof DB.

    Returns ``{"torch-npu-text": dir, "torch-npu-db": dir, "msprof-text": PROF dir,
    "msprof-db": db file}`` under ``out/<format>/``; all four carry the same launches.
    """
    out = Path(out)
    specs = as_specs(kernels)
    return {
        "torch-npu-text": write_torch_npu_text(out / "torch-npu-text", specs, level=level, seed=seed),
        "torch-npu-db": write_torch_npu_db(out / "torch-npu-db", specs, level=level, chip=chip, seed=seed).parents[1],
        "msprof-text": write_op_summary(out / "msprof-text", specs, chip=chip, seed=seed),
        "msprof-db": write_msprof_db(out / "msprof-db", specs, chip=chip, seed=seed),
    }
