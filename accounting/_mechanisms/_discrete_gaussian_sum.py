"""The sum of n iid discrete Gaussians N_Z(0, sigma^2) (Dist-CDP-SE's total noise; not a discrete Gaussian).

Exact structure (derived here; verified in the tests against brute-force convolution)
-----------------------------------------------------------------------------------
Let P_n be the law of X_1 + ... + X_n. For x in Z^n with sum x = k,
sum x_i^2 = sum (x_i - k/n)^2 + k^2/n, hence
    P_n(k) = e^{-k^2/(2 n sigma^2)} R(k),   R(k) = Theta_0^{-n} sum_{sum x = k} e^{-sum (x_i - k/n)^2/(2 sigma^2)},
and R(k + n) = R(k) (shift every x_i by 1). So P_n is a Gaussian times an n-periodic function.
Completing the square as for one discrete Gaussian, with c = (alpha - 1) Delta,
    sum_k P_n(k)^alpha P_n(k - Delta)^{1-alpha}
      = e^{alpha(alpha-1) Delta^2/(2 n sigma^2)} sum_{r mod n} R(r)^alpha R(r - Delta)^{1-alpha} Theta_s((r + c)/n),
with Theta_s(u) = sum_j e^{-(j+u)^2/(2 s^2)}, s^2 = sigma^2/n (the inner sum over k = r + n j). Hence
    D_alpha = alpha Delta^2/(2 n sigma^2) + log( sum_r w_r Theta_s((r+c)/n) ) / (alpha - 1)
for *every* real alpha, with no window to follow: the tilt is absorbed by the theta functions
(certified, :mod:`._theta`). Only the n numbers R(r) are needed.

Certified R(r): P_n is computed near its centre by binary powering of the pmf with Arb
polynomial products (Arb's block multiplication keeps relative accuracy across magnitudes),
truncating every intermediate to a window and tracking the *total missing mass* m = 1 - sum(kept)
(an upper endpoint computed in Arb). Every true entry lies in [kept, kept + m]; the final m is
driven below 2^-(prec+20) min_r P_n(r) by the window widths, and the interval is used as is.
Feasibility: n <= 2^12 and the precision needed (~ n/(8 sigma^2 ln 2) extra bits for the residues
far from the centre) <= 4096 bits; otherwise ``rdp()`` falls back to proven bounds, labelled:
the minimum of Kairouz-Liu-Steinke 2021 Prop. 13 (sigma >= 1/2) and the exact curve of a
*single* N_Z(0, sigma^2) (adding independent noise is post-processing, so it can only help).

KLS 2021 Prop. 13 (closed form, sigma >= 1/2): (1/2) eps'^2-zCDP with
eps' = min{ sqrt(Delta^2/(n sigma^2) + xi/2), Delta/(sqrt(n) sigma) + xi },
xi = 10 sum_{k=1}^{n-1} e^{-2 pi^2 sigma^2 k/(k+1)}.

Pair tails: a discrete Gaussian is sigma^2-subgaussian (CKS 2020), so the sum is n sigma^2-subgaussian
and P[S >= t] <= e^{-t^2/(2 n sigma^2)} (Chernoff), the same for P[S <= -t].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb, arb_poly, ctx

from .._core._certified import DEFAULT_PRECISION, exact, upper_float, working_precision
from .._core._guarantees import RDP, ZCDP
from .._core._pairs import ShiftPair
from .._core._validation import AccountingError, check_positive_int
from ._approx import logsumexp_rows, safe_approx
from .._core._mechanism_base import Mechanism, alpha_guard_bits, arb_to_fraction, check_noise_range, check_scale, check_sensitivity_int, nonneg_error
from ._discrete_gaussian import DiscreteGaussian, discrete_gaussian_rdp_approx
from ._theta import log_theta, log_theta_float

__all__ = ["DiscreteGaussianSum", "DiscreteGaussianSumPair", "MAX_EXACT_N", "dg_sum_rdp_approx", "kls_2021_rho"]

#: Most summed shares (a batch of 2^24 users covers horizons beyond 10^7).
MAX_SHARES = 1 << 24
#: Largest n for which the exact route is attempted.
MAX_EXACT_N = 1 << 12
#: Largest working precision (bits) the exact route may need.
MAX_EXACT_BITS = 4096


def _f(value) -> float:
    return value if isinstance(value, float) else float(Fraction(value))


def _needed_bits(n: int, sigma_f: float, prec: int) -> int:
    return prec + 64 + int(n / (8 * sigma_f * sigma_f) / math.log(2)) + n.bit_length()


#: Largest sigma the exact route is tried at: its cost grows with sigma (sigma = 1e3: ~1 s;
#: 1e6: minutes), while beyond it the proven fallback (min of KLS 2021 Prop. 13 and the single
#: N_Z(0, sigma^2) curve) is tight to O(1/sigma^2) relative. (Issue 15: sigma = 1e30 ran out of memory.)
MAX_EXACT_SIGMA = 1e3


#: ... and the largest n * sigma: the cost grows with both (measured per order set: n = 266, sigma =
#: 100: 1 s; sigma = 1e3: 11 s; n = 4096, sigma = 10: 3 s; issue 15's fuzz harness, through calibrate)
MAX_EXACT_WORK = 3e4


def feasible(n: int, sigma) -> bool:
    return (n <= MAX_EXACT_N and _f(sigma) <= MAX_EXACT_SIGMA and n * _f(sigma) <= MAX_EXACT_WORK
            and _needed_bits(n, _f(sigma), 128) <= MAX_EXACT_BITS)


#: seconds (one core, reference machine) per L log2(L) log2(n) (bits/64)^1.5 of the residue table
#: (L its final polynomial length): fitted to 0.007-10 s measured at n = 64..4096, sigma = 0.5..100
#: (benchmarks/bench_planner_costs.py); a constant taken from the top of the fitted range
_TABLE_COST = 4e-7
#: ... and per residue x (bits/64) of one certified curve evaluation (theta sums in Arb)
_EVAL_COST = 2e-5


def table_cost(n: int, sigma) -> float:
    """Estimated seconds of the residue table (the shared setup of the exact curve and the PLD):
    binary powering of a polynomial whose final length is L = 2 max(sigma sqrt(2 n nats), n/2)."""
    sf = _f(sigma)
    bits = _needed_bits(n, sf, DEFAULT_PRECISION)
    nats = bits * math.log(2) + 20
    length = 2 * max(sf * math.sqrt(2 * n * nats), n / 2) + 2
    return _TABLE_COST * length * math.log2(length) * max(1.0, math.log2(n)) * (bits / 64) ** 1.5


class _ResidueTable:
    """log R(r) for r = 0..n-1 at ``bits`` of precision (module docstring)."""

    __slots__ = ("n", "sigma", "bits", "log_r")

    def __init__(self, n: int, sigma, bits: int) -> None:
        self.n, self.sigma, self.bits = n, sigma, bits
        sf = _f(sigma)
        with ctx.workprec(bits):
            sg = exact(sigma)
            s2 = sg * sg
            nats = bits * math.log(2) + 20
            log_theta0 = log_theta(s2, sf * sf)
            W = int(sf * math.sqrt(2 * nats)) + 2
            base_offset = -W
            base = arb_poly([(-(arb(x) * x) / (2 * s2) - log_theta0).exp() for x in range(-W, W + 1)])
            result = None  # (offset, poly, count)
            power = (base_offset, base, 1)
            k = n
            while True:
                if k & 1:
                    result = power if result is None else self._mul(result, power, sf, nats, n)
                k >>= 1
                if not k:
                    break
                power = self._mul(power, power, sf, nats, n)
            offset, poly, _ = result
            coeffs = poly.coeffs()
            kept = arb(0)
            for c in coeffs:
                kept += c
            missing = nonneg_error(1 - kept)
            h = n // 2
            log_r = [arb(0)] * n
            nsig2 = 2 * n * s2
            for r in range(-h, n - h):
                i = r - offset
                if i < 0 or i >= len(coeffs):
                    raise ArithmeticError("discrete Gaussian sum: residue window not covered")
                value = coeffs[i] + missing
                log_r[r % n] = value.log() + arb(r) * r / nsig2
            self.log_r = log_r

    @staticmethod
    def _mul(a, b, sf: float, nats: float, n: int):
        off_a, pa, ca = a
        off_b, pb, cb = b
        prod = pa * pb
        off = off_a + off_b
        count = ca + cb
        half = max(int(math.sqrt(2 * count * sf * sf * nats)) + 2, n // 2 + 2)
        coeffs = prod.coeffs()
        lo = max(0, -half - off)
        hi = min(len(coeffs), half - off + 1)
        if lo == 0 and hi == len(coeffs):
            return off, prod, count
        return off + lo, arb_poly(coeffs[lo:hi]), count


_TABLES: dict[tuple[int, Fraction], _ResidueTable] = {}


def _residues(n: int, sigma, bits: int) -> _ResidueTable:
    key = (n, Fraction(sigma))
    t = _TABLES.get(key)
    if t is None or t.bits < bits:
        t = _ResidueTable(n, sigma, bits)
        _TABLES[key] = t
    return t


def dg_sum_rdp_ball(n: int, sigma, delta: int, alpha: arb) -> arb:
    """Ball containing D_alpha of the n-fold discrete-Gaussian sum, shift Delta (module docstring)."""
    sf = _f(sigma)
    af = float(alpha.mid())
    prec = ctx.prec
    table_bits = _needed_bits(n, sf, prec)
    table = _residues(n, sigma, table_bits)
    max_log = max(abs(float(v.mid())) for v in table.log_r) + 1.0
    bits = prec + alpha_guard_bits(alpha) + int(math.log2(max(af, 2) * max_log)) + 24
    c = (arb_to_fraction(alpha) - 1) * delta
    with ctx.workprec(max(bits, table_bits)):
        sg = exact(sigma)
        s2 = sg * sg
        small_s2 = s2 / n
        small_f = sf * sf / n
        am1 = alpha - 1
        logs = []
        for r in range(n):
            lw = alpha * table.log_r[r] - am1 * table.log_r[(r - delta) % n]
            logs.append(lw + log_theta(small_s2, small_f, (r + c) / n))
        shift = max(logs, key=lambda v: float(v.mid())).mid()
        total = arb(0)
        for v in logs:
            total += (v - shift).exp()
        result = alpha * delta * delta / (2 * n * s2) + (shift + total.log()) / am1
    return result


def dg_sum_rdp_approx(n: int, sigma, delta: int, alphas: np.ndarray) -> np.ndarray:
    """Float form of :func:`dg_sum_rdp_ball` (search only): the same residue formula with the
    float midpoints of the (certified, cached) residue table, which the certified evaluation
    needs anyway. Near alpha = 1 the sum over residues is formed relative to its value at
    alpha = 1 (which is 1) through expm1, to keep the relative accuracy of D_alpha."""
    sf = _f(sigma)
    table = _residues(n, sigma, _needed_bits(n, sf, DEFAULT_PRECISION))
    log_r = np.array([float(v.mid()) for v in table.log_r])
    r = np.arange(n, dtype=np.float64)
    diff = log_r - np.roll(log_r, delta)  # log R(r) - log R(r - Delta)
    small = sf * sf / n
    base = log_r + log_theta_float(small, r / n)  # log of the alpha = 1 terms: R(r) Theta_s(r/n)
    weights = np.exp(base - base.max())
    out = np.empty(alphas.shape)
    rows = max(1, (1 << 17) // n)  # bounded memory: the theta sums add a third axis of <= 13
    for start in range(0, alphas.size, rows):
        am1 = alphas[start : start + rows, None] - 1.0
        c = am1 * delta
        z = am1 * diff + log_theta_float(small, (r + c) / n) - (base - log_r)
        ratio = np.sum(weights * np.expm1(np.minimum(z, 700.0)), axis=-1) / weights.sum()
        big = np.max(z, axis=-1) > 40
        log_sum = np.where(big, logsumexp_rows(base + z) - logsumexp_rows(base), np.log1p(ratio))
        out[start : start + rows] = log_sum
    return alphas * delta * delta / (2 * n * sf * sf) + out / (alphas - 1.0)


def kls_2021_rho(n: int, sigma, delta) -> arb:
    """Ball for rho = eps'^2/2 of Kairouz-Liu-Steinke 2021 Prop. 13 (valid for sigma >= 1/2)."""
    sg = exact(sigma)
    s2 = sg * sg
    pi = arb.pi()
    xi = arb(0)
    for k in range(1, n):
        xi += (-2 * pi * pi * s2 * k / (k + 1)).exp()
    xi = 10 * xi
    d = exact(delta)
    e1 = (d * d / (n * s2) + xi / 2).sqrt()
    e2 = d / (arb(n).sqrt() * sg) + xi
    e = e1.min(e2)
    return e * e / 2


@dataclass(frozen=True)
class DiscreteGaussianSumPair(ShiftPair):
    """P = law of the sum of n iid N_Z(0, sigma^2), Q = P shifted by Delta (exact route only)."""

    n: int
    sigma: float | int | Fraction
    sensitivity: int

    def _table(self) -> _ResidueTable:
        return _residues(self.n, self.sigma, _needed_bits(self.n, _f(self.sigma), ctx.prec))

    def setup_cost(self) -> float:
        """Estimated seconds before the first log-mass (the residue table), for the route planner."""
        return table_cost(self.n, self.sigma)

    def _log_pmf(self, k: int) -> arb:
        sg = exact(self.sigma)
        return self._table().log_r[k % self.n] - arb(k) * k / (2 * self.n * sg * sg)

    def _outside(self, lo: int, hi: int) -> arb:
        if lo > hi or hi + 1 < 1 or 1 - lo < 1:
            return arb(0).union(arb(1))
        sg = exact(self.sigma)
        v = 2 * self.n * sg * sg
        bound = (-(arb(hi + 1) ** 2) / v).exp() + (-(arb(1 - lo) ** 2) / v).exp()
        return nonneg_error(bound)


@dataclass(frozen=True)
class DiscreteGaussianSum(Mechanism):
    """Sum of n iid N_Z(0, sigma^2) added to an integer query of sensitivity Delta.

    Exact Rényi curve for n <= 2^12 (and moderate n/sigma^2, see :func:`feasible`); otherwise the
    proven fallback described in the module docstring, labelled in ``rdp().describe()``.
    """

    n: int
    sigma: float | int | Fraction
    sensitivity: int = 1

    family = "discrete-gaussian-sum"

    def __post_init__(self) -> None:
        if isinstance(self.n, bool):
            raise AccountingError("n", self.n, "an integer >= 1")
        check_positive_int("n", self.n)
        if self.n > MAX_SHARES:  # evaluated share by share (issue 15: n = 6.5e6 took 6 CPU s; 1e20 never ended)
            raise AccountingError("n", self.n, f"an integer number of summed shares in [1, 2^24 = {MAX_SHARES}]")
        check_scale("sigma", self.sigma)
        check_sensitivity_int("sensitivity", self.sensitivity)
        check_noise_range("sigma", self.sigma, self.sensitivity, 1e-12, 1e150)

    @property
    def exact_route(self) -> bool:
        return feasible(self.n, self.sigma)

    @property
    def rdp_is_exact(self) -> bool:
        """Whether :meth:`rdp` is the sum's exact curve (else the labelled fallback bound)."""
        return self.n == 1 or self.exact_route

    def rdp(self) -> RDP:
        n, sigma, d = self.n, self.sigma, self.sensitivity
        if self.n == 1:
            return DiscreteGaussian(sigma, d).rdp()
        sf = _f(sigma)

        def single_approx(alphas):
            return discrete_gaussian_rdp_approx(sf, d, alphas)

        if self.exact_route:
            return RDP.from_function(
                lambda alpha: dg_sum_rdp_ball(n, sigma, d, alpha),
                f"DiscreteGaussianSum(n={n}, sigma={sigma}, Delta={d}) exact",
                approx=safe_approx(lambda alphas: dg_sum_rdp_approx(n, sigma, d, alphas), safe_approx(single_approx)),
                # per order, the float form sums n residues (a closed form costs 1): in a maximum over
                # batch sizes the large batches are evaluated only at orders still in contention
                approx_cost=n,
            )
        return self._fallback_curve()

    def _fallback_curve(self) -> RDP:
        n, sigma, d = self.n, self.sigma, self.sensitivity
        sf = _f(sigma)

        def single_approx(alphas):
            return discrete_gaussian_rdp_approx(sf, d, alphas)

        fallback = "fallback" if not self.exact_route else "bound"
        single = DiscreteGaussian(sigma, d).rdp()
        kls = self.closed_forms().get("kairouz_2021_prop13")
        if kls is None:
            return RDP.from_function(
                lambda a: single.ball(a),
                f"single N_Z(0,{sigma}^2) exact curve ({fallback}: n={n}, not the sum's exact curve)",
                approx=safe_approx(single_approx),
            )
        kls_curve = kls.to_rdp()
        return RDP.from_function(
            lambda a: single.ball(a).upper().min(kls_curve.ball(a).upper()),
            f"min(KLS 2021 Prop. 13, single N_Z(0,{sigma}^2)) ({fallback}: n={n}, not the sum's exact curve)",
            approx=safe_approx(lambda alphas: np.minimum(single_approx(alphas), kls.rho * alphas)),
        )

    def rdp_cost(self) -> float:
        """Estimated seconds of the RDP route with :meth:`rdp` (route planner): the residue table
        and a few certified evaluations on the exact route, a closed form otherwise."""
        if not self.exact_route or self.n == 1:
            return 0.01
        bits = _needed_bits(self.n, _f(self.sigma), DEFAULT_PRECISION)
        return table_cost(self.n, self.sigma) + 4 * _EVAL_COST * self.n * bits / 64

    def rdp_bound(self) -> RDP | None:
        """A cheap certified curve (the fallback of the module docstring: min of KLS 2021 Prop. 13
        and the single N_Z(0, sigma^2) curve), for when the exact one does not fit a time budget;
        None where it is :meth:`rdp` itself."""
        if not self.exact_route or self.n == 1:
            return None
        return self._fallback_curve()

    def zcdp(self) -> ZCDP | None:
        """KLS 2021 Prop. 13 when sigma >= 1/2 (a proven bound, not claimed tight)."""
        return self.closed_forms().get("kairouz_2021_prop13")

    def closed_forms(self) -> dict:
        forms: dict = {"single_discrete_gaussian_zcdp": DiscreteGaussian(self.sigma, self.sensitivity).zcdp()}
        if Fraction(self.sigma) >= Fraction(1, 2):
            with working_precision(None):
                rho = upper_float(kls_2021_rho(self.n, self.sigma, self.sensitivity))
            forms["kairouz_2021_prop13"] = ZCDP(rho)
        return forms

    def output_pair(self) -> DiscreteGaussianSumPair | None:
        if not self.exact_route:
            return None
        return DiscreteGaussianSumPair(self.n, self.sigma, self.sensitivity)

    def describe(self) -> str:
        route = "exact" if self.exact_route else "fallback bound"
        return (
            f"sum of {self.n} iid N_Z(0, {self.sigma}^2) on an integer query of sensitivity "
            f"{self.sensitivity} ({route} Renyi curve)"
        )
