"""The YOLOv8-like example of data/examples and its variant with NMS on the AI Core, for loop tests.

BEFORE is the committed example (read in place); AFTER is the same workload written by
opprof_advisor.synthetic with the NMS kernel replaced, as a user would profile it after applying
the NMS recipe. Expected times come from the kernel specs, not from the code under test.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "data" / "examples" / "yolov8_torch_npu"

#: NMS time after the fix: torch_npu's batched NMS on the AI Vector cores (made-up, plausible).
NMS_AFTER_US = 160.0


@lru_cache(maxsize=1)
def _make_examples():
    spec = importlib.util.spec_from_file_location("make_examples", ROOT / "data" / "make_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def yolo_specs() -> list:
    """The kernel specs of the YOLOv8-like example (NMS on the AI CPU)."""
    return _make_examples().yolov8_inference()


def nms_on_ai_core(specs: list) -> list:
    """The same specs with NonMaxSuppressionV3 on the AI CPU replaced by a batched NMS kernel."""
    return [
        replace(s, name="BatchMultiClassNMS", op_type="BatchMultiClassNMS", task_type="AI_VECTOR_CORE",
                duration_us=NMS_AFTER_US, block_dim=40)
        if s.op_type == "NonMaxSuppressionV3" else s
        for s in specs
    ]


def total_us(specs: list, op_type: str | None = None) -> float:
    """Summed kernel time of the specs (of one op type)."""
    return sum(s.duration_us * s.count for s in specs if op_type is None or s.op_type == op_type)


def nms_before_us() -> float:
    return total_us(yolo_specs(), "NonMaxSuppressionV3")


def write_pair(tmp_path: Path) -> tuple[Path, Path]:
    """(the committed example, the NMS-on-AI-Core variant written under tmp_path)."""
    from opprof_advisor import synthetic

    seed = _make_examples().SEED
    after = synthetic.write_torch_npu_text(tmp_path / "after", nms_on_ai_core(yolo_specs()), level="Level1",
                                           variant="2025-11", seed=seed + 1)
    return EXAMPLE, after
