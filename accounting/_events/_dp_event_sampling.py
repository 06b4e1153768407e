"""Certified routes for dp_accounting's two batch samplers that are not Poisson subsampling.

Both mechanisms below reduce, by conditioning and joint convexity, to a *disjoint union* of
Poisson-subsampled Gaussian pairs: a latent variable (which branch of the sampler ran) is
revealed, each branch is a pair the planner already certifies, and the union's PLD is the
weighted sum of the branches' -- :class:`MixedLossPair`. Revealing a variable can only help the
adversary, so the union dominates the mechanism (joint convexity of the hockey-stick divergence,
and of exp((alpha - 1) D_alpha) for the RDP curves); the weights are exact reals enclosed in Arb
balls (binomial tails by the regularised incomplete beta function), so every number stays a
certified upper bound.

``TruncatedSubsampledGaussianDpEvent(n, q, B, sigma)`` -- Poisson sampling with probability q from
n records, a batch larger than B cut to a uniform B-subset, a Gaussian sum of norm-1 records with
noise sigma (dp_accounting 0.6.0, arXiv:2508.15089). Neighbours: the record x* and the n - 1 others
(the larger dataset of an add/remove pair has n records, dp_accounting's reading:
K ~ Bin(n - 1, q) others are sampled). Branch on K:

- K <= B - 1 (probability 1 - t, t = P(Bin(n-1, q) >= B) = I_q(B, n - B)): nothing is cut, the
  release is the Poisson-subsampled Gaussian (q, sensitivity 1);
- K >= B (probability t): the batch without x* is a uniform B-subset T of the others whatever K is
  (a uniform B-subset of a uniform K-subset), and x* enters with probability
  q' = E[q B / (K + 1) | K >= B] = (B/n) P(Bin(n, q) >= B + 1) / t, in place of a uniform member j
  of T. Given (T, j) the pair is ((1 - q') N(f(T)) + q' N(f(T) - g_j + g_x*), N(f(T))) with
  |g_x* - g_j| <= 2: the Poisson-subsampled Gaussian of sensitivity 2 at rate q' (under
  ADD_OR_REMOVE_ONE). The curves increase with the rate, so q' is rounded up to a float.

dp_accounting builds the second branch from its REPLACE pair at sigma / 2 (shifts +-2 against each
other); under ADD_OR_REMOVE_ONE the branch above is an add/remove pair, tighter (the PLD test of
dp_accounting's suite reads 17.904330 at delta 1e-6; ours is below it, certified). Under REPLACE_ONE
(x* -> x', n records each) the branches are, given the others (and (T, j)), the pairs
((1 - r) N(0) + r N(u), (1 - r) N(0) + r N(w)) with |u|, |w| <= 1 (first: u = g_x*, w = g_x', r = q)
and <= 2 (second: u = g_x* - g_j, w = g_x' - g_j, r = q'); under REPLACE_SPECIAL (x* -> the special
record, value 0) the first is the add/remove pair (w = 0, as coded) and the second has u as
before, w = -g_j. Each is dominated by dp_accounting's REPLACE pair at the radius, i.e.
:class:`ReplaceOnePoissonGaussian` at sigma (radius 1) and sigma / 2 (radius 2): the proof in
:mod:`accounting._events._dp_event_mechanisms` (steps 1-3) takes any |u|, |w| <= R, in any
dimension; and that pair's divergences increase with the rate (P_v at rate r' < r is
(r'/r) P_v(r) + (1 - r'/r) N(0) on both sides: joint convexity), so q' rounded up is sound. Checked
against brute force in ``tests/test_replace_one_dominance.py``. The RDP curve there is the
joint-convexity bound (rigorous, looser).

``SampledWithReplacementDpEvent(n, m, event)`` -- m draws, uniform with replacement, from n records;
the event (a Gaussian, a composition of Gaussians: one effective Gaussian, or a Laplace: the same
argument in L1) is run on the drawn multiset. x* is drawn J ~ Bin(m, 1/n) times. Under ADD_OR_REMOVE_ONE (the larger dataset has n
records): the dataset without x* draws m uniform others, which is the law of the draws with x*
given J = 0; so D = (1 - g) P0 + g P1, D' = P0, g = P(J >= 1) = 1 - (1 - 1/n)^m. Given J = j >= 1,
couple the draws of D (m - j common others, j copies of x*) with those of D' (the same m - j and j
extra others): the sums differ by j g_x* - (sum of the extras), of norm <= 2j. Revealing (j, common,
extras) bounds the release by the disjoint union over j >= 1, weights P(J = j | J >= 1), of the
Poisson-subsampled Gaussian of sensitivity 2j at rate g -- in both directions (the standard
subsampling pair, each component dominated by its aligned worst case). The j beyond the last
kept component (their mass P(J > j_max) <= 1e-22) are a non-private part: delta 1 on that mass.
Under REPLACE_ONE / REPLACE_SPECIAL only the RDP route is certified here: revealing (j, common),
the two releases are N(c + j g_x*) and N(c + j g_x'), so exp((alpha - 1) D_alpha) <=
sum_j P(J = j) exp(alpha (alpha - 1) (2j)^2 / (2 sigma^2)) (joint convexity; no PLD pair is
claimed there).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, ctx

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP
from .._core._mechanism_base import Mechanism
from .._privacy_loss._pld_continuous import MonotoneLossPair, point_cost
from .._core._validation import AccountingError

__all__ = ["MixedLossPair", "SampledWithReplacementGaussian", "TruncatedPoissonGaussian"]

#: relations the mechanisms below take (dp_accounting's NeighboringRelation, lower case)
_RELATIONS = ("add_or_remove_one", "replace_one", "replace_special")

#: mass of the draw counts J left out of the union's components (a non-private part, in delta)
_DRAW_TAIL = 1e-22
#: further draw counts whose Gaussian RDP terms the curve sums exactly (beyond them: at j = m)
_TAIL_TERMS = 64


def _binomial_upper_tail(k: int, n: int, p: Fraction) -> arb:
    """P(Bin(n, p) >= k) as a ball at the working precision: I_p(k, n - k + 1), the regularised
    incomplete beta function (exact: 1 for k <= 0, 0 for k > n)."""
    if k <= 0:
        return arb(1)
    if k > n:
        return arb(0)
    if p == 1:
        return arb(1)
    if p == 0:
        return arb(0)
    value = exact(p).beta_lower(k, n - k + 1, regularized=True)
    if not value.is_finite():
        raise AccountingError("dataset_size", n, "a size whose binomial tail Arb can enclose")
    return value.intersection(arb(0).union(arb(1))) if bool(value.lower() < 0) or bool(value.upper() > 1) else value


class MixedLossPair(MonotoneLossPair):
    """A disjoint union of pairs: with weight w_i the release is pair i, and which one is revealed;
    plus an optional non-private part of weight ``infinite`` (P and Q disjoint there: delta 1 on
    it in both directions). Its hockey-stick is sum_i w_i delta_i(t) (+ the non-private weight),
    its survival functions the weighted sums; the loss of a point of part i is part i's loss.
    ``weights()`` returns the balls (w_1, ..., w_k, infinite) at the working precision (cached per
    precision); they contain the exact weights, so each value is a ball containing the exact one.
    """

    def __init__(self, parts: tuple, weights: Callable[[], tuple], label: str = "") -> None:
        if not parts:
            raise AccountingError("parts", parts, "at least one pair")
        self.parts = tuple(parts)
        self._weights_fn = weights
        self._cache: dict = {}
        self.symmetric = all(p.symmetric for p in self.parts)
        self.label = label

    def weights(self) -> tuple:
        key = ctx.prec
        if key not in self._cache:
            values = tuple(self._weights_fn())
            if len(values) != len(self.parts) + 1:
                raise AccountingError("weights", len(values), f"{len(self.parts) + 1} balls (one per part and the non-private weight)")
            self._cache[key] = values
        return self._cache[key]

    def _sum(self, values_per_part, infinite_term: bool):
        w = self.weights()
        rows = list(zip(*values_per_part))
        out = []
        for row in rows:
            total = arb(0)
            for weight, value in zip(w, row):
                total += weight * value
            if infinite_term:
                total += w[-1]
            out.append(total)
        return out

    def hockey_stick_many(self, ts: list[arb]) -> list[arb]:
        return self._sum([p.hockey_stick_many(ts) for p in self.parts], True)

    def hockey_stick_reverse_many(self, ts: list[arb]) -> list[arb]:
        return self._sum([p.hockey_stick_reverse_many(ts) for p in self.parts], True)

    def hockey_stick(self, t: arb) -> arb:
        return self.hockey_stick_many([t])[0]

    def hockey_stick_reverse(self, t: arb) -> arb:
        return self.hockey_stick_reverse_many([t])[0]

    def survival_p_many(self, ts: list[arb]) -> list[arb]:
        # P's non-private mass sits at loss +inf: above every t
        return self._sum([p.survival_p_many(ts) for p in self.parts], True)

    def survival_q_many(self, ts: list[arb]) -> list[arb]:
        # Q's non-private mass sits at loss -inf (Q > 0 where P = 0): below every t
        return self._sum([p.survival_q_many(ts) for p in self.parts], False)

    def survival_p(self, t: arb) -> arb:
        return self.survival_p_many([t])[0]

    def survival_q(self, t: arb) -> arb:
        return self.survival_q_many([t])[0]

    def loss_window(self, tail: float) -> tuple[float, float]:
        """The union of the parts' windows, part i's at tail / (k w_i) (a part of tiny weight needs
        a narrow window, or none once that share reaches 1/2; placement only: the mass outside goes
        to the +inf atom, or to the lowest grid point)."""
        with working_precision(None):
            w = [float(x.mid()) for x in self.weights()[:-1]]
        k = len(self.parts)
        lo, hi = math.inf, -math.inf
        for i, (part, weight) in enumerate(sorted(zip(self.parts, w), key=lambda pw: -pw[1])):
            share = tail / (k * weight) if weight > 0 else math.inf
            if share >= 0.5 and i > 0:
                continue
            a, b = part.loss_window(min(share, 0.5))
            lo, hi = min(lo, a), max(hi, b)
        return lo, hi

    # Taylor series of the union: the weighted sums of the parts' series (None if one has none)
    def has_series(self) -> bool:
        return all(p.has_series() for p in self.parts)

    def _series_sum(self, series, infinite_term: bool):
        if any(s is None for s in series):
            return None
        w = self.weights()
        total = series[0] * w[0]
        for weight, s in zip(w[1:], series[1:]):
            total = total + s * weight
        return total + w[-1] if infinite_term else total

    def hockey_stick_series(self, t):
        if not self.has_series():
            return None
        return self._series_sum([p.hockey_stick_series(t) for p in self.parts], True)

    def hockey_stick_reverse_series(self, t):
        if not self.has_series():
            return None
        return self._series_sum([p.hockey_stick_reverse_series(t) for p in self.parts], True)

    def survival_q_series(self, t):
        if not self.has_series():
            return None
        return self._series_sum([p.survival_q_series(t) for p in self.parts], False)

    def point_cost(self) -> float:
        """Seconds per grid point of a point-by-point build (the planner's cost hint): every
        part is evaluated at every point, so the parts' costs add up (measured, issue 30: the
        REPLACE_ONE truncated-Poisson Gaussian, two 4-shift mixtures, 70 us per point against 34
        for one of them)."""
        return sum(point_cost(p) for p in self.parts)

    def describe(self) -> str:
        return self.label or f"disjoint union of {len(self.parts)} pairs"


def _mixture_curve(curves: list[RDP], weights: Callable[[], tuple], label: str, extra=None) -> RDP:
    """The RDP curve of a disjoint union: D_alpha <= log(sum_i w_i e^{(alpha-1) R_i(alpha)}) / (alpha-1)
    (joint convexity of exp((alpha - 1) D_alpha); R_i bounds part i in both directions), plus
    ``extra(alpha)``, a ball bounding sum_j w_j e^{(alpha - 1) R_j(alpha)} over further parts."""

    def curve(alpha: arb) -> arb:
        w = weights()
        a1 = alpha - 1
        exps = [a1 * c.ball(alpha).upper() for c, weight in zip(curves, w) if not bool(weight == 0)]
        live = [weight for weight in w[:len(curves)] if not bool(weight == 0)]
        top = exps[0]
        for e in exps[1:]:
            top = top.max(e)
        total = arb(0)
        for weight, e in zip(live, exps):
            total += weight * (e - top).exp()
        if extra is not None:
            total += extra(alpha) * (-top).exp()
        return (top + total.log()) / a1

    return RDP.from_function(curve, label)


def _check_relation(relation: str) -> str:
    if relation not in _RELATIONS:
        raise AccountingError("relation", relation, f"one of {_RELATIONS}")
    return relation


@dataclass(frozen=True)
class TruncatedPoissonGaussian(Mechanism):
    """``TruncatedSubsampledGaussianDpEvent``: Poisson sampling (``probability`` q) from
    ``dataset_size`` n records, the batch cut to ``batch_size`` B, a Gaussian sum with noise
    ``sigma`` (records of norm 1): the disjoint union of the module docstring, under ``relation``."""

    sigma: Fraction
    dataset_size: int
    probability: Fraction
    batch_size: int
    relation: str = "add_or_remove_one"

    family = "truncated-poisson-gaussian"

    def __post_init__(self) -> None:
        sigma, q = Fraction(self.sigma), Fraction(self.probability)
        if sigma <= 0:
            raise AccountingError("noise_multiplier", float(sigma), "a real number > 0")
        if not (0 < q <= 1):
            raise AccountingError("sampling_probability", float(q), "a probability in (0, 1]")
        for name, value in (("dataset_size", self.dataset_size), ("truncated_batch_size", self.batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise AccountingError(name, value, "an integer >= 1")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "probability", q)
        _check_relation(self.relation)

    # ---- the branch weights ------------------------------------------------------------------
    def _weights(self) -> tuple[arb, arb]:
        """(t, E) as balls: t = P(Bin(n-1, q) >= B) (a cut can happen with x* sampled), E =
        P(x* sampled and kept, cut) = (B/n) P(Bin(n, q) >= B + 1)."""
        n, q, b = self.dataset_size, self.probability, self.batch_size
        t = _binomial_upper_tail(b, n - 1, q)
        e = exact(Fraction(b, n)) * _binomial_upper_tail(b + 1, n, q)
        return t, e

    def cut_probability(self) -> float:
        """t as a float (its midpoint): the probability of the truncated branch."""
        with working_precision(None):
            return float(self._weights()[0].mid())

    def kept_rate(self) -> Fraction | None:
        """q'' >= q' = E / t, a float (the rate of x* in the truncated branch), or None (t = 0)."""
        with working_precision(None):
            t, e = self._weights()
            if bool(t == 0):
                return None
            rate = upper_float(e / t)
        # q' <= q B / (B + 1) < q: q itself bounds it if the rounding overshoots
        return min(Fraction(rate), self.probability)

    def _branches(self):
        """(untruncated mechanism, truncated mechanism or None): accounting mechanisms."""
        from ._dp_event_mechanisms import ReplaceOnePoissonGaussian
        from .._mechanisms import Gaussian
        from .._amplification._subsampling import PoissonSampled

        q, sigma = self.probability, self.sigma
        rate = self.kept_rate()
        if self.relation == "replace_one":
            first = ReplaceOnePoissonGaussian(sigma, q)
            second = None if rate is None else ReplaceOnePoissonGaussian(sigma / 2, rate)
        else:
            gaussian = Gaussian(sigma, 1)
            first = gaussian if q == 1 else PoissonSampled(gaussian, q)
            if rate is None:
                second = None
            elif self.relation == "replace_special":
                second = ReplaceOnePoissonGaussian(sigma / 2, rate)
            else:
                second = PoissonSampled(Gaussian(sigma, 2), rate)
        return first, second

    def _union_weights(self) -> tuple:
        t, _ = self._weights()
        return (1 - t, t, arb(0))

    def monotone_loss_pair(self):
        first, second = self._branches()
        if second is None:
            return first.monotone_loss_pair()
        return MixedLossPair((first.monotone_loss_pair(), second.monotone_loss_pair()), self._union_weights, self.describe())

    def rdp(self) -> RDP:
        first, second = self._branches()
        if second is None:
            return first.rdp()
        return _mixture_curve([first.rdp(), second.rdp()], self._union_weights, self.describe() + " (RDP of the disjoint union)")

    def describe(self) -> str:
        return (f"Gaussian(sigma={float(self.sigma):.6g}) on a Poisson(q={float(self.probability):.6g}) batch of {self.dataset_size} records "
                f"cut to {self.batch_size} ({self.relation})")


@dataclass(frozen=True)
class SampledWithReplacementGaussian(Mechanism):
    """``SampledWithReplacementDpEvent(n, m, Gaussian tree or Laplace)``: m uniform draws with
    replacement from ``dataset_size`` n records, then additive noise -- ``noise`` "gaussian" (scale
    ``sigma``, per-record L2 ``sensitivity``; one effective Gaussian for a composition of
    Gaussians) or "laplace" (scale ``sigma``, per-record L1 ``sensitivity``: the same coupling, the
    shift of j draws is again at most 2j sensitivities). Module docstring: the PLD pair under
    ADD_OR_REMOVE_ONE, the RDP curve under every relation."""

    sigma: Fraction
    sensitivity: Fraction
    dataset_size: int
    sample_size: int
    relation: str = "add_or_remove_one"
    noise: str = "gaussian"

    family = "sampled-with-replacement-gaussian"

    def __post_init__(self) -> None:
        sigma, s = Fraction(self.sigma), Fraction(self.sensitivity)
        if sigma <= 0:
            raise AccountingError("noise_multiplier", float(sigma), "a real number > 0")
        if s <= 0:
            raise AccountingError("sensitivity", float(s), "a real number > 0")
        if isinstance(self.dataset_size, bool) or not isinstance(self.dataset_size, int) or self.dataset_size < 1:
            raise AccountingError("source_dataset_size", self.dataset_size, "an integer >= 1")
        if isinstance(self.sample_size, bool) or not isinstance(self.sample_size, int) or self.sample_size < 1:
            raise AccountingError("sample_size", self.sample_size, "an integer >= 1")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "sensitivity", s)
        _check_relation(self.relation)
        if self.noise not in ("gaussian", "laplace"):
            raise AccountingError("noise", self.noise, "'gaussian' or 'laplace'")

    def _base(self, j: int):
        """The mechanism of j draws of x*: the noise at sensitivity 2 j s."""
        from .._mechanisms import Gaussian, Laplace

        return (Gaussian if self.noise == "gaussian" else Laplace)(self.sigma, 2 * j * self.sensitivity)

    def _exponent(self, j: int, alpha: arb) -> arb:
        """(alpha - 1) D_alpha of the base at sensitivity 2 j s (both directions: a symmetric shift)."""
        if self.noise == "gaussian":
            shift = exact(2 * j * self.sensitivity) / exact(self.sigma)
            return alpha * (alpha - 1) * shift * shift / 2
        return (alpha - 1) * self._base(j).rdp().ball(alpha).upper()

    def _hit(self) -> Fraction:
        return Fraction(1, self.dataset_size)

    def _draw_masses(self) -> tuple[list[arb], arb, arb]:
        """([P(J = j) for j = 1..j_max], P(J > j_max), P(J >= 1)) at the working precision, j_max the
        smallest j with P(J > j) <= 1e-22 (or m)."""
        m, p = self.sample_size, self._hit()
        if p == 1:  # one record: every draw is x*
            return [arb(0)] * (m - 1) + [arb(1)], arb(0), arb(1)
        pb = exact(p)
        log_keep = (1 - pb).log()
        masses = []
        below = (exact(m) * log_keep).exp()  # P(J = 0)
        gamma = 1 - below
        cumulative = below
        for j in range(1, m + 1):
            mass = arb.bin_uiui(m, j) * pb ** j * (exact(m - j) * log_keep).exp() if m - j > 0 else pb ** m
            masses.append(mass)
            cumulative += mass
            rest = (1 - cumulative).max(arb(0))
            if j == m or bool(rest.upper() <= _DRAW_TAIL):
                return masses, (arb(0) if j == m else arb(0).union(rest.upper())), gamma
        return masses, arb(0), gamma  # pragma: no cover - the loop returns at j = m

    def _components(self) -> int:
        with working_precision(None):
            return len(self._draw_masses()[0])

    def _union_weights(self) -> tuple:
        masses, rest, gamma = self._draw_masses()
        return tuple(mass / gamma for mass in masses) + (rest / gamma,)

    def _gamma_up(self) -> Fraction:
        with working_precision(None):
            return Fraction(upper_float(self._draw_masses()[2]))

    def monotone_loss_pair(self):
        if self.relation != "add_or_remove_one":
            return None  # no certified pair under replacement (module docstring): the RDP route answers
        from .._amplification._subsampling import PoissonSampled

        gamma = self._gamma_up()  # the curves increase with the rate: rounded up
        parts = []
        for j in range(1, self._components() + 1):
            base = self._base(j)
            parts.append((base if gamma >= 1 else PoissonSampled(base, gamma)).monotone_loss_pair())
        return MixedLossPair(tuple(parts), self._union_weights, self.describe())

    def rdp(self) -> RDP:
        from .._amplification._subsampling import PoissonSampled

        m = self.sample_size
        if self.relation == "add_or_remove_one":
            gamma = self._gamma_up()
            k = self._components()
            curves = [(self._base(j) if gamma >= 1 else PoissonSampled(self._base(j), gamma)).rdp() for j in range(1, k + 1)]

            def beyond(alpha: arb) -> arb:
                # the parts past j_max: part j at most the Gaussian of sensitivity 2j s (a subsample
                # only lowers D_alpha), summed term by term for _TAIL_TERMS more j, the rest at 2m
                return self._tail_moment(alpha, k)

            return _mixture_curve(curves, lambda: self._union_weights()[:-1] + (arb(0),), self.describe() + " (RDP of the disjoint union)", beyond)

        def curve(alpha: arb) -> arb:
            # revealing (J, the common draws): sum_j P(J = j) e^{(alpha-1) D_alpha(base at 2 j s)}
            # (Gaussian: alpha (alpha-1) (2 j s)^2 / (2 sigma^2)); the exponents increase with j
            masses, rest, gamma = self._draw_masses()
            exps = [self._exponent(j, alpha) for j in range(1, len(masses) + 1)]
            far = None if bool(rest == 0) else self._exponent(m, alpha)
            top = exps[-1] if far is None else exps[-1].max(far)
            total = (1 - gamma) * (-top).exp()
            for mass, e in zip(masses, exps):
                total += mass * (e - top).exp()
            if far is not None:
                total += rest * (far - top).exp()
            return (top + total.log()) / (alpha - 1)

        return RDP.from_function(curve, self.describe() + " (RDP by joint convexity, draws revealed)")

    def _tail_moment(self, alpha: arb, first: int) -> arb:
        """sum_{j > first} P(J = j | J >= 1) e^{alpha (alpha-1) (2 j s / sigma)^2 / 2}, bounded: exact
        terms up to first + _TAIL_TERMS, then the mass beyond at j = m."""
        m, p = self.sample_size, exact(self._hit())
        gamma = self._draw_masses()[2]
        last = min(m, first + _TAIL_TERMS)
        if last <= first:
            return arb(0)
        log_keep = (1 - p).log()
        total, covered = arb(0), arb(0)
        for j in range(first + 1, last + 1):
            mass = arb.bin_uiui(m, j) * p ** j * (exact(m - j) * log_keep).exp() if m > j else p ** m
            covered += mass
            total += mass * self._exponent(j, alpha).exp()
        if last < m:
            cumulative = (exact(m) * log_keep).exp() + covered + sum(self._draw_masses()[0], arb(0))
            rest = arb(0).union((1 - cumulative).upper().max(arb(0)))
            total += rest * self._exponent(m, alpha).exp()
        return total / gamma

    def describe(self) -> str:
        name = "Gaussian" if self.noise == "gaussian" else "Laplace"
        return (f"{name}({'sigma' if self.noise == 'gaussian' else 'scale'}={float(self.sigma):.6g}, sensitivity {float(self.sensitivity):.6g}) on "
                f"{self.sample_size} draws with replacement from {self.dataset_size} records ({self.relation})")
