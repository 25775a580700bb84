"""Dictionary-encoded columns: a column as codes into its distinct values, and back to a list.

``readers.frame.Frame`` reads the kernel table's dictionary-encoded pyarrow columns as these (numpy views of
their indices and the distinct values as a list), and the step split takes encoded step ids (``core.steps``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opprof_advisor.core.records import Record


@dataclass
class Coded(Record):
    """A dictionary-encoded column: row ``i`` holds ``values[codes[i]]``; ``values`` are distinct."""

    codes: Any  # numpy int array (or a list of ints)
    values: list


def as_list(values) -> list:
    """A stored column (list, Coded or numpy float array with NaN for None) as a Python list."""
    if isinstance(values, list):
        return values
    if isinstance(values, Coded):
        codes = values.codes.tolist() if hasattr(values.codes, "tolist") else values.codes
        return list(map(values.values.__getitem__, codes))
    import numpy as np

    found = values.tolist()
    if np.isnan(values).any():
        found = [None if v != v else v for v in found]
    return found


def encode(values) -> Coded:
    """A column (list or Coded) dictionary-encoded, values in order of first appearance."""
    if isinstance(values, Coded):
        return values
    index: dict = {}
    codes = [index.setdefault(value, len(index)) for value in values]
    return Coded(codes, list(index))
