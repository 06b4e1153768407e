"""Lower references for dp_accounting event trees: the mechanism run on one concrete pair of datasets.

Every leaf event is realised on a 1-D add/remove pair: D holds the record x* = +1 and n - 1
others of value -1, D' only the others (a Gaussian or Laplace leaf: the sum of the batch plus
noise). The two output laws are exact finite mixtures of shifted Gaussians (or Laplaces); they are
binned (a post-processing: it can only lower every divergence) and handed to dp_accounting's
``from_two_probability_mass_functions`` with ``pessimistic_estimate=False`` (losses rounded down:
lower again), and compositions are composed by dp_accounting. The epsilon it returns is below
the true epsilon of that pair, hence below the mechanism's epsilon, hence below any certified
upper bound -- up to float rounding of the bin masses (relative 1e-15 per bin), which the tests'
slack covers. Nothing here uses :mod:`accounting`.

Leaves: GaussianDpEvent(s): N(1, s^2) vs N(0, s^2); LaplaceDpEvent(b): Lap(1, b) vs Lap(0, b);
PoissonSampledDpEvent(q, Gaussian(s)): (1-q) N(0) + q N(1) vs N(0);
TruncatedSubsampledGaussianDpEvent(n, q, B, s): with K ~ Bin(n-1, q) others sampled, D' sums
-min(K, B); D adds x* with probability q, kept with probability min(1, B/(K+1)) in place of one
other (sum -min(K, B-1) + 1) when K >= B, always when K < B;
SampledWithReplacementDpEvent(n, m, Gaussian(s) or Laplace(b)): J ~ Bin(m, 1/n) draws of x*, the
sum is 2J - m under D and -m under D'.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

#: bins per noise scale and the range (noise scales) kept around the means; the two outer bins
#: take the rest
_BINS_PER_SCALE = 25
_RANGE = 11.0


def leaf_laws(event) -> tuple[str, float, list[tuple[float, float]], list[tuple[float, float]]]:
    """(family, scale, P as [(weight, mean)], Q likewise) of a leaf event on the realised pair."""
    name = type(event).__name__
    if name == "GaussianDpEvent":
        return "gauss", event.noise_multiplier, [(1.0, 1.0)], [(1.0, 0.0)]
    if name == "LaplaceDpEvent":
        return "laplace", event.noise_multiplier, [(1.0, 1.0)], [(1.0, 0.0)]
    if name == "PoissonSampledDpEvent":
        q = event.sampling_probability
        return "gauss", event.event.noise_multiplier, [(1 - q, 0.0), (q, 1.0)], [(1.0, 0.0)]
    if name == "TruncatedSubsampledGaussianDpEvent":
        n, q, b = event.dataset_size, event.sampling_probability, event.truncated_batch_size
        p_law: dict[float, float] = {}
        q_law: dict[float, float] = {}
        for k in range(n):
            pk = stats.binom.pmf(k, n - 1, q)
            base = -min(k, b)
            q_law[base] = q_law.get(base, 0.0) + pk
            p_law[base] = p_law.get(base, 0.0) + pk * (1 - q)
            keep = 1.0 if k < b else b / (k + 1)
            with_x = (-min(k, b - 1) + 1) if k >= b else (-k + 1)
            p_law[with_x] = p_law.get(with_x, 0.0) + pk * q * keep
            p_law[base] = p_law.get(base, 0.0) + pk * q * (1 - keep)
        return "gauss", event.noise_multiplier, [(w, m) for m, w in p_law.items()], [(w, m) for m, w in q_law.items()]
    if name == "SampledWithReplacementDpEvent":
        n, m = event.source_dataset_size, event.sample_size
        p_law = [(stats.binom.pmf(j, m, 1.0 / n), 2.0 * j - m) for j in range(m + 1)]
        family = "laplace" if type(event.event).__name__ == "LaplaceDpEvent" else "gauss"
        return family, event.event.noise_multiplier, p_law, [(1.0, -float(m))]
    raise ValueError(f"no realised pair for {name}")


def _cdf(family: str, x: np.ndarray, mean: float, scale: float) -> tuple[np.ndarray, np.ndarray]:
    law = stats.norm if family == "gauss" else stats.laplace
    return law.cdf(x, loc=mean, scale=scale), law.sf(x, loc=mean, scale=scale)


def _bin_masses(family: str, scale: float, law, edges: np.ndarray) -> np.ndarray:
    """Masses of the bins (-inf, e_0], (e_0, e_1], ..., (e_last, inf): differences of the cdf
    left of each mean and of the survival function right of it (no cancellation in the tails)."""
    total = np.zeros(len(edges) + 1)
    for weight, mean in law:
        if weight <= 0:
            continue
        cdf, sf = _cdf(family, edges, mean, scale)
        inner = np.where(edges[1:] <= mean, cdf[1:] - cdf[:-1], sf[:-1] - sf[1:])
        total += weight * np.concatenate([[cdf[0]], np.maximum(inner, 0.0), [sf[-1]]])
    return total


def leaf_pld(event, h: float):
    """dp_accounting's optimistic PLD of the binned realised pair of one leaf."""
    return pair_pld(*leaf_laws(event), h)


def pair_pld(family: str, scale: float, p_law, q_law, h: float):
    """dp_accounting's optimistic PLD of the binned pair (P, Q) = (mixture p_law, mixture q_law)."""
    from dp_accounting.pld import privacy_loss_distribution as pl

    means = [m for _, m in p_law + q_law]
    width = scale / _BINS_PER_SCALE
    edges = np.arange(min(means) - _RANGE * scale, max(means) + _RANGE * scale + width, width)
    p = _bin_masses(family, scale, p_law, edges)
    q = _bin_masses(family, scale, q_law, edges)
    keep = (p > 0) & (q > 0)  # a bin dropped from both only lowers the divergence
    log_p = {i: math.log(v) for i, v in enumerate(p) if keep[i]}
    log_q = {i: math.log(v) for i, v in enumerate(q) if keep[i]}
    return pl.from_two_probability_mass_functions(log_q, log_p, pessimistic_estimate=False, value_discretization_interval=h)


def lower_pld(event, h: float = 1e-3):
    """The optimistic PLD of a tree (Composed / SelfComposed of realisable leaves)."""
    name = type(event).__name__
    if name == "ComposedDpEvent":
        plds = [lower_pld(e, h) for e in event.events]
        out = plds[0]
        for other in plds[1:]:
            out = out.compose(other)
        return out
    if name == "SelfComposedDpEvent":
        return lower_pld(event.event, h).self_compose(event.count)
    return leaf_pld(event, h)


def lower_epsilon(event, delta: float, h: float = 1e-3) -> float:
    """A lower bound of the event's epsilon at ``delta`` (module docstring)."""
    return float(lower_pld(event, h).get_epsilon_for_delta(delta))
