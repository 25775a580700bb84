"""The README: short, its links resolve, its set-up commands are CI's, and its sample output is the real one.

Sample output sits between markers naming the command it comes from:

    <!-- sample: suggest data/examples/yolov8_torch_npu --top 3 -->
    ```text
    $ advisor suggest data/examples/yolov8_torch_npu --top 3
    ...what that command prints...
    ```
    <!-- /sample -->

The test runs the command (in a subprocess, from the project folder, with a fresh ADVISOR_HOME and a pinned
terminal: stdout is a pipe, as when a reader pipes it) and compares, ignoring only trailing whitespace.
After changing the output, rewrite the blocks with

    .venv/bin/python tests/test_readme.py --write
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_LINES = 250

SAMPLE = re.compile(r"(?P<open><!-- sample: (?P<args>[^>]*?) -->\n```text\n)(?P<body>.*?)(?P<close>```\n<!-- /sample -->)",
                    re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: What the sample's environment holds: nothing of the machine's terminal, locale or advisor set-up leaks in.
PINNED = {"COLUMNS": "100", "LINES": "50", "TERM": "dumb", "NO_COLOR": "1", "LANG": "C.UTF-8", "ADVISOR_LANG": "en"}


def readme() -> str:
    return README.read_text(encoding="utf-8")


def normalise(text: str) -> str:
    """Trailing whitespace off every line and the end; one final newline."""
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines()) + "\n"


def real_output(args: str) -> str:
    """What `advisor ARGS` prints into a pipe, headed by the command line as the README shows it."""
    with tempfile.TemporaryDirectory(prefix="readme-sample-") as home:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "ADVISOR_HOME": home, **PINNED}
        run = subprocess.run([sys.executable, "-m", "opprof_advisor", *shlex.split(args)], cwd=ROOT, env=env,
                             capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert run.returncode == 0, f"advisor {args} exited {run.returncode}:\n{run.stdout}{run.stderr}"
    return normalise(f"$ advisor {args}\n{run.stdout}")


def samples(text: str) -> list[re.Match[str]]:
    return list(SAMPLE.finditer(text))


def write_samples() -> int:
    """Rewrite every sample block of the README from the real output; the number of blocks changed."""
    text = readme()
    changed = 0

    def fill(match: re.Match[str]) -> str:
        nonlocal changed
        body = real_output(match["args"])
        changed += normalise(match["body"]) != body
        return match["open"] + body + match["close"]

    README.write_text(SAMPLE.sub(fill, text), encoding="utf-8")
    return changed


def fenced_command(text: str, number: int) -> str:
    """The command under the README's `# N. ...` comment in the set-up block."""
    return re.search(rf"^# {number}\..*\n(.+)$", text, re.M).group(1).strip()


def slug(heading: str) -> str:
    """GitHub's anchor for a markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


def local_links(page: Path) -> list[str]:
    return [link for link in LINK.findall(page.read_text(encoding="utf-8"))
            if not re.match(r"[a-z]+:", link) and not link.startswith("#")]


# -------------------------------------------------------------------------------------------------------------


def test_the_readme_is_at_most_250_lines():
    assert len(readme().splitlines()) <= MAX_LINES


def test_the_readme_sample_output_is_the_real_output():
    found = samples(readme())
    assert found, "the README shows no sample output between <!-- sample: ... --> markers"
    for match in found:
        assert normalise(match["body"]) == real_output(match["args"]), (
            f"the README's sample of `advisor {match['args']}` is not what the code prints: "
            "run .venv/bin/python tests/test_readme.py --write")


def test_every_link_of_the_readme_and_the_docs_resolves():
    pages = [README, *sorted(DOCS.glob("*.md"))]
    broken = []
    for page in pages:
        for link in local_links(page):
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve()
            if not target.exists():
                broken.append(f"{page.relative_to(ROOT)}: {link}")
            elif anchor and target.suffix == ".md" and anchor not in anchors(target):
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such heading)")
    assert broken == []


def test_the_readme_links_every_docs_page():
    linked = {(ROOT / link.partition("#")[0]).resolve() for link in local_links(README)}
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ holds no pages"
    assert [page.name for page in pages if page.resolve() not in linked] == []


def test_the_two_setup_commands_are_the_ones_ci_runs():
    text = readme()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    test_command = fenced_command(text, 2)
    assert test_command == "python3 -m venv .venv && .venv/bin/pip install -q '.[test]' && .venv/bin/python -m pytest -q"
    assert test_command in ci  # verbatim, as a line of its own
    # The first command installs the same way without the test extras, then advises on a bundled example.
    venv, install, advise = fenced_command(text, 1).split(" && ")
    assert [venv, install.replace(" .", " '.[test]'")] == test_command.split(" && ")[:2]
    assert advise.startswith(".venv/bin/advisor suggest ")
    example = re.search(r"advisor suggest (\S+)", advise).group(1)
    assert (ROOT / example).is_dir() and example.startswith("data/examples/")
    assert example in {match["args"].split()[1] for match in samples(text)}  # its output is the one shown


def test_the_readme_says_how_long_the_tests_take():
    assert re.search(r"suite takes about [\d–-]+ minutes on \d+ cores", readme())


def test_the_commands_table_has_one_row_per_command_of_the_cli():
    import typer.main

    from opprof_advisor.cli.app import app

    rows = [line for line in readme().splitlines() if line.startswith("| `advisor ")]
    names = list(typer.main.get_command(app).commands)
    for name in names:
        assert len([row for row in rows if row.startswith(f"| `advisor {name} ")
                    or row.startswith(f"| `advisor {name}`")]) == 1, f"advisor {name}: one row in the README table"
    assert len(rows) == len(names)


def test_the_readme_shows_how_to_collect_a_profile():
    text = readme()
    for needle in ("torch_npu.profiler.profile(", "_ExperimentalConfig(", "ProfilerLevel.Level1",
                   "AiCMetrics.PipeUtilization", "export_type=", "tensorboard_trace_handler(", "schedule(",
                   "msprof --output=", "--application=", "msprof op --output=", "msprof op simulator --soc-version="):
        assert needle in text, needle


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_readme.py --write   (rewrites the README's sample output blocks)")
    n = write_samples()
    print(f"README.md: {n} sample block(s) rewritten" if n else "README.md: the sample blocks are up to date")
