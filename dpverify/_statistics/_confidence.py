"""Exact binomial confidence bounds and the alpha-spending rule, below every layer that uses them.

Everything here is a statement about one binomial proportion or about how a total error
budget ``alpha`` is divided; the auditor's estimators and the tail verifier's Monte Carlo rows
combine them with explicit union bounds. It imports nothing from :mod:`dpverify` (tails are not
audits: neither imports the other for its statistics).

- :func:`cp_lower` / :func:`cp_upper`: one-sided Clopper-Pearson bounds, computed from the
  beta quantile (``scipy.stats.beta.ppf``), which is the exact inversion of the binomial tail:
  for X ~ Bin(n, p), P[cp_lower(X, n, a) > p] <= a and P[cp_upper(X, n, a) < p] <= a for every p.
- :func:`sequential_level`: the share alpha * 6 / (pi^2 j^2) of round j of a sequential audit;
  the shares sum to alpha over j = 1, 2, ..., so bounds that hold at their round's share hold
  simultaneously over all rounds (an anytime-valid union bound) with probability >= 1 - alpha.
- :func:`rate_interval`: the two-sided 95% Clopper-Pearson interval used to report measured
  error rates in the soundness study.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import beta as _beta

__all__ = ["cp_lower", "cp_upper", "rate_interval", "sequential_level"]


def cp_lower(successes: np.ndarray | float, trials: np.ndarray | float, level: float) -> np.ndarray:
    """One-sided lower Clopper-Pearson bound: P[bound > p] <= ``level``.

    ``successes`` may be fractional (used only to *predict* bounds from rescaled selection
    counts, never for a reported bound). Vectorised; returns 0 where ``successes`` is 0.
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = _beta.ppf(level, np.maximum(k, 1e-300), n - k + 1.0)
    return np.where(k <= 0, 0.0, out)


def cp_upper(successes: np.ndarray | float, trials: np.ndarray | float, level: float) -> np.ndarray:
    """One-sided upper Clopper-Pearson bound: P[bound < p] <= ``level``. Returns 1 where k = n."""
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = _beta.ppf(1.0 - level, k + 1.0, np.maximum(n - k, 1e-300))
    return np.where(k >= n, 1.0, out)


def sequential_level(alpha: float, round_index: int) -> float:
    """alpha_j = alpha * 6 / (pi^2 j^2) for round j >= 1 (sum over j equals alpha)."""
    if round_index < 1:
        raise ValueError(f"round_index={round_index!r} is invalid: expected an integer >= 1")
    return alpha * 6.0 / (math.pi**2 * round_index**2)


def rate_interval(exceedances: int, repetitions: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for an error rate measured over ``repetitions``."""
    tail = (1.0 - confidence) / 2.0
    lo = float(cp_lower(exceedances, repetitions, tail))
    hi = float(cp_upper(exceedances, repetitions, tail))
    return lo, hi
