"""Near-G-optimal experimental design on a finite action set (Algorithm 1, line 4).

For a distribution pi on a finite set D of vectors in R^d let V(pi) = sum_x pi(x) x x^T and
g(pi) = max_{x in D} ||x||^2_{V(pi)^{-1}}. Kiefer and Wolfowitz (1960): min_pi g(pi) = d, and the
minimisers are the D-optimal designs (maximisers of log det V(pi)). DP-DPE needs only a *near*
G-optimal design: g(pi) <= 2d and |supp(pi)| <= 4 d log log d + 16 (Lattimore, Szepesvari and
Weisz 2020, Prop. 3.7). This module computes one as follows.

1. **Span.** D may not span R^d (late phases keep few actions). Work in an orthonormal basis of
   span(D) (rank r, from an SVD); g is basis-invariant there, V^{-1} becomes the pseudo-inverse
   on the span, and Kiefer-Wolfowitz holds with d replaced by r <= d.
2. **Core-set start (Kumar and Yildirim 2005).** r times: take a direction orthogonal to the
   differences already chosen (the first is the top singular vector; later ones the largest
   residual of a point after projecting out those differences), add the maximiser and the
   minimiser of <direction, x>. pi_0 is uniform on these <= 2r points; V(pi_0) is non-singular on
   the span. No randomness: the design is a function of D.
3. **Frank-Wolfe with away steps (Wolfe 1970, Atwood 1973)** on log det V(pi): the toward step
   moves mass lambda* = (w_j/r - 1)/(w_j - 1) to the point j maximising w = ||x||^2_{V^{-1}};
   the away step takes mass from the support point i minimising w with the same formula
   (lambda* < 0), clipped at -pi_i/(1 - pi_i), where the point leaves the support (a *drop
   step*: this is the support-reduction step built into the iteration). V^{-1} and w are updated
   by Sherman-Morrison (O(k r) per step) and recomputed from scratch every 25 steps.
   Iteration stops as soon as g(pi) <= target_factor * r (default 2r, the paper's 2d with d the
   dimension of the span): stopping early keeps the support near the 2r points of the start.
4. **Support reduction.** Weights below ``prune_below`` (relative to the largest) are removed
   greedily, smallest first, as long as the design still meets the target; then g is recomputed
   from scratch (no incremental error) and both bounds are checked. A design that misses either
   bound raises ``RuntimeError`` (never returned silently).

The complexity is O(k r^2) for the start plus O(k r) per iteration; the paper's remark quotes
O(k d^2) for the near-optimal design.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting import AccountingError

__all__ = ["Design", "g_optimal_design", "support_bound"]

_REFRESH = 25


def support_bound(d: int) -> float:
    """The paper's support bound S = 4 d log log d + 16 (natural logarithms; d >= 3 gives log log d > 0).

    For d <= 2, log log d is not positive (or not defined); the bound is then taken as 16, the
    value of the formula's constant, which exceeds the d(d+1)/2 <= 3 points any design needs.
    """
    if d <= 2:
        return 16.0
    return 4.0 * d * math.log(math.log(d)) + 16.0


@dataclass(frozen=True)
class Design:
    """A near-G-optimal design: support indices (into the given action array) and weights.

    ``g`` is max_x ||x||^2_{V(pi)^{-1}} over the whole action set (recomputed from scratch), ``rank``
    the dimension r of the span, ``iterations`` the Frank-Wolfe steps taken.
    """

    support: np.ndarray
    weights: np.ndarray
    g: float
    rank: int
    dimension: int
    iterations: int

    @property
    def size(self) -> int:
        return int(self.support.size)

    def meets_bounds(self, target_factor: float = 2.0) -> bool:
        return self.g <= target_factor * self.dimension and self.size <= support_bound(self.dimension)

    def as_dict(self) -> dict:
        return {"support_size": self.size, "g": self.g, "rank": self.rank, "iterations": self.iterations}


def _span_basis(actions: np.ndarray) -> np.ndarray:
    """Orthonormal basis (columns) of the span of the rows of ``actions``."""
    _, s, vt = np.linalg.svd(actions, full_matrices=False)
    if s.size == 0 or s[0] == 0:
        raise AccountingError("actions", "all-zero action set", "at least one non-zero action")
    tol = s[0] * max(actions.shape) * np.finfo(np.float64).eps * 16
    rank = int(np.sum(s > tol))
    return vt[:rank].T


def _core_set(y: np.ndarray) -> list[int]:
    """Kumar-Yildirim start: <= 2r indices whose differences span R^r."""
    k, r = y.shape
    chosen: list[int] = []
    basis = np.zeros((r, 0))
    _, _, vt = np.linalg.svd(y, full_matrices=False)
    direction = vt[0]
    for _ in range(r):
        scores = y @ direction
        hi, lo = int(np.argmax(scores)), int(np.argmin(scores))
        for index in (hi, lo):
            if index not in chosen:
                chosen.append(index)
        diff = y[hi] - y[lo]
        if not np.any(diff):  # all points equal along this direction: use a point itself
            diff = y[hi]
        diff = diff - basis @ (basis.T @ diff)
        norm = np.linalg.norm(diff)
        if norm <= 1e-12:
            break
        basis = np.column_stack([basis, diff / norm])
        if basis.shape[1] >= r:
            break
        residual = y - (y @ basis) @ basis.T
        norms = np.einsum("ij,ij->i", residual, residual)
        best = int(np.argmax(norms))
        if norms[best] <= 1e-24:
            break
        direction = residual[best] / math.sqrt(norms[best])
    return chosen


def _leverages(y: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = (y * weights[:, None]).T @ y
    vinv = np.linalg.inv(v)
    vinv = (vinv + vinv.T) / 2
    w = np.einsum("ij,jk,ik->i", y, vinv, y)
    return vinv, w


def g_optimal_design(
    actions: np.ndarray,
    *,
    target_factor: float = 2.0,
    max_iterations: int = 10_000,
    prune_below: float = 1e-3,
) -> Design:
    """A design pi on the rows of ``actions`` with g(pi) <= target_factor * r and |supp| <= 4 d log log d + 16.

    ``actions`` is a (k, d) array; r = rank(actions) <= d. ``target_factor`` must be >= 1 (the
    Kiefer-Wolfowitz optimum is g = r); the paper uses 2.
    """
    x = np.asarray(actions, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise AccountingError("actions", f"array of shape {x.shape}", "a non-empty 2-D array (k actions, d dims)")
    if not np.all(np.isfinite(x)):
        raise AccountingError("actions", "non-finite entries", "finite action vectors")
    if not (isinstance(target_factor, (int, float)) and math.isfinite(target_factor) and target_factor >= 1):
        raise AccountingError("target_factor", target_factor, "a real number >= 1 (Kiefer-Wolfowitz: g >= r)")
    if not (isinstance(max_iterations, int) and max_iterations >= 1):
        raise AccountingError("max_iterations", max_iterations, "an integer >= 1")
    k, d = x.shape
    basis = _span_basis(x)
    y = x @ basis
    r = y.shape[1]
    target = target_factor * r

    weights = np.zeros(k)
    start = _core_set(y)
    weights[start] = 1.0 / len(start)
    vinv, w = _leverages(y, weights)
    iterations = 0
    while iterations < max_iterations:
        j = int(np.argmax(w))
        if w[j] <= target:
            break
        support = np.flatnonzero(weights)
        i = int(support[np.argmin(w[support])])
        toward_gain = w[j] - r
        away_gain = r - w[i]
        if away_gain > toward_gain and support.size > 1 and w[i] > 0:
            point = i
            lam = (w[i] / r - 1.0) / (w[i] - 1.0) if w[i] != 1.0 else -weights[i] / (1.0 - weights[i])
            lam = max(lam, -weights[i] / (1.0 - weights[i]))
        else:
            point = j
            lam = (w[j] / r - 1.0) / (w[j] - 1.0)
        u = y @ (vinv @ y[point])  # x^T V^{-1} y_point for every x
        c = lam / (1.0 - lam)
        denom = 1.0 + c * w[point]
        weights *= 1.0 - lam
        weights[point] += lam
        if weights[point] <= 1e-15 * weights.max():
            weights[point] = 0.0
        iterations += 1
        if iterations % _REFRESH == 0 or denom <= 1e-8:
            vinv, w = _leverages(y, weights)
            continue
        vp = vinv @ y[point]
        vinv = (vinv - (c / denom) * np.outer(vp, vp)) / (1.0 - lam)
        w = (w - (c / denom) * u * u) / (1.0 - lam)
    vinv, w = _leverages(y, weights)
    if w.max() > target:
        raise RuntimeError(f"design did not reach g <= {target} within {max_iterations} iterations (g = {w.max():.6g})")

    # Support reduction: drop the smallest weights while the design stays within the target.
    order = np.argsort(weights)
    top = weights.max()
    for index in order:
        if weights[index] == 0:
            continue
        if weights[index] >= prune_below * top or np.count_nonzero(weights) <= r:
            break
        trial = weights.copy()
        trial[index] = 0.0
        trial /= trial.sum()
        try:
            _, w_trial = _leverages(y, trial)
        except np.linalg.LinAlgError:
            continue
        if w_trial.max() <= target:
            weights = trial
    weights /= weights.sum()
    _, w = _leverages(y, weights)
    support = np.flatnonzero(weights)
    design = Design(support, weights[support], float(w.max()), r, d, iterations)
    if design.g > target or design.size > support_bound(d):
        raise RuntimeError(f"design misses its bounds: g = {design.g:.6g} (target {target}), support {design.size} (bound {support_bound(d):.4g})")
    return design
