"""Conversions between privacy notions, optimised over real Renyi orders.

Implements
- RDP -> (eps, delta): Mironov 2017 Prop. 3, eps = eps(alpha) + log(1/delta)/(alpha - 1), and the
  improved form of Canonne, Kamath & Steinke 2020 (Prop. 12) / Balle et al. 2020 (Thm 21), the
  ICLR paper's Lemma 10: eps = eps(alpha) + log(1/(alpha delta))/(alpha - 1) + log(1 - 1/alpha);
  the dual delta(eps) = exp((alpha-1)(eps(alpha) - eps)) (1 - 1/alpha)^(alpha-1) / alpha;
- zCDP -> (eps, delta): the same infimum for the curve rho*alpha (exact optimisation over real
  alpha), beside the closed form rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke 2016 Prop. 1.3);
- pure -> RDP / zCDP: in :mod:`accounting._core._guarantees` (tight binary-randomized-response curve,
  rho = eps tanh(eps/2)).

Why optimise over real alpha: a fixed integer grid costs up to 3% when the optimum lies between
or past its points. Certification does not depend on the optimiser: every candidate order is
evaluated with a certified curve value and a certified conversion (Arb, rounded up), and the
reported epsilon is the smallest certified candidate, so a poor search can only make the answer
looser, never wrong. When every leaf of the curve has a float approximation, the search runs in float64 (a dense
log-spaced scan of alpha - 1, then two zoom passes) and only the order it finds, and two close
neighbours, are evaluated with certified arithmetic; otherwise the whole search is certified (a
coarser scan and golden-section refinement). Either way the reported value is certified.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable, Literal

import numpy as np
from flint import arb

from ._certified import check_precision, exact, upper_float, working_precision
from ._guarantees import RDP, ZCDP, _LeafNode
from ._result import Result
from ._validation import AccountingError, Probability, check_positive, check_positive_int, check_probability

__all__ = [
    "Conversion",
    "rdp_to_epsilon",
    "rdp_to_delta",
    "rdp_conversion_exceeds",
    "mechanism_rdp_epsilon",
    "zcdp_to_epsilon",
    "zcdp_epsilon_closed_form",
]

Conversion = Literal["cks", "mironov"]

_CONVERSIONS = ("cks", "mironov")


def _epsilon_at(curve: RDP, alpha: arb, log_inv_delta: arb, conversion: str) -> arb:
    value = curve.ball(alpha).upper()
    if conversion == "mironov":
        return value + log_inv_delta / (alpha - 1)
    # Canonne-Kamath-Steinke / Balle et al. / Lemma 10
    return value + (log_inv_delta - alpha.log()) / (alpha - 1) + (1 - 1 / alpha).log()


def _delta_at(curve: RDP, alpha: arb, epsilon: arb) -> arb:
    value = curve.ball(alpha).upper()
    return ((alpha - 1) * (value - epsilon)).exp() * ((1 - 1 / alpha).log() * (alpha - 1)).exp() / alpha


def _minimise_over_alpha(
    objective: Callable[[float], float],
    alpha_min: float,
    alpha_max: float,
    scan_points: int,
    refine_steps: int,
) -> tuple[float, float]:
    """Minimise a (certified) objective over alpha in [alpha_min, alpha_max]; returns (value, alpha).

    Scans log(alpha - 1) on a grid, then golden-section search between the best point's
    neighbours. Every evaluated value is a valid bound, so the minimum found is valid.
    """
    lo = math.log(alpha_min - 1)
    hi = math.log(alpha_max - 1)
    grid = [lo + (hi - lo) * i / (scan_points - 1) for i in range(scan_points)]
    values = []
    best_value, best_alpha = math.inf, float("nan")

    def evaluate(t: float) -> float:
        nonlocal best_value, best_alpha
        alpha = 1 + math.exp(t)
        value = objective(alpha)
        if value < best_value:
            best_value, best_alpha = value, alpha
        return value

    for t in grid:
        values.append(evaluate(t))
    i = min(range(len(values)), key=values.__getitem__)
    a = grid[max(i - 1, 0)]
    b = grid[min(i + 1, len(grid) - 1)]
    ratio = (math.sqrt(5) - 1) / 2
    c = b - ratio * (b - a)
    d = a + ratio * (b - a)
    fc, fd = evaluate(c), evaluate(d)
    for _ in range(refine_steps):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = evaluate(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = evaluate(d)
    return best_value, best_alpha


#: prune a scan with the curve's lower approximation when that costs at most this share of a full one
_LOWER_SHARE_TO_PRUNE = 1 / 4


def _scan_scores(curve: RDP, objective: Callable[[np.ndarray, np.ndarray], np.ndarray], alphas: np.ndarray) -> np.ndarray | None:
    """``objective(alphas, curve.approx(alphas))`` wherever that could be the minimum, +inf
    where it provably is not (or None if the curve has no approximation).

    When the curve has a much cheaper lower approximation (``RDP.approx_lower``: in float64,
    <= ``approx`` wherever that is not NaN, e.g. the maximum over a parallel composition's cheap
    batches), the full approximation is evaluated at the lower bound's best order, giving a
    score s0, and then only where the lower bound's score is <= s0 (or NaN): elsewhere the full
    score is > s0 >= the minimum (the objective is monotone in the curve value, under rounding
    too) or NaN, so it is neither the minimum nor, under ``nanargmin``'s first-index rule, a tie
    for it. Every approximation here is elementwise in the orders, so ``nanargmin`` of the
    result is the index a full scan returns: the search finds the same order, only sooner.
    """
    full_cost, lower_cost = curve.approx_costs()
    # a handful of orders costs less than the two passes pruning needs
    if lower_cost > full_cost * _LOWER_SHARE_TO_PRUNE or alphas.size < 8:
        values = curve.approx(alphas)
        return None if values is None else objective(alphas, values)
    lower = curve.approx_lower(alphas)
    if lower is None:
        values = curve.approx(alphas)
        return None if values is None else objective(alphas, values)
    lower_scores = objective(alphas, lower)
    seed = 0 if np.all(np.isnan(lower_scores)) else int(np.nanargmin(lower_scores))
    seed_values = curve.approx(alphas[seed : seed + 1])
    if seed_values is None:
        return None
    s0 = float(objective(alphas[seed : seed + 1], seed_values)[0])
    if not math.isfinite(s0):
        return objective(alphas, curve.approx(alphas))
    contenders = np.flatnonzero(~(lower_scores > s0))  # NaN lower scores stay in contention
    scores = np.full(alphas.shape, np.inf)
    scores[contenders] = objective(alphas[contenders], curve.approx(alphas[contenders]))
    return scores


def _float_search(
    curve: RDP,
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    alpha_min: float,
    alpha_max: float,
) -> float | None:
    """Locate the minimising order with the curve's float approximation, or None if it has none.

    A dense log-spaced scan of alpha - 1 and two zoom passes, all in float64 and vectorised over
    the curve's leaves (three calls of ``approx`` in all, each restricted by ``_scan_scores`` to
    the orders in contention); the caller certifies the order found. ``objective(alphas, values)``
    must be elementwise and non-decreasing in ``values`` under float rounding (both conversions'
    are: the curve value enters by one addition, or by a product with alpha - 1 > 0).
    """
    grid = 1 + np.exp(np.linspace(math.log(alpha_min - 1), math.log(alpha_max - 1), 2049))
    scores = _scan_scores(curve, objective, grid)
    if scores is None:
        return None
    if not np.any(np.isfinite(scores)):
        return None
    t = np.log(grid - 1)
    i = int(np.nanargmin(scores))
    # Two zoom passes of 65 points around the best point, vectorised over the curve's leaves.
    for _ in range(2):
        lo, hi = t[max(i - 2, 0)], t[min(i + 2, len(t) - 1)]
        t = np.linspace(lo, hi, 65)
        alphas = 1 + np.exp(t)
        scores = _scan_scores(curve, objective, alphas)
        i = int(np.nanargmin(scores))
    return float(1 + math.exp(t[i]))


def _certified_minimum(objective: Callable[[float], float], alpha: float, alpha_min: float, alpha_max: float) -> tuple[float, float]:
    """Certify the objective at ``alpha`` and two close neighbours; return the best (value, alpha)."""
    best = (math.inf, alpha)
    for candidate in (alpha, alpha * (1 - 1e-4) + 1e-4, alpha * (1 + 1e-4) - 1e-4):
        candidate = min(max(candidate, alpha_min), alpha_max)
        value = objective(candidate)
        if value < best[0]:
            best = (value, candidate)
    return best


def rdp_to_epsilon(
    curve: RDP,
    delta: float,
    *,
    conversion: Conversion = "cks",
    alpha_min: float = 1.0001,
    alpha_max: float = 1e6,
    scan_points: int = 48,
    refine_steps: int = 24,
    precision: int | None = None,
) -> Result:
    """The smallest certified eps such that the RDP curve implies (eps, delta)-DP.

    ``conversion`` is ``"cks"`` (Canonne-Kamath-Steinke / Balle et al.; the default and never
    worse) or ``"mironov"`` (Mironov 2017, for comparison with older tools). A query's delta
    (validated once, a :class:`~accounting._core._validation.Probability`) is not checked again.
    """
    if not isinstance(curve, RDP):
        raise AccountingError("curve", curve, "an RDP curve")
    check_probability("delta", delta)
    check_precision(precision)
    if conversion not in _CONVERSIONS:
        raise AccountingError("conversion", conversion, "one of 'cks', 'mironov'")
    if not (1 < alpha_min < alpha_max) or not math.isfinite(alpha_max):
        raise AccountingError("alpha_max", alpha_max, f"a finite order > alpha_min={alpha_min} > 1")
    with working_precision(precision):
        log_inv_delta = -exact(delta).log()

        def objective(alpha: float) -> float:
            return upper_float(_epsilon_at(curve, exact(alpha), log_inv_delta, conversion))

        log_inv = -math.log(delta)

        def float_objective(alphas: np.ndarray, values: np.ndarray) -> np.ndarray:
            with np.errstate(all="ignore"):
                if conversion == "mironov":
                    return values + log_inv / (alphas - 1)
                return values + (log_inv - np.log(alphas)) / (alphas - 1) + np.log1p(-1 / alphas)

        guess = _float_search(curve, float_objective, alpha_min, alpha_max)
        if guess is not None:
            value, alpha = _certified_minimum(objective, guess, alpha_min, alpha_max)
        else:
            value, alpha = _minimise_over_alpha(objective, alpha_min, alpha_max, scan_points, refine_steps)
    return Result(
        epsilon=max(value, 0.0),
        delta=delta,
        route=f"rdp-{conversion}",
        alpha=alpha,
        detail=f"{curve.describe()}; optimal alpha = {alpha:.6g}",
    )


def rdp_conversion_exceeds(
    divergence: RDP,
    delta: float,
    target: float,
    *,
    compose: int = 1,
    alpha_min: float = 1.0001,
    alpha_max: float = 1e6,
    max_evaluations: int = 2000,
) -> bool:
    """True only if it is *proven* that converting any RDP curve that dominates ``compose`` x
    ``divergence`` to (eps, delta) over orders in [alpha_min, alpha_max] gives eps > ``target``.

    ``divergence`` must be a leaf curve whose balls enclose a true Rényi divergence D_alpha(P||Q)
    of one pair of distributions (a mechanism's exact curve, ``rdp_is_exact``), e.g. the
    per-batch curve of one batch size inside a maximum over batch sizes: every certified value
    of the maximum's composition at an order alpha, eps(alpha) + the CKS term (Mironov's term is
    larger, module docstring), is >= compose * D_alpha + CKS(alpha). D_alpha is non-decreasing in
    alpha (van Erven & Harremoës 2014, Thm 3), so on a cell [a, b] of orders the bound is at least
    compose * (lower end of the ball at a) + the lower end of the CKS term evaluated on the
    interval ball [a, b] (interval arithmetic encloses its range). The range of log(alpha - 1)
    is cut into cells; a cell whose bound is not above ``target`` is halved, up to
    ``max_evaluations`` divergence evaluations; if some cell still is not settled, or the value at
    an order is itself certainly <= ``target`` (then no proof exists), the answer is False
    (nothing proven), never a guess. A calibration uses it to skip parameters that cannot
    meet its target without running the full conversion there (:func:`accounting.calibrate`).
    """
    if not isinstance(divergence, RDP) or not isinstance(divergence._node, _LeafNode):
        raise AccountingError("divergence", divergence, "a leaf RDP curve enclosing a Rényi divergence (a mechanism's exact curve)")
    check_probability("delta", delta)
    check_positive("target", target)
    compose = check_positive_int("compose", compose)
    with working_precision(None):
        log_inv_delta = -exact(delta).log()
        goal = exact(target)
        lower_at: dict[float, arb] = {}
        evaluations = 0

        def divergence_lower(alpha: float) -> arb | None:
            """The lower end of compose * D_alpha, or None when nothing can be proved: the enclosure
            failed, or the bound at alpha itself is certainly <= target (then the true conversion
            at alpha is too, and no finer cell can exceed it: stop at once)."""
            nonlocal evaluations
            value = lower_at.get(alpha)
            if value is None:
                evaluations += 1
                try:
                    ball = divergence.ball(exact(alpha)) * compose
                except (ValueError, ArithmeticError, OverflowError):  # an enclosure that failed proves nothing
                    return None
                a = exact(alpha)
                if ball + (log_inv_delta - a.log()) / (a - 1) + (1 - 1 / a).log() <= goal:
                    return None
                value = ball.lower()
                lower_at[alpha] = value
            return value

        def cell_exceeds(lower: arb, a: float, b: float) -> bool:
            alphas = exact(a).union(exact(b))
            cks = (log_inv_delta - alphas.log()) / (alphas - 1) + (1 - 1 / alphas).log()
            return bool(lower + cks.lower() > goal)

        # the cells cover the range with a margin: a search may land an ulp or so outside it
        # (1 + exp(log(alpha - 1)) need not round back to alpha)
        t_lo, t_hi = math.log((alpha_min - 1) * (1 - 1e-9)), math.log((alpha_max - 1) * (1 + 1e-9))
        edges = [1 + math.exp(t_lo + (t_hi - t_lo) * i / 64) for i in range(65)]
        cells = [(edges[i], edges[i + 1]) for i in range(64)]
        while cells:
            a, b = cells.pop()
            lower = divergence_lower(a)
            if lower is None:
                return False
            if cell_exceeds(lower, a, b):
                continue
            mid = 1 + math.sqrt((a - 1) * (b - 1))
            if evaluations >= max_evaluations or not a < mid < b:
                return False
            cells += [(a, mid), (mid, b)]
    return True


def _mechanism_key(subject) -> tuple | None:
    """A hashable key that determines a mechanism's exact curve, or None (then nothing is cached).

    Accounting mechanisms are frozen dataclasses whose curve is a function of their fields; the
    key holds the class and every field with its type, so equal keys mean the same curve."""
    if not dataclasses.is_dataclass(subject) or isinstance(subject, type):
        return None
    if not subject.__dataclass_params__.frozen:
        return None
    fields = tuple((f.name, type(getattr(subject, f.name)), getattr(subject, f.name)) for f in dataclasses.fields(subject))
    key = (type(subject), fields)
    try:
        hash(key)
    except TypeError:
        return None
    return key


@functools.lru_cache(maxsize=4096)
def _mechanism_epsilon_cached(key: tuple, subject, delta: float, compose: int, conversion: str) -> Result:
    return rdp_to_epsilon(_curve(subject).times(compose), delta, conversion=conversion)  # type: ignore[arg-type]


def _curve(subject):
    curve = subject.rdp()
    if curve is None:
        raise AccountingError("subject", subject, "a mechanism with an RDP curve (its rdp() returned None)")
    return curve


def mechanism_rdp_epsilon(subject, delta: float, *, compose: int = 1, conversion: Conversion = "cks") -> Result:
    """:func:`rdp_to_epsilon` of a mechanism's exact curve composed ``compose`` times (default
    search and precision), memoised per (mechanism, delta, compose, conversion).

    The routes (:func:`accounting.epsilon_routes`), a run's budget and the ledger's budget
    check all ask for these same conversions; the memo makes them one computation. It is
    transparent: the conversion is a deterministic function of the key (the mechanism's class
    and fields, delta, compose, conversion), so a hit returns what a fresh call would.
    """
    check_probability("delta", delta)
    if conversion not in _CONVERSIONS:
        raise AccountingError("conversion", conversion, "one of 'cks', 'mironov'")
    key = _mechanism_key(subject)
    if key is None:
        return rdp_to_epsilon(_curve(subject).times(compose), delta, conversion=conversion)
    return _mechanism_epsilon_cached(key, subject, delta if type(delta) is Probability else float(delta), int(compose), conversion)


def rdp_to_delta(
    curve: RDP,
    epsilon: float,
    *,
    alpha_min: float = 1.0001,
    alpha_max: float = 1e6,
    scan_points: int = 48,
    refine_steps: int = 24,
    precision: int | None = None,
) -> Result:
    """The smallest certified delta such that the RDP curve implies (eps, delta)-DP (CKS form)."""
    if not isinstance(curve, RDP):
        raise AccountingError("curve", curve, "an RDP curve")
    check_positive("epsilon", epsilon)
    check_precision(precision)
    with working_precision(precision):
        eps_ball = exact(epsilon)

        def objective(alpha: float) -> float:
            return upper_float(_delta_at(curve, exact(alpha), eps_ball))

        def float_objective(alphas: np.ndarray, values: np.ndarray) -> np.ndarray:
            with np.errstate(all="ignore"):
                return (alphas - 1) * (values - epsilon) + (alphas - 1) * np.log1p(-1 / alphas) - np.log(alphas)

        guess = _float_search(curve, float_objective, alpha_min, alpha_max)
        if guess is not None:
            value, alpha = _certified_minimum(objective, guess, alpha_min, alpha_max)
        else:
            value, alpha = _minimise_over_alpha(objective, alpha_min, alpha_max, scan_points, refine_steps)
    return Result(epsilon=epsilon, delta=min(value, 1.0), route="rdp-cks", alpha=alpha, detail=curve.describe())


def zcdp_to_epsilon(rho: float | ZCDP, delta: float, *, precision: int | None = None) -> Result:
    """The (eps, delta) guarantee of rho-zCDP: the exact infimum over real alpha of the CKS bound."""
    if isinstance(rho, ZCDP):
        rho = rho.rho  # (validated when the ZCDP was built)
    else:
        check_positive("rho", rho)
    check_probability("delta", delta)
    check_precision(precision)
    result = rdp_to_epsilon(RDP.zcdp(rho), delta, alpha_max=1e9, precision=precision)
    return Result(
        epsilon=result.epsilon,
        delta=delta,
        route="zcdp-cks",
        alpha=result.alpha,
        detail=f"{float(rho):.6g}-zCDP; optimal alpha = {result.alpha:.6g}",
    )


def zcdp_epsilon_closed_form(rho: float | ZCDP, delta: float) -> float:
    """Bun & Steinke's closed form rho + 2 sqrt(rho log(1/delta)) (looser; for comparison)."""
    if isinstance(rho, ZCDP):
        rho = rho.rho
    check_positive("rho", rho)
    check_probability("delta", delta)
    with working_precision(None):
        r = exact(rho)
        return upper_float(r + 2 * (r * (-exact(delta).log())).sqrt())
