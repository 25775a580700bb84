"""Column-at-a-time operations on a KernelTable: the group-bys the profile builder and the symptom checks run.

Every per-kernel question the builder asks is one of a few shapes: a mask over the rows (``unit is
communication and duration < 20 us``), a predicate evaluated once per distinct value of an encoded
column (op type, task type, dtype text), and a tally of some rows by an encoded key (count, total
time, longest launch, first row). ``Frame`` answers them without making a Python object per row:
text and integer columns are dictionary-encoded pyarrow arrays, read here as their indices (``Coded``), so a
predicate costs one call per distinct value and a group-by is a count over integer codes.

The columns are numpy views of the table's pyarrow arrays: dictionary indices, float64 with NaN for "not
recorded".

Sums are sequential in row order, exactly as ``sum()`` / ``Counter[key] += value`` over the rows:
numpy's ``sum`` is pairwise and would change the last digit, so totals use ``add.accumulate`` and
grouped sums ``bincount`` with weights, which adds each bin's rows one after the other from 0.0
(tests/test_kernel_frame.py holds both to Counter loops). Groups are listed in order of their first
row, like a dict filled row by row, so ties in ``Counter.most_common`` break the same way. pyarrow's
``Table.group_by`` gives the same tallies (tried: equal to the last digit), but its engine (acero) takes ~40 ms
to import, an eighth of ``suggest``'s whole time on a small profile, which is held to 4x the speed of
msprof-analyze's advisor (benchmarks/bench_vs_msprof_analyze.py: 4.6x on the real level1 rank).
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Any, Callable, Iterable

from opprof_advisor.readers.base import COLUMN_KINDS, Coded, KernelTable
from opprof_advisor.readers.columns import op_type_from_name
from opprof_advisor.core.records import Record

Mask = Any  # numpy bool array
Values = Any  # numpy float64 array (NaN = not recorded)


@dataclass
class Tally(Record):
    """Rows tallied by key, one entry per key in order of its first row."""

    keys: list  # the key values
    counts: list[int]
    first: list[int]  # row index of each key's first row
    sums: list[float] | None = None  # sequential sums of the weights

    def sum_by_key(self) -> dict:
        return dict(zip(self.keys, self.sums or ()))

    def count_by_key(self) -> dict:
        return dict(zip(self.keys, self.counts))


#: Op type cells that mean "not recorded".
_NOT_RECORDED = frozenset({"", "N/A"})


class Frame:
    """The columns of one KernelTable, encoded once, with masks, tallies and sums over them."""

    def __init__(self, table: KernelTable):
        import numpy as np

        self.np = np
        self.table = table
        self.n = len(table)
        self._coded: dict[str, Coded] = {}
        self._floats: dict[str, Values] = {}
        self._value_positions: dict[int, tuple[Coded, dict]] = {}

    @classmethod
    def of(cls, table: KernelTable) -> "Frame":
        """The frame of ``table``, made once and kept on it (the builder and the roofline share it)."""
        frame = table.cached_frame
        if frame is None or frame.n != len(table):
            frame = table.cached_frame = cls(table)
        return frame

    # -- columns ---------------------------------------------------------------------------------

    def has(self, name: str) -> bool:
        """The source had the column (see KernelTable.has)."""
        return self.table.has(name)

    def has_length(self, name: str) -> bool:
        """The column (``pipe:<key>`` too) holds a value for every row."""
        array = self.table.array(name)
        return (0 if array is None else len(array)) == self.n

    def coded(self, name: str) -> Coded:
        """A text / optional / int column as codes (a zero-copy numpy view of the dictionary indices) into its
        distinct values; a column the table lacks reads as all empty."""
        found = self._coded.get(name)
        if found is None:
            array = self.table.array(name)
            if array is None or len(array) != self.n:
                found = Coded(self._zeros(), ["" if COLUMN_KINDS[name] == "text" else None])
            else:
                found = Coded(array.indices.to_numpy(zero_copy_only=False).astype(self.np.int64, copy=False),
                              array.dictionary.to_pylist())
            self._coded[name] = found
        return found

    def floats(self, name: str) -> Values:
        """A float column (``pipe:<key>`` too) as a numpy array (a zero-copy view), NaN where not recorded."""
        found = self._floats.get(name)
        if found is None:
            array = self.table.array(name)
            found = self.np.zeros(0) if array is None else array.to_numpy(zero_copy_only=False)
            self._floats[name] = found
        return found

    def _zeros(self):
        return self.np.zeros(self.n, dtype=self.np.int64)

    # -- derived columns -------------------------------------------------------------------------

    def mapped(self, column: Coded, convert: Callable[[Any], Any]) -> Coded:
        """``convert`` applied to each distinct value (values that convert alike are merged)."""
        index: dict = {}
        remap = [index.setdefault(convert(value), len(index)) for value in column.values]
        values = list(index)
        return Coded(self.np.asarray(remap, dtype=self.np.int64)[column.codes] if remap else column.codes, values)

    def lookup(self, column: Coded, table: list) -> Values:
        """Per row, ``table[code]`` (a value per distinct value of ``column``) as a float column."""
        return self.np.asarray(table, dtype=self.np.float64)[column.codes]

    def pair(self, first: Coded, second: Coded) -> Coded:
        """The two columns as one whose values are (first, second) tuples, only those that occur."""
        return self.combine(first, second)

    def combine(self, *columns: Coded) -> Coded:
        """The columns as one whose values are tuples of theirs, only those that occur."""
        np = self.np
        # one mixed-radix integer per row; its digits are the columns' codes
        keys = np.asarray(columns[0].codes, dtype=np.int64)
        digits: list[list[tuple]] = [[(value,) for value in columns[0].values]]
        for column in columns[1:]:
            size = max(len(column.values), 1)
            if math.prod(max(len(d), 1) for d in digits) * size >= 2 ** 62:  # too wide: number the pairs seen
                distinct, keys = _numbered(np, keys)
                digits = [_decode(np, distinct, digits)]
            keys = keys * size + column.codes
            digits.append([(value,) for value in column.values])
        distinct, codes = _numbered(np, keys)
        return Coded(codes, _decode(np, distinct, digits))

    def op_types(self) -> Coded:
        """The op type of each row: the Type column, or derived from the kernel name where none is recorded."""
        found = self._coded.get("op_type:derived")
        if found is None:
            ops = self.coded("op_type")
            occurring = self.occurring(ops)
            if not any(occurring):
                ops = self.mapped(self.coded("name"), op_type_from_name)
            elif set(occurring) & _NOT_RECORDED:  # some rows say N/A (collectives at Level1): from their names
                ops = self.mapped(self.pair(ops, self.coded("name")),
                                  lambda pair: op_type_from_name(pair[1]) if pair[0] in _NOT_RECORDED else pair[0])
            found = self._coded["op_type:derived"] = ops
        return found

    def occurring(self, column: Coded) -> list:
        """The values of ``column`` that some row holds (a column kept after ``take`` may list others)."""
        seen = self.np.bincount(column.codes, minlength=len(column.values)) > 0
        return [value for value, flag in zip(column.values, seen.tolist()) if flag]

    def distinct(self, column: Coded, where: Mask | None = None) -> list:
        """The values of ``column`` that occur (in ``where``), in order of their first row."""
        return self.tally(column, where).keys

    # -- masks -----------------------------------------------------------------------------------

    def everything(self) -> Mask:
        return self.np.ones(self.n, dtype=bool)

    def isin(self, column: Coded, test: Callable[[Any], bool] | Iterable) -> Mask:
        """Rows whose value passes ``test`` (a predicate, or a collection of values), evaluated once per value."""
        if not callable(test):
            allowed = set(test)
            if len(allowed) * 16 < len(column.values):  # a few values asked of many: look them up
                verdicts = self.np.zeros(len(column.values), dtype=bool)
                position = self._positions(column)
                verdicts[[position[value] for value in allowed if value in position]] = True
                return verdicts[column.codes]
            test = allowed.__contains__
        verdicts = [bool(test(value)) for value in column.values]
        return self.np.asarray(verdicts, dtype=bool)[column.codes] if verdicts else self.np.zeros(self.n, bool)

    def _positions(self, column: Coded) -> dict:
        """value -> its code in ``column``, made once per column (the column is kept with it, so its id stays its)."""
        found = self._value_positions.get(id(column))
        if found is None or found[0] is not column:
            found = self._value_positions[id(column)] = (column, {value: code for code, value in enumerate(column.values)})
        return found[1]

    def below(self, values: Values, limit: float) -> Mask:
        return values < limit

    def at_least(self, values: Values, limit: float) -> Mask:
        return values >= limit

    def present(self, values: Values) -> Mask:
        return ~self.np.isnan(values)

    def both(self, *masks: Mask) -> Mask:
        found = masks[0]
        for mask in masks[1:]:
            found = found & mask
        return found

    def either(self, *masks: Mask) -> Mask:
        found = masks[0]
        for mask in masks[1:]:
            found = found | mask
        return found

    def negate(self, mask: Mask) -> Mask:
        return ~mask

    def count(self, mask: Mask) -> int:
        return int(mask.sum())

    def rows(self, mask: Mask):
        """Row indices where ``mask`` holds, in order (a numpy array)."""
        return self.np.flatnonzero(mask)

    def plus(self, a: Values, b: Values) -> Values:
        """Row by row ``a + b``, a value not recorded counting 0."""
        return self.np.nan_to_num(a) + self.np.nan_to_num(b)

    def product(self, a: Values, b: Values) -> Values:
        return a * b

    # -- aggregates ------------------------------------------------------------------------------

    def total(self, values: Values, where: Mask | None = None) -> float:
        """Sum of ``values`` (in ``where``) in row order, as ``sum()`` over the rows gives it."""
        picked = values if where is None else values[where]
        return _sequential_sum(self.np, picked)

    def largest(self, values: Values, where: Mask | None = None, default: float = 0.0) -> float:
        picked = values if where is None else values[where]
        return float(picked.max()) if len(picked) else default

    def median(self, values: Values, where: Mask | None = None) -> float:
        """statistics.median of the recorded ``values`` in ``where`` (the mean of the middle two when even)."""
        picked = values if where is None else values[where]
        ordered = self.np.sort(picked[~self.np.isnan(picked)]).tolist()
        if not ordered:
            raise ValueError("no values")
        middle = len(ordered) // 2
        return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2

    def tally(self, key: Coded, where: Mask | None = None, weights: Values | None = None) -> Tally:
        """Rows (in ``where``) by the value of ``key``: count, first row, sequential sum of ``weights``."""
        np = self.np
        codes = key.codes if where is None else key.codes[where]
        size = len(key.values)
        counts = np.bincount(codes, minlength=size)
        first = np.full(size, self.n, dtype=np.int64)
        np.minimum.at(first, codes, np.arange(self.n) if where is None else np.flatnonzero(where))
        seen = np.flatnonzero(counts)
        seen = seen[np.argsort(first[seen], kind="stable")]  # keys in order of their first row
        found = Tally(keys=[key.values[c] for c in seen.tolist()], counts=counts[seen].tolist(),
                      first=first[seen].tolist())
        if weights is not None:
            # bincount adds each bin's weights one row after the other, from 0.0: Counter[key] += w exactly
            picked = weights if where is None else weights[where]
            found.sums = np.bincount(codes, picked, minlength=size)[seen].tolist()
        return found

    def value_at(self, column: Coded, row: int):
        return column.values[column.codes[row]]

    # -- sequences -------------------------------------------------------------------------------

    def neighbours(self, centre: Mask, side: Mask, reach: int) -> list[tuple[int, int, int]]:
        """(last ``side`` row before, centre row, first ``side`` row after) for every ``centre`` row with a
        ``side`` row within ``reach`` rows on both sides, in row order."""
        np = self.np
        centres = np.flatnonzero(centre)
        if not len(centres):
            return []
        before, after = _previous_true(np, side), _next_true(np, side)
        last, following = before[centres], after[centres]  # previous / next side row, strictly
        keep = (last >= centres - reach) & (last >= 0) & (following <= centres + reach) & (following < self.n)
        return list(zip(last[keep].tolist(), centres[keep].tolist(), following[keep].tolist()))

    def chains(self, steps: list[Mask], window: int) -> list[list[int]]:
        """For every row of ``steps[0]``: the rows matching each later step in turn, each the first after the
        previous one and all within ``window`` rows of the start; the complete chains, in row order."""
        n = len(steps[0])
        np = self.np
        starts = np.flatnonzero(steps[0])
        columns = [starts]
        position, alive = starts, np.ones(len(starts), dtype=bool)
        for step in steps[1:]:
            following = np.append(_next_true(np, step), n)  # following[p] = first step row after p
            nxt = following[np.minimum(position, n)]
            alive &= nxt < np.minimum(starts + window, n)
            position = np.where(alive, nxt, n)
            columns.append(position)
        return np.stack(columns, axis=1)[alive].tolist() if len(starts) else []


def _numbered(np, keys):
    """(the distinct keys, ascending; each row's index among them): np.unique, by counting when the keys are few."""
    if not len(keys):
        return keys, keys
    top = int(keys.max())
    if top < 4 * len(keys) + 4096:
        seen = np.bincount(keys, minlength=top + 1) > 0
        return np.flatnonzero(seen), (np.cumsum(seen) - 1)[keys]
    distinct, codes = np.unique(keys, return_inverse=True)
    return distinct, codes.reshape(-1).astype(np.int64)


def _decode(np, keys, digits: list[list[tuple]]) -> list[tuple]:
    """Mixed-radix ``keys`` (an integer array) back to tuples: the last digit varies fastest, each digit a list of
    value tuples. The digits are split by numpy and looked up column by column, so a million keys stay well
    under a second."""
    columns = []
    rest = np.asarray(keys, dtype=np.int64)
    for values in reversed(digits):
        rest, digit = np.divmod(rest, max(len(values), 1))
        width = len(values[0]) if values else 0
        for at in reversed(range(width)):  # one object column per value the digit's tuples hold
            column = np.fromiter((value[at] for value in values), dtype=object, count=len(values))
            columns.append(column[digit].tolist())
    return list(zip(*reversed(columns)))


def _sequential_sum(np, values) -> float:
    if not len(values):
        return 0.0
    return float(np.add.accumulate(values)[-1]) + 0.0


def _next_true(np, mask):
    """Per row p, the first row q > p where ``mask`` holds (n when none)."""
    n = len(mask)
    rows = np.where(mask, np.arange(n), n)
    after = np.minimum.accumulate(rows[::-1])[::-1]  # first q >= p
    return np.append(after[1:], n)


def _previous_true(np, mask):
    """Per row p, the last row q < p where ``mask`` holds (-1 when none)."""
    n = len(mask)
    rows = np.where(mask, np.arange(n), -1)
    upto = np.maximum.accumulate(rows)  # last q <= p
    return np.concatenate([[-1], upto[:-1]])
