"""The multivariate discrete Gaussian on a box: N_Z(0, sigma^2)^d added to an integer vector query.

The mechanism is M(D) = q(D) + Y with q(D) in Z^d and Y ~ N_Z(0, sigma^2)^d (independent
coordinates, Canonne, Kamath & Steinke 2020), where neighbouring datasets move q by an integer
vector v with |v_j| <= Delta in *every* coordinate (a box). This is DP-DPE's float-safe privatizer
(``dpverify._bandits.linear._privatizers``): report vectors in [-B, B]^s encoded on the integer
grid {-g, ..., g}^s, so one client moves each coordinate of the sum by at most Delta = 2g.

1. **The corner dominates.** For one coordinate, N_Z(0, sigma^2) is symmetric and log-concave, so
   its shifts have monotone likelihood ratio: for a shift by k the optimal tests of the hockey-stick
   divergence are thresholds {y <= c}, where P[Y <= c] - e^eps P[Y <= c - k] grows with k. So the
   pair (N_Z(0, sigma^2), N_Z(Delta, sigma^2)) dominates every shift |k| <= Delta (for every eps,
   hence also in every Renyi divergence, Blackwell), and dominating pairs compose (Zhu, Dong & Wang
   2022, Thm. 10): P = N_Z(0, sigma^2)^d against Q = P + (Delta, ..., Delta) dominates M.

2. **Renyi curve and zCDP.** Product measures: D_alpha(P || Q) = d D_alpha(N_Z(0, sigma^2) ||
   N_Z(Delta, sigma^2)), the one-coordinate curve of :mod:`._discrete_gaussian` (theta functions,
   certified), which is <= alpha Delta^2 / (2 sigma^2) with equality when (alpha - 1) Delta is an
   integer. So rho = d Delta^2 / (2 sigma^2) is the tight zCDP value (CKS 2020, Thm. 14 per
   coordinate, summed over coordinates as in their multivariate Thm. 15).

3. **(eps, delta), reduced to one dimension.** ln P(y)/Q(y) = (d Delta^2 - 2 Delta T) / (2 sigma^2)
   with T = y_1 + ... + y_d: the loss depends on y only through T. Hence, exactly,

       delta(eps) = P[W < tau] - e^eps P[W < tau - d Delta],   tau = (d Delta^2 - 2 eps sigma^2) / (2 Delta),

   where W is the sum of d iid N_Z(0, sigma^2). W is close to N_Z(0, v), v = d sigma^2, *pointwise
   and relatively*: w(k) e^{k^2/(2v)} is d-periodic in k (shift every summand by 1), and by Poisson
   summation phi(t) = E e^{itY} = N(t)/N(0) with N(t) = sum_m e^{-sigma^2 (t + 2 pi m)^2 / 2}, so
   w(k) = (1/2pi) int_{-pi}^{pi} phi(t)^d e^{-itk} dt = N(0)^{-d} (e^{-k^2/(2v)} / sqrt(2 pi v) + E2 - E1)
   with |E1| <= e1 = e^{-v pi^2/2} / (pi^2 v) (the Gaussian integral outside [-pi, pi]) and
   |E2| <= e2 = (1 + r)^d - 1 <= d r (1 + r)^(d-1), r = 2 e^{-sigma^2 pi^2 / 2} / (1 - e^{-4 sigma^2 pi^2}) (the aliases
   m != 0 on [-pi, pi]: |t + 2 pi m| >= (2|m| - 1) pi, and (2j - 1)^2 >= 1 + 8(j - 1)). Evaluating
   the periodic factor on representatives |k| <= d/2 gives w(k) = C e^{-k^2/(2v)} (1 + eta_k),
   |eta_k| <= eta = (e1 + e2) sqrt(2 pi v) e^{d/(8 sigma^2)}, and normalising, w(k) / p_v(k) lies in
   [1/lambda, lambda], lambda = (1 + eta)/(1 - eta), p_v the pmf of N_Z(0, v). Therefore

       delta(eps) <= lambda F(tau) - e^eps F(tau - d Delta) / lambda,   F(x) = P[N_Z(0, v) < x],

   the profile of the one-dimensional discrete Gaussian of variance v and integer shift d Delta,
   up to lambda (1 + 1e-40 and closer at the DP-DPE parameters; d = 1 needs no lambda).

4. **F, certified.** P[X <= a] = 1 - U(a+1)/Theta or U(-a)/Theta by symmetry, U(b) = sum_{k>=b}
   e^{-k^2/(2v)}, Theta = Theta_v(0) (:func:`._theta.log_theta`). For v <= 2^14, U is summed
   directly with the geometric tail bound of :mod:`._discrete_gaussian`. Above, by Euler-Maclaurin
   to order 6: U(b) = int_b^inf f + f(b)/2 - f'(b)/12 + f'''(b)/720 - f^(5)(b)/30240 + R, with
   int_b^inf f = sqrt(pi v / 2) erfc(b / sqrt(2v)), f^(n)(x) = (-1)^n v^{-n/2} He_n(x/sqrt v) f(x),
   |R| <= 2 zeta(6)/(2 pi)^6 int_b^inf |f^(6)|, which is |f^(5)(b)| / 30240 beyond the last zero of
   He_6 (b > 3.33 sqrt v: a far tail keeps its relative accuracy) and at most
   120 sqrt(2 pi) v^{-5/2} / 30240 everywhere (E|He_6(Z)| <= 120).

:meth:`DiscreteGaussianVector.delta` is the upper endpoint of that ball; :meth:`epsilon` the least
eps (bisection, rounded up) whose certified delta is <= the target. Both are checked in the tests
against the PLD of the d-fold composition of :class:`DiscreteGaussianPair` (exact lattice) and the
continuous Gaussian's analytic profile (mu = sqrt(d) Delta / sigma) they approach.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, ctx

from .._core._certified import exact, upper_float, working_precision
from .._core._renamed import renamed_keywords
from .._core._guarantees import RDP, ZCDP, ApproxDP
from .._core._validation import AccountingError, check_integer, check_probability
from ._approx import safe_approx
from .._core._mechanism_base import Mechanism, alpha_guard_bits, arb_to_fraction, guarded
from ._discrete_gaussian import discrete_gaussian_rdp_approx
from ._theta import log_theta, log_theta_ratio

__all__ = ["DiscreteGaussianVector", "sum_total_variation"]

#: Largest variance v = d sigma^2 whose CDF is summed term by term (above: Euler-Maclaurin).
DIRECT_MAX_VARIANCE = 1 << 14
#: Above the largest zero of He_6 (3.3243) f^(6) has one sign, so the Euler-Maclaurin remainder of
#: a far tail is relative to the tail, not to the whole sum.
_HE6_LAST_ZERO = 3.33
#: The bisection for eps stops at this relative width (the returned eps is the upper end).
EPSILON_RELATIVE_WIDTH = 1e-10


def _rational(name: str, value: object) -> int | Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, Fraction, float)):
        raise AccountingError(name, value, "a rational number > 0 (int, Fraction or float)")
    if isinstance(value, float) and not math.isfinite(value):
        raise AccountingError(name, value, "a finite rational number > 0")
    q = Fraction(value)
    if q <= 0:
        raise AccountingError(name, value, "a rational number > 0")
    return int(q) if q.denominator == 1 else q


def _rdp_ball(s2: arb, s2_float: float, sensitivity: int, alpha: arb) -> arb:
    """D_alpha(N_Z(0, s2) || N_Z(Delta, s2)) (the formula of :mod:`._discrete_gaussian` with s2 given)."""
    c = (arb_to_fraction(alpha) - 1) * sensitivity
    with guarded(alpha_guard_bits(alpha)):
        result = alpha * sensitivity * sensitivity / (2 * s2) + log_theta_ratio(s2, s2_float, c) / (alpha - 1)
    return +result


def _upper_tail(v: arb, v_float: float, b: int) -> arb:
    """A ball containing U(b) = sum_{k >= b} e^{-k^2/(2v)}, b >= 1 (module docstring, step 4)."""
    if v_float <= DIRECT_MAX_VARIANCE:
        # terms until the first omitted one is below e^-need relative to e^{-b^2/(2v)}: the rest is
        # bounded (geometric majorant), so the cut only affects tightness, never validity
        need = (ctx.prec + 30) * math.log(2)
        top = b + math.ceil(math.sqrt(2 * v_float * need)) + 1
        total = arb(0)
        for k in range(b, top):
            total += (-(arb(k) * k) / (2 * v)).exp()
        tail = (-(arb(top) * top) / (2 * v)).exp() / (1 - (-(arb(2 * top + 1)) / (2 * v)).exp())
        return total + arb(0).union(tail)
    root = v.sqrt()
    u = arb(b) / root
    f = (-(u * u) / 2).exp()
    he1 = u
    he3 = u**3 - 3 * u
    he5 = u**5 - 10 * u**3 + 15 * u
    d1 = -he1 * f / root  # f'(b)
    d3 = -he3 * f / root**3  # f'''(b)
    d5 = -he5 * f / root**5  # f^(5)(b)
    integral = (arb.pi() * v / 2).sqrt() * (u / arb(2).sqrt()).erfc()
    if u > _HE6_LAST_ZERO:  # f^(6) keeps its sign on [b, inf): int_b^inf |f^(6)| = |f^(5)(b)|
        remainder = abs(d5) / 30240
    else:
        remainder = 120 * (2 * arb.pi()).sqrt() / (30240 * v**2 * root)
    return integral + f / 2 - d1 / 12 + d3 / 720 - d5 / 30240 + arb(0).union(remainder).union(-remainder)


def _cdf_below(v: arb, v_float: float, log_theta_v: arb, x: Fraction) -> arb:
    """A ball containing P[X < x] for X ~ N_Z(0, v)."""
    a = math.ceil(x) - 1  # the largest integer < x
    theta = log_theta_v.exp()
    if a >= 0:
        return 1 - _upper_tail(v, v_float, a + 1) / theta
    return _upper_tail(v, v_float, -a) / theta


@functools.lru_cache(maxsize=4096)
def _eta_ball(sigma2: int | Fraction, dimension: int) -> arb:
    """eta of step 3 (0 for d = 1), to the working precision *relatively* (no cancellation); raises if eta >= 1."""
    if dimension == 1:
        return arb(0)
    s2 = exact(sigma2)
    v = s2 * dimension
    pi2 = arb.pi() ** 2
    r = 2 * (-(s2 * pi2) / 2).exp() / (1 - (-4 * s2 * pi2).exp())
    e2 = dimension * r * (1 + r) ** (dimension - 1)  # >= (1 + r)^d - 1, without the cancellation
    e1 = (-(v * pi2) / 2).exp() / (pi2 * v)
    eta = (e1 + e2) * (2 * arb.pi() * v).sqrt() * (arb(dimension) / (8 * s2)).exp()
    if not eta < 1:
        raise AccountingError(
            "sigma2", sigma2, f"a variance large enough for the certified reduction to one dimension (eta = {float(eta.mid()):.3g} >= 1 at d = {dimension})"
        )
    return eta


def _lambda_ball(sigma2: int | Fraction, dimension: int) -> arb:
    """lambda = (1 + eta)/(1 - eta) of step 3 (1 for d = 1)."""
    eta = _eta_ball(sigma2, dimension)
    return (1 + eta) / (1 - eta)


@renamed_keywords(count="n")
@functools.lru_cache(maxsize=4096)
def sum_total_variation(sigma2: int | Fraction, n: int) -> float:
    """Upper bound on the total variation between the sum of ``n`` iid N_Z(0, sigma2) (n users'
    noises, as :class:`accounting.DiscreteGaussianSum`'s ``n``: summed, not a composition count) and
    N_Z(0, n sigma2): lambda - 1 of step 3 (the pmf ratio lies in [1/lambda, lambda]); 1.0 where
    the bound does not apply. Exactly 0 for n = 1. ``count=``: former name, deprecated."""
    sigma2 = _rational("sigma2", sigma2)
    check_integer("n", n, minimum=1)
    try:
        with working_precision(None):
            eta = _eta_ball(sigma2, n)
            return min(1.0, upper_float(2 * eta / (1 - eta)))  # lambda - 1, computed without cancellation
    except AccountingError:
        return 1.0


@dataclass(frozen=True)
class DiscreteGaussianVector(Mechanism):
    """N_Z(0, sigma2)^d on an integer d-vector query whose neighbours differ by <= ``sensitivity`` per coordinate.

    ``sigma2`` is the per-coordinate variance parameter sigma^2 (a rational: it is what the exact
    sampler takes), ``sensitivity`` the box half-width Delta of the integer shift, ``dimension`` d.
    Exact Renyi curve, tight zCDP d Delta^2 / (2 sigma^2), and a certified (eps, delta) profile
    through the reduction to one dimension (module docstring).
    """

    sigma2: int | Fraction
    sensitivity: int
    dimension: int = 1

    family = "discrete-gaussian-vector"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", _rational("sigma2", self.sigma2))
        check_integer("sensitivity", self.sensitivity, minimum=1)
        check_integer("dimension", self.dimension, minimum=1)
        ratio = float(self.sigma2) / float(self.sensitivity) ** 2
        if not 1e-6 <= ratio <= 1e300:
            raise AccountingError("sigma2", self.sigma2, f"sigma2 / sensitivity^2 in [1e-6, 1e300] (got {ratio:.3g})")

    @property
    def rho(self) -> float:
        with working_precision(None):
            return upper_float(arb(self.dimension) * self.sensitivity**2 / (2 * exact(self.sigma2)))

    def zcdp(self) -> ZCDP:
        return ZCDP(self.rho)

    def rdp(self) -> RDP:
        sigma2, sensitivity, d = self.sigma2, self.sensitivity, self.dimension
        s2_float = float(sigma2)
        rho = self.rho

        def ball(alpha: arb) -> arb:
            return d * _rdp_ball(exact(sigma2), s2_float, sensitivity, alpha)

        return RDP.from_function(
            ball,
            f"DiscreteGaussianVector(sigma2={sigma2}, Delta={sensitivity}, d={d}) exact",
            approx=safe_approx(lambda alphas: d * discrete_gaussian_rdp_approx(math.sqrt(s2_float), sensitivity, alphas), lambda alphas: rho * alphas),
        )

    def delta(self, epsilon: float) -> float:
        """Certified upper bound on delta(eps) (module docstring, steps 1 and 3-4)."""
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, Fraction)) or not math.isfinite(float(epsilon)) or epsilon < 0:
            raise AccountingError("epsilon", epsilon, "a finite real number >= 0")
        return _delta_upper(self.sigma2, self.sensitivity, self.dimension, float(epsilon))

    def epsilon(self, delta: float) -> float:
        """The least eps (to relative 1e-10, rounded up) whose certified delta(eps) is <= ``delta``."""
        check_probability("delta", delta)
        return _epsilon_upper(self.sigma2, self.sensitivity, self.dimension, float(delta))

    def approx_dp(self, epsilon: float) -> ApproxDP:
        """(eps, delta(eps))-DP with the certified delta (the audit suite's "approx" claim)."""
        return ApproxDP(epsilon, self.delta(epsilon))

    def closed_forms(self) -> dict:
        z = self.zcdp()
        return {"cks_2020_multivariate_zcdp": z, "gaussian_rdp_alpha_rho": z.to_rdp()}

    def describe(self) -> str:
        return (
            f"discrete Gaussian N_Z(0, {self.sigma2})^{self.dimension} on an integer {self.dimension}-vector with "
            f"per-coordinate sensitivity {self.sensitivity}: {self.rho:.6g}-zCDP (tight), exact (eps, delta) profile"
        )


@functools.lru_cache(maxsize=8192)
def _delta_upper(sigma2: int | Fraction, sensitivity: int, dimension: int, epsilon: float) -> float:
    with working_precision(None):
        v = exact(sigma2) * dimension
        v_float = float(sigma2) * dimension
        shift = dimension * sensitivity
        eps = Fraction(epsilon)
        tau = (Fraction(dimension * sensitivity * sensitivity) - 2 * eps * Fraction(sigma2)) / (2 * sensitivity)
        lam = _lambda_ball(sigma2, dimension)
        log_theta_v = log_theta(v, v_float)
        below = _cdf_below(v, v_float, log_theta_v, tau)
        below_shifted = _cdf_below(v, v_float, log_theta_v, tau - shift)
        value = lam * below - exact(epsilon).exp() * below_shifted / lam
        return min(max(upper_float(value), 0.0), 1.0)


@functools.lru_cache(maxsize=4096)
def _epsilon_upper(sigma2: int | Fraction, sensitivity: int, dimension: int, delta: float) -> float:
    from ._analytic_gaussian import gdp_epsilon

    if _delta_upper(sigma2, sensitivity, dimension, 0.0) <= delta:
        return 0.0
    # start at the continuous Gaussian's eps (mu = sqrt(d) Delta / sigma), which the discrete one
    # approaches; it only steers the search: every bracket end is checked with the certified delta
    mu = math.sqrt(dimension) * sensitivity / math.sqrt(float(sigma2))
    guess = max(gdp_epsilon(mu, delta), 1e-12)
    hi = guess
    step = max(guess * 1e-6, 1e-12)
    while _delta_upper(sigma2, sensitivity, dimension, hi) > delta:
        hi += step
        step *= 2
        if hi > 1e6:
            raise AccountingError("delta", delta, "a delta reached by an eps <= 1e6 for this mechanism")
    lo = max(0.0, hi - step)
    while lo > 0 and _delta_upper(sigma2, sensitivity, dimension, lo) <= delta:
        hi, lo = lo, max(0.0, lo - step)
        step *= 2
    while hi - lo > EPSILON_RELATIVE_WIDTH * hi:
        mid = 0.5 * (lo + hi)
        if _delta_upper(sigma2, sensitivity, dimension, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi
