"""A folder of several separate profiles is never read as one (issue: a before and an after summed into one)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.core.errors import UnknownFormat
from opprof_advisor.profiles import read_profile

RUN = "msinsight-torch-npu/text/level1/rank0_ascend_pt"
KERNEL = "tilelang-ascend/custom/sigmoid/perf_tuning/msprof_output_iter1"

ROOT = Path(__file__).resolve().parent.parent


def test_two_profiles_of_different_producers_are_named_not_merged(tmp_path, real_profiles):
    shutil.copytree(real_profiles / RUN, tmp_path / "runA")
    shutil.copytree(real_profiles / KERNEL, tmp_path / "kernelB")
    (tmp_path / "notes.txt").write_text("what I ran", encoding="utf-8")
    with pytest.raises(UnknownFormat) as caught:
        read_profile(tmp_path)
    assert caught.value.message == ("2 separate profiles in this folder, not one: kernelB (msopprof-device), "
                                    "runA (torch-npu-text)")
    assert caught.value.hint == (f"give one of them (advisor suggest {tmp_path / 'kernelB'}), analyse each "
                                 "in turn with --each (which lists them with their device time and top op), or compare "
                                 "two with advisor compare BEFORE AFTER")


def test_a_before_and_an_after_run_of_one_kernel_are_refused_in_one_line(runner, real_profiles):
    folder = real_profiles / "tilelang-ascend/custom/sigmoid/perf_tuning"
    result = runner.invoke(app, ["profile", str(folder)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {folder}: 2 msprof op runs in one folder: msprof_output_iter1/OPPROF_")
    assert "advisor compare" in line


def test_the_launch_folders_of_one_operator_are_one_profile(tmp_path, real_profiles):
    # FORMATS.md §1.1: OPPROF_*/<OpName>/<0,1,...>: numbered launch folders of one run, read together
    source = next((real_profiles / "catlass-msprof-op/device/02_fp32_cm_gemv_aiv/prof").glob("OPPROF_*"))
    op = tmp_path / "OPPROF_20250304172135_UZXJVIHHTTNZFAJD" / "FP32CMGemvAiv"
    for number in ("0", "1"):
        shutil.copytree(source, op / number)
    profile = read_profile(op)
    assert profile.format == "msopprof-device" and profile.op_types[0].count == 2


def test_an_unreadable_folder_beside_a_profile_is_not_an_internal_error(tmp_path, real_profiles, monkeypatch):
    from pathlib import Path

    shutil.copytree(real_profiles / RUN, tmp_path / "run_ascend_pt")
    (tmp_path / "locked").mkdir()
    real_is_dir = Path.is_dir

    def refusing(self):
        if self.parent.name == "locked":
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_dir(self)

    (tmp_path / "locked" / "inner").mkdir()
    monkeypatch.setattr(Path, "is_dir", refusing)
    assert read_profile(tmp_path / "run_ascend_pt").format == "torch-npu-text"
    with pytest.raises(UnknownFormat):
        read_profile(tmp_path)


def test_the_parts_of_one_profile_are_not_separate_profiles(tmp_path, real_profiles):
    # a torch_npu run folder holds ASCEND_PROFILER_OUTPUT (and often PROF_*): one profile, read as before
    shutil.copytree(real_profiles / RUN, tmp_path / "run_ascend_pt")
    assert read_profile(tmp_path / "run_ascend_pt").format == "torch-npu-text"
    # a run beside a kernel profile (and a folder that is none) is named with it, not skipped by a deeper walk
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "readme.txt").write_text("x", encoding="utf-8")
    shutil.copytree(real_profiles / KERNEL, tmp_path / "kernel")
    with pytest.raises(UnknownFormat) as caught:
        read_profile(tmp_path)
    assert caught.value.message == ("2 separate profiles in this folder, not one: kernel (msopprof-device), "
                                    "run_ascend_pt (torch-npu-text)")


def _two(tmp_path, real_profiles):
    shutil.copytree(real_profiles / RUN, tmp_path / "runA")
    shutil.copytree(real_profiles / KERNEL, tmp_path / "kernelB")
    return tmp_path


def test_each_shows_every_separate_profile_in_turn(tmp_path, real_profiles, runner):
    folder = _two(tmp_path, real_profiles)
    result = runner.invoke(app, ["profile", str(folder), "--each"])
    assert result.exit_code == 0, result.output
    first, second = (result.stdout.index(f"== {folder / name} ({fmt}) ==")
                     for name, fmt in (("kernelB", "msopprof-device"), ("runA", "torch-npu-text")))
    assert first < second and "main_kernel" in result.stdout[first:second]


def test_each_in_json_is_one_document_of_their_documents(tmp_path, real_profiles, runner):
    import json

    folder = _two(tmp_path, real_profiles)
    result = runner.invoke(app, ["suggest", "--profile", str(folder), "--each", "--format", "json",
                                 "--db", str(tmp_path / "advisor.db")])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "opprof-advisor/each/1"
    assert [(p["format"], p["document"]["schema"]) for p in doc["profiles"]] == [
        ("msopprof-device", "opprof-advisor/suggest/2"), ("torch-npu-text", "opprof-advisor/suggest/2")]
    assert doc["profiles"][1]["document"]["profile"]["path"] == str(folder / "runA")


def test_each_lists_the_profiles_and_offers_to_compare_two_runs_of_one_workload(tmp_path, real_profiles, runner):
    folder = _two(tmp_path, real_profiles)
    shutil.copytree(real_profiles / RUN, folder / "runC")
    result = runner.invoke(app, ["profile", str(folder), "--each", "--top", "1"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    listing = result.stdout[result.stdout.index("3 separate profiles in"):].splitlines()
    # device time and top op of the level1 run, by hand: 115 ms, hcom_allReduce_ 92.3 % of it
    assert listing[1:] == [
        f"  {folder / 'kernelB'}  msopprof-device  device time 71.9 µs  top main_kernel 100.0 %",
        f"  {folder / 'runA'}  torch-npu-text  device time 115 ms  top hcom_allReduce_ 92.3 %",
        f"  {folder / 'runC'}  torch-npu-text  device time 115 ms  top hcom_allReduce_ 92.3 %",
        f"{folder / 'runA'} and {folder / 'runC'} may be two runs of one workload (both torch-npu-text, the same "
        f"largest op types): advisor compare '{folder / 'runA'}' '{folder / 'runC'}'"]


def test_each_in_json_summarises_each_profile(tmp_path, real_profiles, runner):
    import json

    folder = _two(tmp_path, real_profiles)
    result = runner.invoke(app, ["profile", str(folder), "--each", "--format", "json"])
    assert result.exit_code == 0, result.output
    summaries = [p["summary"] for p in json.loads(result.stdout)["profiles"]]
    assert [s["top_op"] for s in summaries] == ["main_kernel", "hcom_allReduce_"]
    assert summaries[1]["top_share"] == pytest.approx(0.923, abs=5e-4)


def test_each_with_a_file_format_is_a_usage_error(tmp_path, runner):
    result = runner.invoke(app, ["profile", str(tmp_path), "--each", "--format", "html"])
    assert result.exit_code == 2 and "--each prints a table or json for each profile" in result.output


def test_a_run_of_the_folder_s_own_beside_another_profile_is_two_profiles(tmp_path, runner):
    """An OPPROF_* run directly in the folder is read as the folder's own; beside a torch_npu run it is a second
    profile, not the one to read silently."""
    for example, pattern in (("yolov8_torch_npu", "*_ascend_pt"), ("matmul_msopprof", "OPPROF_*")):
        [source] = (ROOT / "data/examples" / example).glob(pattern)
        shutil.copytree(source, tmp_path / source.name)
    refused = runner.invoke(app, ["suggest", str(tmp_path)])
    assert refused.exit_code == 1 and "2 separate profiles in this folder" in refused.stderr
    assert "(msopprof-device)" in refused.stderr and "(torch-npu-text)" in refused.stderr
    each = runner.invoke(app, ["profile", str(tmp_path), "--each", "--format", "json"])
    assert each.exit_code == 0, each.output
    import json

    assert sorted(p["format"] for p in json.loads(each.stdout)["profiles"]) == ["msopprof-device", "torch-npu-text"]
