"""Turning a black box's raw outputs into histograms over a partition of the output space.

A mechanism returns a *batch*: a 1-D array (integers, booleans or floats), a 2-D array (one
vector per row), a tuple/list of per-field arrays (tuples of outputs, stacked as columns), or a
list of scalars/tuples. :func:`to_table` normalises any of these to a 1-D or 2-D numpy array
whose rows are independent runs of the mechanism.

A *view* is a picklable map from a table to a histogram over cells of the output space:

- :class:`DiscreteView` -- a 1-D discrete statistic (the output itself, or one column); cells
  are its values, ordered, so tail events {X >= t} / {X <= t} make sense. Exact histograms.
- :class:`RowsView` -- whole output vectors (or a subset of columns) taking few distinct
  values: cells are the distinct rows (unordered). Exact histograms.
- :class:`JointView` -- a discrete coordinate jointly with bins of a real one (mixed
  (index, value) outputs): cells are (value, bin) pairs, unordered.
- :class:`BinnedView` -- a real-valued statistic (the output, one column, the sum of the
  coordinates, the number of coordinates above their medians, or a Gaussian likelihood-ratio
  score fitted on the pilot sample) cut at pilot quantiles; cells are bins, ordered, so
  threshold events are unions of consecutive bins.
- :class:`QuantisedRowsView` -- whole rows of a structured output (categories mixed with real
  values), each coordinate quantised (its repeated values exact, the rest in pilot-quantile
  bins); cells are the quantised rows, unordered (a fine and a coarse one).
- :class:`PatternValueView` -- for outputs mixing codes with released values (an SVT that
  releases its answers), the joint cells of two signed counts: where values were released, and
  on which side of their medians they fell.

Views are fitted on a *pilot* sample that is used for nothing else, so the partitions they
define are independent of the samples used to select events and to bound their probabilities.

Every view's ``count(table, weights=None)`` also accepts a table of distinct rows with their
multiplicities (see :func:`distinct_rows`), and :func:`unique_rows` gives np.unique(axis=0)'s
answer without its slow structured sort (rows of small alphabets coded into one int64 key).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from accounting import AccountingError

from ._score_kernels import gaussian_lr_rows, signed_counts_rows

__all__ = ["BinnedView", "DiscreteView", "JointView", "PatternValueView", "QuantisedRowsView", "RowsView", "Hist", "fit_views", "merge_hists",
           "to_table", "unique_rows"]

#: A histogram: (keys, counts). Keys are a 1-D array of values/bin indices or a 2-D array of rows.
Hist = tuple[np.ndarray, np.ndarray]

#: Per-column views are built for at most this many columns of a vector output.
MAX_COLUMN_VIEWS = 64
#: The Gaussian likelihood-ratio score is fitted for vectors of at most this many coordinates
#: (its cost is d^2 per output, and fitted in high dimension from the pilot it misses single
#: coordinates; learned views and their coefficient-screened columns cover wide outputs).
MAX_GAUSSIAN_DIM = 128


def to_table(batch: Any) -> np.ndarray:
    """Normalise a batch of outputs to a 1-D or 2-D numpy array (one row per run)."""
    if isinstance(batch, (tuple, list)) and batch and isinstance(batch[0], np.ndarray) and batch[0].ndim >= 1:
        fields = [np.asarray(f) for f in batch]
        n = fields[0].shape[0]
        if any(f.shape[0] != n for f in fields):
            raise AccountingError("batch", f"tuple of arrays with lengths {[f.shape[0] for f in fields]}", "fields of one common length")
        cols = [f.reshape(n, -1) for f in fields]
        dtype = np.result_type(*cols)
        table = np.concatenate([c.astype(dtype, copy=False) for c in cols], axis=1)
    else:
        table = np.asarray(batch)
    if table.dtype == object or table.dtype.kind not in "biuf":
        raise AccountingError("batch", f"array of dtype {table.dtype}", "numeric outputs (integers, booleans or floats)")
    if table.dtype.kind == "b":
        table = table.astype(np.int64)
    elif table.dtype.kind in "iu":
        table = table.astype(np.int64, copy=False)
    else:
        table = table.astype(np.float64, copy=False)
    if table.ndim == 0:
        table = table.reshape(1)
    elif table.ndim > 2:
        table = table.reshape(table.shape[0], -1)
    if table.ndim == 2 and table.shape[1] == 1:
        table = table[:, 0]
    return table


def _column(table: np.ndarray, column: int | None) -> np.ndarray:
    if column is None:
        if table.ndim != 1:
            raise AccountingError("outputs", f"array of shape {table.shape}", "scalar outputs (the pilot saw scalars)")
        return table
    if table.ndim != 2:
        raise AccountingError("outputs", f"array of shape {table.shape}", "vector outputs (the pilot saw vectors)")
    return table[:, column]


def _tally(cells: np.ndarray, weights: np.ndarray | None, minlength: int) -> np.ndarray:
    """np.bincount as int64; weighted counts are sums of integers far below 2**53, so exact."""
    return np.bincount(cells, weights=weights, minlength=minlength).astype(np.int64)


def _discrete_hist(values: np.ndarray, weights: np.ndarray | None = None) -> Hist:
    """Distinct values and their counts (``weights``: each value stands for that many outputs)."""
    if values.size == 0:
        return values[:0].copy(), np.zeros(0, dtype=np.int64)
    if values.dtype.kind == "i":
        lo = int(values.min())
        hi = int(values.max())
        if hi - lo <= 4 * values.size + 65536:
            counts = _tally(values - lo, weights, hi - lo + 1)
            keys = np.flatnonzero(counts)
            return keys + lo, counts[keys]
    if weights is None:  # a plain sort: numpy's is fast on few distinct values
        keys, counts = np.unique(values, return_counts=True)
        return keys, counts.astype(np.int64)
    keys, inverse = np.unique(values, return_inverse=True)
    return keys, _tally(inverse.reshape(-1), weights, len(keys))


def _column_codes(col: np.ndarray) -> tuple[np.ndarray, int] | None:
    """Each entry's rank among the column's distinct values, and their number (None: no exact code).

    Integers: an offset, compacted through a presence table when the range is small. Floats: the
    inverse of a 1-D unique, refused on NaN (np.unique's row comparison keeps NaN rows apart) and
    on -0.0 (it compares equal to 0.0, so which of the two a row key shows would depend on sort order).
    """
    n = col.shape[0]
    if col.dtype.kind in "ib":
        col = col.astype(np.int64, copy=False)
        lo = int(col.min())
        span = int(col.max()) - lo
        if span <= 4 * n + 65536:
            present = np.bincount(col - lo, minlength=span + 1) > 0
            rank = np.cumsum(present) - 1
            return rank[col - lo], int(rank[-1]) + 1
        values, inverse = np.unique(col, return_inverse=True)
        return inverse.reshape(-1), len(values)
    coded = _float_codes(col)
    return None if coded is None else (coded[0], len(coded[1]))


def _float_codes(col: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(rank of each entry among the distinct values, the distinct values sorted) of a float column.

    The distinct values are exactly ``np.unique(col)``'s. Columns of few values (flags, sentinels,
    bin indices), possibly with rare others, are ranked by binary search against the values seen
    in the first rows plus the sorted rare ones, instead of an argsort of the whole column.
    None on NaN or -0.0 (where np.unique's choice of representative depends on its sort).
    """
    if col.dtype.kind != "f" or np.isnan(col).any() or np.any((col == 0) & np.signbit(col)):
        return None
    probe = np.unique(col[:4096])
    if probe.size <= 1024:
        rank = np.searchsorted(probe, col)
        hit = probe[np.minimum(rank, probe.size - 1)] == col
        if hit.all():
            return rank, probe
        missed = col[~hit]
        if missed.size * 8 <= col.size:
            values = np.union1d(probe, missed)
            return np.searchsorted(values, col), values
    values, inverse = np.unique(col, return_inverse=True)
    return inverse.reshape(-1), values


def _coded_unique(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`unique_rows` by column codes, or None where a column has no exact code."""
    n, d = rows.shape
    key = np.zeros(n, dtype=np.int64)
    radix_so_far = 1
    for j in range(d):
        coded = _column_codes(rows[:, j])
        if coded is None:
            return None
        codes, radix = coded
        if radix_so_far * radix >= 2**62:
            distinct, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1).astype(np.int64)
            radix_so_far = len(distinct)
            if radix_so_far * radix >= 2**62:  # pragma: no cover - needs > 2**31 rows
                return None
        key = key * radix + codes
        radix_so_far *= radix
    if radix_so_far <= 4 * n + 65536:
        tally = np.bincount(key, minlength=radix_so_far)
        present = np.flatnonzero(tally)
        rank = np.zeros(radix_so_far, dtype=np.int64)
        rank[present] = np.arange(present.size)
        inverse = rank[key]
        counts = tally[present].astype(np.int64)
    else:
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        counts = counts.astype(np.int64)
    first = np.full(counts.size, n, dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(n, dtype=np.int64))
    return rows[first], inverse, counts


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True, return_counts=True)``, without its row sort.

    np.unique(axis=0) sorts the rows as structured records (a generic comparison per pair: seconds
    for a million 10-column rows). Here each column is replaced by its code (the rank of its value
    among the column's distinct values) and the codes are combined in mixed radix, column 0 most
    significant, so the order of the int64 keys is the lexicographic order of the rows: the
    distinct rows come out in np.unique's order, each a copy of one of its occurrences (equal rows
    are bitwise equal once NaN and -0.0 are excluded), with the same inverse and counts.
    When the radix product would overflow, the key so far is re-ranked (order-preserving);
    columns without an exact code fall back to np.unique itself.
    """
    coded = _coded_unique(rows) if rows.shape[0] and rows.shape[1] else None
    if coded is not None:
        return coded
    uniq, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    return uniq, inverse.reshape(-1), counts.astype(np.int64)


def distinct_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(distinct rows, inverse, counts) of a vector table whose rows repeat a lot, else None.

    Views are functions of the row, so counting the distinct rows with their multiplicities as
    weights gives the same histograms as counting every row (see the ``weights`` of each view's
    ``count``), at the cost of scoring a few rows. None when the rows are mostly distinct (judged
    on the first rows, then on all) or when a column has no exact code (NaN, -0.0).
    """
    if table.ndim != 2 or table.shape[0] < 4096 or table.shape[1] == 0:
        return None
    probe = _coded_unique(table[:2048])
    if probe is None or len(probe[2]) > 1024:
        return None
    coded = _coded_unique(table)
    if coded is None or 2 * len(coded[2]) > table.shape[0]:
        return None
    return coded


def merge_hists(hists: Sequence[Hist]) -> Hist:
    """The histogram of the union of the samples (one sort for all, not one per pair)."""
    first = hists[0][0]
    if all(h[0].shape == first.shape and np.array_equal(h[0], first) for h in hists[1:]):
        return first, np.sum([h[1] for h in hists], axis=0)  # binned views: the same cells every chunk
    keys = np.concatenate([h[0] for h in hists], axis=0)
    counts = np.concatenate([h[1] for h in hists])
    if keys.ndim == 2:
        uniq, inverse, _ = unique_rows(keys)
    else:
        uniq, inverse = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inverse.reshape(-1), weights=counts, minlength=len(uniq)).astype(np.int64)


def _fmt(x: float) -> str:
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.6g}"


@dataclass(frozen=True)
class DiscreteView:
    """Exact histogram of a discrete scalar (the output, or column ``column`` of it)."""

    column: int | None = None
    ordered: bool = True

    @property
    def name(self) -> str:
        return "output" if self.column is None else f"output[{self.column}]"

    @property
    def exact_outputs(self) -> bool:
        """Cells are whole outputs (so a declared pmf speaks about them)."""
        return self.column is None

    def count(self, table: np.ndarray, weights: np.ndarray | None = None) -> Hist:
        """Histogram of the table's outputs (``weights``: row i stands for weights[i] outputs)."""
        return _discrete_hist(_column(table, self.column), weights)

    def describe(self, keys: np.ndarray, mask: np.ndarray) -> str:
        chosen = keys[mask]
        if chosen.size == 0:
            return f"{self.name} in {{}}"
        if chosen.size == 1:
            return f"{self.name} == {_fmt(chosen[0])}"
        idx = np.flatnonzero(mask)
        if idx[-1] - idx[0] + 1 == idx.size:
            if idx[-1] == len(keys) - 1:
                return f"{self.name} >= {_fmt(chosen[0])}"
            if idx[0] == 0:
                return f"{self.name} <= {_fmt(chosen[-1])}"
            return f"{_fmt(chosen[0])} <= {self.name} <= {_fmt(chosen[-1])}"
        return _set_text(self.name, [_fmt(k) for k in chosen[:8]], chosen.size)


def _set_text(name: str, items: Sequence[str], total: int | None = None) -> str:
    """``name in {first 8 items, ... (total values)}``; ``items`` may hold only the first 8 of ``total``."""
    total = len(items) if total is None else total
    shown = ", ".join(items[:8])
    more = f", ... ({total} values)" if total > 8 else ""
    return f"{name} in {{{shown}{more}}}"


@dataclass(frozen=True)
class RowsView:
    """Exact histogram of whole output rows (or of the given columns), unordered."""

    columns: tuple[int, ...] | None = None
    ordered: bool = False

    @property
    def name(self) -> str:
        return "output" if self.columns is None else f"output[{list(self.columns)}]"

    @property
    def exact_outputs(self) -> bool:
        return self.columns is None

    def count(self, table: np.ndarray, weights: np.ndarray | None = None) -> Hist:
        """Histogram of the table's outputs (``weights``: row i stands for weights[i] outputs)."""
        if table.ndim != 2:
            raise AccountingError("outputs", f"array of shape {table.shape}", "vector outputs (the pilot saw vectors)")
        rows = table if self.columns is None else table[:, list(self.columns)]
        if rows.shape[0] == 0:
            return rows.copy(), np.zeros(0, dtype=np.int64)
        keys, inverse, counts = unique_rows(rows)
        return keys, (counts if weights is None else _tally(inverse, weights, len(keys)))

    def describe(self, keys: np.ndarray, mask: np.ndarray) -> str:
        chosen = keys[mask]
        rows = ["(" + ", ".join(_fmt(v) for v in row) + ")" for row in chosen[:8]]  # only those shown
        if len(chosen) == 1:
            return f"{self.name} == {rows[0]}"
        return _set_text(self.name, rows, len(chosen))


@dataclass(frozen=True)
class BinnedView:
    """A real statistic cut into bins at fixed edges: cell i is [edges[i-1], edges[i]).

    ``statistic`` is ``("identity",)``, ``("column", j)``, ``("sum",)`` (the sum of the
    coordinates: the likelihood-ratio statistic of one location shift under independent Gaussian
    noise; ``("sum", codes)`` leaves out each coordinate's repeated code values, e.g. an SVT's
    "below" and "aborted" markers, and sums the released values only), ``("above", medians)`` (how many coordinates exceed their pooled pilot medians: the
    likelihood-ratio statistic of a small shift under independent Laplace noise, whose loss is
    +-1/b on either side of the shift), ``("signed", medians, signs, increments, codes)`` (the
    coordinates' votes, +1 above and -1 below their medians, 0 on a code, each signed by the
    direction the coordinate moved between the pilots, +1, -1 or 0:
    the Laplace likelihood-ratio statistic of shifts in mixed directions; with ``increments``
    the coordinates are first replaced by their first differences x_1, x_2 - x_1, ..., which
    undoes a running sum such as the prefix sums of noisy answers), or ``("gaussian-lr", mu_p, prec_p, logdet_p, mu_q,
    prec_q, logdet_q)`` (the log-likelihood ratio of two Gaussians fitted to the pilot sample: a
    learned likelihood-ratio score).
    """

    edges: tuple[float, ...]
    statistic: tuple[Any, ...] = ("identity",)
    ordered: bool = True
    exact_outputs: bool = False

    @property
    def name(self) -> str:
        kind = self.statistic[0]
        if kind == "identity":
            return "output"
        if kind == "column":
            return f"output[{self.statistic[1]}]"
        if kind == "sum":
            return "sum of the coordinates" if len(self.statistic) == 1 else "sum of the values that are not codes"
        if kind == "above":
            return "number of coordinates above their pilot medians"
        if kind == "signed":
            of = "first differences" if self.statistic[3] else "coordinates"
            return f"signed count of {of} above their pilot medians ({_signs_text(self.statistic[2])})"
        return "gaussian LR score"

    def values(self, table: np.ndarray) -> np.ndarray:
        kind = self.statistic[0]
        if kind == "identity":
            return _column(table, None).astype(np.float64, copy=False)
        if kind == "column":
            return _column(table, self.statistic[1]).astype(np.float64, copy=False)
        if kind == "sum":
            x = np.asarray(table, dtype=np.float64).reshape(table.shape[0], -1)
            if len(self.statistic) > 1:
                x = x.copy()
                for j, codes in enumerate(self.statistic[1]):
                    if codes:
                        x[np.isin(x[:, j], codes), j] = 0.0
            with np.errstate(over="ignore", invalid="ignore"):
                return np.nan_to_num(x.sum(axis=1), nan=0.0)
        if kind == "above":
            x = np.asarray(table, dtype=np.float64).reshape(table.shape[0], -1)
            return (x > np.asarray(self.statistic[1])).sum(axis=1).astype(np.float64)
        if kind == "signed":
            _, medians, signs, increments, codes = self.statistic
            x = np.asarray(table, dtype=np.float64).reshape(table.shape[0], -1)
            if increments:
                x = first_differences(x)
            return signed_counts_rows(x, medians, signs, codes)[1].astype(np.float64)
        _, mu_p, prec_p, logdet_p, mu_q, prec_q, logdet_q = self.statistic
        x = np.nan_to_num(np.asarray(table, dtype=np.float64).reshape(table.shape[0], -1), nan=0.0, posinf=1e300, neginf=-1e300)
        # row by row in a fixed order (not BLAS): a row's score, hence its cell, depends on the row alone
        score = gaussian_lr_rows(x, mu_p, prec_p, mu_q, prec_q, 0.5 * (logdet_q - logdet_p))
        return np.nan_to_num(score, nan=0.0)

    def count(self, table: np.ndarray, weights: np.ndarray | None = None) -> Hist:
        """Histogram of the table's outputs (``weights``: row i stands for weights[i] outputs)."""
        cells = np.searchsorted(np.asarray(self.edges), self.values(table), side="right")
        counts = _tally(cells, weights, len(self.edges) + 1)
        return np.arange(len(counts), dtype=np.int64), counts

    def describe(self, keys: np.ndarray, mask: np.ndarray) -> str:
        edges = (-math.inf, *self.edges, math.inf)
        idx = keys[mask]
        if idx.size == 0:
            return f"{self.name} in {{}}"
        runs = np.split(idx, np.flatnonzero(np.diff(idx) != 1) + 1)
        parts = [f"[{_fmt(edges[r[0]])}, {_fmt(edges[r[-1] + 1])})" for r in runs]
        if len(parts) == 1:
            lo, hi = edges[idx[0]], edges[idx[-1] + 1]
            if hi == math.inf:
                return f"{self.name} >= {_fmt(lo)}"
            if lo == -math.inf:
                return f"{self.name} < {_fmt(hi)}"
            return f"{self.name} in {parts[0]}"
        shown = " u ".join(parts[:4]) + (f" u ... ({len(parts)} intervals)" if len(parts) > 4 else "")
        return f"{self.name} in {shown}"


@dataclass(frozen=True)
class JointView:
    """Joint cells of a discrete coordinate and a binned real coordinate (e.g. (index, value) outputs).

    Cell (v, i) holds the outputs with ``output[discrete] == v`` and ``output[column]`` in
    [edges[i-1], edges[i]); the cells are unordered, so the estimators' singleton and
    likelihood-ratio events express joint events such as {index = 9 and value in [0, 4)}.
    """

    discrete: int
    column: int
    edges: tuple[float, ...]
    ordered: bool = False
    exact_outputs: bool = False

    @property
    def name(self) -> str:
        return f"(output[{self.discrete}], output[{self.column}])"

    def count(self, table: np.ndarray, weights: np.ndarray | None = None) -> Hist:
        """Histogram of the table's outputs (``weights``: row i stands for weights[i] outputs)."""
        if table.ndim != 2:
            raise AccountingError("outputs", f"array of shape {table.shape}", "vector outputs (the pilot saw vectors)")
        bins = np.searchsorted(np.asarray(self.edges), table[:, self.column].astype(np.float64), side="right")
        rows = np.stack([table[:, self.discrete].astype(np.float64), bins.astype(np.float64)], axis=1)
        if rows.shape[0] == 0:
            return rows, np.zeros(0, dtype=np.int64)
        keys, inverse, counts = unique_rows(rows)
        return keys, (counts if weights is None else _tally(inverse, weights, len(keys)))

    def describe(self, keys: np.ndarray, mask: np.ndarray) -> str:
        edges = (-math.inf, *self.edges, math.inf)
        parts = []
        chosen = keys[mask]
        for v in np.unique(chosen[:, 0]):
            idx = np.sort(chosen[chosen[:, 0] == v, 1].astype(np.int64))
            runs = np.split(idx, np.flatnonzero(np.diff(idx) != 1) + 1)
            spans = " u ".join(f"[{_fmt(edges[r[0]])}, {_fmt(edges[r[-1] + 1])})" for r in runs[:4])
            more = f" u ... ({len(runs)} intervals)" if len(runs) > 4 else ""
            parts.append(f"(output[{self.discrete}] == {_fmt(v)} and output[{self.column}] in {spans}{more})")
        if not parts:
            return f"{self.name} in {{}}"
        shown = " or ".join(parts[:4]) + (f" or ... ({len(parts)} values)" if len(parts) > 4 else "")
        return shown


@dataclass(frozen=True)
class QuantisedRowsView:
    """Whole output rows with each coordinate quantised: exact cells for the values a coordinate
    takes repeatedly (sentinels such as "not answered"), pilot-quantile bins for the rest.

    For structured outputs that mix categories and real values (a sparse vector that releases
    the noisy value of its first "above" answer and a code elsewhere) the likelihood ratio
    depends on the pattern and the value jointly; the cells are (pattern, bins) rows, unordered,
    so the estimators' likelihood-ratio events express events such as {first above at query 3
    with value in [2.1, 4.7)}. A row's cell is a mixed-radix integer of its coordinate codes.
    """

    atoms: tuple[tuple[float, ...], ...]
    edges: tuple[tuple[float, ...], ...]
    ordered: bool = False
    exact_outputs: bool = False

    @property
    def name(self) -> str:
        return "quantised output"

    def _radices(self) -> list[int]:
        return [len(a) + len(e) + 1 for a, e in zip(self.atoms, self.edges)]

    def codes(self, table: np.ndarray) -> np.ndarray:
        if table.ndim != 2 or table.shape[1] != len(self.atoms):
            raise AccountingError("outputs", f"array of shape {table.shape}", f"vectors of {len(self.atoms)} coordinates (the pilot's)")
        key = np.zeros(table.shape[0], dtype=np.int64)
        x = table.astype(np.float64, copy=False)
        for j, (atoms, edges, radix) in enumerate(zip(self.atoms, self.edges, self._radices())):
            col = x[:, j]
            code = len(atoms) + np.searchsorted(np.asarray(edges, dtype=np.float64), col, side="right")
            for i, a in enumerate(atoms):
                code = np.where(col == a, i, code)
            key = key * radix + code
        return key

    def count(self, table: np.ndarray, weights: np.ndarray | None = None) -> Hist:
        """Histogram of the table's outputs (``weights``: row i stands for weights[i] outputs)."""
        return _discrete_hist(self.codes(table), weights)

    def _cell_text(self, key: int) -> str:
        parts = []
        for atoms, edges, radix in reversed(list(zip(self.atoms, self.edges, self._radices()))):
            key, code = divmod(int(key), radix)
            if code < len(atoms):
                parts.append(_fmt(atoms[code]))
            else:
                full = (-math.inf, *edges, math.inf)
                b = code - len(atoms)
                parts.append(f"[{_fmt(full[b])}, {_fmt(full[b + 1])})")
        return "(" + ", ".join(reversed(parts)) + ")"

    def describe(self, keys: np.ndarray, mask: np.ndarray) -> str:
        chosen = keys[mask]
        cells = [self._cell_text(k) for k in chosen[:8]]
        if chosen.size == 1:
            return f"{self.name} == {cells[0]}"
        more = f", ... ({chosen.size} cells)" if chosen.size > 8 else ""
        return f"{self.name} in {{{', '.join(cells)}{more}}}"



#: A quantised-rows view has at most this many distinct pilot cells (and 16 pilot draws per cell).
MAX_QUANTISED_CELLS = 4096
#: Bins per coordinate of the coarse quantised-rows view.
COARSE_BINS = 8
#: A value a coordinate takes in at least this share of the pilot draws is an atom (its own cell).
ATOM_SHARE = 0.01

#: Joint (discrete, real) views are built for at most this many coordinate pairs, on discrete
#: coordinates taking at most JOINT_MAX_VALUES values, with JOINT_BINS bins of the real one.
MAX_JOINT_VIEWS = 8
JOINT_MAX_VALUES = 64
JOINT_BINS = 16

_MID_LEVELS = np.linspace(0.0, 1.0, 129)[1:-1]
_TAIL_LEVELS = np.array([1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2])


def first_differences(x: np.ndarray) -> np.ndarray:
    """Rows x_1, x_2 - x_1, ..., x_d - x_{d-1}: the increments of a running sum."""
    out = np.empty_like(x)
    out[:, :1] = x[:, :1]
    with np.errstate(over="ignore", invalid="ignore"):
        np.subtract(x[:, 1:], x[:, :-1], out=out[:, 1:])
    return out


def _signs_text(signs: Sequence[int]) -> str:
    """+1 / -1 coordinates as "+0,1 -3" (index lists), for event descriptions."""
    up = [str(j) for j, s in enumerate(signs) if s > 0]
    down = [str(j) for j, s in enumerate(signs) if s < 0]
    return " ".join(part for part in (("+" + ",".join(up)) if up else "", ("-" + ",".join(down)) if down else "") if part)


#: A coordinate votes in a signed count when its pilot proportions above the pooled median differ
#: by at least this many standard errors (a two-sided 1.2% test: few noise coordinates get in,
#: and on a small pilot few shifted coordinates stay out).
SIGN_Z = 2.5


def _value_medians(pooled: np.ndarray, codes: Sequence[Sequence[float]]) -> np.ndarray:
    """Each coordinate's median over its values that are no code (0 where all are codes)."""
    out = np.zeros(pooled.shape[1])
    for j, c in enumerate(codes):
        values = pooled[~np.isin(pooled[:, j], c), j]
        if values.size:
            out[j] = np.median(values)
    return out


def _votes(x: np.ndarray, medians: np.ndarray, codes: Sequence[Sequence[float]]) -> np.ndarray:
    """+1 / -1 for a value above / not above its coordinate's median, 0 for a code value."""
    votes = np.where(x > medians, 1.0, -1.0)
    for j, c in enumerate(codes):
        if c:
            votes[np.isin(x[:, j], c), j] = 0.0
    return votes


def signed_count_view(pilot_p: np.ndarray, pilot_q: np.ndarray, increments: bool) -> BinnedView | None:
    """The signed count of coordinates (or of first differences) above their pilot medians, each
    coordinate signed by the direction it moved between the pilots; None if none moved.

    Each coordinate votes +1 above its median, -1 below it, and 0 where it holds one of its
    codes (an SVT's "below" or "aborted" marker: only released values vote, medians taken over
    them). The statistic is the likelihood ratio of independent Laplace noise under shifts much
    smaller than its scale, whose per-coordinate loss is +-shift/b on either side of the shift."""
    x_p = np.nan_to_num(np.asarray(pilot_p, dtype=np.float64), nan=0.0, posinf=1e300, neginf=-1e300)
    x_q = np.nan_to_num(np.asarray(pilot_q, dtype=np.float64), nan=0.0, posinf=1e300, neginf=-1e300)
    if increments:
        x_p, x_q = first_differences(x_p), first_differences(x_q)
    pooled = np.concatenate([x_p, x_q], axis=0)
    codes = tuple(() for _ in range(pooled.shape[1])) if increments else _codes(pooled)
    medians = _value_medians(pooled, codes)
    v_p, v_q = _votes(x_p, medians, codes), _votes(x_q, medians, codes)
    diff = v_p.mean(axis=0) - v_q.mean(axis=0)
    se = np.sqrt(np.maximum(v_p.var(axis=0) / x_p.shape[0] + v_q.var(axis=0) / x_q.shape[0], 1e-12))
    signs = np.where(np.abs(diff) >= SIGN_Z * se, np.sign(diff), 0.0).astype(np.int64)
    if not signs.any():
        return None
    voting = int((signs != 0).sum())
    return BinnedView(tuple(k + 0.5 for k in range(-voting, voting)),
                      ("signed", tuple(float(m) for m in medians), tuple(int(s) for s in signs), bool(increments), codes))


@dataclass(frozen=True)
class PatternValueView:
    """Joint cells (A, V) of two signed counts over outputs that mix codes with released values:
    A = sum_j s_j [coordinate j is a released value], V = sum_j s_j vote_j (+1 above, -1 below
    its median, 0 on a code), with s_j the direction in which coordinate j is released more
    often under the first pilot, or the inputs' own direction sign(d_j - d'_j). For an SVT that releases noisy answers (numerical SVT) the
    log-likelihood ratio of a shift is a sum of a pattern term and a value term; these two
    counts summarise both, and their joint cells express "the above answers are where the
    first input puts them and their values lean its way". Cells are unordered."""

    medians: tuple[float, ...]
    signs: tuple[int, ...]
    codes: tuple[tuple[float, ...], ...]
    ordered: bool = False
    exact_outputs: bool = False

    @property
    def name(self) -> str:
        return f"(released count, value count) with coordinate signs ({_signs_text(self.signs)})"

    def pair(self, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(table, dtype=np.float64).reshape(table.shape[0], -1)
        return signed_counts_rows(x, self.medians, self.signs, self.codes)

    def count(self, table: np.ndarray, weights: np.ndarray | None = None) -> Hist:
        """Histogram of the table's outputs (``weights``: row i stands for weights[i] outputs)."""
        a, v = self.pair(table)
        width = 2 * len(self.signs) + 1
        return _discrete_hist((a + len(self.signs)) * width + (v + len(self.signs)), weights)

    def describe(self, keys: np.ndarray, mask: np.ndarray) -> str:
        width = 2 * len(self.signs) + 1
        cells = [f"({int(k) // width - len(self.signs)}, {int(k) % width - len(self.signs)})" for k in keys[mask]]
        return _set_text(self.name, cells)


def input_signs(d: Any, d_prime: Any, width: int) -> np.ndarray | None:
    """sign(d - d') per coordinate when both inputs are numeric vectors as wide as the output (a
    query vector answered coordinate by coordinate, as StatDP's patterns assume), else None."""
    try:
        a = np.asarray(d, dtype=np.float64).reshape(-1)
        b = np.asarray(d_prime, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return None
    if a.shape != (width,) or b.shape != (width,) or not np.all(np.isfinite(a - b)):
        return None
    return np.sign(a - b).astype(np.int64)


View = DiscreteView | RowsView | BinnedView | JointView | QuantisedRowsView | PatternValueView


def pattern_value_views(pilot_p: np.ndarray, pilot_q: np.ndarray, codes: tuple[tuple[float, ...], ...],
                        oriented: np.ndarray | None = None) -> list[PatternValueView]:
    """The (A, V) views of an output whose coordinates mix codes and released values: one signed
    by the coordinates the first pilot releases significantly more often, one by ``oriented``
    (the inputs' own direction, :func:`input_signs`: it sees the whole pattern where the pilot,
    on a small shift, sees only part of it); none without codes (``codes``: :func:`_codes` of
    the pooled pilots)."""
    pooled = np.concatenate([pilot_p, pilot_q], axis=0).astype(np.float64)
    if not any(codes):
        return []
    released = [np.stack([~np.isin(x[:, j], c) for j, c in enumerate(codes)], axis=1).astype(np.float64)
                for x in (np.asarray(pilot_p, dtype=np.float64), np.asarray(pilot_q, dtype=np.float64))]
    diff = released[0].mean(axis=0) - released[1].mean(axis=0)
    se = np.sqrt(np.maximum(released[0].var(axis=0) / len(pilot_p) + released[1].var(axis=0) / len(pilot_q), 1e-12))
    candidates = [np.where(np.abs(diff) >= SIGN_Z * se, np.sign(diff), 0.0).astype(np.int64)]
    if oriented is not None:
        candidates.append(np.asarray(oriented, dtype=np.int64))
    medians = tuple(float(m) for m in _value_medians(pooled, codes))
    out: list[PatternValueView] = []
    for signs in candidates:
        view = PatternValueView(medians, tuple(int(x) for x in signs), codes)
        if signs.any() and view not in out:
            out.append(view)
    return out


def _edges(values: np.ndarray) -> tuple[float, ...]:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return (0.0,)
    floor = 1.0 / values.size
    tails = _TAIL_LEVELS[_TAIL_LEVELS >= floor]
    levels = np.unique(np.concatenate([tails, _MID_LEVELS, 1.0 - tails]))
    edges = np.unique(np.quantile(values, levels, method="inverted_cdf"))
    edges = edges[np.isfinite(edges)]
    return tuple(float(e) for e in edges) if edges.size else (0.0,)


def _is_discrete(values: np.ndarray) -> bool:
    if values.dtype.kind == "i":
        return True
    distinct = np.unique(values).size
    return distinct <= 1024 and distinct * 16 <= values.size


@contextlib.contextmanager
def single_thread_blas() -> Iterator[None]:
    """BLAS on one thread inside the block (threadpoolctl, scikit-learn's dependency, when installed).

    Fits (covariances, their inverses, the classifiers) are then the same on a machine of any
    core count: multi-threaded BLAS/LAPACK split their sums by thread (measured here: logistic
    regression weights differ by 5e-14 between one and two threads, a 128 x 128 inverse too),
    which moves scores that sit on a bin edge. The fits are small, so one thread is also faster
    than waking a pool, most of all on a loaded machine.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn (and with it threadpoolctl) is an extra
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _gaussian_fit(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    x = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
    mu = x.mean(axis=0)
    cov = np.atleast_2d(np.cov(x, rowvar=False))
    d = cov.shape[0]
    ridge = 1e-6 * (np.trace(cov) / d + 1e-12)
    cov = cov + ridge * np.eye(d)
    sign, logdet = np.linalg.slogdet(cov)
    return mu, np.linalg.inv(cov), float(logdet)


def column_views(pooled: np.ndarray, columns: Sequence[int]) -> list[View]:
    """Per-coordinate views of the given columns: exact if discrete, pilot-quantile bins if real."""
    out: list[View] = []
    for j in columns:
        if _is_discrete(pooled[:, j]):
            out.append(DiscreteView(j))
        else:
            out.append(BinnedView(_edges(pooled[:, j]), ("column", j)))
    return out


def _codes(pooled: np.ndarray) -> tuple[tuple[float, ...], ...]:
    """Per coordinate, its values repeated in at least ATOM_SHARE of the pilot (at most 16)."""
    out = []
    for j in range(pooled.shape[1]):
        values, counts = np.unique(pooled[:, j], return_counts=True)
        out.append(tuple(float(v) for v in values[counts >= max(2, ATOM_SHARE * pooled.shape[0])][:16]))
    return tuple(out)


def _quantised_rows(pooled: np.ndarray, atoms: tuple[tuple[float, ...], ...], most: int = 64) -> QuantisedRowsView | None:
    """The quantised-rows view with the most bins per coordinate (``most``, ``most`` / 2, ..., 2)
    whose pilot cells are few enough to estimate, or None. Each coordinate's ``atoms`` (its
    codes) are cells of their own; besides B equal-mass bins of the rest, each coordinate's two
    outer bins are split twice more towards the tails (down to 32 pilot values), where the
    likelihood ratio of a released noisy value is largest."""
    n, d = pooled.shape
    rest = [pooled[~np.isin(pooled[:, j], atoms[j]), j] for j in range(d)]
    for bins in (64, 32, 16, 8, 4, 2):
        if bins > most:
            continue
        edges = []
        for r in rest:
            r = r[np.isfinite(r)]
            if r.size == 0:
                edges.append(())
                continue
            tails = np.array([0.25, 0.0625]) / bins
            tails = tails[tails >= 32.0 / r.size]
            levels = np.unique(np.concatenate([np.linspace(0, 1, bins + 1)[1:-1], tails, 1.0 - tails]))
            cuts = np.unique(np.quantile(r, levels, method="inverted_cdf"))
            edges.append(tuple(float(c) for c in cuts))
        view = QuantisedRowsView(atoms, tuple(edges))
        if sum(math.log2(r) for r in view._radices()) > 62:
            continue
        cells = np.unique(view.codes(pooled)).size
        if cells <= MAX_QUANTISED_CELLS and cells * 16 <= n:
            return view
    return None


def fit_views(pilot_p: np.ndarray, pilot_q: np.ndarray, inputs: tuple[Any, Any] | None = None) -> tuple[View, ...]:
    """The views for this output type, fitted on the pilot samples of both inputs (``inputs``:
    the pair, whose coordinate-wise direction orients the pattern/value view where the pilot
    cannot)."""
    if pilot_p.ndim != pilot_q.ndim or (pilot_p.ndim == 2 and pilot_p.shape[1] != pilot_q.shape[1]):
        raise AccountingError("outputs", f"shapes {pilot_p.shape} and {pilot_q.shape}", "outputs of one shape under both inputs")
    pooled = np.concatenate([pilot_p, pilot_q], axis=0)
    if pooled.ndim == 1:
        if _is_discrete(pooled):
            return (DiscreteView(),)
        return (BinnedView(_edges(pooled)),)
    d = pooled.shape[1]
    discrete = [j for j in range(d) if _is_discrete(pooled[:, j])]
    continuous = [j for j in range(d) if j not in discrete]
    views: list[View] = []
    distinct_rows = np.unique(pooled, axis=0).shape[0]
    if distinct_rows <= 4096 and distinct_rows * 16 <= pooled.shape[0]:
        views.append(RowsView())
    elif len(discrete) >= 2:
        sub = pooled[:, discrete]
        rows = np.unique(sub, axis=0).shape[0]
        if rows <= 4096 and rows * 16 <= sub.shape[0]:
            views.append(RowsView(tuple(discrete)))
    views.extend(column_views(pooled, range(min(d, MAX_COLUMN_VIEWS))))
    small = [j for j in discrete if np.unique(pooled[:, j]).size <= JOINT_MAX_VALUES]
    joints = [(j, k) for j in small for k in continuous][:MAX_JOINT_VIEWS]
    for j, k in joints:
        cuts = np.unique(np.quantile(pooled[:, k], np.linspace(0, 1, JOINT_BINS + 1)[1:-1], method="inverted_cdf"))
        views.append(JointView(j, k, tuple(float(c) for c in cuts[np.isfinite(cuts)])))
    whole_rows = bool(views) and isinstance(views[0], RowsView) and views[0].columns is None
    codes = _codes(pooled) if continuous else ()
    if continuous and not whole_rows:
        quantised = _quantised_rows(pooled, codes)
        if quantised is not None:
            views.append(quantised)
            # and a coarse one: its cells pool enough draws to be ranked reliably when the
            # likelihood ratio is large only on a rare union of fine cells (an SVT's late "above"
            # answer with a low released value)
            coarse = _quantised_rows(pooled, codes, COARSE_BINS)
            if coarse is not None and coarse != quantised:
                views.append(coarse)
    if len(continuous) >= 2:
        views.append(BinnedView(_edges(BinnedView((0.0,), ("sum",)).values(pooled)), ("sum",)))
        if any(codes):  # the released values' sum: a shift's likelihood ratio given the codes
            stat = ("sum", codes)
            views.append(BinnedView(_edges(BinnedView((0.0,), stat).values(pooled)), stat))
        medians = tuple(float(m) for m in np.nanmedian(pooled.astype(np.float64), axis=0))
        views.append(BinnedView(tuple(float(k) + 0.5 for k in range(d)), ("above", medians)))
        views.extend(pattern_value_views(pilot_p, pilot_q, codes, None if inputs is None else input_signs(*inputs, d)))
        # signed counts of the coordinates' released values, and of the increments of real vectors
        for inc in (False, True) if len(continuous) == d else (False,):
            view = signed_count_view(pilot_p, pilot_q, inc)
            if view is not None:
                views.append(view)
    # a score is a function of the output: with exact whole-row cells it could only merge them
    if (len(views) > 1 or continuous) and d <= MAX_GAUSSIAN_DIM and not whole_rows:
        with single_thread_blas():
            mu_p, prec_p, logdet_p = _gaussian_fit(pilot_p)
            mu_q, prec_q, logdet_q = _gaussian_fit(pilot_q)
        # arrays, not nested tuples: converting a d x d tuple back to an array costs more than the score
        stat = ("gaussian-lr", mu_p, prec_p, logdet_p, mu_q, prec_q, logdet_q)
        probe = BinnedView((0.0,), stat)
        views.append(BinnedView(_edges(probe.values(pooled)), stat))
    return tuple(views)
