"""Certified Jacobi-theta sums Theta_s(c) = sum_{k in Z} e^{-(k + c)^2 / (2 s^2)} and their ratios.

These carry the exact Rényi divergence of the discrete Gaussian (and of sums of discrete
Gaussians), so the truncation here is the whole certification story for those mechanisms.
Theta_s is 1-periodic and even in c, so c is first reduced *exactly* (c is a rational: alpha is
an exact dyadic) to u in [0, 1/2]. Two representations, both with proven remainders:

- *Direct* (used for s < 1/2). For |k| >= K + 1 we have |k + u| >= |k| - 1/2 >= K + 1/2, so each
  side of the sum beyond K is at most sum_{j >= K+1} e^{-(j - 1/2)^2/(2s^2)}; consecutive terms
  of that majorant have ratio e^{-j/s^2} <= e^{-(K+1)/s^2}, so the two tails together are at most
  2 e^{-(K + 1/2)^2/(2s^2)} / (1 - e^{-(K+1)/s^2}). log Theta(u) - log Theta(0) cancels about
  2 log2(1/u) bits when u is tiny: those bits are added as guard bits and to K.
- *Dual* (Poisson summation, used for s >= 1/2):
  Theta_s(c) = sqrt(2 pi) s (1 + 2 sum_{m>=1} q^{m^2} cos(2 pi m c)),  q = e^{-2 pi^2 s^2},
  so that  Theta_s(c)/Theta_s(0) = 1 - 4 N / (1 + 2 E)  with  N = sum_{m>=1} q^{m^2} sin^2(pi m c),
  E = sum_{m>=1} q^{m^2}; this form has no cancellation, so the log-ratio (computed by log1p) is
  accurate to the working precision *relatively*, even when it is 1e-800. Truncating after M
  terms: m^2 >= (M+1)^2 + (m - M - 1) for m >= M + 1 and 0 <= sin^2 <= 1, so both remainders
  lie in [0, q^{(M+1)^2} / (1 - q)]. M is chosen so the remainder is 2^-(prec+24) relative to
  the leading term q sin^2(pi u) >= q (2u)^2 (sin(pi u) >= 2u on [0, 1/2]); the choice only
  affects tightness, never validity.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from flint import arb, ctx

from ._approx import logsumexp_rows
from .._core._mechanism_base import nonneg_error

__all__ = ["log_theta", "log_theta_float", "log_theta_ratio", "log_theta_ratio_float", "reduce_shift"]


def reduce_shift(c: Fraction) -> Fraction:
    """u in [0, 1/2] with Theta(c) = Theta(u) (period 1, even)."""
    u = c - math.floor(c)
    return 1 - u if u > Fraction(1, 2) else u


def _log_inverse(x: Fraction) -> float:
    """An upper estimate of max(0, log(1/x)) for a positive Fraction (any size)."""
    if x >= 1:
        return 0.0
    return (x.denominator.bit_length() - x.numerator.bit_length() + 1) * math.log(2)


def _prec_nats() -> float:
    return (ctx.prec + 24) * math.log(2)


def _direct_terms(s2_float: float, extra_nats: float = 0.0) -> int:
    need = _prec_nats() + extra_nats
    return max(1, math.ceil(math.sqrt(2 * s2_float * need)) + 1)


def _direct_sum(s2: arb, u: Fraction, K: int) -> arb:
    uu = arb(u.numerator) / u.denominator
    total = arb(0)
    for k in range(-K, K + 1):
        x = k + uu
        total += (-(x * x) / (2 * s2)).exp()
    half = arb(2 * K + 1) / 2
    tail = 2 * (-(half * half) / (2 * s2)).exp() / (1 - (-(arb(K + 1)) / s2).exp())
    return total + nonneg_error(tail)


def _dual_sums(s2: arb, s2_float: float, u: Fraction) -> tuple[arb, arb]:
    """(N, E) of the module docstring, each with its proven remainder."""
    pi = arb.pi()
    log_q = -2 * pi * pi * s2
    log_q_float = 2 * math.pi**2 * s2_float
    extra = 2 * _log_inverse(2 * u) if u != 0 else 0.0
    need = _prec_nats() + extra
    M = max(1, math.ceil(math.sqrt(need / log_q_float + 1)))
    uu = arb(u.numerator) / u.denominator
    N = arb(0)
    E = arb(0)
    for m in range(1, M + 1):
        term = (log_q * (m * m)).exp()
        E += term
        if u != 0:
            N += term * (pi * m * uu).sin() ** 2
    q = log_q.exp()
    tail = (log_q * ((M + 1) * (M + 1))).exp() / (1 - q)
    E += nonneg_error(tail)
    if u != 0:
        N += nonneg_error(tail)
    return N, E


def log_theta_ratio(s2: arb, s2_float: float, c: Fraction) -> arb:
    """Ball containing log(Theta_s(c) / Theta_s(0)) (<= 0), with s2 = s^2 (s2_float its float)."""
    u = reduce_shift(c)
    if u == 0:
        return arb(0)
    if s2_float >= 0.25:
        N, E = _dual_sums(s2, s2_float, u)
        return (-4 * N / (1 + 2 * E)).log1p()
    extra = 2 * _log_inverse(u)
    with ctx.workprec(ctx.prec + int(extra / math.log(2)) + 8):
        K = _direct_terms(s2_float, extra)
        result = _direct_sum(s2, u, K).log() - _direct_sum(s2, Fraction(0), K).log()
    return result


def log_theta(s2: arb, s2_float: float, c: Fraction = Fraction(0)) -> arb:
    """Ball containing log Theta_s(c)."""
    u = reduce_shift(c)
    if s2_float >= 0.25:
        N, E = _dual_sums(s2, s2_float, u)
        base = (2 * arb.pi() * s2).sqrt()
        return base.log() + (1 + 2 * E).log() + (-4 * N / (1 + 2 * E)).log1p()
    K = _direct_terms(s2_float)
    return _direct_sum(s2, u, K).log()


# ---------------------------------------------------------------------------------------------
# float64 forms (search only, never reported): the same two representations, vectorised


def _reduce_float(c: np.ndarray) -> np.ndarray:
    u = c - np.floor(c)
    return np.minimum(u, 1.0 - u)


def log_theta_ratio_float(s2: float, c: np.ndarray) -> np.ndarray:
    """Float log(Theta_s(c)/Theta_s(0)) for an array of shifts c (s2 = s^2)."""
    u = _reduce_float(np.asarray(c, dtype=np.float64))
    if s2 >= 0.25:
        m = np.arange(1, 7, dtype=np.float64)
        q = np.exp(-2 * math.pi**2 * s2 * m * m)
        N = np.sum(q * np.sin(math.pi * u[..., None] * m) ** 2, axis=-1)
        E = float(np.sum(q))
        return np.log1p(-4 * N / (1 + 2 * E))
    K = max(2, math.ceil(math.sqrt(2 * s2 * 60)) + 2)
    k = np.arange(-K, K + 1, dtype=np.float64)
    base = logsumexp_rows(-(k * k) / (2 * s2))
    return logsumexp_rows(-((k + u[..., None]) ** 2) / (2 * s2)) - base


def log_theta_float(s2: float, c: np.ndarray) -> np.ndarray:
    """Float log Theta_s(c) for an array of shifts c."""
    u = _reduce_float(np.asarray(c, dtype=np.float64))
    if s2 >= 0.25:
        m = np.arange(1, 7, dtype=np.float64)
        q = np.exp(-2 * math.pi**2 * s2 * m * m)
        total = 1 + 2 * np.sum(q * np.cos(2 * math.pi * u[..., None] * m), axis=-1)
        return 0.5 * math.log(2 * math.pi * s2) + np.log(total)
    K = max(2, math.ceil(math.sqrt(2 * s2 * 60)) + 2)
    k = np.arange(-K, K + 1, dtype=np.float64)
    return logsumexp_rows(-((k + u[..., None]) ** 2) / (2 * s2))
