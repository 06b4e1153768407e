"""Certified inversion tables for the exact discrete Laplace and discrete Gaussian kernels in ``_kernels``.

Exact inversion. A law on {0, 1, ...} with tail probabilities S_v = P[X >= v] is sampled exactly by
X = #{v >= 1 : U < S_v} for one uniform U in [0, 1). ``_kernels._count_below`` reads U's first 64 bits
W and compares them with c_v = floor(S_v 2^64), certified in Arb (``_kernels.tail_word``): W < c_v
implies U < S_v, W > c_v implies U > S_v, and only W = c_v (probability 2^-64 per draw) needs U's next
words, compared with S_v's next words, again in Arb. Every S_v used here is irrational, so the
comparison always ends. The law of X is therefore exactly the one whose tails are the S_v, with
integer comparisons only, whatever the floating-point arithmetic does.

The discrete Laplace (Canonne, Kamath & Steinke 2020, Algorithm 2's law: P[Y = y] proportional to
e^{-|y| s/t}). Its magnitude G, P[G = g] proportional to rho^g with rho = e^{-lambda}, lambda = s/t, is
geometric, and a geometric variable's binary digits are independent (rho^g factorises over the
digits of g). So G = sum_j G_j 2^{a_j} + H 2^J with independent parts:

- J = the least integer with lambda 2^J >= 1, split into groups of at most ``MAX_WIDTH`` digits; the
  group of digits [a, a + w) is a geometric law of ratio e^{-lambda 2^a} truncated to [0, 2^w):
  S_v = (r^v - r^N)/(1 - r^N), r = e^{-lambda 2^a}, N = 2^w, v = 1..N-1;
- H = G >> J is geometric of ratio R = e^{-lambda 2^J} (in (e^{-2}, e^{-1}] when J >= 1): S_h = R^h
  for h = 1..L, and past L (when U < S_L) H continues as L + a fresh H (memorylessness: exact).

At the curator's scale 2^16 that is three 64-bit uniforms and a few comparisons per draw instead of
CKS's loop of ~5 exact Bernoulli trials (``benchmarks/float_safe.md``).

The discrete Gaussian N_Z(0, sigma^2), sigma^2 = p/q (CKS 2020, Algorithm 3's law). For sigma^2 <= 2^20
(the local DP-DPE noise): |X| by one inversion against S_v = P[|X| >= v] = 2 T_v / (1 + 2 T_1),
T_v = sum_{u >= v} e^{-u^2/(2 sigma^2)} (``gaussian_tail_words``: the sum in Arb with a rigorous bound
on its tail), v = 1..n with S_n >= 2^-32; past the table, |X| = n + G exactly by rejection from a
geometric (``_kernels._discrete_gaussian_magnitude_block``), then a fair sign. Larger sigma^2 (the
central DP-DPE noise, ~10^8): Algorithm 3 itself, a candidate Y ~ Lap_Z(t) from the tables above,
accepted with probability e^{-A^2/D}, A = |Y| q t - p, D = 2 p q t^2, by one 64-bit comparison against
c_{|Y|} = floor(e^{-A^2/D} 2^64) (the same tie rule) for |Y| < min(8 t, 4096), and by CKS Algorithm 1
beyond; A = 0 accepts. Either way the law is exactly N_Z(0, p/q) conditioned on |X| <= ymax
(``_samplers.discrete_gaussian_range``), the law of ``_kernels._discrete_gaussian``.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Callable

import numpy as np

from . import _kernels as K

__all__ = ["MAX_WIDTH", "gaussian_magnitude_tables", "gaussian_tables", "gaussian_tail_words", "laplace_tables"]

#: digits per low group: 2^10 thresholds (8 KiB) per group keep a table in the L1 cache
MAX_WIDTH = 10
#: entries of the geometric tail table: R^h down to 2^-32 (then the count continues by memorylessness)
_TAIL_FLOOR = 1 << 32
_NO_THRESHOLD = (1 << 64) - 1  # c[j, 0]: never compared (the count starts at the guide's value >= 0)


def _row(num: int, den: int, trunc: int, n: int) -> list[int]:
    """[c_1, ..., c_n], c_v = floor(S_v 2^64) (``_kernels.tail_words``), certified."""
    return K.tail_words(num, den, trunc, range(1, n + 1), 1)


def _register(rows: list[tuple[Callable[[int, int], int], int]]) -> int:
    """A key under which the tie path finds these rows' laws (``_kernels.TABLE_ROWS``)."""
    key = len(K.TABLE_ROWS)
    K.TABLE_ROWS[key] = rows
    return key


def _tables(rows: list[tuple[list[int], Callable[[int, int], int], int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(c, guide, prm, key) for ``_kernels._count_below`` from rows (thresholds c_1..c_n, the word
    function of their S_v for the tie path, digit shift); prm[j] = (n, digit shift, guide shift)."""
    width = max(len(c) for c, _, _ in rows) + 2  # c[j, 0] unused, c[j, n + 1] = 0: the scan's sentinel
    # ~8 buckets per threshold: the scan from the guide's count then rarely moves (a mispredicted
    # branch costs more than the 64-bit draw)
    gbits = max(1, min(13, max(len(c) for c, _, _ in rows).bit_length() + 3))
    c_arr = np.zeros((len(rows), width), dtype=np.uint64)
    guide = np.zeros((len(rows), 1 << gbits), dtype=np.int32)
    prm = np.zeros((len(rows), 3), dtype=np.int64)
    tops = [((b + 1) << (64 - gbits)) - 1 for b in range(1 << gbits)]
    for j, (c, _, shift) in enumerate(rows):
        if any(a <= b for a, b in itertools.pairwise(c)):
            raise AssertionError(f"thresholds of row {j} are not strictly decreasing")  # the tie rule needs it
        c_arr[j, 0] = _NO_THRESHOLD
        c_arr[j, 1:len(c) + 1] = c
        # the count at a bucket's largest W: the thresholds above it (c is decreasing, so a prefix)
        neg = [-x for x in c]
        guide[j] = [bisect.bisect_left(neg, -m) for m in tops]
        prm[j] = (len(c), shift, 64 - gbits)
    return c_arr, guide, prm, _register([(word, len(c)) for c, word, _ in rows])


@functools.lru_cache(maxsize=64)
def laplace_tables(s: int, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """(c, guide, prm, gmax, key) for ``_kernels._discrete_laplace_inv``: Lap_Z(t/s), 1 <= t <= 2^61,
    1 <= s <= 2^62 (the ranges of ``_samplers._scale``). Built once per scale (a few ms in Arb)."""
    j_bits = 0
    while (s << j_bits) < t:  # least J with lambda 2^J = s 2^J / t >= 1
        j_bits += 1
    groups = -(-j_bits // MAX_WIDTH)
    widths = [j_bits // groups + (1 if i < j_bits % groups else 0) for i in range(groups)]
    rows = []
    shift = 0
    for w in widths:
        rows.append((_row(s << shift, t, 1 << w, (1 << w) - 1), functools.partial(K.tail_word, s << shift, t, 1 << w), shift))
        shift += w
    tail = _row(s << j_bits, t, 0, 64)
    length = max(1, sum(1 for x in tail if x >= _TAIL_FLOOR))
    rows.append((tail[:length], functools.partial(K.tail_word, s << j_bits, t, 0), j_bits))
    c, guide, prm, key = _tables(rows)
    # CKS Algorithm 2's conditioning U + t V < t (vmax + 1), as a bound on the magnitude (kernel docstring)
    xmax = t * (K._vmax(t) + 1)
    return c, guide, prm, (xmax - 1) // s + 1, key


#: acceptance thresholds are tabulated for |Y| < min(ACCEPT_TABLE_SCALES t, ACCEPT_TABLE_MAX) (beyond: CKS
#: Algorithm 1, exact as well): a table costs ~10 us per entry in Arb, so a large sigma (the central
#: DP-DPE noise, sigma ~ 10^4, a few dozen draws per release) keeps Algorithm 1 for most candidates
ACCEPT_TABLE_SCALES = 8
ACCEPT_TABLE_MAX = 4096


@functools.lru_cache(maxsize=256)
def gaussian_tables(p: int, q: int, t: int, ymax: int) -> tuple[np.ndarray, int]:
    """(c, key) for ``_kernels._discrete_gaussian_inv``: c[a] = floor(e^{-A^2/D} 2^64), A = a q t - p,
    D = 2 p q t^2, for a = 0 .. min(ymax, 8 t - 1, 4095) (entries with A = 0 are never read: the kernel
    accepts them); the tie path reads e^{-A^2/D} as row 0 of ``key`` at v = A^2."""
    d = 2 * p * q * t * t
    size = min(ymax + 1, ACCEPT_TABLE_SCALES * t, ACCEPT_TABLE_MAX)
    squares = [(a * q * t - p) ** 2 for a in range(size)]
    # e^{-A^2/D} = S_v of tail_words with rate 1/D at v = A^2; A = 0 (S = 1, no 64-bit word) is skipped
    words = dict(zip((v for v in squares if v), K.tail_words(1, d, 0, [v for v in squares if v], 1)))
    c = np.array([words.get(v, 0) for v in squares], dtype=np.uint64)
    return c, _register([(functools.partial(K.tail_word, 1, d, 0), 1 << 62)])


#: the magnitude table serves sigma^2 <= GAUSS_TABLE_MAX_SIGMA2 (its ~7 sigma thresholds and the ~16 sigma
#: terms summed in Arb stay small); larger sigma^2 (the central DP-DPE noise) use :func:`gaussian_tables`
GAUSS_TABLE_MAX_SIGMA2 = 1 << 20


def gaussian_tail_words(p: int, q: int, vs, k: int) -> list[int]:
    """The k-th 64-bit word (k >= 1) of S_v = P[|X| >= v], X ~ N_Z(0, p/q), for each v >= 1 in ``vs``:
    floor(S_v 2^(64 k)) mod 2^64, exactly. S_v = 2 T_v / (1 + 2 T_1), T_v = sum_{u >= v} e^{-a u^2},
    a = q/(2p): the sum to K in Arb, the rest bounded by e^{-a (K+1)^2} / (1 - e^{-a (2K+3)}) (the terms'
    ratios beyond K) and carried as the ball's radius; precision doubled until every floor is certain
    (S_v is irrational: a transcendental number's value under a nonzero power series, so it always is)."""
    from flint import arb

    def balls(pending: list[int], prec: int) -> list:
        a = arb(q) / arb(2 * p)
        reach = math.isqrt(math.ceil((prec + 32) * 2 * p / q)) + 2  # a reach^2 >= (prec + 32) ln 2
        big = pending[-1] + reach
        rest = (-a * (big + 1) ** 2).exp() / (1 - (-a * (2 * big + 3)).exp())
        tail = arb(0, rest.upper())  # [-rest, rest] contains the sum beyond K
        suffix = [arb(0)] * (big + 2)
        for u in range(big, 0, -1):
            suffix[u] = suffix[u + 1] + (-a * u * u).exp()
        z = 1 + 2 * (suffix[1] + tail)
        return [2 * (suffix[v] + tail) / z for v in pending]

    return K.certified_words(balls, vs, k)


@functools.lru_cache(maxsize=256)
def gaussian_magnitude_tables(p: int, q: int, ymax: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(c, guide, prm, key) for ``_kernels._discrete_gaussian_magnitude_block``: one row, S_v =
    P[|X| >= v] for X ~ N_Z(0, p/q), v = 1..n, n the last v <= ymax + 1 with S_v >= 2^-32 (past it the
    kernel draws |X| given |X| >= n exactly, by rejection from a geometric)."""
    sigma = math.isqrt(p // q) + 1
    reach = min(ymax + 1, 8 * sigma + 8)
    c = gaussian_tail_words(p, q, range(1, reach + 1), 1)
    n = max(1, sum(1 for x in c if x >= _TAIL_FLOOR))
    return _tables([(c[:n], functools.partial(gaussian_tail_words_one, p, q), 0)])


def gaussian_tail_words_one(p: int, q: int, v: int, k: int) -> int:
    """One word of :func:`gaussian_tail_words` (the tie path's word function)."""
    return gaussian_tail_words(p, q, (v,), k)[0]
