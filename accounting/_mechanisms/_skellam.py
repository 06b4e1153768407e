"""Skellam noise Sk(0, mu) = Poisson(mu/2) - Poisson(mu/2): exact, certified Rényi curve.

Law: P(k) = e^{-mu} I_{|k|}(mu) (I the modified Bessel function), variance mu. For a 1-D integer
query of sensitivity Delta (l1 = l2 = Delta: an integer vector whose l1 and l2 norms agree has a
single non-zero coordinate, so this *is* the 1-D case) the exact curve is
D_alpha = log S(alpha) / (alpha - 1),  S(alpha) = sum_k P(k)^alpha P(k - Delta)^{1-alpha}.
P is symmetric, so reflecting k -> Delta - k swaps P and Q: both directions agree.

1. The pmf table (computed once per mu, reused across alphas)
-------------------------------------------------------------
The recurrence I_{n-1}(x) = I_{n+1}(x) + (2n/x) I_n(x) is run *backwards* from two certified seeds
e^{-mu} I_N(mu), e^{-mu} I_{N+1}(mu) (Arb's ``bessel_i(scaled=True)``). Every step adds two
positive balls, so the relative radius of P(n-1) is at most the larger relative radius of P(n),
P(n+1) plus one rounding: after N steps the enclosures have lost only log2(N) bits. (The forward
recurrence would cancel catastrophically; this one cannot.) The table is rebuilt, longer or at
higher precision, when an alpha needs it.

2. Where the tilted mass sits
-----------------------------
T(k) = P(k)^alpha Q(k)^{1-alpha} peaks far left of P's bulk at large alpha (mu = 100, alpha = 1e4:
near k = -2500). For each alpha the window [-n1, K-1] summed in Arb is chosen from float estimates
of log T (a heuristic that only affects tightness), then the remainders on both sides are bounded
*rigorously* as follows.

3. Left remainder (k < -n1): a decreasing ratio bound
-----------------------------------------------------
Let q_m = I_{m+1}(mu)/I_m(mu) > 0 and T(-n) = P(n)^alpha P(n+Delta)^{1-alpha}. Then
  T(-(n+1)) / T(-n) = q_n (q_n / q_{n+Delta})^{alpha-1} = q_n prod_{j<Delta} (q_{n+j}/q_{n+j+1})^{alpha-1}.
Two bounds on q, each giving a majorant rho(n) of this ratio that is *decreasing* in n:
(a) From the recurrence, 1/q_m = 2(m+1)/mu + q_{m+1}, hence
    (F1) q_m < mu/(2(m+1)),  (F2) q_m > 1/(2(m+1)/mu + mu/(2(m+2))),
    (F3) q_m/q_{m+1} < (m+2)/(m+1) + mu^2/(4(m+1)(m+3)) =: B(m), decreasing in m, so
    rho_a(n) = mu/(2(n+1)) B(n)^{Delta(alpha-1)}.
(b) Amos (1974) / Segura (2011, Thm 1): for m >= 0,
    mu/(m + 1/2 + sqrt((m+3/2)^2 + mu^2)) < q_m < mu/(m + 1/2 + sqrt((m+1/2)^2 + mu^2)) =: U(m).
    With h = m + 1/2, S(h) = sqrt(h^2 + mu^2): q_m/q_{m+1} < (h + 1 + S(h+2))/(h + S(h))
    = 1 + (1 + S(h+2) - S(h))/(h + S(h)) <= 1 + 3/(h + S(h)), because S(h+2) - S(h) <= 2;
    this is decreasing in m, so rho_b(n) = U(n) (1 + 3/(n + 1/2 + S(n + 1/2)))^{Delta(alpha-1)}.
    (The bounds (b) are also checked numerically against Arb's Bessel values in the tests.)
Both are valid for every m >= n and decreasing, hence so is rho = min(rho_a, rho_b), and if
rho(n1) < 1, sum_{n > n1} T(-n) <= T(-n1) rho(n1) / (1 - rho(n1)). (a) is the sharper one far
in the tail (large alpha), (b) in the Gaussian regime n <~ mu.

4. Right remainder (k >= K, K >= Delta/2)
-----------------------------------------
Sk(0, mu) is log-concave (a convolution of the log-concave Poisson(mu/2) and its reflection;
convolution preserves discrete log-concavity) and symmetric, so r(k) = P(k)/P(k - Delta) is
non-increasing in k and r(k) <= 1 once |k| >= |k - Delta|, i.e. k >= Delta/2. Hence for k >= K
  T(k) = P(k) r(k)^{alpha-1} <= r(K)^{alpha-1} P(k),
and sum_{k >= K} T(k) <= r(K)^{alpha-1} P[X >= K] <= r(K)^{alpha-1} exp(-(K asinh(K/mu) - sqrt(K^2+mu^2) + mu))
by the Chernoff bound with the Skellam mgf E e^{tX} = exp(mu (cosh t - 1)) at t = asinh(K/mu).
The same Chernoff bound gives the pair's tail masses.

Closed forms kept beside the exact value: Agarwal, Kairouz, Liu 2021 Thm 3.5
alpha D2^2/(2mu) + min{((2alpha-1) D2^2 + 6 D1)/(4 mu^2), 3 D1/(2 mu)}, and the ICLR 2023
Theorem 2 parametrisation (eps, s, n) -> g = ceil(s eps sqrt(n)), mu = g^2/eps^2 with its
eps_hat(alpha) as printed (last term 3 eps^2/(2s)) and as corrected (3 eps^2/(2g)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from flint import arb, ctx

from .._certified import exact, upper_float, working_precision
from .._guarantees import RDP
from .._pairs import IntegerPair
from .._validation import AccountingError, check_positive, check_positive_int
from ._base import Mechanism, alpha_guard_bits, check_scale, check_sensitivity_int, nonneg_error

__all__ = ["Skellam", "SkellamPair", "Theorem2Parameters", "iclr2023_theorem2"]


# ---------------------------------------------------------------------------------------------
# pmf table


class _Table:
    """log P(n), n = 0..N, for Sk(0, mu) at ``bits`` of precision (section 1 of the docstring)."""

    __slots__ = ("mu", "N", "bits", "logs", "floats")

    def __init__(self, mu, N: int, bits: int) -> None:
        self.mu, self.N, self.bits = mu, N, bits
        with ctx.workprec(bits):
            m = exact(mu)
            hi = m.bessel_i(N + 1, scaled=True)
            cur = m.bessel_i(N, scaled=True)
            two_over_mu = 2 / m
            values = [arb(0)] * (N + 1)
            values[N] = cur
            for n in range(N, 0, -1):
                prev = hi + (two_over_mu * n) * cur
                values[n - 1] = prev
                hi, cur = cur, prev
            self.logs = [v.log() for v in values]
        self.floats = [float(v.mid()) for v in self.logs]


_TABLES: dict[Fraction, _Table] = {}


def _table(mu, N: int, bits: int) -> _Table:
    key = Fraction(mu)
    t = _TABLES.get(key)
    if t is None or t.N < N or t.bits < bits:
        newN = max(N, t.N if t is not None else 0)
        newbits = max(bits, t.bits if t is not None else 0)
        if t is not None and t.N < N:
            newN = max(newN, 2 * t.N)
        t = _Table(mu, newN, newbits)
        _TABLES[key] = t
    return t


def _initial_N(mu_f: float, delta: int) -> int:
    return int(mu_f + 40 * math.sqrt(mu_f + 1) + 64 + 2 * delta)


def _chernoff_log_tail(mu: arb, K: int) -> arb:
    """log of the Chernoff bound on P[X >= K], K >= 1 (section 4)."""
    k = arb(K)
    return -(k * (k / mu).asinh() - (k * k + mu * mu).sqrt() + mu)


def _rho_bound(mu: arb, n: int, delta: int, am1: arb) -> arb:
    """rho(n) of section 3: an upper bound of every term ratio T(-(m+1))/T(-m), m >= n."""
    power = delta * am1
    B = arb(n + 2) / (n + 1) + mu * mu / (4 * arb(n + 1) * (n + 3))
    rho_f = mu / (2 * arb(n + 1)) * (B.log() * power).exp()
    h = arb(2 * n + 1) / 2
    root = (h * h + mu * mu).sqrt()
    rho_s = mu / (h + root) * ((3 / (h + root)).log1p() * power).exp()
    return rho_f.min(rho_s)


def _log_rho_float(mu: float, n: int, delta: int, am1: float) -> float:
    power = delta * am1
    f = math.log(mu / (2 * (n + 1))) + power * math.log((n + 2) / (n + 1) + mu * mu / (4 * (n + 1) * (n + 3)))
    h = n + 0.5
    root = math.hypot(h, mu)
    g = math.log(mu / (h + root)) + power * math.log1p(3 / (h + root))
    return min(f, g)


def _window(lp: list[float], N: int, delta: int, af: float, mu_f: float, thr_nats: float):
    """Float heuristics: (top, n1, K) or None if the table is too short. Affects tightness only."""
    am1 = af - 1.0

    def log_t(k: int) -> float:
        return af * lp[abs(k)] - am1 * lp[abs(k - delta)]

    lo_k, hi_k = -(N - delta), N
    stride = max(1, (hi_k - lo_k) // 1024)
    best_k = max(range(lo_k, hi_k + 1, stride), key=log_t)
    a, b = max(lo_k, best_k - stride), min(hi_k, best_k + stride)
    best_k = max(range(a, b + 1), key=log_t)
    top = log_t(best_k)
    thr = top - thr_nats
    k = best_k
    while k > lo_k and log_t(k) >= thr:
        k -= 1
    n1 = max(0, -k)
    # the left remainder is T(-n1) rho/(1 - rho): push n1 out until that is below the threshold
    while True:
        if n1 + delta > N:
            return None
        lr = _log_rho_float(mu_f, n1, delta, am1)
        if lr < 0 and log_t(-n1) + lr - math.log(-math.expm1(lr)) < thr:
            break
        n1 += max(1, n1 // 32)
    k = max(best_k, 0)
    while k < hi_k and log_t(k) >= thr:
        k += 1
    K = max(k, (delta + 1) // 2, 1)
    if K > N:
        return None
    return top, n1, K


def skellam_rdp_ball(mu, delta: int, alpha: arb) -> arb:
    """Ball whose upper endpoint bounds D_alpha(Sk(0,mu) || Sk(Delta,mu)) (module docstring)."""
    af = float(alpha.mid())
    am1_f = af - 1.0
    mu_f = float(Fraction(mu)) if not isinstance(mu, float) else mu
    prec = ctx.prec
    N = _initial_N(mu_f, delta)
    thr_nats = (prec + 40) * math.log(2) + max(0.0, -math.log(max(am1_f, 1e-300))) + 12
    while True:
        max_abs_log = N * math.log(N + 2) + mu_f + 10
        bits = prec + alpha_guard_bits(alpha) + int(math.log2(max(af, 2) * max_abs_log)) + 24
        table = _table(mu, N, bits + N.bit_length() + 8)
        N = table.N
        found = _window(table.floats, N, delta, af, mu_f, thr_nats + math.log(2 * N + 2))
        if found is None:
            N = 2 * N
            continue
        top, n1, K = found
        break

    with ctx.workprec(bits):
        logs = table.logs
        m = exact(mu)
        a = alpha
        am1 = a - 1
        shift = arb(top)

        def log_term(k: int) -> arb:
            return a * logs[abs(k)] - am1 * logs[abs(k - delta)]

        total = arb(0)
        for k in range(-n1, K):
            total += (log_term(k) - shift).exp()
        # left remainder (section 3)
        rho = _rho_bound(m, n1, delta, am1)
        if not rho.upper() < 1:
            return arb.pos_inf()
        total += nonneg_error((log_term(-n1) - shift).exp() * rho / (1 - rho))
        # right remainder (section 4)
        log_r = logs[K] - logs[abs(K - delta)]
        log_r = arb(0).union(log_r) if not log_r.upper() <= 0 else log_r
        right_tail = (am1 * log_r + _chernoff_log_tail(m, K) - shift).exp()
        total += nonneg_error(right_tail)
        result = (shift + total.log()) / am1
    return result


# ---------------------------------------------------------------------------------------------
# closed forms


def agarwal_bound_ball(mu, d1, d2, alpha: arb) -> arb:
    """Agarwal, Kairouz, Liu 2021 Thm 3.5: alpha D2^2/(2mu) + min{((2alpha-1)D2^2 + 6D1)/(4mu^2), 3D1/(2mu)}."""
    m, a1, a2 = exact(mu), exact(d1), exact(d2)
    first = ((2 * alpha - 1) * a2 * a2 + 6 * a1) / (4 * m * m)
    second = 3 * a1 / (2 * m)
    return alpha * a2 * a2 / (2 * m) + first.min(second)


def iclr_printed_ball(eps, s, alpha: arb) -> arb:
    """ICLR 2023 Thm 2 as printed: alpha eps^2/2 + min{(2alpha-1)eps^2/(4s^2) + 3eps/(2s^3), 3eps^2/(2s)}."""
    e, sv = exact(eps), exact(s)
    first = (2 * alpha - 1) * e * e / (4 * sv * sv) + 3 * e / (2 * sv**3)
    second = 3 * e * e / (2 * sv)
    return alpha * e * e / 2 + first.min(second)


@dataclass(frozen=True)
class Theorem2Parameters:
    """ICLR 2023 Theorem 2 (Dist-RDP-SE) parameters: g = ceil(s eps sqrt(n)), mu = g^2/eps^2."""

    epsilon: float | int | Fraction
    s: float | int | Fraction
    n: int
    g: int
    mu: Fraction

    @property
    def mechanism(self) -> "Skellam":
        """The total noise Sk(0, g^2/eps^2) on the sum of encoded rewards (sensitivity g)."""
        return Skellam(self.mu, self.g, self.g, theorem2=(self.epsilon, self.s, self.n))

    def eps_hat_as_printed(self) -> RDP:
        eps, s = self.epsilon, self.s
        return RDP.from_function(lambda a: iclr_printed_ball(eps, s, a), "iclr2023_thm2_as_printed")

    def eps_hat_corrected(self) -> RDP:
        mu, g = self.mu, self.g
        return RDP.from_function(lambda a: agarwal_bound_ball(mu, g, g, a), "iclr2023_thm2_corrected (3 eps^2/(2g))")


def _ceil_s_eps_sqrt_n(eps, s, n: int) -> int:
    """ceil(s eps sqrt(n)) computed exactly: the least integer g with g^2 >= (s eps)^2 n, g >= s eps sqrt(n)."""
    x = Fraction(s) * Fraction(eps)
    target = x * x * n
    g = max(1, math.isqrt(int(target)))
    while Fraction(g * g) < target:
        g += 1
    while g > 1 and Fraction((g - 1) ** 2) >= target:
        g -= 1
    return g


def iclr2023_theorem2(epsilon, s, n: int) -> Theorem2Parameters:
    """Theorem 2's parametrisation: (eps, s, n) -> g = ceil(s eps sqrt(n)), mu = g^2/eps^2 (exact)."""
    check_positive("epsilon", epsilon)
    check_positive("s", s)
    if Fraction(s) < 1:
        raise AccountingError("s", s, "a scale s >= 1 (ICLR 2023 Theorem 2)")
    check_positive_int("n", n)
    g = _ceil_s_eps_sqrt_n(epsilon, s, n)
    mu = Fraction(g * g) / (Fraction(epsilon) ** 2)
    return Theorem2Parameters(epsilon, s, int(n), g, mu)


# ---------------------------------------------------------------------------------------------
# mechanism and pair


@dataclass(frozen=True)
class SkellamPair(IntegerPair):
    """P = Sk(0, mu), Q = Sk(Delta, mu): certified log-pmfs (Arb Bessel), Chernoff tails."""

    variance: float | int | Fraction
    sensitivity: int

    def __post_init__(self) -> None:
        check_scale("variance", self.variance)
        check_sensitivity_int("sensitivity", self.sensitivity)

    def _log_pmf(self, x: int) -> arb:
        return exact(self.variance).bessel_i(abs(int(x)), scaled=True).log()

    def log_p(self, k: int) -> arb:
        return self._log_pmf(k)

    def log_q(self, k: int) -> arb:
        return self._log_pmf(int(k) - self.sensitivity)

    def _outside(self, lo: int, hi: int) -> arb:
        if lo > hi or hi + 1 < 1 or 1 - lo < 1:
            return arb(0).union(arb(1))
        m = exact(self.variance)
        bound = _chernoff_log_tail(m, hi + 1).exp() + _chernoff_log_tail(m, 1 - lo).exp()
        return nonneg_error(bound)

    def tail_p(self, lo: int, hi: int) -> arb:
        return self._outside(int(lo), int(hi))

    def tail_q(self, lo: int, hi: int) -> arb:
        return self._outside(int(lo) - self.sensitivity, int(hi) - self.sensitivity)

    def support(self) -> tuple[None, None]:
        return None, None


@dataclass(frozen=True)
class Skellam(Mechanism):
    """Skellam mechanism Sk(0, variance) on an integer query with l1/l2 sensitivities D1, D2.

    ``l2_sensitivity`` defaults to ``l1_sensitivity`` (a 1-D query). The exact curve exists for
    D1 = D2 (the 1-D case); for D2 < D1 ``rdp()`` is Agarwal et al.'s bound, labelled as such.
    """

    variance: float | int | Fraction
    l1_sensitivity: int = 1
    l2_sensitivity: float | int | Fraction | None = None
    theorem2: tuple | None = field(default=None, compare=False, repr=False)

    family = "skellam"

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
        return RDP.from_function(lambda alpha: skellam_rdp_ball(mu, d, alpha), f"Skellam(mu={mu}, Delta={d}) exact")

    def closed_forms(self) -> dict:
        mu, d1, d2 = self.variance, self.l1_sensitivity, self.l2_sensitivity
        forms = {
            "agarwal_2021_thm3.5": RDP.from_function(
                lambda a: agarwal_bound_ball(mu, d1, d2, a), f"agarwal_2021_thm3.5(mu={mu}, D1={d1}, D2={d2})"
            )
        }
        if self.theorem2 is not None:
            params = iclr2023_theorem2(*self.theorem2)
            forms["iclr2023_thm2_as_printed"] = params.eps_hat_as_printed()
            forms["iclr2023_thm2_corrected"] = params.eps_hat_corrected()
        return forms

    def output_pair(self) -> SkellamPair | None:
        if not self.is_one_dimensional:
            return None
        return SkellamPair(self.variance, self.l1_sensitivity)

    def describe(self) -> str:
        return (
            f"Skellam Sk(0, mu={self.variance}) on an integer query, l1 sensitivity {self.l1_sensitivity}, "
            f"l2 sensitivity {self.l2_sensitivity}"
        )
