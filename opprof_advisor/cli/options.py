"""The options of the commands people run most (`suggest`, `profile`, `show`, `search`, `add`, `remove`), as
one table: the Typer app builds each command's signature from it (``cli/_common.typer_command``), and
``usage_problem`` says which combinations a command refuses. tests/test_cli_options.py holds the app to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from opprof_advisor.core.vocabulary import APPLIES_KEYS, KINDS


class Choice(NamedTuple):
    """An option taking one of ``values``. Typer is given the str Enum ``name`` of cli/choices.py, built from
    this."""

    name: str
    values: tuple[str, ...]


#: The knowledge-base entry kinds as a --kind choice.
Kind = Choice("Kind", tuple(KINDS))
TableOrJson = Choice("TableOrJson", ("table", "json"))
TableJsonHtml = Choice("TableJsonHtml", ("table", "json", "html"))
ReportFormat = Choice("ReportFormat", ("table", "json", "markdown", "html"))
#: profile and compare: the terminal table, JSON, HTML, or the tables as CSV / an xlsx workbook.
TableJsonHtmlSheets = Choice("TableJsonHtmlSheets", ("table", "json", "html", "csv", "xlsx"))
SuggestFormat = Choice("SuggestFormat", ("table", "json", "markdown", "html", "csv", "xlsx"))
ExecutorName = Choice("ExecutorName", ("auto", "serial", "processes", "dask"))
#: The training stacks the knowledge base writes for (``applies_to: stack``), as a --stack choice.
Stack = Choice("Stack", APPLIES_KEYS["stack"])
#: Every choice, for cli/choices.py.
CHOICES = (Kind, TableOrJson, TableJsonHtml, ReportFormat, TableJsonHtmlSheets, SuggestFormat, ExecutorName, Stack)


# NamedTuples, not frozen dataclasses: built at every start-up, a frozen dataclass costs ~7x more to define.
class Param(NamedTuple):
    """One option or argument: what both parsers need to read it, and what `--help` says of it."""

    name: str                          # the command function's parameter (the key of the parsed values)
    flags: tuple[str, ...]             # option names; () for a positional argument
    kind: Any                          # str, int, bool (a flag), Path, or a Choice
    help: str
    default: Any = None                # one of the values of a Choice
    required: bool = False
    many: bool = False                 # an argument that takes every remaining word
    min: int | None = None
    metavar: str | None = None
    exists: bool = False               # a Path that must exist
    dir_okay: bool = True              # a Path that may be a folder
    show_default: bool | None = None   # None: Typer's own default

    @property
    def is_argument(self) -> bool:
        return not self.flags


class Command(NamedTuple):
    name: str
    help: str
    params: tuple[Param, ...]


_FORMAT_HELP = "Output format."
_HTML_OUTPUT_HELP = "HTML report file (with --format html; default advisor-report-<time>.html here)."

DB = Param("db", ("--db",), Path, "Index database file (default: $ADVISOR_DB, else advisor.db in the advisor home "
                                  "folder).", dir_okay=False, show_default=False)
FORCE = Param("force", ("--force",), bool, "Replace an --output / --export file that advisor did not write (a file "
                                          "inside the profile read is never written).", default=False)
EXECUTOR = Param("executor", ("--executor",), ExecutorName,
                 "Where a folder of ranks is summarised rank by rank: auto (worker processes when the ranks are big "
                 "enough), serial, processes, or dask (a local Dask cluster, or --scheduler; pip install "
                 "'opprof-advisor[cluster]').", default="auto")
SCHEDULER = Param("scheduler", ("--scheduler",), str,
                  "Run the per-rank map on this Dask scheduler (e.g. tcp://host:8786; its workers must see the rank "
                  "folders at the same paths). Implies --executor dask.", metavar="ADDRESS", show_default=False)
LANG = Param("lang", ("--lang",), str, "Language of the output: zh (Chinese) or en (default: $ADVISOR_LANG, else zh for "
                                      "a zh_* locale, else en).", metavar="zh|en", show_default=False)
TABLE_OR_JSON = Param("fmt", ("--format", "-f"), TableOrJson, _FORMAT_HELP, default="table")
EACH = Param("each", ("--each",), bool, "When PATH holds several separate profiles (runs of different tools, a before "
                                     "and an after), analyse each in turn instead of refusing (with --format json: "
                                     "one document holding them all).", default=False)
PEAKS = Param("peaks", ("--peaks",), Path,
              "YAML with measured or known peaks (chip, aic, aiv, freq_mhz, hbm_gbps, cube_tflops: {bf16: ...}); "
              "over the profile's own figures and $ADVISOR_HOME/peaks.yaml.", exists=True, dir_okay=False,
              show_default=False)

SUGGEST = Command("suggest", "Findings for a profile, ranked by expected gain (a modelled range, Amdahl- and "
                             "roofline-bounded), each with the knowledge-base remedies that apply to this workload.", (
    Param("path", (), Path, "Profiler output: a torch_npu *_ascend_pt folder, a PROF_* or OPPROF_* folder, an "
                            "op_summary / kernel_details CSV, an msprof DB, a folder of ranks, or a .zip / .tar.gz "
                            "of one.", metavar="PATH", show_default=False),
    Param("profile", ("--profile", "-p"), Path, "The same as PATH (the older spelling, kept for scripts).",
          show_default=False),
    Param("top", ("--top", "-n"), int, "At most this many findings (fewer when the rest is under 3 %).", default=5,
          min=1),
    Param("model", ("--model",), str, "Model hint, e.g. yolov8, llama2-7b: weighs in when choosing remedies."),
    Param("kind", ("--kind",), Kind, "Remedies of this kind only (case: case studies under the findings)."),
    Param("stack", ("--stack",), Stack, "The training stack the run used (no profile shows it): its remedies "
                                        "rank with the general ones, other stacks' are left out."),
    Param("fmt", ("--format", "-f"), SuggestFormat, "Output format (csv: the suggestions table; xlsx: a sheet per "
                                                    "table, needs --output).", default="table"),
    Param("explain", ("--explain",), bool, "Show each gain's assumptions, why each remedy applies, and the entries "
                                           "left out with why.", default=False),
    Param("output", ("--output", "-o"), Path, "Report file: with --format html (default "
                                              "advisor-report-<time>.html here) or xlsx.", metavar="FILE"),
    EACH, FORCE, DB, EXECUTOR, SCHEDULER, LANG,
))

PROFILE = Command("profile", "Show where device time goes: op types by time with unit and bound class, symptoms, "
                             "and what cannot be judged.\n\nExample: advisor profile ./rank0_ascend_pt --top 10", (
    Param("path", (), Path, "Profiler output: a torch_npu *_ascend_pt folder, a PROF_* or OPPROF_* folder, an "
                            "op_summary / kernel_details CSV, an msprof DB, a folder of ranks, or a .zip / .tar.gz "
                            "of one.", required=True, metavar="PATH", show_default=False),
    Param("top", ("--top", "-n"), int, "How many op types to list.", default=20, min=1),
    Param("fmt", ("--format", "-f"), TableJsonHtmlSheets, "Output format (csv: the op-type table; xlsx: a sheet per "
                                                          "table, needs --output).", default="table"),
    Param("export", ("--export",), Path, "Also write kernels and the op-type summary into this SQLite file (browse "
                                         "it with datasette).", dir_okay=False, show_default=False),
    Param("output", ("--output", "-o"), Path, _HTML_OUTPUT_HELP, show_default=False),
    PEAKS, EACH, FORCE, EXECUTOR, SCHEDULER, LANG,
))

SHOW = Command("show", "Show one entry: its summary, gain, evidence grade, sources and body.\n\n"
                       "Example: advisor show nms-on-npu", (
    Param("entry_id", (), str, "The entry id (see `advisor search` / `advisor kb list`).", required=True,
          metavar="ID", show_default=False),
    TABLE_OR_JSON,
    DB, LANG,
))

SEARCH = Command("search", "Search the knowledge base (full text + fuzzy match on titles, ids, operators and "
                           "tags).\n\nExample: advisor search nms --format json", (
    Param("query", (), str, "What to look for: words, an operator name, an id (typos are fine).", required=True,
          many=True, metavar="QUERY", show_default=False),
    Param("kind", ("--kind", "-k"), Kind, "Only entries of this kind."),
    # `-o` is --output in every command, so --operator has no short form (search writes no file).
    Param("operator", ("--operator",), str, "Only entries about this operator family or alias (e.g. NMS, "
                                            "BatchMatMulV2)."),
    Param("top", ("--top", "-n"), int, "How many hits to show.", default=10, min=1),
    TABLE_OR_JSON,
    DB, LANG,
))

ADD = Command("add", "Validate a markdown entry, copy it into your KB folder and index it.\n\n"
                     "Every problem is printed as `path:line: message` and nothing is written when there is one. A "
                     "warning names the existing entry when the new one's title and summary nearly copy it.\n"
                     "Example: advisor add my-yolo-case.md", (
    Param("file", (), Path, "A markdown entry (see kb/README.md for the format).", required=True, metavar="FILE.md",
          show_default=False),
    Param("replace", ("--replace",), bool, "Overwrite an existing entry with the same id.", default=False),
    DB, LANG,
))

REMOVE = Command("remove", "Remove an entry you added with `advisor add` from your KB folder and the index.\n\n"
                           "The shipped knowledge base is read-only: removing one of its entries is refused. An entry "
                           "you added over a shipped one (--replace) is removed and the shipped entry is in effect "
                           "again.\nExample: advisor remove my-yolo-case", (
    Param("entry_id", (), str, "The id of an entry you added (see `advisor kb list`).", required=True, metavar="ID",
          show_default=False),
    TABLE_OR_JSON,
    DB, LANG,
))

# add and remove are here because at 50,000 entries Typer's start-up (~0.3 s) was a third of an add.
COMMANDS: dict[str, Command] = {command.name: command for command in (SUGGEST, PROFILE, SHOW, SEARCH, ADD, REMOVE)}


class UsageProblem(NamedTuple):
    """A combination of options the command refuses (Typer prints it as a usage error, exit 2)."""

    message: str
    param_hint: str


def usage_problem(name: str, values: dict[str, Any]) -> UsageProblem | None:
    """What is wrong with the combination of ``values`` for command ``name``, before any work is done."""
    fmt, output = values.get("fmt"), values.get("output")
    if name == "suggest" and (values.get("path") is None) == (values.get("profile") is None):
        return (UsageProblem("give the profile once: advisor suggest PATH (or --profile PATH)", "--profile")
                if values.get("path") is not None else
                UsageProblem("which profile? advisor suggest PATH", "PATH"))
    if name in ("suggest", "profile"):
        if values.get("each") and fmt not in ("table", "json"):
            return UsageProblem("--each prints a table or json for each profile", "--each")
        if output is not None and fmt not in ("html", "xlsx", "csv"):
            return UsageProblem("--output is only used with --format html or xlsx", "--output")
        problem = sheets_problem(fmt, output)
        if problem is not None:
            return problem
    executor = values.get("executor")
    if values.get("scheduler") and executor not in (None, "auto", "dask"):
        return UsageProblem(f"runs the map on Dask, not with --executor {executor}", "--scheduler")
    return None


def sheets_problem(fmt: str | None, output: Path | None) -> UsageProblem | None:
    """--format csv prints its table on stdout: an --output with it is a usage error."""
    if fmt == "csv" and output is not None:
        return UsageProblem("--format csv prints to stdout; --output is for html and xlsx", "--output")
    return None
