"""Reports that put the papers' closed forms beside the exact accountant.

:func:`dist_rdp_se_returning` answers the question of the ICLR paper's App. I for Dist-RDP-SE
(Theorem 2): a user who returns to B batches, each a Skellam release of variance mu = g^2/eps^2
on a sum with sensitivity g — what (eps, delta)-DP does she get? Three routes, each an upper
bound: the paper's printed RDP curve composed B times and converted (Lemma 10); the Agarwal,
Kairouz & Liu bound for that Skellam release composed and converted; and the exact accountant
(exact Skellam Renyi divergence, and the privacy-loss distribution when requested). For
contrast, the approximate-DP route of App. I: each batch's exact (eps_b, delta/(2B)) guarantee
composed by the better of basic and advanced composition (delta' = delta/2).
"""

from __future__ import annotations

from typing import Iterable

from ._composition import advanced_composition
from ._conversions import rdp_to_epsilon
from ._guarantees import ApproxDP
from ._paper_params import theorem2_claimed_rdp, theorem2_parameters
from ._routes import epsilon_routes
from ._validation import check_positive_int, check_probability

__all__ = ["dist_rdp_se_returning"]


def dist_rdp_se_returning(
    epsilon: float,
    s: float,
    n: int,
    returns: Iterable[int],
    delta: float,
    *,
    include_pld: bool = False,
) -> list[dict]:
    """One row per B: the per-user (eps, delta) of Dist-RDP-SE with users returning to B batches."""
    from ._mechanisms import Skellam

    check_probability("delta", delta)
    params = theorem2_parameters(epsilon, s, n, p=0.1)  # p does not affect privacy
    mechanism = Skellam(variance=float(params.noise), l1_sensitivity=params.g, l2_sensitivity=params.g)
    paper = theorem2_claimed_rdp(epsilon, s)
    rows = []
    for b in returns:
        check_positive_int("returns", b)
        exact = epsilon_routes(mechanism, delta, compose=b, include_pld=include_pld)
        per_batch = epsilon_routes(mechanism, delta / (2 * b), compose=1, include_pld=include_pld)
        # The approximate-DP route: B batches of (eps_b, delta/(2B)) composed by the better of basic
        # composition (B eps_b, delta/2) and advanced composition (slack delta/2); both total <= delta.
        basic = ApproxDP(per_batch.epsilon, delta / (2 * b)).times(b)
        try:
            advanced = advanced_composition(ApproxDP(per_batch.epsilon, delta / (2 * b)), b, delta / 2)
        except ValueError:
            advanced = basic
        approx_route = min((basic, "basic"), (advanced, "advanced"), key=lambda item: item[0].epsilon)
        advanced_value: float | None = approx_route[0].epsilon
        advanced_text = f"{approx_route[0].epsilon:.6g} ({approx_route[1]})"
        rows.append(
            {
                "returns": b,
                "g": params.g,
                "variance": float(params.noise),
                "paper_closed_form": rdp_to_epsilon(paper.times(b), delta).epsilon,
                # epsilon_routes converted every closed form already; read Agarwal's from there
                "agarwal_bound": next(r.epsilon for r in exact.alternatives if r.route.startswith("closed-form:agarwal")),
                "exact": exact.epsilon,
                "exact_route": exact.route,
                "advanced_composition": advanced_text,
                "advanced_composition_epsilon": advanced_value,
            }
        )
    return rows
