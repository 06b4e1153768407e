"""Private numba kernels behind :mod:`dpverify._executed._samplers` (thin, unvalidated, ``cache=True``).

Each kernel takes a ``numpy.random.Generator`` (numba reproduces its stream in nopython mode) and
trusts its arguments: the public wrappers in ``_samplers`` validate them and enforce the ranges
stated here, which are the ranges where the integer arithmetic cannot overflow. No fastmath.

Exact discrete samplers follow Canonne, Kamath & Steinke 2020 (arXiv:2004.00010):

* ``_bernoulli_rational``: Bernoulli(num/den) exactly, by comparing fresh random bits with the
  binary expansion of num/den (long division), 16 bits at a time when den < 2**47 (a tie,
  probability 2**-16, moves on to the next 16 bits) and bit by bit up to den <= 2**62.
* ``_bernoulli_exp_unit`` / ``_bernoulli_exp``: Bernoulli(exp(-num/den)), CKS Algorithm 1, with
  gamma > 1 split into floor(gamma) Bernoulli(exp(-1)) trials and one for the fractional part.
* ``_geometric_exp`` / ``_discrete_laplace``: CKS Algorithm 2 for Lap_Z(t/s), t <= 2**61 (int64),
  s <= 2**62; the wrappers take t <= ``_samplers.MAX_T`` = floor(2**62 / 70), where the conditioning
  below moves the law by <= 2**-100 in total variation.
* ``_discrete_gaussian``: CKS Algorithm 3 for N_Z(0, p/q) with t = floor(sigma) + 1.
* ``_discrete_laplace_block`` / ``_discrete_gaussian_block``: the same two laws by exact inversion
  against certified 64-bit thresholds (``dpverify._executed._inversion``: the geometric magnitude's independent
  binary digit groups, one 64-bit uniform each; CKS Algorithm 3's acceptance by one comparison):
  3.7x and 3.3x faster than Algorithms 2 and 3 at the privatizers' scales (``benchmarks/float_safe.md``),
  a different bit stream. The float-safe privatizers use them; the public samplers keep CKS's streams
  unless asked (``method="inversion"``), so every earlier seeded result of theirs stands.

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
``_geometric_exp`` restarts if U + t V would exceed 2**62 (probability below exp(-2**62/t); the
inversion sampler applies the same bound to its magnitude), and
``_discrete_gaussian`` restarts a candidate with |Y| > ymax, so its law is exactly N_Z(0, sigma^2)
conditioned on |X| <= ymax; ``_samplers.discrete_gaussian`` only accepts parameters for which that
conditioning moves the law by less than 2**-100 in total variation.

numba's on-disk cache (``cache=True``) keys a kernel on its own source file only: a kernel of another
module that calls or inlines one of these (``_protocol_kernels``) is not recompiled when this file
changes. After editing this file, clear the cache directory (``NUMBA_CACHE_DIR``): a stale caller once
read the inversion tables in their previous layout and crashed.

The Polya sampler is the one float sampler among the discrete laws (its parameter beta =
exp(-eps/g) is irrational anyway): see ``_polya`` for its law and its deviation bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable

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


def tail_words(num: int, den: int, trunc: int, vs, k: int) -> list[int]:
    """The k-th 64-bit word (k >= 1) of the binary expansion of S_v = (e^{-a v} - e^{-a N})/(1 - e^{-a N})
    for each v in ``vs``, a = num/den > 0, N = ``trunc`` (N = 0: S_v = e^{-a v}): floor(S_v 2^(64 k))
    mod 2^64, exactly (Arb balls at increasing precision until each floor is certain; S_v is irrational
    for 0 < v < N, or any v >= 1 when N = 0, since e^{-a} is transcendental, so it always is). S_v =
    P[value >= v] of a geometric law of ratio e^{-a}, truncated to [0, N) or not: the thresholds of
    ``_count_below`` (``dpverify._executed._inversion``)."""
    from flint import arb

    def balls(pending: list[int], prec: int) -> list:
        a = arb(num) / arb(den)
        tail = (-a * trunc).exp() if trunc else arb(0)
        return [((-a * v).exp() - tail) / (1 - tail) for v in pending]

    return certified_words(balls, vs, k)


def certified_words(balls: Callable[[list[int], int], list], vs, k: int) -> list[int]:
    """floor(S_v 2^(64 k)) mod 2^64 for each v in ``vs``, S_v given as Arb balls by
    ``balls(pending, prec)`` (evaluated at working precision ``prec``): the precision is doubled
    until every floor is certain, which ends when every S_v is irrational."""
    from flint import arb, ctx

    words: dict[int, int] = {}
    pending = sorted(set(vs))
    prec = 64 * k + 64
    while pending:
        with ctx.workprec(prec):
            scale = arb(2) ** (64 * k)
            uncertain = []
            for v, ball in zip(pending, balls(pending, prec)):
                x = ball * scale
                lo, hi = x.lower().floor(), x.upper().floor()
                if lo != hi:
                    uncertain.append(v)
                    continue
                m, e = (int(z) for z in lo.man_exp())
                words[v] = (m << e if e >= 0 else m >> -e) % (1 << 64)
        pending = uncertain
        prec *= 2
    return [words[v] for v in vs]


def tail_word(num: int, den: int, trunc: int, v: int, k: int) -> int:
    """One word of ``tail_words``."""
    return tail_words(num, den, trunc, (v,), k)[0]


def exp_neg_word(v: int, k: int) -> int:
    """The k-th 64-bit word of the binary expansion of e^{-v} (``tail_word`` with a = 1, no truncation)."""
    return tail_word(1, 1, 0, v, k)


#: The laws behind the inversion tables, for the tie path: TABLE_ROWS[key][j] = (word, n) for row j of
#: the tables registered under ``key`` (``dpverify._executed._inversion``): word(v, k) is the k-th 64-bit word of
#: its S_v, n its last v. Key 0: e^{-v}, any v >= 1. The kernels pass (key, row, v), plain integers,
#: to the tie path: passing values loaded from the tables instead made every draw 15-20 ns slower
#: (measured), although the path is almost never taken.
TABLE_ROWS: dict[int, list[tuple[Callable[[int, int], int], int]]] = {0: [(exp_neg_word, 1 << 62)]}


def _tie_word(key: int, j: int, v: int, k: int) -> int:
    return TABLE_ROWS[key][j][0](v, k)


def _in_row(key: int, j: int, v: int) -> bool:
    return v <= TABLE_ROWS[key][j][1]


@numba.njit(cache=True)
def _tie_below(bits, key, j, v):
    """U < S_v (row j of table ``key``, ``TABLE_ROWS``) for a uniform U whose first 64 bits equal
    floor(S_v 2^64): compare U's next words (fresh draws) with S_v's next words, computed in Python
    (probability 2^-64 per draw). False for v past the row (W met the row's zero sentinel)."""
    with numba.objmode(inside="boolean"):
        inside = _in_row(key, j, v)
    if not inside:
        return False
    k = 2
    while True:
        w = next_uint64(bits)
        with numba.objmode(d="uint64"):
            d = _tie_word(key, j, v, k)
        if w < d:
            return True
        if w > d:
            return False
        k += 1


@numba.njit(cache=True)
def _exp_neg_tie(bits, v):
    """W < e^{-v} for a uniform W whose first 64 bits equal e^{-v}'s."""
    return _tie_below(bits, np.int64(0), np.int64(0), v)


@numba.njit(cache=True, inline="always")
def _count_below(bits, c, guide, prm, j, key):
    """#{v in 1..n : U < S_v} for one uniform U, exactly: row j of the inversion tables registered under
    ``key`` (``dpverify._executed._inversion``).

    c[j, v] = floor(S_v 2^64) for v = 1..n, strictly decreasing, then a zero sentinel; prm[j] = (n,
    digit shift, guide shift). U's first 64 bits W decide W < c_v
    (then U < S_v) and W > c_v (then U > S_v); W = c_v (probability 2^-64) goes on to U's next words
    (``_tie_below``). The guide gives, for W's top bits, the count at the largest W of that bucket,
    so the scan from it rarely moves."""
    w = next_uint64(bits)
    i = np.int64(guide[j, w >> np.uint64(prm[j, 2])])
    while w < c[j, i + 1]:
        i += 1
    if w == c[j, i + 1] and _tie_below(bits, key, j, i + 1):
        i += 1  # U < S_{i+1} with W = c_{i+1} > c_{i+2}: U > S_{i+2}, the count stops here
    return i


@numba.njit(cache=True)
def _discrete_laplace_block(bits, word, left, c, guide, prm, gmax, key, out):
    """out[:] = iid Lap_Z(t/s) by exact inversion of its geometric magnitude's binary digit groups
    (``dpverify._executed._inversion``); returns the bit buffer (word, left).

    G with P[G = g] proportional to e^{-lambda g} (lambda = s/t) has independent binary digits, so G is
    the sum of independent groups, each drawn by inverting one 64-bit uniform against certified
    thresholds (``_count_below``): rows 0..r-2 are the low groups (digits [a, a + w), a truncated
    geometric of ratio e^{-lambda 2^a} on [0, 2^w)), row r-1 the count H of blocks of 2^J (geometric of
    ratio e^{-lambda 2^J}, continued past its table by memorylessness). Then CKS Algorithm 2's sign:
    (b, G) = (1, 0) restarts. Draws with G >= gmax restart (exact conditioning): gmax = the number of y
    with s y < t (vmax + 1), so for s = 1 the law is exactly ``_discrete_laplace``'s (which restarts
    U + t V >= t (vmax + 1)); for s > 1 the two conditionings differ at one point of probability below
    e^{-(2^62/t - 2)}. (c, guide, prm, gmax, key): ``_inversion.laplace_tables``.

    A block, not one draw: this loop inlined into a caller's per-draw loop (numba ``inline="always"``)
    ran at half the speed of the same loop written out here (measured; the nested inlining of
    ``_count_below`` is lost), so callers draw their noise in blocks: iid draws, the same law in any order."""
    top = prm.shape[0] - 1
    ntop = prm[top, 0]
    shift = prm[top, 1]
    hmax = gmax >> shift
    for i in range(out.size):
        while True:
            y = np.int64(0)
            for j in range(top):
                y += _count_below(bits, c, guide, prm, j, key) << prm[j, 1]
            h = np.int64(0)
            while True:
                v = _count_below(bits, c, guide, prm, top, key)
                h += v
                if v < ntop:
                    break
            if h > hmax:
                continue
            y += h << shift
            if y >= gmax:
                continue
            b, word, left = _take_bits(bits, word, left, 1)
            if b == 1 and y == 0:
                continue
            out[i] = -y if b == 1 else y
            break
    return word, left


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


@numba.njit(cache=True)
def _discrete_gaussian_block(bits, word, left, p, q, t, ymax, c, guide, prm, gmax, key, table, table_key, out):
    """out[:] = iid N_Z(0, p/q) conditioned on |X| <= ymax: ``_discrete_gaussian``'s law (CKS Algorithm
    3), its candidates Lap_Z(t) drawn in blocks by ``_discrete_laplace_block`` (c .. key: the tables of
    Lap_Z(t)) and each accepted by one 64-bit comparison with ``table[|Y|]`` = floor(e^{-A^2/D} 2^64)
    (``_inversion.gaussian_tables``: table, table_key; a tie goes on exactly, ``_tie_below``), or by
    CKS Algorithm 1 past the table. The candidates are iid and each acceptance uses fresh bits, so
    taking them from a block leaves every output the first accepted candidate of an iid sequence."""
    d = 2 * p * q * t * t
    cand = np.empty(min(4096, out.size + out.size // 2 + 16), dtype=np.int64)  # ~1.3 candidates per output
    pos = cand.size
    for i in range(out.size):
        while True:
            if pos == cand.size:
                word, left = _discrete_laplace_block(bits, word, left, c, guide, prm, gmax, key, cand)
                pos = 0
            y = cand[pos]
            pos += 1
            a = abs(y)
            if a > ymax:
                continue
            big_a = a * q * t - p
            if big_a == 0:
                out[i] = y  # e^0: always accepted
                break
            if a < table.size:
                w = next_uint64(bits)
                if w < table[a] or (w == table[a] and _tie_below(bits, table_key, np.int64(0), big_a * big_a)):
                    out[i] = y
                    break
                continue
            ok, word, left = _bernoulli_exp(bits, word, left, big_a * big_a, d)
            if ok:
                out[i] = y
                break
    return word, left


@numba.njit(cache=True)
def _discrete_gaussian_magnitude_block(bits, word, left, p, q, ymax, c, guide, prm, key, out):
    """out[:] = iid N_Z(0, p/q) conditioned on |X| <= ymax (``_discrete_gaussian``'s law) by exact
    inversion of |X|: one 64-bit uniform against floor(P[|X| >= v] 2^64), v = 1..n
    (``_inversion.gaussian_magnitude_tables``), and a fair sign for |X| > 0. Past the table (|X| >= n,
    probability < 2^-32) |X| = n + G exactly, G by rejection: P[G = g | |X| >= n] is proportional to
    e^{-n g/sigma^2} e^{-g^2/(2 sigma^2)}, so G ~ geometric of scale sigma^2/n (CKS Algorithm 2's
    half, ``_geometric_exp``) accepted with probability e^{-g^2 q/(2p)} (CKS Algorithm 1). Draws past
    ymax restart (exact conditioning)."""
    n = prm[0, 0]
    s = n * q  # the tail's geometric: scale p/(n q) = sigma^2/n
    tbits = _bit_length(p)
    vmax = _vmax(p)
    for i in range(out.size):
        while True:
            v = _count_below(bits, c, guide, prm, 0, key)
            if v == n:
                while True:
                    g, word, left = _geometric_exp(bits, word, left, s, p, tbits, vmax)
                    if g > ymax:
                        break  # past ymax: restarted below whatever the acceptance would say
                    ok, word, left = _bernoulli_exp(bits, word, left, g * g * q, 2 * p)
                    if ok:
                        break
                v = n + g
            if v > ymax:
                continue
            if v == 0:
                out[i] = 0
                break
            b, word, left = _take_bits(bits, word, left, 1)
            out[i] = -v if b == 1 else v
            break
    return word, left


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
def _fill_discrete_laplace_inv(rng, lap, out):
    c, guide, prm, gmax, key = lap
    _discrete_laplace_block(rng.bit_generator, np.int64(0), 0, c, guide, prm, gmax, key, out)


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
def _fill_discrete_gaussian_inv(rng, p, q, t, ymax, lap, accept, out):
    c, guide, prm, gmax, key = lap
    table, table_key = accept
    _discrete_gaussian_block(rng.bit_generator, np.int64(0), 0, p, q, t, ymax, c, guide, prm, gmax, key, table, table_key, out)


@numba.njit(cache=True)
def _fill_discrete_gaussian_magnitude(rng, p, q, ymax, tables, out):
    c, guide, prm, key = tables
    _discrete_gaussian_magnitude_block(rng.bit_generator, np.int64(0), 0, p, q, ymax, c, guide, prm, key, out)


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
