"""Answering "what (eps, delta) does this give?" by every route that applies, keeping the smallest.

For a mechanism released ``compose`` times to the same user (k-fold composition, or a user who
returns to ``compose`` batches of the same protocol), the certified routes are
- ``pure``: k * eps when the mechanism is pure DP;
- ``rdp-cks``: the exact RDP curve, composed, converted by Canonne-Kamath-Steinke over real alpha;
- ``pld``: the privacy-loss distribution, composed by convolution (discrete mechanisms; continuous
  and subsampled ones through connect-the-dots, :mod:`accounting._pld_continuous`);
- ``analytic-gaussian`` and ``optimal-composition``: exact for compositions of Gaussians and of
  pure-DP steps (:mod:`accounting._tight_routes`); a list of releases is a heterogeneous sequence;
and the comparison routes are the closed forms the papers and the literature print (Agarwal
et al.'s Skellam bound, the ICLR paper's Theorem 2, Mironov's conversion, ...). Every route's
value is an upper bound; the answer is the smallest certified one, and the report lists all of
them so a reader sees how much each closed form gives away.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ._conversions import EpsilonResult, mechanism_rdp_epsilon, rdp_to_epsilon, zcdp_to_epsilon
from ._guarantees import RDP, ZCDP, ApproxDP, PureDP
from ._tight_routes import sequence_routes, tight_routes
from ._validation import AccountingError, check_positive_int, check_probability

__all__ = ["epsilon_routes"]

#: above this many releases the PLD route is skipped (reported as such): its self-composition by
#: squaring needs O(log k) products of grids whose length grows like sqrt(k) (10^6-fold discrete
#: Laplace(20, 10): a few seconds), while the RDP, pure and optimal-composition routes cost O(1) in k
PLD_MAX_COMPOSE = 10**6
#: ... and when releases x output-window width exceeds this (the composed grid's cost grows with both;
#: at 2e7 the Dist-RDP-SE returning-users PLD, 8,193 outputs x 1,000 returns, took 10 CPU s and
#: 1.8 GB, and 100 outputs x 20,000 returns 5.7 GB: issue 15's fuzz harness; at 1e6, 1 CPU s, 0.2 GB)
PLD_MAX_WORK = 10**6
#: ... and for continuous (gridded by loss) pairs, above this many releases (Gaussian(1), issue 15's
#: fuzz harness: k = 10^3 took 3 CPU s and 0.8 GB, 10^4 7 s and 2.2 GB, 10^5 18 s and 6.4 GB)
PLD_MAX_COMPOSE_CONTINUOUS = 4096


def _closed_form_result(label: str, bound: Any, k: int, delta: float) -> EpsilonResult | None:
    if isinstance(bound, RDP):
        r = rdp_to_epsilon(bound.times(k), delta)
        return EpsilonResult(r.epsilon, delta, f"closed-form:{label}", r.alpha, f"{label}, RDP -> CKS")
    if isinstance(bound, ZCDP):
        r = zcdp_to_epsilon(bound.times(k), delta)
        return EpsilonResult(r.epsilon, delta, f"closed-form:{label}", r.alpha, f"{label}, zCDP -> CKS")
    if isinstance(bound, PureDP):
        return EpsilonResult(bound.times(k).epsilon, delta, f"closed-form:{label}", None, f"{label}, pure")
    return None


def epsilon_routes(
    subject: Any, delta: float, *, compose: int = 1, include_pld: bool = True, comparisons: bool = True
) -> EpsilonResult:
    """The smallest certified eps at ``delta`` after ``compose``-fold composition, with every route.

    ``subject`` is a mechanism from :mod:`accounting` (anything with ``rdp()``, ``pure()``,
    ``closed_forms()`` and optionally ``output_pair()``), or a guarantee (PureDP, ZCDP, RDP).
    The returned result's ``alternatives`` hold every route, certified and comparison ones;
    ``comparisons=False`` skips the comparison routes (Mironov, the closed forms), which never
    change the answer, for callers that only read it. A mechanism's exact-curve conversion is
    memoised per (mechanism, delta, compose) (:func:`accounting._conversions.mechanism_rdp_epsilon`).
    """
    check_probability("delta", delta)
    k = check_positive_int("compose", compose)
    from ._shuffle import Shuffled, shuffle_routes

    if isinstance(subject, Shuffled):  # amplification by shuffling: its own routes (accounting._shuffle)
        return shuffle_routes(subject, delta, compose=k, include_pld=include_pld, comparisons=comparisons)
    certified: list[EpsilonResult] = []
    comparison: list[EpsilonResult] = []

    if isinstance(subject, PureDP):
        certified.append(EpsilonResult(subject.times(k).epsilon, delta, "pure", None, "basic composition"))
        r = rdp_to_epsilon(subject.to_rdp().times(k), delta)
        certified.append(EpsilonResult(r.epsilon, delta, "rdp-cks", r.alpha, "tight pure -> RDP curve"))
        certified.extend(tight_routes([(subject, k)], delta))  # optimal composition (acct-gauss)
    elif isinstance(subject, ZCDP):
        certified.append(zcdp_to_epsilon(subject.times(k), delta))
    elif isinstance(subject, RDP):
        certified.append(rdp_to_epsilon(subject.times(k), delta))
    elif isinstance(subject, ApproxDP):
        raise AccountingError("subject", subject, "a mechanism, PureDP, ZCDP or RDP (compose ApproxDP with advanced_composition)")
    elif hasattr(subject, "rdp") and hasattr(subject, "closed_forms"):
        pure = subject.pure() if hasattr(subject, "pure") else None
        if pure is not None:
            certified.append(EpsilonResult(pure.times(k).epsilon, delta, "pure", None, "basic composition"))
        exact_rdp = mechanism_rdp_epsilon(subject, delta, compose=k)
        if math.isfinite(exact_rdp.epsilon):
            curve = "exact RDP curve" if getattr(subject, "rdp_is_exact", True) else "RDP upper bound"
            certified.append(EpsilonResult(exact_rdp.epsilon, delta, "rdp-cks", exact_rdp.alpha, f"{curve}, CKS conversion"))
            if comparisons:
                mironov = mechanism_rdp_epsilon(subject, delta, compose=k, conversion="mironov")
                comparison.append(EpsilonResult(mironov.epsilon, delta, "rdp-mironov", mironov.alpha, f"{curve}, Mironov conversion"))
        certified.extend(tight_routes([(subject, k)], delta))  # analytic Gaussian, optimal composition (acct-gauss)
        if include_pld:
            pld = _pld_route(subject, k, delta)
            if pld is not None:
                certified.append(pld)
        for label, bound in subject.closed_forms().items() if comparisons else ():
            result = _closed_form_result(label, bound, k, delta)
            if result is not None:
                comparison.append(result)
    elif isinstance(subject, (list, tuple)):  # a heterogeneous sequence of releases (acct-gauss)
        certified, comparison = sequence_routes(subject, k, delta)
    else:
        raise AccountingError("subject", subject, "a mechanism or a PureDP/ZCDP/RDP guarantee, or a sequence of them")

    if not certified:
        raise AccountingError("subject", subject, "a subject with at least one certified route")
    best = min(certified, key=lambda r: r.epsilon)
    return EpsilonResult(
        best.epsilon,
        delta,
        best.route,
        best.alpha,
        best.detail,
        alternatives=tuple(certified + comparison),
    )


#: The privacy-loss-distribution route is tried only on output windows of at most this many integers.
MAX_PLD_OUTPUTS = 1 << 14


def _pld_route(subject: Any, k: int, delta: float) -> EpsilonResult | None:
    """The privacy-loss-distribution route, for mechanisms with an integer output pair."""
    builder = getattr(subject, "privacy_loss_distribution", None)  # compositions (accounting._dp_event)
    if callable(builder):
        composed = builder()
        if composed is None:
            return None
        r = composed.self_compose(k).epsilon(delta)
        return EpsilonResult(r.epsilon, delta, "pld", None, f"privacy-loss distribution of the composition, grid h = {r.discretisation}; worse direction {r.direction}")
    pair = subject.output_pair() if hasattr(subject, "output_pair") else None
    if pair is None:  # continuous and subsampled mechanisms: connect-the-dots (accounting._pld_continuous)
        from ._pld_continuous import continuous_loss_pair

        pair = continuous_loss_pair(subject)
    if pair is None:
        return None
    from ._pld import DEFAULT_TAIL_MASS, pld_epsilon

    # The PLD's cost grows with its output window (~4 ms per output on a loaded core; mu = 1e5
    # Skellam: 8192 outputs, ~45 s): beyond MAX_PLD_OUTPUTS the route is skipped, and says so,
    # rather than running for minutes (mu = 1e30: 1e16 outputs). The other routes still answer.
    window = getattr(pair, "window", None)  # integer pairs; continuous ones are gridded by loss, not output
    try:
        lo, hi = window(DEFAULT_TAIL_MASS) if window is not None else (0, 0)
        outputs = hi - lo + 1
    except ArithmeticError:
        outputs = math.inf
    if outputs > MAX_PLD_OUTPUTS:
        return EpsilonResult(
            math.inf, delta, "pld", None,
            f"skipped: the output window holds {'too many to count' if outputs == math.inf else format(outputs, ',')} integers, more than MAX_PLD_OUTPUTS = {MAX_PLD_OUTPUTS} (the RDP route answers)",
        )

    if k > PLD_MAX_COMPOSE:  # acct-gauss: the composed grid grows like sqrt(k); say so instead of hanging
        return EpsilonResult(
            math.inf, delta, "pld", None, f"skipped: compose={k} > {PLD_MAX_COMPOSE} (the composed PLD grid grows like sqrt(k); the other routes cost O(1) in k)"
        )
    if window is None and k > PLD_MAX_COMPOSE_CONTINUOUS:  # the loss grid grows with k: memory, not time, runs out first
        return EpsilonResult(
            math.inf, delta, "pld", None,
            f"skipped: compose={k} > {PLD_MAX_COMPOSE_CONTINUOUS} for a gridded continuous pair (the composed grid's memory grows with k; the other routes cost O(1) in k)",
        )
    if k * outputs > PLD_MAX_WORK:  # a wide window composed many times: minutes of FFTs (Skellam mu = 1e5, k = 1e5)
        return EpsilonResult(
            math.inf, delta, "pld", None, f"skipped: compose={k} x {outputs:,} outputs > {PLD_MAX_WORK:,} (the other routes cost O(1) in k)"
        )
    # Only the certified upper bound is needed here; the optimistic twin doubles the cost.
    try:
        hash(pair)
    except TypeError:  # an unhashable pair: built afresh
        result = pld_epsilon(pair, k, delta, lower_bound=False)
    else:
        result = _composed_pld(pair, k).epsilon(delta)  # acct-gauss: one PLD per (pair, k), any delta
    grid = result.discretisation if isinstance(result.discretisation, str) else f"grid h = {result.discretisation:.3g}, losses rounded up"
    return EpsilonResult(
        result.epsilon,
        delta,
        "pld",
        None,
        f"privacy-loss distribution, {grid}; worse direction {result.direction}; truncated mass {result.truncated_mass:.2g}",
    )


@functools.lru_cache(maxsize=8)
def _composed_pld(pair: Any, k: int) -> Any:
    """The k-fold PLD :func:`accounting.pld_epsilon` would build (upper bound only), memoised so
    that a report asking several deltas of one (pair, k) builds and composes it once. The pairs
    are frozen values: equal keys are equal PLDs."""
    from ._pld import _default_h

    return _one_fold_pld(pair, _default_h(k), k).self_compose(k)


_ONE_FOLD: dict = {}


def _one_fold_pld(pair: Any, h: float, k: int) -> Any:
    """pld_epsilon's one-release PLD, which depends on k only through its grid h(k): shared by every
    k with the same h (a report's B = 1, 10, 100 build it once). Bounded: the last 8 kept."""
    from ._pld import _build_for

    key = (pair, h)
    if key not in _ONE_FOLD:
        if len(_ONE_FOLD) >= 8:
            _ONE_FOLD.pop(next(iter(_ONE_FOLD)))
        _ONE_FOLD[key] = _build_for(pair, k, None, None, {"lower_bound": False})
    return _ONE_FOLD[key]
