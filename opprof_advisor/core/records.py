"""Record: what the package's data classes share beside ``@dataclass``: ``to_dict`` and ``replace``.

Each model is a plain ``@dataclass`` (``frozen=True`` where it must not change once built) that also
derives from Record, so callers write ``row.to_dict()`` and ``row.replace(share=0.5)`` instead of importing
``dataclasses`` for ``asdict`` and ``replace``.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class Record:
    """A mixin for dataclasses: ``to_dict`` (``dataclasses.asdict``) and ``replace`` (``dataclasses.replace``)."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict, dataclasses inside turned into dicts and containers copied."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    def replace(self, **changes: Any) -> Any:
        """A new object with ``changes`` applied to this one's fields."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

