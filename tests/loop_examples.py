"""The YOLOv8-like example of data/examples and its variant with NMS on the AI Core, for loop tests.

BEFORE is data/examples/yolov8_torch_npu, AFTER data/examples/yolov8_torch_npu_nms_on_npu (both
committed and read in place): the same workload and seed with the NMS kernel replaced, as a user
would profile it after applying the NMS recipe. The replacement (``nms_on_ai_core``,
``NMS_AFTER_US``) is defined once, in data/make_examples.py. Expected times come from the kernel
specs, not from the code under test.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "data" / "examples" / "yolov8_torch_npu"
EXAMPLE_AFTER = ROOT / "data" / "examples" / "yolov8_torch_npu_nms_on_npu"


def _load_make_examples():
    spec = importlib.util.spec_from_file_location("make_examples", ROOT / "data" / "make_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_MAKE_EXAMPLES = _load_make_examples()
NMS_AFTER_US = _MAKE_EXAMPLES.NMS_AFTER_US
nms_on_ai_core = _MAKE_EXAMPLES.nms_on_ai_core


def yolo_specs() -> list:
    """The kernel specs of the YOLOv8-like example (NMS on the AI CPU)."""
    return _MAKE_EXAMPLES.yolov8_inference()


def total_us(specs: list, op_type: str | None = None) -> float:
    """Summed kernel time of the specs (of one op type)."""
    return sum(s.duration_us * s.count for s in specs if op_type is None or s.op_type == op_type)


def nms_before_us() -> float:
    return total_us(yolo_specs(), "NonMaxSuppressionV3")


def write_pair(tmp_path: Path) -> tuple[Path, Path]:
    """(BEFORE, AFTER): the two committed examples, read in place (``tmp_path`` is not written)."""
    return EXAMPLE, EXAMPLE_AFTER
