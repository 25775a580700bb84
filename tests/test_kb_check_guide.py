"""`kb check` holds users' entries to the KB guide (kb/README.md): one warning per missing field with what to write,
and a line for a case that similar-case matching can never (or only rarely) show. Warnings: the check still passes."""

from __future__ import annotations

import json
from pathlib import Path

from kb_helpers import GUIDE_FIELDS, body_for, write_entry, write_text

from opprof_advisor.cli.app import app
from opprof_advisor.core.paths import builtin_kb_dir
from opprof_advisor.kb import checks as kb_checks
from opprof_advisor.kb import find_kb_files, parse_file

REQUIRES = ("warning: no `requires:` — write the conditions without which the advice is wrong or useless, e.g. "
            "`requires: [{symptom: nms_cpu}]` (keys: symptom, operator, unit, dtype, producer, workload, min_share), "
            "or `requires: []` when nothing must hold")
ZH = ("warning: no `zh:` — write the title, summary and first step in Chinese, shown with --lang zh: "
      "`zh: {title: …, summary: …, first_step: …}`")
NEVER_SIMILAR = ("warning: no `op_mix:` — this case can never show as similar to a profile: list the model's "
                 "operator families in descending order of device time, e.g. `op_mix: [Conv2D, NMS, Activation]` "
                 "(the family column of `advisor profile` on the case's profile, top down)")
NO_SYMPTOMS = ("warning: no `symptoms:` — this case shows as similar only to a profile with nearly the same op mix, "
               "unless it shares a problem symptom with it: list the symptoms the case shows, e.g. "
               "`symptoms: [nms_cpu, aicpu_fallback]` (the ids under `symptoms` in `advisor profile`; every id in "
               "`advisor kb stats`)")
NO_FIRST_STEP = ("warning: `## Fix` gives no first step — open it with a numbered or bulleted item: one concrete "
                 "action in one or two sentences (a setting, a code change, or the profiler command that confirms the "
                 "diagnosis); `advisor suggest` shows it as the entry's first step")

#: A user case with only the keys the guide's table marks required, and an empty `## Fix`.
BARE_CASE = """---
kind: case
title: My YOLOX port stalls in NMS
summary: NMS ran on the AI CPU; batched NMS on the NPU fixed it.
evidence: C
sources: [https://example.org/guide]
applies_to: {producer: [run]}
---

## Symptoms

Post-processing is slow.

## Diagnosis

NMS runs on the AI CPU.

## Fix

## Result

Post-processing no longer dominates.

## Sources

- https://example.org/guide: the guide
"""


def check(runner, *args):
    return runner.invoke(app, ["kb", "check", *map(str, args)])


def complete_case(folder: Path, name: str = "my-yolox-port", **fields) -> Path:
    """A user case with every field the guide asks for; ``fields`` override (None removes a key)."""
    values = {"kind": "case", "title": "My YOLOX port stalls in NMS", "symptoms": ["nms_cpu", "aicpu_fallback"],
              "op_mix": ["Conv2D", "NMS", "Activation"], **GUIDE_FIELDS, "requires": [{"symptom": "nms_cpu"}],
              **fields}
    return write_entry(folder, name, body=body_for("case"), **values)


def test_a_user_case_without_the_guide_s_fields_gets_one_line_each_with_what_to_write(runner, tmp_path):
    path = write_text(tmp_path, "cases/my-yolox-port.md", BARE_CASE)
    result = check(runner, path)
    assert result.exit_code == 0  # warnings: the entry works, with less use
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"{path}:1: {REQUIRES}",
        f"{path}:1: {ZH}",
        f"{path}:1: {NEVER_SIMILAR}",
        f"{path}:1: {NO_SYMPTOMS}",
        f"{path}:18: {NO_FIRST_STEP}",
        "1 file(s) checked: no problems, 5 warning(s)",
    ]


def test_a_case_without_an_op_mix_is_said_never_to_show_as_similar(runner, tmp_path):
    path = complete_case(tmp_path, op_mix=None)
    result = check(runner, path)
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [f"{path}:1: {NEVER_SIMILAR}", "1 file(s) checked: no problems, 1 warning(s)"]
    document = json.loads(check(runner, path, "--format", "json").stdout)
    assert document["problems"] == []
    assert document["warnings"] == [{"path": str(path), "line": 1, "message": NEVER_SIMILAR}]


def test_a_complete_case_passes_clean(runner, tmp_path):
    path = complete_case(tmp_path)
    result = check(runner, path)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr.strip() == "1 file(s) checked: no problems"
    document = json.loads(check(runner, path, "--format", "json").stdout)
    assert document["problems"] == document["warnings"] == []


def test_a_case_with_only_descriptive_symptoms_is_told_to_add_a_problem_symptom(runner, tmp_path):
    path = complete_case(tmp_path, symptoms=["cube_bound", "mte2_bound"])
    result = check(runner, path)
    assert result.stderr.splitlines() == [
        f"{path}:7: warning: `symptoms:` lists only cube_bound, mte2_bound, which similar-case matching leaves out "
        "(they say how kernels run, not what went wrong) — this case shows as similar only to a profile with nearly "
        "the same op mix: add the problem symptoms the case shows (the ids under `symptoms` in `advisor profile`; "
        "every id in `advisor kb stats`)",
        "1 file(s) checked: no problems, 1 warning(s)",
    ]


def test_a_zh_without_all_its_texts_names_each_missing_one(runner, tmp_path):
    path = write_entry(tmp_path, "half-chinese", requires=[], zh={"title": "测试条目"})
    result = check(runner, path)
    assert result.stderr.splitlines() == [
        f"{path}:8: warning: no `zh.summary:` — write the summary in Chinese, shown with --lang zh",
        f"{path}:8: warning: no `zh.first_step:` — write the first step in Chinese, shown with --lang zh",
        "1 file(s) checked: no problems, 2 warning(s)",
    ]


def test_recipes_patterns_and_tips_are_not_asked_for_an_op_mix(runner, tmp_path):
    paths = [write_entry(tmp_path, f"my-{kind}", kind=kind, **GUIDE_FIELDS) for kind in ("recipe", "pattern", "tip")]
    result = check(runner, *paths)
    assert result.exit_code == 0
    assert result.stderr.strip() == "3 file(s) checked: no problems"


def test_the_shipped_kb_has_every_field_the_guide_asks_for():
    files = find_kb_files([builtin_kb_dir()])
    assert [str(w) for path in files for w in kb_checks.guide_warnings(parse_file(path), shipped=True)] == []


def test_shipped_cases_without_an_op_mix_are_not_listed_each_check(runner):
    shipped = [path for path in find_kb_files([builtin_kb_dir()])
               if parse_file(path).data.get("kind") == "case" and not parse_file(path).data.get("op_mix")]
    assert shipped  # host-side and single-kernel cases, on purpose
    result = check(runner, builtin_kb_dir())
    assert result.exit_code == 0
    assert "op_mix" not in result.stderr


def test_a_first_step_too_long_to_show_whole_is_a_warning_with_what_is_shown(runner, tmp_path):
    step = "Set the environment variable, e.g. " + "HCCL_BUFFSIZE " * 30 + "to twice the default. " + \
           "Then profile again and compare the exposed communication " * 4 + "."
    path = write_entry(tmp_path, "long-step", body=body_for("recipe", "1. " + step), **GUIDE_FIELDS)
    result = runner.invoke(app, ["kb", "check", str(path)])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if "first step" in line]
    shown = "Set the environment variable, e.g. " + "HCCL_BUFFSIZE " * 30 + "to twice the default."
    assert line.endswith(f": warning: the first step of `## Steps` has {len(' '.join(step.split()))} characters: "
                         f"`advisor suggest` shows only its first sentences up to 400 (\"{shown}\"); keep it to one "
                         "or two sentences")  # "e.g." does not end the sentence


def test_tags_naming_a_training_stack_ask_for_it_in_applies_to(runner, tmp_path):
    # advice written with MindSpeed's options ranks under the general remedies until --stack names MindSpeed:
    # an entry that only tags it would rank as if any run could use it
    path = write_entry(tmp_path, "my-tip", kind="tip", tags=["pipeline", "mindspeed", "torchtitan"], **GUIDE_FIELDS)
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, start=1) if text.startswith("applies_to:"))
    result = check(runner, path)
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        f"{path}:{line}: warning: the tags name mindspeed, torchtitan but `applies_to` has no `stack:` — add "
        "`stack: [mindspeed, torchtitan]` when the advice uses that stack's options, or drop the tag",
        "1 file(s) checked: no problems, 1 warning(s)",
    ]
    stated = write_entry(tmp_path / "ok", "my-tip", kind="tip", tags=["pipeline", "mindspeed"], **{
        **GUIDE_FIELDS, "applies_to": {"producer": ["run"], "stack": ["mindspeed"]}})
    assert check(runner, stated).stderr.strip() == "1 file(s) checked: no problems"
