"""Hostile KB entries: YAML aliases ("billion laughs"), oversized entries. Refused at once, with the file and line."""

from __future__ import annotations

import time

import pytest

from hostile import advisor, assert_one_error_line

TAIL = "evidence: D\nsources: [https://example.com]\napplies_to: {producer: [run]}\n---\n\n## When\n\nx\n\n## How\n\nx\n\n## Caveats\n\nx\n\n" \
       "## Sources\n\n- https://example.com — x\n"


def laughs(levels: int = 9) -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    previous = "a"
    for name in "bcdefghijklmnop"[:levels]:
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        previous = name
    return text, previous


@pytest.mark.parametrize("variant", ["top-level keys", "inside tags", "alias only"])
def test_yaml_aliases_are_refused_at_once_with_the_line(tmp_path, variant):
    anchors, last = laughs()
    if variant == "top-level keys":
        front = f"kind: tip\ntitle: x\nsummary: x\n{anchors}tags: *{last}\n"
        line, what = 5, "anchor &a"
    elif variant == "inside tags":
        front = "kind: tip\ntitle: x\nsummary: x\ntags:\n" + "".join(f"  - {row}\n" for row in anchors.splitlines())
        line, what = 6, "anchor &a"
    else:
        front = "kind: tip\ntitle: x\nsummary: *nothing\n"
        line, what = 4, "alias *nothing"
    path = tmp_path / "laughs.md"
    path.write_text("---\n" + front + TAIL, encoding="utf-8")
    started = time.monotonic()
    checked = advisor("kb", "check", path)
    assert checked.code == 1
    assert checked.stdout == f"{path}:{line}: YAML {what} is not allowed in front matter: write the value out\n"
    assert_one_error_line(advisor("add", path), f"{path}:{line}", f"YAML {what} is not allowed")
    assert time.monotonic() - started < 10


def test_a_copied_laughs_file_in_the_user_kb_does_not_hang_the_index(advisor_home):
    anchors, last = laughs()
    folder = advisor_home / "kb" / "tips"
    folder.mkdir(parents=True)
    (folder / "laughs.md").write_text(f"---\nkind: tip\ntitle: x\nsummary: x\n{anchors}tags: *{last}\n" + TAIL,
                                      encoding="utf-8")
    run = advisor("search", "nms")
    assert run.code == 0 and "nms-on-npu" in run.stdout
    assert "1 knowledge-base problem(s) in 1 file(s)" in run.stderr


def test_an_oversized_entry_is_refused_and_not_indexed(tmp_path, advisor_home):
    path = tmp_path / "big.md"
    path.write_text("---\nkind: tip\ntitle: big\nsummary: s\n" + TAIL + "lorem ipsum " * 100_000, encoding="utf-8")
    size = path.stat().st_size
    message = f"{path}:1: entry file is {size:,} bytes, over the 1,048,576-byte limit"
    assert advisor("kb", "check", path).stdout.startswith(message)
    assert_one_error_line(advisor("add", path), message)
    assert not (advisor_home / "kb").exists()


def test_oversized_front_matter_is_refused_before_parsing(tmp_path):
    path = tmp_path / "wide.md"
    path.write_text("---\nkind: tip\ntitle: wide\nsummary: s\ntags: [" + ", ".join(["tag"] * 70_000) + "]\n" + TAIL,
                    encoding="utf-8")
    checked = advisor("kb", "check", path)
    assert checked.code == 1 and "over the 262,144-byte limit: keep facts short, prose in the body" in checked.stdout


def test_a_peaks_file_with_aliases_is_refused_with_its_line(tmp_path, advisor_home):
    from conftest import ROOT

    anchors, last = laughs()
    peaks = advisor_home / "peaks.yaml"  # read by every command that builds a profile
    peaks.write_text(f"{anchors}aic: *{last}\n", encoding="utf-8")
    example = ROOT / "data" / "examples" / "yolov8_torch_npu"
    started = time.monotonic()
    for args in (("profile", example), ("roofline", example, "--peaks", peaks)):
        assert_one_error_line(advisor(*args), f"{peaks}:1", "YAML anchor &a is not allowed: write the value out")
    assert time.monotonic() - started < 15


def test_a_fifo_given_as_an_entry_is_refused_without_waiting(tmp_path):
    import os

    fifo = tmp_path / "entry.md"
    os.mkfifo(fifo)
    checked = advisor("kb", "check", fifo)
    assert (checked.code, checked.stdout) == (1, f"{fifo}:1: not a regular file (a FIFO, device or socket)\n")
    assert_one_error_line(advisor("add", fifo), fifo, "not a regular file")
