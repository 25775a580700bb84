from opprof_advisor import __version__
from opprof_advisor.cli.app import app
from opprof_advisor.core.operators import canonical_family


def test_version(runner):
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"opprof-advisor {__version__}"


def test_no_args_shows_help(runner):
    result = runner.invoke(app, [])
    assert "Usage" in result.output


def test_unknown_command_is_a_usage_error(runner):
    result = runner.invoke(app, ["no-such-command"])
    assert result.exit_code == 2


def test_operator_aliases_map_profiler_types_to_families():
    assert canonical_family("NonMaxSuppressionV3") == "NMS"
    assert canonical_family("BatchMultiClassNMS") == "NMS"
    assert canonical_family("BatchMatMulV2") == "MatMul"
    assert canonical_family("hcom_allReduce__586_0_1") == "AllReduce"
    assert canonical_family("FlashAttentionScoreGrad") == "FlashAttention"
    assert canonical_family("SomethingUnrelated") is None
