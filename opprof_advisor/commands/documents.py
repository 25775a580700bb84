"""Saved JSON documents: read one back (``advisor report``) and bring an older ``/1`` one up to today's keys.

Every command's ``--format json`` output is an ``opprof-advisor/<command>/1`` document, and every
other format is rendered from it (``opprof_advisor.render``). The documents only ever gain keys;
``upgrade`` adds the ones a document written by an earlier version lacks, computed the way the
core computes them today, so the renderers read and never compute:

* ``profile/1``: ``families`` (the family totals, from ``op_types``) and ``op_types_total``;
* ``suggest/1``: each suggestion's ``stake_share`` (before it was recorded: the evidence rows'
  shares, which is what the recommender's stake was made of).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from opprof_advisor.core.documents import document_kind
from opprof_advisor.core.errors import DocumentError
from opprof_advisor.profile.families import families_to_json
from opprof_advisor.profile.families import rows_from_json

#: A saved document larger than this is not one of ours (a 100 MB profile's suggest JSON is ~1 MB).
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


def read_document(path: Path | str) -> dict[str, Any]:
    """The JSON document saved at ``path``, upgraded to today's keys; DocumentError when it is not one."""
    path = Path(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise DocumentError(f"cannot read: {exc.strerror or exc}", path=path, hint="check the path") from None
    if stat.S_ISDIR(info.st_mode):
        raise DocumentError("is a folder", path=path, hint="give a file saved from `advisor ... --format json`")
    if not stat.S_ISREG(info.st_mode):
        raise DocumentError("not a regular file", path=path, hint="save the document to a file first")
    if info.st_size > MAX_DOCUMENT_BYTES:
        raise DocumentError(f"{info.st_size:,} bytes is larger than any document advisor writes", path=path,
                            hint="give a file saved from `advisor ... --format json`")
    try:
        document = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        raise DocumentError(f"not a JSON document: {getattr(exc, 'msg', exc)}", path=path, line=line,
                            hint="give a file saved from `advisor ... --format json`") from None
    except OSError as exc:
        raise DocumentError(f"cannot read: {exc.strerror or exc}", path=path) from None
    if not document_kind(document):
        raise DocumentError("not an opprof-advisor document (no \"schema\": \"opprof-advisor/...\")", path=path,
                            hint="give a file saved from `advisor suggest|profile|compare|... --format json`")
    return upgrade(document)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def upgrade(document: dict[str, Any]) -> dict[str, Any]:
    """Add, in place, the keys of today's schema that an older document lacks; returns the document."""
    kind = document_kind(document)
    if kind == "profile":
        _upgrade_profile(document)
    elif kind == "suggest":
        for suggestion in _dicts(document.get("suggestions")):
            if suggestion.get("stake_share") is None:
                suggestion["stake_share"] = evidence_share(suggestion)
        if isinstance(document.get("profile_document"), dict):
            _upgrade_profile(document["profile_document"])
    return document


def _upgrade_profile(document: dict[str, Any]) -> None:
    rows = _dicts(document.get("op_types"))
    if not isinstance(document.get("families"), list):
        document["families"] = families_to_json(rows_from_json(rows))
    document.setdefault("op_types_total", len(rows))


def evidence_share(suggestion: dict[str, Any]) -> float:
    """The share (0..1) of the distinct op types a suggestion's evidence lists, at most 1."""
    shares: dict[str, float] = {}
    for row in _dicts(suggestion.get("evidence")):
        share = row.get("share")
        shares[str(row.get("op_type"))] = share if isinstance(share, (int, float)) and share == share else 0.0
    return min(sum(shares.values()), 1.0)


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
