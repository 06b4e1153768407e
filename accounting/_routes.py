"""Answering "what (eps, delta) does this give?" by every route that applies, keeping the smallest.

For a mechanism released ``compose`` times to the same user (k-fold composition, or a user who
returns to ``compose`` batches of the same protocol), the certified routes are
- ``pure``: k * eps when the mechanism is pure DP;
- ``rdp-cks``: the exact RDP curve, composed, converted by Canonne-Kamath-Steinke over real alpha;
- ``pld``: the privacy-loss distribution, composed by convolution (discrete mechanisms only);
and the comparison routes are the closed forms the papers and the literature print (Agarwal
et al.'s Skellam bound, the ICLR paper's Theorem 2, Mironov's conversion, ...). Every route's
value is an upper bound; the answer is the smallest certified one, and the report lists all of
them so a reader sees how much each closed form gives away.
"""

from __future__ import annotations

import math
from typing import Any

from ._conversions import EpsilonResult, mechanism_rdp_epsilon, rdp_to_epsilon, zcdp_to_epsilon
from ._guarantees import RDP, ZCDP, ApproxDP, PureDP
from ._validation import AccountingError, check_positive_int, check_probability

__all__ = ["epsilon_routes"]


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
    certified: list[EpsilonResult] = []
    comparison: list[EpsilonResult] = []

    if isinstance(subject, PureDP):
        certified.append(EpsilonResult(subject.times(k).epsilon, delta, "pure", None, "basic composition"))
        r = rdp_to_epsilon(subject.to_rdp().times(k), delta)
        certified.append(EpsilonResult(r.epsilon, delta, "rdp-cks", r.alpha, "tight pure -> RDP curve"))
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
            certified.append(EpsilonResult(exact_rdp.epsilon, delta, "rdp-cks", exact_rdp.alpha, "exact RDP curve, CKS conversion"))
            if comparisons:
                mironov = mechanism_rdp_epsilon(subject, delta, compose=k, conversion="mironov")
                comparison.append(EpsilonResult(mironov.epsilon, delta, "rdp-mironov", mironov.alpha, "exact RDP curve, Mironov conversion"))
        if include_pld:
            pld = _pld_route(subject, k, delta)
            if pld is not None:
                certified.append(pld)
        for label, bound in subject.closed_forms().items() if comparisons else ():
            result = _closed_form_result(label, bound, k, delta)
            if result is not None:
                comparison.append(result)
    else:
        raise AccountingError("subject", subject, "a mechanism or a PureDP/ZCDP/RDP guarantee")

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
    pair = subject.output_pair() if hasattr(subject, "output_pair") else None
    if pair is None:
        return None
    from ._pld import DEFAULT_TAIL_MASS, pld_epsilon

    # The PLD's cost grows with its output window (~4 ms per output on a loaded core; mu = 1e5
    # Skellam: 8192 outputs, ~45 s): beyond MAX_PLD_OUTPUTS the route is skipped, and says so,
    # rather than running for minutes (mu = 1e30: 1e16 outputs). The other routes still answer.
    try:
        lo, hi = pair.window(DEFAULT_TAIL_MASS)
        outputs = hi - lo + 1
    except ArithmeticError:
        outputs = math.inf
    if outputs > MAX_PLD_OUTPUTS:
        return EpsilonResult(
            math.inf, delta, "pld", None,
            f"skipped: the output window holds {'too many to count' if outputs == math.inf else format(outputs, ',')} integers, more than MAX_PLD_OUTPUTS = {MAX_PLD_OUTPUTS} (the RDP route answers)",
        )

    # Only the certified upper bound is needed here; the optimistic twin doubles the cost.
    result = pld_epsilon(pair, k, delta, lower_bound=False)
    grid = result.discretisation if isinstance(result.discretisation, str) else f"grid h = {result.discretisation:.3g}, losses rounded up"
    return EpsilonResult(
        result.epsilon,
        delta,
        "pld",
        None,
        f"privacy-loss distribution, {grid}; worse direction {result.direction}; truncated mass {result.truncated_mass:.2g}",
    )
