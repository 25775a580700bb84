"""On every labelled real profile: no share above 100 %, every share's words name its base, no first step cut.

A share is a fraction of something (device time, the step, the memory peak); a value above 1, a detail that
says "of compute time" beside a share of device time, or a first step ending in "…" is a wrong label a reader
acts on. Checked on the `suggest` JSON document of each real profile in ../shared/real-profiles that
data/real_bench/labels.yaml lists (the refused ones aside).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from opprof_advisor.cli.app import app

LABELS = yaml.safe_load((Path(__file__).resolve().parent.parent / "data/real_bench/labels.yaml").read_text())
PATHS = [p["path"] for p in LABELS["profiles"] if not p.get("error")]
PERCENT = re.compile(r"(\d+(?:\.\d+)?) ?% of (the step|device time|compute time|the memory peak)")
BASES = {"the step": "step", "device time": "device time", "the memory peak": "memory peak"}
EXAMPLES = Path(__file__).resolve().parent.parent / "data/examples"


def shares(node, where=""):
    """(path, value) of every number under a key that holds a share (0..1)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and (
                    key == "share" or key.endswith("_share")):
                yield f"{where}.{key}", value
            else:
                yield from shares(value, f"{where}.{key}")
    elif isinstance(node, list):
        for number, value in enumerate(node):
            yield from shares(value, f"{where}[{number}]")


def first_steps(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "first_step" and isinstance(value, str):
                yield value
            else:
                yield from first_steps(value)
    elif isinstance(node, list):
        for value in node:
            yield from first_steps(value)


@pytest.mark.parametrize("path", PATHS + [f"examples:{p.name}" for p in sorted(EXAMPLES.iterdir()) if p.is_dir()])
def test_shares_are_fractions_with_their_base_and_first_steps_are_whole(path, real_profiles, runner):
    folder = EXAMPLES / path.split(":", 1)[1] if path.startswith("examples:") else real_profiles / path
    result = runner.invoke(app, ["suggest", str(folder), "--top", "10", "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    found = list(shares(document))
    assert found, "no share in the document"
    above = [(where, value) for where, value in found if not 0 <= value <= 1 + 1e-9]
    assert not above, above[:5]
    steps = list(first_steps(document))
    assert not [step for step in steps if step.rstrip().endswith(("…", "..."))]
    checked = 0
    for symptom in (document.get("profile_document") or {}).get("symptoms") or []:
        # the percentages a symptom's words give of its base are its own share, said once in one base
        assert "of compute time" not in symptom["detail"], symptom
        said = [(float(value), BASES[base]) for value, base in PERCENT.findall(symptom["detail"])]
        # a share said in the symptom's own base is its share (to the rounding of the words)
        assert all(value == pytest.approx(100 * symptom["share"], abs=0.06) for value, base in said
                   if base == symptom["base"]), (symptom["id"], symptom["detail"], symptom["share"])
        checked += sum(1 for _value, base in said if base == symptom["base"])
    if path == "examples:yolov8_torch_npu":  # the regex finds what it is meant to: aicpu, nms and small kernels
        assert checked >= 3
