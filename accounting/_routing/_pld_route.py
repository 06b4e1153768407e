"""The planner's privacy-loss-distribution route: which PLD a query gets, what it costs, how it fits.

A query of releases ((M_1, n_1), ..., (M_r, n_r)) has a PLD route when every release has a PLD:
an integer output pair (exact lattice, or connect-the-dots onto a grid), a closed-form list of
loss atoms (the discrete Laplace: no output window at all), or a monotone privacy loss
(continuous and subsampled mechanisms: connect-the-dots). The route builds each distinct release
once (:func:`accounting._privacy_loss._pld.release_pld`, the same PLD :func:`accounting.pld_epsilon` builds;
a release cheap enough to build while planning, to read its lattice and span, is built then and
handed to the run by the plan, ``Plan.prepared``),
composes them in one FFT pass (:mod:`accounting._privacy_loss._pld_fft_power`; releases on different grids are
first put on one, :meth:`~accounting.PrivacyLossDistribution.regrid`) and reads the certified
eps(delta) (or delta(eps), for a delta query: :func:`accounting._routing._routes.delta_routes`). The grid
is :func:`accounting._privacy_loss._pld.grid_for` of the total number of releases.

Exactness: a PLD on the exact lattice of its losses is planned as exact, but the answer says
exact only if its truncated mass (outputs outside the window, the mass outside the FFT window:
at +inf, counted in delta) is certified not to move it by more than 1e-9 relative
(``Result.truncation_negligible``); otherwise it says "not exact" and the planner runs the
other routes as for any inexact one. (1000 discrete Gaussians, sigma = 2, at delta = 9e-21: the
FFT window leaves 8.3e-21 outside; the route used to call its eps = 281.85 exact, 4 % above the
true 270.84, and stop there.)

Cost model (seconds on one core of the reference machine; the constants below were measured on
the project's 2-core machine, as stated beside each; ``benchmarks/bench_planner.py`` prints the
estimates next to the measured times): building costs a constant per output
of an integer pair's window, per atom of a closed form, per block of Taylor series and per grid
point (or per grid point, point by point, at the pair's own ``point_cost()`` when it states one:
a Gaussian mixture by its shifts, a disjoint union by its parts; the second direction of an
asymmetric pair is the first's mirror image, one product per point) of a connect-the-dots pair; composing costs a constant per point x log2(points) of the composed window,
whose width is estimated, before anything is built, from the releases' RDP curves by the Chernoff
bound the FFT pass itself uses to place its window: the composed loss exceeds
min_alpha (sum_i n_i (alpha - 1) D_alpha(M_i) + log(1/tail)) / (alpha - 1) with probability below
``tail``. When the estimate exceeds the time left, the route coarsens its grid (a factor 2 at a
time: connect-the-dots stays sound on any grid, looser by O(h^2) per release) and widens the
output windows of integer pairs (the mass left outside is truncated mass at +inf, counted in delta,
so it must stay far below delta), and says so; it refuses only when no setting fits, naming the time budget that
would run it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core._guarantees import RDP
from .._core._mechanism_base import Mechanism
from .._core._pairs import IntegerPair
from .._core._planner import Cost, NotApplicable, Plan, Query
from .._privacy_loss._pld import DEFAULT_TAIL_MASS, EXACT_TOLERANCE, MAX_SPREAD_STEP, PrivacyLossDistribution, _resolve_pair, grid_for, release_kind, release_pld
from .._privacy_loss._pld_continuous import AUTO_POINTS, POINT_COST, continuous_loss_pair, point_cost
from .._privacy_loss._pld_fft_power import MAX_WINDOW
from .._core._result import Result

__all__ = ["PldRoute", "pld_for_parts"]

#: seconds per grid point and direction of a connect-the-dots build, point by point (Arb
#: hockey-stick values; ~2.0 s for the 110,000 points of the subsampled Gaussian at h = 1e-4):
#: the default for a pair that states no ``point_cost()`` (a Gaussian mixture costs 13-70 us a
#: point by its number of shifts: :meth:`accounting._privacy_loss._pld_continuous.MonotoneLossPair.point_cost`)
COST_CONTINUOUS_POINT = POINT_COST
#: ... blockwise from Taylor series (pairs that give them): per block of radius 0.1 (two Arb
#: series of 40 terms, ~0.2 ms each, and their matrix and float conversions), plus the float
#: evaluation per point, both for one direction; every further direction of an asymmetric pair
#: is its mirror image (one certified product per point). Measured on a loaded 2-core machine
#: (load ~4): subsampled Gaussians 0.04 s at h = 1e-3 and 0.07-0.11 s at h = 1e-4
COST_SERIES_BLOCK = 8.0e-4
COST_SERIES_POINT = 7.0e-7
COST_MIRROR_POINT = 4.0e-7
#: seconds per output of an integer pair's window (two log-masses in Arb, both directions;
#: measured 7.5e-5 on the discrete Gaussian, 1.2e-5 on Skellam's recurrence); a pair may say
#: better (``output_cost()``)
COST_INTEGER_OUTPUT = 8.0e-5
#: seconds per atom of a closed-form PLD (1,001 atoms: 0.014 s)
COST_ATOM = 1.5e-5
#: seconds per point x log2(points) and direction of one composition pass (FFTs, the tilted
#: passes' longer windows, direct DFTs): 4e-8 to 9e-8 measured from 10^5 to 10^3 releases
COST_FFT_POINT = 8e-8
#: fixed seconds of one composition and eps(delta) search (Arb tables, tilts, certification)
COST_FIXED = 0.02
#: bytes per point of the composed window (complex spectra, tilted passes kept for the queries)
BYTES_PER_POINT = 96
#: a release whose own grid is not the plan's (a continuous pair coarsened to 2^j h by
#: ``AUTO_POINTS``, or a lattice put on the grid) is regridded, and a regridded PLD is no longer
#: a product of releases: its k-fold composition is binary powering (a float convolution per
#: squaring, truncated at 1e-15 per end), whose window grows about linearly in k, not like the
#: Chernoff width. Seconds and bytes per point of that final window, measured (issue 30) on
#: PoissonSampled(Gaussian(0.3), 0.01) regridded from 2e-4 to 1e-4: k = 16, 4.7M points, 2.7 s;
#: k = 128, 31.7M points, 18.4 s and 3.5 GB peak (the estimate takes k x the single window, an
#: upper bound of both). Before this term the route estimated 3.3 s and 86 MiB for k = 1,000,
#: which ran for minutes and took 13.8 GB.
COST_BINARY_POINT = 6e-7
BYTES_BINARY_POINT = 120
#: mass of the composed loss the window estimate leaves out (as the FFT pass, WINDOW_TAIL)
_WINDOW_TAIL = 1e-20
#: output-window tail masses an integer pair may be widened to, relative to delta (the mass
#: goes to the +inf atom: at most this fraction of delta per release)
_TAIL_STEPS = (DEFAULT_TAIL_MASS, 1e-15, 1e-12, 1e-10)


@dataclass(frozen=True)
class _Release:
    """What the cost model needs of one release: its kind and the sizes that drive the cost.

    ``lattice`` is the step of the exact lattice its losses sit on (known when the release was
    cheap enough to build while planning), else None; ``support`` its number of lattice points."""

    subject: Any
    count: int
    kind: str  # "continuous" | "atoms" | "integer"
    width: float  # the loss window's width (continuous, or built integer releases), else 0
    directions: int
    atoms: int  # closed-form atoms, or window outputs at DEFAULT_TAIL_MASS
    lattice: float | None = None
    support: int = 0
    setup: float = 0.0  # seconds before the first log-mass (a table the pair computes once)
    output_cost: float = COST_INTEGER_OUTPUT  # seconds per output of its window
    series: bool = False  # a continuous pair whose masses come blockwise from Taylor series
    point_cost: float = COST_CONTINUOUS_POINT  # seconds per point of a point-by-point build (the pair's hint)
    spread: float | None = None  # float estimate of the loss's standard deviation (continuous pairs)
    pld: PrivacyLossDistribution | None = None  # built while planning (at grid_for(count)), handed to the run


def _setup_cost(pair: Any) -> float:
    hint = pair.setup_cost()
    return 0.0 if hint is None else float(hint)


def _release(subject: Any, count: int, build_budget: float) -> _Release | None:
    kind = release_kind(subject)
    if kind is None:
        return None
    if kind == "continuous":
        pair = continuous_loss_pair(subject)
        lo, hi = pair.loss_window(DEFAULT_TAIL_MASS)
        width = hi - lo
        directions = 1
        if not pair.symmetric:
            r_lo, r_hi = pair.reversed().loss_window(DEFAULT_TAIL_MASS)
            width = max(width, r_hi - r_lo)
            directions = 2
        return _Release(subject, count, "continuous", width, directions, 0, series=pair.has_series(), point_cost=point_cost(pair))
    pair = _resolve_pair(subject)
    counted = pair.loss_atom_count()
    atoms = int(counted) if counted is not None else _window_outputs(pair, DEFAULT_TAIL_MASS)
    kind = "atoms" if counted is not None else "integer"
    setup = _setup_cost(pair)
    hint = pair.output_cost()
    per_output = float(hint) if hint is not None else COST_INTEGER_OUTPUT
    if setup + (COST_ATOM if kind == "atoms" else per_output) * atoms > build_budget:
        return _Release(subject, count, kind, 0.0, 2, atoms, setup=setup, output_cost=per_output)
    # cheap to build: build it now and read its lattice and span (the plan hands it to the run)
    pld = release_pld(subject, grid_for(count))
    span = pld.loss_span()
    lattice = pld.step if pld.discretisation == "exact lattice" else None
    support = pld.grid_size()
    return _Release(subject, count, kind, span, 2, atoms, lattice, support, output_cost=per_output, pld=pld)


#: standard deviations of the composed loss the one-pass window holds (measured ~9.8 at the
#: FFT pass's window tail) and points of the float quadrature of a release's loss moments
_CLT_SIGMAS = 10.0
_SPREAD_POINTS = 257
#: the spread is estimated (~15 ms each) for queries of at most this many distinct releases
_SPREAD_RELEASES = 8


class Memo:
    """A bounded memo of a pure function's values, keyed on every input (the least recently used
    leaves first): a hit returns what a fresh computation would. Owned by the object that uses it
    (:class:`PldRoute`), never a hand-off between two places."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict = OrderedDict()

    def get(self, key: Any) -> Any:
        """The value kept for ``key``, or None (an unhashable key is never kept)."""
        try:
            value = self._values.get(key)
        except TypeError:
            return None
        if value is not None:
            self._values.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> Any:
        try:
            self._values[key] = value
        except TypeError:
            return value
        self._values.move_to_end(key)
        while len(self._values) > self.size:
            self._values.popitem(last=False)
        return value

    def clear(self) -> None:
        self._values.clear()


def _loss_spread(subject: Any, pair: Any) -> float | None:
    """Float estimate of the standard deviation of a continuous release's privacy loss under P,
    from its survival function on the loss window (trapezoid rule; a size for the cost estimate
    only, ~15 ms, memoised). The composed window grows like sqrt(k) times it, which the Chernoff
    width misses when the RDP curve is a bound flat near alpha = 1 (a subsampled Gaussian with
    sigma = 0.3: width 94 from the curve, ~5,800 at 10^6 releases)."""
    hit = PldRoute.spreads.get(subject)
    if hit is not None:
        return hit
    from flint import arb

    try:
        lo, hi = pair.loss_window(DEFAULT_TAIL_MASS)
        ts = np.linspace(lo, hi, _SPREAD_POINTS)
        survival = np.array([float(x.mid()) for x in pair.survival_p_many([arb(float(t)) for t in ts])])
    except (ArithmeticError, ValueError, NotImplementedError, AttributeError, TypeError):
        return None
    if not np.all(np.isfinite(survival)):
        return None
    gaps = np.diff(ts)
    first = lo + float(np.sum(gaps * (survival[1:] + survival[:-1]) / 2))
    second = lo * lo + float(np.sum(gaps * (ts[1:] * survival[1:] + ts[:-1] * survival[:-1])))
    return PldRoute.spreads.put(subject, math.sqrt(max(second - first * first, 0.0)))


def _window_outputs(pair: IntegerPair, tail: float) -> int:
    lo, hi = pair.window(tail)
    return hi - lo + 1


def _composed_width(releases: list[_Release]) -> float | None:
    """Estimated width (in loss units) of the composed window: the Chernoff edges from the RDP
    curves (module docstring), or None when a curve has no float approximation."""
    alphas = 1.0 + np.geomspace(1e-9, 1e4, 400)
    total = np.zeros_like(alphas)
    for r in releases:
        if not isinstance(r.subject, Mechanism):  # a pair given as such: no curve to estimate with
            return None
        hint = r.subject.rdp_cost()
        if hint is not None and hint > COST_FIXED:  # its curve has an expensive setup: not for an estimate
            return None
        curve = r.subject.rdp()
        values = curve.approx(alphas) if curve is not None else None
        if values is None:
            return None
        values = np.where(np.isfinite(values), values, np.inf)
        total += r.count * (alphas - 1) * values
    log_tail = math.log(1 / _WINDOW_TAIL)
    with np.errstate(invalid="ignore", over="ignore"):
        upper = float(np.min((total + log_tail) / (alphas - 1)))
    mean = float(total[0] / (alphas[0] - 1))
    if not (math.isfinite(upper) and math.isfinite(mean)):
        return None
    return 2 * max(upper - mean, 0.0)


@dataclass(frozen=True)
class _Setting:
    """One way to run the route: grid step h (or the exact lattice), output-window tail, cost."""

    h: float
    tail: float
    cost: Cost
    points: int
    exact: bool

    def describe(self) -> str:
        grid = "exact lattice" if self.exact else f"grid h = {self.h:.3g} (connect-the-dots)"
        tail = "" if self.tail == DEFAULT_TAIL_MASS else f", output windows widened to tail mass {self.tail:.0e}"
        return f"{grid}{tail}; composed window ~{self.points:,} points"


def _own_grid(release: _Release, h: float) -> float:
    """The grid 2^j h a continuous release is built on at h (``AUTO_POINTS``, as
    :func:`~accounting._privacy_loss._pld_continuous.default_discretisation` places it)."""
    while release.width / h > AUTO_POINTS:
        h *= 2
    return h


def _estimate(releases: list[_Release], h: float, tail: float, width: float | None, lattice: bool) -> _Setting:
    """The cost of composing ``releases`` on the exact lattice of the (single) release, or on h."""
    build = 0.0
    points_single = 0
    powering = Cost(0.0)  # binary powering of the releases regridded onto h (COST_BINARY_POINT)
    total_count = sum(r.count for r in releases)
    for r in releases:
        if r.kind == "continuous":
            h_r = _own_grid(r, h)
            n = int(r.width / h_r) + 1
            if not lattice and h_r != h and r.count > 1:
                final = r.count * (int(r.width / h) + 1)
                powering = powering + Cost(COST_BINARY_POINT * final, BYTES_BINARY_POINT * final)
            if r.series and n >= 32:  # (fewer points are taken one by one)
                build += COST_SERIES_BLOCK * min(r.width / 0.2 + 20, n / 8) + (COST_SERIES_POINT + COST_MIRROR_POINT * (r.directions - 1)) * n
            else:
                # (the second direction of an asymmetric pair is the first's mirror image)
                build += (r.point_cost + COST_MIRROR_POINT * (r.directions - 1)) * n
            points_single = max(points_single, n)
        elif r.kind == "atoms":
            build += COST_ATOM * r.atoms
        else:
            outputs = r.atoms if tail == DEFAULT_TAIL_MASS else _window_outputs(_resolve_pair(r.subject), tail)
            build += r.output_cost * outputs + r.setup
        if r.width and not lattice:
            points_single = max(points_single, int(r.width / h) + 1)
    if width is None:  # no RDP approximation: the single windows grown like sqrt(k)
        width = max((r.width for r in releases), default=1.0) * 1.1 * math.sqrt(total_count) + 1.0
    if releases and all(r.spread is not None for r in releases):
        # the central-limit width of the composed loss; taken when it clearly exceeds the
        # Chernoff width (an RDP bound flat near alpha = 1 understates the spread)
        clt = 2 * _CLT_SIGMAS * math.sqrt(sum(r.count * r.spread**2 for r in releases)) + max(r.width for r in releases)  # type: ignore[operator]
        clt = min(clt, sum(r.count * r.width for r in releases))  # never wider than the k-fold sum of the windows
        if clt > 2 * width:
            width = clt
    step = releases[0].lattice if lattice else h
    points = max(int(width / step) + 1, points_single, 2)
    if lattice:
        points = min(points, releases[0].count * max(releases[0].support - 1, 1) + 1)
    if points > MAX_WINDOW:
        return _Setting(h, tail, Cost(math.inf, BYTES_PER_POINT * points), points, lattice)
    passes = 2 if any(r.directions == 2 for r in releases) else 1
    compose = COST_FIXED + COST_FFT_POINT * points * math.log2(points) * passes
    total = Cost(build + compose, BYTES_PER_POINT * points) + Cost(powering.seconds * passes, powering.bytes)
    return _Setting(h, tail, total, points, lattice)


class PldRoute:
    """The PLD route (module docstring). ``surrogate`` maps the query's releases to the ones
    whose PLD is built (the optimal-composition route builds randomized responses); ``outcomes``
    (the optimal-composition route) is put in its records.

    Its memos (class-wide, bounded, keyed on every input): ``composed``, the composed PLDs (a
    report asking several deltas, a calibration, compose once; :func:`pld_for_parts`), and
    ``spreads``, the loss spreads of the cost estimate. What planning built for one query (the
    releases' PLDs) is not a memo: the plan hands it to the run (``Plan.prepared``)."""

    composed = Memo(8)
    spreads = Memo(256)

    def __init__(self, name: str = "pld", surrogate=None, label: str = "privacy-loss distribution", exact_for_lattice: bool = True,
                 outcomes: int | None = None) -> None:
        self.name = name
        self._surrogate = surrogate
        self._label = label
        self._exact_for_lattice = exact_for_lattice
        self._outcomes = outcomes

    def _releases(self, query: Query) -> list[tuple[Any, int]] | NotApplicable:
        if self._surrogate is None:
            return list(query.parts)
        return self._surrogate(query)

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable:
        parts = self._releases(query)
        if isinstance(parts, NotApplicable):
            return parts
        releases = []
        for subject, count in parts:
            r = _release(subject, count, 0.02 * budget)
            if r is None:
                name = subject.describe() if isinstance(subject, (Mechanism, RDP)) else type(subject).__name__
                return NotApplicable(self.name, f"{name} has no privacy-loss distribution (no output pair, no monotone privacy loss)")
            releases.append(r)
        if len(releases) <= _SPREAD_RELEASES and all(r.kind == "continuous" for r in releases):
            releases = [dataclasses.replace(r, spread=_loss_spread(r.subject, continuous_loss_pair(r.subject))) for r in releases]
        total = sum(r.count for r in releases)
        width = _composed_width(releases)
        h = grid_for(total)
        # a continuous release whose window holds more than AUTO_POINTS points at h is built on
        # 2^j h (:func:`_own_grid`); composed on h its atoms stay on 2^j h, so a grid finer than
        # every release's own adds no information, only points (cost, and the rounding of the
        # composition and of the regridded powering: PoissonSampled(Gaussian(0.3), 0.01) x 16 at
        # h = 1e-4 gave eps 16.44206 in 2.3 CPU s and 0.66 GB, on its own 2e-4 16.44167 in 0.9 s)
        own = [_own_grid(r, h) for r in releases if r.kind == "continuous"]
        if own and len(own) == len(releases):
            h = max(h, min(own))
        options = []
        if len(releases) == 1 and releases[0].lattice is not None:
            options.append(_estimate(releases, h, DEFAULT_TAIL_MASS, width, True))
        options.append(_estimate(releases, h, DEFAULT_TAIL_MASS, width, False))
        # coarser grids first (they cut the composition and the continuous builds), then wider
        # output windows (they cut the integer builds; the mass left out goes to +inf, so it
        # stays a millionth of delta per release at most)
        def fits(option: _Setting) -> bool:
            return option.cost.seconds <= budget and option.cost.bytes <= query.memory_budget

        h_try = h
        while not fits(options[-1]) and h_try * 2 <= MAX_SPREAD_STEP:
            h_try *= 2
            options.append(_estimate(releases, h_try, DEFAULT_TAIL_MASS, width, False))
        for tail in _TAIL_STEPS[1:]:
            # (a delta query has no delta to keep the widened tails below: it keeps the default)
            if (fits(options[-1]) or not any(r.kind == "integer" for r in releases) or query.asks_delta
                    or tail * total > query.delta * 1e-6):
                break
            options.append(_estimate(releases, options[-1].h, tail, width, False))
        chosen = next((o for o in options if fits(o)), min(options, key=lambda o: (o.cost.bytes > query.memory_budget, o.cost.seconds)))
        exact = chosen.exact and self._exact_for_lattice
        if not query.include_pld:
            return Plan(self.name, lambda left: query.blank(self.name, "switched off"), chosen.cost, exact, setting=chosen.describe(),
                        how="include_pld=True (CLI: without --no-pld)", off="switched off (include_pld=False; CLI: --no-pld)")
        coarsened = "" if chosen is options[0] else f"; the default ({options[0].describe()}) would cost {options[0].cost}"
        # the PLDs built while planning, each at grid_for(count) with the default tail: the run uses
        # them where its setting asks for that very PLD (a single release on its grid or lattice)
        prepared = tuple((r.subject, grid_for(r.count), DEFAULT_TAIL_MASS, r.pld) for r in releases if r.pld is not None)
        return Plan(
            self.name,
            functools.partial(self._run, tuple(parts), chosen, query, exact, prepared),
            chosen.cost,
            exact,
            setting=chosen.describe() + coarsened,
            how="" if not coarsened else (f"time_budget={math.ceil(options[0].cost.seconds * 1.2) + 1} runs it on h = {h:.3g}" if math.isfinite(options[0].cost.seconds)
                                          else f"no time budget runs it on h = {h:.3g} (the composed window exceeds one FFT pass)"),
            prepared=prepared,
        )

    def _run(self, parts: tuple, setting: _Setting, query: Query, exact: bool, prepared: tuple, left: float) -> Result:
        composed = pld_for_parts(parts, None if setting.exact else setting.h, setting.tail, on_grid=not setting.exact, prepared=prepared)
        result = composed.delta(query.epsilon) if query.asks_delta else composed.epsilon(query.delta)
        on_lattice = result.discretisation == "exact lattice"
        grid = "exact lattice" if on_lattice else f"grid h = {_grid_text(result.discretisation)}, connect-the-dots"
        return Result(
            result.epsilon,
            result.delta,
            self.name,
            None,
            f"{self._label}, {grid}; worse direction {result.direction}; +inf atom {result.infinite_loss_mass:.2g} (infinite losses), "
            f"truncated mass {result.truncated_mass:.2g} (in delta){_exactness(on_lattice and self._exact_for_lattice, result)}",
            # exact only when the lattice PLD's truncations could not have moved the answer
            exact=on_lattice and self._exact_for_lattice and bool(result.truncation_negligible),
            grid=None if on_lattice else float(result.discretisation),
            outcomes=self._outcomes,
        )


def _exactness(claimable: bool, result: Any) -> str:
    if not claimable or result.truncation_negligible:
        return ""
    return f"; not exact: the truncated mass may move it by more than {EXACT_TOLERANCE:g} relative"


def _grid_text(discretisation: Any) -> str:
    return f"{discretisation:.3g}" if isinstance(discretisation, float) else str(discretisation)


def _composed(parts: tuple, h: float, tail: float, lower_bound: bool, on_grid: bool, prepared: tuple) -> PrivacyLossDistribution:
    out = None
    for subject, count in parts:
        # a release the plan built (the same subject, grid and tail) is used as it is
        pld = next((p for s, g, t, p in prepared if s is subject and g == h and t == tail and not lower_bound), None)
        if pld is None:
            pld = release_pld(subject, h, tail_mass=tail, lower_bound=lower_bound)
        if on_grid and pld.discretisation != h:  # an exact lattice (or a coarsened continuous grid) put on the plan's grid
            pld = pld.regrid(h)
        pld = pld.self_compose(count) if count > 1 else pld
        out = pld if out is None else out.compose(pld)
    assert out is not None
    return out


def pld_for_parts(parts: tuple, h: float | None = None, tail: float = DEFAULT_TAIL_MASS, *, lower_bound: bool = False,
                  on_grid: bool = False, prepared: tuple = ()) -> PrivacyLossDistribution:
    """The composed PLD of ((release, count), ...) as the PLD route builds it: each release on
    its exact lattice if it has one, else on the grid h (:func:`~accounting._privacy_loss._pld.grid_for` of the
    total unless given); ``on_grid=True`` puts every release on h (a coarsened plan);
    ``lower_bound=True`` adds the optimistic twin; ``prepared`` holds releases already built
    ((subject, h, tail, PLD), from the route's plan). Memoised (:attr:`PldRoute.composed`: a
    report asking several deltas, a calibration, compose it once)."""
    parts = tuple((s, int(n)) for s, n in parts)
    if h is None:
        h = grid_for(sum(n for _, n in parts))
    key = (parts, h, tail, lower_bound, on_grid)
    hit = PldRoute.composed.get(key)
    if hit is not None:
        return hit
    return PldRoute.composed.put(key, _composed(parts, h, tail, lower_bound, on_grid, prepared))
