"""`advisor remove ID`: entries you added leave your KB folder and the index; the shipped KB is read-only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kb_helpers import without_near_duplicate_warnings, write_entry, GUIDE_FIELDS
from opprof_advisor.cli.app import app

ROOT = Path(__file__).resolve().parent.parent


def invoke(runner, *args):
    return runner.invoke(app, [str(a) for a in args])


def add_case(tmp_path: Path, name: str = "my-yolox-port", title: str = "YOLOX port stalls in post-processing") -> Path:
    return write_entry(tmp_path, name, kind="case", title=title, summary="The NMS of a YOLOX port ran on the AI CPU.",
                       symptoms=["nms_cpu"], op_mix=["Conv2D", "NMS"], **GUIDE_FIELDS)


def test_remove_takes_an_added_entry_out_of_the_folder_and_the_index(runner, tmp_path, advisor_home):
    assert invoke(runner, "add", add_case(tmp_path)).exit_code == 0
    copy = advisor_home / "kb" / "cases" / "my-yolox-port.md"
    assert copy.is_file()
    result = invoke(runner, "remove", "my-yolox-port")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"removed my-yolox-port (case) from your KB: {copy}"
    assert not copy.exists()
    shown = invoke(runner, "show", "my-yolox-port")
    assert shown.exit_code == 1 and "no knowledge-base entry with id 'my-yolox-port'" in shown.stderr
    found = json.loads(invoke(runner, "search", "yolox", "--format", "json").stdout)
    assert "my-yolox-port" not in [hit["id"] for hit in found["results"]]


def test_remove_json(runner, tmp_path, advisor_home):
    invoke(runner, "add", add_case(tmp_path))
    doc = json.loads(invoke(runner, "remove", "my-yolox-port", "--format", "json").stdout)
    assert doc == {"schema": "opprof-advisor/kb-remove/1", "removed": "my-yolox-port", "kind": "case",
                   "files": [str((advisor_home / "kb" / "cases" / "my-yolox-port.md").resolve())],
                   "builtin_back": False}


def test_a_shipped_entry_is_read_only(runner, advisor_home):
    result = invoke(runner, "remove", "nms-on-npu")
    assert result.exit_code == 1
    assert result.stderr.strip() == ("error: 'nms-on-npu' is part of the shipped knowledge base, which is read-only — "
                                     "only entries you added with `advisor add` (in your KB folder) can be removed")
    assert invoke(runner, "show", "nms-on-npu").exit_code == 0


def test_an_unknown_id_says_what_is_close(runner):
    result = invoke(runner, "remove", "nms-on-np")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no knowledge-base entry with id 'nms-on-np' — did you mean nms-on-npu")


def test_removing_an_entry_added_over_a_shipped_one_brings_the_shipped_one_back(runner, tmp_path):
    shipped = json.loads(invoke(runner, "show", "nms-on-npu", "--format", "json").stdout)["entry"]["title"]
    mine = write_entry(tmp_path, "nms-on-npu", kind="recipe", title="My own NMS advice")
    assert invoke(runner, "add", mine, "--replace").exit_code == 0
    assert json.loads(invoke(runner, "show", "nms-on-npu", "--format", "json").stdout)["entry"]["title"] == \
        "My own NMS advice"
    result = invoke(runner, "remove", "nms-on-npu")
    assert result.exit_code == 0 and "the shipped entry nms-on-npu is in effect again" in result.stdout
    assert json.loads(invoke(runner, "show", "nms-on-npu", "--format", "json").stdout)["entry"]["title"] == shipped


def test_a_failed_reindex_puts_the_entry_back(runner, tmp_path, advisor_home, monkeypatch):
    from opprof_advisor.kb import remove as kb_remove
    from opprof_advisor.kb import store
    from opprof_advisor.core.errors import StoreNotWritable

    invoke(runner, "add", add_case(tmp_path))
    copy = advisor_home / "kb" / "cases" / "my-yolox-port.md"
    before = copy.read_bytes()
    real_build, calls = store.build_index, []

    def build_then_fail(*args, **kwargs):
        calls.append(1)
        if not copy.exists():  # the update after the file is gone
            raise StoreNotWritable("disk full")
        return real_build(*args, **kwargs)

    monkeypatch.setattr(store, "build_index", build_then_fail)
    result = invoke(runner, "remove", "my-yolox-port")
    assert result.exit_code == 1 and "disk full" in result.stderr
    assert copy.read_bytes() == before
    assert kb_remove.user_copies(advisor_home / "kb", "my-yolox-port", None) == [copy.resolve()]


def test_concurrent_adds_and_removes_leave_the_index_in_step_with_the_folder(tmp_path, advisor_home):
    env = {**os.environ, "ADVISOR_HOME": str(advisor_home)}

    def run(*args):
        return subprocess.Popen([sys.executable, "-m", "opprof_advisor", *map(str, args)], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def finish(processes):
        # the six entries differ by their number only: an add may warn that it nearly duplicates another
        outcomes = [(p.wait(timeout=180), without_near_duplicate_warnings(p.stderr.read().decode())) for p in processes]
        for p in processes:
            p.stdout.close()
            p.stderr.close()
        return outcomes

    sources = [add_case(tmp_path, f"parallel-case-{n}", f"Parallel case {n}") for n in range(6)]
    assert finish([run("add", source) for source in sources[:3]]) == [(0, "")] * 3
    # remove the first three while the last three are added
    outcomes = finish([run("remove", f"parallel-case-{n}") for n in range(3)] +
                      [run("add", source) for source in sources[3:]])
    assert outcomes == [(0, "")] * 6
    listed = subprocess.run([sys.executable, "-m", "opprof_advisor", "kb", "list", "--kind", "case", "--format",
                             "json"], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    ids = {entry["id"] for entry in json.loads(listed.stdout)["entries"]}
    assert {f"parallel-case-{n}" for n in range(3, 6)} <= ids
    assert not {f"parallel-case-{n}" for n in range(3)} & ids
    on_disk = {p.stem for p in (advisor_home / "kb" / "cases").glob("*.md")}
    assert on_disk == {f"parallel-case-{n}" for n in range(3, 6)}


# ---------------------------------------------------------------------------------------------
# add: the near-duplicate warning
# ---------------------------------------------------------------------------------------------


def test_adding_a_near_copy_warns_naming_the_closest_entry_but_adds_it(runner, tmp_path):
    shipped = json.loads(invoke(runner, "show", "nms-on-npu", "--format", "json").stdout)["entry"]
    copy = write_entry(tmp_path, "my-nms-advice", kind="recipe", title=shipped["title"],
                       summary=shipped["summary"].replace("NMS", "NMS step", 1) + " It helped on our detector too.")
    result = invoke(runner, "add", copy)
    assert result.exit_code == 0  # a warning, not a refusal
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and warning[0].startswith("warning: my-nms-advice nearly duplicates nms-on-npu (")
    assert "advisor remove my-nms-advice" in warning[0]
    assert invoke(runner, "show", "my-nms-advice").exit_code == 0


def test_adding_a_distinct_entry_raises_no_warning(runner, tmp_path):
    result = invoke(runner, "add", add_case(tmp_path))
    assert result.exit_code == 0 and "warning" not in result.stderr


def test_adding_a_case_without_what_the_guide_asks_says_what_to_write_and_adds_it(runner, tmp_path):
    source = write_entry(tmp_path, "bare-case", kind="case", title="A bare case", summary="Only the required keys.")
    result = invoke(runner, "add", source)
    assert result.exit_code == 0 and result.stdout.startswith("added bare-case (case)")
    warnings = [line.split(": warning: ", 1)[1].split(" — ")[0] for line in result.stderr.splitlines()]
    assert warnings == ["no `requires:`", "no `zh:`", "no `op_mix:`", "no `symptoms:`"]
    assert "can never show as similar" in result.stderr
    assert all(line.startswith(f"{source}:") for line in result.stderr.splitlines())  # the file the user edits


def test_replacing_an_entry_is_not_its_own_duplicate(runner, tmp_path):
    source = add_case(tmp_path)
    invoke(runner, "add", source)
    assert "nearly duplicates" not in invoke(runner, "add", source, "--replace").stderr


def test_no_two_shipped_entries_reach_the_threshold_and_copies_do():
    """The threshold's measurement (opprof_advisor/near_duplicates.py) still holds for the KB as it is now."""
    from opprof_advisor.core import paths
    from opprof_advisor.kb import load_entries
    from opprof_advisor.kb.near_duplicates import NEAR_DUPLICATE, closest_entry

    entries = load_entries([paths.builtin_kb_dir()])
    assert len(entries) >= 150
    assert [(e.id, closest_entry(e, entries)[0].id) for e in entries if closest_entry(e, entries)] == []
    original = next(e for e in entries if e.id == "block-dim-core-multiple")
    near = original.replace(id="my-copy", summary=original.summary + " Seen on our run.")
    found = closest_entry(near, entries)
    assert found is not None and found[0].id == "block-dim-core-multiple" and found[1] >= NEAR_DUPLICATE


def test_the_candidate_tables_name_the_closest_entry_as_the_entries_rows_do(advisor_home):
    """`advisor add` compares with the texts of the candidate tables: the same closest entry and score, ties to the first id."""
    from opprof_advisor.kb import store
    from opprof_advisor.kb.near_duplicates import NEAR_DUPLICATE, closest_entry, closest_in_index

    index = store.build_index(advisor_home / "advisor.db")
    entries = index.entries()
    checked = 0
    for number, original in enumerate(entries[::7]):
        words = original.summary.split()
        near = original.replace(id=f"my-copy-{number}", title=original.title.lower() if number % 2 else
                                   original.title, summary=" ".join(words[: max(len(words) * (3 + number % 2) // 5, 1)]))
        expected = closest_entry(near, index.texts(), threshold=NEAR_DUPLICATE - 15)
        found = closest_in_index(near, index, threshold=NEAR_DUPLICATE - 15)
        assert (found and (found[0], found[1])) == (expected and (expected[0], expected[1]))
        checked += found is not None
    assert checked >= 10
    index.close()
