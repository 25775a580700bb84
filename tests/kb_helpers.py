"""Writers of small KB markdown files for the knowledge-base tests (loader, store, search, CLI)."""

from __future__ import annotations

from pathlib import Path

import yaml

SECTIONS = {
    "case": ("Symptoms", "Diagnosis", "Fix", "Result"),
    "recipe": ("When to use", "Steps", "Pitfalls"),
    "pattern": ("Signature", "Why it happens", "What to do"),
    "tip": ("When", "How", "Caveats"),
}


#: The fields the KB guide asks of every entry beyond the required keys (kb/README.md: `requires:`, `zh:`), for a
#: test entry that `kb check` passes without a warning: ``write_entry(folder, name, **GUIDE_FIELDS)``.
GUIDE_FIELDS = {"requires": [], "zh": {"title": "测试条目", "summary": "简要做法。", "first_step": "照做。"}}


def front_matter(**fields) -> dict:
    """A valid front matter for a recipe, with ``fields`` overriding or (value None) removing keys."""
    data = {
        "kind": "recipe",
        "title": "A test entry",
        "summary": "What to do, in short.",
        "evidence": "C",
        "sources": ["https://example.org/guide"],
    }
    for key, value in fields.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    if "applies_to" not in fields:  # last, so the lines of the other keys stay where the tests name them
        data["applies_to"] = {"producer": ["kernel", "run"]}
    return data


def body_for(kind: str, text: str = "Plain advice without figures.") -> str:
    """A body with the sections ``kind`` needs, then ``## Sources``."""
    parts = [f"## {name}\n\n{text}\n" for name in SECTIONS[kind]]
    parts.append("## Sources\n\n- https://example.org/guide: the guide\n")
    return "\n".join(parts)


def write_entry(folder: Path, name: str, body: str | None = None, **fields) -> Path:
    """Write ``folder/<kind>s/<name>.md`` with a valid front matter changed by ``fields``."""
    data = front_matter(**fields)
    kind = data.get("kind", "recipe")
    path = folder / f"{kind}s" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Flow style keeps each key on one line, so tests can name the line of a key.
    applies = data.pop("applies_to", None)
    dumped = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=None, width=1000)
    if applies is not None:  # one line, last
        dumped += "applies_to: " + yaml.safe_dump(applies, default_flow_style=True, width=1000).strip() + "\n"
    text = "---\n" + dumped + "---\n\n"
    text += body if body is not None else body_for(kind if kind in SECTIONS else "recipe")
    path.write_text(text, encoding="utf-8")
    return path


def write_text(folder: Path, relative: str, text: str) -> Path:
    """Write raw text to ``folder/relative`` (for files that must be broken in a precise way)."""
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_search_kb(folder: Path) -> Path:
    """A small KB where several entries mention NMS and attention, for ranking tests."""
    write_entry(folder, "nms-on-npu", title="Run NMS on the NPU instead of the AI CPU",
                summary="Replace AI CPU non-maximum suppression with batched NMS kernels.",
                operators=["NMS"], symptoms=["nms_cpu", "aicpu_fallback"], tags=["detection", "postprocess"])
    write_entry(folder, "yolov8s-migration", kind="case", title="YOLOv8s migration to Ascend",
                summary="A detection model whose NMS ran on the AI CPU; NMS NMS NMS everywhere.",
                operators=["Conv2D", "NMS", "Activation"], symptoms=["nms_cpu"], tags=["detection", "yolo"],
                models=["yolov8"], op_mix=["Conv2D", "Activation", "NMS"],
                body=body_for("case", "NMS on the AI CPU dominated; NMS kernels, NMS again, batched NMS."))
    write_entry(folder, "flash-attention", title="Use the fused FlashAttention kernel",
                summary="Replace BatchMatMul + Softmax attention by npu_fusion_attention.",
                operators=["FlashAttention"], symptoms=["unfused_attention"], tags=["llm", "attention"])
    write_entry(folder, "llama2-7b-fused-ops", kind="case", title="LLaMA-2 7B training with fused operators",
                summary="Fused attention, RMSNorm and SwiGLU kernels on a LLaMA-class model.",
                operators=["MatMul", "FlashAttention", "RMSNorm"], symptoms=["unfused_attention", "unfused_norm"],
                tags=["llm"], models=["llama2-7b"],
                body=body_for("case", "Attention was unfused: flash attention fixed it. Attention attention."))
    write_entry(folder, "matmul-tiling", title="Tune MatMul tiling and shapes",
                summary="Pad shapes to multiples of 16 so the cube unit is fully used.",
                operators=["MatMul"], symptoms=["cube_bound"], tags=["gemm"])
    write_entry(folder, "task-queue", kind="tip", title="Enable TASK_QUEUE_ENABLE",
                summary="Overlap operator dispatch with execution.", symptoms=["launch_bound"], tags=["dispatch"])
    return folder


def without_near_duplicate_warnings(stderr: str) -> str:
    """``stderr`` of `advisor add` without its near-duplicate warnings (test entries that differ by a number)."""
    return "".join(line for line in stderr.splitlines(keepends=True) if " nearly duplicates " not in line)
