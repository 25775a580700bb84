"""The KB loader: a valid file becomes an Entry; every kind of broken file is one exact problem."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from kb_helpers import body_for, write_entry, write_text

from opprof_advisor import kb
from opprof_advisor.kb import entry as kb_entry
from opprof_advisor.kb import manifest, rows

from opprof_advisor.kb import stats as kb_stats
from opprof_advisor.core.errors import EntryValidationError, Problem
from opprof_advisor.core.models import Gain

ROOT = Path(__file__).resolve().parent.parent


def problems_of(path: Path) -> list[str]:
    _, problems = kb.validate_file(path)
    return [str(problem) for problem in problems]


def test_valid_file_becomes_entry_with_canonical_operators(tmp_path):
    path = write_entry(
        tmp_path, "nms-on-npu", kind="case", operators=["NonMaxSuppressionV3", "NMS", "BatchMatMulV2"],
        symptoms=["nms_cpu"], tags=["detection"], op_mix=["Conv2D", "NMS"], cann=">=8.0",
        gain={"low_pct": 25, "high_pct": 35, "metric": "op_time", "scope": "operators",
              "source": "https://example.org/guide"},
    )
    entry = kb.load_entry(path)
    assert entry.id == "nms-on-npu"
    assert entry.kind == "case"
    assert entry.operators == ["NMS", "MatMul"]  # aliases stored as families, duplicates dropped
    assert entry.gain == Gain(25.0, 35.0, "op_time", "operators", "https://example.org/guide")
    assert list(entry.op_mix) == ["Conv2D", "NMS"]
    assert entry.op_mix["Conv2D"] == pytest.approx(2 / 3, abs=1e-3)  # 1/rank weights: 1 and 1/2
    assert entry.body.startswith("## Symptoms")
    assert entry.cann == ">=8.0"


def test_unclosed_front_matter_is_reported_on_line_1(tmp_path):
    path = write_text(tmp_path, "recipes/open.md", "---\nkind: recipe\ntitle: x\n\n## When to use\n")
    assert problems_of(path) == [f"{path}:1: front matter is not closed: add a `---` line after the YAML block"]


def test_file_without_front_matter(tmp_path):
    path = write_text(tmp_path, "recipes/plain.md", "# Just markdown\n")
    assert problems_of(path)[0].startswith(f"{path}:1: no front matter")


def test_bad_yaml_reports_the_line_in_the_file(tmp_path):
    path = write_text(tmp_path, "recipes/bad-yaml.md",
                      "---\nkind: recipe\ntitle: ok\nsummary: [unclosed\nevidence: C\n---\n\nbody\n")
    problems = problems_of(path)
    assert len(problems) == 1
    assert problems[0].startswith(f"{path}:5: bad YAML in front matter")


def test_colon_in_unquoted_title_is_a_yaml_error_on_its_line(tmp_path):
    path = write_text(tmp_path, "recipes/colon.md", "---\nkind: recipe\ntitle: Conv2D: tuning\n---\n")
    assert problems_of(path)[0].startswith(f"{path}:3: bad YAML in front matter: mapping values are not allowed")


def test_front_matter_that_is_not_a_mapping(tmp_path):
    path = write_text(tmp_path, "recipes/list.md", "---\n- a\n- b\n---\n")
    assert problems_of(path) == [f"{path}:2: front matter is a list, not a mapping of keys"]


def test_unknown_key_names_its_line_and_the_close_key(tmp_path):
    path = write_entry(tmp_path, "x", tagz=["a"])
    assert problems_of(path) == [f"{path}:7: unknown key 'tagz'; did you mean 'tags'?"]


def test_missing_required_key(tmp_path):
    path = write_entry(tmp_path, "x", summary=None)
    assert problems_of(path) == [f"{path}:1: missing required key 'summary'"]


def test_unknown_symptom_points_at_the_list_item(tmp_path):
    path = write_text(tmp_path, "recipes/x.md", "---\nkind: recipe\ntitle: t\nsummary: s\nevidence: C\n"
                      "sources: [https://example.org/guide]\nsymptoms:\n  - nms_cpu\n  - aicpu_fallbak\napplies_to: {producer: [run]}\n---\n\n"
                      + body_for("recipe"))
    assert problems_of(path) == [f"{path}:9: unknown symptom 'aicpu_fallbak'; did you mean 'aicpu_fallback'?"]


def test_unknown_operator(tmp_path):
    path = write_entry(tmp_path, "x", operators=["MatMul", "Frobnicate"])
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:7: unknown operator 'Frobnicate'")


def test_bad_kind(tmp_path):
    path = write_text(tmp_path, "x.md", "---\nkind: howto\ntitle: t\nsummary: s\nevidence: C\nsources: [https://example.org/a]\n"
                      "applies_to: {producer: [run]}\n---\nb\n")
    assert problems_of(path) == [f"{path}:2: kind 'howto' is not one of case, recipe, pattern, tip"]


def test_kind_must_match_its_folder(tmp_path):
    path = write_text(tmp_path, "cases/x.md", "---\nkind: tip\ntitle: t\nsummary: s\nevidence: C\nsources: [https://example.org/a]\n"
                      "applies_to: {producer: [run]}\n---\n\n"
                      + body_for("tip"))
    assert problems_of(path) == [f"{path}:2: kind 'tip' but the file is in cases/: move it to tips/ or fix the kind"]


def test_id_must_equal_the_file_name(tmp_path):
    path = write_entry(tmp_path, "nms-on-npu", id="nms")
    assert problems_of(path) == [f"{path}:7: id 'nms' differs from the file name 'nms-on-npu'.md: rename one of them"]


@pytest.mark.parametrize("bad_id", ["../evil", "a/b", "Upper", "-lead", "x" * 81, "x\n"])
def test_id_must_be_a_slug(tmp_path, bad_id):
    path = write_entry(tmp_path, "x", id=bad_id)
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:7: id {bad_id!r} is not a slug")


def test_file_name_that_is_not_a_slug(tmp_path):
    path = write_entry(tmp_path, "My Case")
    assert problems_of(path)[0].startswith(f"{path}:1: file name 'My Case' is not a valid id")


def test_gain_range_and_source_are_checked(tmp_path):
    path = write_entry(tmp_path, "x", gain={"low_pct": 40, "high_pct": 35, "metric": "speed", "scope": "operators",
                                            "source": "https://elsewhere.org"})
    assert problems_of(path) == [
        f"{path}:7: gain low_pct 40 is above high_pct 35",
        f"{path}:7: gain metric 'speed' is not one of latency, throughput, step_time, op_time, kernel_time, memory",
        f"{path}:7: gain source 'https://elsewhere.org' is not among `sources`",
    ]


def test_gain_with_missing_and_unknown_keys(tmp_path):
    path = write_entry(tmp_path, "x", gain={"low": 1, "high_pct": 2, "metric": "latency", "scope": "operators",
                                            "source": "https://example.org/guide"})
    assert problems_of(path) == [f"{path}:7: unknown gain key 'low'; did you mean 'low_pct'?",
                                 f"{path}:7: gain is missing 'low_pct'"]


def test_gain_measured_on_must_be_the_entrys_own_operators_and_estimate_a_flag(tmp_path):
    path = write_entry(tmp_path, "x", operators=["MatMul", "Add"],
                       gain={"low_pct": 13, "high_pct": 57, "metric": "kernel_time", "scope": "operators",
                             "source": "https://example.org/guide", "measured_on": ["MatMul", "Conv2D"],
                             "estimate": "yes"})
    lines = path.read_text().splitlines()
    measured, estimate = (next(n for n, line in enumerate(lines, 1) if key in line) for key in ("measured_on", "estimate"))
    assert problems_of(path) == [f"{path}:{measured}: gain measured_on Conv2D is not among the entry's `operators`",
                                 f"{path}:{estimate}: gain estimate must be true or false"]
    good = write_entry(tmp_path, "y", operators=["MatMul", "Add"],
                       gain={"low_pct": 13, "high_pct": 57, "metric": "kernel_time", "scope": "operators",
                             "source": "https://example.org/guide", "measured_on": ["MatMul"]})
    assert problems_of(good) == []


def test_gain_hardware_is_a_list_of_chips_and_loads(tmp_path):
    gain = {"low_pct": 13, "high_pct": 57, "metric": "kernel_time", "scope": "operators",
            "source": "https://example.org/guide"}
    path = write_entry(tmp_path, "x", operators=["MatMul"], gain={**gain, "hardware": "Atlas A2"})
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "hardware" in text)
    assert problems_of(path) == [f"{path}:{line}: gain hardware must be a list of chips (`Atlas A2`, `Ascend950` …)"]
    good = write_entry(tmp_path, "y", operators=["MatMul"], gain={**gain, "hardware": ["Atlas A2", "Ascend950"]})
    assert problems_of(good) == []
    assert kb.load_entry(good).gain.hardware == ["Atlas A2", "Ascend950"]


def test_bad_evidence_grade(tmp_path):
    path = write_entry(tmp_path, "x", evidence="E")
    assert problems_of(path) == [f"{path}:5: evidence 'E' is not one of A, B, C, D"]


def test_unquoted_cann_version_is_refused(tmp_path):
    path = write_entry(tmp_path, "x", cann=8.0)
    assert problems_of(path)[0].startswith(f"{path}:7: cann 8.0 is not a version specifier")


def test_op_mix_is_for_cases_only(tmp_path):
    path = write_entry(tmp_path, "x", op_mix=["MatMul"])
    assert problems_of(path) == [f"{path}:7: op_mix is for cases only"]


def test_tags_must_be_lower_case(tmp_path):
    path = write_entry(tmp_path, "x", tags=["llm", "HCCL"])
    assert problems_of(path) == [f"{path}:7: tags are lower case: write 'hccl'"]


@pytest.mark.parametrize(("field", "items", "message"), [
    ("tags", ["llm", 7], "tags item 7 must be non-empty text"),
    ("models", ["  "], "models item '  ' must be non-empty text"),
    ("hardware", ["a2", ""], "hardware item '' must be non-empty text"),
    ("models", ["llama", "Ωmega"], "models are lower case: write 'ωmega'"),
    ("tags", [["nested"]], "tags item ['nested'] must be non-empty text"),
])
def test_every_list_item_is_checked(tmp_path, field, items, message):
    # The checks pass the usual all-text list in one go; an odd item anywhere in it must still be named.
    path = write_entry(tmp_path, "x", **{field: items})
    assert [problem.split(": ", 1)[1] for problem in problems_of(path)] == [message]


def test_duplicate_yaml_key(tmp_path):
    path = write_text(tmp_path, "recipes/x.md", "---\nkind: recipe\ntitle: a\ntitle: b\nsummary: s\nevidence: C\n"
                      "sources: [https://example.org/a]\n---\n\n" + body_for("recipe"))
    assert problems_of(path) == [f"{path}:4: key 'title' appears twice"]


def test_not_utf8(tmp_path):
    path = tmp_path / "recipes" / "x.md"
    path.parent.mkdir()
    path.write_bytes(b"---\nkind: recipe\ntitle: caf\xe9\n---\n")
    assert problems_of(path)[0].startswith(f"{path}:1: not UTF-8 text")


def test_missing_section_for_the_kind(tmp_path):
    body = "## When to use\n\nx\n\n## Pitfalls\n\ny\n\n## Sources\n\n- z\n"
    path = write_entry(tmp_path, "x", body=body)
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:9: a recipe needs a `## Steps` section")


def test_sections_out_of_order(tmp_path):
    body = "## Steps\n\nx\n\n## When to use\n\ny\n\n## Pitfalls\n\nz\n\n## Sources\n\n- s\n"
    path = write_entry(tmp_path, "x", body=body)
    assert problems_of(path) == [f"{path}:10: section `## Steps` is out of order: expected "
                                 "When to use, Steps, Pitfalls, Sources"]


def test_sources_section_must_come_last(tmp_path):
    body = body_for("recipe") + "\n## Notes\n\nmore\n"
    path = write_entry(tmp_path, "x", body=body)
    assert problems_of(path) == [f"{path}:26: the `## Sources` section must come last"]


def test_figures_without_sources_are_flagged_outside_code(tmp_path):
    body = body_for("recipe").replace(
        "## Steps\n\nPlain advice without figures.",
        "## Steps\n\nIt got 30% faster, 2.5x overall.\n\n```\nexport X=40%\n```\n\n"
        "`8 ms` in code, then 12 ms and 900 tokens/s.",
    )
    path = write_entry(tmp_path, "x", sources=[], body=body)
    assert problems_of(path) == [
        f"{path}:6: sources is empty: list at least one link or path",
        f"{path}:15: figure '30%' without a source: list the source that states it in `sources`",
        f"{path}:15: figure '2.5x' without a source: list the source that states it in `sources`",
        f"{path}:21: figure '12 ms' without a source: list the source that states it in `sources`",
        f"{path}:21: figure '900 tokens/s' without a source: list the source that states it in `sources`",
    ]


def test_figures_with_sources_are_fine(tmp_path):
    path = write_entry(tmp_path, "x", body=body_for("recipe", "It got 30% faster (see the guide)."))
    assert problems_of(path) == []


def test_duplicate_ids_across_folders(tmp_path):
    write_entry(tmp_path / "a", "same")
    second = write_entry(tmp_path / "b", "same")
    problems = kb.check_paths([tmp_path / "a", tmp_path / "b"])
    assert [str(p) for p in problems] == [
        f"{second}:1: duplicate id 'same' (also {tmp_path / 'a' / 'recipes' / 'same.md'})"]


def test_dangling_related_id_and_known_ids(tmp_path):
    path = write_entry(tmp_path, "x", related=["y", "elsewhere"])
    write_entry(tmp_path, "y")
    problems = kb.check_paths([tmp_path])
    assert [str(p) for p in problems] == [f"{path}:7: related id 'elsewhere' names no entry"]
    assert kb.check_paths([tmp_path], known_ids={"elsewhere"}) == []


def test_dangling_ids_each_get_their_file_line_and_hint(tmp_path):
    path = write_entry(tmp_path, "x", related=["nms-on-cpu", "y", "zzzz"])
    other = write_entry(tmp_path, "y", related=["nms-on-cpu"])
    write_entry(tmp_path, "nms-on-npu")
    problems = kb.check_paths([tmp_path])
    assert [str(p) for p in problems] == [
        f"{path}:7: related id 'nms-on-cpu' names no entry; did you mean 'nms-on-npu'?",
        f"{path}:7: related id 'zzzz' names no entry",
        f"{other}:7: related id 'nms-on-cpu' names no entry; did you mean 'nms-on-npu'?"]


def test_close_suggestion_over_many_ids_is_difflibs():
    # Above _PREFILTER_CHOICES ids rapidfuzz drops those that cannot reach difflib's cutoff; the pick must not change.
    import difflib
    import random

    rng = random.Random(18)
    parts = ["nms", "matmul", "softmax", "cast", "topk", "bf16", "tiling", "cube", "vector", "bank", "host", "aicpu"]
    ids = [f"{rng.choice(['case', 'tip', 'recipe'])}-{'-'.join(rng.sample(parts, 3))}-{number}"
           for number in range(3 * kb_entry._PREFILTER_CHOICES)]
    words = [rng.choice(ids)[:-1] + "x" for _ in range(60)] + ["-".join(rng.sample(parts, 2)) for _ in range(60)]
    words += ["unrelated", "q", rng.choice(ids) * 9]  # no match; too short to match; long enough for autojunk
    hints = []
    for word in words:
        close = difflib.get_close_matches(word, ids, n=1, cutoff=0.6)
        expected = f"; did you mean {close[0]!r}?" if close else ""
        assert kb.suggest_close(word, ids) == expected, word
        hints.append(expected)
    assert sum(1 for hint in hints if hint) > 60 and "" in hints  # both outcomes were exercised


def test_readme_and_hidden_folders_are_not_entries(tmp_path):
    write_text(tmp_path, "README.md", "# not an entry\n")
    write_text(tmp_path, ".drafts/recipes/x.md", "not an entry either\n")
    entry = write_entry(tmp_path, "real")
    assert kb.find_kb_files([tmp_path]) == [entry]


def test_load_entries_raises_with_every_problem(tmp_path):
    write_entry(tmp_path, "good")
    bad = write_entry(tmp_path, "bad", evidence="Z", kind="tip")
    with pytest.raises(EntryValidationError) as caught:
        kb.load_entries([tmp_path])
    assert caught.value.problems == [Problem(bad, 5, "evidence 'Z' is not one of A, B, C, D")]


def test_summarize_entries_counts_only_advice_whose_requirements_can_hold(tmp_path):
    write_entry(tmp_path, "a", symptoms=["nms_cpu"])
    write_entry(tmp_path, "b", symptoms=["nms_cpu", "dynamic_shape"], requires=[{"symptom": "nms_cpu"}])
    write_entry(tmp_path, "c", kind="case", symptoms=["launch_bound"], body=body_for("case"))
    write_entry(tmp_path, "d", kind="tip", symptoms=["launch_bound"], requires=[{"symptom": "shape_recompile"}],
                body=body_for("tip"))
    stats = kb_stats.summarize_entries(kb.load_entries([tmp_path]))
    assert stats["by_kind"] == {"case": 1, "recipe": 2, "pattern": 0, "tip": 1}
    assert stats["symptoms"]["launch_bound"] == {"case": 1, "recipe": 0, "pattern": 0, "tip": 1}
    assert stats["answering"]["nms_cpu"] == ["a", "b"]
    assert stats["answering"]["dynamic_shape"] == []  # b requires nms_cpu: it never fires on dynamic shape alone
    assert stats["answering"]["launch_bound"] == []  # a case, and a tip that requires another symptom
    assert "launch_bound" in stats["uncovered_symptoms"] and "nms_cpu" not in stats["uncovered_symptoms"]
    assert stats["families"]["NMS"] == []


def test_the_shipped_kb_readme_example_is_valid(tmp_path):
    # The example in kb/README.md is the format spec; it must pass the loader once completed.
    text = (ROOT / "kb" / "README.md").read_text(encoding="utf-8")
    example = text.split("```markdown\n", 1)[1].split("```", 1)[0].replace("...\n", "x\n")
    example += "\n## Steps\n\nx\n\n## Pitfalls\n\ny\n\n## Sources\n\n- z\n"
    path = write_text(tmp_path, "recipes/nms-on-npu.md", example)
    assert problems_of(path) == []


def test_requires_is_normalised_to_canonical_values(tmp_path):
    path = write_entry(tmp_path, "x", requires=[{"symptom": "fp32_compute"}, {"dtype": ["DT_FLOAT", "float32"]},
                                                {"operator": "BatchMatMulV2"}, {"min_share": 0.01}])
    entry = kb.load_entry(path)
    assert entry.requires == [{"symptom": ["fp32_compute"]}, {"dtype": ["FLOAT"]}, {"operator": ["MatMul"]},
                              {"min_share": [0.01]}]


def test_requires_problems_name_the_item_and_the_close_word(tmp_path):
    path = write_entry(tmp_path, "x", requires=[{"symptom": "fp32_comput"}, {"dtype": "FLOT"}, {"foo": 1},
                                                {"min_share": 5}, ["a"], {"producer": "torchnpu"}])
    found = [problem.split(":", 2) for problem in problems_of(path)]
    lines = [int(line) for _, line, _ in found]
    assert lines == sorted(lines) and len(set(lines)) == 6  # each problem points at its own item
    messages = [message.strip() for _, _, message in found]
    assert messages[0] == "unknown symptom 'fp32_comput' in requires; did you mean 'fp32_compute'?"
    assert messages[1].startswith("unknown dtype 'FLOT' in requires (allowed: FLOAT, FLOAT16, BF16")
    assert messages[2].startswith("unknown requirement 'foo' (allowed: symptom, operator")
    assert messages[3] == "min_share 5 must be a number in (0, 1], e.g. 0.05 for 5 %"
    assert messages[4].startswith("requires item ['a'] must be a one-key mapping")
    assert messages[5] == "unknown producer 'torchnpu' in requires; did you mean 'torch_npu'?"


def test_zh_texts_are_kept_and_unknown_keys_refused(tmp_path):
    good = write_entry(tmp_path, "good", zh={"title": "在 NPU 上运行 NMS", "summary": "用批量 NMS 算子替代 AI CPU 上的实现。",
                                            "first_step": "将 torchvision.ops.nms 替换为 torch_npu.npu_batch_nms。"})
    assert kb.load_entry(good).zh["title"] == "在 NPU 上运行 NMS"
    bad = write_entry(tmp_path, "bad", zh={"titel": "x", "summary": ""})
    messages = [problem.split(":", 2)[2].strip() for problem in problems_of(bad)]
    assert messages == ["unknown zh key 'titel'; did you mean 'title'?", "zh summary must be non-empty text"]


def test_the_index_columns_are_the_entry_fields():
    # the index stores one column per Entry field, and its build version names them: a field added to
    # models.Entry forces every index to be rebuilt
    from opprof_advisor.core.models import Entry

    fields = tuple(item.name for item in dataclasses.fields(Entry))
    assert rows._ENTRY_COLUMNS == fields
    assert manifest.BUILD_VERSION.endswith(",".join(fields))
