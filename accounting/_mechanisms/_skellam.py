"""Skellam noise Sk(0, mu) = Poisson(mu/2) - Poisson(mu/2): exact, certified Rényi curve.

Law: P(k) = e^{-mu} I_{|k|}(mu) (I the modified Bessel function), variance mu. For a 1-D integer
query of sensitivity Delta (l1 = l2 = Delta: an integer vector whose l1 and l2 norms agree has a
single non-zero coordinate, so this *is* the 1-D case) the exact curve is
D_alpha = log S(alpha) / (alpha - 1),  S(alpha) = sum_k T(k),  T(k) = P(k)^alpha P(k - Delta)^{1-alpha}.
P is symmetric, so reflecting k -> Delta - k swaps P and Q: both directions agree.

0. Facts used below: Sk(0, mu) is log-concave (a convolution of the log-concave Poisson(mu/2) and
its reflection; convolution preserves discrete log-concavity) and symmetric, hence unimodal at 0,
and r(k) = P(k)/P(k - Delta) is non-increasing in k. Consequently, for k >= 0,
T(k) = P(k) r(k)^{alpha-1} <= P(0) r(0)^{alpha-1} = T(0)  (both factors non-increasing), and
S(alpha) = exp((alpha - 1) D_alpha) >= 1.

1. The pmf on an index segment [lo, hi]
---------------------------------------
The recurrence I_{n-1}(x) = I_{n+1}(x) + (2n/x) I_n(x) is run *backwards* from two certified seeds
e^{-mu} I_{hi+1}(mu), e^{-mu} I_hi(mu) (Arb's ``bessel_i(scaled=True)``, fast at any order). Every
step adds two positive balls, so the relative radius of P(n-1) is at most the larger relative
radius of P(n), P(n+1) plus one rounding: after M steps the enclosures have lost only log2(M)
bits. (The forward recurrence would cancel catastrophically; this one cannot.) The pmf is cached
in fixed chunks of indices [j C, (j + 1) C), each seeded at its own top and so a function of
(mu, j, precision) alone (section 8); a window (full or far) reads the chunks it covers.

2. Where the tilted mass sits; the summation window
---------------------------------------------------
T(k) peaks far left of P's bulk at large alpha (mu = 100, alpha = 1e4: near k = -2500; mu = 1e5,
Delta = 160, alpha = 1e6: near k = -2e7). The window summed in Arb is chosen from float64
estimates of log T (section 6; a heuristic that only affects tightness): the run of k where
log T is within (prec + 40) ln 2 + ... nats of its maximum, widened until the proven remainders
below are that small. Two shapes of window:
- *full*: [-n1, K - 1], containing 0, with the remainders of sections 3 and 4;
- *far* (when the mass sits well left of 0): [-n1, -n0] with n0 >= 1, with the remainders of
  sections 3 and 5. Only the pmf segment [n0, n1 + Delta] is computed, so the cost follows the
  width of the tilted measure, not its distance from 0.

3. Left remainder (k < -n1): a decreasing ratio bound
-----------------------------------------------------
Let q_m = I_{m+1}(mu)/I_m(mu) > 0 and T(-n) = P(n)^alpha P(n+Delta)^{1-alpha}. Then
  T(-(n+1)) / T(-n) = q_n (q_n / q_{n+Delta})^{alpha-1} = q_n prod_{j<Delta} (q_{n+j}/q_{n+j+1})^{alpha-1}.
Three majorants rho(n) of this ratio, each valid for every m >= n (decreasing in m):
(a) From the recurrence, 1/q_m = 2(m+1)/mu + q_{m+1}, hence
    (F1) q_m < mu/(2(m+1)),  (F2) q_m > 1/(2(m+1)/mu + mu/(2(m+2))),
    (F3) q_m/q_{m+1} < (m+2)/(m+1) + mu^2/(4(m+1)(m+3)) =: B(m), decreasing in m, so
    rho_a(n) = mu/(2(n+1)) B(n)^{Delta(alpha-1)}.
(b) Amos (1974) / Segura (2011, Thm 1): for m >= 0,
    L(m) := mu/(m + 1/2 + S(m + 3/2)) < q_m < mu/(m + 1/2 + S(m + 1/2)) =: U(m),  S(h) := sqrt(h^2 + mu^2).
    With h = m + 1/2: q_m/q_{m+1} < (h + 1 + S(h+2))/(h + S(h)) = 1 + (1 + S(h+2) - S(h))/(h + S(h))
    <= 1 + 3/(h + S(h)), because S(h+2) - S(h) <= 2; this is decreasing in m, so
    rho_b(n) = U(n) (1 + 3/(n + 1/2 + S(n + 1/2)))^{Delta(alpha-1)}.
    (The bounds are also checked numerically against Arb's Bessel values in the tests.)
(c) Directly, q_m/q_{m+Delta} < U(m)/L(m+Delta) = f(h) := (A + S(A+1))/(h + S(h)), A = h + Delta.
    d/dh log f = (1 + 1/(A + S(A+1)))/S(A+1) - 1/S(h), which is <= 0 iff
    S(h)/(A + S(A+1)) <= S(A+1) - S(h) = c/(S(A+1) + S(h)),  c := (A+1)^2 - h^2 = (Delta+1)(2h+Delta+1);
    since S(h) <= S(A+1), it suffices that 2 S(A+1) <= c, and c - 2 S(A+1) is increasing in h
    (derivative 2(Delta+1) - 2(A+1)/S(A+1) > 0). So if 2 S(A+1) <= c at h = n + 1/2 (checked in
    exact rational arithmetic), f is decreasing on [n, inf), and so is
    rho_c(n) = U(n) f(n + 1/2)^{alpha-1}. (c) is the sharp one for large Delta.
rho = min of those that apply; if rho(n1) < 1, sum_{n > n1} T(-n) <= T(-n1) rho(n1) / (1 - rho(n1)).

4. Right remainder of the full window (k >= K, K >= Delta/2)
-----------------------------------------------------------
For k >= K >= Delta/2, |k| >= |k - Delta| so r(k) <= r(K) <= 1 (section 0), and
  sum_{k >= K} T(k) <= r(K)^{alpha-1} P[X >= K] <= r(K)^{alpha-1} exp(-(K asinh(K/mu) - sqrt(K^2+mu^2) + mu))
by the Chernoff bound with the Skellam mgf E e^{tX} = exp(mu (cosh t - 1)) at t = asinh(K/mu).
The same Chernoff bound gives the pair's tail masses.

5. The remainders of the far window [-n1, -n0]
----------------------------------------------
Inner part (-n0 < k <= 0): by (b), for every m >= 0,
  T(-(m+1))/T(-m) = q_m (q_m/q_{m+Delta})^{alpha-1} >= L(m) (L(m)/U(m+Delta))^{alpha-1} =: lambda(m),
  L(m)/U(m+Delta) = (h + Delta + S(h+Delta))/(h + S(h+1)), h = m + 1/2.
Both factors are decreasing in m: L(m) plainly, and d/dh log of the second is
1/S(h+Delta) - (S(h+1) + h + 1)/(S(h+1)(h + S(h+1))) < 1/S(h+Delta) - 1/S(h+1) <= 0 (Delta >= 1).
So if lambda(n0 - 1) > 1, then T(-m) <= T(-n0) lambda(n0-1)^{-(n0-m)} for 0 <= m < n0, and
  sum_{0 <= m < n0} T(-m) <= T(-n0) / (lambda(n0 - 1) - 1).
Right part (k >= 1): with K >= max(1, Delta/2), T(k) <= T(0) for 1 <= k < K (section 0) and
sum_{k >= K} T(k) <= P[X >= K] (section 4 with r(K) <= 1), so
  sum_{k >= 1} T(k) <= (K - 1) T(0) + Chernoff(K),  T(0) = P(0)^alpha P(Delta)^{1-alpha} from two Arb Bessel values.
(Every remainder is added as the ball [0, bound]; the window choice only affects tightness.
A window of more than MAX_WINDOW_TERMS terms is not summed: the value there is the split bound
of section 7 where it applies, else Agarwal et al.'s proven closed form at the integer order
ceil(alpha) (``_beyond_window``; Renyi divergence is non-decreasing in the order). A window
estimated past 64 MAX_WINDOW_TERMS (mu ~ 1e10 and up at Delta = 1) is not even planned.)

6. Float approximation (search only; never reported)
----------------------------------------------------
For s = sqrt(n^2 + mu^2) >= 128, log P(n) in float64 from Debye's uniform expansion
e^{-mu} I_n(mu) = e^{s - mu} (mu/(n + s))^n (2 pi s)^{-1/2} (1 + sum_{k=1}^{8} u_k(t)/n^k), t = n/s,
where u_k(t)/n^k = p_k(t^2)/s^k (DLMF 10.41.10; the u_k from their recurrence, exact rationals):
relative error ~1e-16 there. Below, a float table from Arb. The tilted measure's mode n* and
width sigma come from q_m ~ mu/(m + 1/2 + S(m+1)); S(alpha) is then the integral of the smooth
(even, analytic) Debye summand by the trapezoid rule with step sigma/3 over +-14 sigma (its
difference from the sum over the integers is of order exp(-2 pi^2 sigma^2), the rule's own error
of order exp(-18 pi^2)), or, when sigma < 8 or Debye does not apply, the direct sum over the
window. Both are divided by the same scheme's total mass of P (near alpha = 1 on the same nodes,
through expm1, so that D_alpha keeps its relative accuracy as alpha -> 1): ~1e-11 relative.
The window planner (section 2) scans log T densely when the scan is short; a longer scan is
coarse (~2048 points) and refined to single integers near the peak and at the two threshold
crossings, where log T is smooth and monotone: the same window at a fraction of the cost.

7. Long windows: the split bound (composition + post-processing)
----------------------------------------------------------------
The window is ~30 sqrt(mu) terms wide (sigma ~ sqrt(mu)), i.e. ~1e6 terms at mu ~ 1e9 (Dist-RDP-SE
with many users): seconds per order. For mu_1 + ... + mu_m = mu (positive reals) and integers
Delta_1 + ... + Delta_m = Delta (>= 0),
  D_alpha(Sk(0, mu) || Sk(Delta, mu)) <= sum_i D_alpha(Sk(0, mu_i) || Sk(Delta_i, mu_i))   (every alpha > 1).
Proof: let X_i ~ Sk(0, mu_i) be independent. The vector (X_i + b Delta_i)_i, b in {0, 1}, has
Renyi divergence sum_i D_alpha(Sk(0, mu_i) || Sk(Delta_i, mu_i)) between b = 0 and b = 1 (Renyi
divergence is additive over independent coordinates); its sum is Sk(0, mu) + b Delta (Poisson laws
add, so Skellam laws do); the data-processing inequality for Renyi divergence (any order) bounds
the divergence of the sum by that of the vector. Each term is this module's exact value, so the
bound is certified. Used with m pieces, Delta_i in {q, q + 1} (Delta = q m + r) and
mu_i = mu Delta_i / Delta (the split that is exact for the Gaussian, where the bound is an
equality), m chosen so that each piece's window has ~SPLIT_PIECE_TERMS terms: one or two exact
evaluations of ~1e4 terms instead of one of ~30 sqrt(mu). It replaces the exact sum when the
exact window exceeds EXACT_WINDOW_TERMS (and Delta >= 2, alpha <= SPLIT_MAX_ALPHA or the window
exceeds MAX_WINDOW_TERMS) and the pieces are shorter. Its slack (the price of not summing the sum
itself) is tightness only, and small: measured against the exact sum for mu = 4 Delta^2 and
100 Delta^2 (Dist-RDP-SE, eps = 0.5 and 0.1), mu from 4e5 to 5e7: 1e-11 to 8e-10 relative for
alpha <= 64, at most 3e-9 up to alpha = 256 (it grows like alpha^2 / mu_i^2; larger orders get
larger pieces). Below EXACT_WINDOW_TERMS every value is the exact sum, as before.

8. Memoisation and determinism
------------------------------
skellam_rdp_ball is a deterministic function of (mu, Delta, the exact alpha ball, the working
precision): the float planner is deterministic, the pmf chunks depend only on (mu, j, precision)
(never on which windows were asked for before), and the split's pieces are again such values. So
it is memoised on exactly those arguments (a bounded LRU): a hit returns what a fresh process
would compute, and results do not depend on the order of requests, the number of worker processes
or cache state. (The budget of a run, the ledger's checks and the ledger summary evaluate the same
curves at the same orders; after the first seed they cost nothing.)

Closed form kept beside the exact value: Agarwal, Kairouz, Liu 2021 Thm 3.5
alpha D2^2/(2mu) + min{((2alpha-1) D2^2 + 6 D1)/(4 mu^2), 3 D1/(2 mu)}. (The ICLR 2023 Theorem 2
parametrisation and its printed/corrected curves live in :mod:`accounting._papers._paper_params`.)
"""

from __future__ import annotations

import math
import operator
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb, ctx

from .._core._certified import exact
from .._core._guarantees import RDP
from .._core._pairs import ShiftPair
from .._core._validation import AccountingError
from ._approx import logsumexp_rows, safe_approx
from .._core._mechanism_base import Mechanism, alpha_guard_bits, check_noise_range, check_scale, check_sensitivity_int, nonneg_error

__all__ = [
    "Skellam",
    "SkellamPair",
    "agarwal_bound_approx",
    "agarwal_bound_ball",
    "skellam_rdp_approx",
    "skellam_rdp_ball",
]

_LN2 = math.log(2)


# ---------------------------------------------------------------------------------------------
# float64 machinery (section 6): approximations and window planning, never reported


def _debye_polynomials(count: int) -> np.ndarray:
    """Coefficients of p_k with u_k(t) = t^k p_k(t^2), k = 1..count, from
    u_{k+1}(t) = t^2 (1 - t^2) u_k'(t)/2 + (1/8) int_0^t (1 - 5 tau^2) u_k(tau) d tau (DLMF 10.41.9).
    Returned as a matrix C with p_k(y) = sum_j C[j, k-1] y^j."""
    u: dict[int, Fraction] = {0: Fraction(1)}
    columns = []
    for k in range(1, count + 1):
        new: dict[int, Fraction] = {}
        for p, c in u.items():
            if p > 0:
                new[p + 1] = new.get(p + 1, Fraction(0)) + c * p / 2
                new[p + 3] = new.get(p + 3, Fraction(0)) - c * p / 2
            new[p + 1] = new.get(p + 1, Fraction(0)) + c / (8 * (p + 1))
            new[p + 3] = new.get(p + 3, Fraction(0)) - 5 * c / (8 * (p + 3))
        u = new
        columns.append([float(u.get(k + 2 * j, Fraction(0))) for j in range(count + 1)])
    return np.array(columns).T


_DEBYE = _debye_polynomials(8)
#: Debye's expansion (8 terms) is used where sqrt(n^2 + mu^2) >= this (error ~1e-16 relative).
_DEBYE_MIN_S = 128.0
#: For mu below _DEBYE_MIN_S, the float log-pmf at n <= this comes from Arb (Debye beyond).
_FLOAT_TABLE_N = 160
#: The trapezoid rule's nodes: step sigma/3 over +-14 sigma.
_TRAPEZOID_J = np.arange(-42, 43, dtype=np.float64)
_TRAPEZOID_STEP = 1.0 / 3.0


def _debye_log_pmf(nu: np.ndarray, mu: float) -> np.ndarray:
    """log(e^{-mu} I_nu(mu)) for real nu >= 0 (an even, smooth function of nu), float64."""
    s = np.hypot(nu, mu)
    smallest = float(np.min(s)) if s.size else 0.0
    # terms needed for ~1e-17: |u_k| <= 0.13, 0.08, 0.08, 0.12, 0.23, 0.58, 1.8, 6.1 (max at t = 0)
    terms = 3 if smallest >= 2e4 else 5 if smallest >= 1e3 else _DEBYE.shape[1]
    y = (nu / s) ** 2
    w = 1.0 / s
    # sum_{k <= terms} p_k(y) w^k by Horner's rule in w, each p_k (degree k) by Horner's rule in y
    corr = np.zeros_like(s)
    for k in range(terms, 0, -1):
        pk = np.full_like(s, _DEBYE[k, k - 1])
        for j in range(k - 1, -1, -1):
            pk = pk * y + _DEBYE[j, k - 1]
        corr = (corr + pk) * w
    # s - mu = nu^2/(s + mu) and nu log((nu + s)/mu) = nu asinh(nu/mu): no cancellation
    return nu * nu / (s + mu) - nu * np.arcsinh(nu / mu) - 0.5 * np.log(2 * np.pi * s) + np.log1p(corr)


def _log_chernoff_float(mu: float, K: np.ndarray) -> np.ndarray:
    """Float log of the Chernoff bound on P[X >= K] (section 4)."""
    return -(K * np.arcsinh(K / mu) - K * K / (np.hypot(K, mu) + mu))


class _FloatLaw:
    """float64 log-pmf of Sk(0, mu) at any index, the tilted measure's mode and width."""

    __slots__ = ("mu", "key", "table", "log_norm")

    def __init__(self, mu) -> None:
        self.key = Fraction(mu)
        self.mu = float(self.key)
        if self.mu >= _DEBYE_MIN_S:
            self.table = None
            h = math.sqrt(self.mu) * _TRAPEZOID_STEP
            x = np.abs(_TRAPEZOID_J * h)
            self.log_norm = float(logsumexp_rows(_debye_log_pmf(x, self.mu)) + math.log(h))
        else:
            table = _Table(mu, _FLOAT_TABLE_N, 80)
            self.table = np.array([float(v.mid()) for v in table.logs])
            k = np.abs(np.arange(-_FLOAT_TABLE_N, _FLOAT_TABLE_N + 1, dtype=np.float64))
            self.log_norm = float(logsumexp_rows(self.lp(k)))

    def lp(self, n: np.ndarray) -> np.ndarray:
        """log P(n) for n >= 0 (integer-valued where n <= _FLOAT_TABLE_N and mu is small)."""
        n = np.asarray(n, dtype=np.float64)
        if self.table is None:
            return _debye_log_pmf(n, self.mu)
        small = n <= _FLOAT_TABLE_N
        out = np.empty(n.shape)
        out[small] = self.table[n[small].astype(np.int64)]
        large = ~small
        if np.any(large):
            out[large] = _debye_log_pmf(n[large], self.mu)
        return out

    def log_t(self, k: np.ndarray, am1: float | np.ndarray, delta: int) -> np.ndarray:
        """log T(k) = log P(k) + (alpha-1)(log P(k) - log P(k - Delta)) at integer k."""
        k = np.asarray(k, dtype=np.float64)
        v1 = self.lp(np.abs(k))
        v2 = self.lp(np.abs(k - delta))
        return v1 + am1 * (v1 - v2)

    def mode(self, am1: np.ndarray, delta: int) -> tuple[np.ndarray, np.ndarray]:
        """(n*, sigma): T(-n) increases up to about n* + 1/2, with width sigma (float estimates).

        n* solves q_n (q_n/q_{n+Delta})^{alpha-1} = 1 with q_m ~ mu/(m + 1/2 + S(m+1)) (between
        the Amos bounds), by bisection; 0 when T(-n) decreases from n = 0.
        """
        mu = self.mu

        def ell(m):  # ~ -log q_m, increasing in m
            return np.log((m + 0.5 + np.hypot(m + 1.0, mu)) / mu)

        def f(n):
            return am1 * (ell(n + delta) - ell(n)) - ell(n)

        lo = np.zeros_like(am1)
        hi = am1 * delta + 2.0 * mu + 2.0 * delta + 16.0
        rising = f(lo) > 0
        for _ in range(80):  # to 1e-3 (the windows are many sigma >= ~0.5 wide)
            mid = 0.5 * (lo + hi)
            up = f(mid) > 0
            lo = np.where(up, mid, lo)
            hi = np.where(up, hi, mid)
            if not np.any(hi - lo > 1e-3):
                break
        nstar = np.where(rising, 0.5 * (lo + hi), 0.0)
        s0 = np.hypot(nstar + 1.0, mu)
        s1 = np.hypot(nstar + 1.0 + delta, mu)
        sigma = 1.0 / np.sqrt(1.0 / s0 + am1 * (1.0 / s0 - 1.0 / s1))
        return nstar, sigma

    def mode_scalar(self, am1: float, delta: int) -> tuple[float, float]:
        """:meth:`mode` at one order, in Python floats (the planner's per-ball call; ~20x faster)."""
        mu = self.mu

        def ell(m: float) -> float:
            return math.log((m + 0.5 + math.hypot(m + 1.0, mu)) / mu)

        def f(n: float) -> float:
            return am1 * (ell(n + delta) - ell(n)) - ell(n)

        lo, hi = 0.0, am1 * delta + 2.0 * mu + 2.0 * delta + 16.0
        if not f(lo) > 0:
            nstar = 0.0
        else:
            for _ in range(80):
                mid = 0.5 * (lo + hi)
                if f(mid) > 0:
                    lo = mid
                else:
                    hi = mid
                if not hi - lo > 1e-3:
                    break
            nstar = 0.5 * (lo + hi)
        s0 = math.hypot(nstar + 1.0, mu)
        s1 = math.hypot(nstar + 1.0 + delta, mu)
        with np.errstate(all="ignore"):  # as in mode(): a non-finite sigma makes the plan hopeless
            sigma = float(1.0 / np.sqrt(np.float64(1.0 / s0 + am1 * (1.0 / s0 - 1.0 / s1))))
        return nstar, sigma


_FLOAT_LAWS: dict[Fraction, _FloatLaw] = {}


def _float_law(mu) -> _FloatLaw:
    key = Fraction(mu)
    law = _FLOAT_LAWS.get(key)
    if law is None:
        law = _FLOAT_LAWS[key] = _FloatLaw(mu)
    return law


def _log_ratio_rows(v1: np.ndarray, v2: np.ndarray, am1: np.ndarray, log_step: np.ndarray, log_norm: float) -> np.ndarray:
    """log(S/Z) from log P at a row of nodes (v1) and at the nodes shifted by Delta (v2).

    Where the nodes also cover P's bulk (alpha near 1), S/Z is formed on the *same* nodes as
    1 + sum w expm1((alpha-1) Z) / sum w with w = P, Z = log P - log Q, which keeps full relative
    accuracy as alpha -> 1; elsewhere log S - log Z from the scheme's total mass ``log_norm``.
    """
    z = am1 * (v1 - v2)
    out = logsumexp_rows(v1 + z) + log_step - log_norm
    near = np.max(np.abs(z), axis=-1) < 40.0
    if np.any(near):
        w = np.exp(v1[near] - np.max(v1[near], axis=-1, keepdims=True))
        ratio = np.sum(w * np.expm1(z[near]), axis=-1) / np.sum(w, axis=-1)
        out[near] = np.log1p(ratio)
    return out


def _log_s_values(law: _FloatLaw, delta: int, am1: np.ndarray) -> np.ndarray:
    """Float log(S(alpha)/Z) at alpha - 1 = am1 > 0 (Z the scheme's total mass of P)."""
    mu = law.mu
    nstar, sigma = law.mode(am1, delta)
    center = -(nstar + 0.5)
    debye_ok = (law.table is None) | (nstar + 0.5 - 14.5 * sigma - delta >= _FLOAT_TABLE_N + 1)
    trapezoid = debye_ok & (sigma >= 8.0)
    log_s = np.full(am1.shape, np.nan)
    rows = np.flatnonzero(trapezoid)
    for start in range(0, rows.size, 2048):
        r = rows[start : start + 2048]
        h = sigma[r] * _TRAPEZOID_STEP
        # nodes centred between P's bulk and the tilted mode when they are close (alpha near 1)
        c = np.where(nstar[r] + 0.5 <= 4 * sigma[r], 0.5 * center[r], center[r])
        x = c[:, None] + h[:, None] * _TRAPEZOID_J
        v1 = _debye_log_pmf(np.abs(x), mu)
        v2 = _debye_log_pmf(np.abs(x - delta), mu)
        log_s[r] = _log_ratio_rows(v1, v2, am1[r, None], np.log(h), law.log_norm)
    rows = np.flatnonzero(~trapezoid)
    if rows.size:
        half = np.minimum(np.ceil(14 * sigma[rows]) + 8 + np.where(nstar[rows] < 4 * sigma[rows], nstar[rows], 0), 20000)
        order = np.argsort(half)  # group rows of similar width
        rows, half = rows[order], half[order].astype(np.int64)
        for start in range(0, rows.size, 256):
            r = rows[start : start + 256]
            w = int(half[start : start + 256].max())
            c = np.where(nstar[r] + 0.5 <= 4 * sigma[r], 0.0, np.floor(center[r]))
            k = c[:, None] + np.arange(-w, w + 1, dtype=np.float64)
            v1 = law.lp(np.abs(k))
            v2 = law.lp(np.abs(k - delta))
            log_s[r] = _log_ratio_rows(v1, v2, am1[r, None], np.zeros(r.size), law.log_norm)
    return log_s


def _agarwal_float(mu: float, d1: float, d2: float, alphas: np.ndarray) -> np.ndarray:
    first = ((2 * alphas - 1) * d2 * d2 + 6 * d1) / (4 * mu * mu)
    return alphas * d2 * d2 / (2 * mu) + np.minimum(first, 3 * d1 / (2 * mu))


def skellam_rdp_approx(mu, delta: int, alphas: np.ndarray) -> np.ndarray:
    """Float64 approximation of D_alpha(Sk(0,mu) || Sk(Delta,mu)) at an array of orders (search only).

    Accurate to ~1e-12 relative; non-finite results fall back to Agarwal et al.'s closed form.
    """
    law = _float_law(mu)
    a = np.asarray(alphas, dtype=np.float64)
    out = np.full(a.shape, np.nan)
    ok = np.isfinite(a) & (a > 1)
    if np.any(ok):
        am1 = a[ok] - 1.0
        out[ok] = np.maximum(_log_s_values(law, int(delta), am1) / am1, 0.0)
    return out


def agarwal_bound_approx(mu, d1, d2):
    """The float form of :func:`agarwal_bound_ball` (search only)."""
    m, a1, a2 = float(Fraction(mu)), float(Fraction(d1)), float(Fraction(d2))
    return safe_approx(lambda alphas: _agarwal_float(m, a1, a2, alphas))


# ---------------------------------------------------------------------------------------------
# pmf segments in Arb (section 1)


class _Table:
    """log P(n), n = lo..hi, for Sk(0, mu) at ``bits`` of precision (``logs[n - lo]``)."""

    __slots__ = ("mu", "lo", "N", "bits", "logs")

    def __init__(self, mu, N: int, bits: int, lo: int = 0) -> None:
        self.mu, self.lo, self.N, self.bits = mu, lo, N, bits
        with ctx.workprec(bits):
            m = exact(mu)
            hi = m.bessel_i(N + 1, scaled=True)
            cur = m.bessel_i(N, scaled=True)
            two_over_mu = 2 / m
            values = [arb(0)] * (N - lo + 1)
            values[N - lo] = cur
            for n in range(N, lo, -1):
                prev = hi + (two_over_mu * n) * cur
                values[n - 1 - lo] = prev
                hi, cur = cur, prev
            self.logs = list(map(arb.log, values))


#: The pmf is cached in chunks of this many indices, chunk j = log P(j C .. (j+1) C - 1), each
#: built on its own by the backward recurrence from two Arb Bessel seeds at its top: a chunk
#: depends only on (mu, j, bits), so a window's values never depend on what was computed before.
_CHUNK = 2048
#: Chunks kept (least recently used dropped first): ~5e5 logs, ~70 MB at 192 bits. (Balls and
#: conversions are memoised above this, so a dropped chunk is rebuilt only for a new window.)
_CHUNKS_KEPT = 256
_CHUNKS: OrderedDict = OrderedDict()


#: the chunk the last pmf lookup read (key, logs): a PLD reads its window's outputs in order
_LAST_CHUNK: list = [None, None]


def _round_bits(bits: int) -> int:
    """Table precision rounded up to whole 64-bit limbs (free: Arb works in limbs), so that
    nearby orders, which ask a few bits more or less, reuse a table instead of rebuilding it."""
    return -(-bits // 64) * 64


def _chunk(mu, j: int, bits: int) -> list:
    key = (Fraction(mu), j, bits)
    logs = _CHUNKS.get(key)
    if logs is None:
        logs = _Table(mu, (j + 1) * _CHUNK - 1, bits, lo=j * _CHUNK).logs
        _remember(_CHUNKS, key, logs, _CHUNKS_KEPT)
    else:
        _touch(_CHUNKS, key)
    return logs


class _Segment:
    """log P(n), n = lo..hi, gathered from cached chunks (``logs[n - lo]``), like a _Table."""

    __slots__ = ("lo", "N", "bits", "logs")

    def __init__(self, mu, lo: int, hi: int, bits: int) -> None:
        # the recurrence inside a chunk loses at most log2(_CHUNK) bits (section 1)
        self.bits = _round_bits(bits + _CHUNK.bit_length() + 8)
        self.lo, self.N = lo, hi
        first, last = lo // _CHUNK, hi // _CHUNK
        logs: list = []
        for j in range(first, last + 1):
            logs.extend(_chunk(mu, j, self.bits))
        start = lo - first * _CHUNK
        self.logs = logs[start : start + hi - lo + 1]


def _table(mu, N: int, bits: int) -> _Segment:
    """log P(0..N) at >= ``bits`` (the working precision the sums need)."""
    return _Segment(mu, 0, N, bits)


# ---------------------------------------------------------------------------------------------
# proven remainders (sections 3-5)


def _chernoff_log_tail(mu: arb, K: int) -> arb:
    """log of the Chernoff bound on P[X >= K], K >= 1 (section 4)."""
    k = arb(K)
    return -(k * (k / mu).asinh() - (k * k + mu * mu).sqrt() + mu)


def _rho_c_applies(mu_q: Fraction, n: int, delta: int) -> bool:
    """2 S(A+1) <= c at h = n + 1/2 (section 3 (c)), decided exactly: 4((n+Delta+3/2)^2 + mu^2) <= c^2."""
    c = (delta + 1) * (2 * n + delta + 2)
    return 4 * (Fraction(2 * n + 2 * delta + 3, 2) ** 2 + mu_q * mu_q) <= c * c


def _rho_bound(mu: arb, n: int, delta: int, am1: arb, mu_q: Fraction | None = None) -> arb:
    """rho(n) of section 3: an upper bound of every term ratio T(-(m+1))/T(-m), m >= n."""
    power = delta * am1
    B = arb(n + 2) / (n + 1) + mu * mu / (4 * arb(n + 1) * (n + 3))
    rho_f = mu / (2 * arb(n + 1)) * (B.log() * power).exp()
    h = arb(2 * n + 1) / 2
    root = (h * h + mu * mu).sqrt()
    rho = rho_f.min(mu / (h + root) * ((3 / (h + root)).log1p() * power).exp())
    if mu_q is not None and _rho_c_applies(mu_q, n, delta):
        a1 = h + delta + 1
        root1 = (a1 * a1 + mu * mu).sqrt()
        gap = (delta + (a1 * a1 - h * h) / (root1 + root)) / (h + root)  # f - 1
        rho = rho.min(mu / (h + root) * (gap.log1p() * am1).exp())
    return rho


def _lambda_bound(mu: arb, m: int, delta: int, am1: arb) -> arb:
    """lambda(m) of section 5: a lower bound of every ratio T(-(j+1))/T(-j), 0 <= j <= m."""
    h = arb(2 * m + 1) / 2
    s1 = ((h + 1) * (h + 1) + mu * mu).sqrt()
    sd = ((h + delta) * (h + delta) + mu * mu).sqrt()
    gap = (delta + ((h + delta) * (h + delta) - (h + 1) * (h + 1)) / (sd + s1)) / (h + s1)
    return mu / (h + s1) * (gap.log1p() * am1).exp()


def _log_rho_float(mu: float, n: np.ndarray, delta: int, am1: float) -> np.ndarray:
    power = delta * am1
    a = np.log(mu / (2 * (n + 1))) + power * np.log((n + 2) / (n + 1) + mu * mu / (4 * (n + 1) * (n + 3)))
    h = n + 0.5
    root = np.hypot(h, mu)
    b = np.log(mu / (h + root)) + power * np.log1p(3 / (h + root))
    a1 = h + delta + 1
    root1 = np.hypot(a1, mu)
    c = np.log(mu / (h + root)) + am1 * np.log1p((delta + (a1 * a1 - h * h) / (root1 + root)) / (h + root))
    c = np.where(2 * root1 <= (delta + 1) * (2 * h + delta + 1) * (1 - 1e-12), c, np.inf)
    return np.minimum(np.minimum(a, b), c)


def _log_lambda_float(mu: float, m: np.ndarray, delta: int, am1: float) -> np.ndarray:
    h = m + 0.5
    s1 = np.hypot(h + 1, mu)
    sd = np.hypot(h + delta, mu)
    gap = (delta + ((h + delta) ** 2 - (h + 1) ** 2) / (sd + s1)) / (h + s1)
    return np.log(mu / (h + s1)) + am1 * np.log1p(gap)


# ---------------------------------------------------------------------------------------------
# window planning (section 2; float, affects tightness only)


def _first_passing(start: float, step: float, direction: int, test, limit: float | None = None) -> int | None:
    """The first integer n = start + direction*j*step (j = 0, 1, ...) with test(n) true, batched."""
    n0 = float(start)
    step = max(1.0, float(step))
    for _ in range(64):
        cand = np.floor(n0 + direction * step * np.arange(256, dtype=np.float64))
        if limit is not None:
            cand = cand[(cand >= limit) if direction < 0 else (cand <= limit)]
            if cand.size == 0:
                return None
        with np.errstate(all="ignore"):
            ok = test(cand)
        hits = np.flatnonzero(ok)
        if hits.size:
            return int(cand[hits[0]])
        n0 = cand[-1] + direction * step
        step *= 2
    return None


#: Scans of at most this many orders are dense; longer ones are coarse, then refined near the
#: peak and at the two threshold crossings (log T is smooth there: same window, far fewer points).
_DENSE_SCAN = 8192


def _coarse_scan(law: _FloatLaw, am1: float, delta: int, c: int, half: int, base_thr: float):
    """The dense scan of :func:`_plan` on [c - half, c + half] from ~2048 points plus three local
    integer scans: (kmin, kmax, top, thr), or None when a side never drops below the threshold."""
    step = max(1, half // 1024)
    ks = np.arange(c - half, c + half + 1, step, dtype=np.float64)
    lt = law.log_t(ks, am1, delta)
    i = int(np.argmax(lt))
    near = np.arange(max(c - half, int(ks[i]) - step), min(c + half, int(ks[i]) + step) + 1, dtype=np.float64)
    top = float(np.max(law.log_t(near, am1, delta)))
    thr = top - base_thr - math.log(2 * half + 2)
    below = np.flatnonzero(lt < thr)
    left, right = below[below < i], below[below > i]
    if not (left.size and right.size):
        return None
    j = int(left[-1])
    cells = np.arange(int(ks[j]) + 1, int(ks[j + 1]) + 1, dtype=np.float64)
    low = np.flatnonzero(law.log_t(cells, am1, delta) < thr)
    kmin = int(cells[low[-1]]) + 1 if low.size else int(ks[j]) + 1
    j = int(right[0])
    cells = np.arange(int(ks[j - 1]), int(ks[j]), dtype=np.float64)
    low = np.flatnonzero(law.log_t(cells, am1, delta) < thr)
    kmax = int(cells[low[0]]) - 1 if low.size else int(ks[j]) - 1
    return kmin, kmax, top, thr


_PLANS: OrderedDict = OrderedDict()
_PLANS_KEPT = 4096
_MISSING = object()


def _touch(memo: OrderedDict, key) -> None:
    """Mark a memo entry as recently used (tolerant of concurrent use)."""
    try:
        memo.move_to_end(key)
    except KeyError:  # dropped by another thread meanwhile
        pass


def _remember(memo: OrderedDict, key, value, kept: int) -> None:
    """Insert into a bounded memo, dropping the least recently used (tolerant of concurrent use)."""
    memo[key] = value
    while len(memo) > kept:
        try:
            memo.popitem(last=False)
        except KeyError:  # emptied by another thread
            break


def _plan(law: _FloatLaw, delta: int, af: float, prec: int, allow_far: bool = True):
    """('full', n1, K, top, max_abs_log) or ('far', n1, n0, K, top, max_abs_log), or None if hopeless.

    A deterministic float computation, memoised on its arguments (the split bound plans its
    pieces once to size them and once to sum them)."""
    key = (law.key, int(delta), float(af), int(prec), bool(allow_far))
    hit = _PLANS.get(key, _MISSING)
    if hit is not _MISSING:
        _touch(_PLANS, key)
        return hit
    plan = _plan_window(law, delta, af, prec, allow_far)
    _remember(_PLANS, key, plan, _PLANS_KEPT)
    return plan


def _plan_window(law: _FloatLaw, delta: int, af: float, prec: int, allow_far: bool = True):
    mu = law.mu
    am1 = af - 1.0
    nstar, sigma = law.mode_scalar(am1, delta)
    if not (math.isfinite(nstar) and math.isfinite(sigma)):
        return None
    base_thr = (prec + 40) * _LN2 + max(0.0, -math.log(am1)) + 12
    if _WINDOW_PER_SIGMA * sigma > _PLAN_MAX_TERMS:
        return None  # a window far past any summable one: not planned (the scans alone would not fit in memory)
    c = -int(math.floor(nstar + 0.5))
    half = int(24 * sigma) + delta + 16
    for _ in range(40):
        if 2 * half + 1 <= _DENSE_SCAN:
            ks = np.arange(c - half, c + half + 1, dtype=np.float64)
            lt = law.log_t(ks, am1, delta)
            i = int(np.argmax(lt))
            top = float(lt[i])
            thr = top - base_thr - math.log(2 * half + 2)
            below = np.flatnonzero(lt < thr)
            left, right = below[below < i], below[below > i]
            if left.size and right.size:
                kmin, kmax = int(ks[left[-1] + 1]), int(ks[right[0] - 1])
                break
        else:
            found = _coarse_scan(law, am1, delta, c, half, base_thr)
            if found is not None:
                kmin, kmax, top, thr = found
                break
        half *= 2
    else:
        return None

    def log_t_at(k):
        return law.log_t(k, am1, delta)

    # left edge n1 (section 3)
    def left_ok(n):
        lr = _log_rho_float(mu, n, delta, am1)
        return (lr < 0) & (log_t_at(-n) + lr - np.log(-np.expm1(lr)) < thr)

    n1 = _first_passing(max(0, -kmin), sigma / 8, +1, left_ok)
    if n1 is None:
        return None
    lp0 = float(law.lp(np.array([0.0]))[0])

    def max_abs(N: int) -> float:
        return max(abs(lp0), abs(float(law.lp(np.array([float(N)]))[0]))) + 10.0

    half_delta = max(1, (delta + 1) // 2)
    if allow_far and kmax < 0:
        # far window: right part (K - 1) T(0) + Chernoff(K), inner part T(-n0)/(lambda - 1)
        K = half_delta
        while _log_chernoff_float(mu, np.array([float(K)]))[0] >= thr - 1 and K < 1 << 60:
            K *= 2
        lt0 = float(log_t_at(np.array([0.0]))[0])
        if math.log(max(K - 1, 1)) + lt0 < thr - 1:

            def inner_ok(n):
                ll = _log_lambda_float(mu, n - 1, delta, am1)
                return (ll > 0) & (log_t_at(-n) - np.log(np.expm1(ll)) < thr - 1)

            n0 = _first_passing(-kmax, sigma / 8, -1, inner_ok, limit=1)
            if n0 is not None and n0 >= 1 and n0 <= n1:
                return ("far", n1, n0, K, top, max_abs(n1 + delta))
    # full window (section 4)
    def right_ok(k):
        log_r = np.minimum(law.lp(np.abs(k)) - law.lp(np.abs(k - delta)), 0.0)
        return am1 * log_r + _log_chernoff_float(mu, k) < thr

    K = _first_passing(max(kmax + 1, half_delta), sigma / 8, +1, right_ok)
    if K is None:
        return None
    return ("full", n1, K, top, max_abs(max(n1 + delta, K)))


# ---------------------------------------------------------------------------------------------
# the certified curve

#: Windows longer than this many terms are not summed: the curve is then the split bound
#: (section 7) where it applies, else +inf, a valid (vacuous) bound, rather than minutes of work.
#: For Delta = 1 only orders far past any useful one get there (alpha ~ 1e7 and up; the
#: conversions search alpha <= 1e6 by default, e.g. 2e5 terms for mu = 1e4, Delta = 1).
MAX_WINDOW_TERMS = 1_000_000


#: A window holds T(k) within ~(prec + 40) ln 2 nats of its peak: about this many widths sigma
#: of the tilted measure (2 sqrt(2 * 60) ~ 22 at the smallest threshold; more at working precision).
_WINDOW_PER_SIGMA = 20.0
#: Windows estimated longer than this (before any scan) are not planned at all: neither the exact
#: sum (MAX_WINDOW_TERMS) nor a split into at most Delta pieces could use them, and the planner's
#: scans would allocate arrays of that size (mu = 1e30: 341 TiB). The value there is Agarwal et
#: al.'s closed form (see :func:`_ball`), a proven upper bound, tight (relative error O(1/mu)) exactly
#: where the window is long.
_PLAN_MAX_TERMS = 64 * MAX_WINDOW_TERMS

#: Above this many terms the exact window is replaced by the split bound of section 7, when that
#: applies (Delta >= 2) and its pieces are cheaper; below it, every value is the exact sum.
EXACT_WINDOW_TERMS = 20_000
#: The split bound's pieces are sized for windows of about this many terms (section 7).
SPLIT_PIECE_TERMS = 10_000
#: Above this order the split is used only where the exact window exceeds MAX_WINDOW_TERMS
#: (its slack grows with alpha; such orders are rarely asked for, and then summed exactly).
SPLIT_MAX_ALPHA = 256.0
#: Memo of certified balls (section 8): at most this many, least recently used dropped first.
_BALLS_KEPT = 16_384
_BALLS: OrderedDict = OrderedDict()


def _alpha_key(alpha: arb) -> tuple | None:
    """The exact ball alpha (midpoint and radius as integer mantissa-exponent pairs), or None."""
    try:
        m, e = alpha.mid().man_exp()
        r, f = alpha.rad().man_exp()
    except Exception:  # noqa: BLE001 - a non-finite ball: not memoised
        return None
    return int(m), int(e), int(r), int(f)


#: How each value was produced (issue 23, item 4: labels never overstate), by the code path taken:
EXACT_SUM = "exact Skellam sum"
SPLIT_BOUND = "split bound (section 7: composition of exact pieces)"
SPLIT_AGARWAL = "split bound with pieces by Agarwal et al. Thm 3.5"
AGARWAL_BOUND = "Agarwal et al. 2021 Thm 3.5 at ceil(alpha) (the exact sum's window is too long)"


def skellam_rdp_ball(mu, delta: int, alpha: arb) -> arb:
    """Ball whose upper endpoint bounds D_alpha(Sk(0,mu) || Sk(Delta,mu)) (module docstring).

    A deterministic function of (mu, Delta, alpha, working precision): memoised (section 8)
    together with the code path that produced it (:data:`EXACT_SUM`, :data:`SPLIT_BOUND`,
    :data:`SPLIT_AGARWAL`, :data:`AGARWAL_BOUND`), which :func:`skellam_rdp_path` returns.
    """
    return _ball_and_path(mu, delta, alpha)[0]


def skellam_rdp_path(mu, delta: int, alpha: arb) -> str:
    """The code path of :func:`skellam_rdp_ball` at the same arguments and working precision: the
    path stored with the memoised ball, or the ball evaluated afresh (the path is as deterministic
    a function of the arguments as the ball, so both answers are the same)."""
    return _ball_and_path(mu, delta, alpha)[1]


def _ball_and_path(mu, delta: int, alpha: arb) -> tuple[arb, str]:
    delta = int(delta)
    ak = _alpha_key(alpha)
    key = None if ak is None else (Fraction(mu), delta, ak, ctx.prec)
    if key is not None:
        hit = _BALLS.get(key)
        if hit is not None:
            _touch(_BALLS, key)
            return hit
    result = _ball(mu, delta, alpha)
    if key is not None:
        _remember(_BALLS, key, result, _BALLS_KEPT)
    return result


def _window_terms(plan) -> int:
    return plan[1] - plan[2] + 1 if plan[0] == "far" else plan[1] + plan[2]


def _ball(mu, delta: int, alpha: arb) -> tuple[arb, str]:
    af = float(alpha.mid())
    prec = ctx.prec
    law = _float_law(mu)
    mu_q = Fraction(mu)
    plan = _plan(law, delta, af, prec)
    if plan is None:
        return _beyond_window(mu, delta, alpha), AGARWAL_BOUND
    terms = _window_terms(plan)
    if delta >= 2 and terms > EXACT_WINDOW_TERMS and (af <= SPLIT_MAX_ALPHA or terms > MAX_WINDOW_TERMS):
        split = _split_ball(mu_q, delta, alpha, terms)
        if split is not None:
            return split
    allow_far = True
    while True:
        if plan is None:
            return _beyond_window(mu, delta, alpha), AGARWAL_BOUND
        max_abs_log = plan[-1]
        if _window_terms(plan) > MAX_WINDOW_TERMS:
            return _beyond_window(mu, delta, alpha), AGARWAL_BOUND
        bits = prec + alpha_guard_bits(alpha) + int(math.log2(max(af, 2.0) * max_abs_log)) + 24
        if plan[0] == "far":
            _, n1, n0, K, top, _ = plan
            table = _Segment(mu, n0, n1 + delta, bits)
            result = _far_sum(mu, mu_q, delta, alpha, bits, table, n0, n1, K, top)
            if result is None:  # lambda(n0 - 1) not certified > 1: use the full window
                allow_far = False
                plan = _plan(law, delta, af, prec, allow_far)
                continue
            return result, EXACT_SUM
        _, n1, K, top, _ = plan
        table = _table(mu, max(n1 + delta, K), bits)
        return _full_sum(mu, mu_q, delta, alpha, bits, table, n1, K, top), EXACT_SUM


def _beyond_window(mu, delta: int, alpha: arb) -> arb:
    """The value where the exact sum is not computed (window too long or not plannable).

    Agarwal, Kairouz & Liu (2021, Thm 3.5) prove their closed form an upper bound of this very
    divergence (D1 = D2 = Delta, the 1-D case) at integer orders alpha >= 2. Renyi divergence is
    non-decreasing in alpha, so D_alpha <= D_ceil(alpha) <= their bound at ceil(alpha) (ceil of
    the ball's upper end): evaluated in Arb, a certified upper bound at every real alpha > 1,
    where before this was +inf (valid, vacuous). It is tight exactly where windows are long
    (large mu: relative slack O(1/mu), plus the rounding of alpha up to an integer).
    """
    whole = alpha.upper().ceil()
    if not whole.is_finite():
        return arb.pos_inf()
    return agarwal_bound_ball(mu, delta, delta, whole.max(arb(2))).upper() + arb(0)


def _split_pieces(delta: int, terms: int, af: float) -> list[tuple[int, int]]:
    """(Delta_i, count) of the split of section 7: m pieces, Delta = q m + r, r of them q + 1.

    A window is about sqrt(mu) wide, so m ~ (terms / W)^2 pieces of mu/m each have windows of
    ~W terms, W = SPLIT_PIECE_TERMS sqrt(max(1, alpha/64)) (the slack grows like alpha^2/mu_i^2:
    larger pieces at larger orders keep it ~1e-10 relative). A divisor of Delta in [2m/3, 2m]
    is preferred: one kind of piece (one exact evaluation) instead of two."""
    piece_terms = SPLIT_PIECE_TERMS * math.sqrt(max(1.0, af / 64.0))
    target = min(delta, max(2, math.ceil((terms / piece_terms) ** 2)))
    divisors = [m for m in range(max(2, (2 * target) // 3), min(delta, 2 * target) + 1) if delta % m == 0]
    m = min(divisors, key=lambda d: abs(math.log(d / target))) if divisors else target
    q, r = divmod(delta, m)
    return [(d, count) for d, count in ((q + 1, r), (q, m - r)) if count > 0]


def _split_ball(mu_q: Fraction, delta: int, alpha: arb, terms: int) -> tuple[arb, str] | None:
    """Section 7: sum_i count_i * D_alpha(Sk(0, mu Delta_i/Delta) || Sk(Delta_i, ...)), or None
    when the pieces' windows are not shorter in all than the exact one."""
    af = float(alpha.mid())
    pieces = _split_pieces(delta, terms, af)
    piece_terms = 0
    for d, _ in pieces:
        plan = _plan(_float_law(mu_q * d / delta), d, af, ctx.prec)
        if plan is None:
            return None
        piece_terms += _window_terms(plan)
    if piece_terms >= terms:
        return None
    total = arb(0)
    path = SPLIT_BOUND
    for d, count in pieces:
        part, piece_path = _ball_and_path(mu_q * d / delta, d, alpha)
        if not part.is_finite():
            return None
        if piece_path != EXACT_SUM:
            path = SPLIT_AGARWAL
        total += part.upper() * count
    return total, path


def _full_sum(mu, mu_q, delta, alpha, bits, table, n1, K, top) -> arb:
    with ctx.workprec(bits):
        logs, lo = table.logs, table.lo
        m = exact(mu)
        a = alpha
        am1 = a - 1
        shift = arb(top)
        # T(k) = exp(A[|k|] - B[|k - Delta|]), A[n] = a log P(n) - top, B[n] = (a - 1) log P(n),
        # summed over k = -n1 .. K - 1 in three runs on which |k| and |k - Delta| are linear
        top_a = max(n1, K - 1)
        top_b = max(n1 + delta, K - 1 - delta)
        A = [a * v - shift for v in logs[-lo : top_a + 1 - lo]]
        B = [am1 * v for v in logs[-lo : top_b + 1 - lo]]
        total = arb(0)
        if n1 > 0:  # k = -n1 .. -1: |k| = n1 .. 1, |k - Delta| = n1 + Delta .. Delta + 1
            total = sum(map(arb.exp, map(operator.sub, A[n1:0:-1], B[n1 + delta : delta : -1])), total)
        k_mid = min(delta, K)  # k = 0 .. k_mid - 1: |k| = k, |k - Delta| = Delta - k
        if k_mid > 0:
            total = sum(map(arb.exp, map(operator.sub, A[0:k_mid], B[delta : delta - k_mid : -1])), total)
        if K > delta:  # k = Delta .. K - 1: |k| = k, |k - Delta| = k - Delta
            total = sum(map(arb.exp, map(operator.sub, A[delta:K], B[0 : K - delta])), total)
        # left remainder (section 3)
        rho = _rho_bound(m, n1, delta, am1, mu_q)
        if not rho.upper() < 1:
            return arb.pos_inf()
        total += nonneg_error((a * logs[n1 - lo] - am1 * logs[n1 + delta - lo] - shift).exp() * rho / (1 - rho))
        # right remainder (section 4)
        log_r = logs[K - lo] - logs[abs(K - delta) - lo]
        log_r = arb(0).union(log_r) if not log_r.upper() <= 0 else log_r
        total += nonneg_error((am1 * log_r + _chernoff_log_tail(m, K) - shift).exp())
        return (shift + total.log()) / am1


def _far_sum(mu, mu_q, delta, alpha, bits, table, n0, n1, K, top) -> arb | None:
    with ctx.workprec(bits):
        m = exact(mu)
        a = alpha
        am1 = a - 1
        lam = _lambda_bound(m, n0 - 1, delta, am1)
        if not lam.lower() > 1:
            return None
        rho = _rho_bound(m, n1, delta, am1, mu_q)
        if not rho.upper() < 1:
            return arb.pos_inf()
        logs, lo = table.logs, table.lo
        shift = arb(top)
        # T(-n) = exp(a log P(n) - (a - 1) log P(n + Delta) - top), n = n0 .. n1
        A = [a * v - shift for v in logs[n0 - lo : n1 + 1 - lo]]
        B = [am1 * v for v in logs[n0 + delta - lo : n1 + delta + 1 - lo]]
        total = sum(map(arb.exp, map(operator.sub, A, B)), arb(0))
        # left remainder (section 3)
        total += nonneg_error((a * logs[n1 - lo] - am1 * logs[n1 + delta - lo] - shift).exp() * rho / (1 - rho))
        # inner remainder, -n0 < k <= 0 (section 5)
        total += nonneg_error((a * logs[n0 - lo] - am1 * logs[n0 + delta - lo] - shift).exp() / (lam - 1))
        # right part, k >= 1 (section 5): (K - 1) T(0) + Chernoff(K)
        log_p0 = m.bessel_i(0, scaled=True).log()
        log_pd = m.bessel_i(delta, scaled=True).log()
        t0 = (a * log_p0 - am1 * log_pd - shift).exp()
        total += nonneg_error((K - 1) * t0 + (_chernoff_log_tail(m, K) - shift).exp())
        return (shift + total.log()) / am1


# ---------------------------------------------------------------------------------------------
# closed form


def agarwal_bound_ball(mu, d1, d2, alpha: arb) -> arb:
    """Agarwal, Kairouz, Liu 2021 Thm 3.5: alpha D2^2/(2mu) + min{((2alpha-1)D2^2 + 6D1)/(4mu^2), 3D1/(2mu)}."""
    m, a1, a2 = exact(mu), exact(d1), exact(d2)
    first = ((2 * alpha - 1) * a2 * a2 + 6 * a1) / (4 * m * m)
    second = 3 * a1 / (2 * m)
    return alpha * a2 * a2 / (2 * m) + first.min(second)


# ---------------------------------------------------------------------------------------------
# mechanism and pair


@dataclass(frozen=True)
class SkellamPair(ShiftPair):
    """P = Sk(0, mu), Q = Sk(Delta, mu): certified log-pmfs (Arb Bessel), Chernoff tails."""

    variance: float | int | Fraction
    sensitivity: int

    def __post_init__(self) -> None:
        check_scale("variance", self.variance)
        check_sensitivity_int("sensitivity", self.sensitivity)

    def _log_pmf(self, x: int) -> arb:
        # Read from the cached pmf chunks (section 1: the backward recurrence from two certified
        # Bessel seeds per 2048 indices, enclosures rigorous) at the working precision plus the
        # chunk's guard bits: a PLD window of ~1e4 outputs costs a few chunks, not ~2e4 Bessel calls.
        n = abs(int(x))
        key = (self.variance, n // _CHUNK, _round_bits(ctx.prec + _CHUNK.bit_length() + 8))
        if _LAST_CHUNK[0] != key:  # consecutive outputs share a chunk: skip the LRU's Fraction key
            _LAST_CHUNK[:] = [key, _chunk(*key)]
        return _LAST_CHUNK[1][n % _CHUNK]

    def _outside(self, lo: int, hi: int) -> arb:
        if lo > hi or hi + 1 < 1 or 1 - lo < 1:
            return arb(0).union(arb(1))
        m = exact(self.variance)
        bound = _chernoff_log_tail(m, hi + 1).exp() + _chernoff_log_tail(m, 1 - lo).exp()
        return nonneg_error(bound)


@dataclass(frozen=True)
class Skellam(Mechanism):
    """Skellam mechanism Sk(0, variance) on an integer query with l1/l2 sensitivities D1, D2.

    ``l2_sensitivity`` defaults to ``l1_sensitivity`` (a 1-D query). The exact curve exists for
    D1 = D2 (the 1-D case); for D2 < D1 ``rdp()`` is Agarwal et al.'s bound, labelled as such.
    """

    variance: float | int | Fraction
    l1_sensitivity: int = 1
    l2_sensitivity: float | int | Fraction | None = None

    family = "skellam"
    # rdp_is_exact stays False: for l2 < l1 rdp() is Agarwal et al.'s bound, and the exact 1-D sum
    # falls back to it at orders where its window is too long (rdp_provenance says which, per order)

    def __post_init__(self) -> None:
        check_scale("variance", self.variance)
        check_sensitivity_int("l1_sensitivity", self.l1_sensitivity)
        if self.l2_sensitivity is None:
            object.__setattr__(self, "l2_sensitivity", self.l1_sensitivity)
        check_scale("l2_sensitivity", self.l2_sensitivity)
        if Fraction(self.l2_sensitivity) > self.l1_sensitivity:
            raise AccountingError(
                "l2_sensitivity", self.l2_sensitivity, f"a real number in (0, l1_sensitivity={self.l1_sensitivity}]"
            )
        check_noise_range("variance", self.variance, self.l1_sensitivity, 1e-9, 1e300, squared=True, sensitivity_name="l1_sensitivity")

    @property
    def mu(self):
        return self.variance

    @property
    def is_one_dimensional(self) -> bool:
        return Fraction(self.l2_sensitivity) == self.l1_sensitivity

    def rdp(self) -> RDP:
        mu, d = self.variance, self.l1_sensitivity
        if not self.is_one_dimensional:
            return self.closed_forms()["agarwal_2021_thm3.5"]
        fallback = agarwal_bound_approx(mu, d, d)
        return RDP.from_function(
            lambda alpha: skellam_rdp_ball(mu, d, alpha),
            f"Skellam(mu={mu}, Delta={d}) exact",
            approx=safe_approx(lambda alphas: skellam_rdp_approx(mu, d, alphas), fallback),
        )

    def rdp_provenance(self, alpha, precision: int | None = None) -> str:
        """What :meth:`rdp`'s value at ``alpha`` evaluated at ``precision`` bits is (default: the
        routes' precision), by the code path that produced it: the path memoised with that value
        (the memo is keyed by mu, Delta, the ball alpha and the precision), or, if it is no longer
        kept, the path of the same evaluation made afresh (deterministic: the same path)."""
        if not self.is_one_dimensional:
            return "Agarwal et al. 2021 Thm 3.5 (no exact curve for l2 < l1 sensitivity)"
        from .._core._certified import working_precision

        with working_precision(precision):
            return skellam_rdp_path(self.variance, self.l1_sensitivity, exact(alpha))

    def closed_forms(self) -> dict:
        mu, d1, d2 = self.variance, self.l1_sensitivity, self.l2_sensitivity
        return {
            "agarwal_2021_thm3.5": RDP.from_function(
                lambda a: agarwal_bound_ball(mu, d1, d2, a),
                f"agarwal_2021_thm3.5(mu={mu}, D1={d1}, D2={d2})",
                approx=agarwal_bound_approx(mu, d1, d2),
            )
        }

    def output_pair(self) -> SkellamPair | None:
        if not self.is_one_dimensional:
            return None
        return SkellamPair(self.variance, self.l1_sensitivity)

    def describe(self) -> str:
        return (
            f"Skellam Sk(0, mu={self.variance}) on an integer query, l1 sensitivity {self.l1_sensitivity}, "
            f"l2 sensitivity {self.l2_sensitivity}"
        )
