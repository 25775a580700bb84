"""`kb check` accepts only sources a user can open, and warns on links that follow a moving branch."""

from __future__ import annotations

import json

import pytest
from kb_helpers import GUIDE_FIELDS, write_entry

from opprof_advisor import kb

from opprof_advisor.kb import checks as kb_checks
from opprof_advisor.kb import source_rules
from opprof_advisor.cli.app import app


@pytest.mark.parametrize("source, kind", [
    ("https://www.hiascend.com/document/detail/zh/Pytorch/700/ptmoddevg/x.html", "url"),
    ("Ascend/MindSpeed@028de58c:docs/zh/features/flash-attention.md", "repo"),
    ("hicann/catlass@43c7496c58bf478d4df814f8578b2c5a15b92870:docs/catlass_optimize_guidance.md", "repo"),
    ("msprof-analyze==26.2.0:msprof_analyze/advisor/rules/en/packet.yaml", "package"),
    ("kb/sources/README.md#design-card", "page"),
    ("shared/seeds/000_4c1ddc5ccf4e4a40.txt", None),
    ("wheel:msprof_analyze/advisor/rules/en/packet.yaml", None),
    ("hiascend:CANN/850/atlasatcparam_16_0038.html", None),
    ("Ascend/MindSpeed@master:docs/zh/features/flash-attention.md", None),  # a branch is not a commit
    ("msprof-analyze:msprof_analyze/advisor/rules/en/packet.yaml", None),  # no version
    ("the MindSpeed docs", None),
])
def test_sources_are_classified_by_how_a_user_opens_them(source, kind):
    assert source_rules.classify_source(source) == kind


def test_an_unopenable_source_is_a_problem_on_its_line(tmp_path):
    path = write_entry(tmp_path, "x", sources=["https://example.org/guide", "shared/seeds/000.txt"])
    problems = [str(p) for p in kb.check_paths([path])]
    assert problems == [f"{path}:6: source 'shared/seeds/000.txt' cannot be opened by a user: write an http(s) URL, "
                        "owner/repo@<commit>:<path>, package==version:<path in the wheel>, or "
                        "kb/sources/README.md#<anchor>"]


def test_a_link_to_the_sources_page_needs_an_existing_anchor(tmp_path):
    good = write_entry(tmp_path, "good", sources=["kb/sources/README.md#design-card-operator-recipe-estimates"])
    bad = write_entry(tmp_path, "bad", sources=["kb/sources/README.md#no-such-heading"])
    assert kb.check_paths([good]) == []
    [problem] = kb.check_paths([bad])
    assert "has no heading with the anchor #no-such-heading" in problem.message


def test_the_sources_page_is_neither_loaded_nor_indexed():
    from opprof_advisor.core.paths import builtin_kb_dir
    from opprof_advisor.kb.manifest import KbSource, scan_files

    page = builtin_kb_dir() / "sources" / "README.md"
    assert page.is_file()
    assert page not in kb.find_kb_files([builtin_kb_dir()])
    assert page not in [f.path for f in scan_files([KbSource(builtin_kb_dir(), "builtin")])]


@pytest.mark.parametrize("link, unpinned", [
    ("https://gitcode.com/Ascend/msprof/blob/master/docs/zh/best_practices/x.md", True),
    ("https://github.com/Ascend/pytorch/tree/main/torch_npu", True),
    ("https://gitcode.com/Ascend/msprof-analyze/blob/6441a45ee8620dfba3291d223f61b64913456187/docs/zh/x.md", False),
    ("https://github.com/ultralytics/ultralytics/pull/25963", False),
    ("https://www.hiascend.com/document/detail/zh/Pytorch/700/x.html", False),
])
def test_moving_branch_links_are_recognised(link, unpinned):
    assert kb_checks.unpinned_source(link) is unpinned


def test_kb_check_warns_on_unpinned_links_but_passes(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    link = "https://gitcode.com/Ascend/msprof/blob/master/docs/zh/best_practices/x.md"
    path = write_entry(tmp_path / "kb", "x", sources=[link], **GUIDE_FIELDS)
    result = runner.invoke(app, ["kb", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert f"{path}:6: warning: source {link!r} follows a moving branch" in result.stderr
    assert result.stderr.strip().endswith("1 file(s) checked: no problems, 1 warning(s)")
    document = json.loads(runner.invoke(app, ["kb", "check", str(path), "--format", "json"]).stdout)
    assert document["problems"] == [] and document["warnings"][0]["line"] == 6


def test_shipped_kb_cites_only_openable_pinned_sources():
    from opprof_advisor.core.paths import builtin_kb_dir

    files = kb.find_kb_files([builtin_kb_dir()])
    assert [str(p) for p in kb.check_paths(files)] == []
    assert [str(w) for w in kb_checks.check_warnings(files)] == []
