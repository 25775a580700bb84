"""`advisor mcp` on the wire: the official SDK's server, held to what a stdio server owes its client.

The ``mcp`` SDK (2.x) frames, parses and dispatches JSON-RPC, validates the arguments against each
tool's input schema, and cancels a call's handler on ``notifications/cancelled`` or when the client
goes. What it leaves to the application is here:

* every line gets an answer. The SDK's stdio transport drops a line it cannot parse (not JSON, nested
  past the parser's depth, ``params`` that is no object, an id that is neither text nor an integer)
  without a word, and the client waits forever. ``_Lines``, the transport's stdin, answers each such
  line with its JSON-RPC error (-32700 / -32600, with the request's id when it can be found), refuses
  a line over ``MAX_REQUEST_BYTES`` unread, and reads in a daemon thread, so that stopping never waits
  for a line that does not come;
* every argument is bounded: text length, no NUL, list length, ``top`` (``mcp.arguments``, declared in the
  input schemas, so the agent sees the limits), and of the JSON type its schema says (no ``true`` for a
  number, no ``1`` for a truth value); a call naming no tool, or whose arguments break the schema, is refused
  before any work with a JSON-RPC error -32602 whose message is one line in the agent's language and whose
  ``data`` names the argument (``mcp.arguments.arguments_guard``, a middleware of the SDK);
* each call computes in a process of its own (``Workers``, running ``server.work``): no state is
  shared between calls, and a call the SDK cancels (cancel, disconnect) or that outlives ``--timeout``
  is stopped with whatever it started, within a second; a call whose process dies leaves nothing running,
  and a server killed outright takes its calls with it (``server._end_with_parent``);
* SIGINT, SIGTERM and SIGHUP stop the calls, answer them, and end the server (exit status 128 + n).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import multiprocessing
import multiprocessing.forkserver
import os
import re
import signal
import sys
import threading
from typing import Any, Union

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from opprof_advisor import __version__
from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.core.i18n import M_
from opprof_advisor.mcp.arguments import arguments_guard, bounded, call_language
from opprof_advisor.mcp.server import (
    DEFAULT_TIMEOUT_S, INSTRUCTIONS, MAX_REQUEST_BYTES, SERVER_NAME, STOP_GRACE_S, TOOLS, CallStopped, MissingSDK,
    said_in, signature_of, work,
)

#: Imported once by the process every call's process is forked from, so that a call starts at once.
#: (numpy and scikit-learn are what the commands import lazily; a name that is not installed is skipped.)
WARM_IMPORTS = ("opprof_advisor.mcp.server", "numpy", "sklearn.feature_extraction.text")

#: How long after a call's process ended its answer may still be on its way, in seconds: after that, whatever the
#: call left running (and holding its end of the answer's pipe open) is killed.
ANSWER_GRACE_S = 0.5

#: How long a stop (a signal) may take before the server leaves at once, in seconds: a client that
#: stopped reading its stdout can block the last writes.
EXIT_BACKSTOP_S = 3.0


# ---------------------------------------------------------------------------------------------
# The server: the tools, their bounds, the guard
# ---------------------------------------------------------------------------------------------


def build_server(workers: Workers | None = None) -> MCPServer:
    """The MCPServer with every tool registered: each call computes in a process of ``workers``."""
    # WARNING: a tool error is an answer the agent reads, not something to log on every call.
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    workers = workers or Workers()
    tools = {name: _register(server, workers, name, function, description)
             for name, (function, description) in TOOLS.items()}
    server.middleware.append(arguments_guard(tools))
    return server


def _register(server: MCPServer, workers: Workers, name: str, function: Any, description: str) -> Tool:
    async def call(lang: str | None = None, **arguments: Any) -> mcp_types.CallToolResult:
        # `lang` changes the summary, the entries' titles and the error line, never the JSON document
        language = call_language(lang)
        try:
            outcome = await workers.run(name, arguments, language)
        except AdvisorError as exc:
            raise ToolError(said_in(language, exc)) from None
        if outcome[0] != "done":
            raise ToolError(outcome[1])
        document, summary = outcome[1], outcome[2]
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=summary)],
                                        structured_content=document)

    signature = signature_of(function)
    call.__name__ = name
    call.__doc__ = description
    # the arguments the agent sees are the document function's, each with its bounds
    call.__signature__ = signature.replace(parameters=[
        parameter.replace(annotation=bounded(name, parameter.name, parameter.annotation))
        for parameter in signature.parameters.values()])
    server.add_tool(call, name=name, description=description, structured_output=False)
    return Tool.from_function(call, name=name, description=description, structured_output=False)


# ---------------------------------------------------------------------------------------------
# The process of each call
# ---------------------------------------------------------------------------------------------


class Workers:
    """Runs each tool call in a process of its own (``server.work``), at most ``jobs`` at a time.

    The processes are forked from a server process that imported the tools once (``WARM_IMPORTS``), so a
    call starts in a few milliseconds. A call that is cancelled (the SDK cancels its handler on
    ``notifications/cancelled``, when the client goes, and on a signal) or that outlives ``timeout`` is
    stopped: SIGINT to its process group, SIGKILL to what is left after ``STOP_GRACE_S``.
    """

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_S, jobs: int | None = None):
        self.timeout = timeout if timeout and timeout > 0 else None
        self.jobs = max(1, jobs or os.cpu_count() or 2)
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        self._context = multiprocessing.get_context(method)
        if method == "forkserver":
            self._context.set_forkserver_preload(list(WARM_IMPORTS))
        self._limiter: anyio.CapacityLimiter | None = None

    def warm(self) -> None:
        """Start the process the calls are forked from (blocking: run it in a thread)."""
        if self._context.get_start_method() == "forkserver":
            with contextlib.suppress(Exception):  # the first call starts it, or says why it cannot
                multiprocessing.forkserver.ensure_running()

    async def run(self, name: str, arguments: dict[str, Any], lang: str) -> tuple[Any, ...]:
        """("done", document, summary) or ("failed", the error line) of one call; CallStopped when it stops."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.jobs)
        async with self._limiter:
            receiving, sending = self._context.Pipe(duplex=False)
            answer = _Answer(receiving)
            process = self._context.Process(target=work, args=(sending, name, arguments, lang),
                                            name=f"advisor mcp {name}")
            outcome = None
            try:
                try:
                    await anyio.to_thread.run_sync(process.start)
                except OSError as exc:
                    raise CallStopped(M_("{tool} could not start: {reason}", tool=name,
                                         reason=exc.strerror or str(exc)),
                                      hint=M_("free some memory or processes and call it again")) from None
                finally:
                    sending.close()
                try:
                    with anyio.fail_after(self.timeout):
                        outcome = await _answer_of(process, answer)
                except TimeoutError:
                    seconds = format(self.timeout, "g")
                    raise CallStopped(M_("{tool} stopped: no answer within {seconds} s", tool=name, seconds=seconds),
                                      hint=M_("give it a smaller input, or start the server with a longer "
                                              "`advisor mcp --timeout`")) from None
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process, answered=outcome is not None)
                answer.drop()
            if outcome is None:
                raise CallStopped(M_("{tool} stopped before it answered (exit status {status})", tool=name,
                                     status=process.exitcode),
                                  hint=M_("call it again; if it stops again, run the command on the command line "
                                          "with --debug and report it"))
            return outcome


class _Answer:
    """The receiving end of a call's pipe, read in a thread and closed exactly once, by whoever holds it."""

    def __init__(self, connection: Any):
        self._connection = connection
        self._lock = threading.Lock()
        self._taken = False

    def receive(self) -> tuple[Any, ...] | None:
        """What the call's process sends; None when it ended without sending (blocking: runs in a thread)."""
        with self._lock:
            connection = self._connection
            if connection is None:
                return None
            self._taken = True
        try:
            return connection.recv()
        except (EOFError, OSError):
            return None
        finally:
            connection.close()

    def drop(self) -> None:
        """Close the pipe if no thread took it (a call cancelled before it read): the process is gone by now."""
        with self._lock:
            if not self._taken and self._connection is not None:
                self._connection.close()
            self._connection = None


async def _answer_of(process: Any, answer: _Answer) -> tuple[Any, ...] | None:
    """What the call's process sends, or None when it ends without a word.

    The read ends when the pipe's other end is closed by everyone holding it, and a process the call forked
    (scan's helpers) holds a copy: once the call's process has ended, whatever it left running is killed after
    ``ANSWER_GRACE_S`` (its process group), and the read ends with what was sent.
    """
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_clear_when_ended, process)
        outcome = await anyio.to_thread.run_sync(answer.receive, abandon_on_cancel=True)
        tasks.cancel_scope.cancel()
    return outcome


async def _clear_when_ended(process: Any) -> None:
    """Once the call's process has ended and ``ANSWER_GRACE_S`` more have passed, kill what is left of its group."""
    while process.exitcode is None:
        await anyio.sleep(0.05)
    await anyio.sleep(ANSWER_GRACE_S)
    _signal_group(process, signal.SIGKILL)


async def _stop(process: Any, answered: bool) -> None:
    """Make sure a call's process, and whatever it started, is gone."""
    if process.pid is None:
        return  # it never started
    if answered:  # it is on its way out: give it the time to exit by itself
        with anyio.move_on_after(1):
            while process.exitcode is None:
                await anyio.sleep(0.01)
    if process.exitcode is None:
        _signal_group(process, signal.SIGINT)  # KeyboardInterrupt: the computation unwinds through its clean-ups
        with anyio.move_on_after(STOP_GRACE_S):
            while process.exitcode is None:
                await anyio.sleep(0.01)
        _signal_group(process, signal.SIGKILL)  # the process if it is still there, and what it started
        with anyio.move_on_after(1):
            while process.exitcode is None:
                await anyio.sleep(0.01)
    # what the call started and left running: its process group outlives it (the group's id is not reused while
    # a process is in it, and an empty group is no more)
    _signal_group(process, signal.SIGKILL)


def _signal_group(process: Any, signum: int) -> None:
    """Send ``signum`` to the process group of a call's process (it makes one when it starts) or to the process."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)
        return
    if process.exitcode is None:  # not a group leader yet: the process itself
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process.pid, signum)


# ---------------------------------------------------------------------------------------------
# The wire: every line answered, stdin read without holding up a stop
# ---------------------------------------------------------------------------------------------


class _TooLong:
    """A line over ``MAX_REQUEST_BYTES``: its first bytes (to find its id) and its length."""

    __slots__ = ("head", "size")

    def __init__(self, head: bytes, size: int):
        self.head = head
        self.size = size


class _Lines:
    """The client's lines, given to the SDK's stdio transport as its stdin; a line that is no message is answered.

    A daemon thread reads the client's stream (a private copy of fd 0: fd 0 itself points at /dev/null, as
    the SDK points fd 1 at stderr, so that nothing the server starts reads or writes the connection).
    """

    #: How much of an over-long line is kept to find its id.
    HEAD = 1 << 16

    def __init__(self, fd: int | None):
        self._fd = fd
        self._send, self._receive = anyio.create_memory_object_stream[Union[str, _TooLong]](0)
        self._answers: Any = None
        self._attached = anyio.Event()
        self._waiting: anyio.CancelScope | None = None
        self._stopped = False
        self._started = False

    def attach(self, write_stream: Any) -> None:
        """Answer refused lines on ``write_stream`` (the transport's own)."""
        self._answers = write_stream
        self._attached.set()

    def stop(self) -> None:
        """End the lines now (a signal): the transport's reader stops without waiting for the client."""
        self._stopped = True
        if self._waiting is not None:
            self._waiting.cancel()

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            item = None
            with anyio.CancelScope() as self._waiting:
                if not self._stopped:
                    await self._attached.wait()
                    if not self._started:
                        self._started = True
                        threading.Thread(target=self._read, args=(anyio.lowlevel.current_token(),), daemon=True,
                                         name="advisor mcp stdin").start()
                    with contextlib.suppress(anyio.EndOfStream):
                        item = await self._receive.receive()
            self._waiting = None
            if item is None or self._stopped:
                raise StopAsyncIteration
            if isinstance(item, str) and not item.strip():
                continue  # a blank line is no message
            refusal = _refusal(item)
            if refusal is None:
                return item
            try:
                await self._answers.send(SessionMessage(message=refusal))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise StopAsyncIteration from None  # the transport is closing: no more lines

    def _read(self, token: Any) -> None:
        """Read the client's stream line by line (in a daemon thread: a read that never returns holds up no exit)."""
        line = bytearray()
        head = b""
        skipped = 0  # bytes of an over-long line read and thrown away
        try:
            while self._fd is not None:
                chunk = os.read(self._fd, 1 << 16)
                if not chunk:
                    break
                start = 0
                while start <= len(chunk):
                    end = chunk.find(b"\n", start)
                    piece = chunk[start:] if end < 0 else chunk[start:end]
                    if skipped:
                        skipped += len(piece)
                    else:
                        line += piece
                        if len(line) > MAX_REQUEST_BYTES:
                            head, skipped = bytes(line[:self.HEAD]), len(line)
                            line.clear()
                    if end < 0:
                        break
                    self._deliver(token, _TooLong(head, skipped) if skipped else line.decode("utf-8", "replace"))
                    line.clear()
                    skipped = 0
                    start = end + 1
            if skipped or line:
                self._deliver(token, _TooLong(head, skipped) if skipped else line.decode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 - the stream failed (as good as closed), or the server stopped listening
            pass
        finally:
            with contextlib.suppress(RuntimeError):
                anyio.from_thread.run_sync(self._send.close, token=token)

    def _deliver(self, token: Any, item: Union[str, _TooLong]) -> None:
        anyio.from_thread.run(self._send.send, item, token=token)


def _refusal(line: Union[str, _TooLong]) -> mcp_types.JSONRPCError | None:
    """The JSON-RPC error answering a line that is no message (None for a good one): -32700 for a line that is not
    JSON (or nested deeper than the parser goes), -32600 for one that is no JSON-RPC message, or too long."""
    if isinstance(line, _TooLong):
        return _error(_id_in(line.head.decode("utf-8", "replace")), mcp_types.INVALID_REQUEST, "Request too large",
                      f"the request is {line.size} bytes long; the server reads at most {MAX_REQUEST_BYTES}")
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        errors = exc.errors()
        if errors and errors[0].get("type") == "json_invalid":
            return _error(_id_in(line), mcp_types.PARSE_ERROR, "Parse error", str(errors[0].get("msg")))
        return _error(_id_in(line), mcp_types.INVALID_REQUEST, "Invalid Request",
                      "not a JSON-RPC 2.0 request: an object with jsonrpc \"2.0\", a string or integer id, a method "
                      "and params that are an object")
    if isinstance(message, mcp_types.JSONRPCNotification) and '"id"' in line:
        raw = _loaded(line)
        if isinstance(raw, dict) and "id" in raw:  # a request whose id is null, a number with a fraction, a list ...
            return _error(None, mcp_types.INVALID_REQUEST, "Invalid Request",
                          "the id of a request must be a string or an integer")
    return None


def _error(request_id: Any, code: int, message: str, data: str) -> mcp_types.JSONRPCError:
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                  error=mcp_types.ErrorData(code=code, message=message, data=data))


def _loaded(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


#: A JSON string or a run of brackets: what moves the depth of a JSON text, and what a key is.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]+')
_ID_VALUE = re.compile(r'\s*:\s*(-?\d{1,18}(?![\d.eE])|"[^"\\]*(?:\\.[^"\\]*)*")')


def _id_in(text: str) -> str | int | None:
    """The id of the request ``text`` tried to be, when it can be told (else None, as JSON-RPC says).

    For a text that does not parse (too deep, cut, broken), the top-level ``"id"`` member is found by a scan
    that only follows strings and brackets: linear in the text.
    """
    raw = _loaded(text)
    if raw is not None:
        value = raw.get("id") if isinstance(raw, dict) else None
    else:
        value, depth = None, 0
        for token in _TOKENS.finditer(text):
            run = token.group()
            if run[0] != '"':
                depth += sum(1 if c in "[{" else -1 for c in run)
            elif depth == 1 and run == '"id"':
                found = _ID_VALUE.match(text, token.end())
                if found:
                    value = _loaded(found.group(1))
                    break
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


# ---------------------------------------------------------------------------------------------
# Serving
# ---------------------------------------------------------------------------------------------


def serve(timeout: float = DEFAULT_TIMEOUT_S) -> int:
    """Serve the tools over stdio until the client closes the connection (0) or a signal n stops the server
    (128 + n)."""
    workers = Workers(timeout=timeout)
    server = build_server(workers)
    lowlevel = sdk_server(server)  # before anything starts: an SDK this cannot run on is one line
    if _closed_at_start(sys.stdout, 1):
        raise AdvisorError(M_("stdout is closed"), hint=M_("the MCP client reads the answers there: start "
                                                          "`advisor mcp` from the client")) from None
    try:
        return anyio.run(_serve, lowlevel, workers)
    except (OSError, AdvisorError, BaseExceptionGroup) as exc:
        failures = list(_leaves(exc))  # the transport's writer failed: how
        if not all(isinstance(failure, (OSError, AdvisorError)) for failure in failures):
            raise
        failed = [f for f in failures if not isinstance(f, (BrokenPipeError, ConnectionResetError))]
        if not failed:
            return 0  # the client stopped reading: it is gone, as if it had closed the connection
        if isinstance(failed[0], AdvisorError):
            raise failed[0] from None
        raise AdvisorError(M_("cannot answer the MCP client: {reason}",
                              reason=failed[0].strerror or str(failed[0]))) from None


def _closed_at_start(stream: Any, fd: int) -> bool:
    """Whether the standard stream ``fd`` was closed when the process started: Python then sets it to None, and
    the CLI's entry point (core.terminal.guard_standard_streams) opens /dev/null in its place, saying so."""
    if getattr(getattr(getattr(stream, "buffer", None), "raw", None), "was_closed", False):
        return True
    try:
        return stream is None or stream.fileno() != fd or os.fstat(fd) is None
    except (OSError, ValueError, AttributeError):
        return True


def _leaves(exc: BaseException):
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def sdk_server(server: MCPServer) -> Any:
    """The SDK's low-level server inside ``server``: what ``MCPServer.run_stdio_async`` runs, run here on our own
    stdin (``_Lines``), which the SDK has no public way to take (mcp 2.3: ``run_stdio_async()`` takes no
    streams, and ``MCPServer._lowlevel_server`` is private; the SDK's own client says "make `lowlevel_server`
    public" as a to-do). pyproject.toml bounds the ``mcp`` version to those it was verified with; a version
    without it is refused in one line naming it.
    """
    lowlevel = getattr(server, "_lowlevel_server", None)
    if not (callable(getattr(lowlevel, "run", None)) and callable(getattr(lowlevel, "create_initialization_options",
                                                                           None))):
        raise MissingSDK(M_("the mcp SDK {version} has no MCPServer._lowlevel_server, which `advisor mcp` runs on",
                            version=_sdk_version()),
                         hint=M_("install the mcp version opprof-advisor supports: {command}",
                                 command="pip install 'opprof-advisor[mcp]'"))
    return lowlevel


def _sdk_version() -> str:
    try:
        return importlib.metadata.version("mcp")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return "?"


async def _serve(lowlevel: Any, workers: Workers) -> int:
    stdin = _claim_stdin()
    lines = _Lines(stdin)
    stopped_by: list[int] = []
    try:
        async with stdio_server(stdin=lines) as (read_stream, write_stream):
            lines.attach(write_stream)
            async with anyio.create_task_group() as tasks:
                with anyio.CancelScope() as serving:
                    tasks.start_soon(_stop_on_signals, serving, lines, stopped_by)
                    # a daemon thread: a client that leaves at once does not wait for the fork server to start
                    threading.Thread(target=workers.warm, daemon=True, name="advisor mcp warm").start()
                    await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
                lines.stop()
                tasks.cancel_scope.cancel()
    finally:
        if stdin is not None:  # fd 0 on the client's stream again (the reading thread keeps its own descriptor)
            with contextlib.suppress(OSError):
                os.dup2(stdin, 0)
    return 128 + stopped_by[0] if stopped_by else 0


async def _stop_on_signals(serving: anyio.CancelScope, lines: _Lines, stopped_by: list[int]) -> None:
    """On SIGINT, SIGTERM or SIGHUP: cancel every call (each answers, its process is stopped), stop reading, end.

    A second signal, or a stop that has not ended after ``EXIT_BACKSTOP_S`` (a client that no longer reads
    can block the last writes), ends the process at once.
    """
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            if stopped_by:
                os._exit(128 + stopped_by[0])
            stopped_by.append(signum)
            backstop = threading.Timer(EXIT_BACKSTOP_S, os._exit, (128 + signum,))
            backstop.daemon = True
            backstop.start()
            serving.cancel()
            lines.stop()


def _claim_stdin() -> int | None:
    """A private descriptor of the client's stream; fd 0 then points at /dev/null (None: stdin is closed)."""
    if _closed_at_start(sys.stdin, 0):
        return None  # fd 0 may be anything opened since (the event loop's own)
    try:
        private = os.dup(0)  # not inheritable: no child gets it (0, 1 and 2 are open, so it is not one of them)
    except OSError:
        return None
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
    return private
