"""`advisor mcp` end to end with the official SDK's own stdio client: initialize, list tools, call them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp.server.mcpserver")
anyio = pytest.importorskip("anyio")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
YOLO = str(ROOT / "data" / "examples" / "yolov8_torch_npu")


async def _session_calls(home: Path, calls: list[tuple[str, dict]]):
    # The server is the real console command path: `python -m opprof_advisor mcp`.
    params = StdioServerParameters(command=sys.executable, args=["-m", "opprof_advisor", "mcp"],
                                   env={"ADVISOR_HOME": str(home), "PATH": os.environ.get("PATH", "")}, cwd=str(ROOT))
    async with stdio_client(params) as streams:
        async with ClientSession(*streams) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            results = [await _called(session, name, arguments) for name, arguments in calls]
    return init, tools, results


async def _called(session: ClientSession, name: str, arguments: dict):
    """The tool's result, or the MCPError that refused the call."""
    try:
        return await session.call_tool(name, arguments)
    except MCPError as exc:
        return exc


def test_an_mcp_client_lists_the_tools_and_gets_the_nms_advice(advisor_home):
    init, tools, (suggest, search, missing, bad_profile) = anyio.run(_session_calls, advisor_home, [
        ("suggest", {"profile": YOLO, "top": 3}),
        ("search", {"query": "非极大值抑制"}),
        ("show", {"entry_id": "no-such-entry"}),
        ("profile", {"path": str(ROOT / "no-such-folder")}),
    ])
    assert init.server_info.name == "opprof-advisor"
    names = {tool.name for tool in tools.tools}
    assert names == {"profile", "suggest", "search", "show", "compare", "roofline", "scan"}
    schema = next(t for t in tools.tools if t.name == "suggest").input_schema
    assert schema["required"] == ["profile"] and {"top", "model", "kind", "explain", "db"} <= set(schema["properties"])

    assert not suggest.is_error
    document = suggest.structured_content
    assert document["schema"] == "opprof-advisor/suggest/2"
    assert [r["id"] for r in document["suggestions"][0]["remedies"]] == ["nms-on-npu", "nms-single-cpu-call"]
    summary = suggest.content[0].text
    assert "Top: The AI CPU runs NonMaxSuppressionV3" in summary
    assert "lead remedy: Run NMS (non-maximum suppression) on the NPU" in summary and "(nms-on-npu, recipe" in summary
    assert "1.15 ms at stake, 21.9 % of the step" in summary and "expected gain 10.9–19.7 %" in summary

    assert search.structured_content["results"][0]["id"] == "nms-on-npu"

    assert missing.is_error
    assert missing.content[0].text.endswith("error: no knowledge-base entry with id 'no-such-entry' — see `advisor kb list`")
    assert bad_profile.is_error and "no-such-folder" in bad_profile.content[0].text


def test_every_tool_takes_a_lang_for_its_summary_and_errors_and_the_document_stays_the_same(advisor_home):
    _init, tools, (chinese, english, missing, bad_lang) = anyio.run(_session_calls, advisor_home, [
        ("suggest", {"profile": YOLO, "top": 3, "lang": "zh"}),
        ("suggest", {"profile": YOLO, "top": 3}),
        ("show", {"entry_id": "no-such-entry", "lang": "zh"}),
        ("search", {"query": "nms", "lang": "fr"}),
    ])
    assert all("lang" in tool.input_schema["properties"] for tool in tools.tools)
    assert chinese.structured_content == english.structured_content  # the JSON is data, in no language
    summary = chinese.content[0].text
    assert "首选办法：把 NMS（非极大值抑制）从 CPU / AI CPU 挪到 NPU 上（nms-on-npu" in summary, summary
    assert "涉及 1.15 ms" in summary
    assert english.content[0].text.count("lead remedy: Run NMS") == 1  # a zh call leaves the next call in English
    assert missing.is_error and "知识库中没有 id 为 'no-such-entry' 的条目" in missing.content[0].text
    assert isinstance(bad_lang, MCPError) and bad_lang.code == -32602  # an argument refused before any work
    assert bad_lang.message == "error: search: argument lang: 'fr' is not one of en, zh"
    assert bad_lang.data == {"param": "arguments", "tool": "search", "argument": "lang"}


def test_an_sdk_without_the_low_level_server_is_refused_in_one_line_naming_its_version(runner, monkeypatch):
    """`advisor mcp` runs the SDK's low-level server on its own stdin through a private attribute (mcp 2.3 has no
    public way): an SDK that moved it is one line naming the version, before anything starts."""
    from importlib.metadata import version

    from mcp.server.mcpserver import MCPServer

    from opprof_advisor.cli.app import app
    from opprof_advisor.mcp import wire

    class Moved(MCPServer):  # an SDK whose MCPServer keeps its low-level server under another name
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._elsewhere = self.__dict__.pop("_lowlevel_server")

        @property
        def middleware(self):
            return self._elsewhere.middleware

    monkeypatch.setattr(wire, "MCPServer", Moved)
    result = runner.invoke(app, ["mcp"])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: the mcp SDK {version('mcp')} has no MCPServer._lowlevel_server, which `advisor mcp` runs on — "
        "install the mcp version opprof-advisor supports: pip install 'opprof-advisor[mcp]'"]
    assert result.stdout == ""
