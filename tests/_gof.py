"""Goodness-of-fit for integer-valued samplers: Pearson chi-square on merged bins, with power.

Use: ``res = integer_gof(samples, lo, probs, alpha=..., lower_tail=..., upper_tail=...)`` where
``probs[k] = P[X = lo + k]`` under the null and the tails are P[X < lo], P[X > lo + len(probs) - 1].
Adjacent bins are merged (left to right) until each expects at least ``min_expected`` draws (and
N / max_bins), so
the chi-square approximation of the null distribution holds even far in its tail (we test at
false-alarm rates around 1e-7, where 5 expected per bin is not enough; 50 is the default).

Power is computed, not guessed: under an alternative with binned probabilities q, the statistic is
approximately noncentral chi-square with the bins' df and noncentrality
lambda = N sum_i (q_i - p_i)^2 / p_i. :meth:`GofResult.power_against` evaluates that for a given
alternative; :meth:`GofResult.power_at_tv` gives the power against *every* alternative whose binned
law is delta away in total variation, using lambda >= 4 N delta^2 (Cauchy-Schwarz:
(sum |q - p|)^2 <= sum (q - p)^2 / p).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["GofResult", "counts_gof", "integer_gof"]


@dataclass(frozen=True)
class GofResult:
    statistic: float
    df: int
    p_value: float
    alpha: float
    n: int
    #: bin of each cell (for integer_gof: lower tail, lo, lo + 1, ..., upper tail)
    bin_of: np.ndarray
    expected_probs: np.ndarray

    @property
    def rejected(self) -> bool:
        return self.p_value < self.alpha

    @property
    def critical_value(self) -> float:
        return float(stats.chi2.isf(self.alpha, self.df))

    def power_at_tv(self, delta: float) -> float:
        """Power against any alternative whose binned law is >= delta away in total variation."""
        return float(stats.ncx2.sf(self.critical_value, self.df, 4.0 * self.n * delta * delta))

    def power_against(self, alt_probs, alt_lower_tail: float | None = None, alt_upper_tail: float | None = None) -> float:
        """Power against the alternative with these cell probabilities: for :func:`integer_gof`
        pass the pmf on the same grid and its two tails, for :func:`counts_gof` the cells."""
        alt = np.asarray(alt_probs, dtype=float)
        if alt_lower_tail is not None or alt_upper_tail is not None:
            alt = np.concatenate(([alt_lower_tail or 0.0], alt, [alt_upper_tail or 0.0]))
        if alt.size != self.bin_of.size:
            raise ValueError(f"{alt.size} alternative cells for a test on {self.bin_of.size} cells")
        q = np.zeros(self.expected_probs.size)
        np.add.at(q, self.bin_of, alt)
        lam = self.n * float(np.sum((q - self.expected_probs) ** 2 / self.expected_probs))
        return float(stats.ncx2.sf(self.critical_value, self.df, lam))

    def __str__(self) -> str:
        return f"chi2={self.statistic:.1f} df={self.df} p={self.p_value:.3g} (alpha={self.alpha:.2g}, N={self.n})"


def integer_gof(
    samples,
    lo: int,
    probs,
    *,
    alpha: float,
    lower_tail: float = 0.0,
    upper_tail: float = 0.0,
    min_expected: float = 50.0,
    max_bins: int = 200,
) -> GofResult:
    """Pearson chi-square test of integer ``samples`` against the pmf ``probs`` on lo, lo+1, ...

    At most about ``max_bins`` bins: many sparse bins add degrees of freedom and dilute the power
    against smooth departures (a 1% scale error of a wide law)."""
    x = np.asarray(samples, dtype=np.int64).ravel()
    cells = np.concatenate(([lower_tail], np.asarray(probs, dtype=float), [upper_tail]))
    idx = np.clip(x - lo + 1, 0, cells.size - 1)
    return counts_gof(np.bincount(idx, minlength=cells.size), cells, alpha=alpha, min_expected=min_expected, max_bins=max_bins)


def counts_gof(counts, cells, *, alpha: float, min_expected: float = 50.0, max_bins: int = 200) -> GofResult:
    """The same test from counts per cell (``cells`` = null probabilities of those cells), for
    samples too many to hold in memory. For :func:`integer_gof` the cells are
    [lower tail, lo, ..., hi, upper tail]."""
    counts = np.asarray(counts, dtype=float)
    cells = np.asarray(cells, dtype=float)
    n = int(counts.sum())
    total = cells.sum()
    if not abs(total - 1.0) < 1e-9:
        raise ValueError(f"null probabilities sum to {total!r}, not 1: extend the grid or pass the tails")
    min_expected = max(min_expected, n / max_bins)
    bin_of = np.empty(cells.size, dtype=np.int64)
    b, acc = 0, 0.0
    for i, c in enumerate(cells):
        bin_of[i] = b
        acc += c
        if acc * n >= min_expected and i < cells.size - 1:
            b, acc = b + 1, 0.0
    if acc * n < min_expected and b > 0:
        bin_of[bin_of == b] = b - 1  # the short last bin joins its neighbour
        b -= 1
    nbins = b + 1
    if nbins < 2:
        raise ValueError("all mass falls in one bin: the test has no power; use more samples")
    expected = np.zeros(nbins)
    np.add.at(expected, bin_of, cells)
    observed = np.zeros(nbins)
    np.add.at(observed, bin_of, counts)
    stat = float(np.sum((observed - n * expected) ** 2 / (n * expected)))
    df = nbins - 1
    return GofResult(stat, df, float(stats.chi2.sf(stat, df)), alpha, n, bin_of, expected)
