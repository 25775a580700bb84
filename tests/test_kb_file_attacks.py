"""KB files under attack (issue 30): links, loops, files that vanish mid-walk, odd index paths, deep markdown.

Never delete or replace what advisor did not create (a link's target, a device, a FIFO, a folder at the
index path); tolerate KB files that vanish or change while they are listed; say why an entry is refused.
Every case ends with exit 0 or one error line naming the file, never a traceback or an internal error.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hostile import Snapshot, advisor, assert_one_error_line
from kb_helpers import GUIDE_FIELDS, body_for, write_entry
from opprof_advisor.kb import index_sync, manifest, store
from opprof_advisor.kb.user_files import _read_copies, _restore_copies


def assert_clean(run, code: int = 0) -> None:
    assert run.code == code, run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr[-2000:]


# ---------------------------------------------------------------------------------------------
# `advisor remove` never deletes what a link points to
# ---------------------------------------------------------------------------------------------


def test_removing_an_entry_that_is_a_link_removes_the_link_never_the_file_it_points_to(advisor_home, tmp_path):
    outside = write_entry(tmp_path / "elsewhere", "linked-entry", **GUIDE_FIELDS)
    link = advisor_home / "kb" / "recipes" / "linked-entry.md"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    before = outside.read_bytes()
    run = advisor("remove", "linked-entry")
    assert_clean(run)
    assert run.stdout == f"removed linked-entry (recipe) from your KB: {link}\n"
    assert not os.path.lexists(link) and outside.read_bytes() == before
    assert advisor("show", "linked-entry").code == 1


def test_a_failed_remove_puts_a_linked_entry_back_as_the_link(advisor_home, tmp_path):
    outside = write_entry(tmp_path / "elsewhere", "linked-entry", **GUIDE_FIELDS)
    link = advisor_home / "kb" / "recipes" / "linked-entry.md"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    previous = _read_copies(advisor_home / "kb", "linked-entry", link)
    link.unlink()
    _restore_copies(previous, link)
    assert link.is_symlink() and os.readlink(link) == str(outside) and outside.is_file()


def test_an_entry_in_a_kind_folder_linked_from_outside_the_kb_is_never_deleted(advisor_home, tmp_path):
    outside = write_entry(tmp_path / "notes", "outside-entry", **GUIDE_FIELDS)
    (advisor_home / "kb").mkdir()
    (advisor_home / "kb" / "recipes").symlink_to(outside.parent, target_is_directory=True)
    assert advisor("show", "outside-entry").code == 0  # it is indexed: read through the link
    before = outside.read_bytes()
    assert_one_error_line(advisor("remove", "outside-entry"), outside, "is outside your KB folder")
    assert outside.read_bytes() == before


# ---------------------------------------------------------------------------------------------
# The index path: only a regular file advisor wrote is ever replaced
# ---------------------------------------------------------------------------------------------


def _odd_index_path(kind: str, folder: Path) -> tuple[Path, str]:
    target = folder / "index.sqlite"
    if kind == "fifo":
        os.mkfifo(target)
        return target, "is not a regular file (a device, FIFO or socket); advisor never replaces one"
    if kind == "device":
        try:
            os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # a /dev/null of our own, harmless if replaced
        except (PermissionError, OSError):
            pytest.skip("creating a device node needs privileges")
        return target, "is not a regular file (a device, FIFO or socket); advisor never replaces one"
    if kind == "folder":
        target.mkdir()
        return target, "is a folder, not an index file"
    if kind == "link to a file":
        (folder / "precious.txt").write_text("not an index\n")
        target.symlink_to(folder / "precious.txt")
        return target, "is a symbolic link (to "
    target.symlink_to(folder / "nowhere" / "index.sqlite")
    return target, "is a symbolic link (to "


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "link to a file", "dangling link"])
def test_an_index_path_that_is_not_a_regular_file_is_refused_and_left_as_it_is(advisor_home, tmp_path, kind):
    place = tmp_path / "place"
    place.mkdir()
    target, message = _odd_index_path(kind, place)
    entry = write_entry(tmp_path / "new", "new-entry", **GUIDE_FIELDS)
    snapshot = Snapshot(tmp_path, advisor_home)
    for args in (("search", "nms"), ("kb", "build", "--rebuild"), ("add", entry), ("remove", "new-entry")):
        assert_one_error_line(advisor(*args, env={"ADVISOR_DB": str(target)}), target, message)
    assert snapshot.changes() == {}  # not replaced, no lock file beside it, nothing added to the KB


def test_a_link_at_the_lock_path_is_never_followed(advisor_home, tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("mine\n")
    (advisor_home / "index.sqlite.lock").symlink_to(precious)
    env = {"ADVISOR_DB": str(advisor_home / "index.sqlite")}
    assert_one_error_line(advisor("kb", "build", env=env), advisor_home / "index.sqlite.lock",
                          "cannot create the lock file: it is a symbolic link, which advisor never follows")
    assert precious.read_text() == "mine\n"


@pytest.mark.parametrize("suffix", ["-journal", "-wal"])
def test_a_fifo_or_link_as_the_index_journal_is_refused_without_waiting(advisor_home, tmp_path, suffix):
    db = advisor_home / "index.sqlite"
    env = {"ADVISOR_DB": str(db)}
    assert_clean(advisor("kb", "build", env=env))
    side = db.with_name(db.name + suffix)
    os.mkfifo(side)
    message = f"{side.name} beside the index is not a regular file (a FIFO, device, folder or link)"
    for args in (("search", "nms"), ("kb", "build", "--rebuild")):
        assert_one_error_line(advisor(*args, env=env), db, message)
    side.unlink()
    precious = tmp_path / "precious"
    precious.write_bytes(b"x" * 4096)
    side.symlink_to(precious)  # rolled back into the index, a link's target would be read as its journal
    assert_one_error_line(advisor("kb", "build", "--rebuild", env=env), db, message)
    assert precious.read_bytes() == b"x" * 4096


def test_over_long_kb_paths_are_one_line_naming_them(advisor_home, tmp_path):
    long_name = tmp_path / ("x" * 300 + ".md")
    long_path = tmp_path.joinpath(*["d" * 200] * 25, "x.md")
    for path in (long_name, long_path):
        assert_one_error_line(advisor("add", path), path, "cannot read: File name too long")
        assert_one_error_line(advisor("kb", "check", path), path, "no such file or folder")
        assert_one_error_line(advisor("search", "nms", "--db", path), path, "cannot use this index path: File name too long")
    assert_one_error_line(advisor("search", "nms", env={"ADVISOR_DB": str(long_name)}), long_name,
                          "ADVISOR_DB cannot be used: a name in it is 303 bytes long, over the 255 bytes")
    assert_one_error_line(advisor("kb", "list", env={"ADVISOR_HOME": str(long_path.parent)}), long_path.parent,
                          f"ADVISOR_HOME cannot be used: the path is {len(str(long_path.parent)):,} bytes long, over the "
                          "4,095 bytes")


# ---------------------------------------------------------------------------------------------
# Walking the KB folders: loops, vanishing files, FIFOs
# ---------------------------------------------------------------------------------------------


def test_a_link_loop_in_a_kind_folder_is_walked_once(advisor_home):
    entry = write_entry(advisor_home / "kb", "looped-entry", **GUIDE_FIELDS)
    (entry.parent / "again").symlink_to(".", target_is_directory=True)  # a link back to its own folder
    (entry.parent / "a").symlink_to("b")  # two links to each other: too many levels of links
    (entry.parent / "b").symlink_to("a")
    found = manifest.scan_files([manifest.KbSource(advisor_home / "kb", "user")])
    assert [f.rel for f in found] == ["recipes/looped-entry.md"]
    search = advisor("search", "looped", "--format", "json")
    assert_clean(search)
    assert search.stdout.count('"id": "looped-entry"') == 1
    assert_clean(advisor("kb", "list"))
    check = advisor("kb", "check", entry.parent)
    assert_clean(check)
    assert "1 file(s) checked: no problems" in check.stderr
    looping = advisor("kb", "check", entry.parent / "a")
    assert_clean(looping, code=1)
    assert looping.stdout == f"{entry.parent / 'a'}:1: cannot read: Too many levels of symbolic links\n"


def test_a_kb_folder_that_is_a_link_loop_is_an_empty_kb(advisor_home, tmp_path):
    (advisor_home / "kb").symlink_to(advisor_home / "kb2")
    (advisor_home / "kb2").symlink_to(advisor_home / "kb")
    assert_clean(advisor("search", "nms"))
    assert_clean(advisor("kb", "list"))
    entry = write_entry(tmp_path, "new-entry", **GUIDE_FIELDS)
    assert_one_error_line(advisor("add", entry), "cannot copy the entry into the user KB: Too many levels of symbolic "
                                                 "links")


def _user_kb(folder: Path, count: int) -> list[Path]:
    return [write_entry(folder, f"entry-{n}", **GUIDE_FIELDS) for n in range(count)]


def test_kb_files_that_vanish_while_the_index_is_built_are_left_out(advisor_home, tmp_path, monkeypatch):
    kb = tmp_path / "kb"
    files = _user_kb(kb, 6)
    db = tmp_path / "index.sqlite"
    real_parse = index_sync.parse_files

    def parse_after_some_vanished(listed):
        for f in listed:
            if f.path.startswith(str(kb)) and f.path.endswith(("0.md", "2.md")):
                os.unlink(f.path)  # listed, then deleted by another process before it is read
        return real_parse(listed)

    monkeypatch.setattr(index_sync, "parse_files", parse_after_some_vanished)
    index = store.build_index(db, kb_dirs=[kb], rebuild=True)
    try:
        assert sorted(index.ids()) == ["entry-1", "entry-3", "entry-4", "entry-5"] and index.problems == []
    finally:
        index.close()
    monkeypatch.setattr(index_sync, "parse_files", real_parse)
    real_scan = manifest.scan_files

    def scan_then_vanish(sources, folders=None):
        listed = real_scan(sources, folders)
        files[1].unlink()  # gone between the listing and the digest of a file the index knows
        return listed

    monkeypatch.setattr("opprof_advisor.kb.index_build.scan_files", scan_then_vanish)
    index = store.build_index(db, kb_dirs=[kb])
    try:
        assert sorted(index.ids()) == ["entry-3", "entry-4", "entry-5"] and index.problems == []
    finally:
        index.close()


def test_a_fifo_put_in_place_of_a_kb_file_is_never_waited_on(tmp_path):
    fifo = tmp_path / "entry.md"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert index_sync._read(str(fifo), 100) == "not a regular file (a FIFO, device or socket)"
    listed = manifest.SourceFile(str(fifo), "entry.md", 0, "user", 100, 0)
    assert manifest.file_digests([listed]) == {str(fifo): manifest.UNREADABLE}
    assert time.monotonic() - started < 5


CHURN = """
import os, sys, time
kb, end = sys.argv[1], time.time() + float(sys.argv[2])
text = open(sys.argv[3], encoding="utf-8").read()
i = 0
while time.time() < end:
    i += 1
    folder = os.path.join(kb, "recipes", "d%d" % (i % 3))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "churn-%d.md" % i), "w", encoding="utf-8") as out:
        out.write(text.replace("churn-template", "churn-%d" % i))
    gone = os.path.join(kb, "recipes", "d%d" % ((i + 1) % 3))
    for name in os.listdir(gone) if os.path.isdir(gone) else ():
        os.unlink(os.path.join(gone, name))
"""


def test_searches_adds_and_rebuilds_hold_while_kb_files_come_and_go(advisor_home, tmp_path):
    template = write_entry(tmp_path / "template", "churn-template", **GUIDE_FIELDS)
    kb = advisor_home / "kb"
    _user_kb(kb, 2)
    assert_clean(advisor("kb", "build"))
    seconds = 8
    churn = subprocess.Popen([sys.executable, "-c", CHURN, str(kb), str(seconds), str(template)])
    commands = [("search", "entry"), ("kb", "build", "--rebuild"), ("kb", "list"), ("add", "{entry}", "--replace")]
    ended = time.monotonic() + seconds
    runs = []
    try:
        while time.monotonic() < ended:
            batch = []
            for number, command in enumerate(commands):
                entry = write_entry(tmp_path / f"adds{number}", f"added-{len(runs)}-{number}", **GUIDE_FIELDS)
                args = [str(entry) if part == "{entry}" else part for part in command]
                batch.append(subprocess.Popen([sys.executable, "-m", "opprof_advisor", *args], stdout=subprocess.DEVNULL,
                                              stderr=subprocess.PIPE, text=True))
            for process in batch:
                runs.append((process.args[3:], process.wait(timeout=60), process.stderr.read()))
                process.stderr.close()
    finally:
        churn.wait(timeout=60)
    assert runs
    failed = [(args, code, err) for args, code, err in runs if code != 0 or "Traceback" in err or "internal error" in err]
    assert failed == []


def test_a_kb_folder_that_cannot_be_listed_is_named_in_a_warning_and_left_out(tmp_path, monkeypatch):
    kb = tmp_path / "kb"
    _user_kb(kb, 1)
    hidden = write_entry(kb / "recipes" / "private", "private-entry", **GUIDE_FIELDS)
    real_scandir = os.scandir

    def scandir(folder):
        if str(folder).startswith(str(hidden.parent.parent)):
            raise PermissionError(13, "Permission denied", str(folder))
        return real_scandir(folder)

    monkeypatch.setattr(manifest.os, "scandir", scandir)
    with pytest.warns(manifest.AdvisorWarning, match="private: cannot list this knowledge-base folder "
                                                     r"\(Permission denied\); its entries are left out"):
        found = manifest.scan_files([manifest.KbSource(kb, "user")])
    assert [f.rel for f in found] == ["recipes/entry-0.md"]
