"""Noise samplers: validated public wrappers over the numba kernels in ``_kernels``.

Every sampler takes a ``numpy.random.Generator`` (never a global seed) and a ``size``; discrete
laws return int64 arrays. Bad parameters raise :class:`accounting._core._validation.AccountingError`
(a ``ValueError``) naming the parameter, its value and the accepted range; nothing is clipped.

Exact laws (integer arithmetic, Canonne, Kamath & Steinke 2020, arXiv:2004.00010):

- :func:`bernoulli` (rational p) and :func:`bernoulli_exp` (exp(-gamma), gamma rational; CKS Alg. 1);
- :func:`geometric` and :func:`discrete_laplace` (rational scale t/s, t <= :data:`MAX_T`; CKS Alg. 2,
  exact up to an int64 conditioning costing < 2**-100 in total variation);
- :func:`discrete_gaussian` (rational sigma^2; CKS Alg. 3), exactly N_Z(0, sigma^2) conditioned on
  |X| <= ymax, where ymax is the largest bound at which the int64 arithmetic cannot overflow and
  the parameter range is restricted so that the conditioning moves the law by < 2**-100 in total
  variation (see :func:`discrete_gaussian_range`).

:func:`sampler_parameter_at_least` is the one rule for a scale or variance these samplers cannot take:
round it up to the nearest k/2^j they take (more noise, sound for privacy), or refuse naming it.

:func:`discrete_laplace` and :func:`discrete_gaussian` take ``method="inversion"``: the same laws by
exact inversion against certified thresholds (``dpverify._executed._inversion``), 3-4x faster, a different bit
stream (the float-safe privatizers use it); the default ``"cks"`` keeps every earlier seeded stream.

Float laws (parameters are real numbers; deviation from the exact law stated and tested):

- :func:`polya` and :func:`polya_difference`: Polya(r, beta), including r = 2**-24 (ICLR 2023
  Theorem 1: the per-user noise gamma+ - gamma- with r = 1/n, beta = e^{-eps/g}). No gamma-Poisson
  mixture: a float Gamma(1e-7) underflows to 0 and the noise silently vanishes. The zero outcome,
  of probability (1 - beta)^r, is decided by one uniform; otherwise the conditional pmf is inverted.
  The law differs from the exact one by < 1 unit of 2**-53 in total variation at the Theorem-1
  shapes (r = 2**-24, 2**-10), 41 units at r = 1, beta = 0.9 (computed exactly in the tests).
- :func:`skellam`: Sk(0, mu) = Poisson(mu/2) - Poisson(mu/2) with numpy's Poisson samplers.
- :func:`binomial`, and the baselines :func:`laplace` and :func:`gaussian` (continuous, float: the
  float Laplace mechanism leaks through its low-order bits, Mironov 2012; used only to reproduce
  the papers' DP-SE baseline).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from numbers import Integral, Rational

import numpy as np

from accounting import working_precision, AccountingError
from accounting.internal import exact, upper_float, check_nonnegative, check_positive, check_probability

from . import _inversion, _kernels

__all__ = [
    "bernoulli",
    "bernoulli_exp",
    "binomial",
    "discrete_gaussian",
    "discrete_gaussian_range",
    "discrete_laplace",
    "gaussian",
    "geometric",
    "laplace",
    "polya",
    "polya_difference",
    "skellam",
]

_MAX_INT62 = 1 << 62
#: Largest |A| = ||Y| q t - p| for which A^2 fits in int64 (discrete Gaussian kernel).
_DG_MAX_A = (1 << 31) - 1
#: Bound on the total-variation distance between the truncated and the exact discrete Gaussian.
DG_TRUNCATION_LOG2_TV = -100
#: The same bound as a float: TV(one draw of :func:`discrete_gaussian`, N_Z(0, sigma^2)) <= this for
#: every accepted sigma^2 (certified in Arb by :func:`discrete_gaussian_range`). Not zero: a
#: privatizer that releases these draws under an (eps, delta) guarantee charges (1 + e^eps) times
#: its total (``accounting._core._total_variation``); no zCDP or Renyi guarantee absorbs it.
DG_TRUNCATION_TV = 2.0**DG_TRUNCATION_LOG2_TV
#: The exact discrete Laplace and geometric samplers take a scale t/s with s <= MAX_S and t <= MAX_T.
MAX_S = _MAX_INT62
#: CKS Algorithm 2 draws X = U + t V (U < t, V geometric with P[V >= k] = e^{-k}) and restarts when
#: V > vmax = floor((2**62 - t)/t) (int64, ``_kernels._vmax``), so its law is the exact one
#: conditioned on V <= vmax, within total variation P[V > vmax] = e^{-(vmax + 1)}. t <= floor(2**62/70)
#: gives vmax >= 69 and e^{-70} < 2**-100, the discrete Gaussian's bar (``DG_TRUNCATION_LOG2_TV``);
#: the int64 arithmetic alone would allow t <= 2**61, where the law is cut at 2 scales.
MAX_T = _MAX_INT62 // 70
#: numpy's Poisson sampler refuses lam above about 9.2e18; Sk(0, mu) needs lam = mu / 2.
_MAX_SKELLAM_VARIANCE = 2.0**62


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise AccountingError("rng", rng, "a numpy.random.Generator, e.g. numpy.random.default_rng(seed)")
    return rng


def _shape(size: object) -> tuple[int, ...] | None:
    if size is None:
        return None
    if isinstance(size, Integral) and not isinstance(size, bool):
        dims = (int(size),)
    elif isinstance(size, tuple) and all(isinstance(d, Integral) and not isinstance(d, bool) for d in size):
        dims = tuple(int(d) for d in size)
    else:
        raise AccountingError("size", size, "None, an integer >= 0 or a tuple of integers >= 0")
    if any(d < 0 for d in dims):
        raise AccountingError("size", size, "None, an integer >= 0 or a tuple of integers >= 0")
    return dims


def _run(fill, rng, args, size, dtype):
    """Call ``fill(rng, *args, out)`` on a flat array and give it the requested shape."""
    shape = _shape(size)
    out = np.empty(1 if shape is None else math.prod(shape), dtype=dtype)
    fill(rng, *args, out)
    if shape is None:
        return out[0].item()
    return out.reshape(shape)


def as_rational(name: str, value: object, allowed: str) -> Fraction:
    """``value`` as an exact Fraction: ints, Fractions, decimal strings ("0.1" is 1/10) and floats
    (converted exactly: 0.1 becomes 3602879701896397/2**55, which may exceed an int64 range)."""
    if isinstance(value, bool):
        raise AccountingError(name, value, allowed)
    if isinstance(value, (Integral, Fraction, Rational)):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AccountingError(name, value, allowed)
        return Fraction(value)
    if isinstance(value, str):
        try:
            return Fraction(value)
        except (ValueError, ZeroDivisionError):
            raise AccountingError(name, value, allowed) from None
    raise AccountingError(name, value, allowed)


def _power_or_int(bound: int) -> str:
    return f"2**{bound.bit_length() - 1}" if bound & (bound - 1) == 0 else str(bound)


def _int64_fraction(name: str, value: Fraction, max_num: int, max_den: int, allowed: str) -> tuple[int, int]:
    if value.numerator > max_num or value.denominator > max_den:
        raise AccountingError(
            name,
            value,
            allowed,
            f"numerator must be <= {_power_or_int(max_num)} and denominator <= "
            f"{_power_or_int(max_den)} for exact int64 arithmetic; pass a Fraction or a decimal "
            "string with a smaller denominator",
        )
    return value.numerator, value.denominator


# ------------------------------------------------------------------------------------------------
# Exact laws
# ------------------------------------------------------------------------------------------------


def bernoulli(rng: np.random.Generator, p: object, size: object = None):
    """Bernoulli(p) for rational p in [0, 1], exactly (denominator <= 2**62). int64 0/1."""
    _check_rng(rng)
    allowed = "a rational probability in [0, 1] (int, Fraction, decimal string or float)"
    value = as_rational("p", p, allowed)
    if not 0 <= value <= 1:
        raise AccountingError("p", p, allowed)
    num, den = _int64_fraction("p", value, _MAX_INT62, _MAX_INT62, allowed)
    return _run(_kernels._fill_bernoulli_rational, rng, (num, den), size, np.int64)


def bernoulli_exp(rng: np.random.Generator, gamma: object, size: object = None):
    """Bernoulli(exp(-gamma)) for rational gamma >= 0, exactly (CKS Algorithm 1). int64 0/1."""
    _check_rng(rng)
    allowed = "a rational number >= 0"
    value = as_rational("gamma", gamma, allowed)
    if value < 0:
        raise AccountingError("gamma", gamma, allowed)
    num, den = _int64_fraction("gamma", value, _MAX_INT62, _MAX_INT62, allowed)
    return _run(_kernels._fill_bernoulli_exp, rng, (num, den), size, np.int64)


def _scale(name: str, scale: object) -> tuple[int, int]:
    allowed = "a rational number > 0"
    value = as_rational(name, scale, allowed)
    if value <= 0:
        raise AccountingError(name, scale, allowed)
    # scale = t / s: t bounds the uniform U in [0, t) and U + t V (kernel restarts past 2**62; MAX_T)
    t, s = _int64_fraction(name, value, MAX_T, MAX_S, allowed)
    return s, t


def _laplace_takes(scale: Fraction) -> bool:
    return scale.numerator <= MAX_T and scale.denominator <= MAX_S


def _gaussian_takes(sigma2: Fraction) -> bool:
    try:
        discrete_gaussian_range(sigma2)
    except AccountingError:
        return False
    return True


#: the exact laws :func:`sampler_parameter_at_least` rounds for: what each parameter is, and its range
_PARAMETER_LAWS = {
    "discrete_laplace": (_laplace_takes, "scale", "a scale t/s with t <= floor(2**62/70) (about 6.6e16) and s <= 2**62"),
    "discrete_gaussian": (_gaussian_takes, "sigma2", "a variance the exact sampler takes (see discrete_gaussian_range: up to about 1.7e8)"),
}


def sampler_parameter_at_least(name: str, given: object, value: object, law: str) -> Fraction:
    """The least parameter >= ``value`` that the exact sampler of ``law`` takes: ``value`` itself when
    it does, else the least k/2^j >= value it takes, j <= 62 as large as possible (the finest such
    rounding).

    ``law`` is "discrete_laplace" (``value`` the scale of Lap_Z, or of the geometric law) or
    "discrete_gaussian" (``value`` the variance sigma^2 of N_Z). Rounding *up* is always sound for
    privacy: a larger scale or variance is more noise, and a mechanism with more noise is at least as
    private (the callers charge the rounded parameter, or the requested one, which claims no less
    privacy loss). A caller's parameter whose exact rational is too long for int64 arithmetic (a
    float eps is a binary fraction with a 2^55 denominator) thus gets a slightly noisier sampler
    instead of an error. When no k/2^j >= value is taken (the parameter is above the sampler's
    range), raises :class:`AccountingError` (a ``ValueError``) naming ``name``=``given`` (the
    caller's parameter, e.g. epsilon) and the range.
    """
    if law not in _PARAMETER_LAWS:
        raise AccountingError("law", law, f"one of {tuple(_PARAMETER_LAWS)}")
    takes, what, allowed = _PARAMETER_LAWS[law]
    target = as_rational(name, value, "a rational number > 0")
    if not target > 0:
        raise AccountingError(name, given, f"a parameter giving a {law} {what} > 0")
    if takes(target):
        return target
    for j in range(62, -1, -1):
        candidate = Fraction(-((-target.numerator * 2**j) // target.denominator), 2**j)  # ceil(target 2^j) / 2^j
        if takes(candidate):
            return candidate
    raise AccountingError(name, given, f"a parameter whose {law} {what} ({float(target):.6g}) the exact sampler can take, "
                          f"rounded up if need be: {allowed}")


def geometric(rng: np.random.Generator, scale: object, size: object = None):
    """P[X = k] = (1 - e^{-1/scale}) e^{-k/scale}, k = 0, 1, ...: failures before the first success
    of Bernoulli(1 - e^{-1/scale}); exact for rational scale (the one-sided half of CKS Alg. 2)."""
    _check_rng(rng)
    s, t = _scale("scale", scale)
    return _run(_kernels._fill_geometric_exp, rng, (s, t), size, np.int64)


_METHODS = ("cks", "inversion")


def _check_method(method: object) -> str:
    if method not in _METHODS:
        raise AccountingError("method", method, f"one of {_METHODS} (the same law; 'cks' keeps the earlier seeded streams)")
    return str(method)


def discrete_laplace(rng: np.random.Generator, scale: object, size: object = None, *, method: str = "cks"):
    """Lap_Z(scale): P[X = x] = (e^{1/b} - 1)/(e^{1/b} + 1) e^{-|x|/b}, b = scale rational > 0;
    exact (CKS Algorithm 2, or ``method="inversion"``: ``dpverify._executed._inversion``) up to the int64
    conditioning described at :data:`MAX_T` (total variation < 2**-100). Numerator <= MAX_T =
    floor(2**62/70), denominator <= 2**62; :func:`sampler_parameter_at_least` rounds a scale up into
    that range."""
    _check_rng(rng)
    s, t = _scale("scale", scale)
    if _check_method(method) == "inversion":
        return _run(_kernels._fill_discrete_laplace_inv, rng, (_inversion.laplace_tables(s, t),), size, np.int64)
    return _run(_kernels._fill_discrete_laplace, rng, (s, t), size, np.int64)


def discrete_gaussian_range(sigma2: object) -> tuple[int, int, int, int]:
    """Validate sigma^2 = p/q for :func:`discrete_gaussian`; return (p, q, t, ymax).

    CKS Algorithm 3 accepts a candidate Y ~ Lap_Z(t), t = floor(sigma) + 1, with probability
    exp(-A^2 / D), A = |Y| q t - p, D = 2 p q t^2. The kernel is exact in int64 when
    |A| <= 2**31 - 1 (so A^2 < 2**62) and D <= 2**62; it restarts candidates with
    |Y| > ymax = floor((2**31 - 1 + p) / (q t)), so its law is N_Z(0, sigma^2) conditioned on
    |X| <= ymax. Accepted parameters satisfy p <= 2**31 - 1, D <= 2**62 and
    P[|X| > ymax] <= 2 e^{-(ymax+1)^2/(2 sigma^2)} / (1 - e^{-(ymax+1)/sigma^2}) <= 2**-100
    (:data:`DG_TRUNCATION_TV`; the bound is evaluated in Arb and rounded up). That probability is
    the total variation between a draw and N_Z(0, sigma^2): small, not zero, and charged in delta by
    the privatizers that release these draws (``accounting._core._total_variation``).
    With q = 1 this admits integer sigma^2 up to about 1.7e8 (sigma ~ 13000; the truncation
    condition binds first); sigma^2 with a large denominator should be rounded up to a coarser
    rational (more noise is still private).
    """
    allowed = "a rational number > 0 (int, Fraction, decimal string or float)"
    value = as_rational("sigma2", sigma2, allowed)
    if value <= 0:
        raise AccountingError("sigma2", sigma2, allowed)
    p, q = value.numerator, value.denominator
    t = math.isqrt(p // q) + 1
    range_msg = "sigma2 = p/q with p <= 2**31 - 1 and 2 p q t^2 <= 2**62, t = floor(sigma) + 1"
    if p > _DG_MAX_A or 2 * p * q * t * t > _MAX_INT62:
        raise AccountingError(
            "sigma2", sigma2, range_msg, "outside the exact int64 range; round sigma2 up to a rational with a smaller denominator"
        )
    ymax = (_DG_MAX_A + p) // (q * t)
    if not _truncation_tv_upper(p, q, ymax) <= DG_TRUNCATION_TV:
        raise AccountingError(
            "sigma2",
            sigma2,
            range_msg + f" and truncation at ymax = {ymax} costing <= 2**{DG_TRUNCATION_LOG2_TV} in total variation",
            "round sigma2 up to a rational with a smaller denominator",
        )
    return p, q, t, ymax


@functools.lru_cache(maxsize=4096)
def _truncation_tv_upper(p: int, q: int, ymax: int) -> float:
    """Certified upper bound (Arb, rounded up) on P[|X| > ymax] for X ~ N_Z(0, p/q), which is the
    total variation between N_Z(0, p/q) and its conditioning on |X| <= ymax:
    2 e^{-x^2/(2 sigma^2)} / (1 - e^{-x/sigma^2}) with x = ymax + 1 (the normaliser is >= 1 and
    e^{-k^2/(2 sigma^2)} <= e^{-x^2/(2 sigma^2)} e^{-(k - x) x/sigma^2} for k >= x)."""
    with working_precision(None):
        sig2 = exact(Fraction(p, q))
        x = exact(ymax + 1)
        return upper_float(2 * (-(x * x) / (2 * sig2)).exp() / (1 - (-x / sig2).exp()))


def discrete_gaussian_tail(sigma2: object, k: int) -> float:
    """Certified upper bound on P[|X| > k] for the exact X ~ N_Z(0, sigma2), k an integer (1.0 for k < 0):
    2 e^{-(k+1)^2/(2 sigma^2)} / (1 - e^{-(k+1)/sigma^2}) in Arb, rounded up, capped at 1."""
    value = as_rational("sigma2", sigma2, "a rational number > 0")
    if not value > 0:
        raise AccountingError("sigma2", sigma2, "a rational number > 0")
    if k < 0:
        return 1.0
    return min(1.0, _truncation_tv_upper(value.numerator, value.denominator, int(k)))


def discrete_gaussian(rng: np.random.Generator, sigma2: object, size: object = None, *, method: str = "cks"):
    """N_Z(0, sigma^2): P[X = x] proportional to exp(-x^2 / (2 sigma^2)), sigma^2 rational (CKS
    Algorithm 3, exact up to a truncation costing < 2**-100 in total variation; see
    :func:`discrete_gaussian_range` for the accepted range). ``method="inversion"``: the same law by
    exact inversion of |X| (``dpverify._executed._inversion``) for sigma^2 <= 2^20, else Algorithm 3 with its
    candidates and acceptances by exact inversion."""
    _check_rng(rng)
    p, q, t, ymax = discrete_gaussian_range(sigma2)
    if _check_method(method) == "inversion":
        if p <= _inversion.GAUSS_TABLE_MAX_SIGMA2 * q:  # |X| by one inversion
            tables = _inversion.gaussian_magnitude_tables(p, q, ymax)
            return _run(_kernels._fill_discrete_gaussian_magnitude, rng, (p, q, ymax, tables), size, np.int64)
        tables = (_inversion.laplace_tables(1, t), _inversion.gaussian_tables(p, q, t, ymax))
        return _run(_kernels._fill_discrete_gaussian_inv, rng, (p, q, t, ymax, *tables), size, np.int64)
    return _run(_kernels._fill_discrete_gaussian, rng, (p, q, t, ymax), size, np.int64)


# ------------------------------------------------------------------------------------------------
# Float laws
# ------------------------------------------------------------------------------------------------


def _check_polya(r: object, beta: object) -> tuple[float, float]:
    """r > 0 and beta in (0, 1), with lambda = -r log(1 - beta) = -log P[X = 0] in [2**-1000, 700]:
    below, P[X > 0] = 1 - e^{-lambda} is not a positive float; above, P[X = 0] underflows and the
    pmf recurrence would start from 0."""
    check_positive("r", r)
    check_probability("beta", beta)
    lam = -float(r) * math.log1p(-float(beta))  # type: ignore[arg-type]
    if not 2.0**-1000 <= lam <= 700.0:
        raise AccountingError(
            "r", r, f"a shape with -r log(1 - beta) in [2**-1000, 700] (got {lam!r} with beta={beta!r})"
        )
    return float(r), float(beta)  # type: ignore[arg-type]


def polya(rng: np.random.Generator, r: object, beta: object, size: object = None):
    """Polya(r, beta): P[X = x] = Gamma(x + r)/(x! Gamma(r)) beta^x (1 - beta)^r, x = 0, 1, ...

    r > 0 (e.g. 1/n for n up to 2**24 and far below), beta in (0, 1), with -r log(1 - beta) in
    [2**-1000, 700] (P[X = 0] and P[X > 0] both representable). Cost: one uniform when X = 0, and
    O(X) steps of the pmf recurrence otherwise, so a mean r beta / (1 - beta) in the thousands is
    slow, never wrong.
    """
    _check_rng(rng)
    r_f, beta_f = _check_polya(r, beta)
    return _run(_kernels._fill_polya, rng, (r_f, beta_f), size, np.int64)


def polya_difference(rng: np.random.Generator, r: object, beta: object, size: object = None):
    """gamma+ - gamma-, gamma+- iid Polya(r, beta): the per-user noise of ICLR 2023 Theorem 1
    (r = 1/n, beta = e^{-eps/g}); the sum of n of them is Lap_Z(g/eps)."""
    _check_rng(rng)
    r_f, beta_f = _check_polya(r, beta)
    return _run(_kernels._fill_polya_difference, rng, (r_f, beta_f), size, np.int64)


def skellam(rng: np.random.Generator, variance: object, size: object = None):
    """Sk(0, mu) = Poisson(mu/2) - Poisson(mu/2), variance mu in [0, 2**62] (0 gives zeros)."""
    _check_rng(rng)
    check_nonnegative("variance", variance)
    if variance > _MAX_SKELLAM_VARIANCE:  # type: ignore[operator]
        raise AccountingError("variance", variance, "a real number in [0, 2**62]")
    return _run(_kernels._fill_skellam, rng, (float(variance),), size, np.int64)  # type: ignore[arg-type]


def binomial(rng: np.random.Generator, n: object, p: object, size: object = None):
    """Binomial(n, p) (numpy's sampler), n integer >= 0, p in [0, 1]."""
    _check_rng(rng)
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 0 or n > _MAX_INT62:
        raise AccountingError("n", n, "an integer in [0, 2**62]")
    check_probability("p", p, open_low=False, open_high=False)
    return _run(_kernels._fill_binomial, rng, (int(n), float(p)), size, np.int64)  # type: ignore[arg-type]


def laplace(rng: np.random.Generator, scale: object, size: object = None):
    """Continuous Laplace(0, scale), float64. BASELINE ONLY (DP-SE of Sajed & Sheffet 2019): the
    float Laplace mechanism is not private as implemented (Mironov 2012); use
    :func:`discrete_laplace` for anything that must be private."""
    _check_rng(rng)
    check_positive("scale", scale)
    return _run(_kernels._fill_laplace, rng, (float(scale),), size, np.float64)  # type: ignore[arg-type]


def gaussian(rng: np.random.Generator, sigma: object, size: object = None):
    """Continuous N(0, sigma^2), float64. BASELINE ONLY (float noise leaks like the float Laplace,
    Mironov 2012); use :func:`discrete_gaussian` for anything that must be private."""
    _check_rng(rng)
    check_positive("sigma", sigma)
    return _run(_kernels._fill_gaussian, rng, (float(sigma),), size, np.float64)  # type: ignore[arg-type]
