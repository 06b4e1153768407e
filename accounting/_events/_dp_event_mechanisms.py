"""Mechanisms behind dp_accounting event types that have no counterpart elsewhere in accounting.

Each is a small frozen value object with a certified RDP curve (and an output pair or a pure-DP
bound where one exists), so every route of the planner accepts it:

- :class:`ZCdpGuarantee` -- ``ZCDpEvent(rho, xi)``: (xi, rho)-zCDP, D_alpha <= xi + rho alpha
  (Bun & Steinke 2016, Def. 1.1; the curve is the definition).
- :class:`SpecialRandomizedResponse` -- ``RandomizedResponseDpEvent(p, k)`` under
  REPLACE_SPECIAL: a record replaced by the special record, whose response is uniform. The pair
  is R(x) = (a on x's bucket, b on each of the k - 1 others), a = 1 - p + p/k, b = p/k, against
  U = (1/k, ..., 1/k) (dp_accounting's ``from_randomized_response``); both directions are exact
  (three outputs suffice: x's bucket and the others, merged), eps = max(log(k a), -log(k b)).
- :class:`ReplaceOnePoissonGaussian` -- ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))`` under
  REPLACE_ONE (records of norm <= 1 in R^d, the replaced record x* -> x' keeps its coin).

  *The PLD route: dp_accounting's REPLACE pair, which dominates.* dp_accounting 0.6.0
  (``from_gaussian_mechanism(..., sampling_prob=q, neighboring_relation=REPLACE_ONE)``, i.e.
  ``GaussianPrivacyLoss`` with ``AdjacencyType.REPLACE``) uses mu_upper = (1-q) N(0) + q N(-1)
  against mu_lower = (1-q) N(0) + q N(1) (variance sigma^2; used here mirrored, the same pair). It
  dominates every REPLACE_ONE pair of datasets, in any dimension, at every e >= 0
  (H_e(A || B) = sup over tests g: R^d -> [0, 1] of int g dA - e int g dB):

  1. Conditioning. With S the sum of the other sampled records (the same law under D and D'),
     M(D) = law(S + B x* + sigma Z), M(D') = law(S + B x' + sigma Z), B ~ Bern(q) shared. H_e is a
     supremum of linear functionals, hence jointly convex, and invariant under translation, so
     H_e(M(D) || M(D')) <= sup_s H_e(P_u || P_w) with P_v = (1-q) N(0, sigma^2 I) + q N(v, sigma^2 I),
     u = x*, w = x', |u|, |w| <= 1. (A composition of Gaussians under one sample, from_dp_event's
     one effective Gaussian: whiten block i by its sigma_i, a bijection; the shifts then have
     norm <= sqrt(sum_i sigma_i^-2) = 1/sigma_eff, the same statement at unit variance.)
  2. A Lipschitz bound. For a test g let G(v) = E g(v + sigma Z). By the Neyman-Pearson lemma for
     N(x, sigma^2 I) against N(y, sigma^2 I) (the likelihood ratio is monotone in <., y - x>, so a
     half-space is most powerful, with power Phi(Phi^{-1}(size) + |y - x| / sigma)),
     Phi^{-1}(G(y)) <= Phi^{-1}(G(x)) + |y - x| / sigma for all x, y: Phi^{-1} o G is
     (1/sigma)-Lipschitz.
  3. The bound. With a = Phi^{-1}(G(0)) and r = 1/sigma, G(u) <= Phi(a + r) and G(w) >= Phi(a - r),
     so int g dP_u - e int g dP_w = (1-q)(1-e) G(0) + q G(u) - q e G(w)
     <= (1-q)(1-e) Phi(a) + q Phi(a + r) - q e Phi(a - r), which is the value of the half-line test
     1{x > -a sigma} on the 1-D pair (1-q) N(0) + q N(1) against (1-q) N(0) + q N(-1); hence
     H_e(P_u || P_w) <= H_e of that pair (G(0) in {0, 1} makes g constant a.e.: the value is
     (1-e) G(0) <= max(0, 1-e), below any H_e). The pair is attained (x* = -x', |x*| = 1, the others
     zero), so it is tight; its loss is monotone, so its PLD is exact in
     :mod:`accounting._mechanisms._gaussian_mixture_loss`.
  Then the composition of dominating pairs (Zhu, Dong & Wang 2022, as for every PLD route here)
  certifies compositions. Checked against brute force on concrete datasets in the plane (every
  Poisson sample enumerated) in ``tests/test_replace_one_dominance.py``. Literature: Lebeda,
  Regehr, Kamath & Steinke 2024 (arXiv:2405.20769) treat substitution under Poisson subsampling
  and Zhu, Dong & Wang 2022 dominating pairs for subsampling; no theorem of theirs stating this
  pair could be read from here (only the papers' openings were reachable), so no theorem number
  is cited and the route rests on the proof above.

  *The RDP route* (:meth:`ReplaceOnePoissonGaussian.rdp`): the coin revealed. Joint convexity of
  (P, Q) -> int P^alpha Q^(1-alpha) for alpha > 1 bounds the mixture by its components:
  int P^a Q^(1-a) <= (1-q) + q exp(2 a (a-1) / sigma^2), i.e.
  D_alpha <= log(1 - q + q e^{2 alpha (alpha-1)/sigma^2}) / (alpha - 1). An upper bound (exact at
  q = 1, where it is the Gaussian of sensitivity 2), rigorous but looser than the PLD of the pair
  (it amplifies linearly in q, not quadratically).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP, PureDP
from .._core._mechanism_base import Mechanism
from .._core._validation import AccountingError, check_k_ary

__all__ = ["FractionalOrderSampledGaussian", "GaussianMixtureShift", "RepeatAndSelect", "ReplaceOnePoissonGaussian", "SpecialRandomizedResponse", "ZCdpGuarantee"]


def _nonnegative_fraction(name: str, value) -> Fraction:
    try:
        out = Fraction(value)
    except (TypeError, ValueError, OverflowError):
        raise AccountingError(name, value, "a finite real number >= 0") from None
    if out < 0:
        raise AccountingError(name, value, "a finite real number >= 0")
    return out


@dataclass(frozen=True)
class ZCdpGuarantee(Mechanism):
    """(xi, rho)-zCDP as a mechanism: D_alpha <= xi + rho alpha for every alpha > 1 (exact reals)."""

    rho: Fraction
    xi: Fraction = Fraction(0)

    family = "zcdp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _nonnegative_fraction("rho", self.rho))
        object.__setattr__(self, "xi", _nonnegative_fraction("xi", self.xi))
        if self.rho == 0 and self.xi == 0:
            raise AccountingError("rho", 0, "rho > 0 or xi > 0 (rho = xi = 0 is no release)")

    def rdp(self) -> RDP:
        rho, xi = self.rho, self.xi

        def curve(alpha: arb) -> arb:
            return exact(xi) + exact(rho) * alpha

        return RDP.from_function(curve, self.describe(), approx=lambda alphas: float(xi) + float(rho) * alphas)

    def pure(self) -> PureDP | None:
        if self.rho == 0:  # D_alpha <= xi at every order: xi-DP in the limit alpha -> inf
            with working_precision(None):
                return PureDP(upper_float(exact(self.xi)))
        return None

    def describe(self) -> str:
        return f"({float(self.xi):.6g}, {float(self.rho):.6g})-zCDP"


@dataclass(frozen=True)
class SpecialRandomizedResponse(Mechanism):
    """k-ary randomized response under REPLACE_SPECIAL (module docstring): R(x) against uniform."""

    noise_parameter: Fraction
    num_buckets: int

    family = "randomized-response-special"

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_parameter", check_k_ary(self.noise_parameter, self.num_buckets))

    def _masses(self) -> tuple[tuple[Fraction, Fraction], tuple[Fraction, Fraction]]:
        """(P, Q) on (x's bucket, the other k - 1 buckets merged): losses are equal within a class."""
        p, k = self.noise_parameter, self.num_buckets
        a, b = 1 - p + p / k, p / k
        return (a, (k - 1) * b), (Fraction(1, k), Fraction(k - 1, k))

    def rdp(self) -> RDP:
        p, k = self.noise_parameter, self.num_buckets
        a, b, u = 1 - p + p / k, p / k, Fraction(1, k)

        def curve(alpha: arb) -> arb:
            la, lb, lu = exact(a).log(), exact(b).log(), exact(u).log()
            rest = exact(k - 1)
            forward = (alpha * la + (1 - alpha) * lu).exp() + rest * (alpha * lb + (1 - alpha) * lu).exp()
            backward = (alpha * lu + (1 - alpha) * la).exp() + rest * (alpha * lu + (1 - alpha) * lb).exp()
            return forward.log().max(backward.log()) / (alpha - 1)

        return RDP.from_function(curve, self.describe())

    def pure(self) -> PureDP:
        p, k = self.noise_parameter, self.num_buckets
        a, b = 1 - p + p / k, p / k
        with working_precision(None):
            return PureDP(upper_float((exact(k * a)).log().max(-(exact(k * b)).log())))

    def output_pair(self):
        from .._core._pairs import FinitePair

        (pa, pb), (qa, qb) = self._masses()
        return FinitePair.from_masses([pa, pb], [qa, qb])

    def describe(self) -> str:
        return f"{self.num_buckets}-ary randomized response (noise parameter {float(self.noise_parameter)}), replaced by the special record"


@dataclass(frozen=True)
class ReplaceOnePoissonGaussian(Mechanism):
    """A Poisson-subsampled Gaussian under REPLACE_ONE: dp_accounting's REPLACE pair for the PLD
    route (proved dominating in the module docstring), the coin-revealed RDP curve for the RDP route."""

    sigma: Fraction
    probability: Fraction

    family = "poisson-sampled-gaussian-replace-one"

    def __post_init__(self) -> None:
        sigma = Fraction(self.sigma)
        q = Fraction(self.probability)
        if sigma <= 0:
            raise AccountingError("sigma", float(sigma), "a real number > 0")
        if not (0 < q <= 1):
            raise AccountingError("probability", float(q), "a probability in (0, 1]")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "probability", q)

    def rdp(self) -> RDP:
        sigma, q = self.sigma, self.probability

        def curve(alpha: arb) -> arb:
            s, qq = exact(sigma), exact(q)
            exponent = 2 * alpha * (alpha - 1) / (s * s)
            if q == 1:
                return exponent / (alpha - 1)
            # log(1 - q + q e^x) = x + log(q + (1 - q) e^-x): no overflow at large x
            return (exponent + (qq + (1 - qq) * (-exponent).exp()).log()) / (alpha - 1)

        return RDP.from_function(curve, self.describe())

    def monotone_loss_pair(self):
        """dp_accounting's REPLACE pair for the PLD route: (1-q) N(0) + q N(1) against
        (1-q) N(0) + q N(-1) (:mod:`accounting._mechanisms._gaussian_mixture_loss`), symmetric; it
        dominates every REPLACE_ONE pair of datasets (module docstring, steps 1-3)."""
        from .._mechanisms._gaussian_mixture_loss import GaussianMixtureLoss

        q = self.probability
        return GaussianMixtureLoss(self.sigma, [0, 1], [1 - q, q], [0, -1], [1 - q, q], symmetric=True, label=self.describe())

    def describe(self) -> str:
        return f"Gaussian(sigma={float(self.sigma):.6g}) Poisson-subsampled (q={float(self.probability):.6g}), replace-one"


@dataclass(frozen=True)
class GaussianMixtureShift(Mechanism):
    """``MixtureOfGaussiansDpEvent(sigma, sensitivities c_i, sampling_probs p_i)`` under
    ADD_OR_REMOVE_ONE: P = sum_i p_i N(c_i, sigma^2) against Q = N(0, sigma^2) (dp_accounting's
    ``from_mixture_gaussian_mechanism``). RDP of both directions by convexity, for alpha > 1:
    int P^a Q^(1-a) <= sum_i p_i int N(c_i)^a N(0)^(1-a) (joint convexity) and
    int Q^a P^(1-a) <= sum_i p_i int N(0)^a N(c_i)^(1-a) (x -> x^(1-a) is convex), and both
    component integrals are exp(a (a-1) c_i^2 / (2 sigma^2)); so
    D_alpha <= log(sum_i p_i e^{a (a-1) c_i^2/(2 sigma^2)}) / (a - 1) in either direction.
    An upper bound, exact for one component; the RDP route only (dp_accounting answers by the PLD
    of the exact pair, which is tighter: stated where this is used)."""

    sigma: Fraction
    shifts: tuple
    weights: tuple

    family = "gaussian-mixture-shift"

    def __post_init__(self) -> None:
        sigma = Fraction(self.sigma)
        if sigma <= 0:
            raise AccountingError("standard_deviation", float(sigma), "a real number > 0")
        shifts = tuple(Fraction(c) for c in self.shifts)
        weights = tuple(Fraction(w) for w in self.weights)
        if len(shifts) != len(weights) or not shifts:
            raise AccountingError("sampling_probs", self.weights, f"{len(shifts)} probabilities, one per sensitivity")
        if any(w < 0 for w in weights) or sum(weights) == 0:
            raise AccountingError("sampling_probs", self.weights, "non-negative probabilities, not all 0")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "shifts", shifts)
        # the weights as given sum to 1 up to float rounding: normalised exactly (sum_i p_i f_i over
        # a normalised p is what the convexity bound needs)
        total = sum(weights)
        object.__setattr__(self, "weights", tuple(w / total for w in weights))

    def rdp(self) -> RDP:
        sigma, shifts, weights = self.sigma, self.shifts, self.weights

        def curve(alpha: arb) -> arb:
            s = exact(sigma)
            exponents = [alpha * (alpha - 1) * exact(c) * exact(c) / (2 * s * s) for c in shifts]
            top = exponents[0]
            for e in exponents[1:]:
                top = top.max(e)
            total = sum((exact(w) * (e - top).exp() for w, e in zip(weights, exponents) if w != 0), arb(0))
            return (top + total.log()) / (alpha - 1)

        return RDP.from_function(curve, self.describe())

    def monotone_loss_pair(self):
        """The exact pair (sum_i p_i N(c_i), N(0)) for the PLD route when every shift has one sign
        (mirrored to >= 0, so the loss is nondecreasing: :mod:`accounting._mechanisms._gaussian_mixture_loss`);
        None otherwise (the RDP route answers)."""
        from .._mechanisms._gaussian_mixture_loss import GaussianMixtureLoss

        if all(c >= 0 for c in self.shifts):
            shifts = self.shifts
        elif all(c <= 0 for c in self.shifts):
            shifts = tuple(-c for c in self.shifts)
        else:
            return None
        return GaussianMixtureLoss(self.sigma, shifts, self.weights, [0], [1], label=self.describe())

    def describe(self) -> str:
        return f"mixture of Gaussians (sigma={float(self.sigma):.6g}, {len(self.shifts)} shifts) by convexity"


def _tnb_mean(gamma: arb, shape: Fraction) -> arb:
    """Mean of the truncated negative binomial with halting probability gamma and shape eta
    (Papernot & Steinke 2022, Def. 1): eta (1/gamma - 1) / (1 - gamma^eta); the logarithmic law
    (eta = 0): (1/gamma - 1) / log(1/gamma); the geometric (eta = 1): 1/gamma."""
    if shape == 1:
        return 1 / gamma
    if shape == 0:
        return (1 / gamma - 1) / (-gamma.log())
    eta = exact(shape)
    return eta * (1 / gamma - 1) / (1 - (eta * gamma.log()).exp())


def _certified_gamma(mean: Fraction, shape: Fraction) -> Fraction:
    """A halting probability gamma' <= the gamma whose truncated negative binomial has ``mean``
    (the mean decreases in gamma, so mean(gamma') >= mean certifies it; log(1/gamma') >=
    log(1/gamma) only loosens the bound it enters). Bisection in floats, checked in Arb."""
    if shape == 1:
        return 1 / mean
    target = float(mean)

    def mean_float(g: float) -> float:
        with working_precision(None):
            return float(_tnb_mean(exact(g), shape).mid())

    lo, hi = 0.0, min(1.0, 2 * (float(shape) + 1) / target)
    for _ in range(200):
        if hi <= lo * (1 + 1e-15):
            break
        mid = (lo + hi) / 2
        if mid <= 0 or mid >= 1:
            break
        if mean_float(mid) < target:
            hi = mid
        else:
            lo = mid
    g = lo if lo > 0 else hi / 2
    with working_precision(None):
        for _ in range(200):
            if g < 1 and bool(_tnb_mean(exact(g), shape) >= exact(mean)):
                return Fraction(g)
            g *= 1 - 1e-12 if g < 1 else 0.5
    raise AccountingError("mean", float(mean), "a mean of repetitions whose halting probability can be certified")


@dataclass(frozen=True)
class RepeatAndSelect(Mechanism):
    """``RepeatAndSelectDpEvent(event, mean, shape)``: run ``mechanism`` K times, K random with mean
    ``mean`` -- Poisson (shape = inf) or truncated negative binomial of shape eta >= 0 (0:
    logarithmic, 1: geometric) -- and release only the best run (Papernot & Steinke 2022,
    arXiv:2110.03620). RDP at order lambda > 1:

    - eta finite (Thm 2): eps(lambda) + (1+eta)(1 - 1/lh) eps(lh) + (1+eta) log(1/gamma)/lh
      + log(mean)/(lambda - 1) for every lh >= 1 (lh = 1: the middle term vanishes); the constant
      is minimised over lh (every candidate certified, the smallest kept), and since Renyi
      divergences are nondecreasing in the order the value at any lambda' >= lambda bounds it (a
      search over lambda', as dp_accounting's monotone step over its orders);
    - Poisson (Thm 6): eps(lambda) + mean * delta_hat + log(mean)/(lambda - 1), where delta_hat is a
      certified delta of the base at eps_hat = log(lambda / (lambda - 1)) (rounded down: a smaller
      eps only raises delta) from :func:`_base_delta`; for a Gaussian base, raised where needed to
      the upper end of :func:`_float_thm6_enclosure` (every binary64 evaluation of the same closed
      form with the exact Gaussian delta: a float reference never exceeds the reported value).

    gamma is certified below the true halting probability (:func:`_certified_gamma`). A truncated
    negative binomial count of mean 1 is one run: the base curve itself."""

    mechanism: object
    mean: Fraction
    shape: float | Fraction

    family = "repeat-and-select"

    def __post_init__(self) -> None:
        mean = Fraction(self.mean)
        if mean < 1:
            raise AccountingError("mean", float(mean), "a mean number of repetitions >= 1")
        shape = self.shape
        if shape != math.inf:
            shape = Fraction(shape)
            if shape < 0:
                raise AccountingError("shape", float(shape), "a shape >= 0 (inf: Poisson)")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "shape", shape)

    def rdp(self) -> RDP:
        base = self.mechanism.rdp()
        if self.shape == math.inf:  # (a Poisson count of mean 1 is still random: no shortcut)
            return self._poisson_curve(base)
        if self.mean == 1:  # a count >= 1 with mean 1 is always 1: one run
            return base
        return self._tnb_curve(base)

    def _tnb_curve(self, base: RDP) -> RDP:
        eta = self.shape
        gamma = _certified_gamma(self.mean, eta)
        mean = self.mean
        cache: dict = {}

        def constant(prec: int) -> arb:
            if prec in cache:
                return cache[prec]
            with working_precision(prec):
                log_inv_gamma = -exact(gamma).log()
                one_eta = 1 + exact(eta)
                best = (one_eta * log_inv_gamma).upper()  # lh = 1
                best_float = upper_float(best)

                def at(lh: float) -> arb:
                    lhb = exact(lh)
                    return (one_eta * ((1 - 1 / lhb) * base.ball(lhb) + log_inv_gamma / lhb)).upper()

                grid = [1 + 2.0 ** k for k in range(-12, 30)]
                scored = []
                for lh in grid:
                    try:
                        value = at(lh)
                    except (AccountingError, ZeroDivisionError, OverflowError):
                        continue
                    v = upper_float(value)
                    scored.append((v, lh))
                    if v < best_float:
                        best, best_float = value, v
                if scored:
                    _, centre = min(scored)
                    lo, hi = max(1.0, centre / 2 if centre > 2 else 1 + (centre - 1) / 2), centre * 2
                    for lh in _golden(lambda x: _safe(at, x), lo, hi):
                        try:
                            value = at(lh)
                        except (AccountingError, ZeroDivisionError, OverflowError):
                            continue
                        if upper_float(value) < best_float:
                            best, best_float = value, upper_float(value)
            cache[prec] = best
            return best

        def bound(lam: arb, c: arb) -> arb:
            return base.ball(lam) + exact(mean).log() / (lam - 1) + c

        def curve(alpha: arb) -> arb:
            from flint import ctx

            c = constant(ctx.prec)
            best = bound(alpha, c)
            a = float(alpha.upper().mid()) if alpha.is_finite() else math.inf
            if not math.isfinite(a):
                return best
            a = math.nextafter(a, math.inf)

            def f(x: float) -> arb:
                return bound(exact(x), c)

            for lam in _golden(lambda x: _safe(f, x), a, a * 4 + 64, log_grid=True):
                try:
                    value = f(lam)
                except (AccountingError, ZeroDivisionError, OverflowError):
                    continue
                if bool(value.upper() < best.upper()):
                    best = value
            return best

        return RDP.from_function(curve, self.describe())

    def _poisson_curve(self, base: RDP) -> RDP:
        mechanism, mean = self.mechanism, self.mean

        @functools.lru_cache(maxsize=4096)
        def delta_hat(eps_hat: float) -> float:
            return _base_delta(mechanism, base, eps_hat)

        noise_multiplier = _float_noise_multiplier(mechanism)

        def curve(alpha: arb) -> arb:
            eps_hat = (1 / (alpha - 1)).log1p()
            eps_down = float(eps_hat.lower().mid()) if eps_hat.is_finite() else 0.0
            eps_down = max(0.0, math.nextafter(eps_down, 0.0))
            d = delta_hat(eps_down) if eps_down > 0 else 1.0
            value = base.ball(alpha) + exact(mean) * exact(d) + exact(mean).log() / (alpha - 1)
            if noise_multiplier is not None:
                # rounded outward to cover every binary64 evaluation of the same closed form
                # (_float_thm6_enclosure): still an upper bound, never below a float reference
                try:
                    floats = _float_thm6_enclosure(alpha, noise_multiplier, mean)
                except (ValueError, ZeroDivisionError, OverflowError):
                    floats = None
                if floats is not None and floats.is_finite():
                    value = value.max(floats.upper())
            return value

        return RDP.from_function(curve, self.describe())

    def describe(self) -> str:
        law = "Poisson" if self.shape == math.inf else f"truncated negative binomial (shape {float(self.shape):g})"
        return f"repeat {self.mechanism.describe()} a {law} number of times (mean {float(self.mean):g}) and select the best (Papernot & Steinke 2022)"


#: binary64's unit roundoff and smallest subnormal; the error of a library function (exp, log,
#: log1p, erfc, pow, sqrt) in units in the last place: glibc documents at most 5 ulps for erfc and
#: 1-2 for the others on x86-64 (measured here, CPython's math against mpmath at 40 digits:
#: erfc <= 3.8 ulps on [-6, 27] where the result is normal; exp, log, log1p <= 1.3)
_UNIT_ROUNDOFF = 2.0 ** -53
_SUBNORMAL = 2.0 ** -1074
_LIBRARY_ULPS = 8


def _float_noise_multiplier(mechanism) -> Fraction | None:
    """sigma / sensitivity of a Gaussian base when it is a binary64 number (the closed form's input
    in floats), else None."""
    from .._mechanisms import Gaussian

    if not isinstance(mechanism, Gaussian):
        return None
    s = Fraction(mechanism.sigma) / Fraction(mechanism.sensitivity)
    try:
        return s if Fraction(float(s)) == s else None
    except OverflowError:
        return None


def _float_thm6_enclosure(lam: arb, s: Fraction, mean: Fraction) -> arb:
    """A ball containing every binary64 evaluation of Papernot & Steinke's Thm 6 for a Gaussian
    base of noise multiplier ``s`` at order ``lam``, evaluated as a float program does it
    (dp_accounting's test does exactly this)::

        eps = log1p(1 / (lam - 1))
        x = (eps s - 0.5 / s) / sqrt(2);  y = (eps s + 0.5 / s) / sqrt(2)
        delta = erfc(x) / 2 - exp(eps) erfc(y) / 2
        lam 0.5 / s**2 + mean delta + log(mean) / (lam - 1)

    Error model (a running forward error analysis done by interval arithmetic, so it has no
    first-order truncation): every +, -, *, / returns (exact result)(1 + t) + h with |t| <= u =
    2^-53 and |h| <= 2^-1074 (round to nearest, underflow included); every library function
    returns f(its rounded argument)(1 + t) + h with |t| <= 8 u and |h| <= 8 * 2^-1074
    (:data:`_LIBRARY_ULPS`). Each step's ball is the exact operation on its input balls, widened
    by that model, so the final ball contains the float result whatever the roundings were. The
    RDP curve takes the max of its certified value and this ball's upper end: an upper bound made
    larger is still one, and a float evaluation of the closed form -- which carries the erfc
    difference's cancellation times ``mean`` (up to ~7e-12 relative for sigma 1000, mean 1e9) --
    can no longer exceed the reported value. Costs at most this ball's width over the exact
    value (about 1e-9 relative in that worst case)."""
    u, h = _UNIT_ROUNDOFF, _SUBNORMAL

    def op(z: arb) -> arb:
        return z * (1 + arb(0, u)) + arb(0, h)

    def lib(z: arb) -> arb:
        return z * (1 + arb(0, _LIBRARY_ULPS * u)) + arb(0, _LIBRARY_ULPS * h)

    sigma, m = exact(s), exact(mean)
    lam1 = op(lam - 1)
    eps = lib(op(1 / lam1).log1p())
    a, b = op(eps * sigma), op(arb(0.5) / sigma)
    root2 = lib(arb(2).sqrt())
    x, y = op(op(a - b) / root2), op(op(a + b) / root2)
    delta = op(op(lib(x.erfc()) / 2) - op(op(lib(eps.exp()) * lib(y.erfc())) / 2))
    first = op(op(lam * arb(0.5)) / lib(sigma * sigma))
    last = op(lib(m.log()) / lam1)
    return op(op(first + op(m * delta)) + last)


def _base_delta(mechanism, curve: RDP, epsilon: float) -> float:
    """A certified delta of ``mechanism`` at ``epsilon`` > 0: the smallest of the exact Gaussian
    profile (a Gaussian base: Balle & Wang 2018), the pure-DP profile (an eps0-DP base:
    (e^eps0 - e^eps)_+ / (1 + e^eps0), randomized response being the worst eps0-DP pair) and the
    RDP curve's CKS conversion. (The route planner's delta is not used here: it imports the event
    translation, which imports this module.)"""
    from .._mechanisms._analytic_gaussian import gdp_delta
    from .._core._conversions import rdp_to_delta
    from .._mechanisms import Gaussian

    best = 1.0
    if isinstance(mechanism, Gaussian):
        with working_precision(None):
            mu = upper_float(exact(mechanism.sensitivity) / exact(mechanism.sigma))
        best = min(best, gdp_delta(mu, epsilon))
    pure = mechanism.pure() if isinstance(mechanism, Mechanism) else None
    if pure is not None:
        with working_precision(None):
            e0 = exact(pure.epsilon).exp()
            value = (e0 - exact(epsilon).exp()) / (1 + e0)
            best = min(best, 0.0 if bool(value <= 0) else upper_float(value))
    try:
        best = min(best, rdp_to_delta(curve, epsilon).delta)
    except (AccountingError, ZeroDivisionError, OverflowError):
        pass
    return best


def _safe(fn, x: float) -> float:
    try:
        return upper_float(fn(x))
    except (AccountingError, ZeroDivisionError, OverflowError):
        return math.inf


def _golden(objective, lo: float, hi: float, log_grid: bool = False, steps: int = 60) -> list[float]:
    """Points of a golden-section search for the minimum of a float objective on [lo, hi] (in
    log(x - lo + 1) when ``log_grid``): the candidates a caller then certifies."""
    import math as _m

    if log_grid:
        to_x = lambda u: lo + _m.expm1(u)  # noqa: E731
        a, b = 0.0, _m.log1p(hi - lo)
    else:
        to_x = lambda u: u  # noqa: E731
        a, b = lo, hi
    ratio = (_m.sqrt(5) - 1) / 2
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = objective(to_x(c)), objective(to_x(d))
    seen = [to_x(c), to_x(d)]
    for _ in range(steps):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = objective(to_x(c))
            seen.append(to_x(c))
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = objective(to_x(d))
            seen.append(to_x(d))
    best = min(seen, key=objective)
    return [best]


def sgm_log_moment_fractional(q: Fraction, s: Fraction, alpha: arb) -> arb:
    """A certified enclosure of log A_alpha, A_alpha = E_{z ~ N(0, s^2)} [(1 - q + q e^{(2z-1)/(2s^2)})^alpha],
    the log moment of the Poisson-subsampled Gaussian (noise multiplier s) at any real alpha > 1
    (Mironov, Talwar & Zhang 2019; (alpha - 1) D_alpha = log A_alpha).

    A_alpha - 1 = E[b(z)^alpha - 1] with b(z) = 1 + q expm1((2z-1)/(2s^2)) is integrated as
    phi_s(z) expm1(alpha log1p(q expm1((2z-1)/(2s^2)))) -- small where A is near 1, so the
    integrator's relative tolerance is relative to log A itself -- over [L, U] by Arb's rigorous
    integrator (the integrand is holomorphic where b has a positive real part; elsewhere it reports
    "not analytic" and the integrator subdivides), and log A = log1p(that). The tails are bounded:
    for z < L <= 1/2, b is in (0, 1], so b^alpha - 1 is in [-1, 0] and the lower tail in
    [-Phi(L/s), 0]; for z > U >= 1/2, with x = (2z-1)/(2s^2) >= 0, b >= 1 and b = e^x (q + (1-q) e^-x)
    <= beta e^x, beta = q + (1-q) e^{-x_U} <= 1 (decreasing in x), and phi_s(z) e^{alpha x} =
    e^{(alpha^2-alpha)/(2s^2)} phi_s(z - alpha), so the upper tail is in
    [0, beta^alpha e^{(alpha^2-alpha)/(2s^2)} Phi((alpha - U)/s)] (beta^alpha keeps it far below
    the integral at large orders, where q^alpha is tiny). Integrated 32 bits below the caller's
    precision p (at least 53) to a relative tolerance of 2^-(p - 54) (2^-42 at the default 96
    bits: log A to about 1e-10 relative, enclosed)."""
    from flint import acb, ctx

    from .._privacy_loss._pld_continuous import _phi

    prec = ctx.prec
    sb, qb = exact(s), exact(q)
    a_mid = float(alpha.mid())
    width = 12.0 * float(s)
    lower, upper = min(-width, 0.0), max(a_mid + width, 1.0)
    two_var = 2 * sb * sb
    norm = 1 / (sb * (2 * arb.pi()).sqrt())
    alpha_c = acb(alpha)

    def integrand(z, analytic):
        w = qb * ((2 * z - 1) / two_var).expm1()
        if analytic and not bool((1 + w).real > 0):
            return acb("nan")
        return norm * (-(z * z) / two_var).exp() * (alpha_c * w.log1p()).expm1()

    with working_precision(max(53, prec - 32)):
        value = acb.integral(integrand, lower, upper, rel_tol=arb(2) ** -(prec - 54), abs_tol=arb(2) ** -(2 * prec)).real
    low_tail = _phi(exact(lower) / sb)
    beta = qb + (1 - qb) * (-(2 * exact(upper) - 1) / two_var).exp()
    high_tail = (alpha * beta.log() + (alpha * alpha - alpha) / two_var).exp() * _phi((alpha - exact(upper)) / sb)
    total = value + (-low_tail.upper()).union(arb(0)) + arb(0).union(high_tail.upper())
    return total.log1p()


#: z-grid points per noise multiplier of :func:`_float_sgm_log_moment`, and its largest grid
_QUADRATURE_STEPS_PER_SIGMA = 4
_QUADRATURE_MAX_POINTS = 400_000


def _float_sgm_log_moment(q: float, s: float, alphas: np.ndarray) -> np.ndarray:
    """Float log A_alpha of the Poisson-subsampled Gaussian at each of ``alphas`` (the quantity
    :func:`sgm_log_moment_fractional` encloses) by the trapezoid rule on z in [-12 s, max alpha +
    12 s], step s/4 (the integrand is analytic and Gaussian-tailed: the error decays like
    e^{-2 pi^2 16}); A - 1 by expm1 where nothing overflows, else a log-sum-exp of A. NaN where
    the grid would be too large. Ranks orders before the certified evaluation; never reported."""
    alphas = np.asarray(alphas, dtype=float)
    out = np.full(alphas.shape, np.nan)
    if alphas.size == 0:
        return out
    h = s / _QUADRATURE_STEPS_PER_SIGMA
    lower, upper = min(-12 * s, 0.0), max(float(alphas.max()) + 12 * s, 1.0)
    points = int((upper - lower) / h) + 2
    if points * alphas.size > _QUADRATURE_MAX_POINTS or not math.isfinite(points):
        return out
    z = lower + h * np.arange(points)
    with np.errstate(all="ignore"):
        x = (2 * z - 1) / (2 * s * s)  # log b = log(1 - q + q e^x), without overflow at large x
        log_b = np.where(x > 30, x + np.log(q + (1 - q) * np.exp(-np.abs(x))), np.log1p(q * np.expm1(np.minimum(x, 30.0))))
        log_phi = -(z * z) / (2 * s * s) - math.log(s * math.sqrt(2 * math.pi)) + math.log(h)
        power = alphas[:, None] * log_b[None, :]
        exponent = power + log_phi[None, :]
        top = exponent.max(axis=1)
        small = top < 600
        terms = np.where(power > 700, np.exp(np.minimum(exponent, 709.0)), np.exp(log_phi)[None, :] * np.expm1(np.minimum(power, 700.0)))
        near_one = np.log1p(terms.sum(axis=1))
        far = top + np.log(np.exp(exponent - top[:, None]).sum(axis=1))
    return np.where(small, near_one, far)


@dataclass(frozen=True)
class FractionalOrderSampledGaussian(Mechanism):
    """A Poisson-subsampled Gaussian whose RDP curve is, at non-integer orders, the smaller of the
    certified chord between integer orders (:mod:`accounting._amplification._subsampling`) and the certified
    integral of :func:`sgm_log_moment_fractional` (at most ``max_order``; each integral computed once
    per curve). Its float approximation (search steering only) is the chord's, and at those orders
    the smaller of it and :func:`_float_sgm_log_moment`'s quadrature, so a search ranks orders as
    the certified curve will. The RDP accountant flavour uses it: dp_accounting's RdpAccountant
    evaluates these orders by MTZ's fractional series."""

    sampled: object
    max_order: float = 64.0

    family = "poisson-sampled-gaussian-fractional"

    def rdp(self) -> RDP:
        return self.rdp_from(self.sampled.rdp())

    def rdp_from(self, chord: RDP) -> RDP:
        """The curve over ``chord``, the subsampled Gaussian's own curve (built once by a caller
        that also needs it: the RDP flavour searches real orders on the chord)."""
        gaussian = self.sampled.mechanism
        q = Fraction(self.sampled.probability)
        s = Fraction(gaussian.sigma) / Fraction(gaussian.sensitivity)
        max_order = self.max_order

        integrals: dict = {}  # (exact order, precision) -> the integral's ball (one per curve: an accountant's)

        def curve(alpha: arb) -> arb:
            from flint import ctx

            value = chord.ball(alpha)
            mid = float(alpha.mid())
            if alpha.is_exact() and mid != math.floor(mid) and 1 < mid <= max_order:
                key = (alpha.mid().man_exp(), ctx.prec)  # exact: two orders never share a key
                direct = integrals.get(key)
                if direct is None:
                    try:
                        direct = sgm_log_moment_fractional(q, s, alpha) / (alpha - 1)
                    except (ValueError, ZeroDivisionError, OverflowError):
                        return value
                    if len(integrals) < 4096:
                        integrals[key] = direct
                if direct.is_finite() and bool(direct.upper() < value.upper()):
                    return direct
            return value

        chord_approx = getattr(chord, "approx", None)
        if not callable(chord_approx):
            return RDP.from_function(curve, f"{self.sampled.describe()} (fractional orders by certified integration)")
        q_float, s_float = float(q), float(s)
        remembered: dict = {}

        def approx(alphas):
            # the chord's float values, and at non-integer orders up to max_order the float
            # quadrature where it is smaller (as the certified curve chooses): steering only
            key = np.asarray(alphas, dtype=float).tobytes()
            if key in remembered:
                return remembered[key].copy()
            a = np.asarray(alphas, dtype=float)
            values = chord_approx(a)
            if values is None:
                return None
            values = np.array(values, dtype=float)
            fractional = (a > 1) & (a <= max_order) & (a != np.floor(a))
            if fractional.any():
                quad = _float_sgm_log_moment(q_float, s_float, a[fractional]) / (a[fractional] - 1)
                values[fractional] = np.fmin(values[fractional], quad)
            if len(remembered) < 64:
                remembered[key] = values.copy()
            return values

        return RDP.from_function(curve, f"{self.sampled.describe()} (fractional orders by certified integration)", approx=approx)

    def pure(self):
        return self.sampled.pure()

    def describe(self) -> str:
        return self.sampled.describe()
