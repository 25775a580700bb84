"""`advisor mcp` under attack (issue 30): every line answered, inputs bounded, no state shared between calls,
cancel / disconnect / signals / timeout stop the work within a second, strict JSON out.

The server is driven over its real stdio with raw JSON lines (the SDK's client cannot send a malformed one).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp.server.mcpserver")
psutil = pytest.importorskip("psutil")

from opprof_advisor.mcp.server import MAX_ITEMS, MAX_REQUEST_BYTES, MAX_TEXT  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
YOLO = str(ROOT / "data" / "examples" / "yolov8_torch_npu")
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "0"}}}


class Server:
    """`python -m opprof_advisor mcp` on pipes, spoken to line by line."""

    def __init__(self, home: Path, *args: str, env: dict | None = None):
        env = {"ADVISOR_HOME": str(home), "PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", **(env or {})}
        self.process = subprocess.Popen([sys.executable, "-m", "opprof_advisor", "mcp", *args], cwd=str(ROOT),
                                        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.send(INITIALIZE)
        assert self.receive(30)["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message) -> None:
        line = message if isinstance(message, (str, bytes)) else json.dumps(message)
        self.process.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 30) -> dict:
        ready, _w, _x = select.select([self.process.stdout], [], [], timeout)
        assert ready, f"no answer within {timeout} s"
        line = self.process.stdout.readline()
        assert line, "the server closed its stdout"
        return json.loads(line, parse_constant=_no_constant)  # strict JSON: no NaN / Infinity

    def call(self, request_id, tool: str, arguments: dict, timeout: float = 60) -> dict:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}})
        return self.receive(timeout)

    def workers(self) -> list:
        """The processes computing calls: everything under the server but multiprocessing's helpers."""
        found = []
        for child in psutil.Process(self.process.pid).children(recursive=True):
            try:
                command = " ".join(child.cmdline())
                if "resource_tracker" in command or ("forkserver" in command and child.ppid() == self.process.pid):
                    continue
                if child.status() != psutil.STATUS_ZOMBIE:
                    found.append(child)
            except psutil.NoSuchProcess:
                pass
        return found

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


def _no_constant(name):
    raise AssertionError(f"{name} in the server's JSON")


@pytest.fixture
def server(advisor_home):
    """A server of its own, for a test that stops it or its calls."""
    started = Server(advisor_home)
    yield started
    started.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One server for the tests that only talk to it (each server takes seconds to start on a busy machine)."""
    started = Server(tmp_path_factory.mktemp("advisor-home"))
    yield started
    started.close()


def _text(answer: dict) -> str:
    return answer["result"]["content"][0]["text"]


def _slow_tree(root: Path, files: int = 200) -> str:
    """Python sources that `scan` reads for many seconds (about 50 ms a file)."""
    body = "import torch\n" + "".join(f"def f{i}(x):\n    y = torch.matmul(x, x).cuda()\n"
                                      f"    return torch.nn.functional.softmax(y, dim=-1)\n" for i in range(300))
    root.mkdir()
    for i in range(files):
        (root / f"m{i}.py").write_text(body)
    return str(root)


def _computing(server: Server, timeout: float = 20) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        workers = server.workers()
        if workers and any(w.cpu_percent(0.1) > 0 for w in workers):
            return workers
        time.sleep(0.1)
    raise AssertionError("no call process started")


def _with_helpers(server: Server, timeout: float = 30) -> tuple[list, list]:
    """(the call processes, their helpers) once a call computes with helper processes of its own (a scan with
    ``ADVISOR_SCAN_JOBS=2`` forks one): what a call leaves running if the server only stops the call's process."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        workers = server.workers()
        pids = {w.pid for w in workers}
        helpers = []
        for worker in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                if worker.ppid() in pids:
                    helpers.append(worker)
        if helpers:
            return [w for w in workers if w not in helpers], helpers
        time.sleep(0.05)
    raise AssertionError("no call with helper processes started")


def _gone_within(processes: list, seconds: float) -> float:
    """How long ``processes`` took to be gone (asserting it is under ``seconds``)."""
    started = time.monotonic()
    _gone, alive = psutil.wait_procs(processes, timeout=seconds)
    alive = [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"still computing after {seconds} s: {alive}"
    return time.monotonic() - started


# ---------------------------------------------------------------------------------------------
# Every line gets an answer
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line, code, request_id", [
    ("this is not json", -32700, None),
    ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":'
     + "[" * 5000 + "]" * 5000 + "}}}", -32700, 7),  # deeper than the parser goes: the id is still found
    ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"hello"}', -32600, 7),
    ('{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1, 2]}', -32600, 7),
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', -32600, None),
    ('{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', -32600, None),
    ('{"id":7,"method":"tools/list"}', -32600, 7),
    ('[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]', -32600, None),
    ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"profile","arguments":{"path":"/\\ud800"}}}',
     -32700, 7),
])
def test_a_line_that_is_no_request_is_answered_with_its_json_rpc_error(shared, line, code, request_id):
    shared.send(line)
    answer = shared.receive(10)
    assert answer["error"]["code"] == code and answer["id"] == request_id, answer
    assert shared.call(8, "show", {"entry_id": "nms-on-npu"})["id"] == 8  # and the server goes on


def test_a_request_over_the_size_limit_is_refused_unread(shared):
    padding = "a" * (MAX_REQUEST_BYTES + 10)
    shared.send('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"show","arguments":'
                '{"entry_id":"' + padding + '"}}}')
    answer = shared.receive(10)
    assert answer["id"] == 9 and answer["error"]["code"] == -32600
    assert answer["error"]["message"] == "Request too large"
    assert f"the server reads at most {MAX_REQUEST_BYTES}" in answer["error"]["data"]
    shared.send("")  # a blank line is no message: no answer, and nothing breaks
    assert shared.call(10, "show", {"entry_id": "nms-on-npu"})["id"] == 10


# ---------------------------------------------------------------------------------------------
# Every argument bounded, of its schema's JSON type, refused in one line before any work
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool, arguments, line, data", [
    ("profile", {"path": "/tmp/a\x00b"}, "error: profile: argument path: a NUL character, which no path, query or "
                                         "id holds", {"argument": "path"}),
    ("search", {"query": "nms " * 2000}, f"error: search: argument query: 8000 characters, more than the "
                                          f"{MAX_TEXT} it may have", {"argument": "query"}),
    ("scan", {"path": ".", "exclude": ["x*"] * (MAX_ITEMS + 1)},
     f"error: scan: argument exclude: {MAX_ITEMS + 1} items, more than the {MAX_ITEMS} it may have",
     {"argument": "exclude"}),
    ("scan", {"path": ".", "exclude": ["a", "b\x00"]}, "error: scan: argument exclude[1]: a NUL character, which no "
                                                       "path, query or id holds", {"argument": "exclude", "index": 1}),
    ("profile", {"path": YOLO, "top": 0}, "error: profile: argument top: 0 is too small: it must be at least 1",
     {"argument": "top"}),
    ("search", {"query": "nms", "top": "many"}, "error: search: argument top: 'many' is not a whole number",
     {"argument": "top"}),
    ("search", {"query": [[["deep"]]]}, "error: search: argument query: [[[...]]] is not text", {"argument": "query"}),
    ("suggest", {}, "error: suggest: argument profile: required, and not given", {"argument": "profile"}),
    ("search", {"query": "nms", "evil": 1}, "error: search: 'evil' is not an argument of this tool — it takes "
                                             "query, top, kind, operator, db, lang", {"argument": "evil"}),
    # the JSON type of the schema, not what Python would make of it: true is no 1, "3" no 3, 1 no true
    ("search", {"query": "nms", "top": True}, "error: search: argument top: true is not a whole number",
     {"argument": "top"}),
    ("scan", {"path": ".", "top": False}, "error: scan: argument top: false is not a whole number",
     {"argument": "top"}),
    ("search", {"query": "nms", "top": "3"}, "error: search: argument top: '3' is not a whole number",
     {"argument": "top"}),
    ("search", {"query": "nms", "top": 2.5}, "error: search: argument top: 2.5 is not a whole number",
     {"argument": "top"}),
    ("search", {"query": "nms", "top": None}, "error: search: argument top: null is not a whole number",
     {"argument": "top"}),
    ("suggest", {"profile": YOLO, "explain": 1}, "error: suggest: argument explain: 1 is not true or false",
     {"argument": "explain"}),
    ("suggest", {"profile": YOLO, "explain": "true"}, "error: suggest: argument explain: 'true' is not true or false",
     {"argument": "explain"}),
    ("search", {"query": "nms", "lang": "fr"}, "error: search: argument lang: 'fr' is not one of en, zh",
     {"argument": "lang"}),
    ("search", {"query": "nms", "lang": 5}, "error: search: argument lang: 5 is not text", {"argument": "lang"}),
    ("search", [1, 2], "error: search: [1, 2] is not an object of named arguments", {}),
    ("search", "nms", "error: search: 'nms' is not an object of named arguments", {}),
])
def test_a_bad_argument_is_an_invalid_params_error_naming_it_before_any_work(shared, tool, arguments, line, data):
    started = time.monotonic()
    answer = shared.call(1, tool, arguments)
    assert answer["id"] == 1 and "result" not in answer, answer
    assert answer["error"] == {"code": -32602, "message": line,
                               "data": {"param": "arguments", "tool": tool, **data}}
    assert time.monotonic() - started < 2 and not shared.workers()


@pytest.mark.parametrize("params, shown", [
    ({"name": "nosuch", "arguments": {"query": "nms"}}, "'nosuch'"),
    ({"arguments": {"query": "nms"}}, "null"),
    ({"name": 5}, "5"),
    (None, "null"),  # no params at all
])
def test_a_call_of_no_tool_is_an_invalid_params_error_naming_the_name(shared, params, shown):
    shared.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", **({} if params is None else {"params": params})})
    answer = shared.receive(10)
    assert answer["id"] == 2 and answer["error"] == {
        "code": -32602, "data": {"param": "name"},
        "message": f"error: tools/call: {shown} is not the name of a tool — the tools are profile, suggest, search, "
                   f"show, compare, roofline, scan"}


def test_a_bad_argument_is_refused_in_the_language_of_the_call(shared):
    answer = shared.call(1, "search", {"query": "nms", "top": True, "lang": "zh"})
    assert answer["error"]["code"] == -32602 and answer["error"]["data"]["argument"] == "top"
    assert answer["error"]["message"].startswith("错误") and "top" in answer["error"]["message"]


def test_a_whole_number_written_with_a_fraction_of_zero_is_a_whole_number(shared):
    """JSON has one kind of number: the schema's "integer" takes 3.0, and the call runs with 3."""
    answer = shared.call(1, "search", {"query": "nms", "top": 3.0})
    assert answer["result"]["isError"] is False
    assert len(answer["result"]["structuredContent"]["results"]) == 3


def test_the_input_schemas_declare_the_bounds(shared):
    shared.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    schemas = {tool["name"]: tool["inputSchema"]["properties"] for tool in shared.receive()["result"]["tools"]}
    path = schemas["profile"]["path"]
    assert path["maxLength"] == MAX_TEXT and path["pattern"] == r"^[^\x00]*$"
    assert schemas["profile"]["top"]["minimum"] == 1 and schemas["scan"]["top"]["minimum"] == 0
    assert schemas["profile"]["top"]["type"] == "integer" and schemas["suggest"]["explain"]["type"] == "boolean"
    exclude = schemas["scan"]["exclude"]["anyOf"][0]
    assert exclude["maxItems"] == MAX_ITEMS and exclude["items"]["maxLength"] == MAX_TEXT


# ---------------------------------------------------------------------------------------------
# No state shared between calls
# ---------------------------------------------------------------------------------------------


def test_concurrent_calls_in_two_languages_each_answer_in_its_own(shared):
    for request_id in range(1, 9):
        shared.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                     "params": {"name": "suggest", "arguments": {"profile": YOLO, "top": 3,
                                                                   "lang": "zh" if request_id % 2 else "en"}}})
    answers = [shared.receive(120) for _ in range(8)]
    for answer in answers:
        chinese = any("\u4e00" <= c <= "\u9fff" for c in _text(answer))
        assert chinese == bool(answer["id"] % 2), (answer["id"], _text(answer)[:200])
    documents = {json.dumps(a["result"]["structuredContent"], sort_keys=True) for a in answers}
    assert len(documents) == 1  # the document is data, in no language


# ---------------------------------------------------------------------------------------------
# Cancel, disconnect, signals, timeout: the work stops within a second
# ---------------------------------------------------------------------------------------------


def test_a_cancelled_call_stops_its_process_within_a_second(server, tmp_path):
    server.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                 "params": {"name": "scan", "arguments": {"path": _slow_tree(tmp_path / "src")}}})
    workers = _computing(server)
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    assert _gone_within(workers, 1.5) < 1.5
    assert server.call(6, "show", {"entry_id": "nms-on-npu"})["id"] == 6  # the cancelled call is not answered


def test_a_client_that_disconnects_stops_the_call_and_the_server(server, tmp_path):
    server.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                 "params": {"name": "scan", "arguments": {"path": _slow_tree(tmp_path / "src")}}})
    workers = _computing(server)
    server.process.stdin.close()
    _gone_within(workers, 1.5)
    assert server.process.wait(5) == 0
    assert json.loads(server.process.stdout.readline())["error"]["message"] == "Connection closed"
    assert server.process.stderr.read() == b""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])  # SIGHUP: the same path
def test_a_signal_stops_the_calls_answers_them_and_ends_the_server(server, tmp_path, signum):
    server.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                 "params": {"name": "scan", "arguments": {"path": _slow_tree(tmp_path / "src")}}})
    workers = _computing(server)
    everything = workers + psutil.Process(server.process.pid).children(recursive=True)
    server.process.send_signal(signum)
    _gone_within(workers, 1.5)
    assert server.process.wait(5) == 128 + signum
    answer = json.loads(server.process.stdout.readline())
    assert answer["id"] == 5 and answer["error"]["message"] == "Connection closed"
    assert server.process.stderr.read() == b""
    _gone_within(everything, 3)  # the fork server and the resource tracker end with it


def test_a_call_over_the_timeout_is_stopped_with_a_message(advisor_home, tmp_path):
    server = Server(advisor_home, "--timeout", "1")
    try:
        answer = server.call(1, "scan", {"path": _slow_tree(tmp_path / "src")})
        assert _text(answer) == ("Error executing tool scan: error: scan stopped: no answer within 1 s — give it a "
                                 "smaller input, or start the server with a longer `advisor mcp --timeout`")
        assert not server.workers()
    finally:
        server.close()


def test_a_call_whose_process_dies_is_a_tool_error(server, tmp_path):
    server.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                 "params": {"name": "scan", "arguments": {"path": _slow_tree(tmp_path / "src")}}})
    for worker in _computing(server):
        worker.kill()  # the kernel's OOM killer, say
    assert _text(server.receive(10)).startswith("Error executing tool scan: error: scan stopped before it answered")
    assert server.call(6, "show", {"entry_id": "nms-on-npu"})["result"]["isError"] is False


def test_a_call_whose_process_dies_with_helpers_computing_is_answered_and_leaves_nothing(advisor_home, tmp_path):
    """The helpers a call started hold its answer pipe open: the server must not wait for them to close it."""
    server = Server(advisor_home, env={"ADVISOR_SCAN_JOBS": "2"})
    try:
        server.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                     "params": {"name": "scan", "arguments": {"path": _slow_tree(tmp_path / "src")}}})
        calls, helpers = _with_helpers(server)
        for call in calls:
            call.kill()  # the kernel's OOM killer, say: the call's process alone
        answer = server.receive(10)
        assert answer["id"] == 5 and _text(answer).startswith("Error executing tool scan: error: scan stopped before "
                                                              "it answered (exit status -9)")
        _gone_within(helpers, 3)
        assert server.call(6, "show", {"entry_id": "nms-on-npu"})["result"]["isError"] is False
    finally:
        server.close()


@pytest.mark.parametrize("helpers", [False, True])
def test_a_server_killed_outright_leaves_nothing_behind(advisor_home, tmp_path, helpers):
    """SIGKILL gives the server no chance to stop anything: the call, what it started, the fork server and the
    resource tracker must each end by themselves."""
    server = Server(advisor_home, env={"ADVISOR_SCAN_JOBS": "2" if helpers else "1"})
    try:
        server.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                     "params": {"name": "scan", "arguments": {"path": _slow_tree(tmp_path / "src")}}})
        workers = sum(_with_helpers(server), []) if helpers else _computing(server)
        everything = psutil.Process(server.process.pid).children(recursive=True)
        assert set(workers) <= set(everything)
        server.process.kill()
        _gone_within(workers, 3)
        _gone_within(everything, 3)
    finally:
        server.close()


# ---------------------------------------------------------------------------------------------
# What goes out: strict JSON, one line when it cannot go out
# ---------------------------------------------------------------------------------------------


def test_names_that_are_not_utf8_go_out_as_strict_json(shared, tmp_path):
    root = tmp_path / "src"
    (root / os.fsdecode(b"m\xffod")).mkdir(parents=True)
    (root / os.fsdecode(b"m\xffod") / os.fsdecode(b"x\xfe.py")).write_text("import torch\nx = torch.randn(3).cuda()\n")
    answer = shared.call(1, "scan", {"path": str(root)})
    assert answer["result"]["isError"] is False
    assert [f["path"] for f in answer["result"]["structuredContent"]["findings"]] == ["m\\xffod/x\\xfe.py"]


@pytest.mark.parametrize("stdout, line", [
    ("closed", "error: stdout is closed — the MCP client reads the answers there: start `advisor mcp` from the "
               "client"),
    ("/dev/full", "error: cannot answer the MCP client: No space left on device"),
])
def test_a_stdout_that_cannot_take_the_answers_is_one_line_and_exit_1(advisor_home, stdout, line):
    request = json.dumps(INITIALIZE) + "\n"
    target = subprocess.DEVNULL if stdout == "closed" else open(stdout, "wb")
    command = [sys.executable, "-m", "opprof_advisor", "mcp"]
    run = subprocess.run(command, input=request.encode(), stdout=target, stderr=subprocess.PIPE, cwd=str(ROOT),
                         env={**os.environ, "ADVISOR_HOME": str(advisor_home)}, timeout=30,
                         **({"preexec_fn": lambda: os.close(1)} if stdout == "closed" else {}))
    assert run.returncode == 1
    assert run.stderr.decode().splitlines() == [line]


def test_a_file_the_system_refuses_is_one_line_through_the_tools_too():
    """An OSError naming a file (a name too long ...) is the CLI's one line, not an internal error (error_lines)."""
    from opprof_advisor.core.errors import error_lines

    exc = OSError(36, "File name too long", "/tmp/" + "n" * 300)
    [line] = error_lines(exc)
    assert line.startswith("error: /tmp/nnn") and "cannot be used: File name too long" in line
    assert "internal error" not in line


_ORPHANED_CALL = """
import os, sys, time
from opprof_advisor.mcp import server

if os.fork() == 0:  # the call's process: a group of its own, watching this parent, and a helper of its own
    os.setpgid(0, 0)
    server._end_with_parent(os.getppid(), forked=sys.argv[1] == "kernel")
    helper = os.fork()
    if helper == 0:
        time.sleep(60)
        os._exit(0)
    print(os.getpid(), helper, flush=True)
    time.sleep(60)
    os._exit(0)
time.sleep(60)
"""


@pytest.mark.parametrize("watch", ["kernel", "timer"])  # Linux's PR_SET_PDEATHSIG; the parent watch elsewhere
def test_a_call_whose_parent_dies_ends_with_what_it_started(watch):
    if watch == "kernel" and not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    parent = subprocess.Popen([sys.executable, "-c", _ORPHANED_CALL, watch], cwd=str(ROOT), stdout=subprocess.PIPE)
    started = []
    try:
        ready, _w, _x = select.select([parent.stdout], [], [], 30)
        assert ready, "the call did not start"
        started = [psutil.Process(int(pid)) for pid in parent.stdout.readline().split()]
        parent.kill()
        parent.wait(10)
        _gone_within(started, 2)
    finally:
        for process in started:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)
