"""opprof-advisor: ranked, evidence-backed tuning advice for Ascend NPU profiles.

The library in a few names (the CLI is a thin layer over them)::

    from opprof_advisor import open_advisor, read_profile
    advisor = open_advisor()                      # the KB index, its matcher, your recorded outcomes
    document = advisor.advise(read_profile("out/rank0_ascend_pt"), top=3)   # what `advisor suggest` prints

``read_profile`` (any supported profiler output), ``open_index`` and ``search`` (the knowledge
base), ``advise`` (findings with gains and remedies: the ``suggest/2`` document), ``suggest`` (KB entries
ranked against a profile, as ``advisor scan`` uses them), ``open_advisor`` (both at once), ``scan_path``
(static analysis of model source); ``opprof_advisor.render.render`` turns any command's document
into a table, markdown or HTML. Names are imported on first use, so ``import opprof_advisor``
costs nothing at start-up.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    "read_profile": "opprof_advisor.profiles",
    "open_index": "opprof_advisor.kb.store",
    "search": "opprof_advisor.kb.search",
    "advise": "opprof_advisor.advice.suggest",
    "suggest": "opprof_advisor.advice.recommend",
    "open_advisor": "opprof_advisor.advice.advisor",
    "scan_path": "opprof_advisor.scan",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'opprof_advisor' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
