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

import os
from pathlib import Path
from typing import Any

from opprof_advisor.core.documents import document_kind
from opprof_advisor.core.errors import DocumentError
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.core.sidefile import SideFileError, read_json
from opprof_advisor.profile.families import families_to_json
from opprof_advisor.profile.families import rows_from_json

#: A saved document larger than this is not one of ours (a 100 MB profile's suggest JSON is ~1 MB).
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
#: A document nested deeper than this is not one of ours (they nest 6 levels; deeper ones would exhaust the
#: renderers' and the JSON writer's recursion).
MAX_DOCUMENT_DEPTH = 64

_T, _N, _T0 = "text", "number", "text or null"
#: The keys every document of a kind has, with their shapes, as far as the renderers read them without a
#: default. A shape is "text", "number" or "text or null", a dict (an object with these keys; ``{}``: any
#: object; a key ending in ``?`` may be missing; ``*``: every key not named) or a one-item list (a list whose
#: every item has that shape). Keys a producer may fill with other types (the versions a reader finds) are
#: left out: a valid document is never refused. A document lacking one would render "None" or fail halfway; it is refused
#: with the first key that is wrong.
SHAPES: dict[str, dict[str, Any]] = {
    "profile": {"source": {"path": _T, "format": _T, "producer?": _T0, "workload?": _T0, "chip?": _T0},
                "op_types": [{"op_type": _T, "unit": _T, "time_us": _N, "share": _N, "family?": _T, "bound?": _T,
                              "busiest_pipe?": _T0}],
                "symptoms": [{"id": _T, "detail": _T}], "notes": [_T], "families?": [{"family": _T}]},
    "roofline": {"source": {"path": _T, "format": _T}, "op_types": [{"op_type": _T}], "notes": [_T]},
    "compare": {"before": {"path": _T, "format": _T, "versions?": {}}, "after": {"path": _T, "format": _T, "versions?": {}},
                "total": {},
                "op_types": [{"op_type": _T, "bound_before?": _T0, "bound_after?": _T0}],
                "notes": [_T]},
    "memory": {"path": _T, "findings": [{}], "notes": [_T]},
    "serving": {"path": _T, "figures": {}, "findings": [{}], "notes": [_T]},
    "scan": {"root": _T, "files_scanned": _N, "files_failed": [{"path": _T}],
             "findings": [{"path": _T, "op": _T, "source?": _T, "replacement?": _T0}],
             "suggestions": [{"id": _T, "title": _T}], "notes": [_T]},
    "outcomes": {"entries": [{"id": _T, "outcomes": [{}]}]},
    "search": {"query": _T, "results": [{"id": _T, "kind": _T, "title": _T}], "corrected?": _T0},
    "entry": {"entry": {"id": _T, "kind": _T, "title": _T, "summary": _T, "body": _T}},
    "kb-list": {"entries": [{"id": _T, "kind": _T, "title": _T}]},
    "kb-stats": {"entries": _N, "by_kind": {}, "by_evidence": {}},
    "kb-check": {"files": _N, "problems": [{"path": _T, "message": _T}], "warnings": [{"path": _T, "message": _T}]},
}

SHAPES["suggest"] = {"profile": {"path": _T}, "notes": [_T], "profile_document?": SHAPES["profile"],
                     "suggestions": [{"id": _T, "title": _T, "show?": _T, "remedies?": [{"id": _T, "kind?": _T}],
                                      "matched_symptoms?": [_T]}],
                     "similar_cases?": [{"id": _T, "title": _T, "why?": [_T]}]}

_HINT = "give a file saved from `advisor ... --format json`"


def read_document(path: Path | str) -> dict[str, Any]:
    """The JSON document saved at ``path``, upgraded to today's keys; DocumentError when it is not one."""
    path = Path(path)
    try:
        if os.path.isdir(path):
            raise DocumentError("is a folder", path=path, hint=_HINT)
        document = read_json(path, MAX_DOCUMENT_BYTES)  # a regular file, strict JSON, no NaN, no 400-digit number
    except SideFileError as exc:
        raise DocumentError(str(exc), path=path, hint=_HINT) from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise DocumentError(f"not a JSON document: {getattr(exc, 'msg', exc)}", path=path, line=line,
                            hint=_HINT) from None
    kind = document_kind(document)
    if not kind:
        raise DocumentError("not an opprof-advisor document (no \"schema\": \"opprof-advisor/...\")", path=path,
                            hint="give a file saved from `advisor suggest|profile|compare|... --format json`")
    wrong = _too_deep(document) or _misshapen(document, SHAPES.get(kind, {}))
    if wrong:
        raise DocumentError(M_("not a complete {kind} document: {wrong}", kind=kind, wrong=wrong), path=path,
                            hint=N_("give a file saved from `advisor ... --format json`, as it was written"))
    return upgrade(document)


def _too_deep(document: Any) -> str | None:
    """Why ``document`` nests deeper than MAX_DOCUMENT_DEPTH, or None (a loop, not a recursion)."""
    pending = [(document, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > MAX_DOCUMENT_DEPTH:
            return M_("nested more than {depth} levels deep", depth=MAX_DOCUMENT_DEPTH)
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return None


_JSON_TYPES = {str: N_("a string"), bool: N_("true or false"), int: N_("a number"), float: N_("a number"),
               list: N_("a list"), dict: N_("an object"), type(None): N_("null")}


def _misshapen(value: Any, shape: Any, where: str = "") -> str | None:
    """What in ``value`` does not have ``shape`` (see SHAPES), as ``key.key[0]: ...``; None when all does."""
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return _wrong(where, value, N_("an object"))
        for key, inner in shape.items():
            if key == "*":
                continue
            optional = key.endswith("?")
            key = key.rstrip("?")
            place = f"{where}.{key}" if where else key
            if key not in value:
                if optional:
                    continue
                return M_("{place} is missing", place=place)
            found = _misshapen(value[key], inner, place)
            if found:
                return found
        if "*" in shape:
            named = {key.rstrip("?") for key in shape}
            for key, item in value.items():
                found = None if key in named else _misshapen(item, shape["*"], f"{where}.{key}" if where else key)
                if found:
                    return found
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return _wrong(where, value, N_("a list"))
        for index, item in enumerate(value):
            found = _misshapen(item, shape[0], f"{where}[{index}]")
            if found:
                return found
        return None
    if shape == _T and not isinstance(value, str):
        return _wrong(where, value, N_("a string"))
    if shape == _T0 and not (value is None or isinstance(value, str)):
        return _wrong(where, value, N_("a string or null"))
    if shape == _N and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return _wrong(where, value, N_("a number"))
    return None


def _wrong(place: str, value: Any, wanted: str) -> str:
    return M_("{place} is {found}, not {wanted}", place=place, found=_JSON_TYPES.get(type(value), N_("a value")),
              wanted=wanted)


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
