"""Shared pieces of the CLI layer: consoles, output formats, JSON printing.

Only the CLI package imports typer and prints; the core raises named errors.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Any

from rich.console import Console

# A wide default keeps Rich from wrapping table cells in tests and pipes.
console = Console(highlight=False, soft_wrap=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


class TableOrJson(str, Enum):
    table = "table"
    json = "json"


class ReportFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"


def emit_json(document: Any) -> None:
    """Print a JSON document on stdout, unwrapped and unstyled (for scripts)."""
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, default=str))
    sys.stdout.write("\n")
    sys.stdout.flush()
