"""Stand-in for the operator profiler (`msprof op ...` / `msopprof ...`). It exists ONLY for tests.

The real profiler needs an Ascend NPU (or the CANN simulator), which test machines do not have.
tests/test_collect.py puts a tiny executable named `msprof` or `msopprof` first on PATH that runs
this script. It:

* appends the exact argument list it received (as JSON, one line per call) to the file named by
  ``STANDIN_ARGV_FILE``;
* checks the argument shape the documentation gives — ``msprof op [simulator] [--opt=value ...]
  APP [ARGS]`` (``msopprof`` without ``op``) — and exits 2 with a message on anything else;
* prints a few log lines the way the profiler does, then, if ``STANDIN_EXIT_CODE`` is set, a few
  error lines and exits with that code;
* otherwise writes a recorded ``OPPROF_<YYYYMMDDhhmmss>_<16 uppercase letters>/`` folder under
  ``--output`` with the project's own generator (``opprof_advisor.testing``): the device layout,
  or the simulator layout for ``simulator``. ``STANDIN_KERNEL`` may hold the kernel spec as JSON.

It never runs APP. Nothing outside tests/ uses it and it is not installed with the package.
"""

from __future__ import annotations

import json
import os
import random
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

#: Options of `msprof op` / `msprof op simulator` (msopprof user guides, "Command Reference").
DOCUMENTED = {
    "--output", "--aic-metrics", "--kernel-name", "--launch-count", "--launch-skip-before-match",
    "--soc-version", "--config", "--application", "--core-id", "--timeout", "--mstx", "--mstx-include",
    "--dump", "--replay-mode", "--warm-up",
}

DEFAULT_KERNEL = {
    "name": "MatMulV3",
    "task_type": "mix",
    "duration_us": 250.0,
    "block_dim": 20,
    "mix_block_dim": 40,
    "pipe": {"aic_cube": 0.12, "aic_mte2": 0.35, "aic_scalar": 0.1, "aiv_vec": 0.55, "aiv_mte2": 0.9,
             "aiv_mte3": 0.2, "aiv_scalar": 0.15},
}


def fail(message: str, code: int = 2) -> None:
    sys.stderr.write(f"[ERROR] {message}\n")
    sys.exit(code)


def program() -> str:
    """The name it was called by (a wrapper made by the tests passes it as PROG)."""
    return globals().get("PROG") or Path(sys.argv[0]).name


def parse(argv: list[str]) -> tuple[str, dict[str, str], list[str]]:
    prog = program()
    args = list(argv)
    if prog == "msprof":
        if not args or args[0] != "op":
            fail("msprof stand-in: expected `msprof op ...`")
        args = args[1:]
    mode = "device"
    if args and args[0] == "simulator":
        mode, args = "simulator", args[1:]
    options: dict[str, str] = {}
    while args and args[0].startswith("--"):
        name, sep, value = args.pop(0).partition("=")
        if name not in DOCUMENTED:
            fail(f"unknown option {name}")
        if not sep or not value:
            fail(f"option {name} needs `{name}=VALUE`")
        options[name] = value
    if not args:
        fail("no application given")
    return mode, options, args


def opprof_name() -> str:
    letters = "".join(random.choice(string.ascii_uppercase) for _ in range(16))
    return f"OPPROF_{time.strftime('%Y%m%d%H%M%S', time.gmtime())}_{letters}"


def main() -> None:
    argv = sys.argv[1:]
    record = os.environ.get("STANDIN_ARGV_FILE")
    if record:
        with open(record, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"prog": program(), "argv": argv}) + "\n")
    mode, options, application = parse(argv)
    print(f"[INFO] Start profiling {' '.join(application)} ({mode})", flush=True)
    print("[INFO] Kernel launched", flush=True)
    code = int(os.environ.get("STANDIN_EXIT_CODE", "0"))
    if code:
        print("[ERROR] Operator profiling failed: device 0 is busy", flush=True)
        print("[ERROR] Profiling data is not generated", flush=True)
        sys.exit(code)
    from opprof_advisor import testing

    kernel = json.loads(os.environ["STANDIN_KERNEL"]) if os.environ.get("STANDIN_KERNEL") else dict(DEFAULT_KERNEL)
    if "--kernel-name" in options:
        kernel["name"] = options["--kernel-name"].split("|")[0].replace("*", "")
    target = Path(options.get("--output", ".")) / opprof_name()
    if mode == "simulator":
        written = testing.write_msopprof_simulator(target, kernel)
    else:
        imbalance = float(os.environ.get("STANDIN_IMBALANCE", "8.0"))  # slowest / fastest block
        written = testing.write_msopprof_device(target, kernel, imbalance=imbalance)
    print(f"[INFO] Profiling data is saved in {written}", flush=True)


if __name__ == "__main__":
    main()
