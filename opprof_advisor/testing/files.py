"""Small writing helpers shared by the producer writers: producer-like folder names, number text, CSV and JSON."""

from __future__ import annotations

import csv
import json
import random
import re
import string
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

from opprof_advisor.testing.spec import NS_PER_US


def stamp(ns: int, digits: int = 14) -> str:
    """A YYYYMMDDhhmmss[fff] stamp from epoch ns (UTC), as profilers put into directory names."""
    t = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)
    text = t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 1000:03d}"
    return text[:digits]


def letters(rng: random.Random, n: int = 16) -> str:
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(n))


def producer_dir(out: Path | str, pattern: str, make_name) -> Path:
    out = Path(out)
    target = out if re.search(pattern, out.name) else out / make_name()
    target.mkdir(parents=True, exist_ok=True)
    return target


def us_text(ns: int) -> str:
    """µs with 3 decimals from integer ns, exact (floats lose ~0.25 µs at epoch magnitudes)."""
    return f"{ns // NS_PER_US}.{ns % NS_PER_US:03d}"


def fmt(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


def quoted(shape: str) -> str:
    # The profilers store shapes with literal double quotes; csv then doubles them: """1,2""".
    return f'"{shape}"'


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]], *, crlf: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\r\n" if crlf else "\n")
        w.writerow(header)
        w.writerows(rows)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=4), encoding="utf-8")


def write_json_compact(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
