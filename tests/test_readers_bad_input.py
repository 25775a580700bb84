"""Bad input to `advisor profile`: one line naming the file and the problem, exit 1, no traceback."""

from __future__ import annotations

import subprocess
import tarfile
import zipfile

from profile_fixtures import LEVEL2_HEADER, kernel, write_ascend_pt, write_csv

from opprof_advisor.cli.app import app

HINT_FORMATS = ("expected a torch_npu *_ascend_pt folder, a PROF_* or OPPROF_* folder, an op_summary / kernel_details "
                "CSV, an msprof / ascend_pytorch_profiler DB, or a .zip / .tar.gz of one")
REEXPORT = "the file is corrupt or edited; re-export the profile"


def _error_line(runner, path) -> str:
    result = runner.invoke(app, ["profile", str(path)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def _kernel_file(tmp_path, rows=None):
    rows = rows if rows is not None else [kernel("Add", "Add", "AI_VECTOR_CORE", 3.5), kernel("Mul", "Mul", "AI_CORE", 2.0)]
    folder = write_ascend_pt(tmp_path, rows)
    return folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"


def test_missing_path(runner, tmp_path):
    assert _error_line(runner, tmp_path / "nope") == f"error: {tmp_path / 'nope'}: no such file or directory — check the path"


def test_empty_folder(runner, tmp_path):
    assert _error_line(runner, tmp_path) == f"error: {tmp_path}: empty folder — {HINT_FORMATS}"


def test_folder_with_unrelated_files(runner, tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "table.csv").write_text("a,b\n1,2\n")
    (tmp_path / "sub").mkdir()
    assert _error_line(runner, tmp_path) == f"error: {tmp_path}: no profiler output found among 3 entries — {HINT_FORMATS}"


def test_zero_byte_csv(runner, tmp_path):
    path = _kernel_file(tmp_path)
    path.write_bytes(b"")
    assert _error_line(runner, path.parents[1]) == (
        f"error: {path}: empty file (0 bytes) — the profiler did not finish writing it; re-export the profile")


def test_header_only_csv(runner, tmp_path):
    path = write_csv(tmp_path / "op_summary_20250101000000.csv", LEVEL2_HEADER, [])
    assert _error_line(runner, path) == (
        f"error: {path}:1: no data rows (header only) — the profiled run launched no kernels, or the export was cut short")


def test_truncated_last_line(runner, tmp_path):
    path = _kernel_file(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\r\n").rfind(b",NO,") + 3])  # cut inside the last row
    assert _error_line(runner, path.parents[1]) == (
        f"error: {path}:3: truncated last line (14 of 46 fields) — the profiler was interrupted while writing; "
        "re-export the profile")


def test_required_column_missing(runner, tmp_path):
    path = _kernel_file(tmp_path)
    text = path.read_bytes().decode().replace("Duration(us)", "Length", 1)
    path.write_bytes(text.encode())
    assert _error_line(runner, path.parents[1]) == (
        f"error: {path}:1: required column 'Task Duration(us) / Duration(us)' is missing — "
        "export the profile with a supported tool version")


def test_non_numeric_duration(runner, tmp_path):
    rows = [kernel("Add", "Add", "AI_VECTOR_CORE", 3.5), kernel("Mul", "Mul", "AI_CORE", 2.0)]
    rows[1]["Duration(us)"] = "fast"
    path = _kernel_file(tmp_path, rows)
    assert _error_line(runner, path.parents[1]) == f"error: {path}:3: duration 'fast' is not a number — {REEXPORT}"


def test_negative_duration(runner, tmp_path):
    # an absurd number is a note and its row is left out; only a file with no plausible duration at all is refused
    # (more in test_nonfinite_numbers.py)
    rows = [kernel("Add", "Add", "AI_VECTOR_CORE", -3.5)]
    path = _kernel_file(tmp_path, rows)
    assert _error_line(runner, path.parents[1]) == (
        f"error: {path}:2: no row has a plausible duration: Duration(us) '-3.5' is not a finite number from 0 to 1e+12 "
        f"(1 such row(s)) — {REEXPORT}")


def test_gbk_file_is_read_and_bom_file_is_read(runner, tmp_path):
    rows = [kernel("算子A", "Add", "AI_VECTOR_CORE", 3.5)]
    gbk = write_csv(tmp_path / "gbk" / "op_summary.csv", LEVEL2_HEADER, rows, encoding="gbk")
    bom = write_csv(tmp_path / "bom" / "op_summary.csv", LEVEL2_HEADER, rows, encoding="utf-8-sig")
    for path in (gbk, bom):
        result = runner.invoke(app, ["profile", str(path), "--format", "json"])
        assert result.exit_code == 0, result.output
        assert '"device_time_us": 3.5' in result.stdout


def test_undecodable_file(runner, tmp_path):
    path = tmp_path / "op_summary.csv"
    path.write_bytes(b"Op Name,Task Duration(us)\nAdd,1.0\n\xff\xfe\xff,2.0\n")
    assert _error_line(runner, path) == f"error: {path}:3: not UTF-8 or GBK text (undecodable byte 0xff) — re-save the file as UTF-8"


def test_symlink_loop(runner, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert _error_line(runner, loop) == (
        f"error: {loop}: symlink loop (too many levels of symbolic links) — point advisor at the real profile folder")


def test_symlink_loop_inside_a_profile_folder(runner, tmp_path):
    path = _kernel_file(tmp_path)
    path.unlink()
    path.symlink_to(path)
    # kernel_details.csv is a loop: the folder is not a readable torch_npu output
    assert _error_line(runner, path.parents[1]).startswith(f"error: {path.parents[1]}: no profiler output found")


def _zip_with(tmp_path, members: dict[str, bytes]):
    target = tmp_path / "profile.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    return target


def test_archive_with_parent_paths(runner, tmp_path):
    target = _zip_with(tmp_path, {"../../evil.csv": b"x"})
    assert _error_line(runner, target) == (
        f"error: {target}: unsafe member path '../../evil.csv' in archive (absolute or '..') — "
        "re-create the archive with relative paths")
    assert not (tmp_path.parent / "evil.csv").exists()


def test_tar_with_link_pointing_out(runner, tmp_path):
    target = tmp_path / "profile.tar.gz"
    with tarfile.open(target, "w:gz") as bundle:
        info = tarfile.TarInfo("run/kernel_details.csv")
        info.type, info.linkname = tarfile.SYMTYPE, "../../../etc/passwd"
        bundle.addfile(info)
    assert _error_line(runner, target) == (
        f"error: {target}: archive member 'run/kernel_details.csv' links outside the archive (../../../etc/passwd) — "
        "re-create the archive without links")


def test_archive_past_the_size_cap(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_MAX_EXTRACT_BYTES", str(1024 * 1024))
    target = _zip_with(tmp_path, {"run/op_summary.csv": b"0" * (2 * 1024 * 1024)})
    assert _error_line(runner, target) == (
        f"error: {target}: archive expands past the 1 MB limit — extract it yourself and point advisor at the folder, "
        "or raise ADVISOR_MAX_EXTRACT_BYTES")


def test_archive_of_a_profile_is_read(runner, tmp_path):
    folder = write_ascend_pt(tmp_path / "src", [kernel("Add", "Add", "AI_VECTOR_CORE", 3.5)])
    target = tmp_path / "run.tar.gz"
    with tarfile.open(target, "w:gz") as bundle:
        bundle.add(folder, arcname=folder.name)
    result = runner.invoke(app, ["profile", str(target), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert f'"path": "{target}/{folder.name}"' in result.stdout and '"device_time_us": 3.5' in result.stdout


def test_two_gigabyte_sparse_file_is_refused_without_reading_it(runner, tmp_path):
    out = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    path = out / "kernel_details.csv"
    subprocess.run(["truncate", "-s", "2G", str(path)], check=True)
    assert path.stat().st_size == 2 * 1024 ** 3
    assert _error_line(runner, out.parent) == (
        f"error: {path}: binary data, not a CSV text file (2.0 GB) — point advisor at the profiler's CSV output")


def test_header_line_without_newline_is_refused(runner, tmp_path, monkeypatch):
    from opprof_advisor.readers import csvfile

    monkeypatch.setattr(csvfile, "MAX_LINE_CHARS", 4096)
    path = tmp_path / "op_summary.csv"
    path.write_text("Op Name,Task Duration(us)," + "x" * 10000)
    assert _error_line(runner, path) == (
        f"error: {path}:1: a line is longer than 4,096 characters; not a profiler CSV — check that the file is the profiler's CSV output")
