"""Chinese output: one gettext catalogue, complete, compiled, and used by every command; English unchanged."""

from __future__ import annotations

import ast
import json
import re
import string
import sys
from importlib import resources
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.core.i18n import M_, lang_from_env, localize, set_lang

ROOT = Path(__file__).resolve().parent.parent
YOLO = str(ROOT / "data" / "examples" / "yolov8_torch_npu")
CJK = re.compile(r"[\u4e00-\u9fff]")

sys.path.insert(0, str(ROOT / "data"))
make_catalog = pytest.importorskip("make_catalog")


def _catalog():
    pytest.importorskip("babel")
    return make_catalog.merge(make_catalog.read_po(), make_catalog.extract_messages())


def test_every_message_has_chinese_and_the_shipped_mo_is_compiled_from_it():
    catalog = _catalog()
    assert len(catalog) > 250
    assert make_catalog.untranslated(catalog) == []
    assert make_catalog.MO.read_bytes() == make_catalog.compiled(catalog), "run python data/make_catalog.py"


def _fields(text: str) -> set[str]:
    return {name for _, name, spec, _ in string.Formatter().parse(text) if name is not None}


def test_a_translation_keeps_every_placeholder_of_its_message():
    wrong = [(m.id, m.string) for m in _catalog() if m.id and _fields(m.id) != _fields(m.string)]
    assert wrong == []


def test_the_catalogue_is_package_data():
    mo = resources.files("opprof_advisor").joinpath("locale/zh/LC_MESSAGES/opprof_advisor.mo")
    assert mo.is_file()


def test_no_module_shadows_the_translation_function():
    # `for x, _ in ...` or `**_` in a function that calls _() makes `_` a local: an error in Chinese only.
    bad = []
    for path in (ROOT / "opprof_advisor").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(isinstance(n, ast.ImportFrom) and n.module == "opprof_advisor.core.i18n"
                   and any(a.name == "_" for a in n.names) for n in ast.walk(tree)):
            continue
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = fn.args
                names = [a.arg for a in args.args + args.kwonlyargs + args.posonlyargs]
                names += [a.arg for a in (args.vararg, args.kwarg) if a]
                stores = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == "_" and
                          isinstance(n.ctx, ast.Store)]
                in_comprehensions = sum(1 for c in ast.walk(fn) if isinstance(c, ast.comprehension)
                                        for n in ast.walk(c.target) if isinstance(n, ast.Name) and n.id == "_")
                if "_" in names or len(stores) > in_comprehensions:
                    bad.append(f"{path.name}:{fn.lineno} {fn.name}")
    assert bad == []


@pytest.mark.parametrize("environ, expected", [
    ({}, "en"), ({"LANG": "zh_CN.UTF-8"}, "zh"), ({"LC_ALL": "zh_TW.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
    ({"LC_ALL": "C.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"), ({"ADVISOR_LANG": "en", "LANG": "zh_CN.UTF-8"}, "en"),
    ({"ADVISOR_LANG": "zh"}, "zh"), ({"ADVISOR_LANG": "klingon", "LANG": "zh_CN"}, "zh"),
])
def test_the_language_comes_from_advisor_lang_then_the_locale(environ, expected):
    assert lang_from_env(environ) == expected


def test_a_message_stays_english_data_and_is_said_in_chinese_from_its_template():
    note = M_("cannot judge {what}: {why} ({remedy})", what="block dim", why="Block Dim / Block Num is not recorded",
              remedy=M_("collect with {switch}", switch="profiler_level=Level1"))
    assert note == "cannot judge block dim: Block Dim / Block Num is not recorded (collect with profiler_level=Level1)"
    assert note.startswith("cannot judge")  # the core's checks on the text still hold
    set_lang("zh")
    assert localize(note) == "无法判断 Block Dim：未采集 Block Dim / Block Num（采集方式：profiler_level=Level1）"
    assert localize("no sourced figure") == "无可引用的数据"
    assert localize("text the catalogue does not hold") == "text the catalogue does not hold"


def test_suggest_in_chinese_prints_the_table_notes_and_advice_in_chinese(runner):
    result = runner.invoke(app, ["suggest", "--profile", YOLO, "--lang", "zh"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for words in ("涉及耗时：", "预期收益：", "NonMaxSuppressionV3 在 AI CPU 上执行",
                  "把 NMS（非极大值抑制）从 CPU / AI CPU 挪到 NPU 上",
                  "1. 把逐图或逐框的 NMS 替换为 torch_npu.npu_batch_nms", "其余步骤：advisor show nms-on-npu",
                  "aicpu_fallback（AI CPU 算子回退）", "占迭代 21.9 %", "您的 profile 与 yolov8s-migration 相似",
                  "说明： 无法判断 Block Dim 与核数是否匹配：profile 中没有芯片的 AI Core 核数",
                  "模型估算", "单卡"):
        assert words in out, words
    english = runner.invoke(app, ["suggest", "--profile", YOLO]).stdout
    assert not CJK.search(english.replace("AI CPU", ""))
    assert "   Expected gain: " in english


def test_a_chinese_locale_makes_profile_chinese_and_advisor_lang_en_overrides_it(runner):
    chinese = runner.invoke(app, ["profile", YOLO], env={"LANG": "zh_CN.UTF-8", "COLUMNS": "200"})
    assert chinese.exit_code == 0, chinese.output
    assert "算子类型" in chinese.stdout and "设备耗时 4.87 ms = 计算 4.87 ms" in chinese.stdout
    assert "nms_cpu（NMS 在 CPU 上执行） (占设备耗时 23.6 %): 非极大值抑制（NonMaxSuppressionV3）在 AI CPU 上执行" in chinese.stdout
    english = runner.invoke(app, ["profile", YOLO], env={"LANG": "zh_CN.UTF-8", "ADVISOR_LANG": "en",
                                                         "COLUMNS": "200"})
    assert "op type" in english.stdout and not CJK.search(english.stdout)


@pytest.mark.parametrize("scenario, english, chinese", [
    ("gemm-low-block-dim", "of core slots idle", "MatMulV2 的 Block Dim 为 4，共 24 个 AI 核（1 轮，83% 的核时隙空闲）"),
    ("gemm-low-block-dim", "(busiest aic_cube 0.52)", "MatMulV2 75.2%（最繁忙 aic_cube 0.52）"),  # nested parts
    ("kernel-gemv-imbalance", "balanced blocks would save", "各 block 负载均衡后最多可节省 kernel 耗时的 38%"),
    ("llama2-unfused-attention", "instead of one fused attention kernel", "未使用融合的 Attention 算子"),
    ("vit-fp32-cube", "float32 inputs on the cube unit", "在 Cube 单元上以 float32 输入计算"),
    ("gpt2-allreduce-exposed", "of communication is not overlapped", "82.2 ms 的通信未被计算掩盖 = 迭代的 32.8%"),
    ("mlp-launch-bound", "and wait a median", "648 个 kernel 中有 648 个短于 20 µs（中位数 3.27 µs）"),
    ("detector-dynamic-shape", "online operator compilation", "3 次算子在线编译调用耗时 6.00 ms = 迭代的 30.8%"),
])
def test_kernel_symptom_details_are_said_in_chinese_and_stay_english_in_json(runner, scenario, english, chinese):
    profile = str(ROOT / "data" / "bench" / scenario)
    text = runner.invoke(app, ["profile", profile, "--lang", "zh"], env={"COLUMNS": "400"}).stdout
    assert chinese in text and english not in text
    document = runner.invoke(app, ["profile", profile, "--format", "json", "--lang", "zh"]).stdout
    assert english in document and not CJK.search(document.split('"zh"')[0])


def test_the_closest_case_note_is_said_in_chinese(runner):
    profile = str(ROOT / "data" / "bench" / "kernel-scatter-scalar")
    text = runner.invoke(app, ["suggest", "--profile", profile, "--lang", "zh"], env={"COLUMNS": "300"}).stdout
    note = next(line for line in text.splitlines() if "足够相似的案例" in line)  # (the closest case moves as the KB grows)
    assert re.search(r"没有与该 profile 足够相似的案例（最接近的是 [a-z0-9-]+，0\.\d\d：", note), note
    assert "没有共同的问题症状" in note and "no case study" not in text and "no problem symptom" not in text


def test_compare_notes_are_said_in_chinese_and_stay_english_in_json(runner):
    before, after = (str(ROOT / "data" / "examples" / name) for name in ("system_msprof", "matmul_msopprof"))
    text = runner.invoke(app, ["compare", before, after, "--lang", "zh"], env={"COLUMNS": "400"}).stdout
    notes = [line for line in text.splitlines() if line.startswith("说明：")]
    assert "说明： 已消失：Softmax（352 µs，AI Vector）" in text
    assert "只有 优化后 是单 kernel 的 msOpProf profile" in text
    assert len(notes) >= 4 and not [line for line in notes if re.search(r"\b(?:the|of|is|cannot|vanished)\b", line)]
    document = json.loads(runner.invoke(app, ["compare", before, after, "--format", "json", "--lang", "zh"]).stdout)
    assert "vanished: Softmax (352 µs, AI Vector)" in " ".join(document["notes"])
    assert not CJK.search(json.dumps(document, ensure_ascii=False))


def test_the_simulator_s_lower_bound_reason_is_said_in_chinese_in_compare(runner, real_profiles):
    runs = real_profiles / "catlass-msprof-op"
    before, after = str(runs / "device" / "02_fp32_cm_gemv_aiv"), str(runs / "simulator" / "01_fp16_cm_gemv_aiv")
    text = runner.invoke(app, ["compare", before, after, "--lang", "zh"], env={"COLUMNS": "400"}).stdout
    assert "只是下限：simulator/ 中只有 2 个 AI Core 目录（core0, core1）" in text and "holds 2 AI Core" not in text


def test_the_markdown_report_says_why_each_row_is_evidence_in_chinese(runner):
    text = runner.invoke(app, ["suggest", "--profile", YOLO, "--format", "markdown", "--lang", "zh"]).stdout
    evidence = [line for line in text.splitlines() if line.startswith("- 证据：")]
    assert any("— NMS 在 ai_cpu 上执行，1 次; aicpu_fallback：" in line and "; nms_cpu：非极大值抑制" in line
               for line in evidence)
    assert not [line for line in evidence if re.search(r"\b(?:on ai_cpu|launch|runs on|of compute time)\b", line)]


def test_the_json_document_does_not_depend_on_the_language(runner):
    zh = runner.invoke(app, ["suggest", "--profile", YOLO, "--format", "json", "--lang", "zh"]).stdout
    en = runner.invoke(app, ["suggest", "--profile", YOLO, "--format", "json"]).stdout
    assert zh == en
    assert json.loads(en)["suggestions"][0]["remedies"][0]["zh"]["title"].startswith("把 NMS")


def test_errors_are_one_chinese_line(runner):
    result = runner.invoke(app, ["show", "no-such-entry", "--lang", "zh"])
    assert result.exit_code == 1
    assert result.stderr.startswith("错误： 知识库中没有 id 为 'no-such-entry' 的条目 — ")


def test_the_html_report_says_it_is_chinese(runner, tmp_path):
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["--lang", "zh", "suggest", "--profile", YOLO, "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in page and "数据无法判断的内容" in page and "把 NMS（非极大值抑制）" in page
    runner.invoke(app, ["suggest", "--profile", YOLO, "--format", "html", "-o", str(out)])
    assert '<html lang="en">' in out.read_text(encoding="utf-8")


def test_every_command_takes_lang(runner):
    from typer.main import get_command

    group = get_command(app)
    missing = []
    for name, command in group.commands.items():
        for sub in (command.commands.values() if hasattr(command, "commands") else [command]):
            if not any("--lang" in p.opts for p in sub.params):
                missing.append(f"{name} {sub.name}")
    assert missing == []
