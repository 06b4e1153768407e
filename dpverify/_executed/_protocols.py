"""The papers' batch protocols P = (R, S, A), with their parameters, guarantees and tail constants.

ICLR 2023 (Chowdhury & Zhou), Algorithm 1 with

- :func:`dist_dp_protocol` — Theorem 1: Polya-difference noise per user, SecAgg, pure DP;
- :func:`dist_rdp_protocol` — Theorem 2: Skellam noise per user (scale s), SecAgg, RDP;
- :func:`dist_cdp_protocol` — Theorem 4: discrete Gaussian per user (scale s), SecAgg, zCDP;
- :func:`central_dp_protocol` — Theorem 5 (App. H.1, CDP-SE): users send xhat, the analyzer
  adds one Lap_Z(g/eps);
- :func:`local_dp_protocol` — Theorem 6 (App. H.2, LDP-SE): every user adds Lap_Z(g/eps);
- :func:`central_laplace_protocol` — DP-SE's privatizer (Sajed & Sheffet 2019), float-safe by
  default (:class:`CentralGridLaplaceProtocol`): every reward clamped and encoded on the grid 1/g by
  randomised rounding, g = 2^16, the integer sum plus one exact Lap_Z(g/eps), divided by g (App.
  H.1's central model without the modulus); ``noise="idealised"`` gives the paper's reward sum plus
  one continuous float Laplace(1/eps) (:class:`CentralLaplaceIdealised`), kept to reproduce the
  papers and labelled "idealised: not DP in floating point" (float Laplace leaks through its
  low-order bits, Mironov 2012).

Each protocol's per-user guarantee at batch size n is an ``accounting`` mechanism — the same
object the auditor tests and the ledger spends: DiscreteLaplace(g/eps, g) for Theorems 1, 5, 6,
Skellam(g^2/eps^2, g) for Theorem 2, DiscreteGaussianSum(n, g/(eps sqrt(n)), g) for Theorem 4 (as
``WithinTotalVariation(..., n 2^-100)``: the exact samplers' truncation, carried beside its zCDP and
paid in delta by every (eps, delta) conversion, ``accounting._core._total_variation``),
GridDiscreteLaplace(g, g/eps) for the float-safe DP-SE, Laplace(1/eps, 1) for the idealised one.

Assumption 1 constants (sigma, h): with probability >= 1 - 2p the batch noise in reward units,
n_a(b) = A(yhat) - sum_i r_i, satisfies |n_a(b)| <= sigma sqrt(log(2/p)) + h log(2/p). We derive
explicit constants (the paper leaves them in O(.)); the tail verifier checks them exactly:

- rounding: sum_i (xhat_i - g r_i) is a sum of n independent zero-mean variables each in an
  interval of length 1, so by Hoeffding |.| <= sqrt(n log(2/p) / 2) w.p. >= 1 - p: a term
  sqrt(n/2)/g in sigma for every protocol that rounds;
- Theorem 1 / 5: P[|Lap_Z(b)| >= t] = 2 e^{-t/b}/(1 + e^{-1/b}) <= 2 e^{-t/b} for integer t >= 1,
  so |Z| <= b log(2/p) w.p. >= 1 - p; with b = g/eps that is h = 1/eps. When |Z| <= tau the
  analyzer recovers sum xhat + Z exactly (no wrap-around), and tau >= b log(2/p);
- Theorem 2: Proposition 1, |Sk(0, mu)| <= 2 sqrt(mu) sqrt(log(2/p)) + sqrt(2) log(2/p): sigma gets
  2/eps, h = sqrt(2)/g;
- Theorem 4: a sum of n discrete Gaussians N_Z(0, s2) is n s2-sub-Gaussian (Canonne et al. 2020,
  Cor. 9), so |Z| <= (g/eps) sqrt(2 log(2/p)): sigma gets sqrt(2)/eps, h = 0;
- Theorem 6: the sum of n iid Lap_Z(b) has variance n v_b, v_b = 2q/(1-q)^2 with q = e^{-1/b};
  we claim Bernstein's form sqrt(2 n v_b log(2/p)) + 2 b log(2/p) (the paper's constant c left
  explicit as this choice) and use it for tau too; the tail verifier checks it exactly;
- DP-SE, idealised: |Laplace(1/eps)| <= log(1/p)/eps w.p. 1 - p exactly: sigma = 0, h = 1/eps (no rounding).
- DP-SE, float-safe: rounding as above (sigma = sqrt(n/2)/g, below 0.011 for n <= 10^6 at g = 2^16)
  and P[|Lap_Z(b)| >= k] = 2 e^{-k/b}/(1 + e^{-1/b}) for integer k >= 1, so
  P[|Z|/g > log(2/p)/eps'] <= p/(1 + e^{-1/b}) <= p with eps' = g/b: h = 1/eps'.
"""

from __future__ import annotations

import abc
import functools
import math
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

import accounting as acc
from accounting import WithinTotalVariation, AccountingError
from accounting.internal import check_positive, check_positive_int, check_probability

from . import _noise
from . import _protocol_kernels as pk
from . import _samplers
from ._kinds import BatchNoise, NoiseKind, ProtocolKind
from ._noise_mechanisms import sigma_at_most
from ._privatizer import BatchProtocol

__all__ = [
    "DistributedProtocol",
    "ProtocolKind",
    "CentralGridLaplaceProtocol",
    "CentralLaplaceIdealised",
    "CentralLaplaceProtocol",
    "SCALED_KINDS",
    "central_dp_protocol",
    "central_laplace_protocol",
    "dist_cdp_protocol",
    "dist_dp_protocol",
    "dist_rdp_protocol",
    "local_dp_protocol",
]

#: the kinds whose theorem takes the scale s (Theorems 2 and 4; ``ProtocolKind.scaled``); the others ignore it
SCALED_KINDS = tuple(kind for kind in ProtocolKind if kind.scaled)
_PATHS = ("per-user", "aggregate")


@dataclass(frozen=True)
class BatchParameters:
    """g, tau, m of one batch of n users, and the noise the theorem prescribes.

    The noise is one of three quantities, each an exact positive rational under its own name;
    exactly one is set (the others None), by the protocol's kind:

    - ``scale``: the Lap_Z scale b (dist-dp, cdp: of the summed noise; ldp: of each user's);
    - ``total_variance``: the variance of the summed Skellam noise (dist-rdp);
    - ``per_user_variance``: the variance of each user's discrete Gaussian (dist-cdp).
    """

    n: int
    g: int
    tau: int
    m: int
    scale: Fraction | None = None
    total_variance: Fraction | None = None
    per_user_variance: Fraction | None = None

    def __post_init__(self) -> None:
        named = {"scale": self.scale, "total_variance": self.total_variance, "per_user_variance": self.per_user_variance}
        given = [k for k, v in named.items() if v is not None]
        if len(given) != 1:
            raise AccountingError(
                "noise", given or None, "exactly one of scale, total_variance, per_user_variance (the others None)"
            )
        value = named[given[0]]
        if not isinstance(value, Fraction) or value <= 0:
            raise AccountingError(given[0], value, "an exact rational (Fraction) > 0")

    @property
    def noise(self) -> Fraction:
        """Deprecated: whichever of ``scale``, ``total_variance``, ``per_user_variance`` is set."""
        warnings.warn(
            "BatchParameters.noise is deprecated: use .scale (Lap_Z scale b), .total_variance (Skellam) "
            "or .per_user_variance (discrete Gaussian)",
            DeprecationWarning,
            stacklevel=2,
        )
        for value in (self.scale, self.total_variance, self.per_user_variance):
            if value is not None:
                return value
        raise AssertionError("unreachable: validated on construction")

    @property
    def bits_per_user(self) -> int:
        """Communication per user before S: one element of Z_m."""
        return max(1, (self.m - 1).bit_length())  # ceil(log2 m) in integers


@dataclass(frozen=True)
class DistributedProtocol(BatchProtocol):
    """A SecAgg batch protocol of the ICLR paper (distributed, central or local variant).

    ``p`` is the confidence used in tau (and in Assumption 1); ``tau_p`` overrides the p used in
    tau only (the theorems set p = 1/T, the simulations p = 0.1). ``epsilon`` may be a Fraction:
    the exact samplers need the noise scale g/eps as a ratio of int64s, so pass eps = 1/10 as
    ``Fraction(1, 10)`` (a float 0.1 is a dyadic rational with a 2^55 denominator).

    ``kind``: a :class:`ProtocolKind` or its name ("dist-dp", "dist-rdp", "dist-cdp", "cdp", "ldp"),
    parsed once here; the attribute is always the :class:`ProtocolKind`.
    """

    kind: ProtocolKind
    epsilon: float
    p: float
    s: float = 1.0
    tau_p: float | None = None
    underflow_correction: bool = True
    name: str = field(init=False, default="")
    #: this object's parameters by n (a release asks several times; hashing the frozen fields for
    #: the shared cache each time costs more than the rest of an aggregate-path release)
    _by_n: dict = field(init=False, default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ProtocolKind.parse(self.kind, "kind"))
        check_positive("epsilon", self.epsilon)
        check_probability("p", self.p)
        check_positive("s", self.s)
        if self.s < 1:
            raise AccountingError("s", self.s, "a scale s >= 1")
        if self.tau_p is not None:
            check_probability("tau_p", self.tau_p)
        object.__setattr__(self, "name", self.kind.value)

    # ---- parameters --------------------------------------------------------------------------

    def parameters(self, n: int) -> BatchParameters:
        """The theorem's g, tau, m and noise for a batch of n users (exact).

        Cached: every release asks for them several times (guarantee, views, analyzer, radius),
        and the exact ceilings cost Arb evaluations. The protocol is frozen, so the key is stable.
        """
        found = self._by_n.get(n)
        if found is None:
            check_positive_int("n", n)
            found = self._by_n[n] = _batch_parameters(self, int(n))
        return found

    def _exact_scale(self, params: BatchParameters) -> Fraction:
        """The discrete Laplace scale b of the batch (dist-dp, cdp, ldp), which the exact sampler takes:
        g/eps, or rounded up by :meth:`_compute_parameters` (``_samplers.sampler_parameter_at_least``)."""
        return params.scale

    def _noise_epsilon(self, params: BatchParameters) -> Any:
        """The eps of the batch's discrete Laplace noise (dist-dp, cdp, ldp): eps itself, or g/b when b
        was rounded up (the per-user Polya path of dist-dp draws through e^(-eps/g) with it, so that
        both paths sum to Lap_Z(b))."""
        if params.scale == params.g / Fraction(self.epsilon):
            return self.epsilon
        return Fraction(params.g) / params.scale

    def _compute_parameters(self, n: int) -> BatchParameters:
        p_tau = self.tau_p if self.tau_p is not None else self.p
        return _BATCH_NOISE[self.kind.batch_noise].parameters(self, n, p_tau)

    # ---- privacy -----------------------------------------------------------------------------

    def mechanism(self, n: int) -> Any:
        """The per-user mechanism of one batch of n users, from the accountant (one object per n)."""
        key = ("mechanism", n)
        found = self._by_n.get(key)
        if found is None:
            found = self._by_n[key] = self._mechanism(n)
        return found

    def _mechanism(self, n: int) -> Any:
        return _BATCH_NOISE[self.kind.batch_noise].mechanism(self.parameters(n), n)

    def assumption1(self, n: int, p: float) -> tuple[float, float]:
        """(sigma, h) for which |n_a(b)| <= sigma sqrt(log(2/p)) + h log(2/p) w.p. >= 1 - 2p (module docstring)."""
        params = self.parameters(n)
        return _BATCH_NOISE[self.kind.batch_noise].assumption1(self, params, n)

    # ---- running the protocol ----------------------------------------------------------------

    def server_views(self, rewards: Any, rng: np.random.Generator, reps: int, *, path: str = "per-user") -> np.ndarray:
        """``reps`` independent server views of the batch: yhat (SecAgg) or, for ``cdp``, the
        analyzer's noisy y; int64. The local model's per-message view is :meth:`messages`."""
        if path not in _PATHS:
            raise AccountingError("path", path, f"one of {_PATHS}")
        x = np.asarray(rewards, dtype=np.float64)
        params = self.parameters(max(x.size, 1))
        kind = self.kind
        rule = _BATCH_NOISE[kind.batch_noise]
        if path == "aggregate":
            if not kind.aggregate_path:
                raise AccountingError("path", path, f"'per-user' for {kind}", rule.no_aggregate_path)
            return pk.aggregate_views(rng, x, params.g, params.m, reps, kind.summed_noise, **rule.summed_noise(self, params))
        if kind.distributed:  # each user's noise, summed by SecAgg
            return pk.server_views(rng, x, params.g, params.m, reps, kind.per_user_noise, **rule.per_user_noise(self, params))
        if kind.reveals_messages:  # the local model: the SecAgg sum of the users' noisy messages
            out = np.empty(reps, dtype=np.int64)
            for r in range(reps):
                out[r] = pk.secure_aggregate(self.messages(x, rng), params.m)
            return out
        # the central model: the users' xhat summed, the analyzer's one Lap_Z(b) added
        views = pk.server_views(rng, x, params.g, params.m, reps, NoiseKind.NONE)
        noise = _samplers.discrete_laplace(rng, self._exact_scale(params), size=reps) % params.m
        return (views + noise) % params.m

    def messages(self, rewards: Any, rng: np.random.Generator, reps: int | None = None) -> np.ndarray:
        """Local model (``ldp``): every user's message y_i = (xhat_i + Lap_Z(g/eps)) mod m.

        ``reps``: an (reps, n) array of that many independent draws of the batch's messages, with
        one kernel call for all the roundings and one for all the noise (the law of ``reps``
        calls; the run audit's transcripts draw many runs at once)."""
        if not self.kind.reveals_messages:
            raise AccountingError("kind", self.kind, "'ldp' (only the local model reveals each message)")
        x = np.asarray(rewards, dtype=np.float64)
        params = self.parameters(max(x.size, 1))
        if reps is not None:
            tiled = np.tile(x, check_positive_int("reps", reps))
            # the roundings alone: a modulus above every sum leaves each xhat_i in [0, g] as drawn
            xhat = pk.randomize(rng, tiled, params.g, tiled.size * params.g + 1, NoiseKind.NONE)
            noise = _samplers.discrete_laplace(rng, self._exact_scale(params), size=tiled.size)
            return ((xhat + noise) % params.m).reshape(reps, x.size)
        xhat = pk.randomize(rng, x, params.g, params.m, NoiseKind.NONE)
        noise = _samplers.discrete_laplace(rng, self._exact_scale(params), size=x.size)
        return (xhat + noise) % params.m

    def aggregate_resolution(self, n: int) -> int | None:
        """g for the kinds whose summed noise is one draw (dist-dp, cdp: Lap_Z(g/eps); dist-rdp:
        Sk(0, g^2/eps^2)); None for dist-cdp (a sum of discrete Gaussians is not one) and ldp."""
        return self.parameters(n).g if self.kind.aggregate_path else None

    def estimate_from_rounded_sum(self, xhat_sum: int, n: int, rng: np.random.Generator) -> float:
        """A((sum_i xhat_i + Z) mod m) with Z the summed noise drawn once: the same law as
        :meth:`estimate_sum` on the aggregate path, given the users' rounded sum (tested)."""
        key = ("aggregate", n)
        args = self._by_n.get(key)
        if args is None:  # validated once per batch size, by the kernels' own checks
            if self.aggregate_resolution(n) is None:
                return super().estimate_from_rounded_sum(xhat_sum, n, rng)
            params = self.parameters(n)
            summed = _BATCH_NOISE[self.kind.batch_noise].summed_noise(self, params)
            kind, s, t, half_mu = pk._total_noise_args(self.kind.summed_noise, **summed)
            args = self._by_n[key] = (params.m, int(kind), int(s), int(t), float(half_mu), params.g, n * params.g + params.tau)
        m, kind, s, t, half_mu, g, wrap_above = args
        if not 0 <= xhat_sum < m:
            raise AccountingError("xhat_sum", xhat_sum, f"an integer in [0, m) = [0, {m})")
        view = pk.draw_summed_noise(rng, int(xhat_sum), m, kind, s, t, half_mu, np.empty(1, dtype=np.int64))
        # the analyzer A (as pk.analyze): a view above n g + tau is a negative total wrapped mod m
        if self.underflow_correction and view > wrap_above:
            view -= m
        return view / g

    def analyze(self, views: Any, n: int) -> np.ndarray | float:
        params = self.parameters(n)
        return pk.analyze(views, n, params.g, params.m, params.tau, underflow_correction=self.underflow_correction)

    def estimate_sum(self, rewards: Any, rng: np.random.Generator, *, path: str = "per-user") -> float:
        x = np.asarray(rewards, dtype=np.float64)
        view = self.server_views(x, rng, 1, path=path)
        return float(self.analyze(view, x.size)[0])

    def describe(self) -> str:
        names = {
            ProtocolKind.DIST_DP: "Dist-DP-SE protocol (Theorem 1, Polya noise, SecAgg)",
            ProtocolKind.DIST_RDP: f"Dist-RDP-SE protocol (Theorem 2, Skellam noise, s={self.s:g}, SecAgg)",
            ProtocolKind.DIST_CDP: f"Dist-CDP-SE protocol (Theorem 4, discrete Gaussian noise, s={self.s:g}, SecAgg)",
            ProtocolKind.CDP: "CDP-SE protocol (Theorem 5, central discrete Laplace)",
            ProtocolKind.LDP: "LDP-SE protocol (Theorem 6, local discrete Laplace)",
        }
        return f"{names[self.kind]}, eps={float(self.epsilon):g}, p={float(self.p):g}"


def _float_up(value: Fraction) -> float:
    """The least float >= value."""
    x = float(value)
    return x if Fraction(x) >= value else math.nextafter(x, math.inf)


class _BatchNoiseRule(abc.ABC):
    """What a batch noise law (``ProtocolKind.batch_noise``) fixes: the theorem's parameters, the
    accounted per-user mechanism and the Assumption 1 constants (module docstring). Each of the three
    laws defines all three (abstract: a rule missing one cannot be instantiated)."""

    @abc.abstractmethod
    def parameters(self, protocol: DistributedProtocol, n: int, p_tau: float) -> BatchParameters:
        """The theorem's batch parameters for n users."""

    @abc.abstractmethod
    def mechanism(self, params: BatchParameters, n: int) -> Any:
        """The accounted per-user mechanism of the batch."""

    @abc.abstractmethod
    def assumption1(self, protocol: DistributedProtocol, params: BatchParameters, n: int) -> tuple[float, float]:
        """Assumption 1's constants (sigma, h) of the summed noise."""

    #: why the summed noise has no one-draw sampler (None where it has one: the aggregate path)
    no_aggregate_path: str | None = None

    def summed_noise(self, protocol: DistributedProtocol, params: BatchParameters) -> dict[str, Any]:
        """The one-draw summed-noise kernel's parameters (``ProtocolKind.summed_noise``; the aggregate path)."""
        raise AccountingError("path", "aggregate", "'per-user'", self.no_aggregate_path or "")

    def per_user_noise(self, protocol: DistributedProtocol, params: BatchParameters) -> dict[str, Any]:
        """The per-user noise kernel's parameters (``ProtocolKind.per_user_noise``; SecAgg kinds)."""
        raise AccountingError("kind", protocol.kind, "a distributed kind (its users add the noise under SecAgg)")


class _DiscreteLaplaceBatch(_BatchNoiseRule):
    """One Lap_Z(g/eps) for the batch: Theorem 1 (the users' Polya differences sum to it) and Theorem 5."""

    def parameters(self, protocol: DistributedProtocol, n: int, p_tau: float) -> BatchParameters:
        d = acc.theorem1_parameters(protocol.epsilon, n, p_tau)
        noise = _samplers.sampler_parameter_at_least("epsilon", protocol.epsilon, d.laplace_scale, NoiseKind.DISCRETE_LAPLACE)
        if noise == d.laplace_scale:
            return BatchParameters(n, d.g, d.tau, d.m, scale=d.laplace_scale)
        # tau bounds b log(2/p), linear in b: tau + ceil(tau (b'/b - 1)) covers the rounded-up b'
        tau = d.tau + math.ceil(d.tau * (noise / d.laplace_scale - 1))
        return BatchParameters(n, d.g, tau, n * d.g + 2 * tau + 1, scale=noise)

    def mechanism(self, params: BatchParameters, n: int) -> Any:
        return acc.DiscreteLaplace(scale=params.scale, sensitivity=params.g)

    def summed_noise(self, protocol: DistributedProtocol, params: BatchParameters) -> dict[str, Any]:
        return {"scale": protocol._exact_scale(params)}

    def per_user_noise(self, protocol: DistributedProtocol, params: BatchParameters) -> dict[str, Any]:
        # Polya(1/n, e^{-eps/g}) differences, drawn with the eps of the (possibly rounded-up) b
        return {"eps": protocol._noise_epsilon(params)}

    def assumption1(self, protocol: DistributedProtocol, params: BatchParameters, n: int) -> tuple[float, float]:
        g = params.g
        rounding = math.sqrt(n / 2) / g
        eps = float(protocol.epsilon)
        # h = b/g: 1/eps, or 1/eps' = b'/g (rounded up) when the sampler's b' is above g/eps
        return rounding, (1 / eps if params.scale == g / Fraction(protocol.epsilon) else _float_up(params.scale / g))


class _SkellamBatch(_BatchNoiseRule):
    """One Sk(0, g^2/eps^2) for the batch (Theorem 2)."""

    def parameters(self, protocol: DistributedProtocol, n: int, p_tau: float) -> BatchParameters:
        d = acc.theorem2_parameters(protocol.epsilon, protocol.s, n, p_tau)
        return BatchParameters(n, d.g, d.tau, d.m, total_variance=d.total_variance)

    def mechanism(self, params: BatchParameters, n: int) -> Any:
        return acc.Skellam(variance=params.total_variance, l1_sensitivity=params.g, l2_sensitivity=params.g)

    def summed_noise(self, protocol: DistributedProtocol, params: BatchParameters) -> dict[str, Any]:
        return {"variance": float(params.total_variance)}

    def per_user_noise(self, protocol: DistributedProtocol, params: BatchParameters) -> dict[str, Any]:
        return {"eps": protocol.epsilon}

    def assumption1(self, protocol: DistributedProtocol, params: BatchParameters, n: int) -> tuple[float, float]:
        g = params.g
        rounding = math.sqrt(n / 2) / g
        eps = float(protocol.epsilon)
        return rounding + 2 / eps, math.sqrt(2) / g


class _DiscreteGaussianSumBatch(_BatchNoiseRule):
    """n discrete Gaussians N_Z(0, g^2/(n eps^2)), one per user (Theorem 4)."""

    no_aggregate_path = "a sum of discrete Gaussians is not discrete Gaussian: no aggregate path"

    def per_user_noise(self, protocol: DistributedProtocol, params: BatchParameters) -> dict[str, Any]:
        return {"sigma2": params.per_user_variance}

    def parameters(self, protocol: DistributedProtocol, n: int, p_tau: float) -> BatchParameters:
        d = acc.theorem4_parameters(protocol.epsilon, protocol.s, n, p_tau)
        # rounded up if the exact sampler needs it: the protocol then samples, accounts
        # (guarantee) and bounds (assumption1, tau) with the rounded value, so the three agree
        noise = _samplers.sampler_parameter_at_least("epsilon", protocol.epsilon, d.per_user_variance, NoiseKind.DISCRETE_GAUSSIAN)
        if noise == d.per_user_variance:
            return BatchParameters(n, d.g, d.tau, d.m, per_user_variance=d.per_user_variance)
        # tau bounds (g/eps) sqrt(2 log(2/p)) = sqrt(2 n v log(2/p)); with v' = v (1 + r) the
        # bound grows by sqrt(1 + r) <= 1 + r, so tau + ceil(tau r) covers it
        tau = d.tau + math.ceil(d.tau * (noise / d.per_user_variance - 1))
        return BatchParameters(n, d.g, tau, n * d.g + 2 * tau + 1, per_user_variance=noise)

    def mechanism(self, params: BatchParameters, n: int) -> Any:
        # sigma = g/(eps sqrt(n)) is irrational in general: rounded down (a weaker claim). The n users'
        # exact samplers each draw N_Z(0, sigma^2) conditioned on |X| <= ymax, within total variation
        # 2^-100 of it (_samplers.DG_TRUNCATION_TV), so the server's view is within n 2^-100 of the
        # analysed sum's: carried beside its zCDP, paid in delta by every (eps, delta) conversion
        sigma = sigma_at_most(params.per_user_variance)
        analysed = acc.DiscreteGaussianSum(n=n, sigma=sigma, sensitivity=params.g)
        return WithinTotalVariation(analysed, n * _samplers.DG_TRUNCATION_TV)

    def assumption1(self, protocol: DistributedProtocol, params: BatchParameters, n: int) -> tuple[float, float]:
        g = params.g
        rounding = math.sqrt(n / 2) / g
        eps = float(protocol.epsilon)
        # sqrt(2)/eps for the theorem's variance g^2/(n eps^2); scaled if the sampler's is larger
        theorem = Fraction(g * g) / (n * Fraction(protocol.epsilon) ** 2)
        scale = 1.0 if params.per_user_variance == theorem else math.sqrt(float(params.per_user_variance / theorem))
        return rounding + math.sqrt(2) / eps * scale, 0.0


class _DiscreteLaplaceSumBatch(_DiscreteLaplaceBatch):
    """n discrete Laplace draws Lap_Z(g/eps), one per user (Theorem 6): g as in Theorem 1, tau by Bernstein."""

    no_aggregate_path = "the sum of n discrete Laplace draws has no one-draw sampler here"

    def summed_noise(self, protocol: DistributedProtocol, params: BatchParameters) -> dict[str, Any]:
        return _BatchNoiseRule.summed_noise(self, protocol, params)

    def parameters(self, protocol: DistributedProtocol, n: int, p_tau: float) -> BatchParameters:
        d = acc.theorem1_parameters(protocol.epsilon, n, p_tau)
        noise = _samplers.sampler_parameter_at_least("epsilon", protocol.epsilon, d.laplace_scale, NoiseKind.DISCRETE_LAPLACE)
        b = float(noise)
        q = math.exp(-1.0 / b)
        v_b = 2 * q / (1 - q) ** 2
        log_term = math.log(2 / p_tau)
        tau = math.ceil(math.sqrt(2 * n * v_b * log_term) + 2 * b * log_term)
        return BatchParameters(n, d.g, tau, n * d.g + 2 * tau + 1, scale=noise)

    def assumption1(self, protocol: DistributedProtocol, params: BatchParameters, n: int) -> tuple[float, float]:
        g = params.g
        rounding = math.sqrt(n / 2) / g
        b = float(params.scale)
        q = math.exp(-1.0 / b)
        v_b = 2 * q / (1 - q) ** 2
        return rounding + math.sqrt(2 * n * v_b) / g, 2 * b / g


#: the rule of each batch noise law (``ProtocolKind.batch_noise``)
_BATCH_NOISE: dict[BatchNoise, _BatchNoiseRule] = {
    BatchNoise.DISCRETE_LAPLACE: _DiscreteLaplaceBatch(),
    BatchNoise.SKELLAM: _SkellamBatch(),
    BatchNoise.DISCRETE_GAUSSIAN_SUM: _DiscreteGaussianSumBatch(),
    BatchNoise.DISCRETE_LAPLACE_SUM: _DiscreteLaplaceSumBatch(),
}


@functools.lru_cache(maxsize=4096)
def _batch_parameters(protocol: DistributedProtocol, n: int) -> BatchParameters:
    return protocol._compute_parameters(n)


@dataclass(frozen=True)
class CentralLaplaceIdealised(BatchProtocol):
    """DP-SE's idealised privatizer (Sajed & Sheffet 2019): sum of rewards + Laplace(1/eps), float
    noise: not DP in floating point (the default is :class:`CentralGridLaplaceProtocol`).
    ``CentralLaplaceProtocol`` is its former name, kept."""

    epsilon: float
    name: str = field(init=False, default="dp-se")
    idealised: bool = field(init=False, default=True)

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)

    def mechanism(self, n: int) -> Any:
        check_positive_int("n", n)
        return acc.Laplace(scale=1 / Fraction(self.epsilon), sensitivity=1)

    def assumption1(self, n: int, p: float) -> tuple[float, float]:
        check_probability("p", p)
        return 0.0, 1 / float(self.epsilon)

    def estimate_sum(self, rewards: Any, rng: np.random.Generator, *, path: str = "per-user") -> float:
        return float(self.estimate_sums(rewards, rng, 1, path=path)[0])

    def estimate_sums(self, rewards: Any, rng: np.random.Generator, reps: int, *, path: str = "per-user") -> np.ndarray:
        """``reps`` independent estimates of sum(rewards) (the auditor's draws; one for a release)."""
        if path not in _PATHS:
            raise AccountingError("path", path, f"one of {_PATHS}")
        x = np.asarray(rewards, dtype=np.float64)
        return x.sum() + _samplers.laplace(rng, 1 / float(self.epsilon), size=reps)

    def laplace_tail_factor(self, n: int) -> float:
        """P[|noise| > x] / e^{-eps x} at its largest: 1, the continuous Laplace's tail exactly."""
        return 1.0

    def describe(self) -> str:
        return f"DP-SE privatizer (central continuous Laplace(1/eps), {_noise.IDEALISED_LABEL}), eps={float(self.epsilon):g}"


@dataclass(frozen=True)
class CentralGridLaplaceProtocol(BatchProtocol):
    """DP-SE's float-safe privatizer: rewards clamped to [0, 1] and encoded on the grid 1/g by
    randomised rounding, the integer sum plus one exact Lap_Z(b), b = g/eps, released over g.

    The central model of ICLR 2023 App. H.1 (Algorithms 2 and 3) without the secure-aggregation
    modulus (DP-SE's curator sees the users' rewards): the encoder is the protocols' randomised
    rounding and the exact discrete Laplace by inversion (``_protocol_kernels.noisy_rounded_sums``:
    clamp, round and sum in one pass, the exact integer sum, plus Lap_Z(b)). Its guarantee is ``GridDiscreteLaplace(g, b)``:
    exactly eps-DP per user (b rounded up to a rational the sampler takes when g/eps is not one:
    then (g/b)-DP, which is what is charged). ``grid`` defaults to 2^16 (``dpverify._executed._noise``).
    """

    epsilon: float
    grid: int = _noise.FLOAT_SAFE_GRID
    name: str = field(init=False, default="dp-se")

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        self.scale  # validated once: the exact sampler must take g/eps

    @functools.cached_property
    def scale(self) -> Fraction:
        # cached: every release asks for it (guarantee, noise), and eps -> g/eps is exact Fraction work
        return _noise.grid_laplace_scale(self.epsilon, self.grid)

    def mechanism(self, n: int) -> Any:
        check_positive_int("n", n)
        return self._mechanism

    @functools.cached_property
    def _mechanism(self) -> Any:  # one immutable object: every release charges it (a run audit makes ~10^5)
        return acc.GridDiscreteLaplace(self.grid, self.scale)

    @property
    def noise_epsilon(self) -> float:
        """g/b: the eps of the executed noise (eps itself unless b was rounded up)."""
        return float(Fraction(self.grid) / self.scale)

    def assumption1(self, n: int, p: float) -> tuple[float, float]:
        """(sqrt(n/2)/g, 1/eps'): Hoeffding for the rounding, the exact discrete Laplace tail (module docstring)."""
        check_probability("p", p)
        check_positive_int("n", n)
        return math.sqrt(n / 2) / self.grid, 1 / self.noise_epsilon

    def laplace_tail_factor(self, n: int) -> float:
        """max over x of P[|Z|/g > x] / e^{-eps' x}, eps' = g/b: 2/(1 + e^{-1/b}) (the discrete tail
        2 e^{-k/b}/(1 + e^{-1/b}) at k = ceil(x g) >= x g, for x g just below an integer), rounded up.
        DP-SE's radius takes log of it on top of its Laplace term: below 1 + 1/(2b)."""
        return 2.0 / (1.0 + math.exp(-1.0 / float(self.scale))) * (1 + 1e-15)

    def aggregate_resolution(self, n: int) -> int | None:
        """g: the estimate depends on the users only through sum xhat, and the noise is one draw."""
        return self.grid

    def estimate_from_rounded_sum(self, xhat_sum: int, n: int, rng: np.random.Generator) -> float:
        return (int(xhat_sum) + int(_samplers.discrete_laplace(rng, self.scale, method="inversion"))) / self.grid

    def estimate_sum(self, rewards: Any, rng: np.random.Generator, *, path: str = "per-user") -> float:
        return float(self.estimate_sums(rewards, rng, 1, path=path)[0])

    def estimate_sums(self, rewards: Any, rng: np.random.Generator, reps: int, *, path: str = "per-user") -> np.ndarray:
        """``reps`` independent estimates of sum(rewards) (the auditor's draws; one for a release):
        each run rounds every user afresh and draws its own Lap_Z."""
        if path not in _PATHS:
            raise AccountingError("path", path, f"one of {_PATHS}")
        # the users' clamped rewards' randomised roundings summed exactly, plus Lap_Z(b): one kernel call
        return pk.noisy_rounded_sums(rng, rewards, self.grid, reps, self.scale) / self.grid

    def describe(self) -> str:
        return (f"DP-SE privatizer, float-safe (rewards clamped to [0, 1], randomised rounding to the grid 1/{self.grid}, "
                f"sum + exact Lap_Z({self.scale})), eps={float(self.epsilon):g}")


def dist_dp_protocol(epsilon: float, p: float, *, tau_p: float | None = None, underflow_correction: bool = True) -> DistributedProtocol:
    """Theorem 1 (Dist-DP-SE): pure eps-DP via SecAgg with Polya-difference noise."""
    return DistributedProtocol(ProtocolKind.DIST_DP, epsilon, p, 1.0, tau_p, underflow_correction)


def dist_rdp_protocol(epsilon: float, s: float, p: float, *, tau_p: float | None = None, underflow_correction: bool = True) -> DistributedProtocol:
    """Theorem 2 (Dist-RDP-SE): RDP via SecAgg with Skellam noise at scale s."""
    return DistributedProtocol(ProtocolKind.DIST_RDP, epsilon, p, s, tau_p, underflow_correction)


def dist_cdp_protocol(epsilon: float, s: float, p: float, *, tau_p: float | None = None, underflow_correction: bool = True) -> DistributedProtocol:
    """Theorem 4 (Dist-CDP-SE): zCDP via SecAgg with discrete Gaussian noise at scale s."""
    return DistributedProtocol(ProtocolKind.DIST_CDP, epsilon, p, s, tau_p, underflow_correction)


def central_dp_protocol(epsilon: float, p: float, *, tau_p: float | None = None) -> DistributedProtocol:
    """Theorem 5 (CDP-SE): the analyzer adds one Lap_Z(g/eps)."""
    return DistributedProtocol(ProtocolKind.CDP, epsilon, p, 1.0, tau_p)


def local_dp_protocol(epsilon: float, p: float, *, tau_p: float | None = None) -> DistributedProtocol:
    """Theorem 6 (LDP-SE): every user adds Lap_Z(g/eps) before SecAgg."""
    return DistributedProtocol(ProtocolKind.LDP, epsilon, p, 1.0, tau_p)


#: the former name of :class:`CentralLaplaceIdealised`
CentralLaplaceProtocol = CentralLaplaceIdealised


def central_laplace_protocol(epsilon: float, *, noise: str = _noise.DEFAULT_NOISE) -> CentralGridLaplaceProtocol | CentralLaplaceIdealised:
    """DP-SE's privatizer: float-safe (grid 1/2^16, exact discrete Laplace) by default, or
    ``noise="idealised"``: the paper's continuous float Laplace (not DP in floating point)."""
    if _noise.check_noise(noise).idealised:
        return CentralLaplaceIdealised(epsilon)
    return CentralGridLaplaceProtocol(epsilon)
