"""The environment advisor runs in and input of any length: one line and exit 1, a sane fallback, never a traceback.

The environment (core/terminal.py's guard, set up by the entry point): a closed or full stdout, an ASCII or
Latin-1 stream with Chinese text, a path that is not UTF-8, $COLUMNS of any value, a closed stdin, no home.
Long input: a search query of a megabyte, thousands of exclude patterns or arguments, a profile of many op
types, an error quoting a 100 kB value: every argument bounded, the cost linear in it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import pty
import random
import re
import shutil
import string
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from opprof_advisor import commands
from opprof_advisor.core import operators
from opprof_advisor.core.errors import AdvisorError, ScanError
from opprof_advisor.core.terminal import MAX_COLUMNS, MIN_COLUMNS, ascii_json, sane_size, sane_terminal_size
from opprof_advisor.kb.search import MAX_QUERY_CHARS, bounded_query
from opprof_advisor.scan.walk import MAX_EXCLUDE_TOTAL, MAX_EXCLUDES, check_excludes, exclusions

EXAMPLES = ROOT / "data" / "examples"
YOLO = next((EXAMPLES / "yolov8_torch_npu").glob("*_ascend_pt"))
KERNELS = YOLO / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
FORMATS = ["table", "json", "markdown", "csv"]

CLOSED = ("error: stdout is closed: there is nowhere to print the output — run it with stdout open, or send it to "
          "a file (> FILE)\n")
FULL = ("error: cannot write the output to stdout: No space left on device — make room where stdout goes, or send "
        "the output elsewhere\n")
CANNOT_SHOW_HINT = ("- use a UTF-8 locale (LANG=C.UTF-8) or PYTHONIOENCODING=utf-8, or --format json, or --lang en\n")


@pytest.fixture(scope="module")
def index_db(tmp_path_factory) -> Path:
    """One KB index for the module's child processes (each would otherwise build its own)."""
    db = tmp_path_factory.mktemp("index") / "advisor.db"
    done = advisor("kb", "list", env={"ADVISOR_DB": str(db)})
    assert done.returncode == 0, done.stderr
    return db


def advisor(*args: str, env: dict | None = None, drop: tuple[str, ...] = (), **options) -> subprocess.CompletedProcess:
    """``python -m opprof_advisor ARGS`` in a child process (bytes out), with ``env`` on top of this one's."""
    environ = {key: value for key, value in os.environ.items() if key not in drop}
    environ.update(env or {})
    options.setdefault("stdout", subprocess.PIPE)
    options.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "opprof_advisor", *args], cwd=ROOT, env=environ, timeout=300,
                          **options)


def lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


# ---------------------------------------------------------------------------------------------
# The output stream: closed, full, unencodable
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_closed_stdout_is_one_line_and_exit_1(fmt, index_db):
    done = advisor("suggest", str(YOLO), "--format", fmt, env={"ADVISOR_DB": str(index_db)},
                   stdout=None, preexec_fn=lambda: os.close(1))
    assert (done.returncode, done.stderr.decode()) == (1, CLOSED)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_full_stdout_is_one_line_and_exit_1(fmt, index_db):
    with open("/dev/full", "w") as full:
        done = advisor("suggest", str(YOLO), "--format", fmt, env={"ADVISOR_DB": str(index_db)}, stdout=full)
    assert (done.returncode, done.stderr.decode()) == (1, FULL)


@pytest.mark.parametrize("args", [["--help"], ["suggest", "--help"], ["--version"]])
def test_help_and_version_on_a_failing_stdout_are_one_line_and_exit_1(args):
    with open("/dev/full", "w") as full:
        done = advisor(*args, stdout=full)
    assert (done.returncode, done.stderr.decode()) == (1, FULL)
    done = advisor(*args, stdout=None, preexec_fn=lambda: os.close(1))
    assert (done.returncode, done.stderr.decode()) == (1, CLOSED)


def test_closed_standard_descriptors_are_held_so_no_file_takes_their_number(tmp_path):
    # A file opened later must not become fd 0, 1 or 2: a child process (a profiler, a worker) would write into it.
    script = ("import os, sys\nfrom opprof_advisor.core.terminal import guard_standard_streams\n"
              "guard_standard_streams()\n"
              f"fd = os.open({str(tmp_path / 'f')!r}, os.O_WRONLY | os.O_CREAT)\n"
              "sys.stderr.write(str(fd))\n")

    def close_all():
        os.close(0)
        os.close(1)

    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, stdin=None, stdout=None, stderr=subprocess.PIPE,
                          preexec_fn=close_all, timeout=60)
    assert done.returncode == 0 and int(done.stderr) > 2


def test_ctrl_c_while_the_modules_load_ends_quietly_with_130():
    # The interrupt lands 0.1 s in, while the CLI's modules are still being imported (they take ~0.3 s).
    script = ("import signal, sys\n"
              "def interrupt(*_):\n"
              "    raise KeyboardInterrupt\n"
              "signal.signal(signal.SIGALRM, interrupt)\n"
              "signal.setitimer(signal.ITIMER_REAL, 0.1)\n"
              "sys.argv = ['advisor', 'suggest', '--help']\n"
              "from opprof_advisor.__main__ import run\n"
              "run()\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, timeout=60)
    assert (done.returncode, done.stderr, done.stdout) == (130, b"", b"")


def test_a_closed_stdin_is_no_failure():
    done = advisor("profile", str(YOLO), "--top", "1", stdin=None, preexec_fn=lambda: os.close(0))
    assert done.returncode == 0 and done.stderr == b"" and b"device time" in done.stdout


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"},
                                 {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}])
@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_chinese_on_an_ascii_or_latin1_stdout_is_refused_in_one_english_line(env, fmt, index_db):
    done = advisor("suggest", str(YOLO), "--lang", "zh", "--format", fmt, env={**env, "ADVISOR_DB": str(index_db)},
                   drop=("PYTHONIOENCODING",))
    encoding = "latin-1" if env.get("PYTHONIOENCODING") == "latin-1" else "ascii"
    err = done.stderr.decode("ascii")  # (said in English: the stream cannot show Chinese either)
    assert done.returncode == 1 and err.count("\n") == 1
    assert err.startswith("error: stdout cannot show the character U+") and err.endswith(
        f": its encoding is {encoding} " + CANNOT_SHOW_HINT)


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"}])
def test_json_on_an_ascii_or_latin1_stdout_is_escaped_not_refused(env, index_db):
    args = ("suggest", str(YOLO), "--lang", "zh", "--format", "json")
    escaped = advisor(*args, env={**env, "ADVISOR_DB": str(index_db)})
    utf8 = advisor(*args, env={"ADVISOR_DB": str(index_db)}, drop=("PYTHONIOENCODING",))
    assert (escaped.returncode, escaped.stderr, utf8.returncode) == (0, b"", 0)
    assert escaped.stdout.isascii() and json.loads(escaped.stdout) == json.loads(utf8.stdout)


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_english_on_an_ascii_stdout_falls_back_to_ascii_typography(fmt, index_db):
    done = advisor("suggest", str(YOLO), "--format", fmt,
                   env={"PYTHONIOENCODING": "ascii", "ADVISOR_DB": str(index_db)})
    assert (done.returncode, done.stderr) == (0, b"")
    text = done.stdout.decode("ascii")
    assert "NonMaxSuppressionV3" in text and "19.7" in text
    if fmt != "csv":
        assert "inference | detection" in text and "575 us - 1.03 ms" in text  # (· and – and µ)


def test_a_path_that_is_not_utf8_is_written_as_its_bytes(tmp_path):
    folder = os.fsencode(tmp_path) + b"/caf\xe9_ascend_pt"
    os.makedirs(folder + b"/ASCEND_PROFILER_OUTPUT")
    for name in ("kernel_details.csv", "op_statistic.csv", "step_trace_time.csv"):
        Path(os.fsdecode(folder + b"/ASCEND_PROFILER_OUTPUT/" + name.encode())).write_bytes(
            (KERNELS.parent / name).read_bytes())
    table = advisor("profile", os.fsdecode(folder), "--top", "1")
    assert table.returncode == 0 and table.stderr == b"" and folder in table.stdout  # as `ls` writes it
    document = advisor("profile", os.fsdecode(folder), "--top", "1", "--format", "json")
    assert document.returncode == 0 and document.stderr == b"" and document.stdout.isascii()
    assert json.loads(document.stdout)["source"]["path"] == os.fsdecode(folder)


def test_ascii_json_is_the_same_document():
    text = json.dumps({"a": "中文 µs 😀 caf\udce9", "b": [1.5, None]}, ensure_ascii=False)
    assert ascii_json(text).isascii() and json.loads(ascii_json(text)) == json.loads(text)


def test_an_error_stderr_cannot_show_in_the_language_asked_is_said_in_english(tmp_path):
    done = advisor("profile", str(tmp_path / "missing"), "--lang", "zh",
                   env={"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
                   drop=("PYTHONIOENCODING",))
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.decode("ascii") == f"error: {tmp_path / 'missing'}: no such file or directory - check the path\n"


def test_a_warning_stderr_cannot_show_in_the_language_asked_is_said_in_english(index_db):
    query = "matmul " * 300  # cut, and said so in a warning
    args = ("search", query, "--lang", "zh", "--format", "json")
    zh = advisor(*args, env={"ADVISOR_DB": str(index_db)})
    ascii_stderr = advisor(*args, env={"ADVISOR_DB": str(index_db), "PYTHONIOENCODING": "ascii"})
    assert zh.returncode == ascii_stderr.returncode == 0
    assert zh.stderr.decode() == "warning: 查询有 2,100 个字符：只搜索了前 1,000 个\n"
    assert ascii_stderr.stderr.decode("ascii") == \
        "warning: the query has 2,100 characters: only its first 1,000 were searched\n"  # no \\uXXXX


# ---------------------------------------------------------------------------------------------
# The terminal's size
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, size", [
    ("0", None), ("-5", None), ("abc", None), ("", None), ("²", None), ("١٢٠", None), ("000", None),
    ("3", MIN_COLUMNS), ("99999999999999999999", MAX_COLUMNS), ("9" * 5000, MAX_COLUMNS), (" 90 ", 90), ("120", 120),
])
def test_columns_of_any_value_give_a_sane_width(value, size):
    assert sane_size(value, MIN_COLUMNS, MAX_COLUMNS) == size
    environ = {"COLUMNS": value}
    sane_terminal_size(environ)
    assert environ == ({} if size is None else {"COLUMNS": str(size)})


@pytest.mark.parametrize("name", ["COLUMNS", "TERMINAL_WIDTH"])
@pytest.mark.parametrize("columns", ["0", "-5", "abc", "²", "99999999999999999999"])
def test_help_with_any_columns_is_printed_at_a_sane_width(name, columns):
    done = advisor("--help", env={name: columns})
    assert done.returncode == 0 and done.stderr == b""
    shown = lines(done.stdout)
    assert len(shown) > 10 and max(len(line) for line in shown) <= MAX_COLUMNS


def on_a_terminal(*args: str, columns: str) -> tuple[int, str, float]:
    """Exit code, output and seconds of ``advisor ARGS`` writing to a pseudo-terminal."""
    leader, follower = pty.openpty()
    start = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "opprof_advisor", *args], cwd=ROOT, stdout=follower,
                               stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": columns, "TERM": "xterm"})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    code = process.wait(timeout=120)
    os.close(leader)
    assert process.stderr.read() == b""
    return code, b"".join(chunks).decode("utf-8", "replace"), time.monotonic() - start


@pytest.mark.parametrize("columns", ["0", "100000000"])
def test_a_terminal_with_columns_out_of_range_gets_a_table_at_a_sane_width(columns):
    code, text, seconds = on_a_terminal("show", "nms-on-npu", columns=columns)
    assert code == 0 and "nms-on-npu" in text and seconds < 60  # (COLUMNS=0 printed nothing; a huge one ran minutes)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()  # (without the escape codes of its styles)
    assert len(shown) > 5 and max(len(line) for line in shown) <= MAX_COLUMNS


# ---------------------------------------------------------------------------------------------
# Home
# ---------------------------------------------------------------------------------------------


def test_a_user_without_home_gets_one_line(monkeypatch):
    import pwd

    from opprof_advisor.core import paths

    for name in ("HOME", "ADVISOR_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: (_ for _ in ()).throw(KeyError(uid)))
    with pytest.raises(AdvisorError) as error:
        paths.home_dir()
    assert str(error.value) == ("cannot tell where advisor's files go: $HOME is not set and this user has no home — "
                                "set HOME, or ADVISOR_HOME to a folder for advisor's index and your KB entries")
    monkeypatch.setenv("ADVISOR_HOME", "~/advisor")
    with pytest.raises(AdvisorError) as error:
        paths.home_dir()
    assert str(error.value) == ("~/advisor: ADVISOR_HOME cannot be used: it starts with ~ and this user has no "
                                "home — set ADVISOR_HOME to an absolute path, or set HOME")


# ---------------------------------------------------------------------------------------------
# Long arguments
# ---------------------------------------------------------------------------------------------


def words(characters: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(6)) for _ in range(characters // 7))


def test_a_long_search_query_is_cut_and_says_so(index_db):
    query = words(30_000)
    start = time.monotonic()
    done = advisor("search", query, "--format", "json", env={"ADVISOR_DB": str(index_db)})
    assert time.monotonic() - start < 60  # (it took 4 s at 30 kB, 72 s at 375 kB, minutes at 1 MB)
    document = json.loads(done.stdout)
    kept = len(document["query"])
    assert done.returncode == 0 and document["query_cut_from"] == len(query) and kept <= MAX_QUERY_CHARS
    assert query.startswith(document["query"]) and query[kept] == " "  # cut between two words
    assert lines(done.stderr)[0] == (f"warning: the query has {len(query):,} characters: only its first {kept:,} "
                                     "were searched")


def test_search_costs_what_the_bound_costs_whatever_the_query(index_db, monkeypatch):
    monkeypatch.setenv("ADVISOR_DB", str(index_db))
    commands.search("nms", db=None)  # (the index opened once)
    for query in (words(1_000_000), "非极大值抑制" * 200_000, "x" * 1_000_000):
        start = time.monotonic()
        document = commands.search(query, top=3, db=None)
        assert time.monotonic() - start < 10 and document["query_cut_from"] == len(query)
    assert "query_cut_from" not in commands.search("nms on the ai cpu", db=None)


def test_a_query_is_cut_at_a_word_boundary_and_chinese_at_the_bound():
    assert bounded_query("short query") == "short query"
    assert bounded_query("ab " * 500) == ("ab " * 333).strip()
    assert bounded_query("w" * 2000) == "w" * MAX_QUERY_CHARS
    assert bounded_query("中" * 2000) == "中" * MAX_QUERY_CHARS


def test_an_error_quoting_a_long_value_is_one_line_cut_in_its_middle(index_db):
    done = advisor("show", "x" * 100_000, env={"ADVISOR_DB": str(index_db)})
    err = done.stderr.decode()
    assert done.returncode == 1 and err.count("\n") == 1 and len(err) < 8300
    assert err.startswith("error: no knowledge-base entry with id 'xxx") and " … " in err
    assert err.endswith("xxx' — see `advisor kb list`\n")


@pytest.mark.parametrize("command", [["memory"], ["serving"], ["scan"], ["kb", "check"], ["profile"], ["suggest"]])
def test_a_path_no_file_system_takes_is_one_line_naming_it(command, tmp_path):
    path = str(tmp_path / "/".join(["d" * 200] * 25))  # 5,000 bytes (and 300-byte names below)
    for given in (path, str(tmp_path / ("n" * 300))):
        done = advisor(*command, given)
        err = done.stderr.decode()
        assert done.returncode == 1 and err.count("\n") == 1, err
        assert err.startswith(f"error: {given[:60]}") and "internal error" not in err


def test_more_arguments_than_the_bound_are_refused_before_parsing():
    start = time.monotonic()
    done = advisor("scan", "opprof_advisor", *[f"-xd{i}/*" for i in range(100_000)])
    assert time.monotonic() - start < 60  # (the parser alone took 13 s, the walk 10 minutes)
    assert (done.returncode, done.stderr.decode()) == (
        2, "error: 100,002 arguments: at most 10,000 are taken — give fewer; a long search query in quotes is one "
           "argument\n")


def test_more_exclude_patterns_than_the_bound_are_refused_in_one_line():
    done = advisor("scan", "tests/scan_fixture_repo", *[f"-xd{i}/*" for i in range(MAX_EXCLUDES + 1)])
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        1, b"", "error: 1,001 exclude patterns: at most 1,000 are taken — merge them into fewer globs, such as "
                "'tests/*' or '*_test.py'\n")
    with pytest.raises(ScanError, match="an exclude pattern has 5,000 characters: at most 4,096 are taken"):
        commands.scan("tests/scan_fixture_repo", top=0, exclude=["*" * 5000])


def test_exclude_patterns_are_tested_at_once_as_fnmatch_would(tmp_path):
    rng = random.Random(7)
    patterns = tuple("".join(rng.choice("ab/*?[]._-") for _ in range(rng.randint(1, 8))) for _ in range(400)) + (
        "tests/*", "*_test.py", "a/b", "x.py", "[ab]*", "[!a]b", "[", "a[b", "]")
    texts = ["".join(rng.choice("ab/._-cx") for _ in range(rng.randint(0, 10))) for _ in range(2000)]
    for start in range(0, len(patterns), 40):
        chunk = patterns[start:start + 40]
        test = exclusions(chunk)
        assert [test(text) for text in texts] == [any(fnmatch.fnmatch(text, p) for p in chunk) for text in texts]
    # a thousand globs against a tree: the walk costs what one expression costs
    for folder in range(50):
        (tmp_path / f"pkg{folder}").mkdir()
        for file in range(20):
            (tmp_path / f"pkg{folder}" / f"m{file}.py").write_text("import torch\n")
    start = time.monotonic()
    document = commands.scan(tmp_path, top=0, exclude=[f"other{i}/*" for i in range(999)] + ["pkg1/*"])
    assert time.monotonic() - start < 60 and document["files_scanned"] == 49 * 20  # (pkg1/ left out)


# ---------------------------------------------------------------------------------------------
# Many op types
# ---------------------------------------------------------------------------------------------


def reference_family(op_type: str, fuzzy: bool = True) -> str | None:
    """canonical_family as it was: a scan of the whole alias table for each name (the answers must not change)."""
    from rapidfuzz import fuzz, process

    if not op_type:
        return None
    index = operators._alias_index()
    key = operators.normalise_name(op_type)
    if key in index:
        return index[key]
    stripped = operators._VERSION_SUFFIX.sub("", key)
    if stripped in index:
        return index[stripped]
    if key.startswith("hcom"):
        for alias, family in index.items():
            if alias.startswith("hcom") and key.startswith(alias):
                return family
    prefixes = sorted(((a, f) for a, f in index.items() if len(a) >= operators.MIN_PREFIX_ALIAS),
                      key=lambda item: -len(item[0]))
    leading = next((family for alias, family in prefixes if key.startswith(alias)), None)
    if leading is not None:
        return leading
    if not fuzzy or len(key) < 4:
        return None
    best = process.extractOne(key, list(index), scorer=fuzz.ratio, score_cutoff=88)
    return index[best[0]] if best else None


def test_an_op_type_family_is_found_without_a_scan_of_the_alias_table():
    rng = random.Random(3)
    names = []
    for family, aliases in operators.FAMILIES.items():
        for alias in (family, *aliases):
            names += [alias, alias + "V2", alias + "Custom", alias[:-1], "x" + alias, alias.upper(),
                      "hcom_" + alias + "_12_3", alias[1:], alias.replace("a", "e")]
    names += ["".join(rng.choice(string.ascii_letters + "_") for _ in range(rng.randint(1, 30))) for _ in range(5000)]
    assert [operators.canonical_family(n) for n in names] == [reference_family(n) for n in names]
    assert [operators.canonical_family(n, fuzzy=False) for n in names] == [reference_family(n, False) for n in names]
    distinct = [f"CustomOpType{i}" for i in range(200_000)]
    start = time.monotonic()
    for name in distinct:
        operators.canonical_family(name)
    first = time.monotonic() - start
    start = time.monotonic()
    for name in distinct:  # each stage of a profile asks again: answered from the cache
        operators.canonical_family(name)
        operators.canonical_family(name, fuzzy=False)
    assert first < 30 and time.monotonic() - start < first


def test_a_profile_of_many_op_types_costs_in_proportion(tmp_path):
    header, row = KERNELS.read_text().splitlines()[:2]
    import csv
    import io

    cells = next(csv.reader(io.StringIO(row)))
    names = next(csv.reader(io.StringIO(header)))
    name, kind, started = names.index("Name"), names.index("Type"), names.index("Start Time(us)")
    seconds = []
    for count in (2_000, 20_000):
        folder = tmp_path / f"many{count}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        folder.mkdir(parents=True)
        with open(folder / "kernel_details.csv", "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(names)
            for i in range(count):
                cells[name], cells[kind], cells[started] = f"Op{i}_kernel", f"OpType{i}", f"{1.7e15 + i * 50:.3f}"
                writer.writerow(cells)
        start = time.process_time()
        document = commands.profile(folder.parent, top=5)
        seconds.append(time.process_time() - start)
        assert document["op_types_total"] == count
    assert seconds[1] < 25 * seconds[0] + 5  # ten times the op types: about ten times the time, not a hundred


def test_padding_around_a_query_is_no_cut_and_the_words_are_searched():
    assert bounded_query(" " * 2000 + "matmul" + "\u3000" * 1500) == "matmul"
    words = bounded_query("matmul " * 300).split()
    assert set(words) == {"matmul"} and len(" ".join(words)) <= MAX_QUERY_CHARS  # whole words only


def test_a_stderr_that_cannot_take_a_warning_does_not_stop_the_command(tmp_path):
    out = tmp_path / "out.txt"
    with open(out, "w") as stdout, open("/dev/full", "w") as stderr:
        code = subprocess.run([sys.executable, "-m", "opprof_advisor", "search", "matmul " * 300], stdout=stdout,
                              stderr=stderr, cwd=ROOT, timeout=120).returncode
    assert code == 0 and "matmul" in out.read_text()


def test_exclude_patterns_are_bounded_in_all(tmp_path):
    check_excludes(["*a*" * 1000] * 5)  # 15,000 characters: taken
    with pytest.raises(ScanError, match="characters in all"):
        check_excludes(["*a*b" * 1000] * (MAX_EXCLUDE_TOTAL // 4000 + 1))


def test_an_ascii_stdout_shows_a_chinese_name_escaped_in_english_and_refuses_chinese_output(tmp_path):
    named = tmp_path / "模型_ascend_pt"
    shutil.copytree(YOLO, named)
    environ = {**os.environ, "PYTHONIOENCODING": "ascii"}
    english = subprocess.run([sys.executable, "-m", "opprof_advisor", "profile", str(named), "--top", "2"], cwd=ROOT,
                             env=environ, capture_output=True, timeout=300)
    assert english.returncode == 0 and english.stdout.splitlines()[0].startswith(
        str(tmp_path).encode() + b"/\\u6a21\\u578b_ascend_pt  (torch-npu-text")
    chinese = subprocess.run([sys.executable, "-m", "opprof_advisor", "profile", str(named), "--lang", "zh"], cwd=ROOT,
                             env=environ, capture_output=True, timeout=300)
    assert chinese.returncode == 1 and b"stdout cannot show the character" in chinese.stderr
