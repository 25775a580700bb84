"""Where in the user's code (FORMATS.md §14): call stacks of a with_stack capture, from the real torch_npu DB."""

from __future__ import annotations

import sqlite3

import pytest

from opprof_advisor.advice.suggest import _located
from opprof_advisor.cli.app import app
from opprof_advisor.core.models import OpTypeStat, Profile
from opprof_advisor.profile.builder import profile_to_json
from opprof_advisor.profiles import load_profile
from opprof_advisor.readers.callstacks import user_frames

DB_RANK = "msinsight-torch-npu/db/level1/rank0_ascend_pt"
ALEXNET = "/home/z30057886/.local/lib/python3.9/site-packages/torchvision/models/alexnet.py"


def _linked_tasks(db) -> int:
    con = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        return con.execute(
            "SELECT count(DISTINCT t.rowid) FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
            "JOIN CONNECTION_IDS ci ON ci.connectionId = t.connectionId JOIN PYTORCH_API a ON a.connectionId = ci.id "
            "WHERE a.callchainId IS NOT NULL").fetchone()[0]
    finally:
        con.close()


def test_the_real_db_ties_hot_op_types_to_the_users_frames(real_profiles):
    raw, profile = load_profile(real_profiles / DB_RANK)
    stacks = raw.extra["stacks"]
    transdata = stacks["TransData"][0]
    assert transdata["where"] == f"{ALEXNET}(48): forward" and transdata["count"] == 21
    assert transdata["frames"][1] == "/home/z30057886/imagenet_script/main.py(354): train"
    # every launch tied to code is counted once, none beyond the tasks that carry a call chain
    db = next((real_profiles / DB_RANK / "ASCEND_PROFILER_OUTPUT").glob("ascend_pytorch_profiler_*.db"))
    counted = sum(stack["count"] for per_op in stacks.values() for stack in per_op)
    assert 0 < counted <= _linked_tasks(db) == 72  # of the 76 tasks with a call chain, 72 are compute tasks
    row = next(r for r in profile_to_json(profile)["op_types"] if r["op_type"] == "TransData")
    assert row["stacks"][0]["where"] == transdata["where"]


def test_the_profile_table_says_where_in_your_code(runner, real_profiles):
    result = runner.invoke(app, ["profile", str(real_profiles / DB_RANK)])
    assert result.exit_code == 0
    assert "where in your code (the innermost frame of yours that launched it)" in result.stdout
    assert f"TransData: {ALEXNET}(48): forward (21 of its launches" in result.stdout


def test_framework_frames_are_not_the_users():
    frames = ["/x/site-packages/torch/nn/modules/conv.py(456): _conv_forward",
              "/x/site-packages/torch_npu/utils/_module.py(10): f", "/usr/lib/python3.9/multiprocessing/spawn.py(1): g",
              "<string>(1): <module>", "/x/site-packages/torchvision/models/alexnet.py(48): forward",
              "/home/me/train.py(12): step"]
    assert user_frames(frames) == frames[-2:]


def test_evidence_of_an_op_type_says_where_it_was_launched():
    row = OpTypeStat(op_type="TransData", family="TransData", unit="ai_vector", count=3, time_us=30.0, share=0.3,
                     stacks=[{"where": "/home/me/train.py(12): step", "frames": [], "time_us": 30.0, "count": 3}])
    profile = Profile(path="p", format="torch-npu-db", op_types=[row])
    found = _located([{"op_type": "TransData", "time_us": 30.0}, {"op_type": None, "time_us": 1.0}], profile)
    assert found[0]["where"] == "/home/me/train.py(12): step" and "where" not in found[1]


def test_the_text_export_s_trace_view_ties_forward_and_backward_kernels_to_the_forward_line(real_profiles):
    # the same run exported as text: async_npu flows from the Python op to the kernel, the op's "Call stack"; the
    # DB ties the 21 forward TransData launches to alexnet.py(48), the trace also the 36 backward ones, through the
    # fwdbwd flow from the forward op to its backward function (the autograd thread has no stacks of its own)
    path = real_profiles / "msinsight-torch-npu/text/level1/rank0_ascend_pt"
    text = load_profile(path)[0].extra["stacks"]
    db = load_profile(real_profiles / DB_RANK)[0].extra["stacks"]
    assert text["TransData"][0]["where"] == db["TransData"][0]["where"] == f"{ALEXNET}(48): forward"
    assert (db["TransData"][0]["count"], text["TransData"][0]["count"]) == (21, 57)
    assert set(db) <= set(text)
    tied = sum(stack["count"] for per_op in text.values() for stack in per_op)
    assert tied == 164  # of the 206 kernel launches the trace links to a Python op
