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

__all__ = ["GofResult", "integer_gof"]


@dataclass(frozen=True)
class GofResult:
    statistic: float
    df: int
    p_value: float
    alpha: float
    n: int
    #: bin index of each value lo + k (tails are bins 0 and the last)
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

    def power_against(self, alt_probs, alt_lower_tail: float = 0.0, alt_upper_tail: float = 0.0) -> float:
        """Power against the alternative with pmf ``alt_probs`` on the same grid (and tails)."""
        q = _binned(np.asarray(alt_probs, dtype=float), alt_lower_tail, alt_upper_tail, self.bin_of, len(self.expected_probs))
        lam = self.n * float(np.sum((q - self.expected_probs) ** 2 / self.expected_probs))
        return float(stats.ncx2.sf(self.critical_value, self.df, lam))

    def __str__(self) -> str:
        return f"chi2={self.statistic:.1f} df={self.df} p={self.p_value:.3g} (alpha={self.alpha:.2g}, N={self.n})"


def _binned(probs: np.ndarray, lower_tail: float, upper_tail: float, bin_of: np.ndarray, nbins: int) -> np.ndarray:
    out = np.zeros(nbins)
    np.add.at(out, bin_of[1:-1], probs)
    out[bin_of[0]] += lower_tail
    out[bin_of[-1]] += upper_tail
    return out


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
    p = np.asarray(probs, dtype=float)
    n = x.size
    min_expected = max(min_expected, n / max_bins)
    total = p.sum() + lower_tail + upper_tail
    if not abs(total - 1.0) < 1e-9:
        raise ValueError(f"null probabilities sum to {total!r}, not 1: extend the grid or pass the tails")
    # cells: [lower tail, lo, ..., hi, upper tail]
    cells = np.concatenate(([lower_tail], p, [upper_tail]))
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
    expected = np.zeros(nbins)
    np.add.at(expected, bin_of, cells)
    idx = np.clip(x - lo + 1, 0, cells.size - 1)
    observed = np.bincount(bin_of[idx], minlength=nbins).astype(float)
    if nbins < 2:
        raise ValueError("all mass falls in one bin: the test has no power; use more samples")
    stat = float(np.sum((observed - n * expected) ** 2 / (n * expected)))
    df = nbins - 1
    return GofResult(stat, df, float(stats.chi2.sf(stat, df)), alpha, n, bin_of, expected)
