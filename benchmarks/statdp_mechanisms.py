"""The StatDP (Ding et al., CCS 2018) and DP-Sniper (Bichsel et al., S&P 2021) benchmark mechanisms.

Re-implemented here from the papers' descriptions (and the algorithms they cite: Lyu, Su & Li,
VLDB 2017 for the sparse vector variants; Erlingsson et al., CCS 2014 for RAPPOR; Wang et al.,
PLDI 2019 for PrefixSum and NumericalSVT; Balcer & Vadhan 2018 for the truncated geometric;
Mironov, CCS 2012 for floating-point Laplace and the snapping mechanism), vectorised over draws,
each with the signature ``mechanism(data, rng, size)`` the auditor calls. Noise is numpy's float
noise, so every real-valued mechanism here leaks through its low-order bits exactly as the
textbook float Laplace does; the benchmark audits the algorithms as real-valued (``float_bits``
off, as DP-Sniper's default classifiers do) except in the floating-point experiment (FloatLaplace
against the snapping mechanism), where the bits are the point. Parameters are the
DP-Sniper evaluation's: eps = 0.1, SVT with c = 1 answers and threshold t = 1 (t = 0.5 for SVT1),
10 queries, RAPPOR with 4 hashes into 20 bits.

Encoding of SVT answers: 1 = above ("true"), 0 = below ("false"), -1 = not answered (aborted);
SVT3 releases the noisy value of an above-threshold answer, -1000 for "false", -2000 for aborted.

Each entry of :data:`BENCHMARK` names the mechanism, its claim (pure DP epsilon), whether the
claim is correct, the pairs (StatDP patterns for query vectors) and DP-Sniper's published 90%
lower bound (the larger of its logistic-regression and neural-network runs, from the reference
logs of its artifact, eval_sp2021/reference-results).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Callable

import numba
import numpy as np

EPS = 0.1
QUERIES = 10


def _lap(rng: np.random.Generator, scale: float, shape: Any) -> np.ndarray:
    return rng.laplace(0.0, scale, shape)


# ------------------------------------------------------------------------------------------
# Scalar and histogram mechanisms


def laplace(d: Any, rng: np.random.Generator, size: int) -> np.ndarray:
    """x + Lap(1/eps) (numpy's float Laplace: also the "textbook" floating-point Laplace)."""
    return float(np.asarray(d).reshape(-1)[0]) + _lap(rng, 1.0 / EPS, size)


def laplace_parallel(d: Any, rng: np.random.Generator, size: int) -> np.ndarray:
    """20 independent Lap(1/0.005) releases of x: 20 x 0.005 = 0.1-DP."""
    x = float(np.asarray(d).reshape(-1)[0])
    return x + _lap(rng, 1.0 / 0.005, (size, 20))


def noisy_hist1(d: Any, rng: np.random.Generator, size: int) -> np.ndarray:
    """Histogram + Lap(1/eps) per bin (correct)."""
    x = np.asarray(d, dtype=np.float64)
    return x[None, :] + _lap(rng, 1.0 / EPS, (size, x.size))


def noisy_hist2(d: Any, rng: np.random.Generator, size: int) -> np.ndarray:
    """Histogram + Lap(eps) per bin: the scale inverted (incorrect)."""
    x = np.asarray(d, dtype=np.float64)
    return x[None, :] + _lap(rng, EPS, (size, x.size))


def _geo_table(count: int, eps: float, n: int) -> tuple[np.ndarray, int]:
    """Balcer-Vadhan GeoSample's cumulative integer table F(z), z = 0..n, and its denominator."""
    k = math.ceil(math.log(2.0 / eps))
    big = 2**k + 1
    denom = (2 ** (k + 1) + 1) * big ** (n - 1)
    f = []
    for z in range(n + 1):
        if z < count:
            f.append(2 ** (k * (count - z)) * big ** (n - (count - z)))
        elif z < n:
            f.append(denom - 2 ** (k * (z - count + 1)) * big ** (n - 1 - (z - count)))
        else:
            f.append(denom)
    return np.asarray(f, dtype=np.int64), denom


def truncated_geometric(d: Any, rng: np.random.Generator, size: int) -> np.ndarray:
    """Balcer & Vadhan's GeoSample on a count in [0, 5]: ln(1 + 2^-ceil(ln(2/eps)))-DP, exact integers."""
    f, denom = _geo_table(int(np.asarray(d).reshape(-1)[0]), EPS, 5)
    u = rng.integers(1, denom + 1, size)
    return np.searchsorted(f, u, side="left").astype(np.int64)


def truncated_geometric_epsilon() -> float:
    return math.log(1.0 + 2.0 ** -math.ceil(math.log(2.0 / EPS)))


# ------------------------------------------------------------------------------------------
# Report noisy max


def _noisy(d: Any, rng: np.random.Generator, size: int, kind: str) -> np.ndarray:
    x = np.asarray(d, dtype=np.float64)
    noise = _lap(rng, 2.0 / EPS, (size, x.size)) if kind == "lap" else rng.exponential(2.0 / EPS, (size, x.size))
    return x[None, :] + noise


def rnm1(d, rng, size):
    """Index of the max of x + Lap(2/eps) (correct)."""
    return np.argmax(_noisy(d, rng, size, "lap"), axis=1)


def rnm2(d, rng, size):
    """Index of the max of x + Exp(2/eps) (correct)."""
    return np.argmax(_noisy(d, rng, size, "exp"), axis=1)


def rnm3(d, rng, size):
    """The max *value* of x + Lap(2/eps) (incorrect: releases the noisy value)."""
    return np.max(_noisy(d, rng, size, "lap"), axis=1)


def rnm4(d, rng, size):
    """The max value of x + Exp(2/eps) (incorrect)."""
    return np.max(_noisy(d, rng, size, "exp"), axis=1)


# ------------------------------------------------------------------------------------------
# Sparse vector technique variants (Lyu, Su & Li 2017, Algorithms 1-6), c answers "above"


# The noise is drawn with numpy (the stream is the mechanism's law); the per-query scans below
# are numba kernels, one pass per draw, computing exactly what the vectorised numpy did.


@numba.njit(cache=True)
def _svt_flags_kernel(x, rho, nu, t, c, out):
    for i in range(nu.shape[0]):
        threshold = rho[i, 0] + t
        above_so_far = 0
        for j in range(x.shape[0]):
            above = (x[j] + nu[i, j]) >= threshold
            out[i, j] = -1 if above_so_far >= c else (1 if above else 0)
            if above:
                above_so_far += 1


def _svt_flags(x: np.ndarray, rho: np.ndarray, nu: np.ndarray, t: float, c: int) -> np.ndarray:
    """Answer 1 where x_j + nu_j >= rho + t, else 0; -1 once c answers were 1 (not answered)."""
    out = np.empty(nu.shape, dtype=np.int64)
    _svt_flags_kernel(x, rho, nu, float(t), int(c), out)
    return out


@numba.njit(cache=True)
def _svt_values_kernel(noisy, released, rho, t, c, below, aborted, out):
    for i in range(noisy.shape[0]):
        threshold = rho[i, 0] + t
        above_so_far = 0
        for j in range(noisy.shape[1]):
            above = noisy[i, j] >= threshold
            out[i, j] = aborted if above_so_far >= c else (released[i, j] if above else below)
            if above:
                above_so_far += 1


def _svt_values(noisy: np.ndarray, released: np.ndarray, rho: np.ndarray, t: float, c: int, below: float,
                aborted: float) -> np.ndarray:
    """``released`` where noisy >= rho + t, ``below`` where not, ``aborted`` once c answers were above."""
    out = np.empty(noisy.shape, dtype=np.float64)
    _svt_values_kernel(noisy, released, rho, float(t), int(c), float(below), float(aborted), out)
    return out


def svt1(d, rng, size, c=1, t=0.5):
    """Alg. 1: threshold noise Lap(2/eps), query noise Lap(4c/eps), stop after c above (correct)."""
    x = np.asarray(d, dtype=np.float64)
    e1 = EPS / 2
    return _svt_flags(x, _lap(rng, 1 / e1, (size, 1)), _lap(rng, 2 * c / (EPS - e1), (size, x.size)), t, c)


def svt2(d, rng, size, c=1, t=1.0):
    """Alg. 2: as Alg. 1 but the threshold noise Lap(2c/eps) is redrawn after each above (correct)."""
    x = np.asarray(d, dtype=np.float64)
    e1 = EPS / 2
    nu = _lap(rng, 2 * c / (EPS - e1), (size, x.size))
    fresh = _lap(rng, c / e1, (size, x.size))  # the threshold noise in force at each query
    out = np.empty((size, x.size), dtype=np.int64)
    _svt2_kernel(x, nu, fresh, float(t), int(c), out)
    return out


@numba.njit(cache=True)
def _svt2_kernel(x, nu, fresh, t, c, out):
    for i in range(nu.shape[0]):
        rho = fresh[i, 0]
        count = 0
        for j in range(x.shape[0]):
            above = x[j] + nu[i, j] >= rho + t
            out[i, j] = -1 if count >= c else (1 if above else 0)
            if above and count < c:
                count += 1
            if above and j + 1 < x.shape[0]:
                rho = fresh[i, j + 1]


def svt3(d, rng, size, c=1, t=1.0):
    """Alg. 3: releases the noisy query value of an above answer, query noise Lap(2c/eps) (incorrect)."""
    x = np.asarray(d, dtype=np.float64)
    e1 = EPS / 2
    rho = _lap(rng, 1 / e1, (size, 1))
    noisy = x[None, :] + _lap(rng, c / (EPS - e1), (size, x.size))
    return _svt_values(noisy, noisy, rho, t, c, -1000.0, -2000.0)


def svt4(d, rng, size, c=1, t=1.0):
    """Alg. 4: eps1 = eps/4, query noise Lap(1/eps2) independent of c ((1 + 6c)/4 eps-DP: incorrect)."""
    x = np.asarray(d, dtype=np.float64)
    e1 = EPS / 4
    return _svt_flags(x, _lap(rng, 1 / e1, (size, 1)), _lap(rng, 1 / (EPS - e1), (size, x.size)), t, c)


def svt5(d, rng, size, c=1, t=1.0):
    """Alg. 5: no query noise, answers every query (not private for any finite eps)."""
    x = np.asarray(d, dtype=np.float64)
    rho = _lap(rng, 2 / EPS, (size, 1))
    return (x[None, :] >= rho + t).astype(np.int64)


def svt6(d, rng, size, c=1, t=1.0):
    """Alg. 6: query noise Lap(2/eps) but no cutoff: answers every query (incorrect)."""
    x = np.asarray(d, dtype=np.float64)
    rho = _lap(rng, 2 / EPS, (size, 1))
    nu = _lap(rng, 2 / EPS, (size, x.size))
    return (x[None, :] + nu >= rho + t).astype(np.int64)


def svt34_parallel(d, rng, size):
    """SVT3 and SVT4 (c = 2, t = 1) run on the same input, outputs side by side (incorrect)."""
    return np.concatenate([svt3(d, rng, size, c=2), svt4(d, rng, size, c=2).astype(np.float64)], axis=1)


def numerical_svt(d, rng, size, c=2, t=1.0):
    """Numerical SVT (Wang et al. PLDI 2019): above answers release x + Lap(3c/eps), 0 below (correct)."""
    x = np.asarray(d, dtype=np.float64)
    rho1 = _lap(rng, 3 / EPS, (size, 1))
    rho2 = _lap(rng, 6 * c / EPS, (size, x.size))
    rho3 = _lap(rng, 3 * c / EPS, (size, x.size))
    return _svt_values(x[None, :] + rho2, x[None, :] + rho3, rho1, t, c, 0.0, -1000.0)


def prefix_sum(d, rng, size):
    """Prefix sums of x + Lap(1/eps): each query 0.1-DP, so 1.0-DP for 10 queries differing by <= 1."""
    x = np.asarray(d, dtype=np.float64)
    return np.cumsum(x[None, :] + _lap(rng, 1 / EPS, (size, x.size)), axis=1)


# ------------------------------------------------------------------------------------------
# RAPPOR (Erlingsson et al. 2014): Bloom filter of h hashes into k bits, permanent randomised
# response with f, then (full RAPPOR) instantaneous randomised response with p, q.

RAPPOR_BITS = 20
RAPPOR_HASHES = 4


def bloom(value: int) -> np.ndarray:
    bits = np.zeros(RAPPOR_BITS, dtype=np.int64)
    for i in range(RAPPOR_HASHES):
        digest = hashlib.sha256(f"{i}:{value}".encode()).digest()
        bits[int.from_bytes(digest[:8], "little") % RAPPOR_BITS] = 1
    return bits


def _permanent(b: np.ndarray, rng: np.random.Generator, size: int, f: float) -> np.ndarray:
    u = rng.random((size, b.size))
    return np.where(u < f / 2, 1, np.where(u < f, 0, b[None, :]))


def one_time_rappor(d, rng, size, f=0.95):
    """Bloom filter + permanent randomised response: 2h ln((1 - f/2)/(f/2))-DP."""
    return _permanent(bloom(int(np.asarray(d).reshape(-1)[0])), rng, size, f)


def rappor(d, rng, size, f=0.75, p=0.45, q=0.55):
    """Full RAPPOR, one report: permanent then instantaneous randomised response."""
    perm = _permanent(bloom(int(np.asarray(d).reshape(-1)[0])), rng, size, f)
    u = rng.random(perm.shape)
    return np.where(perm == 1, u < q, u < p).astype(np.int64)


def rappor_epsilon(f: float, p: float | None = None, q: float | None = None, differing: int | None = None) -> float:
    """Exact pure-DP epsilon of one report for the given number of differing Bloom bits (default 2h)."""
    k = 2 * RAPPOR_HASHES if differing is None else differing
    if p is None:
        return k * math.log((1 - f / 2) / (f / 2))
    one = (1 - f / 2) * q + (f / 2) * p  # P(report 1 | Bloom bit 1)
    zero = (f / 2) * q + (1 - f / 2) * p  # P(report 1 | Bloom bit 0)
    return k * max(math.log(one / zero), math.log((1 - zero) / (1 - one)))


# ------------------------------------------------------------------------------------------
# Floating-point Laplace and the snapping mechanism (Mironov 2012)


def float_laplace(d, rng, size):
    """Textbook floating-point Laplace x + (1/eps) * sign * log(U): infinite epsilon (Mironov 2012)."""
    x = float(np.asarray(d).reshape(-1)[0])
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    u = 1.0 - rng.random(size)  # (0, 1], multiples of 2^-53
    return x + sign * (1.0 / EPS) * np.log(u)


SNAP_B = 100.0


def snapping_scale() -> float:
    """The noise scale lambda that makes the snapping mechanism EPS-DP (Mironov 2012, Thm 1)."""
    return (1.0 + SNAP_B * 2.0**-49) / EPS


def snapping_lambda(scale: float) -> float:
    """Lambda: the smallest power of two >= the noise scale (the rounding grid)."""
    return 2.0 ** math.ceil(math.log2(scale))


def snapping(d, rng, size):
    """Mironov's snapping mechanism: clamp_B(round_Lambda(clamp_B(x) + S * lambda * ln U))."""
    lam = snapping_scale()
    grid = snapping_lambda(lam)
    x = min(SNAP_B, max(-SNAP_B, float(np.asarray(d).reshape(-1)[0])))
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    u = 1.0 - rng.random(size)  # uniform on the doubles' 2^-53 grid in (0, 1]
    y = x + sign * lam * np.log(u)
    return np.clip(np.round(y / grid) * grid, -SNAP_B, SNAP_B)


# ------------------------------------------------------------------------------------------
# The benchmark table


@dataclass(frozen=True)
class Entry:
    name: str
    mechanism: Callable[..., Any]
    epsilon: float  # the claim
    correct: bool
    pairs: str  # "scalar", "scalar-int", "histogram", "queries", "rappor"
    published: float | None  # DP-Sniper's 90% lower bound (max of its two classifiers)
    float_bits: bool = False  # audit the IEEE-754 representation (the floating-point experiment only)


BENCHMARK = (
    Entry("Laplace", laplace, EPS, True, "scalar", 0.0976),
    Entry("TruncatedGeometric", truncated_geometric, truncated_geometric_epsilon(), True, "scalar-int", 0.1156),
    Entry("NoisyHist1", noisy_hist1, EPS, True, "histogram", 0.0978),
    Entry("NoisyHist2", noisy_hist2, EPS, False, "histogram", 4.6020),
    Entry("ReportNoisyMax1", rnm1, EPS, True, "queries5", 0.0925),
    Entry("ReportNoisyMax2", rnm2, EPS, True, "queries5", 0.0979),
    Entry("ReportNoisyMax3", rnm3, EPS, False, "queries5", 0.2488),
    Entry("ReportNoisyMax4", rnm4, EPS, False, "queries5", 0.3534),
    Entry("SVT1", svt1, EPS, True, "queries", 0.0858),
    Entry("SVT2", svt2, EPS, True, "queries", 0.0859),
    Entry("SVT3", svt3, EPS, False, "queries", 0.1822),
    Entry("SVT4", svt4, EPS, False, "queries", 0.1696),
    Entry("SVT5", svt5, EPS, False, "queries", 1.7612),
    Entry("SVT6", svt6, EPS, False, "queries", 0.2720),
    Entry("Rappor", rappor, rappor_epsilon(0.75, 0.45, 0.55), True, "rappor", 0.3008),
    Entry("OneTimeRappor", one_time_rappor, rappor_epsilon(0.95), True, "rappor", 0.5999),
    Entry("LaplaceParallel", laplace_parallel, EPS, True, "scalar", 0.0350),
    Entry("SVT34Parallel", svt34_parallel, EPS, False, "queries", 0.2616),
    Entry("PrefixSum", prefix_sum, 1.0, True, "queries", 0.5774),
    Entry("NumericalSVT", numerical_svt, EPS, True, "queries", 0.0345),
    Entry("FloatLaplace", float_laplace, EPS, False, "scalar", 0.2521, float_bits=True),
    Entry("Snapping", snapping, EPS, True, "scalar", 0.0979, float_bits=True),
)
