"""Hostile scan paths: a very deep tree, a FIFO or a device instead of a file. Scanned or refused in one line."""

from __future__ import annotations

import os

from hostile import Snapshot, advisor, assert_one_error_line


#: Deeper than the recursive walk survived (about 500 levels: two frames each), shallow enough for
#: pytest's own clean-up, which recurses once per level.
DEPTH = 700


def test_a_very_deep_tree_is_scanned(tmp_path):
    folder = tmp_path / "deep"
    folder.mkdir()
    current = os.open(folder, os.O_RDONLY)
    try:  # relative to a descriptor: the full path is past what one mkdir call takes
        for _ in range(DEPTH):
            os.mkdir("d", dir_fd=current)
            following = os.open("d", os.O_RDONLY, dir_fd=current)
            os.close(current)
            current = following
        handle = os.open("m.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=current)
        os.write(handle, b"import torch\nx = torch.nonzero(y)\n")
        os.close(handle)
    finally:
        os.close(current)
    snapshot = Snapshot(tmp_path)
    run = advisor("scan", folder, "--top", "0", "--format", "json")
    assert run.code == 0, run.stderr[-500:]
    assert '"files_scanned": 1' in run.stdout and '"op": "torch.nonzero"' in run.stdout
    assert snapshot.changes() == {}


def test_a_fifo_or_a_device_is_not_a_python_file(tmp_path):
    fifo = tmp_path / "model.py"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        assert_one_error_line(advisor("scan", path), path, "not a Python file or a folder")
