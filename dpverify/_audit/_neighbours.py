"""Neighbouring input pairs: given explicitly, or generated from the standard patterns.

A :class:`NeighbourPair` is two inputs (D, D') that the claimed guarantee says are neighbours,
with a label for reports and, optionally, the exact output laws of a discrete mechanism on them
(an :class:`accounting.IntegerPair`, P = M(D), Q = M(D')) from which the auditor can certify that
an output is impossible.

Patterns:

- :func:`statdp_pairs` -- the query-vector patterns of Ding et al. (StatDP, CCS 2018) for
  mechanisms over a vector of counting-query answers with l_inf sensitivity 1: one above, one
  below, one above rest below, one below rest above, half up half down, all above and all below,
  and the X shape.
- :func:`scalar_pairs` -- a scalar statistic and its neighbours at +- sensitivity.
- :func:`replace_one_pairs` -- a dataset (e.g. the rewards of a batch of users) and the datasets
  obtained by replacing one record with each given value (the bandit papers' neighbouring
  relation: one user's reward changes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from accounting import AccountingError, IntegerPair
from accounting.internal import check_positive, check_positive_int

__all__ = ["NeighbourPair", "as_pairs", "replace_one_pairs", "scalar_pairs", "statdp_pairs"]


@dataclass(frozen=True)
class NeighbourPair:
    """Two neighbouring inputs, a label, and optionally their exact discrete output laws."""

    d: Any
    d_prime: Any
    label: str = ""
    law: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", f"{_short(self.d)} ~ {_short(self.d_prime)}")
        if self.law is not None and not isinstance(self.law, (IntegerPair, _SwappedLaw)):
            raise AccountingError("law", self.law, "an accounting IntegerPair (with log_p and log_q) or None")

    def swapped(self) -> "NeighbourPair":
        law = None if self.law is None else _SwappedLaw(self.law)
        return NeighbourPair(self.d_prime, self.d, f"{self.label} (swapped)", law)


class _SwappedLaw:
    """The same pair of laws with P and Q exchanged."""

    def __init__(self, law: Any) -> None:
        self._law = law

    def log_p(self, k: int) -> Any:
        return self._law.log_q(k)

    def log_q(self, k: int) -> Any:
        return self._law.log_p(k)


def _short(x: Any) -> str:
    text = np.array2string(np.asarray(x), threshold=8, separator=",") if isinstance(x, (list, tuple, np.ndarray)) else repr(x)
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


def as_pairs(pairs: Any) -> tuple[NeighbourPair, ...]:
    """Normalise one pair, a (d, d') tuple or a sequence of either into NeighbourPairs.

    A list is always a sequence of pairs. A tuple of two 2-tuples, ``((0, 1), (1, 0))``, is an
    error (two pairs, or one pair of tuple inputs?): pass a list, or wrap the one pair.
    """
    if isinstance(pairs, NeighbourPair):
        return (pairs,)
    if isinstance(pairs, tuple) and len(pairs) == 2 and not isinstance(pairs[0], NeighbourPair):
        if all(isinstance(x, tuple) and len(x) == 2 for x in pairs):
            # ((0, 1), (1, 0)) reads as two pairs and as one pair of tuple inputs: never guess
            raise AccountingError(
                "pairs", pairs, "an unambiguous set of neighbouring pairs",
                f"a tuple of two 2-tuples is ambiguous: pass a list [{pairs[0]!r}, {pairs[1]!r}] for two pairs, "
                f"or [{pairs!r}] (or NeighbourPair{pairs!r}) for one pair of tuple inputs")
        # A single (d, d') tuple. A sequence of two (d, d') tuples is passed as a list.
        return (NeighbourPair(pairs[0], pairs[1]),)
    try:
        items = list(pairs)
    except TypeError:
        raise AccountingError("pairs", pairs, "a NeighbourPair, a (d, d_prime) tuple or a sequence of them") from None
    if not items:
        raise AccountingError("pairs", pairs, "at least one neighbouring pair")
    out = []
    for index, item in enumerate(items):
        if isinstance(item, NeighbourPair):
            out.append(item)
        elif isinstance(item, tuple) and len(item) == 2:
            out.append(NeighbourPair(item[0], item[1]))
        else:
            raise AccountingError(f"pairs[{index}]", item, "a NeighbourPair or a (d, d_prime) tuple")
    labels = [p.label for p in out]
    if len(set(labels)) != len(labels):
        out = [NeighbourPair(p.d, p.d_prime, f"#{i} {p.label}", p.law) for i, p in enumerate(out)]
    return tuple(out)


def statdp_pairs(length: int, sensitivity: float = 1) -> tuple[NeighbourPair, ...]:
    """StatDP's neighbouring query-answer vectors of the given length (l_inf distance <= sensitivity)."""
    n = check_positive_int("length", length)
    s = float(check_positive("sensitivity", sensitivity))
    base = np.ones(n)
    half = n // 2
    patterns = {
        "one above": np.r_[1 + s, np.ones(n - 1)],
        "one below": np.r_[1 - s, np.ones(n - 1)],
        "one above rest below": np.r_[1 + s, np.full(n - 1, 1 - s)],
        "one below rest above": np.r_[1 - s, np.full(n - 1, 1 + s)],
        "half half": np.r_[np.full(half, 1 - s), np.full(n - half, 1 + s)],
        "all above": np.full(n, 1 + s),
        "all below": np.full(n, 1 - s),
    }
    out = [NeighbourPair(base.copy(), v, f"statdp {name} (n={n})") for name, v in patterns.items()]
    if n >= 2:
        x_base = np.r_[np.ones(half), np.zeros(n - half)]
        x_other = np.r_[np.zeros(half), np.ones(n - half)]
        out.append(NeighbourPair(x_base, x_other, f"statdp x shape (n={n})"))
    return tuple(out)


def scalar_pairs(value: float | int, sensitivity: float | int = 1) -> tuple[NeighbourPair, ...]:
    """(value, value + sensitivity) and (value, value - sensitivity); integer-typed if both are ints."""
    check_positive("sensitivity", sensitivity)
    return (
        NeighbourPair(value, value + sensitivity, f"{value!r} ~ {value + sensitivity!r}"),
        NeighbourPair(value, value - sensitivity, f"{value!r} ~ {value - sensitivity!r}"),
    )


def replace_one_pairs(dataset: Sequence[Any] | np.ndarray, values: Sequence[Any], position: int = 0) -> tuple[NeighbourPair, ...]:
    """The dataset against copies with record ``position`` replaced by each of ``values``."""
    base = np.asarray(dataset)
    if base.ndim < 1 or base.shape[0] == 0:
        raise AccountingError("dataset", dataset, "a non-empty sequence of records")
    if not (-base.shape[0] <= position < base.shape[0]):
        raise AccountingError("position", position, f"an index into a dataset of {base.shape[0]} records")
    out = []
    for v in values:
        other = base.copy()
        other[position] = v
        if np.array_equal(other, base):
            continue
        out.append(NeighbourPair(base.copy(), other, f"record {position}: {base[position]!s} -> {v!s}"))
    if not out:
        raise AccountingError("values", values, "at least one value different from the current record")
    return tuple(out)
