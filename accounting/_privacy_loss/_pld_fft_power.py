"""Composition of float PLDs by one FFT power, certified through exponential tilting.

What is computed
----------------
A composition of float (discretised) PLDs is a product of powers of its single releases,
c = a_1^{*k_1} * ... * a_r^{*k_r} (convolution powers of the releases' finite measures on the grid
L = n h; the +inf atoms compose in closed form, below). :mod:`accounting._privacy_loss._pld` forms it by repeated
squaring, with one FFT per product and a truncation after each. Here it is formed the way
dp_accounting forms a self-composition (one forward FFT per release, an elementwise power, one
inverse FFT, on a cyclic window of N points), and the result is certified by a forward-error
analysis of that single pass. The rigorous part is new: the window, the wrap-around, the powers and
the exponential tilting that makes the error negligible where delta(eps) is read.

The window and the wrap-around (soundness)
------------------------------------------
The FFT computes the *cyclic* convolution on N points: the entry of grid index B + q (window
[B, B + N)) receives c(B + q + jN) for every integer j. All masses are >= 0, so the cyclic result
is >= c on the window pointwise: mass from below the window is moved *up* by N h (pessimistic) and
mass from above is duplicated lower (extra mass, pessimistic since f_eps >= 0). Only c's mass
*above* the window would be lost; it is bounded by Chernoff's inequality,

    c(L > T) <= e^{-s T} prod_i M_i(s)^{k_i},   M_i(s) = sum_n a_i(n) e^{s L_n},  s > 0,

evaluated rigorously (upper floats of the weights, Arb for the powers), and placed on the +inf atom
(f_eps(+inf) = 1). The window is placed (by float estimates: placement moves tightness, never
soundness) so that both tails carry at most ``WINDOW_TAIL`` mass; the tilted pass below also adds
the lower-tail bound (same inequality with s < 0) to the +inf atom, since tilting shrinks the mass
that wraps up from below. +inf atoms: with finite masses m_i and atoms p_i of the releases, the
composition's atom is prod (m_i + p_i)^{k_i} - prod m_i^{k_i}, in Arb from certified m_i, p_i.

Exponential tilting (tightness)
-------------------------------
For lambda >= 0 let t_i(n) = a_i(n) e^{lambda L_n} / Z_i (Z_i ~ M_i(lambda), so t_i has mass ~1).
Tilting is multiplicative, so the cyclic power of the t_i is y(q) = sum_j c(B+q+jN) e^{lambda
L_{B+q+jN}} / Z, Z = prod Z_i^{k_i}, and nu(q) = Z e^{-lambda L_{B+q}} y(q) >= c(B+q) (the j > 0
terms are extra mass, the j < 0 terms shrunk copies of the lower tail, whose whole mass the tilted
pass puts on +inf). With y_hat the computed y, ||y_hat - y||_2 <= E (below),

    delta(eps) <= sum_{L_q > eps} Z e^{-lambda L_q} y_hat(q) f_eps(L_q) + atom + Z E sqrt(S),
    S = sum_{L_q > eps} e^{-2 lambda L_q} f_eps(L_q)^2
      <= e^{-2 lambda eps} ((1/h) int_0^inf e^{-2 lambda x} (1 - e^{-x})^2 dx + (lambda e)^-2),

by Cauchy-Schwarz over the grid points above eps (a unimodal function summed on a grid of spacing
h is at most its integral / h plus its maximum, and x^2 e^{-2 lambda x} <= (lambda e)^-2; the
integral is 1/(2 lambda) - 2/(2 lambda + 1) + 1/(2 lambda + 2)); losses are raised by the side's
shift, so eps is replaced by eps - shift. For lambda = 0 the last term is E sqrt(#{q: L_q > eps}).
Z e^{-lambda eps} is a Chernoff bound on the tail at eps, of the order of delta itself at the
lambda that minimises it; so the FFT error reaches delta(eps) scaled by about delta, where the
untilted analysis pays it in full.

delta(eps) is read from the pass tilted by the lambda minimising log Z(lambda) - lambda eps (the
untilted pass when that is estimated to give the smaller error term); eps(delta) is searched and
certified on one pass tilted by the lambda of the Chernoff (RDP-style) bound
min_lambda (log Z(lambda) + log(1/delta)) / lambda, which for a near-Gaussian PLD centres the
tilted law near the true eps(delta). Passes are cached by lambda (3 significant digits). Any
lambda >= 0 gives a certified bound; the choice only moves the error term. A tilt amplifies the
mass that wraps down from above the window by e^{lambda N h}: sound (extra mass) but loose, so a
tilted pass lengthens its window until a Chernoff estimate of that mass landing above loss 0 is
below ``WRAP_TAIL``.

The forward error E of one pass
-------------------------------
Tilted inputs: t_i(n) = a_i(n) w(n), with certified float bounds w_lo <= e^{lambda L_n}/Z_i <= w_hi
(Arb per block of 2048 times a table), computed at the midpoint; the input error d_i(n) <= a_i(n)
(w_hi - w_lo)/2 + 2u t_i(n). With rho(N) Higham's relative l2 bound of one radix-2 FFT (Thm 24.2,
as in :func:`accounting._privacy_loss._pld._fft_error_l2`, times the same safety factor 4 for pocketfft's mixed
radix and real packing: the one assumption of the float engine, everything else uses only IEEE
basic operations and Arb):

- spectra: F_hat_i = rfft of the light part of t_i (its few heaviest entries removed when they
  hold all but 1e-4 of ||t_i||_2^2: the atoms of Laplace or randomized-response PLDs) plus the
  atoms' DFT summed directly at every frequency. Per frequency, |F_hat_ij - F_ij| <= eta_i^atoms
  + |delta_ij| with ||delta_i||_2 <= D_i = sqrt(N) (rho ||light||_2 + ||d_i light||_2) (Parseval);
- R_ij = |F_hat_ij| + D_i + eta_i^atoms bounds both |F_hat_ij| and |F_ij|; with
  W_ij = R_ij^{k_i - 1} prod_{l != i} R_lj^{k_l} (upper floats by binary powering), telescoping gives
  |prod F_hat^k - prod F^k|_j <= sum_i k_i W_ij |F_hat_ij - F_ij|;
- the frequencies j where sum_i k_i (D_i + eta_i) W_ij could exceed the unavoidable rounding of
  the powers (theta ||prod||_2, below) are few (the power kills the others): there F_hat_ij is
  replaced by a direct DFT G_ij, twiddles from two Arb tables, chunked sums and math.fsum, with a
  per-entry bound eta_i ~ 1e-14 ||t_i||_1 (:func:`_direct_dft`). So, over the half spectrum,
  ||E_P||_2 <= sum_i k_i (D_i max_{j not in S} W_ij + eta_i^atoms ||W_i||_{2, not S}
  + eta_i ||W'_i||_{2, S}) + ||prod R^k||_{2, skipped} + theta/(1 - theta) ||P_hat||_2,
  where "skipped" are the frequencies with prod R^k <= 1e-22 (set to 0, not powered) and theta =
  (1 + sqrt5 u)^{sum_i (2 k_i + 3 + 2 bitlength k_i)} - 1 covers the elementwise binary powering
  in complex floats (Brent, Percival & Zimmermann 2007: |fl(xy) - xy| <= sqrt5 u |xy|; a squaring
  doubles a relative error and adds one rounding);
- inverse: irfft is the inverse DFT of the Hermitian extension (l2 norm at most sqrt 2 times the
  half spectrum's), scaled by 1/N, so E <= sqrt2 ||E_P||_2 / sqrt(N) + rho ||y_hat||_2 / (1 - rho).

Without the componentwise step, ||E_P||_2 <= k D R^{k-1}: the k-fold amplification of a norm-wise
FFT bound made the certified error ~1e-10 on y (1e-9 relative on delta even after tilting); with
it E is ~1e-15, and the error term on delta(eps) near delta = 1e-5 is ~1e-17.

Negative entries of y_hat are clamped to 0 (the exact y is >= 0, so this only moves y_hat closer).
The untilted pass also serves as an ordinary float side of :mod:`accounting._privacy_loss._pld` (l1 error
sqrt(N) E) for any further composition that is not a product of powers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.fft
from flint import arb, ctx

from .._core._certified import DEFAULT_PRECISION, lower_float, upper_float, working_precision
from ._pld_measure import _certified_powers

_U = 2.0**-53
_SQRT5 = math.sqrt(5.0)
_BLOCK = 2048
#: Mass of the composition that the window may leave outside on each side (Chernoff; to +inf).
WINDOW_TAIL = 1e-20
#: Mass (estimated) that a tilted pass may wrap from above the window onto the losses above 0.
WRAP_TAIL = 1e-22
#: Largest cyclic window (points); larger compositions use repeated squaring.
MAX_WINDOW = 1 << 23


def _rho(n_fft: int) -> float:
    """Higham's relative l2 bound of one radix-2 FFT of length n_fft, times the safety factor 4."""
    m = math.ceil(math.log2(max(n_fft, 2))) + 2
    mu = 8 * _U
    gamma4 = 4 * _U / (1 - 4 * _U)
    eta = mu + gamma4 * (math.sqrt(2) + mu)
    return 4.0 * m * eta / (1 - m * eta) * (1 + 1e-10)


def _up(x: float) -> float:
    return math.nextafter(x, math.inf)


def _sum_up(v: np.ndarray) -> float:
    n = len(v)
    if n == 0:
        return 0.0
    return _up(float(np.sum(v)) * (1 + 2 * (n + 2) * _U) + n * 5e-324)


def _l2_up(v: np.ndarray) -> float:
    """A float >= the l2 norm of v (real or complex)."""
    if np.iscomplexobj(v):
        sq = v.real * v.real + v.imag * v.imag
        s = _sum_up(sq * (1 + 3 * _U))
    else:
        s = _sum_up((v * v) * (1 + _U))
    return _up(math.sqrt(s) * (1 + 2 * _U))


_TABLES: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}


def _weights(log_start: arb, log_step: arb, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Certified floats w_lo <= e^{log_start + j log_step} <= w_hi, j = 0..count-1.

    Per block of 2048: one Arb exponential times a table of e^{j log_step} (certified float
    bounds, :func:`accounting._privacy_loss._pld_measure._certified_powers`), the float products widened by 2u
    each way."""
    table_n = _BLOCK
    key = (log_step.mid().str(30), log_step.rad().str(5))
    tables = _TABLES.get(key)
    if tables is None:
        tables = _certified_powers(log_step.exp(), table_n)
        if len(_TABLES) > 64:
            _TABLES.clear()
        _TABLES[key] = tables
    t_lo, t_hi = tables
    blocks = [(log_start + start * log_step).exp() for start in range(0, count, table_n)]
    a_lo = np.array([lower_float(a) for a in blocks])
    a_hi = np.array([upper_float(a) for a in blocks])
    lo = (a_lo[:, None] * t_lo[None, :]).ravel()[:count] * (1 - 2 * _U)
    hi = (a_hi[:, None] * t_hi[None, :]).ravel()[:count] * (1 + 2 * _U)
    np.maximum(lo, 0.0, out=lo)
    return lo, hi


def _golden_section(g, a: float, b: float, steps: int) -> tuple[float, float]:
    """The bracket [a, b] around a minimum of the unimodal ``g`` after ``steps`` golden-section
    steps (a tilt is a tightness heuristic only: any value keeps the bound certified)."""
    phi = (math.sqrt(5) - 1) / 2
    c, d = b - phi * (b - a), a + phi * (b - a)
    gc, gd = g(c), g(d)
    for _ in range(steps):
        if gc < gd:
            b, d, gd = d, c, gc
            c = b - phi * (b - a)
            gc = g(c)
        else:
            a, c, gc = c, d, gd
            d = a + phi * (b - a)
            gd = g(d)
    return a, b


@dataclass(frozen=True)
class Factor:
    """One release's finite measure a (floats, exact values of the dominating measure) on grid
    indices offset .. offset + len(a) - 1, its genuine +inf atom and its truncated mass at +inf
    (Arb upper bounds, kept apart: accounting._privacy_loss._pld_measure._Side) and its power k."""

    vec: np.ndarray
    offset: int
    inf: arb
    k: int
    shift: arb  # every grid loss of the release is raised by it (accounting._privacy_loss._pld, lattice shifts)
    truncated: arb = field(default_factory=lambda: arb(0))


_LOGS: dict[int, tuple] = {}  # id(factor) -> (factor, its losses, log masses) (the factor is kept alive)
_LOGS_MAX = 32


def _log_mgf(f: Factor, s, h: float):
    """Float estimate of log M(s) = log sum_n a(n) e^{s L_n} (placement only), for a float s or an
    array of them (a scan of tilts: a few at a time, whose temporaries stay in cache, ~2x faster
    than one by one; all at once is slower again)."""
    cached = _LOGS.get(id(f))
    if cached is None or cached[0] is not f:
        nz = np.flatnonzero(f.vec)
        cached = (f, (f.offset + nz) * h, np.log(f.vec[nz]))
        if len(_LOGS) > _LOGS_MAX:
            _LOGS.clear()
        _LOGS[id(f)] = cached
    _, losses, log_a = cached
    if np.ndim(s) == 0:
        return float(_log_mgf_rows(losses, log_a, np.array([s]))[0])
    rows = max(1, _SCAN_ELEMENTS // max(len(losses), 1))
    return np.concatenate([_log_mgf_rows(losses, log_a, s[i : i + rows]) for i in range(0, len(s), rows)])


_SCAN_ELEMENTS = 1 << 15


def _log_mgf_rows(losses: np.ndarray, log_a: np.ndarray, s: np.ndarray) -> np.ndarray:
    if len(losses) == 0:
        return np.full(len(s), -math.inf)
    logs = log_a + s[:, None] * losses
    top = np.max(logs, axis=1)
    return top + np.log(np.sum(np.exp(logs - top[:, None]), axis=1))


def _mgf_upper(f: Factor, s: float, h_ball: arb) -> arb:
    """A rigorous upper bound of M(s) = sum_n a(n) e^{s L_n}, as an exact Arb number."""
    n = len(f.vec)
    s_ball = arb(s)
    _, w_hi = _weights(s_ball * h_ball * f.offset, s_ball * h_ball, n)
    return arb(_sum_up(f.vec * w_hi * (1 + 2 * _U)))


def _tail_bound(factors: tuple[Factor, ...], s: float, edge: int, h_ball: arb) -> arb:
    """Chernoff: sum over L > edge h (s > 0) or L < edge h (s < 0) of c <= e^{-s edge h} prod M(s)^k."""
    log_total = arb(0)
    for f in factors:
        m = _mgf_upper(f, s, h_ball)
        if not bool(m > 0):
            return arb(0)
        log_total = log_total + f.k * m.log()
    return arb(upper_float((log_total - arb(s) * h_ball * edge).exp()))


def _s_max(factors: tuple[Factor, ...], h: float) -> float:
    """The largest tilt worth trying: 64, or more for releases whose losses are all small (a
    discrete Laplace of scale 1e6: losses of 1e-4, Chernoff-optimal tilts in the thousands), as
    long as e^{s L} stays far from overflow on every release's losses (placement and choice of
    tilt only: any s keeps the bounds certified)."""
    widest = max(max(abs(f.offset), abs(f.offset + len(f.vec) - 1)) * h + float(f.shift.mid()) for f in factors)
    return max(64.0, min(1e8, 600.0 / max(widest, 1e-300)))


def _best_tail(factors: tuple[Factor, ...], h: float, tail: float, upper: bool) -> tuple[int, float]:
    """(edge index, s) with the Chernoff tail beyond edge about <= tail (float estimate)."""
    sign = 1.0 if upper else -1.0
    scan = np.geomspace(1e-3, _s_max(factors, h), 60)
    logm = sum(f.k * _log_mgf(f, sign * scan, h) for f in factors)
    edges = (logm - math.log(tail)) / scan  # L beyond which the bound is <= tail (times sign)
    best = int(np.argmin(np.where(np.isnan(edges), math.inf, edges)))  # the first smallest
    edge, s = float(edges[best]), float(sign * scan[best])
    idx = math.ceil(edge / h) + 1 if upper else -math.ceil(edge / h) - 1
    return idx, s


@dataclass
class PowerRecipe:
    """A product of powers of releases on the grid h, with cached certified passes."""

    factors: tuple[Factor, ...]
    h: float
    h_ball: arb
    window: tuple[int, int] = (0, 0)  # (B, N)
    tails: tuple[arb, arb] = (arb(0), arb(0))  # (above the window, below the window)
    inf_atom: arb = field(default_factory=lambda: arb(0))  # genuine (infinite losses)
    trunc_atom: arb = field(default_factory=lambda: arb(0))  # the releases' truncated masses, composed
    _cache: dict = field(default_factory=dict)

    @classmethod
    def build(cls, factors: tuple[Factor, ...], h: float, h_ball: arb) -> "PowerRecipe":
        with np.errstate(over="ignore", invalid="ignore", under="ignore"), working_precision(max(ctx.prec, DEFAULT_PRECISION)):
            return cls._build(factors, h, h_ball)

    @classmethod
    def _build(cls, factors: tuple[Factor, ...], h: float, h_ball: arb) -> "PowerRecipe":
        recipe = cls(factors, h, h_ball)
        lo_full = sum(f.k * f.offset for f in factors)
        hi_full = sum(f.k * (f.offset + len(f.vec) - 1) for f in factors)
        full = hi_full - lo_full + 1
        top, s_top = _best_tail(factors, h, WINDOW_TAIL, True)
        bottom, s_bot = _best_tail(factors, h, WINDOW_TAIL, False)
        if full <= max(top - bottom + 1, 1024):
            # the whole support fits: a linear convolution, no wrap-around, nothing outside
            b, n = lo_full, scipy.fft.next_fast_len(full, real=True)  # >= every factor's length
            tails = (arb(0), arb(0))
        else:
            b = max(bottom, lo_full)
            top = min(top, hi_full + 1)
            n = scipy.fft.next_fast_len(max(top - b, max(len(f.vec) for f in factors)), real=True)
            above = _tail_bound(factors, s_top, b + n - 1, h_ball) if b + n - 1 < hi_full else arb(0)
            below = _tail_bound(factors, s_bot, b, h_ball) if b > lo_full else arb(0)
            tails = (above, below)
        recipe.window = (b, n)
        recipe.tails = tails
        recipe.inf_atom, recipe.trunc_atom = _composed_atom(factors)
        return recipe

    @property
    def shift(self) -> arb:
        total = arb(0)
        for f in self.factors:
            total = total + f.k * f.shift
        return total

    def too_large(self) -> bool:
        b, n = self.window
        finite = all(t.is_finite() and upper_float(t) <= 1e6 * WINDOW_TAIL for t in self.tails)
        return n > MAX_WINDOW or not finite

    # ---- one certified pass -----------------------------------------------------------------

    def tilted(self, lam: float) -> "TiltedPass":
        key = float(f"{lam:.3g}") if lam > 0 else 0.0
        hit = self._cache.get(key)
        if hit is None:
            # an overflow (a tilt too steep for the window) surfaces as ArithmeticError below;
            # the caller then keeps the untilted bound
            # Arb at >= the default precision whatever the caller's context (the twiddle tables
            # are claimed within one float rounding; the atom is a difference of near-1 powers)
            with np.errstate(over="ignore", invalid="ignore", under="ignore"), working_precision(max(ctx.prec, DEFAULT_PRECISION)):
                hit = _tilted_pass(self, key)
            self._cache[key] = hit
        return hit

    def heavy(self, f: Factor) -> np.ndarray:
        """The factor's atoms (chosen on the untilted release; any choice is sound)."""
        key = ("heavy", id(f.vec))
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = _heavy_entries(f.vec)
        return hit

    def tilted_length(self, lam: float) -> int:
        """The cyclic length for a pass tilted by lam (>= the window's).

        Mass wrapping down from above the window is extra (sound) mass, but the tilt amplifies it
        by e^{lam N h}: what lands above eps >= 0 is at most e^{-(s - lam) N h} prod M(s)^k for any
        s > lam (Chernoff). N grows until that estimate is below ``WRAP_TAIL`` (tightness only);
        beyond the whole support nothing wraps at all."""
        b, n = self.window
        lo_full = sum(f.k * f.offset for f in self.factors)
        hi_full = sum(f.k * (f.offset + len(f.vec) - 1) for f in self.factors)
        full = scipy.fft.next_fast_len(hi_full - lo_full + 1, real=True)
        if b == lo_full and n >= full:
            return n  # the window holds the whole support: no wrap-around
        scan = lam * np.geomspace(1.05, 64.0, 40)
        logm = self.log_chernoff(scan)
        finite = np.isfinite(logm)
        best = float(np.min((logm[finite] - math.log(WRAP_TAIL)) / ((scan[finite] - lam) * self.h), initial=math.inf))
        need = n if best <= n else (math.ceil(best) if math.isfinite(best) else MAX_WINDOW + 1)
        if need >= hi_full - b + 1:  # cover everything above b: only the lower tail wraps (upwards)
            need = hi_full - b + 1
        if need > MAX_WINDOW:
            raise ArithmeticError(f"a pass tilted by {lam:.3g} needs {need} points")
        return scipy.fft.next_fast_len(max(need, n), real=True)

    def log_chernoff(self, s):
        """log prod M(s)^k, estimated in floats, for a float s or an array of them."""
        return sum(f.k * _log_mgf(f, s, self.h) for f in self.factors)

    def rdp_lambda(self, delta: float) -> float:
        """The s > 0 minimising (log prod M(s)^k + log(1/delta)) / s, the Chernoff (RDP-style)
        eps(delta); for a near-Gaussian PLD it is the tilt that centres the tilted law at the true
        eps(delta), so one pass serves both the search and the certification."""
        target = math.log(1 / delta)
        # 32 steps leave a bracket below 1e-5 relative in s (log s spans at most ~26): passes are
        # cached by lambda to 3 significant digits (tilted), so more steps only cost evaluations
        a, b = _golden_section(lambda u: (self.log_chernoff(math.exp(u)) + target) / math.exp(u),
                               math.log(1e-3), math.log(_s_max(self.factors, self.h)), 32)
        return math.exp(0.5 * (a + b))

    def best_lambda(self, eps: float) -> float:
        """The s >= 0 minimising log prod M(s)^k - s eps (golden section on [0, s_max], in log s
        beyond 64)."""
        if eps <= 0:
            return 0.0
        top = _s_max(self.factors, self.h)
        a, b = _golden_section(lambda s: self.log_chernoff(s) - s * eps, 0.0, min(top, 64.0), 60)
        if top > 64.0 and b > 63.0:  # the minimum sits at the top of [0, 64]: search the rest on a log scale
            a, b = _golden_section(lambda u: self.log_chernoff(math.exp(u)) - math.exp(u) * eps, math.log(64.0), math.log(top), 60)
            return math.exp(0.5 * (a + b))
        return 0.5 * (a + b)


def _composed_atom(factors: tuple[Factor, ...]) -> tuple[arb, arb]:
    """(genuine, truncated) +inf atoms of the composition, upper bounds: with m_i the finite
    masses, g_i the genuine atoms and t_i the truncated masses, the genuine atom is
    prod (m_i + g_i)^{k_i} - prod m_i^{k_i} (the outcomes with a genuine infinite loss and no
    truncated part) and the truncated one prod (m_i + g_i + t_i)^{k_i} - prod (m_i + g_i)^{k_i}
    (the outcomes with at least one truncated part).

    m_i is enclosed by math.fsum (correctly rounded, so within one ulp of the exact sum of the
    floats); a looser summation bound would be raised to the power k_i."""
    # prod (x + p)^k - prod x^k is increasing in every x and p >= 0: evaluated at upper
    # endpoints (points, not balls, so the difference does not cancel two wide balls)
    total = arb(1)
    genuine = arb(1)
    rest = arb(1)
    for f in factors:
        s = math.fsum(f.vec.tolist())
        m_up = arb(s) + arb(math.ulp(s) if s > 0 else 5e-324)
        g_up = m_up + arb(f.inf.upper())
        total = total * (g_up + arb(f.truncated.upper())) ** f.k
        genuine = genuine * g_up**f.k
        rest = rest * m_up**f.k
    return arb(max(0.0, upper_float(genuine - rest))), arb(max(0.0, upper_float(total - genuine)))


def combined(first: tuple[Factor, ...], second: tuple[Factor, ...]) -> tuple[Factor, ...]:
    """The factors of a composition (equal releases, the same array object, merged)."""
    merged: list[Factor] = list(first)
    for f in second:
        for i, g in enumerate(merged):
            if g.vec is f.vec and g.offset == f.offset and g.shift is f.shift:
                merged[i] = Factor(g.vec, g.offset, g.inf, g.k + f.k, g.shift, g.truncated)
                break
        else:
            merged.append(f)
    return tuple(merged)


def powered(factors: tuple[Factor, ...], k: int) -> tuple[Factor, ...]:
    return tuple(Factor(f.vec, f.offset, f.inf, f.k * k, f.shift, f.truncated) for f in factors)


@dataclass(frozen=True)
class TiltedPass:
    """The result of one pass: untilted upper floats u(q) >= Z e^{-lam L_q} y_hat(q) on the window
    (0 where L_q <= 0, which no eps >= 0 reads), the l2 error E of y_hat, and Z (Arb)."""

    lam: float
    vec: np.ndarray
    offset: int
    err_l2: float
    z: arb
    atom: arb  # all the +inf mass of this pass: infinite + truncated
    infinite: arb = field(default_factory=lambda: arb(0))  # the genuine atom (infinite losses)
    truncated: arb = field(default_factory=lambda: arb(0))  # truncated mass: the releases' and the tails outside the window

    def err_on_delta(self, eps: arb, h_ball: arb, shift: arb) -> float:
        """A float >= the error term of delta(eps) (module docstring): the grid points read are
        those with (offset + q) h + shift > eps."""
        if self.err_l2 == 0.0:
            return 0.0
        level = eps - shift
        if self.lam == 0.0:
            first = math.floor(lower_float(level / h_ball)) - self.offset
            count = len(self.vec) - min(len(self.vec), max(0, first))
            return upper_float(self.z * arb(self.err_l2) * arb(count).sqrt())
        # sum over read points of (Z e^{-lam L_q} f_eps(L_q + shift))^2, x = L_q + shift - eps > 0
        # on a grid of spacing h: g(x) = e^{-2 lam x} (1 - e^{-x})^2 is unimodal, so the sum is
        # <= (1/h) int_0^inf g + max g, with int g = 1/(2 lam) - 2/(2 lam + 1) + 1/(2 lam + 2) and
        # max g <= max (x e^{-lam x})^2 = (lam e)^-2
        lam = arb(self.lam)
        integral = 1 / (2 * lam) - 2 / (2 * lam + 1) + 1 / (2 * lam + 2)
        peak = 1 / (lam * arb(1).exp()) ** 2
        total = integral / h_ball + peak
        return upper_float(self.z * arb(self.err_l2) * (-lam * level).exp() * total.sqrt())


def _tilted_pass(recipe: PowerRecipe, lam: float) -> TiltedPass:
    b, n = recipe.window
    if lam > 0.0:
        n = recipe.tilted_length(lam)
    h_ball = recipe.h_ball
    lam_ball = arb(lam)
    rho = _rho(n)
    half = n // 2 + 1
    spectra = []
    z = arb(1)
    d_bounds = []
    s_bounds = []
    tilted_inputs = []
    d_l1s = []
    eta_atoms: list[float] = []
    for f in recipe.factors:
        if lam == 0.0:
            t = f.vec
            d2 = 0.0
            d1 = 0.0
            log_z = 0.0
        else:
            log_z = _log_mgf(f, lam, recipe.h)
            w_lo, w_hi = _weights(lam_ball * h_ball * f.offset - arb(log_z), lam_ball * h_ball, len(f.vec))
            mid = 0.5 * (w_lo + w_hi)
            t = f.vec * mid
            d = f.vec * (w_hi - w_lo) * (0.5 + 2 * _U) + 2 * _U * t + 5e-324
            d2 = _l2_up(d)
            d1 = _sum_up(d)
            # t^exact <= t + d entrywise
            t = np.maximum(t, 0.0)
        z = z * arb(log_z).exp() ** f.k
        s_i = _sum_up(t) + (_sum_up(f.vec * (w_hi - w_lo)) if lam != 0.0 else 0.0)
        # index 0 of every spectrum = the factor's first grid index (the roll below adds offsets).
        # Heavy entries (the atoms of a Laplace or randomized-response PLD) dominate ||t||_2 and
        # so the norm-wise FFT bound: their transform is summed directly at every frequency
        # (error eta_atoms per entry), the FFT only transforms the light rest.
        heavy = recipe.heavy(f)
        if len(heavy):
            light = t.copy()
            light[heavy] = 0.0
            spec = scipy.fft.rfft(light, n) + _atoms_dft(t[heavy], heavy, n, half)
            t2 = _l2_up(light)
            if lam != 0.0:
                d_light = d.copy()
                d_light[heavy] = 0.0
                d2 = _l2_up(d_light)
                d_heavy = _sum_up(d[heavy])
            else:
                d_heavy = 0.0
            eta_atoms.append(_up(math.sqrt(2) * (7.5 * _U * (1 + _GAMMA16) + _GAMMA16) * (1 + 1e-6) * _sum_up(t[heavy]) + d_heavy))
        else:
            spec = scipy.fft.rfft(t, n)
            t2 = _l2_up(t)
            eta_atoms.append(0.0)
        spectra.append(spec)
        d_bounds.append(_up(math.sqrt(n) * (rho * t2 + d2) * (1 + 4 * _U)))
        s_bounds.append(_up(s_i))
        tilted_inputs.append(t)
        d_l1s.append(d1)
    # frequencies where an FFT error would survive the power: there the spectra are recomputed
    # by a direct, rigorously bounded DFT (error eta_i per entry instead of the norm-wise D_i)
    ks = [f.k for f in recipe.factors]
    r_hat = [_abs_up(spec) + d_i + e_a for spec, d_i, e_a in zip(spectra, d_bounds, eta_atoms)]
    w_hat = _power_weights(r_hat, ks)
    v = np.zeros(half)
    for k, d_i, e_a, w in zip(ks, d_bounds, eta_atoms, w_hat):
        v += k * (d_i + e_a) * w
    # the rounding of the powers (theta, below) costs about theta ||prod||_2 whatever is done;
    # frequencies whose FFT error could cost more than that are recomputed directly
    theta = (1 + arb(_SQRT5) * arb(_U)) ** (2 * sum(ks) + 3 * len(ks) + 2 * sum(k.bit_length() for k in ks)) - 1
    p_up = _l2_up(w_hat[0] * r_hat[0])
    budget = max(1e-16 * math.sqrt(n), upper_float(theta) * p_up) / len(ks)
    chosen = np.flatnonzero(v > budget)
    nnz = max(int(np.count_nonzero(t)) for t in tilted_inputs)
    cap = max(0, min(half, _DIRECT_TERMS // max(nnz, 1)))
    if len(chosen) > cap:
        chosen = np.sort(np.argpartition(v, half - cap)[half - cap :]) if cap > 0 else chosen[:0]
    high_mask = np.ones(half, dtype=bool)
    high_mask[chosen] = False
    e_p = arb(0)
    for k, d_i, e_a, w in zip(ks, d_bounds, eta_atoms, w_hat):
        if high_mask.any():
            w_high = w[high_mask]
            e_p = e_p + arb(k) * (arb(d_i) * arb(float(np.max(w_high))) + arb(e_a) * arb(_l2_up(w_high)))
    if len(chosen):
        etas = []
        for spec, t, d_l1, s_i in zip(spectra, tilted_inputs, d_l1s, s_bounds):
            g, eta = _direct_dft(t, n, chosen, s_i, d_l1)
            spec[chosen] = g
            etas.append(eta)
        r_low = [_abs_up(spec[chosen]) + eta for spec, eta in zip(spectra, etas)]
        w_low = _power_weights(r_low, [f.k for f in recipe.factors])
        for f, eta, w in zip(recipe.factors, etas, w_low):
            e_p = e_p + arb(f.k) * arb(eta) * arb(_l2_up(w))
    # elementwise product of powers (binary powering in complex floats: at most 2 bit_length(k)
    # products per factor, one more to multiply it in; theta above counts 2k + 3 + 2 bit_length)
    # frequencies where even the upper bound prod R^k of |prod F_hat^k| is below 1e-22 are set to
    # 0 without computing the powers; that costs at most the l2 norm of those bounds
    magnitude = w_hat[0] * r_hat[0] * (1 + 2 * _U)
    if len(chosen):
        magnitude[chosen] = np.maximum(magnitude[chosen], 1.0)  # recomputed spectra: always kept
    active = np.flatnonzero(magnitude > 1e-22)
    skipped = np.ones(half, dtype=bool)
    skipped[active] = False
    e_p = e_p + arb(_l2_up(magnitude[skipped]))
    prod = np.zeros(half, dtype=np.complex128)
    part = np.ones(len(active), dtype=np.complex128)
    for spec, f in zip(spectra, recipe.factors):
        p, _ = _cpow(spec[active], f.k)
        part = part * p
    prod[active] = part
    p_norm = arb(_l2_up(part))
    e_p = e_p + theta / (1 - theta) * p_norm
    y = scipy.fft.irfft(prod, n)
    y_norm = arb(_l2_up(y))  # of the unclamped output (the inverse transform's bound uses it)
    # the linear product starts at index sum k_i offset_i; the window starts at b
    first = sum(f.k * f.offset for f in recipe.factors)
    y = np.roll(y, first - b)
    np.maximum(y, 0.0, out=y)
    rho_b = arb(rho)
    err = arb(2).sqrt() * e_p / arb(n).sqrt() + rho_b * y_norm / (1 - rho_b)
    err_l2 = upper_float(err)
    # untilt: vec(q) >= Z e^{-lam L_q} y_hat(q), L_q = (b + q) h; entries with L_q + shift <= 0
    # are never read for eps >= 0 (f_eps = 0 there), so they are left 0
    if lam == 0.0:
        vec = y
    else:
        vec = np.zeros(n)
        # grid losses below -shift cannot exceed any eps >= 0 once raised by the shift
        q0 = min(n, max(0, -b - 1 - math.ceil(upper_float(recipe.shift) / recipe.h)))
        if q0 < n:
            _, w_hi = _weights(z.log() - lam_ball * h_ball * (b + q0), -lam_ball * h_ball, n - q0)
            vec[q0:] = y[q0:] * w_hi * (1 + 2 * _U)
    if not (np.all(np.isfinite(vec)) and math.isfinite(err_l2)):
        raise ArithmeticError("tilted PLD pass overflowed: lambda too large for this window")
    truncated = arb(upper_float(recipe.trunc_atom + recipe.tails[0] + (recipe.tails[1] if lam != 0.0 else arb(0))))
    infinite = arb(upper_float(recipe.inf_atom))
    return TiltedPass(lam, vec, b, err_l2, z, arb(upper_float(infinite + truncated)), infinite, truncated)


#: Largest number of terms (frequencies x nonzero entries) of the direct DFTs of one pass.
_DIRECT_TERMS = 20_000_000
_CHUNK = 32  # outer chunked sums (<= _INNER terms each, so gamma_32 covers them too)
_INNER = 32
_ATOMS = 4
_GAMMA16 = 16 * _U / (1 - 16 * _U)  # >= gamma_{_ATOMS}


def _heavy_entries(t: np.ndarray) -> np.ndarray:
    """Indices of the _ATOMS largest entries if they hold at least half of ||t||_2^2, else none."""
    if len(t) <= 4 * _ATOMS:
        return np.zeros(0, dtype=np.int64)
    idx = np.argpartition(t, -_ATOMS)[-_ATOMS:]
    idx = idx[np.argsort(-t[idx])]
    idx = idx[t[idx] > 0]
    total = float(np.dot(t, t))
    sq = np.cumsum(t[idx] * t[idx])
    if len(idx) == 0 or float(sq[-1]) < 0.5 * total:
        return np.zeros(0, dtype=np.int64)
    # only genuine atoms (a few entries leaving at most 1e-4 of the squared norm): a PLD whose
    # mass is spread over many comparable entries (Skellam) gains nothing from the split
    count = int(np.searchsorted(sq, (1 - 1e-4) * total)) + 1
    if count > len(idx):
        return np.zeros(0, dtype=np.int64)
    return np.sort(idx[:count])


def _atoms_dft(vals: np.ndarray, pos: np.ndarray, n: int, half: int) -> np.ndarray:
    """sum_a vals_a e^{-2 pi i j pos_a / n}, j = 0..half-1: at most _ATOMS terms per entry, each
    within 7.5u of its value (see _direct_dft), summed in order (gamma_16 of the sum of |terms|)."""
    coarse, fine, block = _twiddle_tables(n)
    js = np.arange(half, dtype=np.int64)
    out = np.zeros(half, dtype=np.complex128)
    for v, m in zip(vals.tolist(), pos.tolist()):
        r = (js * int(m)) % n
        out += v * (coarse[r // block] * fine[r % block])
    return out


def _abs_up(x: np.ndarray) -> np.ndarray:
    """Upper floats of |x| for complex x (IEEE products, sum and sqrt, widened)."""
    return np.sqrt(x.real * x.real + x.imag * x.imag) * (1 + 4 * _U) + 1e-300


def _pow_up(r: np.ndarray, k: int) -> np.ndarray:
    """Upper floats of r^k (r >= 0) by binary powering, each product widened (and kept >= 1e-300
    so that an underflow cannot round a positive bound to 0)."""
    result = np.ones_like(r)
    base = r.copy()
    while k:
        if k & 1:
            result = result * base * (1 + 2 * _U) + 1e-300
        k >>= 1
        if k:
            base = base * base * (1 + 2 * _U) + 1e-300
    return result


def _power_weights(radii: list[np.ndarray], ks: list[int]) -> list[np.ndarray]:
    """W_i = prod_l R_l^{k_l} / R_i as upper floats, from upper floats R_l (>= both |x| and |y|)."""
    out = []
    for r, k in zip(radii, ks):
        # prod / R_i = R_i^{k_i - 1} prod_{l != i} R_l^{k_l}: recomputed, no division needed
        part = _pow_up(r, k - 1)
        for r2, k2 in zip(radii, ks):
            if r2 is not r:
                part = part * _pow_up(r2, k2) * (1 + 2 * _U) + 1e-300
        out.append(part)
    return out


_TWIDDLE_CACHE: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}


def _twiddle_tables(n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """e^{-2 pi i r / n} = coarse[r // B] * fine[r % B], both tables from Arb (each component
    within one rounding of the exact value)."""
    hit = _TWIDDLE_CACHE.get(n)
    if hit is not None:
        return hit
    from flint import acb

    block = 1024
    two_pi_over_n = 2 * arb.pi() / n

    def table(count: int, stride: int) -> np.ndarray:
        # entry r = e(32 (r // 32)) e(r % 32), a product of two of 64 Arb exponentials: a ball
        # around the exact value ~1e-27 wide, so its midpoint as a double (float(ball)) is within
        # one rounding of exact plus that width, inside the u (absolute) per component counted
        # below (tested); ~60 % of the time of one exponential per entry
        def e(r: int) -> acb:
            return acb(0, -two_pi_over_n * (r * stride)).exp()

        fine = [e(j) for j in range(32)]
        out = np.empty(count, dtype=np.complex128)
        for i in range(-(-count // 32)):
            coarse = e(32 * i)
            for j in range(min(32, count - 32 * i)):
                z = coarse * fine[j]
                out[32 * i + j] = complex(float(z.real), float(z.imag))
        return out

    hit = (table(n // block + 1, block), table(block, 1), block)
    if len(_TWIDDLE_CACHE) > 16:
        _TWIDDLE_CACHE.clear()
    _TWIDDLE_CACHE[n] = hit
    return hit


def _direct_dft(t: np.ndarray, n: int, freqs: np.ndarray, s_bound: float, d_l1: float) -> tuple[np.ndarray, float]:
    """(G, eta): G_j ~ sum_m t_m e^{-2 pi i j m / n} for j in freqs, |G_j - F_j(t^exact)| <= eta.

    m = 32 B + r: inner sums over r < 32 by two real matrix products (BLAS: a dot product of 32
    terms in any order, with or without FMA, is within gamma_32 of the sum of |terms|), times
    e^{-2 pi i j 32 B / n}, then summed over B in chunks of 32 and by math.fsum (correctly rounded).
    Twiddles come from two Arb tables (each component within u of exact, so each entry within
    sqrt2 u, their float product within (2 sqrt2 + sqrt5) u + O(u^2) < 6u). Per frequency, with
    mass_B the block's sum of t: inner error <= (sqrt2 gamma_32 + 6u) mass_B; the product with
    the outer twiddle adds (6u + sqrt5 u) mass_B; the chunked sums sqrt2 (gamma_31 + u) of the sum
    of |terms|. Second-order terms (< 1e-28 relative) are covered by the factor 1 + 1e-6:
    eta <= (2 sqrt2 gamma_32 + 12u + sqrt5 u + sqrt2 u)(1 + 1e-6) ||t||_1 + ||t - t^exact||_1."""
    coarse, fine, block = _twiddle_tables(n)
    width = _INNER
    blocks = -(-len(t) // width)
    padded = np.zeros(blocks * width)
    padded[: len(t)] = t
    mat = padded.reshape(blocks, width)
    # all-zero blocks add exact zeros, so only the others are summed: the caller's cap on the
    # direct work counts nonzero entries, and a sparse PLD (a few atoms on a long grid) would
    # otherwise cost its whole length at every frequency; fewer summands only shrink the bound
    starts = np.flatnonzero(mat.any(axis=1)) * width
    mat = mat[starts // width]
    blocks = len(starts)
    out = np.empty(len(freqs), dtype=np.complex128)
    batch = max(1, 2_000_000 // max(blocks, width))
    for start in range(0, len(freqs), batch):
        js = freqs[start : start + batch].astype(np.int64)
        r_in = (np.arange(width, dtype=np.int64)[:, None] * js[None, :]) % n
        tw_in = coarse[r_in // block] * fine[r_in % block]
        inner = (mat @ np.ascontiguousarray(tw_in.real)) + 1j * (mat @ np.ascontiguousarray(tw_in.imag))
        r_out = (starts[:, None] * js[None, :]) % n
        terms = inner * (coarse[r_out // block] * fine[r_out % block])
        pad = (-blocks) % _CHUNK
        if pad:
            terms = np.concatenate([terms, np.zeros((pad, len(js)), dtype=np.complex128)])
        partial = terms.reshape(-1, _CHUNK, len(js)).sum(axis=1)
        for col in range(len(js)):
            out[start + col] = complex(math.fsum(partial[:, col].real.tolist()), math.fsum(partial[:, col].imag.tolist()))
    gamma = width * _U / (1 - width * _U)
    eta = (2 * math.sqrt(2) * gamma + 12 * _U + _SQRT5 * _U + math.sqrt(2) * _U) * (1 + 1e-6) * s_bound + d_l1
    return out, _up(eta)


def _cpow(x: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """x^k elementwise by binary powering; returns (result, number of multiplications)."""
    result = None
    base = x
    mults = 0
    while True:
        if k & 1:
            if result is None:
                result = base.copy()
            else:
                result = result * base
                mults += 1
        k >>= 1
        if not k:
            break
        base = base * base
        mults += 1
    assert result is not None
    return result, mults
