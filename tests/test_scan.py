"""`advisor scan`: findings at exact file:line, CANN support, pseudo-profile, ranked advice, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import opprof_advisor.scan as scan_module
import opprof_advisor.scan.jobs as scan_jobs
from opprof_advisor.core.cann_support import SupportTableError, load_support_table
from opprof_advisor.cli.app import app
from opprof_advisor.scan import rank_advice, scan_path, scan_profile, scan_to_json

FIXTURE = Path(__file__).parent / "scan_fixture_repo"

# Every finding the fixture repository must yield, read off its source by hand.
EXPECTED = {
    # CPU / AI CPU fallback risks
    ("F.grid_sample", "detector/yolo.py:37"),
    ("boolean-mask indexing", "detector/yolo.py:43"),
    ("torchvision.ops.nms", "detector/yolo.py:45"),  # imported as tv_nms
    ("torchvision.ops.batched_nms", "detector/yolo.py:51"),
    ("torch.nonzero", "detector/yolo.py:53"),
    ("boolean-mask assignment", "detector/yolo.py:54"),
    ("Tensor.index_put_", "detector/yolo.py:55"),
    ("Tensor.double", "transformer/block.py:77"),
    ("torch.float64", "transformer/block.py:77"),
    ("torch.double", "transformer/block.py:77"),
    # custom kernels and CUDA-only libraries
    ("torch.utils.cpp_extension", "ext/fused_op.py:4"),
    ("cpp_extension.load_inline", "ext/fused_op.py:8"),
    (".cu file", "ext/kernels/fused_bias_gelu.cu:4"),
    ("import triton", "ext/triton_add.py:1"),
    ("triton.jit", "ext/triton_add.py:5"),
    ("import flash_attn", "transformer/block.py:9"),
    # fusion candidates
    ("conv+bn+activation", "detector/yolo.py:19"),
    ("conv+bn+activation", "detector/yolo.py:26"),
    ("hand-written RMSNorm", "transformer/block.py:22"),
    ("hand-written RoPE", "transformer/block.py:28"),
    ("hand-written attention", "transformer/block.py:49"),
    ("hand-written SwiGLU", "transformer/block.py:62"),
    ("linear+activation", "transformer/block.py:72"),
    ("torch.optim.AdamW", "train.py:20"),
    # compute-heavy operators
    ("nn.SiLU", "detector/yolo.py:10"),
    ("nn.Conv2d", "detector/yolo.py:14"),
    ("nn.BatchNorm2d", "detector/yolo.py:15"),
    ("nn.Conv2d", "detector/yolo.py:26"),
    ("nn.BatchNorm2d", "detector/yolo.py:27"),
    ("nn.ReLU", "detector/yolo.py:28"),
    ("F.interpolate", "detector/yolo.py:32"),
    ("nn.Linear", "transformer/block.py:39"),
    ("nn.Linear", "transformer/block.py:40"),
    ("@", "transformer/block.py:46"),
    ("F.softmax", "transformer/block.py:49"),
    ("@", "transformer/block.py:50"),
    ("nn.Linear", "transformer/block.py:57"),
    ("nn.Linear", "transformer/block.py:58"),
    ("nn.Linear", "transformer/block.py:59"),
    ("F.silu", "transformer/block.py:62"),
    ("nn.Linear", "transformer/block.py:68"),
    ("nn.Linear", "transformer/block.py:69"),
    ("F.gelu", "transformer/block.py:72"),
    ("F.softmax", "transformer/block.py:73"),
    ("torch.matmul", "transformer/block.py:77"),
    # migration
    ("torch.cuda.set_device", "train.py:16"),
    ("torch.device('cuda')", "train.py:17"),
    (".cuda()", "train.py:18"),
    ("torch.cuda.amp.GradScaler", "train.py:21"),
    ('device="cuda"', "train.py:22"),
    ("torch.cuda.amp.autocast", "train.py:25"),
    # distributed
    ('backend="nccl"', "train.py:14"),
    ("DistributedDataParallel", "train.py:19"),
    ("dist.all_reduce", "train.py:30"),
    ("dist.broadcast", "train.py:31"),
}


@pytest.fixture(scope="module")
def fixture_scan():
    return scan_path(FIXTURE)


def _pairs(result) -> set[tuple[str, str]]:
    return {(f.op, f"{f.path}:{f.line}") for f in result.findings}


def _by(result, op: str, where: str):
    return next(f for f in result.findings if f.op == op and f"{f.path}:{f.line}" == where)


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------------------
# Findings on the fixture repository
# ------------------------------------------------------------------------------------------


def test_fixture_yields_every_expected_finding_at_its_line_and_nothing_else(fixture_scan):
    found = _pairs(fixture_scan)
    assert found - EXPECTED == set(), "unexpected findings"
    assert EXPECTED - found == set(), "missing findings"


def test_numpy_only_helper_and_non_attention_softmax_are_not_flagged(fixture_scan):
    assert not [f for f in fixture_scan.findings if f.path == "utils/metrics.py"]
    # a classifier softmax over a Linear output is not attention; an index tensor from NMS is not a mask
    assert ("hand-written attention", "transformer/block.py:73") not in _pairs(fixture_scan)
    assert ("boolean-mask indexing", "detector/yolo.py:46") not in _pairs(fixture_scan)


def test_fixture_counts_and_the_syntax_error_is_listed_not_fatal(fixture_scan):
    assert fixture_scan.files_scanned == 10
    assert fixture_scan.files_failed == [("utils/broken.py", "line 1: '(' was never closed")]


def test_findings_carry_cann_support_replacement_and_source(fixture_scan):
    nms = _by(fixture_scan, "torchvision.ops.nms", "detector/yolo.py:45")
    assert (nms.category, nms.support, nms.replacement) == ("fallback", "cpu_fallback_risk", "torch_npu.npu_batch_nms")
    assert "ultralytics/ultralytics PR #13269" in nms.source
    attention = _by(fixture_scan, "hand-written attention", "transformer/block.py:49")
    assert (attention.category, attention.replacement) == ("fusion", "torch_npu.npu_fusion_attention")
    cuda = _by(fixture_scan, ".cuda()", "train.py:18")
    assert (cuda.category, cuda.support) == ("migration", "needs_replacement")
    nccl = _by(fixture_scan, 'backend="nccl"', "train.py:14")
    assert nccl.replacement == 'backend="hccl"'
    linear = _by(fixture_scan, "nn.Linear", "transformer/block.py:39")
    assert (linear.support, linear.replacement) == ("native", None)
    assert all(f.source for f in fixture_scan.findings)


def test_import_aliases_are_resolved(tmp_path):
    _write(tmp_path, "m.py", "\n".join([
        "import torch.nn as tnn",
        "from torch.nn import functional as Fn",
        "from torchvision.ops import batched_nms as bnms",
        "import numpy as np",
        "def nms(boxes):",
        "    return boxes",
        "layer = tnn.Conv1d(3, 8, 3)",
        "y = Fn.scaled_dot_product_attention(q, k, v)",
        "keep = bnms(b, s, c, 0.5)",
        "other = nms(b)",
        "z = np.matmul(a, b)",
        "t = torch_like.matmul(a, b)",
    ]) + "\n")
    result = scan_path(tmp_path)
    assert _pairs(result) == {
        ("nn.Conv1d", "m.py:7"),
        ("F.scaled_dot_product_attention", "m.py:8"),
        ("torchvision.ops.batched_nms", "m.py:9"),
        ("Tensor.matmul", "m.py:12"),  # an unresolved receiver in a torch file is taken as a tensor
    }


def test_attention_through_einsum_method_softmax_and_dropout(tmp_path):
    _write(tmp_path, "attn.py", "\n".join([
        "import torch",
        "class A(torch.nn.Module):",
        "    def forward(self, q, k, v):",
        "        w = torch.einsum('bhqd,bhkd->bhqk', q, k) * self.scale",
        "        w = w.softmax(dim=-1)",
        "        w = self.drop(w)",
        "        return torch.einsum('bhqk,bhkd->bhqd', w, v)",
    ]) + "\n")
    pairs = _pairs(scan_path(tmp_path))
    assert ("hand-written attention", "attn.py:5") in pairs
    assert {p for p in pairs if p[0] == "hand-written attention"} == {("hand-written attention", "attn.py:5")}


def test_rmsnorm_division_form_and_mask_variables(tmp_path):
    _write(tmp_path, "norm.py", "\n".join([
        "import torch",
        "def rms(x, eps):",
        "    ms = torch.mean(x * x, dim=-1, keepdim=True)",
        "    return x / torch.sqrt(ms + eps)",
        "def pick(x, scores):",
        "    keep = (scores > 0.5) & (scores < 0.9)",
        "    total = scores.sum()",
        "    return x[keep], x[total]",
    ]) + "\n")
    assert _pairs(scan_path(tmp_path)) == {("hand-written RMSNorm", "norm.py:4"), ("boolean-mask indexing", "norm.py:8")}


# ------------------------------------------------------------------------------------------
# Pseudo-profile and ranked advice
# ------------------------------------------------------------------------------------------


def test_pseudo_profile_weights_and_symptoms(fixture_scan):
    profile = scan_profile(fixture_scan)
    assert profile.format == "static-scan"
    assert sum(row.share for row in profile.op_types) == pytest.approx(1.0)
    rows = {row.op_type: row for row in profile.op_types}
    assert (rows["torchvision.ops.nms"].unit, rows["torchvision.ops.nms"].family) == ("ai_cpu", "NMS")
    assert rows["nn.Linear"].count == 7
    # NMS weighs 8, a Linear 4: one NMS call holds twice the share of one Linear
    assert rows["torchvision.ops.nms"].share == pytest.approx(2 * rows["nn.Linear"].share / 7)
    symptoms = {s.id: s for s in profile.symptoms}
    assert set(symptoms) == {"nms_cpu", "aicpu_fallback", "unfused_attention", "unfused_norm", "double_dtype"}
    assert symptoms["nms_cpu"].share == pytest.approx(rows["torchvision.ops.nms"].share
                                                      + rows["torchvision.ops.batched_nms"].share)
    assert symptoms["unfused_attention"].op_types == ["hand-written attention"]
    assert all(row.time_us == 0.0 for row in profile.op_types)


def test_missing_amp_becomes_fp32_compute_and_a_note(tmp_path):
    _write(tmp_path, "mlp.py", "import torch\nfrom torch import nn\nfc = nn.Linear(8, 8)\n")
    result = scan_path(tmp_path)
    assert {s.id for s in scan_profile(result).symptoms} == {"fp32_compute"}
    assert any(note.startswith("AMP not used") for note in result.notes)


def test_ranked_advice_puts_nms_then_attention_first_without_gains(fixture_scan):
    suggestions, notes = rank_advice(fixture_scan, top=5)
    # The KB answers the NMS finding twice (the NPU kernels, and the one-call CPU fallback when they do not
    # fit); attention advice follows them.
    assert [s["id"] for s in suggestions[:3]] == ["nms-on-npu", "nms-single-cpu-call", "flash-attention"]
    assert [s["rank"] for s in suggestions] == list(range(1, len(suggestions) + 1))
    assert all(s["expected_gain"] is None for s in suggestions)
    nms_evidence = {e["op_type"] for e in suggestions[0]["evidence"]}
    assert nms_evidence == {"torchvision.ops.nms", "torchvision.ops.batched_nms"}
    assert notes == []


def test_a_broken_knowledge_base_leaves_the_findings_and_says_why(runner, monkeypatch):
    from opprof_advisor.kb import store
    from opprof_advisor.core.errors import KnowledgeBaseError

    def broken(*args, **kwargs):
        raise KnowledgeBaseError("index is corrupt", path="advisor.db", hint="run advisor kb rebuild")

    monkeypatch.setattr(store, "open_index", broken)
    result = runner.invoke(app, ["scan", str(FIXTURE), "--format", "json"])
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert len(document["findings"]) == len(EXPECTED) and document["suggestions"] == []
    assert "cannot rank advice: advisor.db: index is corrupt — run advisor kb rebuild" in document["notes"]


# ------------------------------------------------------------------------------------------
# CLI and JSON
# ------------------------------------------------------------------------------------------


def test_cli_json_document_shape(runner):
    result = runner.invoke(app, ["scan", str(FIXTURE), "--format", "json", "--top", "3"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert list(document) == ["schema", "root", "files_scanned", "files_failed", "findings", "suggestions", "notes"]
    assert document["schema"] == "opprof-advisor/scan/1"
    assert document["root"] == str(FIXTURE)
    assert document["files_failed"] == [{"path": "utils/broken.py", "error": "line 1: '(' was never closed"}]
    assert list(document["findings"][0]) == ["category", "op", "path", "line", "support", "replacement", "source"]
    assert len(document["findings"]) == len(EXPECTED)
    assert [s["id"] for s in document["suggestions"]] == ["nms-on-npu", "nms-single-cpu-call", "flash-attention"]
    assert len(document["suggestions"]) == 3
    notes = "\n".join(document["notes"])
    assert "no expected gains from a static scan" in notes
    assert "msprof --output=./msprof_out --task-time=on --ai-core=on --aicpu=on python train.py" in notes
    assert "advisor suggest ./npu_prof" in notes


def test_cli_table_and_markdown(runner):
    table = runner.invoke(app, ["scan", str(FIXTURE), "--top", "0"])
    assert table.exit_code == 0
    assert "detector/yolo.py:45" in table.output and "torch_npu.npu_batch_nms" in table.output
    assert "failed: utils/broken.py: line 1" in table.output
    markdown = runner.invoke(app, ["scan", str(FIXTURE), "--format", "markdown", "--top", "2"])
    assert "## CPU / AI CPU fallback risks" in markdown.output
    row = next(line for line in markdown.output.splitlines() if line.startswith("| `detector/yolo.py:45` |"))
    assert row.startswith("| `detector/yolo.py:45` | `torchvision.ops.nms` | cpu_fallback_risk | torch_npu.npu_batch_nms | [")
    number = row.rsplit("[", 1)[1].split("]")[0]
    assert f"\n{number}. github ultralytics/ultralytics PR #13269" in markdown.output
    assert "1. **Run NMS" in markdown.output


def test_cli_html_report(runner, tmp_path):
    target = tmp_path / "scan.html"
    result = runner.invoke(app, ["scan", str(FIXTURE), "--format", "html", "--output", str(target), "--top", "2"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"wrote {target}"
    page = target.read_text()
    assert "Static scan of" in page and "detector/yolo.py:45" in page and "torch_npu.npu_batch_nms" in page


def test_exclude_globs(tmp_path):
    result = scan_path(FIXTURE, exclude=("ext/*", "utils"))
    assert not [f for f in result.findings if f.path.startswith("ext/")]
    assert result.files_failed == []
    assert result.files_scanned == 5  # detector/ (2), transformer/ (2), train.py
    assert any("paths matching --exclude" in note for note in result.notes)


# ------------------------------------------------------------------------------------------
# Walking: skips, symlinks, bad input
# ------------------------------------------------------------------------------------------


def test_skipped_folders_generated_and_binary_files(tmp_path):
    line = "import torch\nx = torch.nonzero(m)\n"
    _write(tmp_path, "model.py", line)
    for rel in (".git/hooks/h.py", "env/lib/x.py", "node_modules/a/b.py", "__pycache__/c.py", "build/lib/d.py"):
        _write(tmp_path, rel, line)
    _write(tmp_path, "env/pyvenv.cfg", "home = /usr/bin\n")
    _write(tmp_path, "proto_pb2.py", line)
    _write(tmp_path, "gen.py", "# @generated by a tool\n" + line)
    (tmp_path / "blob.py").write_bytes(b"\x00\x01binary")
    result = scan_path(tmp_path)
    assert result.files_scanned == 1
    assert _pairs(result) == {("torch.nonzero", "model.py:2")}
    skipped = next(note for note in result.notes if note.startswith("skipped:"))
    for part in ("1 .git/ folders", "1 virtual environments", "1 node_modules/ folders", "1 __pycache__/ folders",
                 "1 build/ folders", "2 generated files", "1 binary files with a .py name"):
        assert part in skipped


def test_symlink_loops_and_links_out_of_the_tree(tmp_path):
    root = tmp_path / "repo"
    outside = tmp_path / "outside"
    _write(outside, "secret.py", "import torch\ny = x.cuda()\n")
    _write(root, "pkg/model.py", "import torch\ny = x.cuda()\n")
    (root / "pkg" / "again").symlink_to(root / "pkg", target_is_directory=True)  # a loop
    (root / "self").symlink_to(root / "self")  # a link to itself
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "alias.py").symlink_to(root / "pkg" / "model.py")  # the same file twice
    result = scan_path(root)
    assert result.files_scanned == 1
    assert _pairs(result) == {(".cuda()", "pkg/model.py:2")}
    skipped = next(note for note in result.notes if note.startswith("skipped:"))
    assert "1 symlinks pointing outside PATH" in skipped
    assert "1 broken or looping symlinks" in skipped
    assert "1 symlinked folders already visited (loops)" in skipped
    assert "1 files reached twice through symlinks" in skipped


def test_nonexistent_path_is_one_line_error(runner, tmp_path):
    missing = tmp_path / "nope"
    result = runner.invoke(app, ["scan", str(missing)])
    assert result.exit_code == 1
    assert result.stderr == f"error: {missing}: no such file or folder — check the path and try again\n"
    assert "Traceback" not in result.output


def test_a_file_instead_of_a_folder_scans_that_file(runner):
    result = runner.invoke(app, ["scan", str(FIXTURE / "detector" / "yolo.py"), "--format", "json", "--top", "0"])
    document = json.loads(result.stdout)
    assert document["root"] == str(FIXTURE / "detector")
    assert document["files_scanned"] == 1
    assert {(f["op"], f["line"]) for f in document["findings"] if f["category"] == "fallback"} == {
        ("F.grid_sample", 37), ("boolean-mask indexing", 43), ("torchvision.ops.nms", 45),
        ("torchvision.ops.batched_nms", 51), ("torch.nonzero", 53), ("boolean-mask assignment", 54),
        ("Tensor.index_put_", 55),
    }
    assert {f["path"] for f in document["findings"]} == {"yolo.py"}


def test_a_file_that_is_not_python_is_an_error(runner, tmp_path):
    text = _write(tmp_path, "notes.txt", "hello\n")
    result = runner.invoke(app, ["scan", str(text)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {text}: not a Python file or a folder — ")


def test_a_folder_without_python_gives_a_note(runner, tmp_path):
    _write(tmp_path, "README.md", "# nothing here\n")
    result = runner.invoke(app, ["scan", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert (document["files_scanned"], document["findings"], document["suggestions"]) == (0, [], [])
    assert document["notes"][0] == f"no Python files found under {tmp_path} — point advisor scan at the model's source folder"


def test_an_unreadable_file_is_listed_not_fatal(tmp_path, monkeypatch):
    _write(tmp_path, "ok.py", "import torch\ny = torch.nonzero(x)\n")
    locked = _write(tmp_path, "locked.py", "import torch\n")
    if os.geteuid() == 0:
        # root reads through chmod 000, so simulate the permission error the OS would raise
        real_open = open

        def guarded_open(path, *args, **kwargs):
            if str(path) == str(locked):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(scan_module, "open", guarded_open, raising=False)
    else:
        locked.chmod(0)
    try:
        result = scan_path(tmp_path)
    finally:
        locked.chmod(0o644)
    assert result.files_failed == [("locked.py", "cannot read: Permission denied")]
    assert result.files_scanned == 1
    assert _pairs(result) == {("torch.nonzero", "ok.py:2")}


def test_scan_to_json_relative_paths_and_failures(fixture_scan):
    document = scan_to_json(fixture_scan, [])
    assert all(not f["path"].startswith("/") for f in document["findings"])
    assert document["suggestions"] == []


# ------------------------------------------------------------------------------------------
# The support table
# ------------------------------------------------------------------------------------------


def test_support_table_rows_all_cite_sources():
    table = load_support_table()
    assert len(table.rows) >= 45
    assert {row.support for row in table.rows} == {"native", "cpu_fallback_risk", "needs_replacement"}
    for row in table.rows:
        assert row.source_keys and all(key in table.sources for key in row.source_keys), row.op
    assert table.lookup("@").op == "torch.matmul"
    assert table.lookup("torchvision.ops.batched_nms").replacement == "torch_npu.npu_batch_nms"


def test_support_table_row_without_source_is_an_error_with_its_line(tmp_path):
    bad = _write(tmp_path, "t.yaml", "\n".join([
        "sources:",
        "  a: somewhere",
        "ops:",
        "  - op: torch.mm",
        "    family: MatMul",
        "    category: compute",
        "    support: native",
        "    replacement: null",
        "    source: []",
    ]) + "\n")
    with pytest.raises(SupportTableError) as info:
        load_support_table(str(bad))
    assert str(info.value) == f"{bad}:4: row 'torch.mm' has no source — every row must cite a source"


def test_a_file_that_can_hold_no_finding_is_not_parsed(tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text("import torch\nx = torch.nonzero(y)\n")
    (tmp_path / "util.py").write_text("def helper(x):\n    return x + 1\n")
    (tmp_path / "broken_util.py").write_text("def unfinished(x:\n")
    (tmp_path / "broken_model.py").write_text("import torch\ndef unfinished(x:\n")
    parsed = []
    real_parse = scan_jobs.ast.parse
    monkeypatch.setattr(scan_jobs.ast, "parse", lambda source, filename: parsed.append(filename) or real_parse(source))
    result = scan_path(tmp_path)
    assert sorted(parsed) == ["broken_model.py", "model.py"]
    assert result.files_scanned == 3 and [path for path, _ in result.files_failed] == ["broken_model.py"]
    assert [f.op for f in result.findings] == ["torch.nonzero"]


def test_the_prefilter_loses_no_finding(monkeypatch):
    """Analysing every file, whatever it mentions, finds nothing more than the prefiltered scan."""
    import sklearn

    for root in (FIXTURE, Path(sklearn.__file__).parent / "utils"):
        quick = scan_to_json(scan_path(root))
        with monkeypatch.context() as patch:
            patch.setattr(scan_module, "can_hold_finding", lambda source: True)
            full = scan_to_json(scan_path(root))
        assert quick["findings"] == full["findings"] and quick["files_scanned"] >= full["files_scanned"]
