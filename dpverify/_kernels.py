"""Private numba kernels behind :mod:`dpverify._samplers` (thin, unvalidated, ``cache=True``).

Each kernel takes a ``numpy.random.Generator`` (numba reproduces its stream in nopython mode) and
trusts its arguments: the public wrappers in ``_samplers`` validate them and enforce the ranges
stated here, which are the ranges where the integer arithmetic cannot overflow. No fastmath.

Exact discrete samplers follow Canonne, Kamath & Steinke 2020 (arXiv:2004.00010):

* ``_bernoulli_rational``: Bernoulli(num/den) exactly, by comparing fresh random bits with the
  binary expansion of num/den (long division), 16 bits at a time when den < 2**47 (a tie,
  probability 2**-16, moves on to the next 16 bits) and bit by bit up to den <= 2**62.
* ``_bernoulli_exp_unit`` / ``_bernoulli_exp``: Bernoulli(exp(-num/den)), CKS Algorithm 1, with
  gamma > 1 split into floor(gamma) Bernoulli(exp(-1)) trials and one for the fractional part.
* ``_geometric_exp`` / ``_discrete_laplace``: CKS Algorithm 2 for Lap_Z(t/s), t <= 2**61, s <= 2**62.
* ``_discrete_laplace_fast``: the same law, with Algorithm 2's block count V (P[V >= v] = e^{-v})
  drawn by inverting one uniform against exact thresholds (``_exp_tail_count``) instead of
  Bernoulli(e^{-1}) trials: 0.81-0.85x the time, a different bit stream (the float-safe curator's hot path;
  the other samplers keep theirs, so every earlier seeded result stands).
* ``_discrete_gaussian``: CKS Algorithm 3 for N_Z(0, p/q) with t = floor(sigma) + 1.

Random bits come from the generator's bit generator, ``bits = rng.bit_generator`` (53 uniform bits
per ``next_double(bits)``, the very draw ``rng.random()`` makes, so the streams are those of
``rng.random()``), through a bit buffer (word, left) threaded through the kernels, since an exact
Bernoulli needs ~2 bits on average. The kernels pass ``bits``, not the Generator, to each other:
numba increfs and decrefs a Generator's meminfo on every call that passes it (measured: a 16-bit
draw through a helper taking the Generator 20 ns, through one taking its bit generator 1.6 ns, the
same code inline 2 ns; ``inline="always"`` does not remove it), which made a discrete Laplace draw
cost ~10 such calls. The fill loops (``_fill_*``) take the Generator from the Python wrappers and
take ``rng.bit_generator`` once. Samplers that call numpy's own methods (``rng.poisson``,
``rng.binomial``, the float baselines) take the Generator. The CKS loops (``_bernoulli_exp_unit``,
``_bernoulli_exp_minus_one``, ``_uniform_int``) are inlined at the numba level: measured +35%
discrete-Gaussian throughput at no extra compile time.

Outputs are int64, so an unbounded law can only be sampled conditioned on a bounded range. Where
that matters the kernel restarts the draw (exact conditioning) instead of wrapping around:
``_geometric_exp`` restarts if U + t V would exceed 2**62 (probability below exp(-2**62/t)), and
``_discrete_gaussian`` restarts a candidate with |Y| > ymax, so its law is exactly N_Z(0, sigma^2)
conditioned on |X| <= ymax; ``_samplers.discrete_gaussian`` only accepts parameters for which that
conditioning moves the law by less than 2**-100 in total variation.

The Polya sampler is the one float sampler among the discrete laws (its parameter beta =
exp(-eps/g) is irrational anyway): see ``_polya`` for its law and its deviation bound.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.np.random.generator_core import next_double, next_uint64

#: 2**53 as a float: ``rng.random() * TWO53`` is an exact uniform integer in [0, 2**53).
TWO53 = 9007199254740992.0
#: Largest denominator for which ``_bernoulli_rational`` cannot overflow (2 * r < 2**63).
MAX_DEN = 1 << 62
#: Bits of num/den compared per step in ``_bernoulli_rational`` when den < CHUNK_DEN (then
#: w den + den <= 2**CHUNK den < 2**63 for every CHUNK-bit w).
CHUNK = 16
CHUNK_MASK = (1 << CHUNK) - 1
CHUNK_DEN = 1 << (63 - CHUNK)
#: Largest t for CKS Algorithm 2 (U + t V must stay below 2**62 for V = 0 and 1).
MAX_T = 1 << 61


@numba.njit(cache=True)
def _uint53(bits):
    return np.int64(next_double(bits) * TWO53)


# Exact samplers consume about two random bits per Bernoulli, so spending a whole 53-bit
# ``next_double(bits)`` on each would make the RNG the bottleneck. A bit buffer (word, left) is threaded
# through the kernels as plain integers and returned with every result: numba keeps tuples in
# registers, whereas a buffer held in an array costs an atomic reference-count pair per call
# (measured: 9.5 ns against 0.5 ns per bit).


@numba.njit(cache=True)
def _take_bits(bits, word, left, k):
    """k (1 <= k <= 53) fresh uniform bits -> (bits, word, left)."""
    if left < k:
        word = _uint53(bits)
        left = 53
    left -= k
    return (word >> left) & ((np.int64(1) << k) - 1), word, left


@numba.njit(cache=True)
def _bernoulli_rational(bits, word, left, num, den):
    """(B, word, left) with B ~ Bernoulli(num/den) exactly (0 <= num <= den <= 2**62)."""
    if num <= 0:
        return False, word, left
    if num >= den:
        return True, word, left
    r = num
    if den < CHUNK_DEN:
        # Compare 16 random bits w with the next 16-bit digit d = floor(x/den) of num/den,
        # x = r 2**16, without dividing: w < d iff (w+1) den <= x, w > d iff w den > x. A tie
        # (probability 2**-16) moves to the next digit with remainder x - w den.
        while True:
            x = r << CHUNK
            if left < CHUNK:
                word = _uint53(bits)
                left = 53
            left -= CHUNK
            wd = ((word >> left) & CHUNK_MASK) * den
            if wd + den <= x:
                return True, word, left
            if wd > x:
                return False, word, left
            r = x - wd
            if r == 0:
                return False, word, left
    while True:
        # Long division yields the next bit of num/den; U < num/den is decided at the first
        # bit where the expansion of U (fresh random bits) and that of num/den differ.
        r <<= 1
        pbit = r >= den
        if pbit:
            r -= den
        if left == 0:
            word = _uint53(bits)
            left = 53
        left -= 1
        ubit = ((word >> left) & 1) == 1
        if ubit != pbit:
            return pbit, word, left
        if r == 0:
            # num/den has no more 1 bits, and U equals it with probability 0.
            return False, word, left


@numba.njit(cache=True)
def _vmax(t):
    """Largest V with U + t V < 2**62 for every U < t: larger V restart the draw."""
    return ((np.int64(1) << 62) - t) // t


@numba.njit(cache=True)
def _bit_length(n):
    """Bits of n - 1 (>= 1): the k for which rejection from k-bit words samples {0..n-1}.

    frexp rounds n - 1 > 2**53 to a float, which can only raise k by one (at a power of two),
    where the rejection loop is still exact, just slower."""
    return max(1, math.frexp(float(n - 1))[1])


@numba.njit(cache=True, inline="always")
def _uniform_int(bits, word, left, n, k):
    """(U, word, left), U uniform on {0, ..., n-1} exactly (1 <= n <= 2**61), by rejection from
    k-bit words, k = _bit_length(n) (precomputed by the caller: frexp is a libm call)."""
    if n == 1:
        return np.int64(0), word, left
    while True:
        if k <= 53:
            w, word, left = _take_bits(bits, word, left, k)
        else:
            hi, word, left = _take_bits(bits, word, left, k - 31)
            lo, word, left = _take_bits(bits, word, left, 31)
            w = (hi << 31) | lo
        if w < n:
            return w, word, left


@numba.njit(cache=True, inline="always")
def _bernoulli_exp_unit(bits, word, left, num, den):
    """Bernoulli(exp(-num/den)) for 0 <= num <= den <= 2**62: CKS Algorithm 1."""
    if num == 0:
        return True, word, left
    k = np.int64(1)
    fden = float(den)
    while True:
        # A ~ Bernoulli(gamma / k); the product form avoids den * k overflowing. The float test
        # is a safe sufficient condition for den * k <= 2**62 (no division on the hot path), and
        # both branches draw exactly Bernoulli(gamma / k).
        if fden * k <= 2.0**61:
            a, word, left = _bernoulli_rational(bits, word, left, num, den * k)
        else:
            a, word, left = _bernoulli_rational(bits, word, left, np.int64(1), k)
            if a:
                a, word, left = _bernoulli_rational(bits, word, left, num, den)
        if not a:
            break
        k += 1
    return (k & 1) == 1, word, left


@numba.njit(cache=True, inline="always")
def _bernoulli_exp_minus_one(bits, word, left):
    """Bernoulli(exp(-1)) exactly (CKS Algorithm 1 with gamma = 1; A_1 = 1 always)."""
    k = np.int64(2)
    while True:
        a, word, left = _bernoulli_rational(bits, word, left, np.int64(1), k)
        if not a:
            return (k & 1) == 1, word, left
        k += 1


@numba.njit(cache=True)
def _bernoulli_exp(bits, word, left, num, den):
    """Bernoulli(exp(-num/den)) for num >= 0, 1 <= den <= 2**62 (any gamma >= 0)."""
    if num <= den:
        # the common case in Algorithm 3; skipping the integer division saves ~40 cycles
        return _bernoulli_exp_unit(bits, word, left, num, den)
    whole = num // den
    rem = num - whole * den
    # exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma)): independent trials, stop at a failure.
    i = np.int64(0)
    while i < whole:
        a, word, left = _bernoulli_exp_minus_one(bits, word, left)
        if not a:
            return False, word, left
        i += 1
    return _bernoulli_exp_unit(bits, word, left, rem, den)


@numba.njit(cache=True)
def _geometric_exp(bits, word, left, s, t, tbits, vmax):
    """P[Y = y] = (1 - e^{-s/t}) e^{-y s/t}, y >= 0 (scale t/s): the one-sided half of CKS Alg. 2.

    tbits = _bit_length(t) and vmax = _vmax(t) are precomputed by the caller."""
    while True:
        while True:
            u, word, left = _uniform_int(bits, word, left, t, tbits)
            d, word, left = _bernoulli_exp_unit(bits, word, left, u, t)
            if d:
                break
        v = np.int64(0)
        while True:
            a, word, left = _bernoulli_exp_minus_one(bits, word, left)
            if not a:
                break
            v += 1
        if v <= vmax:
            # X = U + t V has P[X = x] proportional to exp(-x/t); floor(X/s) is geometric in s/t.
            x = u + t * v
            return (x if s == 1 else x // s), word, left


@numba.njit(cache=True)
def _discrete_laplace(bits, word, left, s, t, tbits, vmax):
    """Lap_Z(t/s): P[Y = y] proportional to exp(-|y| s/t) (CKS Algorithm 2)."""
    while True:
        y, word, left = _geometric_exp(bits, word, left, s, t, tbits, vmax)
        b, word, left = _take_bits(bits, word, left, 1)
        if b == 1 and y == 0:
            continue
        return (-y if b == 1 else y), word, left


#: floor(e^{-v} 2^64) for v = 1..40: the first 64 bits of e^{-v} (certified with Arb, tested), strictly
#: decreasing. Beyond v = 40 (probability e^{-40}) the count continues by Bernoulli(e^{-1}) trials.
EXP_NEG_WORDS = np.array([
    6786177901268885274, 2496495334008788799, 918409308362266468, 337863903126961437,
    124293183874348897, 45724907025114798, 16821253244015389, 6188193243211692, 2276509072173612,
    837480885292947, 308092000073334, 113340712816370, 41695718092859, 15338997471243,
    5642901817851, 2075907567336, 763683715795, 280943538598, 103353351980, 38021573369,
    13987355163, 5145660401, 1892982672, 696389407, 256187346, 94246057, 34671187, 12754816,
    4692234, 1726176, 635024, 233612, 85941, 31616, 11630, 4278, 1574, 579, 213, 78,
], dtype=np.uint64)


def exp_neg_word(v: int, k: int) -> int:
    """The k-th 64-bit word of the binary expansion of e^{-v}: floor(e^{-v} 2^(64 k)) mod 2^64,
    exactly (Arb balls at increasing precision until the floor is certain; e^{-v} is irrational, so
    it always is). Python; the kernels call it only on a 64-bit tie (probability 2^-64)."""
    from flint import arb, ctx

    prec = 64 * k + 64
    while True:
        with ctx.workprec(prec):
            x = arb(-v).exp() * arb(2) ** (64 * k)
            lo, hi = x.lower().floor(), x.upper().floor()
            if lo == hi:
                m, e = (int(z) for z in lo.man_exp())
                n = m << e if e >= 0 else m >> -e
                return n % (1 << 64)
        prec *= 2


@numba.njit(cache=True)
def _exp_neg_tie(bits, v):
    """W < e^{-v}, for a uniform W whose first 64 bits equal e^{-v}'s: compare W's next words (fresh
    draws) with e^{-v}'s next words (``exp_neg_word``, in Python: this path has probability 2^-64)."""
    k = 2
    while True:
        w = next_uint64(bits)
        with numba.objmode(d="uint64"):
            d = exp_neg_word(v, k)
        if w < d:
            return True
        if w > d:
            return False
        k += 1


@numba.njit(cache=True)
def _exp_tail_count(bits, word, left):
    """V with P[V >= v] = e^{-v}, v >= 0 (the block count of CKS Algorithm 2), exactly, by inversion:
    V = #{v >= 1 : W < e^{-v}} for one uniform W. W's first 64 bits decide each comparison with
    ``EXP_NEG_WORDS[v - 1]`` unless equal to it (then ``_exp_neg_tie``); the thresholds decrease, so
    once W's first word exceeds one it exceeds the rest. Past the table (W < e^{-40}) V continues as
    40 + the count of Bernoulli(e^{-1}) successes (memoryless)."""
    w = next_uint64(bits)
    n = EXP_NEG_WORDS.size
    v = 0
    while v < n:
        c = EXP_NEG_WORDS[v]
        if w > c:
            return np.int64(v), word, left
        if w == c:
            if not _exp_neg_tie(bits, v + 1):
                return np.int64(v), word, left
            # W < e^{-(v+1)} and W >= c 2^-64 > e^{-(v+2)}: V = v + 1 (or past the table)
            v += 1
            if v < n:
                return np.int64(v), word, left
            break
        v += 1
    while True:
        a, word, left = _bernoulli_exp_minus_one(bits, word, left)
        if not a:
            return np.int64(v), word, left
        v += 1


@numba.njit(cache=True)
def _discrete_laplace_fast(bits, word, left, s, t, tbits, vmax):
    """Lap_Z(t/s) (the law of ``_discrete_laplace``): CKS Algorithm 2 with its block count V drawn by
    ``_exp_tail_count`` (one 64-bit uniform and ~1.6 comparisons instead of ~2.7 Bernoulli trials;
    measured 0.81-0.85x the time of ``_discrete_laplace`` at scale 2^16)."""
    while True:
        while True:
            u, word, left = _uniform_int(bits, word, left, t, tbits)
            d, word, left = _bernoulli_exp_unit(bits, word, left, u, t)
            if d:
                break
        v, word, left = _exp_tail_count(bits, word, left)
        if v > vmax:
            continue  # U + t V would reach 2**62: restart (exact conditioning, as _geometric_exp)
        x = u + t * v
        y = x if s == 1 else x // s
        b, word, left = _take_bits(bits, word, left, 1)
        if b == 1 and y == 0:
            continue
        return (-y if b == 1 else y), word, left


@numba.njit(cache=True)
def _discrete_gaussian(bits, word, left, p, q, t, ymax, tbits, vmax):
    """N_Z(0, p/q) conditioned on |X| <= ymax (CKS Algorithm 3, t = floor(sigma) + 1).

    gamma = (|Y| - sigma^2/t)^2 / (2 sigma^2) = A^2 / D with A = |Y| q t - p, D = 2 p q t^2;
    the wrapper guarantees |A| < 2**31 for |Y| <= ymax and D <= 2**62.
    """
    d = 2 * p * q * t * t
    one = np.int64(1)
    while True:
        y, word, left = _discrete_laplace(bits, word, left, one, t, tbits, vmax)
        a = abs(y)
        if a > ymax:
            continue
        big_a = a * q * t - p
        c, word, left = _bernoulli_exp(bits, word, left, big_a * big_a, d)
        if c:
            return y, word, left


# ---------------------------------------------------------------------------------------------
# Polya(r, beta): P[X = x] = Gamma(x + r) / (x! Gamma(r)) beta^x (1 - beta)^r.
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _polya_constants(r, beta):
    """(p0, q1): P[X = 0] = (1-beta)^r and P[X = 1 | X >= 1] = r beta p0 / (1 - p0), in log space."""
    log_p0 = r * math.log1p(-beta)
    p0 = math.exp(log_p0)
    # 1 - p0 by expm1: for r = 2**-24 it is ~1e-7 and a plain subtraction would keep 9 digits.
    q1 = r * beta * p0 / -math.expm1(log_p0)
    return p0, q1


@numba.njit(cache=True)
def _polya_nonzero(bits, r, beta, q1):
    """X | X >= 1 by inversion of the conditional pmf (recurrence p(k+1)/p(k) = beta (k+r)/(k+1))."""
    u = next_double(bits)
    k = np.int64(1)
    pk = q1
    c = pk
    while u >= c:
        pk *= beta * (k + r) / (k + 1)
        k += 1
        c_next = c + pk
        if c_next == c:
            # pk no longer moves the float sum c: stop here rather than loop forever (this lumps
            # the remaining tail on k; tests bound the resulting total-variation error).
            return k
        c = c_next
    return k


@numba.njit(cache=True)
def _polya(bits, r, beta, p0, q1):
    """Polya(r, beta): zero with one uniform (P = p0), otherwise inversion of X | X >= 1.

    Deviation from the exact law: P[X = 0] is p0 rounded (relative error a few ulp) on the 2**-53
    grid of ``next_double(bits)``; the conditional inversion errs by at most a few ulp per pmf term,
    weighted by 1 - p0. tests/test_samplers.py computes the implemented law and bounds its total
    variation distance to the exact (mpmath) law.
    """
    if next_double(bits) < p0:
        return np.int64(0)
    return _polya_nonzero(bits, r, beta, q1)


@numba.njit(cache=True)
def _polya_difference_nonzero(bits, r, beta, q1, c1, c2):
    """gamma+ - gamma- given that gamma+ and gamma- are not both zero.

    The three cases (+ only, - only, both nonzero) have probabilities p0/(1+p0), p0/(1+p0) and
    (1-p0)/(1+p0); c1, c2 are the cumulative thresholds.
    """
    v = next_double(bits)
    if v < c1:
        return _polya_nonzero(bits, r, beta, q1)
    if v < c2:
        return -_polya_nonzero(bits, r, beta, q1)
    return _polya_nonzero(bits, r, beta, q1) - _polya_nonzero(bits, r, beta, q1)


@numba.njit(cache=True)
def _polya_difference(bits, r, beta, p0, q1, p00, c1, c2):
    """gamma+ - gamma-, gamma+- iid Polya(r, beta); one uniform when both are zero (P = p00 = p0^2)."""
    if next_double(bits) < p00:
        return np.int64(0)
    return _polya_difference_nonzero(bits, r, beta, q1, c1, c2)


@numba.njit(cache=True)
def _skellam(rng, half_mu):
    """Sk(0, 2 half_mu) = Poisson(half_mu) - Poisson(half_mu)."""
    if half_mu == 0.0:
        return np.int64(0)
    return np.int64(rng.poisson(half_mu)) - np.int64(rng.poisson(half_mu))


# ---------------------------------------------------------------------------------------------
# Vectorised fillers: one compiled loop per law, writing into a preallocated array.
# ---------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _fill_bernoulli_rational(rng, num, den, out):
    bits = rng.bit_generator
    word = np.int64(0)
    left = 0
    for i in range(out.size):
        b, word, left = _bernoulli_rational(bits, word, left, num, den)
        out[i] = 1 if b else 0


@numba.njit(cache=True)
def _fill_bernoulli_exp(rng, num, den, out):
    bits = rng.bit_generator
    word = np.int64(0)
    left = 0
    for i in range(out.size):
        b, word, left = _bernoulli_exp(bits, word, left, num, den)
        out[i] = 1 if b else 0


@numba.njit(cache=True)
def _fill_geometric_exp(rng, s, t, out):
    bits = rng.bit_generator
    tbits = _bit_length(t)
    vmax = _vmax(t)
    word = np.int64(0)
    left = 0
    for i in range(out.size):
        out[i], word, left = _geometric_exp(bits, word, left, s, t, tbits, vmax)


@numba.njit(cache=True)
def _fill_discrete_laplace(rng, s, t, out):
    bits = rng.bit_generator
    tbits = _bit_length(t)
    vmax = _vmax(t)
    word = np.int64(0)
    left = 0
    for i in range(out.size):
        out[i], word, left = _discrete_laplace(bits, word, left, s, t, tbits, vmax)


@numba.njit(cache=True)
def _fill_discrete_laplace_fast(rng, s, t, out):
    bits = rng.bit_generator
    tbits = _bit_length(t)
    vmax = _vmax(t)
    word = np.int64(0)
    left = 0
    for i in range(out.size):
        out[i], word, left = _discrete_laplace_fast(bits, word, left, s, t, tbits, vmax)


@numba.njit(cache=True)
def _fill_discrete_gaussian(rng, p, q, t, ymax, out):
    bits = rng.bit_generator
    tbits = _bit_length(t)
    vmax = _vmax(t)
    word = np.int64(0)
    left = 0
    for i in range(out.size):
        out[i], word, left = _discrete_gaussian(bits, word, left, p, q, t, ymax, tbits, vmax)


@numba.njit(cache=True)
def _fill_polya(rng, r, beta, out):
    bits = rng.bit_generator
    p0, q1 = _polya_constants(r, beta)
    for i in range(out.size):
        out[i] = _polya(bits, r, beta, p0, q1)


@numba.njit(cache=True)
def _polya_difference_constants(r, beta):
    p0, q1 = _polya_constants(r, beta)
    p00 = math.exp(2.0 * r * math.log1p(-beta))
    c1 = p0 / (1.0 + p0)
    return p0, q1, p00, c1, 2.0 * c1


@numba.njit(cache=True)
def _fill_polya_difference(rng, r, beta, out):
    bits = rng.bit_generator
    p0, q1, p00, c1, c2 = _polya_difference_constants(r, beta)
    for i in range(out.size):
        out[i] = _polya_difference(bits, r, beta, p0, q1, p00, c1, c2)


@numba.njit(cache=True)
def _fill_skellam(rng, mu, out):
    half_mu = 0.5 * mu
    for i in range(out.size):
        out[i] = _skellam(rng, half_mu)


@numba.njit(cache=True)
def _fill_binomial(rng, n, p, out):
    for i in range(out.size):
        out[i] = rng.binomial(n, p)


@numba.njit(cache=True)
def _fill_laplace(rng, scale, out):
    for i in range(out.size):
        out[i] = rng.laplace(0.0, scale)


@numba.njit(cache=True)
def _fill_gaussian(rng, sigma, out):
    for i in range(out.size):
        out[i] = rng.normal(0.0, sigma)
