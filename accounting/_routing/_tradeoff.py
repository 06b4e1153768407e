"""Risk as people read it: the trade-off curve (f-DP), the attack advantage and TPR at a given FPR.

What is computed
----------------
A membership (or attribute) attack on a release is a test of H0: "the data set is D" against
H1: "it is D'", D and D' neighbours. A test phi (the probability of saying D') has type I error
alpha = E_P[phi] (P = M(D)) -- its false-positive rate, FPR -- and type II error beta =
1 - E_Q[phi] (Q = M(D')), so its true-positive rate is TPR = 1 - beta. The trade-off function
(Dong, Roth & Su 2022, "Gaussian differential privacy") is

    T(P, Q)(alpha) = inf { beta_phi : alpha_phi <= alpha },

the least type II error any test reaches at type I error alpha: the curve an attacker cannot get
below. A mechanism is f-DP when T(M(D), M(D')) >= f for every neighbouring pair.

From the privacy profile
------------------------
For every event S, (eps, delta)-DP gives Q(S) <= e^eps P(S) + delta and P(S^c) <= e^eps Q(S^c)
+ delta (both directions: the accountant's delta(eps) is the larger of its two hockey-stick
divergences). With S the rejection region of phi, Q(S) = 1 - beta and P(S) = alpha, so the first
reads 1 - beta <= e^eps alpha + delta, i.e. beta >= 1 - delta - e^eps alpha; with P(S^c) = 1 - alpha
and Q(S^c) = beta the second reads 1 - alpha <= e^eps beta + delta, i.e. beta >= e^-eps (1 - delta -
alpha). Since beta >= 0 as well, every (eps, delta) pair the mechanism satisfies gives

    beta >= f_{eps,delta}(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)),

and a mechanism that is (eps, delta(eps))-DP for every eps >= 0 is f-DP with

    f(alpha) = sup_{eps >= 0} f_{eps, delta(eps)}(alpha)        (Dong, Roth & Su 2022: the primal-dual view of f-DP),

which equals T(P, Q) itself when the pair is symmetric (the Gaussian, Laplace and randomized
response pairs): for the Gaussian the eps at which 1 - delta(eps) - e^eps alpha touches the curve
is the log-likelihood threshold of the Neyman-Pearson test of level alpha.

Which side is certified, and why
--------------------------------
:func:`tradeoff_curve` reads delta(eps) off the *certified* (pessimistic) PLD the planner's PLD
route builds (:func:`accounting._routing._pld_route.pld_for_parts`), at a finite grid of eps starting at 0.
f_{eps,delta} is non-increasing in delta, a finite grid's sup is at most the sup over all eps, and
every float operation below is rounded in the direction that lowers the result, so

    ``type_ii(alpha)`` <= the true f(alpha):  a certified LOWER bound of the type II error,

the privacy-relevant side: no attacker's test has a smaller type II error (a larger TPR) at that
FPR, whatever the grid. ``tpr(fpr) = 1 - type_ii(fpr)`` is a certified upper bound on any attack's
TPR at that FPR, and ``advantage`` a certified upper bound on max (TPR - FPR) over all tests, which
is the total variation distance delta(0): it is the least, over the profile's points, of the
advantage (eps, delta) allows, delta + (1 - delta) (e^eps - 1) / (e^eps + 1), rounded up (the
eps = 0 point gives delta(0) itself).

The other side is a reading aid, not a guarantee: from the *optimistic* twin of the same PLD (a
certified lower bound delta_lo(eps) of the true profile) and monotonicity between grid points --
for eps in [e_i, e_{i+1}], delta(eps) >= delta_lo(e_{i+1}) and e^eps >= e^{e_i} -- the sup over
*every* eps >= 0 is at most ``type_ii_upper(alpha)``. So the true f of the profile lies in
[type_ii, type_ii_upper]; for a symmetric pair that is the pair's trade-off, and 1 - type_ii_upper
is a TPR some test reaches. The gap is the certification margin (the PLD's grid and truncation)
plus the eps grid's coarseness.

The same profile machinery draws an accountant's *claim* (:meth:`TradeOffCurve.from_approx_dp`,
one (eps, delta) point: f_{eps,delta} itself) and an RDP claim (:meth:`TradeOffCurve.from_rdp`,
Mironov's conversion delta(eps) = exp((a - 1)(eps_a - eps)) at each order a on a grid of eps:
valid, not tight); the audit report's HTML page (issue 33) draws its claim curves with these.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from flint import arb

from .._core._certified import lower_float, upper_float
from .._core._validation import AccountingError, check_positive_int

__all__ = ["DEFAULT_FPRS", "TradeOffCurve", "TradeOffPoint", "tradeoff_curve"]

#: the type I errors (FPRs) a report lists by default
DEFAULT_FPRS = (1e-4, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5)
#: grid points of eps a PLD curve is read at by default, and at most (4,096 points: ~2.6 CPU s)
DEFAULT_POINTS = 256
MAX_POINTS = 4096
#: the eps grid ends where the certified delta falls below this (or at the largest finite loss)
_GRID_END_DELTA = 1e-12


def _up(x: np.ndarray) -> np.ndarray:
    """Every entry moved up by one ulp: an upper bound of the exact result of one IEEE operation."""
    return np.nextafter(x, np.inf)


def _down(x: np.ndarray) -> np.ndarray:
    return np.nextafter(x, -np.inf)


def _alphas(name: str, value: Any) -> tuple[np.ndarray, bool]:
    """``value`` as a float array of probabilities in [0, 1] (and whether it was a scalar)."""
    scalar = np.ndim(value) == 0
    try:
        a = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError):
        raise AccountingError(name, value, "a probability in [0, 1] or an array of them") from None
    if isinstance(value, bool) or a.ndim != 1 or not np.all((a >= 0) & (a <= 1)):
        bad = value if scalar else next((float(x) for x in a if not (0 <= x <= 1)), value)
        raise AccountingError(name, bad, "a probability in [0, 1]")
    return a, scalar


def _out(values: np.ndarray, scalar: bool) -> Any:
    return float(values[0]) if scalar else values


def _exp_bounds(eps: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Directed float bounds of e^eps and e^-eps: (e^eps down, e^eps up, e^-eps down, e^-eps up)."""
    rows = []
    for e in eps:
        if math.isinf(e):
            rows.append((math.inf, math.inf, 0.0, 0.0))
            continue
        ball, inv = arb(e).exp(), (-arb(e)).exp()
        rows.append((lower_float(ball), upper_float(ball), lower_float(inv), upper_float(inv)))
    a = np.array(rows, dtype=np.float64).reshape(-1, 4)
    return a[:, 0], a[:, 1], a[:, 2], a[:, 3]


def _profile_lower(eps: np.ndarray, delta_up: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """max(0, max_i f_{eps_i, delta_i}(alpha)), every operation rounded down: a lower bound of the
    sup over the profile's points (module docstring)."""
    _, e_up, inv_down, _ = _exp_bounds(eps)
    a = alpha[None, :]
    one_minus_delta = _down(1.0 - delta_up)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        # e^eps alpha rounded up; 0 at alpha = 0 for a finite eps even when e^eps overflows a float
        product = np.where((a == 0) & np.isfinite(eps)[:, None], 0.0, _up(e_up[:, None] * a))
        first = _down(one_minus_delta - product)  # 1 - delta - e^eps alpha
        first = np.where(np.isnan(first), -np.inf, first)  # inf * 0 (an infinite eps at alpha 0): no information
        rest = _down(one_minus_delta - a)  # 1 - delta - alpha
        second = np.where(rest > 0, _down(inv_down[:, None] * rest), 0.0)  # e^-eps (1 - delta - alpha)
    best = np.maximum(first.max(axis=0), second.max(axis=0))
    return np.maximum(best, 0.0)


#: slack added to the optimistic side for the float rounding of its chords (a reading aid)
_CHORD_SLACK = 1e-12


def _profile_upper(eps: np.ndarray, delta_low: np.ndarray, delta_up: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """An upper bound of sup over *every* eps >= 0 of f_{eps, delta(eps)}(alpha), given bounds
    delta_low <= delta <= delta_up at the sorted grid eps.

    In t = e^eps the profile H(t) = delta(log t) is convex and non-increasing (each direction's
    hockey-stick divergence sup_S Q(S) - t P(S) is a sup of affine functions of t). So on
    [t_i, t_{i+1}] it is at least delta_low[i+1] (monotone), at least the chord through
    (t_{i-1}, delta_up[i-1]) and (t_i, delta_low[i]) extended to the right, and at least the chord
    through (t_{i+1}, delta_low[i+1]) and (t_{i+2}, delta_up[i+2]) extended to the left (a convex
    function lies above its chords' extensions; the bounds only lower them); beyond the last point,
    at least max(0, the last chord extended). Both branches, 1 - H(t) - t alpha and
    (1 - H(t) - alpha) / t, are then bounded by functions that are monotone on each piece of that
    piecewise-linear minorant, so their sup is at a piece's end: the interval's ends or the
    pieces' intersections. Floats throughout, plus :data:`_CHORD_SLACK`: the other side of the
    sandwich, a reading aid, not the certified one."""
    t = np.exp(eps)
    n = len(t)
    cand_t, lines = [], []
    for i in range(n):
        last = i == n - 1
        lo, hi = t[i], (t[i] if last else t[i + 1])
        pieces = [(0.0, 0.0 if last else float(delta_low[i + 1]))]  # (slope, intercept): H(t) >= slope t + intercept
        if i >= 1 and t[i] > t[i - 1]:
            m = (delta_low[i] - delta_up[i - 1]) / (t[i] - t[i - 1])
            pieces.append((float(m), float(delta_low[i] - m * t[i])))
        if not last and i + 2 < n and t[i + 2] > t[i + 1]:
            m = (delta_up[i + 2] - delta_low[i + 1]) / (t[i + 2] - t[i + 1])
            pieces.append((float(m), float(delta_low[i + 1] - m * t[i + 1])))
        points = {lo, hi}
        for j in range(len(pieces)):
            for k in range(j + 1, len(pieces)):
                (m1, c1), (m2, c2) = pieces[j], pieces[k]
                if m1 != m2:
                    x = (c2 - c1) / (m1 - m2)
                    if lo < x < hi or (last and x > lo):
                        points.add(float(x))
        for x in points:
            cand_t.append(x)
            lines.append(max(m * x + c for m, c in pieces))
    x = np.asarray(cand_t)[:, None]
    h = np.clip(np.asarray(lines), 0.0, 1.0)[:, None]
    a = alpha[None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        first = 1.0 - h - x * a
        second = (1.0 - h - a) / x
    best = np.maximum(np.nanmax(first, axis=0), np.nanmax(second, axis=0))
    return np.clip(best + _CHORD_SLACK, 0.0, None)


@dataclass(frozen=True)
class TradeOffPoint:
    """The curve at one FPR: certified ``type_ii_lower`` (no test's type II error is smaller) and
    ``tpr_upper`` = 1 - type_ii_lower (no test's TPR is larger); ``type_ii_upper`` / ``tpr_lower``
    are the other side of the sandwich (None without the optimistic profile)."""

    fpr: float
    type_ii_lower: float
    tpr_upper: float
    type_ii_upper: float | None = None
    tpr_lower: float | None = None

    def __post_init__(self) -> None:
        _alphas("fpr", self.fpr)
        for name, value in (("type_ii_lower", self.type_ii_lower), ("tpr_upper", self.tpr_upper),
                            ("type_ii_upper", self.type_ii_upper), ("tpr_lower", self.tpr_lower)):
            if value is not None:
                _alphas(name, value)
        if self.type_ii_upper is not None and self.type_ii_upper < self.type_ii_lower:
            raise AccountingError("type_ii_upper", self.type_ii_upper, f"a probability >= type_ii_lower = {self.type_ii_lower!r}")

    def as_dict(self) -> dict:
        return {"fpr": self.fpr, "type_ii_lower": self.type_ii_lower, "tpr_upper": self.tpr_upper,
                "type_ii_upper": self.type_ii_upper, "tpr_lower": self.tpr_lower}


@dataclass(frozen=True)
class TradeOffCurve:
    """A certified trade-off curve, held as the privacy profile it is read from.

    ``epsilons`` (non-decreasing, >= 0) and ``deltas`` (certified upper bounds of delta(eps), the
    larger of both directions) are the profile; ``deltas_lower`` (optional) certified lower bounds
    of the same profile, from the optimistic PLD. ``source`` says where the profile came from.
    Evaluate at any FPR (module docstring: which side is certified):

    - :meth:`type_ii` -- certified lower bound of the least type II error at type I error alpha;
    - :meth:`tpr` -- certified upper bound of any attack's TPR at that FPR (1 - type_ii);
    - :attr:`advantage` -- certified upper bound of max (TPR - FPR), the total variation distance;
    - :meth:`type_ii_upper`, :meth:`tpr_lower`, :attr:`advantage_lower` -- the other side of the
      sandwich, from ``deltas_lower`` (None without it): a reading aid, not a guarantee.
    """

    epsilons: tuple[float, ...]
    deltas: tuple[float, ...]
    deltas_lower: tuple[float, ...] | None = None
    source: str = ""
    #: mu of the mu-GDP closed form when every release is a Gaussian (for comparison: its curve
    #: G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu) is the exact one), else None
    gaussian_mu: float | None = None

    def __post_init__(self) -> None:
        eps = tuple(float(e) for e in self.epsilons)
        deltas = tuple(float(d) for d in self.deltas)
        if len(eps) == 0:
            raise AccountingError("epsilons", self.epsilons, "a non-empty sequence of epsilons >= 0")
        if len(deltas) != len(eps):
            raise AccountingError("deltas", self.deltas, f"one delta per epsilon ({len(eps)} values)")
        for e in eps:
            if not (e >= 0):
                raise AccountingError("epsilons", e, "epsilons >= 0 (inf allowed)")
        if any(b < a for a, b in zip(eps, eps[1:])):
            raise AccountingError("epsilons", self.epsilons, "a non-decreasing sequence of epsilons")
        for d in deltas:
            if not (0 <= d <= 1):
                raise AccountingError("deltas", d, "probabilities in [0, 1]")
        object.__setattr__(self, "epsilons", eps)
        object.__setattr__(self, "deltas", deltas)
        if self.deltas_lower is not None:
            low = tuple(float(d) for d in self.deltas_lower)
            if len(low) != len(eps):
                raise AccountingError("deltas_lower", self.deltas_lower, f"one delta per epsilon ({len(eps)} values)")
            for d, u in zip(low, deltas):
                if not (0 <= d <= u):
                    raise AccountingError("deltas_lower", d, f"a probability in [0, {u!r}] (at most the upper delta)")
            object.__setattr__(self, "deltas_lower", low)
        if self.gaussian_mu is not None and not (isinstance(self.gaussian_mu, (int, float)) and self.gaussian_mu >= 0):
            raise AccountingError("gaussian_mu", self.gaussian_mu, "a real number >= 0, or None")

    # ---- constructors -----------------------------------------------------------------------

    @classmethod
    def from_approx_dp(cls, epsilon: float, delta: float) -> "TradeOffCurve":
        """The trade-off an (epsilon, delta)-DP claim certifies: f_{eps,delta} (one profile point)."""
        if not (isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and epsilon >= 0):
            raise AccountingError("epsilon", epsilon, "a real number >= 0 (inf allowed)")
        if not (isinstance(delta, (int, float)) and not isinstance(delta, bool) and 0 <= delta <= 1):
            raise AccountingError("delta", delta, "a probability in [0, 1]")
        return cls((float(epsilon),), (float(delta),), source=f"({epsilon:g}, {delta:g})-DP")

    @classmethod
    def from_rdp(cls, orders: Sequence[float], rdp_epsilons: Sequence[float], *, points: int = 64) -> "TradeOffCurve":
        """The trade-off an RDP claim implies through Mironov's conversion (Prop. 3): at each order
        a > 1 with finite eps_a and each eps on a grid of ``points`` from 0 to eps_a + 12 / (a - 1),
        delta(eps) = exp(min(0, (a - 1)(eps_a - eps))), rounded up; the profile keeps the least delta
        found at each eps (valid, not tight: an (eps, delta) pair at any order is a guarantee)."""
        check_positive_int("points", points)
        if len(orders) != len(rdp_epsilons):
            raise AccountingError("rdp_epsilons", rdp_epsilons, f"one value per order ({len(orders)} orders)")
        best: dict[float, float] = {}
        for a, ea in zip(orders, rdp_epsilons):
            a, ea = float(a), float(ea)
            if not (a > 1 and math.isfinite(a)):
                raise AccountingError("orders", a, "finite Renyi orders > 1")
            if math.isnan(ea) or ea < 0:
                raise AccountingError("rdp_epsilons", ea, "RDP epsilons >= 0 (inf allowed)")
            if not math.isfinite(ea):
                continue
            for e in np.linspace(0.0, ea + 12.0 / (a - 1), points):
                e = float(e)
                d = min(1.0, upper_float((arb(a - 1) * (arb(ea) - arb(e))).exp()))
                best[e] = min(best.get(e, 1.0), d)
        if not best:
            return cls((0.0,), (1.0,), source="RDP claim with no finite order: no information")
        eps = sorted(best)
        return cls(tuple(eps), tuple(best[e] for e in eps), source=f"RDP at {len(orders)} orders, Mironov's conversion")

    # ---- evaluation -------------------------------------------------------------------------

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.epsilons, dtype=np.float64), np.asarray(self.deltas, dtype=np.float64)

    def type_ii(self, alpha: Any) -> Any:
        """Certified lower bound of the least type II error at type I error ``alpha`` (in [0, 1];
        a float for a float, an array for an array)."""
        a, scalar = _alphas("alpha", alpha)
        eps, deltas = self._arrays()
        return _out(np.minimum(_profile_lower(eps, deltas, a), 1.0 - a), scalar)

    def type_ii_upper(self, alpha: Any) -> Any:
        """Upper bound of the profile's f at ``alpha`` (None without ``deltas_lower``)."""
        if self.deltas_lower is None:
            return None
        a, scalar = _alphas("alpha", alpha)
        eps = np.asarray(self.epsilons, dtype=np.float64)
        upper = _profile_upper(eps, np.asarray(self.deltas_lower, dtype=np.float64), np.asarray(self.deltas, dtype=np.float64), a)
        # never below the certified lower bound, never above the trivial curve 1 - alpha
        upper = np.maximum(np.minimum(upper, _up(1.0 - a)), _profile_lower(eps, np.asarray(self.deltas), a))
        return _out(np.minimum(upper, 1.0), scalar)

    def tpr(self, fpr: Any) -> Any:
        """Certified upper bound of any attack's TPR at FPR ``fpr``: 1 - type_ii(fpr), rounded up."""
        a, scalar = _alphas("fpr", fpr)
        return _out(np.minimum(_up(1.0 - np.atleast_1d(self.type_ii(a))), 1.0), scalar)

    def tpr_lower(self, fpr: Any) -> Any:
        """1 - type_ii_upper(fpr), rounded down (None without ``deltas_lower``)."""
        a, scalar = _alphas("fpr", fpr)
        upper = self.type_ii_upper(a)
        return None if upper is None else _out(np.maximum(_down(1.0 - upper), 0.0), scalar)

    @property
    def advantage(self) -> float:
        """Certified upper bound of max over tests of TPR - FPR (the total variation distance):
        min over the profile of delta + (1 - delta) tanh(eps / 2), rounded up."""
        best = 1.0
        for e, d in zip(self.epsilons, self.deltas):
            if math.isinf(e):
                continue
            best = min(best, upper_float(arb(d) + (1 - arb(d)) * (arb(e) / 2).tanh()))
        return best

    @property
    def advantage_lower(self) -> float | None:
        """A lower bound of the total variation distance: delta_lower at eps = 0 (None when the
        profile has no optimistic side or no eps = 0 point)."""
        if self.deltas_lower is None or self.epsilons[0] != 0:
            return None
        return self.deltas_lower[0]

    def points(self, fprs: Sequence[float] = DEFAULT_FPRS) -> tuple[TradeOffPoint, ...]:
        """The curve at each FPR of ``fprs``."""
        a, _ = _alphas("fprs", list(fprs))
        low, tpr = np.atleast_1d(self.type_ii(a)), np.atleast_1d(self.tpr(a))
        high = self.type_ii_upper(a)
        tpr_low = self.tpr_lower(a)
        return tuple(
            TradeOffPoint(float(x), float(low[i]), float(tpr[i]), None if high is None else float(high[i]),
                          None if tpr_low is None else float(tpr_low[i]))
            for i, x in enumerate(a)
        )

    def as_dict(self, fprs: Sequence[float] = DEFAULT_FPRS) -> dict:
        """JSON-ready: the advantage, the curve at ``fprs`` and the profile it was read from."""
        return {
            "source": self.source,
            "certified_side": "type_ii_lower / tpr_upper / advantage (no attack does better); the *_lower/_upper twins are a reading aid",
            "gaussian_mu": self.gaussian_mu,
            "advantage": self.advantage,
            "advantage_lower": self.advantage_lower,
            "points": [p.as_dict() for p in self.points(fprs)],
            "profile": {"epsilons": list(self.epsilons), "deltas": list(self.deltas),
                        "deltas_lower": None if self.deltas_lower is None else list(self.deltas_lower)},
        }


def _read_profile(pld: Any, grid: Sequence[float]) -> tuple[list[float], list[float | None]]:
    """Certified (upper, lower) delta(eps) at every eps of ``grid``: the larger over the PLD's
    directions, as :meth:`~accounting.PrivacyLossDistribution.delta` reads them, except that a side
    composed in one FFT pass is read from its *untilted* pass for every eps. delta() tilts a pass
    per eps to keep the FFT error relative to a tiny delta (0.05-0.15 s each); the trade-off curve
    needs delta only to an absolute error far below its own (measured <= 5e-12 from the tilted
    reading on the DP-SGD and composed Gaussian cases), and the untilted pass is one pass for all
    eps. Every pass bounds the same dominating measure, so the reading stays certified."""
    from .._core._certified import exact, working_precision
    from .._privacy_loss._pld import _RecipeEvaluator

    with working_precision(pld._precision):
        sides = [(ev.at(0.0) if isinstance(ev, _RecipeEvaluator) else ev, low) for _, ev, low in pld._evaluators()]
        uppers: list[float] = []
        lowers: list[float | None] = []
        for e in grid:
            ball = exact(float(e))
            uppers.append(min(1.0, max(up.certified(ball) for up, _ in sides)))
            lows = [low.certified(ball) for _, low in sides if low is not None]
            lowers.append(max(lows) if len(lows) == len(sides) else None)
    return uppers, lowers


def _shuffled_pld(parts: tuple, discretisation: float | None) -> Any:
    """k rounds of one shuffled release (:mod:`accounting._amplification._shuffling`): the PLD of its clone pair,
    the dominating pair its certified routes use (FMT23's stronger clone where the randomizer
    admits it, else FMT21's), with the optimistic twin, on the shuffle routes' grid; None for any
    other query. The optimistic side is then the clone pair's curve, not the mechanism's own."""
    from .._amplification._shuffling import ShuffledLDP, ShuffledRandomizedResponse

    if len(parts) != 1 or not isinstance(parts[0][0], (ShuffledLDP, ShuffledRandomizedResponse)):
        return None
    return _clone_pair_pld(parts[0][0], parts[0][1], discretisation)


@functools.lru_cache(maxsize=8)
def _clone_pair_pld(subject: Any, k: int, discretisation: float | None) -> Any:
    """:func:`_shuffled_pld`'s PLD, memoised (a report asking several FPRs or a figure builds it once)."""
    from .._privacy_loss._pld import PrivacyLossDistribution
    from .._amplification._shuffling import _clone, _clone_pair, _group_width, _pld_h

    variant = "fmt23" if "fmt23" in subject.clone_variants() else "fmt21"
    clone = _clone(subject.epsilon0, subject.n, variant)
    h = _pld_h(k) if discretisation is None else discretisation
    pld = PrivacyLossDistribution.from_pair(_clone_pair(clone, _group_width(clone)), discretisation=h, lower_bound=True, tail_mass=1e-12)
    return pld.self_compose(k) if k > 1 else pld


def tradeoff_curve(subject: Any, *, compose: int = 1, epsilons: Sequence[float] | None = None, points: int = DEFAULT_POINTS,
                   discretisation: float | None = None) -> TradeOffCurve:
    """The certified trade-off curve of ``compose`` releases of ``subject`` (a mechanism, a list of
    them, a :func:`~accounting.from_dp_event` tree, a subsampled or shuffled release: anything the
    planner's PLD route takes), read off the PLD that route builds with its optimistic twin.

    The profile is read at ``epsilons`` (0 is added) or, by default, at ``points`` evenly spaced eps
    from 0 to where the certified delta falls below 1e-12; more points tighten the curve (never
    loosen its certification), each is one certified reading of the composed PLD (one FFT pass serves every eps).
    ``discretisation`` is the PLD grid h (default: the route's grid for the number of releases).
    """
    from .._mechanisms._analytic_gaussian import gdp_mu
    from .._privacy_loss._pld import release_kind
    from ._pld_route import pld_for_parts
    from ._routes import _describe, _is_gaussian, query_of

    check_positive_int("points", points)
    if not 2 <= points <= MAX_POINTS:
        raise AccountingError("points", points, f"an integer in [2, {MAX_POINTS}]")
    query = query_of(subject, 0.5, compose=compose)
    shuffled = _shuffled_pld(query.parts, discretisation)
    missing = [s for s, _ in query.parts if release_kind(s) is None]
    if missing and shuffled is None:
        name = _describe(missing[0])
        raise AccountingError("subject", name, "releases that have a privacy-loss distribution (an output pair or a monotone loss), "
                              "or shuffled reports alone", "for an RDP or pure-DP guarantee use TradeOffCurve.from_rdp / from_approx_dp")
    pld = shuffled if shuffled is not None else pld_for_parts(query.parts, discretisation, lower_bound=True)
    if epsilons is None:
        end = pld.epsilon(_GRID_END_DELTA).epsilon
        if not math.isfinite(end):  # the +inf atom exceeds the floor: stop where delta stops falling much
            end = pld.epsilon(max(2 * pld.infinite_loss_mass, pld.infinite_loss_mass + 1e-9)).epsilon
        end = end if math.isfinite(end) and end > 0 else 1.0
        grid = [float(x) for x in np.linspace(0.0, end, points)]
    else:
        grid = sorted({0.0, *(float(e) for e in epsilons)})
        if len(grid) > MAX_POINTS:
            raise AccountingError("epsilons", f"{len(grid)} values", f"at most {MAX_POINTS} epsilons")
        for e in grid:
            if not (math.isfinite(e) and e >= 0):
                raise AccountingError("epsilons", e, "finite epsilons >= 0")
    uppers, lowers = _read_profile(pld, grid)
    # the profile is non-increasing in eps: a later (smaller) upper bound is no tighter than the
    # monotone envelope, and an earlier lower bound at least the later ones
    for i in range(len(grid) - 2, -1, -1):
        if lowers[i] is not None and lowers[i + 1] is not None:
            lowers[i] = max(lowers[i], lowers[i + 1])
    for i in range(1, len(grid)):
        uppers[i] = min(uppers[i], uppers[i - 1])
    low = None if any(x is None for x in lowers) else tuple(min(max(x, 0.0), u) for x, u in zip(lowers, uppers))
    releases = ", ".join(f"{n} x {_describe(s)}" for s, n in query.parts)
    grid_text = pld.discretisation if isinstance(pld.discretisation, str) else f"grid h = {pld.discretisation:.3g}"
    mu = None
    if all(_is_gaussian(s) for s, _ in query.parts):
        mu = float(gdp_mu((s.sensitivity, s.sigma, n) for s, n in query.parts).mid())
    if shuffled is not None:  # the optimistic side is the dominating pair's, not the mechanism's
        variant = "FMT23" if "fmt23" in query.parts[0][0].clone_variants() else "FMT21"
        releases += f" through its {variant} clone pair (a dominating pair: the optimistic side is the pair's curve)"
    return TradeOffCurve(tuple(grid), tuple(uppers), low, source=f"PLD of {releases} ({grid_text}), {len(grid)} eps from 0 to {grid[-1]:.4g}",
                         gaussian_mu=mu)
