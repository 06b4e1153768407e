"""Routes that are exact for a whole class of compositions, and heterogeneous sequences.

:func:`accounting.epsilon_routes` asks :func:`tight_routes` for these on every subject:

- ``analytic-gaussian``: every step is an :class:`accounting.Gaussian`; the composition is
  mu-GDP with mu = sqrt(sum (Delta_i/sigma_i)^2) and its exact (eps, delta) profile is Balle &
  Wang's analytic formula (:mod:`accounting._analytic_gaussian`);
- ``optimal-composition``: every step is pure DP; the optimal composition theorem (Kairouz, Oh &
  Viswanath 2015; Murtagh & Vadhan 2016) gives the least delta valid for *every* mechanism
  with those epsilons (:mod:`accounting._optimal_composition`); exact where the composed
  randomized-response loss has few support points, KOV's heterogeneous bound otherwise.

:func:`sequence_routes` answers for a heterogeneous sequence of releases (a list of mechanisms
and guarantees, composed ``compose`` times): basic composition, the RDP curves summed and
converted (CKS), and the tight routes above where they apply.

Cost does not grow with the number of repetitions for the analytic Gaussian (mu scales by
sqrt(k)) nor for KOV's bound; the exact optimal composition is skipped (in favour of KOV's bound)
when the composed loss would have more than ``MAX_OUTCOMES`` support points.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ._analytic_gaussian import gdp_epsilon, gdp_mu
from ._certified import upper_float, working_precision
from ._conversions import EpsilonResult, rdp_to_epsilon
from ._guarantees import RDP, ZCDP, ApproxDP, PureDP
from ._optimal_composition import optimal_composition_epsilon
from ._validation import AccountingError

__all__ = ["is_gaussian", "sequence_routes", "tight_routes"]

#: route label of the analytic Gaussian (an exact value, rounded up)
ANALYTIC_GAUSSIAN_DETAIL = "analytic Gaussian (mu-GDP, Balle-Wang 2018), rounded up"


def is_gaussian(subject: Any) -> bool:
    from ._mechanisms import Gaussian

    return type(subject) is Gaussian


def _pure_epsilon(subject: Any) -> float | None:
    if isinstance(subject, PureDP):
        return subject.epsilon
    if isinstance(subject, (ApproxDP, ZCDP, RDP)):
        return None
    pure = subject.pure() if hasattr(subject, "pure") else None
    return None if pure is None else pure.epsilon


def tight_routes(parts: Sequence[tuple[Any, int]], delta: float) -> list[EpsilonResult]:
    """Certified routes exact for Gaussian compositions and for pure-DP compositions.

    ``parts`` holds (subject, count) pairs: ``count`` releases of each subject, composed.
    """
    routes: list[EpsilonResult] = []
    if parts and all(is_gaussian(subject) for subject, _ in parts):
        with working_precision(None):
            mu = gdp_mu((s.sensitivity, s.sigma, n) for s, n in parts)
            mu_up = upper_float(mu)
            eps = gdp_epsilon(mu, delta)
        routes.append(EpsilonResult(eps, delta, "analytic-gaussian", None, f"{ANALYTIC_GAUSSIAN_DETAIL}; mu = {mu_up:.6g}"))
    epsilons = [_pure_epsilon(subject) for subject, _ in parts]
    if parts and all(e is not None for e in epsilons):
        result = optimal_composition_epsilon([(e, n) for e, (_, n) in zip(epsilons, parts)], delta)
        if math.isfinite(result.epsilon):
            route = {"exact": "optimal-composition", "rr-pld": "optimal-composition-pld", "kov-bound": "kov-heterogeneous-bound"}[result.method]
            routes.append(EpsilonResult(result.epsilon, delta, route, None, result.detail))
    return routes


def _rdp_of(subject: Any) -> RDP | None:
    if isinstance(subject, RDP):
        return subject
    if isinstance(subject, (PureDP, ZCDP)):
        return subject.to_rdp()
    if hasattr(subject, "rdp"):
        return subject.rdp()
    return None


def sequence_routes(subjects: Sequence[Any], k: int, delta: float) -> tuple[list[EpsilonResult], list[EpsilonResult]]:
    """(certified, comparison) routes for ``k`` repetitions of a heterogeneous sequence of releases."""
    if len(subjects) == 0:
        raise AccountingError("subject", subjects, "a non-empty sequence of mechanisms or PureDP/ZCDP/RDP guarantees")
    # Equal releases are merged (frozen value objects compare by value), so k-fold work stays O(distinct).
    parts: list[list[Any]] = []
    position: dict[Any, int] = {}
    for index, subject in enumerate(subjects):
        if isinstance(subject, ApproxDP) or not (isinstance(subject, (PureDP, ZCDP, RDP)) or hasattr(subject, "rdp")):
            raise AccountingError(f"subject[{index}]", subject, "a mechanism or a PureDP/ZCDP/RDP guarantee")
        try:
            slot = position.setdefault(subject, len(parts))
        except TypeError:  # unhashable: kept as its own release
            slot = len(parts)
        if slot == len(parts):
            parts.append([subject, 0])
        parts[slot][1] += k
    certified: list[EpsilonResult] = []
    pure = [_pure_epsilon(s) for s, _ in parts]
    if all(e is not None for e in pure):
        total = PureDP(pure[0]).times(parts[0][1])
        for e, (_, n) in zip(pure[1:], parts[1:]):
            total = total.compose(PureDP(e).times(n))
        certified.append(EpsilonResult(total.epsilon, delta, "pure", None, "basic composition"))
    curves = [_rdp_of(s) for s, _ in parts]
    if all(c is not None for c in curves):
        r = rdp_to_epsilon(RDP.sequence(curves, [n for _, n in parts]), delta)  # type: ignore[arg-type]
        if math.isfinite(r.epsilon):
            certified.append(EpsilonResult(r.epsilon, delta, "rdp-cks", r.alpha, "exact RDP curves summed, CKS conversion"))
    certified.extend(tight_routes(parts, delta))
    return certified, []

