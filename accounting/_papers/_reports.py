"""Reports that put the papers' closed forms beside the exact accountant.

:func:`dist_rdp_se_returning` answers the question of the ICLR paper's App. I for Dist-RDP-SE
(Theorem 2): a user who returns to B batches, each a Skellam release of variance mu = g^2/eps^2
on a sum with sensitivity g — what (eps, delta)-DP does she get? Three routes, each an upper
bound: the paper's printed RDP curve composed B times and converted (Lemma 10); the Agarwal,
Kairouz & Liu bound for that Skellam release composed and converted; the exact Skellam Renyi
curve converted by CKS; and the tightest certified value over every route (the privacy-loss
distribution, connect-the-dots on a grid, wins here), labelled with its route. For
contrast, the approximate-DP route of App. I: each batch's exact (eps_b, delta/(2B)) guarantee
composed by the better of basic and advanced composition (delta' = delta/2).
"""

from __future__ import annotations

from typing import Iterable

from .._core._composition import advanced_composition
from .._core._conversions import rdp_to_epsilon
from .._core._guarantees import ApproxDP
from ._paper_params import theorem2_claimed_rdp, theorem2_parameters
from .._routing._routes import epsilon_routes
from .._core._validation import check_positive_int, check_probability

__all__ = ["ROUTE_LABELS", "dist_rdp_se_returning", "route_label"]

#: what each certified route's number claims, for tables
ROUTE_LABELS = {
    "pure": "pure DP, basic composition",
    "rdp-cks": "RDP -> CKS",
    "pld": "PLD",
    "analytic-gaussian": "analytic Gaussian (mu-GDP), rounded up",
    "optimal-composition": "optimal pure-DP composition, rounded up",
    "optimal-composition-pld": "optimal pure-DP composition by PLD",
    "kov-heterogeneous-bound": "KOV 2015 heterogeneous bound",
}


def route_label(result) -> str:
    """A short label of the claim behind a certified result, read from what the route reports
    it did (its detail), never from its name alone: the PLD's grid and discretisation, the RDP
    curve's provenance at the order the conversion used (exact sum, or a bound)."""
    label = ROUTE_LABELS.get(result.route, result.route)
    detail = result.detail
    if result.route in ("pld", "optimal-composition-pld"):
        if "exact lattice" in detail:
            return f"{label} on its exact lattice"
        if "grid h = " in detail:
            h = detail.split("grid h = ")[1].split(",")[0].split(";")[0]
            return f"{label}, h={h}, connect-the-dots" if "connect-the-dots" in detail else f"{label}, h={h}, rounded up"
    if result.route == "rdp-cks":
        curve = detail.split(", CKS")[0] if ", CKS" in detail else detail
        return f"{curve} -> CKS"
    return label


def dist_rdp_se_returning(
    epsilon: float,
    s: float,
    n: int,
    returns: Iterable[int],
    delta: float,
    *,
    include_pld: bool = True,
) -> list[dict]:
    """One row per B: the per-user (eps, delta) of Dist-RDP-SE with users returning to B batches.

    ``certified`` is the tightest certified value over every route and ``certified_route`` says
    which claim it is (:data:`ROUTE_LABELS`); ``rdp_cks`` is the exact RDP curve's CKS conversion,
    kept beside it (it is "exact" only in its curve, not the tightest (eps, delta))."""
    from .._mechanisms import Skellam

    check_probability("delta", delta)
    params = theorem2_parameters(epsilon, s, n, p=0.1)  # p does not affect privacy
    mechanism = Skellam(variance=float(params.total_variance), l1_sensitivity=params.g, l2_sensitivity=params.g)
    paper = theorem2_claimed_rdp(epsilon, s)
    rows = []
    for b in returns:
        check_positive_int("returns", b)
        exact = epsilon_routes(mechanism, delta, compose=b, include_pld=include_pld, exhaustive=True)  # the table shows the RDP column too
        per_batch = epsilon_routes(mechanism, delta / (2 * b), compose=1, include_pld=include_pld, comparisons=False)
        # The approximate-DP route: B batches of (eps_b, delta/(2B)) composed by the better of basic
        # composition (B eps_b, delta/2) and advanced composition (slack delta/2); both total <= delta.
        # (a large delta gives eps_b = 0: (0, delta/(2B)) is a guarantee like any other, and basic
        # composition keeps eps = 0 while advanced composition's slack only adds delta)
        step = ApproxDP(per_batch.epsilon, delta / (2 * b))
        basic = step.times(b)
        try:
            advanced = advanced_composition(step, b, delta / 2)
        except ValueError:
            advanced = basic
        approx_route = min((basic, "basic"), (advanced, "advanced"), key=lambda item: item[0].epsilon)
        advanced_value = approx_route[0].epsilon
        advanced_text = f"{approx_route[0].epsilon:.6g} ({approx_route[1]})"
        rows.append(
            {
                "returns": b,
                "g": params.g,
                "variance": float(params.total_variance),
                "paper_closed_form": rdp_to_epsilon(paper.times(b), delta).epsilon,
                # epsilon_routes converted every closed form already; read Agarwal's from there
                "agarwal_bound": next(r.epsilon for r in exact.alternatives if r.route.startswith("closed-form:agarwal")),
                "rdp_cks": next(r.epsilon for r in exact.alternatives if r.route == "rdp-cks"),
                "certified": exact.epsilon,
                "certified_route": route_label(exact),
                "advanced_composition": advanced_text,
                "advanced_composition_epsilon": advanced_value,
            }
        )
    return rows
