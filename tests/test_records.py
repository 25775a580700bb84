"""The models (dataclasses with the Record mixin): construction, ==, to_dict, replace, frozen, checks on build."""

from __future__ import annotations

import dataclasses
import math

import pytest

from opprof_advisor.cluster.executors import ExecutorChoice
from opprof_advisor.core.errors import ClusterError
from opprof_advisor.core.models import Entry, Gain, OpTypeStat, Profile, Roofline, RooflineRow, StepSplit, Symptom


def _profile() -> Profile:
    row = OpTypeStat("MatMul", "matmul", "ai_core", 3, 120.0, 0.6, dtypes=["FLOAT16"])
    roofline = Roofline(rows=[RooflineRow("MatMul", "ai_core", 1.0, 0.5, "judged")])
    return Profile(path="p", format="torch-npu-text", op_types=[row], symptoms=[Symptom("aicpu_fallback", ["NMS"], 0.2, "d")],
                   steps=[StepSplit("1", computing_us=5.0)], roofline=roofline,
                   kernel={"pipes": [{"aic_cube": 0.5}], "bound": ("cube", 0.5)})


def test_to_dict_is_the_document_of_nested_models():
    profile = _profile()
    document = profile.to_dict()
    assert [name.name for name in dataclasses.fields(Profile)] == list(document)
    assert document["op_types"][0] == {**dataclasses.asdict(profile.op_types[0]), "dtypes": ["FLOAT16"]}
    assert document["roofline"]["rows"][0]["status"] == "judged"
    assert document["kernel"] == {"pipes": [{"aic_cube": 0.5}], "bound": ("cube", 0.5)}


def test_to_dict_copies_what_it_holds():
    profile = _profile()
    document = profile.to_dict()
    document["op_types"][0]["dtypes"].append("FLOAT")
    document["kernel"]["pipes"][0]["aic_cube"] = 1.0
    assert profile.op_types[0].dtypes == ["FLOAT16"] and profile.kernel["pipes"][0]["aic_cube"] == 0.5


def test_equality_is_field_by_field_within_one_class():
    assert _profile() == _profile()
    assert _profile() != _profile().replace(device_time_us=1.0)
    nan = math.nan
    assert Symptom("x", [], nan, "") == Symptom("x", [], nan, "")  # one NaN object equals itself, as in a tuple
    assert StepSplit(None) != Symptom("x", [], 0.0, "")
    with pytest.raises(TypeError):
        hash(StepSplit(None))  # mutable records are unhashable, as eq dataclasses were


def test_defaults_are_fresh_per_object_and_replace_leaves_the_original():
    first, second = Entry("a", "tip", "A"), Entry("b", "tip", "B")
    first.operators.append("matmul")
    assert second.operators == [] and first.evidence == "D" and first.origin == "builtin"
    changed = first.replace(id="c", title="C")
    assert (changed.id, changed.title, changed.operators) == ("c", "C", ["matmul"]) and first.id == "a"
    with pytest.raises(TypeError):
        first.replace(no_such_field=1)


def test_frozen_records_refuse_assignment_and_hash_by_value():
    gain = Gain(5, 10, "latency", "operators", "src")
    with pytest.raises(AttributeError):
        gain.low_pct = 6  # type: ignore[misc]
    assert ExecutorChoice("serial") == ExecutorChoice("serial")
    assert hash(ExecutorChoice("serial")) == hash(ExecutorChoice("serial"))
    assert len({ExecutorChoice("serial"), ExecutorChoice("serial"), ExecutorChoice()}) == 2


def test_an_executor_choice_is_checked_when_built():
    with pytest.raises(ClusterError, match="unknown executor 'gpu'"):
        ExecutorChoice("gpu")
    with pytest.raises(ClusterError, match="--scheduler runs the map on Dask"):
        ExecutorChoice("serial", scheduler="tcp://host:8786")
