"""MindSpore 2.3+ writes the torch_npu layout in a ``*_ascend_ms`` folder (FORMATS.md §11.1): read alike, advised as
MindSpore (its own switches in the notes, no torch-only remedy)."""

from __future__ import annotations

import json
import shutil

from opprof_advisor.cli.app import app
from opprof_advisor.kb.store import open_index
from opprof_advisor.profiles import read_profile

LEVEL0 = "msinsight-torch-npu/text/level0/rank0_ascend_pt"


def test_an_ascend_ms_folder_is_a_mindspore_profile_with_mindspore_switches(tmp_path, real_profiles):
    run = tmp_path / "worker_1_ascend_ms"
    shutil.copytree(real_profiles / LEVEL0, run)
    profile = read_profile(run)
    assert (profile.format, profile.producer) == ("mindspore-text", "mindspore")
    assert profile.device_time_us == read_profile(real_profiles / LEVEL0).device_time_us
    assert any("collect with mindspore.Profiler(profiler_level=ProfilerLevel.Level1)" in note for note in profile.notes)
    # no torch_npu switch in any "collect with": every one names MindSpore's own
    assert not any("profiler_level=Level1" in note or "record_shapes=True" in note and "mindspore" not in note
                   or "experimental_config" in note for note in profile.notes)


def test_its_advice_lists_no_remedy_for_another_framework(tmp_path, real_profiles, runner):
    run = tmp_path / "worker_1_ascend_ms"
    shutil.copytree(real_profiles / LEVEL0, run)
    db = tmp_path / "advisor.db"
    result = runner.invoke(app, ["suggest", "--profile", str(run), "--format", "json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["context"]["framework"] == "mindspore"
    index = open_index(db)
    remedies = [remedy["id"] for s in doc["suggestions"] for remedy in s.get("remedies", [])]
    assert remedies
    for entry_id in remedies:
        frameworks = index.get(entry_id).applies_to.get("framework")
        assert not frameworks or "mindspore" in frameworks, (entry_id, frameworks)
