"""Run the operator profiler (``msprof op`` / ``msopprof``) on an application and find its output.

Where the profiler lives (checked in this order):

1. ``msprof`` on PATH — the CANN launcher. ``msprof op ARGS`` execs the worker
   ``$ASCEND_TOOLKIT_HOME/tools/msopprof/bin/msopprof ARGS`` (CANN >= 9.0; ``tools/msopt/bin`` in
   8.x) and prints "Cannot find msopprof, Maybe you shoule source set_env.sh in advance." when
   that variable is unset; everything after ``op`` is passed to the worker unchanged [code: the
   msprof launcher's ``msopprof_manager.cpp``, ``MsopprofManager::MsopprofManager`` /
   ``CheckMsopprofIfExist``, Apache-2.0 and CANN-licence versions of the msprof collector]. So
   the launcher is used only when ASCEND_TOOLKIT_HOME is set; otherwise a ``msopprof`` binary is
   looked for, and failing that the error says to source set_env.sh.
2. ``msopprof`` on PATH — the worker itself, same options ("the command is ``msprof op`` or
   ``msopprof``" [doc `hicann/catlass` msProf usage guide]; ``msopprof --help`` verifies the
   standalone install [doc `Ascend/msopprof` `docs/en/install_guide/msopprof_install_guide.md`]).
3. Under a CANN root — ``$ASCEND_HOME_PATH``, ``$ASCEND_TOOLKIT_HOME``,
   ``/usr/local/Ascend/ascend-toolkit/latest``, ``/usr/local/Ascend/cann``, ``~/Ascend`` —
   ``bin/msopprof`` (standalone install into ``$ASCEND_HOME_PATH``, whose ``bin`` goes on PATH
   [doc install guide §2.3.3.3]), ``tools/msopprof/bin/msopprof`` and ``tools/msopt/bin/msopprof``
   (toolkit layouts above), then the launcher at ``bin/msprof`` or ``tools/profiler/bin/msprof``.

Command line (documented form ``msprof op [options] app [arguments]``; simulator mode
``msprof op simulator [options] app [arguments]``; options must come before the application
[doc `Ascend/msopprof` `docs/en/user_guide/msopprof_user_guide.md` §Command Reference and
`msopprof_simulator_user_guide.md` §Command Reference]). We pass ``--output=DIR`` always (so we
know where to look), then ``--aic-metrics=LIST``, ``--kernel-name=NAME``, ``--launch-count=N``
and ``--soc-version=SOC`` (simulator) only when the user gave them.

Output: ``DIR/OPPROF_{YYYYMMDDhhmmss}_{16 uppercase letters}/`` [doc msopprof_user_guide.md
§"After the command is executed"; FORMATS.md §1.1]; we take the one that was not there before.
"""

from __future__ import annotations

import codecs
import os
import re
import selectors
import shutil
import signal
import subprocess
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from opprof_advisor.core.errors import CollectError, ProfilerFailed, ProfilerInterrupted, ProfilerTimedOut, ToolNotFound
import threading

MODES = ("device", "simulator")

#: The folder name msOpProf gives each run.
OPPROF_DIR = re.compile(r"^OPPROF_\d{14}_[A-Z]{16}$")

#: How many trailing lines of the profiler's output are repeated when it fails.
TAIL_LINES = 20

#: Default of ``advisor collect --timeout`` (seconds): a safety net for a hung profiler or operator,
#: long enough for a simulator run of a big kernel. 0 means no limit.
DEFAULT_TIMEOUT_S = 3600.0
#: How long the profiler's process group has to exit after SIGTERM (or SIGINT) before SIGKILL.
KILL_GRACE_S = 5.0
#: After the profiler exited, output still arriving from what it left behind is read this long.
DRAIN_S = 0.5
#: A line longer than this is passed on in pieces (a profiler writing without newlines).
MAX_LINE_CHARS = 1 << 20

INSTALL_HINT = (
    "install the CANN toolkit (it ships msprof and msopprof) and run "
    "`source /usr/local/Ascend/ascend-toolkit/set_env.sh` (or the set_env.sh of your CANN install), "
    "or put msprof/msopprof on PATH"
)

#: CANN roots probed when nothing is on PATH (the environment variables come first).
DEFAULT_ROOTS: tuple[str, ...] = (
    "/usr/local/Ascend/ascend-toolkit/latest",
    "/usr/local/Ascend/cann",
    "~/Ascend/ascend-toolkit/latest",
    "~/Ascend",
)

#: Relative paths under a CANN root, in preference order, with the kind of executable found there.
ROOT_LAYOUT: tuple[tuple[str, str], ...] = (
    ("bin/msopprof", "msopprof"),
    ("tools/msopprof/bin/msopprof", "msopprof"),
    ("tools/msopt/bin/msopprof", "msopprof"),
    ("bin/msprof", "msprof"),
    ("tools/profiler/bin/msprof", "msprof"),
)


@dataclass(frozen=True)
class Profiler:
    """An installed operator profiler: ``kind`` is ``msprof`` (launcher) or ``msopprof`` (worker)."""

    kind: str
    path: str


@dataclass
class CollectResult:
    """What one collection produced."""

    command: list[str]
    output_dir: Path
    opprof_dir: Path
    profiler: Profiler
    extra_dirs: list[Path]  # other new OPPROF_* folders of the same run (newest is opprof_dir)


# --------------------------------------------------------------------------------------------
# Finding the profiler
# --------------------------------------------------------------------------------------------


def find_profiler(env: Mapping[str, str] | None = None, roots: Sequence[str] | None = None) -> Profiler:
    """Locate ``msprof`` / ``msopprof``; raise ToolNotFound with what to install or source."""
    env = os.environ if env is None else env
    search_path = env.get("PATH", "")
    launcher = shutil.which("msprof", path=search_path)
    # The launcher builds its worker's path from ASCEND_TOOLKIT_HOME; without it `msprof op` fails.
    if launcher and env.get("ASCEND_TOOLKIT_HOME"):
        return Profiler("msprof", launcher)
    worker = shutil.which("msopprof", path=search_path)
    if worker:
        return Profiler("msopprof", worker)
    for root in _candidate_roots(env, roots):
        for relative, kind in ROOT_LAYOUT:
            candidate = root / relative
            usable = kind == "msopprof" or bool(env.get("ASCEND_TOOLKIT_HOME"))
            if usable and candidate.is_file() and os.access(candidate, os.X_OK):
                return Profiler(kind, str(candidate))
    if launcher:
        raise ToolNotFound(
            f"{launcher} is on PATH but ASCEND_TOOLKIT_HOME is not set, so `msprof op` cannot find msopprof",
            hint="run `source /usr/local/Ascend/ascend-toolkit/set_env.sh` (or the set_env.sh of your CANN install)",
        )
    raise ToolNotFound("no operator profiler found (msprof / msopprof)", hint=INSTALL_HINT)


def _candidate_roots(env: Mapping[str, str], roots: Sequence[str] | None) -> list[Path]:
    names = [env.get("ASCEND_HOME_PATH"), env.get("ASCEND_TOOLKIT_HOME")]
    names += list(DEFAULT_ROOTS if roots is None else roots)
    seen, result = set(), []
    for name in names:
        if not name:
            continue
        path = Path(name).expanduser()
        if path not in seen:
            seen.add(path)
            result.append(path)
    return result


# --------------------------------------------------------------------------------------------
# Building and running the command
# --------------------------------------------------------------------------------------------


def build_command(
    profiler: Profiler,
    application: Sequence[str],
    *,
    output: Path,
    mode: str = "device",
    aic_metrics: str | None = None,
    kernel_name: str | None = None,
    launch_count: int | None = None,
    soc_version: str | None = None,
) -> list[str]:
    """The documented argument list: ``msprof op [simulator] --output=DIR [options] APP [ARGS]``."""
    if mode not in MODES:
        raise CollectError(f"unknown mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
    if not application:
        raise CollectError("no application to profile", hint="give it after `--`: advisor collect -- ./my_operator")
    command = [profiler.path]
    if profiler.kind == "msprof":
        command.append("op")
    if mode == "simulator":
        command.append("simulator")
    command.append(f"--output={output}")
    if aic_metrics:
        command.append(f"--aic-metrics={aic_metrics}")
    if kernel_name:
        command.append(f"--kernel-name={kernel_name}")
    if launch_count is not None:
        command.append(f"--launch-count={launch_count}")
    if soc_version:
        command.append(f"--soc-version={soc_version}")
    return command + list(application)


def check_application(application: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """Fail early, naming the path, when the application does not exist (the profiler's own error is vaguer)."""
    if not application:
        raise CollectError("no application to profile", hint="give it after `--`: advisor collect -- ./my_operator")
    app = application[0]
    env = os.environ if env is None else env
    if os.sep in app or (os.altsep and os.altsep in app):
        if not Path(app).is_file():
            raise CollectError("application not found", path=app, hint="check the path of the program to profile")
        return
    if not shutil.which(app, path=env.get("PATH", "")) and not Path(app).is_file():
        raise CollectError(f"application {app!r} is not on PATH", hint="give its path, e.g. ./" + app)


def list_opprof_dirs(output: Path) -> set[Path]:
    """The ``OPPROF_*`` run folders directly under ``output``."""
    if not output.is_dir():
        return set()
    return {child for child in output.iterdir() if child.is_dir() and OPPROF_DIR.match(child.name)}


def run_profiler(command: Sequence[str], on_line: Callable[[str], None] | None = None, cwd: Path | None = None,
                 timeout: float | None = DEFAULT_TIMEOUT_S) -> None:
    """Run the profiler, streaming each output line to ``on_line``; raise ProfilerFailed on non-zero exit.

    The profiler runs in its own process group, which is stopped (SIGTERM, then SIGKILL) on timeout,
    on Ctrl-C / SIGTERM / SIGHUP to advisor, on any error, and once the profiler has exited (a helper
    it left behind is not waited for: its output is read for DRAIN_S more, then it is stopped).
    """
    tail: deque[str] = deque(maxlen=TAIL_LINES)

    def emit(line: str) -> None:
        tail.append(line)
        if on_line is not None:
            on_line(line)

    try:
        process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True)
    except OSError as exc:
        raise CollectError(f"cannot start the profiler: {exc.strerror or exc}", path=command[0],
                           hint=INSTALL_HINT) from None
    deadline = time.monotonic() + timeout if timeout else None
    stop_with = signal.SIGTERM
    try:
        with _signals_raise_interrupted():
            _stream_output(process, deadline, emit)
            _wait(process, deadline)
    except ProfilerInterrupted as exc:
        stop_with = signal.SIGINT if exc.signum == signal.SIGINT else signal.SIGTERM
        raise
    except _Deadline:
        raise ProfilerTimedOut(command, timeout, tail) from None
    finally:
        _stop_group(process, stop_with)
    if process.returncode != 0:
        raise ProfilerFailed(command, process.returncode, tail)


class _Deadline(Exception):
    """The timeout passed."""


def _stream_output(process: subprocess.Popen, deadline: float | None, emit: Callable[[str], None]) -> None:
    """Pass each output line on until EOF, or until DRAIN_S after the profiler exited (a helper may hold the pipe)."""
    stream = process.stdout
    fd = stream.fileno()
    os.set_blocking(fd, False)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    exited_at = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if exited_at is None and process.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= DRAIN_S:
                break
            if deadline is not None and now >= deadline:
                raise _Deadline
            if not selector.select(timeout=0.1):
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                break  # EOF: nothing holds the pipe open any more
            pending = _emit_lines(pending + decoder.decode(chunk), emit)
    pending += decoder.decode(b"", final=True)
    if pending:
        emit(pending.rstrip("\r"))
    stream.close()


def _emit_lines(text: str, emit: Callable[[str], None]) -> str:
    """Pass on every complete line of ``text``; return the unfinished rest (cut when it gets too long)."""
    *lines, rest = text.split("\n")
    for line in lines:
        emit(line.rstrip("\r"))
    while len(rest) > MAX_LINE_CHARS:
        emit(rest[:MAX_LINE_CHARS])
        rest = rest[MAX_LINE_CHARS:]
    return rest


def _wait(process: subprocess.Popen, deadline: float | None) -> None:
    # The profiler may close its output and keep running: the timeout still holds.
    while True:
        try:
            process.wait(timeout=0.1)
            return
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() >= deadline:
                raise _Deadline from None


def _stop_group(process: subprocess.Popen, first: int = signal.SIGTERM) -> None:
    """Stop the profiler's process group: ``first``, then SIGKILL after KILL_GRACE_S; never raises."""
    if process.poll() is None:
        _signal_group(process.pid, first)
        try:
            process.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    # Whatever is left in the group (the profiler, or a helper of a profiler that has exited) goes.
    _signal_group(process.pid, signal.SIGKILL)
    if process.poll() is None:
        process.wait()
    if process.stdout is not None and not process.stdout.closed:
        process.stdout.close()


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


@contextmanager
def _signals_raise_interrupted() -> Iterator[None]:
    """While the profiler runs, Ctrl-C, SIGTERM and SIGHUP raise ProfilerInterrupted (so it gets stopped)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def interrupted(signum, frame):
        raise ProfilerInterrupted(signum)

    wanted = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, interrupted) for signum in wanted}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def collect(
    application: Sequence[str],
    *,
    output: Path | None = None,
    mode: str = "device",
    aic_metrics: str | None = None,
    kernel_name: str | None = None,
    launch_count: int | None = None,
    soc_version: str | None = None,
    on_line: Callable[[str], None] | None = None,
    profiler: Profiler | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> CollectResult:
    """Profile ``application`` and return the new ``OPPROF_*`` folder it produced (``timeout`` 0/None: no limit)."""
    profiler = profiler or find_profiler()
    check_application(application)
    output = (output or Path.cwd()).expanduser().resolve()
    _prepare_output(output)
    command = build_command(
        profiler, application, output=output, mode=mode, aic_metrics=aic_metrics,
        kernel_name=kernel_name, launch_count=launch_count, soc_version=soc_version,
    )
    before = list_opprof_dirs(output)
    run_profiler(command, on_line=on_line, timeout=timeout)
    new = sorted(list_opprof_dirs(output) - before, key=lambda path: path.name)
    if not new:
        raise CollectError(
            f"{Path(profiler.path).name} finished but wrote no OPPROF_* folder",
            path=output,
            hint="check its output above (was the kernel launched? does --kernel-name match it?)",
        )
    return CollectResult(command=command, output_dir=output, opprof_dir=new[-1], profiler=profiler, extra_dirs=new[:-1])


def _prepare_output(output: Path) -> None:
    if output.exists() and not output.is_dir():
        raise CollectError("the output path is not a folder", path=output, hint="give --output a folder")
    try:
        # msOpProf refuses output folders that group/others can write to (doc §Constraints).
        output.mkdir(parents=True, exist_ok=True, mode=0o750)
    except OSError as exc:
        raise CollectError(f"cannot create the output folder: {exc.strerror or exc}", path=output,
                           hint="choose a writable --output folder") from None
