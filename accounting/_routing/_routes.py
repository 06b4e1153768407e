"""Answering "what (eps, delta) does this give?": every route, through one planner.

A query is a list of releases to one user, each with a multiplicity: ``compose`` releases of a
mechanism (k-fold composition, or a user returning to ``compose`` batches), a heterogeneous list,
a dp_accounting event tree (:func:`accounting.from_dp_event`), or a guarantee (PureDP, ZCDP,
RDP). Whatever the entry point, the query is flattened to ((release, count), ...) (equal releases
merged), so one query gets one answer. The certified routes are

- ``analytic-gaussian``: every release Gaussian: mu-GDP, Balle & Wang's exact profile (exact);
- ``optimal-composition``: every release pure DP: the optimal composition theorem (Kairouz, Oh &
  Viswanath 2015; Murtagh & Vadhan 2016), enumerated exactly (exact for pure-DP guarantees and
  randomized response, which attain it); ``optimal-composition-pld``: the same optimum through the
  randomized responses' PLD; ``kov-heterogeneous-bound``: KOV's closed form;
- ``pld``: the privacy-loss distribution of the releases, composed (:mod:`accounting._routing._pld_route`;
  exact when the losses sit on one lattice, connect-the-dots on a grid otherwise);
- ``rdp-cks``: the RDP curves summed, converted by Canonne-Kamath-Steinke over real alpha;
- ``pure``: basic composition of the releases' pure epsilons;

and the comparison routes (never the answer, kept beside it) are the closed forms the papers print
and Mironov's conversion. :mod:`accounting._core._planner` decides what runs: exact routes first (the
first that answers ends the search), the others by estimated cost within the time budget, and every
route is reported, run or not, with why. Every value is a certified upper bound; the answer is the
smallest.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from .._core._certified import upper_float, working_precision
from .._core._conversions import mechanism_rdp_epsilon, rdp_to_epsilon, zcdp_to_epsilon
from .._events._dp_event import Composition
from .._core._guarantees import RDP, ZCDP, ApproxDP, PureDP
from .._core._mechanism_base import Mechanism
from .._core._planner import DEFAULT_MEMORY_BUDGET, DEFAULT_TIME_BUDGET, Cost, NotApplicable, Plan, Query, run_plan
from .._privacy_loss._pld import release_kind
from ._pld_route import PldRoute, pld_for_parts
from .._core._result import Result
from .._amplification._shuffling import Shuffled, shuffle_report, shuffle_route_objects, shuffle_routes
from .._core._total_variation import WithinTotalVariation, delta_after_total_variation, delta_before_total_variation, times_total_variation
from .._core._validation import AccountingError, check_nonnegative, check_positive_int, check_probability

__all__ = ["POLICIES", "delta_routes", "epsilon_routes", "ledger_epsilon", "pld_bracket", "query_of", "rdp_provenance", "register_route", "routes_for", "run_policy",
           "unregister_route"]

#: estimated seconds of the cheap routes (closed forms, basic composition, the analytic Gaussian)
COST_CLOSED_FORM = 2e-4
#: estimated seconds of an RDP conversion per distinct release (curve evaluations in Arb at the
#: orders the float search picks); curves that sum a window (Skellam, discrete Gaussian sums) say
#: more through ``rdp_cost()``
COST_RDP = 0.01
#: estimated seconds per support point of the exact optimal composition (Arb masses and losses)
COST_OUTCOME = 2e-5


# ---- the query ------------------------------------------------------------------------------------


def _flatten(subject: Any, count: int, out: dict) -> None:
    if isinstance(subject, Composition):
        for part, n in subject.parts:
            _flatten(part, n * count, out)
        return
    try:
        out[subject] = out.get(subject, 0) + count
    except TypeError:  # unhashable: its own release
        out[_Unhashable(subject)] = count


class _Unhashable:
    """An unhashable release kept as its own entry (identity equality)."""

    def __init__(self, subject: Any) -> None:
        self.subject = subject


def _check_release(index: int | None, subject: Any) -> None:
    name = "subject" if index is None else f"subject[{index}]"
    if index is not None and isinstance(subject, WithinTotalVariation):
        raise AccountingError(name, subject, "a mechanism without a sampler total variation in a sequence (pass a WithinTotalVariation alone)")
    if isinstance(subject, ApproxDP):
        raise AccountingError(name, subject, "a mechanism, PureDP, ZCDP or RDP (compose ApproxDP with advanced_composition)")
    if not isinstance(subject, (PureDP, ZCDP, RDP, Mechanism)):
        raise AccountingError(name, subject, "an accounting Mechanism or a PureDP/ZCDP/RDP guarantee, or a sequence of them")


def query_of(subject: Any, delta: float, *, compose: int = 1, time_budget: float = DEFAULT_TIME_BUDGET, include_pld: bool = True,
             comparisons: bool = True, exhaustive: bool = False, memory_budget: float = DEFAULT_MEMORY_BUDGET) -> Query:
    """The planner's query for ``compose`` releases of ``subject`` (a release, a list, an event
    tree): every argument validated here, once (``delta`` and the budgets by :class:`Query`)."""
    k = check_positive_int("compose", compose)
    merged: dict = {}
    if isinstance(subject, (list, tuple)):
        if len(subject) == 0:
            raise AccountingError("subject", subject, "a non-empty sequence of mechanisms or PureDP/ZCDP/RDP guarantees")
        for index, item in enumerate(subject):
            _check_release(index, item)
            _flatten(item, k, merged)
    else:
        _check_release(None, subject)
        _flatten(subject, k, merged)
    parts = tuple((s.subject if isinstance(s, _Unhashable) else s, n) for s, n in merged.items())
    return Query(parts, delta, time_budget, include_pld, comparisons, exhaustive, memory_budget=memory_budget)


# ---- the routes -----------------------------------------------------------------------------------


def _pure_epsilon(subject: Any) -> float | None:
    if isinstance(subject, PureDP):
        return subject.epsilon
    if isinstance(subject, (ZCDP, RDP)):
        return None
    pure = subject.pure()
    return None if pure is None else pure.epsilon


def _is_gaussian(subject: Any) -> bool:
    from .._mechanisms import Gaussian

    return type(subject) is Gaussian


def _attains_optimal_composition(subject: Any) -> bool:
    """A release for which the optimal composition of its pure epsilon *is* its own value: a
    pure-DP guarantee (the worst case over every eps-DP mechanism) or binary randomized response
    (which attains that worst case, KOV 2015)."""
    from .._mechanisms import RandomizedResponse

    return isinstance(subject, PureDP) or type(subject) is RandomizedResponse


def _describe(subject: Any) -> str:
    return subject.describe() if isinstance(subject, (Mechanism, RDP)) else repr(subject)


class _PureRoute:
    name = "pure"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        epsilons = [_pure_epsilon(s) for s, _ in query.parts]
        missing = next((s for (s, _), e in zip(query.parts, epsilons) if e is None), None)
        if missing is not None:
            return NotApplicable(self.name, f"{_describe(missing)} is not pure DP")

        def run(left: float) -> Result:
            total = PureDP(epsilons[0]).times(query.parts[0][1])
            for e, (_, n) in zip(epsilons[1:], query.parts[1:]):
                total = total.compose(PureDP(e).times(n))
            return Result(total.epsilon, query.delta, self.name, None, "basic composition of the pure epsilons")

        return Plan(self.name, run, Cost(COST_CLOSED_FORM))


def _rdp_of(subject: Any) -> RDP | None:
    """The release's RDP curve, or None for a mechanism without one (``rdp()`` not available)."""
    if isinstance(subject, RDP):
        return subject
    if isinstance(subject, (PureDP, ZCDP)):
        return subject.to_rdp()
    return subject.rdp()


def _without_curve(query: Query) -> Any:
    """A release known to have no RDP curve before any is built, or None: a mechanism whose class
    keeps the base's derived ``rdp()`` (no zCDP, no pure DP: None). A class that overrides ``rdp()``
    is not asked here (building a curve can take seconds); a wrapper whose base has no curve
    returns None at run time, and the route then fails with that reason."""
    for s, _ in query.parts:
        if isinstance(s, Mechanism) and type(s).rdp is Mechanism.rdp and s.rdp() is None:
            return s
    return None


def _curve_of(subject: Any) -> RDP:
    curve = _rdp_of(subject)
    if curve is None:
        raise AccountingError("subject", subject, "a mechanism with an RDP curve (its rdp() returned None)")
    return curve


def _rdp_cost(subject: Any) -> float:
    hint = subject.rdp_cost() if isinstance(subject, Mechanism) else None
    return COST_RDP if hint is None else float(hint)


class _RdpRoute:
    """RDP curves summed, converted by CKS (or, as a comparison, by Mironov's conversion)."""

    def __init__(self, conversion: str = "cks") -> None:
        self.conversion = conversion
        self.name = "rdp-cks" if conversion == "cks" else "rdp-mironov"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        comparison = self.conversion != "cks"
        single = query.single
        if comparison and (single is None or not isinstance(single[0], Mechanism) or not query.comparisons):
            return NotApplicable(self.name, "a comparison for one mechanism" if query.comparisons else "comparisons=False", comparison=True)
        missing = _without_curve(query)
        if missing is not None:
            return NotApplicable(self.name, f"{_describe(missing)} has no RDP curve (rdp() is None)", comparison=comparison)
        cost = Cost(sum(_rdp_cost(s) for s, _ in query.parts))
        return Plan(self.name, lambda left: self._run(query), cost, comparison=comparison)

    def _run(self, query: Query) -> Result:
        single = query.single
        delta = query.delta
        if single is not None and isinstance(single[0], ZCDP):
            r = zcdp_to_epsilon(single[0].times(single[1]), delta)
            return Result(r.epsilon, delta, self.name, r.alpha, "zCDP curve, CKS conversion (exact infimum over real alpha)")
        if single is not None and isinstance(single[0], Mechanism):
            subject, k = single
            r = mechanism_rdp_epsilon(subject, delta, compose=k, conversion=self.conversion)  # type: ignore[arg-type]
            detail = f"{_curve_label(subject, r.alpha)}, {'CKS' if self.conversion == 'cks' else 'Mironov'} conversion"
            return Result(r.epsilon, delta, self.name, r.alpha, detail)
        if single is not None and isinstance(single[0], PureDP):
            r = rdp_to_epsilon(single[0].to_rdp().times(single[1]), delta)
            return Result(r.epsilon, delta, self.name, r.alpha, "tight pure -> RDP curve (binary randomized response), CKS conversion")
        curves = [_curve_of(s) for s, _ in query.parts]
        r = rdp_to_epsilon(RDP.sequence(curves, [n for _, n in query.parts]), delta)
        labels = sorted({_curve_label(s, r.alpha) for s, _ in query.parts})
        return Result(r.epsilon, delta, self.name, r.alpha, f"RDP curves summed ({'; '.join(labels)}), CKS conversion")


def rdp_provenance(subject: Any, alpha: float | None, precision: int | None = None) -> str:
    """What the RDP value of ``subject`` at ``alpha`` is, by the code path that produced it (issue
    23, item 4: a label never says "exact" of a bound): a mechanism may report it per order
    (``rdp_provenance(alpha)``: the Skellam curve falls back to Agarwal et al.'s bound where its
    exact sum's window is too long), else its ``rdp_is_exact`` says whether the whole curve is.
    ``precision``: the bits the value was evaluated at, when not the routes' default (passed on
    as ``rdp_provenance(alpha, precision=...)``)."""
    if isinstance(subject, (PureDP, ZCDP)):
        return "exact curve of the guarantee"
    if isinstance(subject, RDP):
        return "the given RDP curve"
    if alpha is None:
        provenance = None
    elif precision is None:
        provenance = subject.rdp_provenance(alpha)
    else:
        provenance = subject.rdp_provenance(alpha, precision=precision)
    if provenance is not None:
        return provenance
    if subject.rdp_is_exact:
        return "exact RDP curve"
    return f"RDP upper bound ({subject.rdp().describe()})"


_curve_label = rdp_provenance


class _RdpBoundRoute:
    """A mechanism's cheaper certified RDP curve (``rdp_bound()``: a proven bound, labelled), for
    when its exact curve does not fit the time budget."""

    name = "rdp-cks:bound"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        single = query.single
        curve = single[0].rdp_bound() if single is not None and isinstance(single[0], Mechanism) else None
        if curve is None:
            return NotApplicable(self.name, "no cheaper RDP bound than the curve itself")
        subject, k = single  # type: ignore[misc]

        def run(left: float) -> Result:
            r = rdp_to_epsilon(curve.times(k), query.delta)
            return Result(r.epsilon, query.delta, self.name, r.alpha, f"{curve.describe()}, CKS conversion")

        return Plan(self.name, run, Cost(COST_RDP))


class _AnalyticGaussianRoute:
    name = "analytic-gaussian"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        other = next((s for s, _ in query.parts if not _is_gaussian(s)), None)
        if other is not None:
            return NotApplicable(self.name, f"{_describe(other)} is not a Gaussian mechanism")
        return Plan(self.name, lambda left: analytic_gaussian(query.parts, query.delta), Cost(COST_CLOSED_FORM), exact=True)


#: route label of the analytic Gaussian (an exact value, rounded up)
ANALYTIC_GAUSSIAN_DETAIL = "analytic Gaussian (mu-GDP, Balle-Wang 2018), rounded up"


def analytic_gaussian(parts, delta: float) -> Result:
    """The exact eps(delta) of a composition of Gaussians, rounded up."""
    from .._mechanisms._analytic_gaussian import gdp_epsilon, gdp_mu

    with working_precision(None):
        mu = gdp_mu((s.sensitivity, s.sigma, n) for s, n in parts)
        mu_up = upper_float(mu)
        eps = gdp_epsilon(mu, delta)
    return Result(eps, delta, "analytic-gaussian", None, f"{ANALYTIC_GAUSSIAN_DETAIL}; mu = {mu_up:.6g}")


def _pure_groups(query: Query) -> list[tuple[float, int]] | NotApplicable:
    groups = []
    for subject, n in query.parts:
        e = _pure_epsilon(subject)
        if e is None:
            return NotApplicable("optimal-composition", f"{_describe(subject)} is not pure DP")
        groups.append((e, n))
    return groups


class _OptimalCompositionRoute:
    """The exact optimum over every mechanism with the releases' pure epsilons (enumerated)."""

    name = "optimal-composition"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        from ._optimal_composition import exact_support, optimal_composition_exact

        groups = _pure_groups(query)
        if isinstance(groups, NotApplicable):
            return NotApplicable(self.name, groups.reason)
        support = exact_support(groups, query.delta)
        exact = all(_attains_optimal_composition(s) for s, _ in query.parts)
        return Plan(self.name, lambda left: optimal_composition_exact(groups, query.delta), Cost(COST_CLOSED_FORM + COST_OUTCOME * support),
                    exact=exact, setting=f"{support:,} support points")


def _rr_surrogate(query: Query):
    from .._mechanisms import RandomizedResponse

    groups = _pure_groups(query)
    if isinstance(groups, NotApplicable):
        return NotApplicable("optimal-composition-pld", groups.reason)
    merged: dict = {}
    for e, n in groups:
        merged[e] = merged.get(e, 0) + n
    return [(RandomizedResponse(e), n) for e, n in merged.items()]


class _KovRoute:
    name = "kov-heterogeneous-bound"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        from ._optimal_composition import KOV_DETAIL, exact_support, kov_heterogeneous_bound

        groups = _pure_groups(query)
        if isinstance(groups, NotApplicable):
            return NotApplicable(self.name, groups.reason)
        return Plan(self.name, lambda left: Result(kov_heterogeneous_bound(groups, query.delta), query.delta, self.name, None, KOV_DETAIL,
                                                   outcomes=exact_support(groups, query.delta)), Cost(COST_CLOSED_FORM))


class _ClosedFormRoute:
    """One of a mechanism's printed closed forms (a comparison, never the answer)."""

    def __init__(self, label: str, bound: Any) -> None:
        self.name = f"closed-form:{label}"
        self.label = label
        self.bound = bound

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        if not query.comparisons:
            return NotApplicable(self.name, "comparisons=False", comparison=True)
        if not isinstance(self.bound, (RDP, ZCDP, PureDP)):
            return NotApplicable(self.name, "not an RDP, zCDP or pure-DP bound", comparison=True)
        subject, k = query.single  # type: ignore[misc]
        return Plan(self.name, lambda left: _closed_form_result(self.label, self.bound, k, query.delta), Cost(COST_RDP), comparison=True)


def _closed_form_result(label: str, bound: Any, k: int, delta: float) -> Result:
    if isinstance(bound, RDP):
        r = rdp_to_epsilon(bound.times(k), delta)
        return Result(r.epsilon, delta, f"closed-form:{label}", r.alpha, f"{label}, RDP -> CKS")
    if isinstance(bound, ZCDP):
        r = zcdp_to_epsilon(bound.times(k), delta)
        return Result(r.epsilon, delta, f"closed-form:{label}", r.alpha, f"{label}, zCDP -> CKS")
    return Result(bound.times(k).epsilon, delta, f"closed-form:{label}", None, f"{label}, pure")


def routes_for(query: Query) -> list:
    """Every route the planner considers for ``query`` (each says itself whether it applies),
    the registered ones (:func:`register_route`) last."""
    return _builtin_routes(query) + list(_REGISTERED)


def _builtin_routes(query: Query) -> list:
    from ._optimal_composition import exact_support

    groups = _pure_groups(query)
    routes: list = [
        _AnalyticGaussianRoute(),
        _OptimalCompositionRoute(),
        PldRoute(),
        PldRoute("optimal-composition-pld", _rr_surrogate, "optimal composition of pure DP through the randomized responses' PLD (Murtagh-Vadhan 2016)",
                 exact_for_lattice=all(_attains_optimal_composition(s) for s, _ in query.parts),
                 outcomes=None if isinstance(groups, NotApplicable) else exact_support(groups, query.delta)),
        _KovRoute(),
        _RdpRoute("cks"),
        _RdpBoundRoute(),
        _PureRoute(),
        _RdpRoute("mironov"),
    ]
    single = query.single
    if single is not None and isinstance(single[0], Mechanism) and query.comparisons:
        try:
            forms = single[0].closed_forms()
        except (ValueError, ArithmeticError) as error:  # a printed bound that cannot be formed here (e.g. rho overflows)
            routes.append(_Unavailable("closed-form", f"the closed forms could not be formed ({error})", comparison=True))
        else:
            routes += [_ClosedFormRoute(label, bound) for label, bound in forms.items()]
    return routes


class _Unavailable:
    """A route that says only why it does not apply."""

    def __init__(self, name: str, reason: str, comparison: bool = False) -> None:
        self.name, self.reason, self.comparison = name, reason, comparison

    def plan(self, query: Query, budget: float) -> NotApplicable:
        return NotApplicable(self.name, self.reason, comparison=self.comparison)


def epsilon_routes(
    subject: Any,
    delta: float,
    *,
    compose: int = 1,
    include_pld: bool = True,
    comparisons: bool = True,
    time_budget: float = DEFAULT_TIME_BUDGET,
    exhaustive: bool = False,
    memory_budget: float = DEFAULT_MEMORY_BUDGET,
    policy: str = "interactive",
) -> Result:
    """The smallest certified eps at ``delta`` after ``compose``-fold composition, with every route.

    ``subject`` is a mechanism from :mod:`accounting`, a guarantee (PureDP, ZCDP, RDP), a list of
    them (a heterogeneous sequence of releases), or a composition from
    :func:`accounting.from_dp_event`; a shuffled randomizer has its own routes
    (:func:`accounting.shuffle_routes`). The planner (:mod:`accounting._core._planner`) runs exact routes
    first and stops at the first that answers, then every route whose estimated cost fits
    ``time_budget`` seconds (on one core), coarsening grids to fit; ``exhaustive=True`` runs every
    route that fits even after an exact one answered. ``include_pld=False`` switches off the PLD
    routes, ``comparisons=False`` the comparison routes (closed forms, Mironov), which never change
    the answer. The result's ``alternatives`` list every route's record (:class:`accounting.Result`; ``answer`` is the winning one):
    its value and time if it ran, else why not and which argument would run it.
    ``memory_budget`` (bytes) caps a route's estimated peak memory (coarsened or not run above it).
    ``policy`` names the route set (:data:`POLICIES`): ``"interactive"`` (every route, within the
    budgets), ``"exact-only"`` (only routes exact for the query), ``"ledger"`` (the routes a
    ledger charges and a run's budget is computed with: deterministic, no time budget).
    """
    if policy != "interactive":
        if policy not in POLICIES:
            raise AccountingError("policy", policy, f"one of {tuple(POLICIES)}")
        query = query_of(subject, delta, compose=compose, time_budget=time_budget, include_pld=include_pld, comparisons=comparisons,
                         exhaustive=exhaustive, memory_budget=memory_budget)
        return run_policy(query, policy)
    if isinstance(subject, Shuffled):  # amplification by shuffling: its own routes (accounting._amplification._shuffling), planned alike
        query = query_of(subject, delta, compose=compose, time_budget=math.inf, include_pld=include_pld, comparisons=comparisons,
                         exhaustive=exhaustive, memory_budget=math.inf)
        routes = shuffle_route_objects(subject, include_pld=include_pld, comparisons=comparisons, time_budget=time_budget, memory_budget=memory_budget)
        return shuffle_report(run_plan(routes + list(_REGISTERED), query))
    if isinstance(subject, WithinTotalVariation):
        return _within_total_variation(subject, delta, compose, dict(include_pld=include_pld, comparisons=comparisons,
                                                                     time_budget=time_budget, exhaustive=exhaustive))
    query = query_of(subject, delta, compose=compose, time_budget=time_budget, include_pld=include_pld, comparisons=comparisons, exhaustive=exhaustive,
                     memory_budget=memory_budget)
    return run_policy(query, "interactive")


def _within_total_variation(subject: WithinTotalVariation, delta: float, compose: int, options: dict) -> Result:
    """eps at ``delta`` of ``compose`` releases within total variation t each of the analysed mechanism:
    the analysed mechanism's eps at delta' = delta - (1 + e^E) compose t, E its eps at delta/2 (an upper
    bound on the answer while delta' >= delta/2), so the executed releases are (eps, delta' +
    (1 + e^eps) compose t <= delta)-DP (``accounting._core._total_variation``)."""
    delta = float(check_probability("delta", delta))
    t = times_total_variation(subject.total_variation, check_positive_int("compose", compose))
    bound = epsilon_routes(subject.mechanism, delta / 2, compose=compose, **options)
    ideal = delta_before_total_variation(bound.epsilon, delta, t)
    if ideal < delta / 2:
        raise AccountingError("delta", delta, f"a delta at least twice the sampler slack (1 + e^eps) t, t = {t!r}")
    result = epsilon_routes(subject.mechanism, ideal, compose=compose, **options)
    if result.epsilon > bound.epsilon:  # the routes are monotone in delta; refuse rather than assume it
        raise AccountingError("delta", delta, "a delta at which the analysed mechanism's certified eps is monotone")
    return dataclasses.replace(result, delta=delta, route=f"{result.route} + sampler total variation",
                               detail=f"{result.detail}; analysed mechanism at delta {ideal!r}, plus (1 + e^eps) * {t!r} for the executed law".lstrip("; "))


# ---- delta(epsilon): the same planner, minimising delta ---------------------------------------------


class _AnalyticGaussianDeltaRoute:
    """delta(eps) of a composition of Gaussians: mu-GDP, Balle & Wang's exact profile (exact)."""

    name = "analytic-gaussian"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        other = next((s for s, _ in query.parts if not _is_gaussian(s)), None)
        if other is not None:
            return NotApplicable(self.name, f"{_describe(other)} is not a Gaussian mechanism")

        def run(left: float) -> Result:
            from .._mechanisms._analytic_gaussian import gdp_delta, gdp_mu

            with working_precision(None):
                delta = gdp_delta(gdp_mu((s.sensitivity, s.sigma, n) for s, n in query.parts), query.epsilon)
            return Result(query.epsilon, delta, self.name, None, ANALYTIC_GAUSSIAN_DETAIL)  # type: ignore[arg-type]

        return Plan(self.name, run, Cost(COST_CLOSED_FORM), exact=True)


class _RdpDeltaRoute:
    """delta(eps) from the RDP curves summed (CKS conversion, optimised over real alpha)."""

    name = "rdp-cks"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        if not query.epsilon:
            return NotApplicable(self.name, "the CKS conversion is for epsilon > 0")
        missing = _without_curve(query)
        if missing is not None:
            return NotApplicable(self.name, f"{_describe(missing)} has no RDP curve (rdp() is None)")

        def run(left: float) -> Result:
            from .._core._conversions import rdp_to_delta

            curve = RDP.sequence([_curve_of(s) for s, _ in query.parts], [n for _, n in query.parts])
            r = rdp_to_delta(curve, query.epsilon)  # type: ignore[arg-type]
            return Result(query.epsilon, r.delta, self.name, r.alpha, f"RDP curves summed ({r.detail}), CKS conversion")  # type: ignore[arg-type]

        return Plan(self.name, run, Cost(sum(_rdp_cost(s) for s, _ in query.parts)))


def delta_routes(subject: Any, epsilon: float, *, compose: int = 1, time_budget: float = DEFAULT_TIME_BUDGET) -> Result:
    """The smallest certified delta at ``epsilon`` over the routes that give one (the analytic
    Gaussian, the composed PLD, the RDP curves by CKS), through the planner of
    :func:`epsilon_routes`: the same cost estimates, the same coarsening to fit ``time_budget``
    and the same report of what did not run and why (``alternatives``); a composition no route
    can afford is refused with the argument that would run it, never started. The result's
    ``delta`` is the answer (1.0, vacuous, when no route applies)."""
    eps = float(check_nonnegative("epsilon", epsilon))
    if isinstance(subject, WithinTotalVariation):
        # the analysed mechanism's delta(eps) plus the executed law's slack (1 + e^eps) compose t
        inner = delta_routes(subject.mechanism, eps, compose=compose, time_budget=time_budget)
        t = times_total_variation(subject.total_variation, check_positive_int("compose", compose))
        return dataclasses.replace(inner, delta=min(1.0, delta_after_total_variation(eps, inner.delta, t)),
                                   route=f"{inner.route} + sampler total variation",
                                   detail=f"{inner.detail}; plus (1 + e^eps) * {t!r} for the executed law".lstrip("; "))
    query = query_of(subject, 0.5, compose=compose, time_budget=time_budget, comparisons=False)
    query = dataclasses.replace(query, delta=1.0, include_pld=True, comparisons=False, exhaustive=False, epsilon=eps)
    if eps == 0 and not all(_is_gaussian(s) for s, _ in query.parts) and any(release_kind(s) is None for s, _ in query.parts):
        # neither the analytic Gaussian nor a PLD applies, and CKS needs eps > 0
        return Result(eps, 1.0, "none", None, "no route gives delta(0) for these releases (no PLD; CKS needs epsilon > 0)")
    return run_plan([_AnalyticGaussianDeltaRoute(), PldRoute(), _RdpDeltaRoute()], query)


def pld_bracket(subject: Any, delta: float, *, compose: int = 1, discretisation: float | None = None) -> Result | None:
    """The PLD route with its optimistic twin: a PLD evaluation (:class:`Result`) whose [epsilon_lower, epsilon] brackets
    the true eps(delta) (both certified), or None when a release has no PLD. The PLD is the one
    the route builds (same releases, same grid), with the lower bound added."""
    query = query_of(subject, delta, compose=compose)
    if any(release_kind(s) is None for s, _ in query.parts):
        return None
    return pld_for_parts(query.parts, discretisation, lower_bound=True).epsilon(query.delta)


# ---- the registry of added routes and the named policies ---------------------------------------------
#
# Every epsilon the project prints or charges is decided here: ``epsilon_routes`` (policy
# "interactive"), the in-memory and durable ledgers' spend and a bandit run's budget (policy
# "ledger", :func:`ledger_epsilon`), calibration, ``from_dp_event`` and the ``CertifiedAccountant``
# (through ``epsilon_routes``). A route added with :func:`register_route` joins every policy, so
# the ledger's spend and a run's budget move together.

_REGISTERED: list = []
#: callbacks run when the registry changes (memo caches of values that depend on the route set)
_ON_CHANGE: list = []


def register_route(route: Any) -> None:
    """Add ``route`` (an object with ``name`` and ``plan(query, budget)``, :class:`accounting._core._planner.Route`)
    to every policy. Its values must be certified upper bounds: the answer is the smallest."""
    if not (isinstance(getattr(route, "name", None), str) and callable(getattr(route, "plan", None))):
        raise AccountingError("route", route, "an object with a str name and a plan(query, budget) method")
    if any(r.name == route.name for r in _REGISTERED):
        raise AccountingError("route", route.name, "a name not registered yet")
    _REGISTERED.append(route)
    _changed()


def unregister_route(name: str) -> None:
    """Remove the registered route called ``name``."""
    index = next((i for i, r in enumerate(_REGISTERED) if r.name == name), None)
    if index is None:
        raise AccountingError("name", name, f"a registered route, one of {tuple(r.name for r in _REGISTERED)}")
    del _REGISTERED[index]
    _changed()


def on_routes_changed(callback: Any) -> None:
    """Call ``callback()`` whenever the registry changes (a memo of spends clears itself)."""
    _ON_CHANGE.append(callback)


def _changed() -> None:
    for callback in _ON_CHANGE:
        callback()


class _LedgerRdpRoute:
    """The ledger's RDP route: one mechanism n times by its exact curve (the conversion memoised
    with the routes and a run's budget); otherwise the releases' RDP curves summed and converted
    at what the approximate-DP charges (basic composition, in Arb) leave of delta."""

    name = "rdp-cks"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        if len(query.parts) == 1 and isinstance(query.parts[0][0], Shuffled):
            return NotApplicable(self.name, "rounds of one shuffled protocol: the amplification routes answer")
        return Plan(self.name, lambda left: self._run(query), Cost(COST_RDP))

    def _run(self, query: Query) -> Result:
        from .._core._certified import exact, lower_float
        from .._core._conversions import mechanism_rdp_epsilon, rdp_to_epsilon
        from .._core._guarantees import _sum_up, _times_up

        delta = query.delta
        if len(query.parts) == 1 and not isinstance(query.parts[0][0], (PureDP, ZCDP, ApproxDP, RDP)):
            g, n = query.parts[0]
            r = mechanism_rdp_epsilon(g, delta, compose=n)
            return Result(_sum_up(r.epsilon, 0.0), delta, self.name, r.alpha, "exact RDP curve, CKS conversion")
        curves: list[RDP] = []
        counts: list[int] = []
        approx: list[tuple[ApproxDP, int]] = []
        for g, n in query.parts:
            if isinstance(g, ApproxDP):
                approx.append((g, n))
            else:
                curves.append(g.to_rdp() if isinstance(g, (PureDP, ZCDP)) else g if isinstance(g, RDP) else g.rdp())
                counts.append(n)
        # basic composition of the approximate-DP charges, summed in Arb and rounded up: a delta
        # beyond the budget's leaves no eps at the budget's delta (an infinite spend)
        eps_approx = _sum_up(*(_times_up(g.epsilon, n) for g, n in approx)) if approx else 0.0
        delta_approx = _sum_up(*(_times_up(g.delta, n) for g, n in approx)) if approx else 0.0
        detail = "RDP curves summed, CKS conversion" + (" + basic composition of the approximate-DP charges" if approx else "")
        if delta_approx > delta:
            return Result(math.inf, delta, self.name, None, "the approximate-DP charges alone exceed delta")
        if not curves:
            return Result(eps_approx, delta, self.name, None, "basic composition of the approximate-DP charges")
        with working_precision(None):
            delta_left = lower_float(exact(delta) - exact(delta_approx))
        if delta_left <= 0:
            return Result(math.inf, delta, self.name, None, "the approximate-DP charges alone use up delta")
        result = rdp_to_epsilon(RDP.sequence(curves, counts), delta_left)
        return Result(_sum_up(result.epsilon, eps_approx), delta, self.name, result.alpha, detail)


class _LedgerShuffleRoute:
    """Rounds of one shuffled protocol: the amplification routes (:func:`accounting.shuffle_routes`,
    no comparisons). Composed with other charges a round counts as its eps0-DP curve (the RDP route)."""

    name = "shuffle"

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        if not (len(query.parts) == 1 and isinstance(query.parts[0][0], Shuffled)):
            return NotApplicable(self.name, "not rounds of one shuffled protocol")
        subject, rounds = query.parts[0]

        def run(left: float) -> Result:
            report = shuffle_routes(subject, query.delta, compose=rounds, comparisons=False)
            if not math.isfinite(report.epsilon):  # (no finite value: the route fails, as before)
                raise AccountingError("value", report.epsilon, "a finite real number")
            return report  # the shuffle planner's report, handed on as this route's value (not copied)

        return Plan(self.name, run, Cost(COST_RDP))


class _ExactOnly:
    """A route kept only where its plan is exact for the query (policy "exact-only")."""

    def __init__(self, route: Any) -> None:
        self.route, self.name = route, route.name

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        plan = self.route.plan(query, budget)
        if isinstance(plan, Plan) and not plan.exact and not plan.comparison:
            return NotApplicable(self.name, "not exact for this query (policy exact-only)")
        return plan


def _interactive(query: Query) -> tuple[list, Query]:
    return routes_for(query), query


def _exact_only(query: Query) -> tuple[list, Query]:
    return [_ExactOnly(r) for r in routes_for(query)], query


def _ledger(query: Query) -> tuple[list, Query]:
    # deterministic: no time budget (the routes' estimates decide nothing here), no comparisons
    fixed = Query(query.parts, query.delta, math.inf, False, False, False, memory_budget=query.memory_budget)
    return [_AnalyticGaussianRoute(), _LedgerShuffleRoute(), _LedgerRdpRoute(), *_REGISTERED], fixed


#: the planner's named policies: each maps a query to (its routes, the query as the policy runs it)
POLICIES = {
    "interactive": _interactive,
    "exact-only": _exact_only,
    "ledger": _ledger,
}


def run_policy(query: Query, policy: str = "interactive") -> Result:
    """Run ``query`` through the planner with the routes of ``policy`` (:data:`POLICIES`)."""
    routes, query = POLICIES[policy](query)
    return run_plan(routes, query)


def ledger_epsilon(parts: Any, delta: float) -> float:
    """The (eps, delta) spend of ((guarantee, count), ...) (mechanisms, PureDP/ZCDP/RDP curves,
    ApproxDP charges) at ``delta``: policy "ledger" (the ledgers' spend and a run's budget)."""
    query = Query(tuple((g, int(n)) for g, n in parts), delta, math.inf, False, False, False)
    return run_policy(query, "ledger").epsilon
