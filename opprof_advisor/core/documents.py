"""What a JSON document of ours is: every command's ``--format json`` output names its kind in ``schema``."""

from __future__ import annotations

from typing import Any

SCHEMA_PREFIX = "opprof-advisor/"


def document_kind(document: Any) -> str:
    """``suggest`` for an ``opprof-advisor/suggest/1`` document, ``""`` for anything else."""
    schema = document.get("schema") if isinstance(document, dict) else None
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_PREFIX) or schema.count("/") < 2:
        return ""
    return schema.split("/")[1]
