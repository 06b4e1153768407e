"""Slow reference twins of the numba kernels, and exact pmfs (mpmath) used as test oracles.

- ``*_pmf``: exact laws evaluated with mpmath in a local context (50 digits) and returned as
  floats on an integer grid, with the tail masses outside the grid, ready for ``_gof.integer_gof``.
- ``naive_*``: Canonne-Kamath-Steinke samplers written with Python ``Fraction`` and
  ``random.Random.randrange``, line by line from Algorithms 1-3 of arXiv:2004.00010.
- ``implemented_polya_law``: the law the float Polya kernel actually implements (its float
  thresholds on the 2**-53 grid), so its distance to the exact law can be bounded.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import numpy as np
from scipy import special

_DPS = 50


def _ctx() -> mpmath.MPContext:
    ctx = mpmath.MPContext()
    ctx.dps = _DPS
    return ctx


# ------------------------------------------------------------------------------------------------
# Exact pmfs: (lo, probs, lower_tail, upper_tail)
# ------------------------------------------------------------------------------------------------


def discrete_gaussian_pmf(sigma2: Fraction, half_width: int):
    """N_Z(0, sigma2) on [-half_width, half_width]; the tails beyond are returned separately."""
    ctx = _ctx()
    s2 = ctx.mpf(sigma2.numerator) / sigma2.denominator
    sigma = ctx.sqrt(s2)
    # the normaliser, summed to where the terms fall below 1e-60 of the total
    far = int(math.ceil(float(sigma) * 18)) + 2
    weights = [ctx.exp(-ctx.mpf(x) ** 2 / (2 * s2)) for x in range(0, far + 1)]
    z = weights[0] + 2 * ctx.fsum(weights[1:])
    probs = np.array([float(weights[abs(x)] / z) if abs(x) <= far else 0.0 for x in range(-half_width, half_width + 1)])
    tail = float(ctx.fsum(weights[half_width + 1 :]) / z) if half_width < far else 0.0
    return -half_width, probs, tail, tail


def discrete_laplace_pmf(scale: Fraction, half_width: int):
    """Lap_Z(b): P[X = x] = (e^{1/b} - 1)/(e^{1/b} + 1) e^{-|x|/b}; P[X > t] = e^{-(t+1)/b}/(1 + e^{-1/b})."""
    ctx = _ctx()
    b = ctx.mpf(scale.numerator) / scale.denominator
    c = (ctx.exp(1 / b) - 1) / (ctx.exp(1 / b) + 1)
    probs = np.array([float(c * ctx.exp(-abs(x) / b)) for x in range(-half_width, half_width + 1)])
    tail = float(ctx.exp(-(half_width + 1) / b) / (1 + ctx.exp(-1 / b)))
    return -half_width, probs, tail, tail


def geometric_pmf(scale: Fraction, width: int):
    """P[X = k] = (1 - e^{-1/b}) e^{-k/b} on [0, width); P[X >= width] = e^{-width/b}."""
    ctx = _ctx()
    b = ctx.mpf(scale.numerator) / scale.denominator
    probs = np.array([float((1 - ctx.exp(-1 / b)) * ctx.exp(-k / b)) for k in range(width)])
    return 0, probs, 0.0, float(ctx.exp(-width / b))


def polya_log_pmf(ctx, r, beta, k):
    return ctx.loggamma(k + r) - ctx.loggamma(k + 1) - ctx.loggamma(r) + k * ctx.log(beta) + r * ctx.log1p(-beta)


def polya_pmf(r: float, beta: float, width: int):
    """Polya(r, beta) on [0, width) (r, beta taken as the exact values of the given floats)."""
    ctx = _ctx()
    rr, bb = ctx.mpf(r), ctx.mpf(beta)
    probs = [ctx.exp(polya_log_pmf(ctx, rr, bb, k)) for k in range(width)]
    upper = 1 - ctx.fsum(probs)
    return 0, np.array([float(p) for p in probs]), 0.0, max(float(upper), 0.0)


def polya_difference_pmf(r: float, beta: float, half_width: int):
    """gamma+ - gamma- for gamma+- iid Polya(r, beta), on [-half_width, half_width]."""
    ctx = _ctx()
    rr, bb = ctx.mpf(r), ctx.mpf(beta)
    width = 4 * half_width + 200
    one = [ctx.exp(polya_log_pmf(ctx, rr, bb, k)) for k in range(width)]
    diff = []
    for d in range(0, half_width + 1):
        diff.append(ctx.fsum(one[k + d] * one[k] for k in range(width - d)))
    probs = np.array([float(diff[abs(x)]) for x in range(-half_width, half_width + 1)])
    tail = float((1 - diff[0] - 2 * ctx.fsum(diff[1:])) / 2)
    return -half_width, probs, max(tail, 0.0), max(tail, 0.0)


def skellam_pmf(mu: float, half_width: int):
    """Sk(0, mu) = Poisson(mu/2) - Poisson(mu/2): P[X = k] = e^{-mu} I_|k|(mu) (scipy ``ive``,
    relative accuracy ~1e-14, ample for tests at N ~ 1e6) on [-half_width, half_width]."""
    ks = np.arange(-half_width, half_width + 1)
    probs = special.ive(np.abs(ks), mu)
    rest = max(1.0 - probs.sum(), 0.0)
    return -half_width, probs, rest / 2, rest / 2


def binomial_pmf(n: int, p: float):
    from scipy import stats

    return 0, stats.binom.pmf(np.arange(n + 1), n, p), 0.0, 0.0


def wrap_mod(lo: int, probs: np.ndarray, m: int) -> np.ndarray:
    """The law of X mod m on {0..m-1} from the pmf of X on lo, lo+1, ..."""
    out = np.zeros(m)
    np.add.at(out, (np.arange(lo, lo + probs.size)) % m, probs)
    return out


# ------------------------------------------------------------------------------------------------
# Implemented (float) Polya law, replicating the kernel's arithmetic
# ------------------------------------------------------------------------------------------------


def implemented_polya_law(r: float, beta: float, width: int) -> np.ndarray:
    """P[X = k], k < width, of the kernel: u < p0 on the 2**-53 grid, then inversion of X | X >= 1
    with thresholds c_k accumulated in float as the kernel does."""
    log_p0 = r * math.log1p(-beta)
    p0 = math.exp(log_p0)
    q1 = r * beta * p0 / -math.expm1(log_p0)
    grid = 2.0**53
    # P[u < c] for u uniform on {0, 1, ..., 2**53 - 1} / 2**53 is ceil(c 2**53) / 2**53 (c <= 1)
    p_zero = math.ceil(p0 * grid) / grid
    law = np.zeros(width)
    law[0] = p_zero
    prev, pk, c, k = 0.0, q1, q1, 1
    while k < width:
        cc = min(c, 1.0)
        law[k] = (1.0 - p_zero) * (math.ceil(cc * grid) - math.ceil(prev * grid)) / grid
        if cc >= 1.0:
            break
        pk *= beta * (k + r) / (k + 1)
        c_next = c + pk
        if c_next == c:
            law[k + 1 if k + 1 < width else k] += (1.0 - p_zero) * (grid - math.ceil(c * grid)) / grid
            break
        prev, c, k = c, c_next, k + 1
    return law


# ------------------------------------------------------------------------------------------------
# Naive CKS samplers (Fractions, random.Random)
# ------------------------------------------------------------------------------------------------


def naive_bernoulli(rnd: random.Random, p: Fraction) -> bool:
    return rnd.randrange(p.denominator) < p.numerator


def naive_bernoulli_exp(rnd: random.Random, gamma: Fraction) -> bool:
    """CKS Algorithm 1 (with the floor(gamma) split for gamma > 1)."""
    while gamma > 1:
        if not naive_bernoulli_exp(rnd, Fraction(1)):
            return False
        gamma -= 1
    k = 1
    while naive_bernoulli(rnd, gamma / k):
        k += 1
    return k % 2 == 1


def naive_discrete_laplace(rnd: random.Random, scale: Fraction) -> int:
    """CKS Algorithm 2: Lap_Z(t/s)."""
    s, t = scale.denominator, scale.numerator
    while True:
        u = rnd.randrange(t)
        if not naive_bernoulli_exp(rnd, Fraction(u, t)):
            continue
        v = 0
        while naive_bernoulli_exp(rnd, Fraction(1)):
            v += 1
        y = (u + t * v) // s
        b = rnd.randrange(2)
        if b == 1 and y == 0:
            continue
        return -y if b else y


def naive_discrete_gaussian(rnd: random.Random, sigma2: Fraction) -> int:
    """CKS Algorithm 3: N_Z(0, sigma2), t = floor(sigma) + 1."""
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    while True:
        y = naive_discrete_laplace(rnd, Fraction(t))
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if naive_bernoulli_exp(rnd, gamma):
            return y


def naive_server_view(rnd: random.Random, x, g: int, m: int, noise) -> int:
    """R then S for one run, user by user, with Python integers; ``noise(rnd)`` draws one eta."""
    total = 0
    for xi in x:
        xg = Fraction(xi) * g
        base = math.floor(xg)
        xhat = base + (1 if naive_bernoulli(rnd, xg - base) else 0) if xg != base else base
        total = (total + (xhat + noise(rnd)) % m) % m
    return total


# ------------------------------------------------------------------------------------------------
# The (eps, delta) slack of a sampler within total variation t of the analysed law
# ------------------------------------------------------------------------------------------------


def _slack(epsilon: float, delta: float, tv: float, sign: int):
    """delta + sign (1 + e^eps) tv as an mpmath number at 400 bits (every input a float: exact)."""
    ctx = mpmath.MPContext()
    ctx.prec = 400
    return ctx, ctx.mpf(delta) + sign * (1 + ctx.exp(ctx.mpf(epsilon))) * ctx.mpf(tv)


def delta_plus_tv_slack(epsilon: float, delta: float, tv: float) -> float:
    """The least float >= delta + (1 + e^eps) tv: the delta of a mechanism within total variation
    tv of an (eps, delta)-DP one (P[M'(x) in E] <= e^eps P[M'(x') in E] + delta + (1 + e^eps) tv)."""
    ctx, value = _slack(epsilon, delta, tv, +1)
    return _float_up(ctx, value)


def delta_minus_tv_slack(epsilon: float, delta: float, tv: float) -> float:
    """The greatest float <= delta - (1 + e^eps) tv."""
    ctx, value = _slack(epsilon, delta, tv, -1)
    return _float_down(ctx, value)


def _float_down(ctx, value) -> float:
    x = float(value)
    while ctx.mpf(x) > value:
        x = math.nextafter(x, -math.inf)
    while ctx.mpf(math.nextafter(x, math.inf)) <= value:
        x = math.nextafter(x, math.inf)
    return x


def _float_up(ctx, value) -> float:
    x = float(value)
    while ctx.mpf(x) < value:
        x = math.nextafter(x, math.inf)
    while ctx.mpf(math.nextafter(x, -math.inf)) >= value:
        x = math.nextafter(x, -math.inf)
    return x


def discrete_gaussian_ymax(sigma2: int) -> int:
    """The exact sampler's truncation point for an integer sigma^2 (CKS Alg. 3 in int64): candidates
    with |Y| > floor((2^31 - 1 + sigma^2) / t), t = floor(sigma) + 1, are restarted."""
    t = math.isqrt(sigma2) + 1
    return (2**31 - 1 + sigma2) // t


def discrete_gaussian_tail_bound(ctx, sigma2: int, k: int):
    """2 e^{-x^2/(2 sigma^2)} / (1 - e^{-x/sigma^2}), x = k + 1: P[|X| > k] <= this for N_Z(0, sigma^2)."""
    if k < 0:
        return ctx.mpf(1)
    x = ctx.mpf(k + 1)
    return min(ctx.mpf(1), 2 * ctx.exp(-x * x / (2 * sigma2)) / (1 - ctx.exp(-x / sigma2)))


def truncation_charge(sigma2: int, sensitivity: int, s: int, delta: float, aggregate: bool) -> tuple[float, float]:
    """(delta_0, charged delta) of s coordinates of N_Z(0, sigma^2) truncated at ymax on a query moving
    by <= sensitivity per coordinate: for every event E, P'[E] <= (P[E in both boxes] + P[Z leaves the
    shifted box]) / P[box], so the executed release is (eps, (lam^s delta_0 + s tau)/(1 - s t1))-DP when
    the untruncated one is (eps, delta_0)-DP; t1 = P[|Z| > ymax], tau = P[|Z| > ymax - sensitivity]
    (lam = 1 + 2^-100 and t1, tau >= 2^-100 where the one-draw sum may replace the draws)."""
    ctx = mpmath.MPContext()
    ctx.prec = 400
    ymax = discrete_gaussian_ymax(sigma2)
    t1 = discrete_gaussian_tail_bound(ctx, sigma2, ymax)
    tau = discrete_gaussian_tail_bound(ctx, sigma2, ymax - sensitivity)
    lam = ctx.mpf(1)
    if aggregate:
        t1, tau, lam = max(t1, ctx.mpf(2) ** -100), max(tau, ctx.mpf(2) ** -100), 1 + ctx.mpf(2) ** -100
    delta0 = _float_down(ctx, (ctx.mpf(delta) * (1 - s * t1) - s * tau) / lam**s)
    charged = _float_up(ctx, (lam**s * ctx.mpf(delta0) + s * tau) / (1 - s * t1))
    return delta0, min(charged, delta)


def aggregate_epsilon(epsilon: float, s: int) -> float:
    """The least float >= eps + 2 s log(1 + 2^-100)."""
    ctx = mpmath.MPContext()
    ctx.prec = 400
    return _float_up(ctx, ctx.mpf(epsilon) + 2 * s * ctx.log(1 + ctx.mpf(2) ** -100))
