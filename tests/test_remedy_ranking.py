"""Which remedy leads a finding: the ones the profile shows to apply before those resting on what it cannot tell
(advice/remedies.py), the training stack only when --stack names it, multimodal advice only where an encoder ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from opprof_advisor.advice.advisor import open_advisor
from opprof_advisor.advice.context import workload_context
from opprof_advisor.advice.remedies import misfit, unconfirmed
from opprof_advisor.advice.suggest import advise
from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.profiles import read_profile
from opprof_advisor.testing import KernelSpec, write_torch_npu_text

REAL = Path(__file__).resolve().parents[2] / "shared" / "real-profiles"
LLM_PP = REAL / "msinsight-torch-npu" / "st-level2-cann8.3" / "rank_0_ascend_pt"
SIGMOID = REAL / "tilelang-ascend" / "custom" / "sigmoid" / "Sigmoid" / "trace_data"


@pytest.fixture(scope="module")
def advisor(tmp_path_factory):
    return open_advisor(tmp_path_factory.mktemp("kb") / "advisor.db", outcomes=False)


@pytest.fixture(scope="module")
def entries(advisor):
    return {e.id: e for e in advisor.entries}


def _rows(doc):
    return {row["id"]: [r["id"] for r in row["remedies"]] for row in doc["suggestions"]}


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return path


def test_stack_specific_remedies_come_under_the_general_ones_until_the_stack_is_named(advisor, entries):
    profile = read_profile(_need(LLM_PP))
    rows = _rows(advise(profile, advisor.entries, matcher=advisor.matcher, explain=True))
    # 327 ms of the step waits for another rank: find the slow rank first, not a MindSpeed TP option
    assert rows["comm-wait"][0] == "communication-wait-slow-rank"
    for remedies in rows.values():
        assert not entries[remedies[0]].applies_to.get("stack"), remedies
    stacked = advise(profile, advisor.entries, matcher=advisor.matcher, explain=True, stack="mindspeed-llm")
    assert stacked["context"]["stacks"] == ["mindspeed-llm", "mindspeed", "megatron"]
    assert "mindspeed-llm" in str(stacked["context"]["line"])
    why = {item["id"]: str(item["why"]) for item in stacked["left_out"]}
    # torchtitan's regional compile answers the idle host too, but not on a MindSpeed run
    assert why["torchtitan-regional-compile-host-bound"] == (
        "applies to stack torchtitan; this run: mindspeed-llm, mindspeed, megatron")
    # uneven TP work would show as a slow rank, which one rank's profile cannot show: no lead on a guess
    assert why["tp-unaligned-linear-imbalance"] == "symptom slow_rank: not met (none of them in the profile)"
    assert _rows(stacked)["comm-wait"][0] == "communication-wait-slow-rank"
    listed = {r for remedies in _rows(stacked).values() for r in remedies}
    assert "torchtitan-regional-compile-host-bound" not in listed
    assert any("mindspeed" in entries[r].applies_to.get("stack", []) for r in listed)


def test_an_unknown_stack_is_refused_with_the_known_ones_before_the_profile_is_read(tmp_path):
    from opprof_advisor import commands

    with pytest.raises(AdvisorError, match="unknown stack 'deepspeed'") as error:
        commands.suggest(tmp_path / "not-read", stack="deepspeed")  # a path that does not exist: never opened
    assert "use one of megatron, mindspeed, mindspeed-llm" in str(error.value)


def test_a_remedy_resting_on_two_facts_the_profile_cannot_tell_is_left_out(advisor, entries):
    # a custom kernel (main_kernel) of a system msprof run: 1 GB pages for scattered Gather / paged-attention
    # reads of a torch_npu process would be a guess on both counts
    doc = advise(read_profile(_need(SIGMOID)), advisor.entries, matcher=advisor.matcher, explain=True)
    assert doc["context"]["framework"] is None
    assert _rows(doc)["pipe-mte2_bound"][0] == "mte2-bound-kernels"
    why = {item["id"]: str(item["why"]) for item in doc["left_out"]}
    assert why["npu-alloc-1g-pages"] == "rests on what the profile cannot tell: operators, framework, family"
    context = {"framework": None, "mode": None, "phase": None, "families": [], "stacks": []}
    # the mode is told only once the framework is: one unknown fact, not two
    assert unconfirmed(entries["static-shape-compile-mode"], context, set()) == ["framework"]
    # a key listing every value is no condition
    assert entries["host-malloc-jemalloc-tcmalloc"].applies_to["phase"] == ["inference", "serving", "training"]
    assert unconfirmed(entries["host-malloc-jemalloc-tcmalloc"], context, set()) == ["framework"]


def test_general_remedies_stay_where_only_the_framework_and_phase_are_unknown(advisor, entries):
    # a cluster summary tells neither framework nor phase: two unknowns, but nothing a profile can never show, so
    # the pipeline-bubble pattern stays an answer to the ranks' waits
    cluster = REAL / "msprof-analyze-ut" / "cluster_8rank"
    doc = advise(read_profile(_need(cluster)), advisor.entries, matcher=advisor.matcher, explain=True)
    assert (doc["context"]["framework"], doc["context"]["phase"]) == (None, None)
    bubble = entries["pipeline-bubble"]
    assert len(unconfirmed(bubble, doc["context"], set())) >= 2 and not {"stack", "operators"} & set(
        unconfirmed(bubble, doc["context"], set()))
    guesses = {item["id"]: str(item["why"]) for item in doc["left_out"] if str(item["why"]).startswith("rests on")}
    assert "pipeline-bubble" not in guesses and "host-malloc-jemalloc-tcmalloc" not in guesses
    assert guesses and all("stack" in why or "operators" in why for why in guesses.values()), guesses


def _run(tmp_path: Path, extra: list[KernelSpec]) -> dict:
    kernels = [KernelSpec("FlashAttentionScore", task_type="MIX_AIC", duration_us=300, count=24, block_dim=20),
               KernelSpec("MatMulV3", task_type="AI_CORE", duration_us=200, count=96, block_dim=20),
               KernelSpec("RmsNorm", task_type="AI_VECTOR_CORE", duration_us=20, count=48, block_dim=40), *extra]
    return workload_context(read_profile(write_torch_npu_text(tmp_path, kernels)))


def test_a_convolution_beside_attention_is_a_multimodal_run_and_only_then_gets_multimodal_advice(tmp_path, entries):
    language = _run(tmp_path / "llm", [])
    vision = _run(tmp_path / "vlm", [KernelSpec("Conv3D", task_type="AI_CORE", duration_us=150, count=1,
                                                block_dim=20)])
    detector = _run(tmp_path / "cnn", [KernelSpec("Conv2D", task_type="AI_CORE", duration_us=400, count=40,
                                                  block_dim=20)])
    assert language["families"] == ["transformer"]
    assert vision["families"] == ["transformer", "multimodal"]
    assert "multimodal" not in detector["families"] and "cnn" in detector["families"]  # attention inside a CNN
    vlm = entries["vlm-dp-data-balance"]
    assert vlm.applies_to["family"] == ["multimodal"]
    training = {"phase": "training", "ranks": "multi"}  # the entry's other conditions, met
    assert str(misfit(vlm, {**language, **training})) == "applies to family multimodal; this run: transformer"
    assert misfit(vlm, {**vision, **training}) is None
