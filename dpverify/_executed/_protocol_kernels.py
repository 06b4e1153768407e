"""The distributed protocol P = (R, S, A) of Algorithm 1 (Chowdhury & Zhou, ICLR 2023), per user.

- R (local randomizer): xhat = floor(x g) + Bernoulli(x g - floor(x g)); y = (xhat + eta) mod m,
  eta the user's own noise: a Polya difference gamma+ - gamma-, gamma+- ~ Polya(1/n, e^{-eps/g})
  (Theorem 1), Skellam Sk(0, g^2/(n eps^2)) (Theorem 2), discrete Gaussian N_Z(0, g^2/(n eps^2))
  (Theorem 4), discrete Laplace Lap_Z(b) (App. H.2, Algorithm 4: the local model; with no
  modulus, the float-safe local curator of ``dpverify._bandits._ucb``), or none (central variant:
  the server adds the noise, see :func:`aggregate_views`).
- S (secure aggregation): yhat = (sum_i y_i) mod m; the server sees yhat only.
- A (analyzer): z = (yhat - m)/g if yhat > n g + tau (underflow correction), else z = yhat/g.

:func:`server_views` simulates the server's view yhat of many independent runs with every user's
randomness drawn (the deployment path); :func:`aggregate_views` draws the summed noise once
(Lap_Z(g/eps) for Theorem 1 by infinite divisibility, Sk(0, g^2/eps^2) for Theorem 2), which is the
same law of the view; it is refused for the discrete Gaussian, whose sum is not discrete Gaussian.

Exactness. The randomised rounding Bernoulli(f) is exact for the float f = x g - floor(x g) (a
dyadic rational): the first 53 random bits decide unless they tie with f's first 53 bits, and a tie
draws more. Sums are reduced modulo m after every user (0 <= acc, y < m), so int64 never
overflows when m <= 2**62; the theorems give m = n g + 2 tau + 1 < 2**47 for n <= 2**24,
g = ceil(s eps sqrt(n)) with s <= 100, eps <= 10. The wrappers refuse m > 2**62.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from numbers import Integral
from typing import Any

import numba
import numpy as np
from numba.np.random.generator_core import next_double

from accounting import AccountingError
from accounting.internal import check_nonnegative, check_positive

from . import _inversion
from . import _kernels as K
from ._kinds import NoiseKind
from ._samplers import _MAX_SKELLAM_VARIANCE, _check_polya, _check_rng, _scale, as_rational, discrete_gaussian_range

__all__ = [
    "NOISE_KINDS",
    "aggregate_views",
    "aggregate_views_of_sum",
    "analyze",
    "analyzer_estimates",
    "laplace_messages",
    "randomize",
    "secure_aggregate",
    "server_views",
]

#: Per-user noise of the randomizer R, by theorem: "polya" (1), "skellam" (2),
#: "discrete_gaussian" (4), "discrete_laplace" (App. H.2, Lap_Z(scale)), "none" (central variant):
#: the names of :class:`~dpverify._executed._kinds.NoiseKind`, which the wrappers below take (or a name, parsed
#: at their door); the kernels take its ``code``.
NOISE_KINDS = NoiseKind.names()
_MAX_M = 1 << 62


# ------------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _bernoulli_dyadic(bits, f):
    """Bernoulli(f) for a float f in [0, 1), exactly: f is a dyadic rational (``bits``: the
    generator's bit generator, see ``_kernels``)."""
    while True:
        scaled = f * K.TWO53  # exact: a power-of-two scaling
        head = math.floor(scaled)
        w = next_double(bits) * K.TWO53
        if w != head:
            return w < head
        # U's first 53 bits equal f's: compare the next 53 bits with the rest of f.
        f = scaled - head


@numba.njit(cache=True)
def _user_noise(bits, word, left, kind, r, beta, p0, q1, p00, c1, c2, p, q, t, ymax, tbits, vmax):
    """eta for one user, and the threaded bit buffer of the exact samplers (every kind but the
    Skellam, which draws numpy's Poisson from the Generator: the callers draw it)."""
    if kind == 1:
        return K._polya_difference(bits, r, beta, p0, q1, p00, c1, c2), word, left
    if kind == 3:
        return K._discrete_gaussian(bits, word, left, p, q, t, ymax, tbits, vmax)
    if kind == 4:  # Lap_Z(t/q); the curator's hot path (laplace_messages) draws it in blocks instead
        return K._discrete_laplace(bits, word, left, q, t, tbits, vmax)
    return np.int64(0), word, left


@numba.njit(cache=True)
def _randomize(rng, xg, m, kind, r, beta, half_mu, p, q, t, ymax, out):
    """R for every user: out[i] = y_i = (xhat_i + eta_i) mod m, from xg[i] = x_i g; m = 0: no
    modulus, out[i] = xhat_i + eta_i (the local model without secure aggregation)."""
    bits = rng.bit_generator
    p0, q1, p00, c1, c2 = K._polya_difference_constants(r, beta)
    tbits = K._bit_length(t)
    vmax = K._vmax(t)
    word = np.int64(0)
    left = 0
    for i in range(xg.size):
        head = math.floor(xg[i])
        xhat = np.int64(head)
        if xg[i] != head and _bernoulli_dyadic(bits, xg[i] - head):
            xhat += 1
        if kind == 2:
            eta = K._skellam(rng, half_mu)
        else:
            eta, word, left = _user_noise(bits, word, left, kind, r, beta, p0, q1, p00, c1, c2, p, q, t, ymax, tbits, vmax)
        out[i] = xhat + eta if m == 0 else (xhat + eta) % m


#: random bits per randomised rounding from the bit buffer: a tie with the fraction's first bits
#: (probability 2^-8) goes on with fresh draws, so the law is exact; 6 roundings per 53-bit draw
ROUNDING_BITS = 8


@numba.njit(cache=True, inline="always")
def _round(bits, word, left, xg):
    """(floor(xg) + Bernoulli(xg - floor(xg)), word, left) exactly, for |xg| < 2^52: with X =
    floor(xg 2^8) (exact: a power-of-two scaling), floor(xg) = X >> 8 and the fraction's first 8 bits
    are X & 255; 8 uniform bits w round up when w < X & 255, and a tie (w equal to them) goes on with
    fresh draws against the rest of the fraction. Branch-free but for the tie: the rewards' on- and
    off-grid values alternate at random, and a mispredicted branch cost more than the 8 bits."""
    scaled = xg * 256.0
    big = math.floor(scaled)
    x = np.int64(big)
    w, word, left = K._take_bits(bits, word, left, ROUNDING_BITS)
    low = x & 255
    xhat = (x >> 8) + (1 if w < low else 0)
    if w == low and scaled != big and _bernoulli_dyadic(bits, scaled - big):
        xhat += 1
    return xhat, word, left


@numba.njit(cache=True)
def _laplace_messages(rng, xg, m, c, guide, prm, gmax, key, out):
    """The float-safe curator's R for every user: out[i] = xhat_i + Lap_Z(b) (mod m unless m = 0).
    The noise is drawn first, in one block (``_kernels._discrete_laplace_block``): the users' noises
    and roundings are independent, so their order in the stream does not change the law."""
    bits = rng.bit_generator
    word, left = K._discrete_laplace_block(bits, np.int64(0), 0, c, guide, prm, gmax, key, out)
    for i in range(xg.size):
        xhat, word, left = _round(bits, word, left, xg[i])
        out[i] = xhat + out[i] if m == 0 else (xhat + out[i]) % m


@numba.njit(cache=True)
def _noisy_rounded_sums(rng, x, g, c, guide, prm, gmax, key, out):
    """out[j] = Lap_Z(b) + sum_i xhat_i for each of out.size independent runs, xhat_i the randomised
    rounding of clamp(x_i, 0, 1) g (``_round``), in one pass per run (no clamped or scaled copy of the
    batch; the noise first, in one block); returns the index of the first NaN, or -1."""
    bits = rng.bit_generator
    word, left = K._discrete_laplace_block(bits, np.int64(0), 0, c, guide, prm, gmax, key, out)
    for j in range(out.size):
        total = out[j]
        for i in range(x.size):
            v = x[i]
            if math.isnan(v):
                return i
            xhat, word, left = _round(bits, word, left, min(max(v, 0.0), 1.0) * g)
            total += xhat
        out[j] = total
    return -1


@numba.njit(cache=True)
def _split_bernoulli(w, nbits, f, bits):
    """Bernoulli(f) from ``nbits`` uniform bits w, exactly: a tie with f's first bits (probability
    2**-nbits) is resolved by fresh draws, so the law is that of the float f."""
    scaled = f * float(np.int64(1) << nbits)
    head = np.int64(scaled)
    if w != head:
        return w < head
    return _bernoulli_dyadic(bits, scaled - head)


@numba.njit(cache=True)
def _server_views(rng, xg, m, kind, r, beta, half_mu, p, q, t, ymax, out):
    """out[j] = yhat of run j: R for every user, then S, reducing mod m after every user.

    Reads only xg[i] = x_i g (8 bytes a user: at n = 2**22 the loop streams from memory)."""
    bits = rng.bit_generator
    p0, q1, p00, c1, c2 = K._polya_difference_constants(r, beta)
    tbits = K._bit_length(t)
    vmax = K._vmax(t)
    word = np.int64(0)
    left = 0
    n = xg.size
    for j in range(out.size):
        acc = np.int64(0)
        for i in range(n):
            head = math.floor(xg[i])
            frac = xg[i] - head  # exact for xg < 2**53
            y = np.int64(head)
            if kind == 1:
                # Theorem 1 hot path, one 53-bit word per user: 26 bits decide the rounding and
                # 27 bits the event "gamma+ = gamma- = 0" (probability p00, nearly 1), each exact.
                w = K._uint53(bits)
                if frac != 0.0 and _split_bernoulli(w >> 27, 26, frac, bits):
                    y += 1
                if not _split_bernoulli(w & 0x7FFFFFF, 27, p00, bits):
                    y += K._polya_difference_nonzero(bits, r, beta, q1, c1, c2)
            else:
                if frac != 0.0 and _bernoulli_dyadic(bits, frac):
                    y += 1
                if kind == 2:
                    y += K._skellam(rng, half_mu)
                elif kind != 0:
                    eta, word, left = _user_noise(bits, word, left, kind, r, beta, p0, q1, p00, c1, c2, p, q, t, ymax, tbits, vmax)
                    y += eta
            if y < 0 or y >= m:
                y %= m  # Python semantics in numba: the result is in [0, m)
            acc += y
            if acc >= m:
                acc -= m
        out[j] = acc


@numba.njit(cache=True)
def _aggregate_views(rng, base_sum, frac, m, kind, s, t, half_mu, out):
    """out[j] = (sum xhat + Z) mod m with Z drawn once: Lap_Z(t/s) (kind 1) or Sk(0, 2 half_mu) (2)."""
    bits = rng.bit_generator
    tbits = K._bit_length(t)
    vmax = K._vmax(t)
    word = np.int64(0)
    left = 0
    for j in range(out.size):
        total = base_sum
        for i in range(frac.size):
            if _bernoulli_dyadic(bits, frac[i]):
                total += 1
        if kind == 1:
            z, word, left = K._discrete_laplace(bits, word, left, s, t, tbits, vmax)
        elif kind == 2:
            z = K._skellam(rng, half_mu)
        else:
            z = np.int64(0)
        out[j] = (total % m + z % m) % m


# ------------------------------------------------------------------------------------------------
# Validation shared by the wrappers
# ------------------------------------------------------------------------------------------------


def _check_int(name: str, value: object, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or not minimum <= value <= maximum:
        raise AccountingError(name, value, f"an integer in [{minimum}, {maximum}]")
    return int(value)


@numba.njit(cache=True)
def _scale_checked(x, g, out):
    # One pass: x g into out, and the index of the first reward outside [0, 1] (NaN included), or -1.
    for i in range(x.size):
        v = x[i]
        if not (v >= 0.0 and v <= 1.0):
            return i
        out[i] = v * g
    return -1


def _encode(x: object, g: int) -> np.ndarray:
    """xg = x g as float64 (the kernels split it into floor(x g) and its exact fractional part)."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise AccountingError("x", f"array of shape {arr.shape}", "a non-empty 1-d array of rewards in [0, 1]")
    out = np.empty_like(arr)
    bad = _scale_checked(arr, float(g), out)
    if bad >= 0:
        raise AccountingError("x", f"array containing {arr[bad]!r}", "rewards in [0, 1] (no NaN)")
    return out


def _noise_params(noise: object, eps: object, g: int, n: int, sigma2: object = None, scale: object = None):
    """Kernel arguments (kind, r, beta, half_mu, p, q, t, ymax) of the per-user noise.

    ``sigma2`` (discrete Gaussian only) gives the per-user variance directly, instead of
    g^2/(n eps^2): a protocol whose exact variance the sampler cannot take passes the nearest
    larger one it can (``DistributedProtocol`` for Theorem 4). ``scale`` (discrete Laplace only,
    required): Lap_Z(scale) per user, a rational scale = t/q."""
    noise = NoiseKind.parse(noise, "noise")
    kind = noise.code
    # placeholders for the unused parameters; beta = 1/2 keeps the (unused) Polya constants finite
    r, beta, half_mu, p, q, t, ymax = 1.0, 0.5, 0.0, 1, 1, 1, 0
    if noise is NoiseKind.NONE:
        return kind, r, beta, half_mu, p, q, t, ymax
    if noise is NoiseKind.DISCRETE_LAPLACE:
        if scale is None:
            raise AccountingError("scale", scale, "a rational scale b > 0 (required for noise='discrete_laplace')")
        q, t = _scale("scale", scale)
        return kind, r, beta, half_mu, p, q, t, ymax
    if noise is NoiseKind.DISCRETE_GAUSSIAN and sigma2 is not None:
        p, q, t, ymax = discrete_gaussian_range(sigma2)
        return kind, r, beta, half_mu, p, q, t, ymax
    if eps is None:
        raise AccountingError("eps", eps, f"a privacy parameter eps > 0 (required for noise={noise!r})")
    if noise is NoiseKind.DISCRETE_GAUSSIAN:
        eps_q = as_rational("eps", eps, "a rational number > 0")
        if eps_q <= 0:
            raise AccountingError("eps", eps, "a rational number > 0")
        sigma2 = Fraction(g * g) / (n * eps_q * eps_q)
        p, q, t, ymax = discrete_gaussian_range(sigma2)
        return kind, r, beta, half_mu, p, q, t, ymax
    eps_f = float(check_positive("eps", eps))
    if noise is NoiseKind.POLYA:
        try:
            r, beta = _check_polya(1.0 / n, math.exp(-eps_f / g))
        except AccountingError:
            raise AccountingError("eps", eps, f"eps > 0 with Polya(1/n, e^{{-eps/g}}) representable (n={n}, g={g})") from None
    else:
        half_mu = g * g / (2.0 * n * eps_f * eps_f)
        if not half_mu <= _MAX_SKELLAM_VARIANCE / 2:
            raise AccountingError("eps", eps, f"eps > 0 with per-user variance g^2/(n eps^2) <= 2**62 (n={n}, g={g})")
    return kind, r, beta, half_mu, p, q, t, ymax


def _protocol_args(x, g, m):
    g = _check_int("g", g, 1, 1 << 52)
    if m is None:  # no modulus (the local model's integer message); the kernels take m = 0
        return g, 0, _encode(x, g)
    m = _check_int("m", m, 1, _MAX_M)
    xg = _encode(x, g)
    if xg.size * g >= m:
        # xhat sums to at most n g; a smaller m makes the analyzer's correction meaningless.
        raise AccountingError("m", m, f"an integer > n g = {xg.size * g} (the theorems use m = n g + 2 tau + 1)")
    return g, m, xg


# ------------------------------------------------------------------------------------------------
# Public wrappers
# ------------------------------------------------------------------------------------------------


def randomize(rng: np.random.Generator, x, g: int, m: int | None, noise: NoiseKind | str = NoiseKind.NONE, *, eps=None, sigma2=None, scale=None) -> np.ndarray:
    """R applied to every user: y_i = (xhat_i + eta_i) mod m, an int64 array of length n = len(x).

    ``noise`` picks eta by theorem ("polya": gamma+ - gamma-, Polya(1/n, e^{-eps/g}); "skellam":
    Sk(0, g^2/(n eps^2)); "discrete_gaussian": N_Z(0, g^2/(n eps^2)) with eps rational, or
    N_Z(0, sigma2) if ``sigma2`` is given; "discrete_laplace": Lap_Z(scale), App. H.2; "none").
    ``m=None``: no modulus, y_i = xhat_i + eta_i (the local model's message without secure
    aggregation: the float-safe local curator).
    """
    _check_rng(rng)
    g, m, xg = _protocol_args(x, g, m)
    noise = NoiseKind.parse(noise, "noise")
    kind, r, beta, half_mu, p, q, t, ymax = _noise_params(noise, eps, g, xg.size, sigma2, scale)
    out = np.empty(xg.size, dtype=np.int64)
    if noise is NoiseKind.DISCRETE_LAPLACE:
        _laplace_messages(rng, xg, m, *_laplace_tables(scale), out)
    else:
        _randomize(rng, xg, m, kind, r, beta, half_mu, p, q, t, ymax, out)
    return out


def secure_aggregate(y, m: int) -> int:
    """S: yhat = (sum_i y_i) mod m, exact (Python integers)."""
    m = _check_int("m", m, 1, _MAX_M)
    arr = np.asarray(y)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise AccountingError("y", f"array of dtype {arr.dtype} and shape {arr.shape}", "a 1-d integer array")
    if arr.size and (arr.min() < 0 or arr.max() >= m):
        raise AccountingError("y", "array with entries outside [0, m)", f"messages in [0, {m})")
    # Reduce int64 partial sums in blocks so no block sum can overflow.
    block = max(1, ((1 << 63) - 1) // m)
    total = 0
    for start in range(0, arr.size, block):
        total = (total + int(arr[start : start + block].sum(dtype=np.int64))) % m
    return total


def analyze(yhat, n: int, g: int, m: int, tau: int, *, underflow_correction: bool = True):
    """A: z = (yhat - m)/g if yhat > n g + tau, else yhat/g (scalar or array of views).

    ``underflow_correction=False`` always returns yhat/g: a utility bug (a negative total noise
    wraps to a huge estimate) that leaves the view, and so privacy, unchanged.
    """
    n = _check_int("n", n, 1, _MAX_M)
    g = _check_int("g", g, 1, 1 << 52)
    m = _check_int("m", m, 1, _MAX_M)
    tau = _check_int("tau", tau, 0, _MAX_M)
    arr = np.asarray(yhat, dtype=np.int64)
    z = arr.astype(np.float64)
    if underflow_correction:
        z = np.where(arr > n * g + tau, z - m, z)
    z = z / g
    return z.item() if z.ndim == 0 else z


def server_views(rng: np.random.Generator, x, g: int, m: int, reps: int, noise: NoiseKind | str = NoiseKind.NONE, *, eps=None, sigma2=None, scale=None) -> np.ndarray:
    """The server's view yhat = S(R(x_1), ..., R(x_n)) of ``reps`` independent runs, per user
    (every user's rounding and noise drawn, reduced mod m as it goes). int64 array of length reps.
    ``eps``/``sigma2``/``scale``: as for :func:`randomize`."""
    _check_rng(rng)
    if m is None:
        raise AccountingError("m", m, "an integer modulus m > n g (secure aggregation sums mod m)")
    g, m, xg = _protocol_args(x, g, m)
    reps = _check_int("reps", reps, 0, _MAX_M)
    kind, r, beta, half_mu, p, q, t, ymax = _noise_params(noise, eps, g, xg.size, sigma2, scale)
    out = np.empty(reps, dtype=np.int64)
    _server_views(rng, xg, m, kind, r, beta, half_mu, p, q, t, ymax, out)
    return out


def analyzer_estimates(
    rng: np.random.Generator,
    x,
    g: int,
    m: int,
    tau: int,
    reps: int,
    noise: NoiseKind | str = NoiseKind.NONE,
    *,
    eps=None,
    underflow_correction: bool = True,
) -> np.ndarray:
    """A(S(R(x_1..x_n))) for ``reps`` runs: estimates z of sum_i x_i, per-user path."""
    views = server_views(rng, x, g, m, reps, noise, eps=eps)
    n = np.asarray(x).size
    return analyze(views, n, g, m, tau, underflow_correction=underflow_correction)


def aggregate_views(rng: np.random.Generator, x, g: int, m: int, reps: int, total_noise: NoiseKind | str, *, scale=None, variance=None) -> np.ndarray:
    """The server's view (sum_i xhat_i + Z) mod m with the summed noise Z drawn once per run.

    ``total_noise="discrete_laplace"``: Z ~ Lap_Z(scale) (Theorem 1 with scale = g/eps, and the
    central variant CDP-SE); ``"skellam"``: Z ~ Sk(0, variance) (Theorem 2, variance g^2/eps^2);
    ``"none"``. The same law as :func:`server_views` with the matching per-user noise (tested).
    There is no discrete Gaussian option: a sum of discrete Gaussians is not discrete Gaussian.
    """
    _check_rng(rng)
    g, m, xg = _protocol_args(x, g, m)
    reps = _check_int("reps", reps, 0, _MAX_M)
    kind, s, t, half_mu = _total_noise_args(total_noise, scale, variance)
    out = np.empty(reps, dtype=np.int64)
    base = np.floor(xg)
    frac = xg - base
    _aggregate_views(rng, int(base.astype(np.int64).sum()) % m, frac[frac != 0.0], m, kind, s, t, half_mu, out)
    return out


def aggregate_views_of_sum(rng: np.random.Generator, xhat_sum: int, m: int, reps: int, total_noise: NoiseKind | str, *, scale=None, variance=None) -> np.ndarray:
    """(xhat_sum + Z) mod m for ``reps`` independent draws of the summed noise Z (as :func:`aggregate_views`).

    For callers that already hold the users' rounded sum sum_i xhat_i (the bandit runner's
    aggregate path draws its histogram); the noise laws and their exactness are the same.
    """
    _check_rng(rng)
    m = _check_int("m", m, 1, _MAX_M)
    xhat_sum = _check_int("xhat_sum", xhat_sum, 0, m - 1)
    reps = _check_int("reps", reps, 0, _MAX_M)
    kind, s, t, half_mu = _total_noise_args(total_noise, scale, variance)
    out = np.empty(reps, dtype=np.int64)
    _aggregate_views(rng, xhat_sum, _NO_FRACTIONS, m, kind, s, t, half_mu, out)
    return out


_NO_FRACTIONS = np.empty(0, dtype=np.float64)

#: compiled entry points, by kernel, for the argument types of the hot callers below
_ENTRIES: dict = {}


def _call_compiled(kernel, args: tuple):
    """``kernel(*args)``, through its compiled entry point after the first call.

    numba's per-call type dispatch on a ``Generator`` argument costs about as much as a small
    kernel's work (measured ~30 us), so the hot callers (one call per release or per curator
    chunk, always with the same argument types) call the entry point of the first call's types
    directly. The entry point is keyed by the arguments' Python types and array layouts, since
    an entry point called with other types would reinterpret them unchecked. The dispatcher is
    used whenever that entry point is not available: the draws are the same either way (tested)."""
    shape = (kernel, *(_layout(a) for a in args))
    entry = _ENTRIES.get(shape)
    if entry is not None:
        return entry(*args)
    result = kernel(*args)
    try:
        key = tuple(kernel.typeof_pyval(a) for a in args)
        _ENTRIES[shape] = kernel.overloads[key].entry_point
    except (AttributeError, KeyError, TypeError):  # another numba: keep the dispatcher
        _ENTRIES[shape] = kernel
    return result


def _layout(value: Any) -> Any:
    """What decides numba's type of an argument: an array's dtype, rank, contiguity and
    writability; any other value's Python type."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.ndim, value.flags.c_contiguous, value.flags.writeable)
    return type(value)


def draw_summed_noise(rng: np.random.Generator, xhat_sum: int, m: int, kind: int, s: int, t: int, half_mu: float, out: np.ndarray) -> int:
    """One view (xhat_sum + Z) mod m, arguments already validated (see :func:`aggregate_views_of_sum`).

    The bandit runner's aggregate path calls this once per release (through the compiled entry
    point, :func:`_call_compiled`)."""
    _call_compiled(_aggregate_views, (rng, xhat_sum, _NO_FRACTIONS, m, kind, s, t, half_mu, out))
    return int(out[0])


def _laplace_tables(scale) -> tuple:
    """The inversion tables of Lap_Z(scale), validated and built once per scale (hot callers: per
    release, per curator chunk)."""
    return _laplace_tables_of(scale if type(scale) is Fraction else Fraction(scale))


@functools.lru_cache(maxsize=256)
def _laplace_tables_of(scale: Fraction) -> tuple:
    _, _, _, _, _, q, t, _ = _noise_params(NoiseKind.DISCRETE_LAPLACE, None, 1, 1, None, scale)
    return _inversion.laplace_tables(q, t)


def laplace_messages(rng: np.random.Generator, x, g: int, scale) -> np.ndarray:
    """y_i = xhat_i + Lap_Z(scale) for rewards x_i in [0, 1], no modulus: :func:`randomize` with
    ``m=None, noise="discrete_laplace"`` (the same draws), for the float-safe local curator, which
    calls it once per chunk of users: the validated kernel arguments and the sampler's tables are
    cached by (g, scale) and the kernel is called through its compiled entry point."""
    _check_rng(rng)
    g = _check_int("g", g, 1, 1 << 52)
    xg = _encode(x, g)
    out = np.empty(xg.size, dtype=np.int64)
    _call_compiled(_laplace_messages, (rng, xg, 0, *_laplace_tables(scale), out))
    return out


def noisy_rounded_sums(rng: np.random.Generator, x, g: int, reps: int, scale) -> np.ndarray:
    """sum_i xhat_i + Z for ``reps`` independent runs: xhat_i = floor(x_i g) + Bernoulli(frac(x_i g)), x_i
    clamped to [0, 1], Z ~ Lap_Z(scale) (exact inversion): the float-safe central Laplace's integer
    release (the law of :func:`server_views` with no noise and a modulus above every sum, plus one
    discrete Laplace). One kernel call per release, through its compiled entry point. NaN is refused."""
    _check_rng(rng)
    arr = np.ascontiguousarray(x, dtype=np.float64)  # the compiled entry point takes C-contiguous arrays only
    if arr.ndim != 1 or arr.size == 0:
        raise AccountingError("x", f"array of shape {arr.shape}", "a non-empty 1-d array of rewards")
    g = _check_int("g", g, 1, 1 << 52)
    reps = _check_int("reps", reps, 0, _MAX_M)
    if arr.size * g >= _MAX_M:
        raise AccountingError("x", f"{arr.size} rewards", f"a batch with n g < 2**62 (g = {g})")
    out = np.empty(reps, dtype=np.int64)
    bad = _call_compiled(_noisy_rounded_sums, (rng, arr, float(g), *_laplace_tables(scale), out))
    if bad >= 0:
        raise AccountingError("rewards", "an array containing NaN", "rewards (NaN has no clamped value)")
    return out


@numba.njit(cache=True)
def _add_box_codes(rng, y, scale, g, out):
    # out[i] += the randomised rounding of clamp(y[i] scale, -g, g) (``_round``); one pass, no copies
    bits = rng.bit_generator
    word = np.int64(0)
    left = 0
    for i in range(y.size):
        xhat, word, left = _round(bits, word, left, min(max(y[i] * scale, -g), g))
        out[i] += xhat


def add_box_codes(rng: np.random.Generator, y: np.ndarray, scale: float, g: int, out: np.ndarray) -> None:
    """out += xhat elementwise, xhat = floor(x) + Bernoulli(x - floor(x)) exactly, x = clamp(y scale,
    -g, g): the DP-DPE float-safe encoder into {-g, ..., g} (``dpverify._bandits.linear._privatizers``;
    the clamp keeps float rounding inside the box). ``y`` float64 and ``out`` int64 of the same shape,
    both C-contiguous (the compiled entry point takes them flat)."""
    _check_rng(rng)
    if y.shape != out.shape or y.dtype != np.float64 or out.dtype != np.int64 or not (y.flags.c_contiguous and out.flags.c_contiguous):
        raise AccountingError("y", f"{y.dtype} {y.shape} into {out.dtype} {out.shape}", "C-contiguous float64 reports and int64 codes of one shape")
    _call_compiled(_add_box_codes, (rng, y.reshape(-1), float(scale), float(g), out.reshape(-1)))


def _total_noise_args(total_noise: NoiseKind | str, scale=None, variance=None) -> tuple[int, int, int, float]:
    """Kernel arguments (kind, s, t, half_mu) of the one-draw summed noise (``total_noise``: a
    :class:`~dpverify._executed._kinds.NoiseKind` with a ``summed_code``, or its name)."""
    summed = NoiseKind.summed()
    try:
        noise = NoiseKind.parse(total_noise, "total_noise")
    except AccountingError:
        noise = None
    if noise is None or noise.summed_code is None:
        hint = "use server_views for per-user discrete Gaussian noise" if noise is NoiseKind.DISCRETE_GAUSSIAN else ""
        raise AccountingError("total_noise", total_noise, f"one of {tuple(k.value for k in summed)}", hint)
    kind = noise.summed_code
    s, t, half_mu = 1, 1, 0.0
    if noise is NoiseKind.DISCRETE_LAPLACE:
        s, t = _scale("scale", scale)
    elif noise is NoiseKind.SKELLAM:
        check_nonnegative("variance", variance)
        if variance > _MAX_SKELLAM_VARIANCE:  # type: ignore[operator]
            raise AccountingError("variance", variance, "a real number in [0, 2**62]")
        half_mu = 0.5 * float(variance)  # type: ignore[arg-type]
    return kind, s, t, half_mu
