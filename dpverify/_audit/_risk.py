"""Attack risk read off an audit result: TPR at a chosen FPR, the attack advantage, a mu-GDP lower bound (issue 33).

An epsilon or delta result was witnessed by an event E with bound-sample counts (a of n draws
under D, b of m under D'). The attack "say D when the output is in E" has true-positive rate
TPR = P_D(E) and false-positive rate FPR = P_D'(E). The result's own simultaneous Clopper-Pearson
bounds -- the same ones its epsilon or delta bound is computed from, at the same share of its
level, so this costs no extra error -- give TPR >= TPR_lo and FPR <= FPR_hi together, and hence,
with the confidence the result states:

- **TPR at FPR f0**: mixing the attack with "never say D" reaches FPR <= f0 with TPR >=
  TPR_lo * min(1, f0 / FPR_hi): a lower bound on the best TPR at FPR f0 of the true trade-off;
- **advantage** TPR - FPR >= TPR_lo - FPR_hi (0 if negative);
- **mu-GDP**: a mu-GDP mechanism has TPR <= Phi(Phi^-1(FPR) + mu) for every test, so
  mu >= Phi^-1(TPR_lo) - Phi^-1(FPR_hi) (meaningful for Gaussian-like mechanisms; valid for all).

A one-run result (canary guesses) reports the accuracy its epsilon bound certifies,
e^eps / (1 + e^eps), and the advantage 2 acc - 1 over guessing; its guesses are not a test of
D against D', so it has no TPR / FPR point.

The accountant's side (:func:`claim_curve`): the certified trade-off of an (eps, delta) claim,
TPR <= min(1, e^eps FPR + delta, 1 - e^-eps (1 - FPR - delta)), is the curve the audited point
is drawn against on the HTML page; an RDP or zCDP claim gives the least of the (eps, delta)
curves its RDP values at the audited orders imply (Mironov's conversion: valid, not tight). Both
curves are computed by the accountant (:class:`accounting.TradeOffCurve`, the one implementation of
the trade-off math, rounded in the direction that never under-reports the claim's TPR).
"""

from __future__ import annotations

import math
from typing import Any

from scipy.stats import norm

from .._statistics._confidence import cp_lower, cp_upper

__all__ = ["DEFAULT_FPR", "attack_risk", "claim_curve"]

#: the FPR at which reports state the attack's TPR
DEFAULT_FPR = 0.01


def attack_risk(result: Any, fpr: float = DEFAULT_FPR) -> dict[str, Any] | None:
    """The attack-risk figures of ``result`` at the confidence it states (None if it has none)."""
    if result is None:
        return None
    level = 1.0 - float(result.confidence)
    d = getattr(result, "details", {}) or {}
    if result.estimator == "one-run":
        eps = float(result.lower_bound)
        accuracy = 1.0 / (1.0 + math.exp(-eps)) if math.isfinite(eps) else 1.0
        return {"kind": "one-run guesses", "confidence": 1.0 - level, "accuracy_lower": accuracy, "advantage_lower": 2 * accuracy - 1}
    if result.estimator not in ("epsilon", "delta") or "counts" not in d:
        return None
    a, n, b, m = (int(x) for x in d["counts"])
    if n == 0 or m == 0:
        return None
    k = max(1, int(d.get("events_tested", 1)))
    share = float(d.get("event_share", 1.0 / k))  # the result's own level is already its share of the claim's
    each = min(level * share / 2, 0.5)
    tpr = float(cp_lower(a, n, each))
    fpr_hi = float(cp_upper(b, m, each))
    at = tpr * min(1.0, fpr / fpr_hi) if fpr_hi > 0 else tpr
    mu = float(norm.ppf(tpr) - norm.ppf(fpr_hi)) if 0 < tpr and fpr_hi < 1 else (math.inf if tpr > 0 and fpr_hi == 0 else 0.0)
    return {
        "kind": "event attack", "confidence": 1.0 - level, "tpr_lower": tpr, "fpr_upper": fpr_hi,
        "fpr": fpr, "tpr_at_fpr_lower": at, "advantage_lower": max(0.0, tpr - fpr_hi), "mu_gdp_lower": max(0.0, mu),
    }


def claim_curve(claim_text: str | None, result: Any) -> dict[str, float] | None:
    """The (eps, delta) of a pure or approximate claim, the claimed RDP values of a Renyi claim, or the certified
    (eps, delta(eps)) profile a server-view one-run claim was tested against: the trade-off curve the page draws
    (None otherwise)."""
    if result is None:
        return None
    d = result.details or {}
    if result.estimator == "one-run" and "fdp_epsilons" in d:  # a server-view claim: the certified profile its f-DP test used
        return {"epsilons": [float(e) for e in d["fdp_epsilons"]], "deltas": [float(x) for x in d["fdp_deltas"]]}
    if result.estimator == "epsilon" or result.estimator == "one-run":  # a server-view one-run claim records its delta
        return {"epsilon": float(result.claimed), "delta": float((result.details or {}).get("delta", 0.0)) if result.estimator == "one-run" else 0.0}
    if result.estimator == "delta" and "epsilon" in (result.details or {}):
        return {"epsilon": float(result.details["epsilon"]), "delta": float(result.claimed)}
    d = result.details or {}
    if result.estimator == "renyi" and "orders" in d and "claimed" in d:  # the claimed RDP curve at the audited orders
        return {"orders": [float(a) for a in d["orders"]], "rdp_epsilons": [float(e) for e in d["claimed"]]}
    return None


def rdp_curve_tpr(orders: Any, rdp_epsilons: Any, fpr: Any) -> Any:
    """The largest TPR at ``fpr`` an RDP claim allows, through Mironov's conversion (Prop. 3): for each order a and
    each eps on a grid, (eps, exp((a - 1)(eps_a - eps)))-DP, and the least of their (eps, delta) curves (valid, not tight).
    The accountant's :meth:`accounting.TradeOffCurve.from_rdp` computes it (one implementation); orders <= 1 and
    non-finite values carry no information and are skipped."""
    from accounting import TradeOffCurve

    kept = [(float(a), float(e)) for a, e in zip(orders, rdp_epsilons) if float(a) > 1 and math.isfinite(float(a)) and math.isfinite(float(e))]
    curve = TradeOffCurve.from_rdp([a for a, _ in kept], [max(e, 0.0) for _, e in kept])
    return curve.tpr(fpr)


def curve_tpr(epsilon: float, delta: float, fpr: Any) -> Any:
    """The claim's largest TPR at ``fpr`` (numpy-friendly): min(1, e^eps FPR + delta, 1 - e^-eps (1 - FPR - delta)),
    rounded up, by :meth:`accounting.TradeOffCurve.from_approx_dp` (one implementation)."""
    from accounting import TradeOffCurve

    return TradeOffCurve.from_approx_dp(float(epsilon), float(delta)).tpr(fpr)

