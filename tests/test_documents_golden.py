"""The JSON documents only ever grow: every key of the recorded ones keeps its exact value.

``tests/golden/*.json`` hold the ``--format json`` output of suggest, profile, compare, scan and
roofline on the bundled examples. Today's output, with the keys added since left out, must print
byte for byte as recorded: a renamed key, a changed number or a reworded note fails here. When a
change of the ranking or of a reader is meant, rewrite the files and review the diff:

    .venv/bin/python tests/test_documents_golden.py --write
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
EXAMPLES = "data/examples"

#: name -> the command line (paths relative to the checkout, which is the working folder).
COMMANDS: dict[str, list[str]] = {
    **{f"profile-{name}": ["profile", f"{EXAMPLES}/{name}", "--format", "json"]
       for name in ("yolov8_torch_npu", "yolov8_torch_npu_db", "yolov8_torch_npu_nms_on_npu", "matmul_msopprof",
                    "system_msprof")},
    **{f"suggest-{name}": ["suggest", "--profile", f"{EXAMPLES}/{name}", "--format", "json"]
       for name in ("yolov8_torch_npu", "yolov8_torch_npu_nms_on_npu", "matmul_msopprof", "system_msprof")},
    "suggest-system_msprof-explain": ["suggest", "--profile", f"{EXAMPLES}/system_msprof", "--format", "json",
                                      "--explain", "--top", "8"],
    "compare-nms": ["compare", f"{EXAMPLES}/yolov8_torch_npu", f"{EXAMPLES}/yolov8_torch_npu_nms_on_npu",
                    "--format", "json"],
    "compare-matmul": ["compare", f"{EXAMPLES}/matmul_msopprof", f"{EXAMPLES}/matmul_msopprof", "--format", "json"],
    "roofline-matmul_msopprof": ["roofline", f"{EXAMPLES}/matmul_msopprof", "--format", "json"],
    "scan-fixture": ["scan", "tests/scan_fixture_repo", "--format", "json"],
}


def run_command(args: list[str], db: Path) -> str:
    """The stdout of ``advisor ARGS --db DB`` (where the command has --db), run in the checkout."""
    from typer.testing import CliRunner

    from opprof_advisor.cli.app import app

    if args[0] in ("suggest", "scan"):
        args = [*args, "--db", str(db)]
    result = CliRunner(env={"COLUMNS": "200", "TERM": "dumb"}).invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def recorded_keys_only(current, recorded):
    """``current`` without the dict keys ``recorded`` does not have (recursively, list items pairwise)."""
    if isinstance(current, dict) and isinstance(recorded, dict):
        return {key: recorded_keys_only(value, recorded[key]) for key, value in current.items() if key in recorded}
    if isinstance(current, list) and isinstance(recorded, list) and len(current) == len(recorded):
        return [recorded_keys_only(c, r) for c, r in zip(current, recorded)]
    return current


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("golden-index") / "advisor.db"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_document_keeps_every_recorded_key(name, db, monkeypatch):
    import json

    from opprof_advisor.core.terminal import dumps_json

    monkeypatch.chdir(ROOT)
    recorded_text = (GOLDEN / f"{name}.json").read_text(encoding="utf-8")
    current = json.loads(run_command(COMMANDS[name], db))
    assert dumps_json(recorded_keys_only(current, json.loads(recorded_text))) + "\n" == recorded_text


def test_recorded_keys_only_drops_added_keys_and_keeps_changed_values():
    recorded = {"a": 1, "rows": [{"x": 1}, {"x": 2}]}
    assert recorded_keys_only({"a": 1, "new": 3, "rows": [{"x": 1, "y": 0}, {"x": 2}]}, recorded) == recorded
    assert recorded_keys_only({"a": 2, "rows": [{"x": 1}]}, recorded) == {"a": 2, "rows": [{"x": 1}]}


def write_golden() -> None:
    """Record today's documents (run from anywhere; the commands run in the checkout)."""
    import os
    import tempfile

    os.chdir(ROOT)
    with tempfile.TemporaryDirectory() as home:
        os.environ["ADVISOR_HOME"] = home
        os.environ.pop("ADVISOR_DB", None)
        GOLDEN.mkdir(exist_ok=True)
        for name, args in sorted(COMMANDS.items()):
            (GOLDEN / f"{name}.json").write_text(run_command(args, Path(home) / "advisor.db"), encoding="utf-8")
            print(f"wrote tests/golden/{name}.json")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    write_golden()
