"""Vector privatizers P = (R, S, A) for DP-DPE (Li, Zhou and Ji, Section IV-C), bound to a ledger.

In phase l each of the n = |U_l| clients holds a report vector y^u in [-B, B]^s (its average
reward for each of the s = |supp(pi_l)| support actions; the client clips to [-B, B] before
R). Two datasets are neighbours when one client's report is replaced by any other report (n is
fixed by the schedule), so

- the l2 sensitivity of one report is Delta_loc = ||y - y'||_2 <= 2 B sqrt(s);
- the l2 sensitivity of the average (1/n) sum_u y^u is Delta_avg = 2 B sqrt(s) / n.

Both are rounded *up* to a float in Arb before use.

**Float-safe (the defaults): :class:`CentralDiscreteGaussian`, :class:`LocalDiscreteGaussian`.**
Float Gaussian noise is not DP as executed (Mironov 2012: the low bits of a float sample betray its
centre), so the default privatizers never release a float computed from private data before
integer noise has been added:

- *R encodes* each coordinate on the grid of step B/g: x = y g / B in [-g, g] (clamped, so float
  rounding cannot leave the box), randomised rounding xhat = floor(x) + Bernoulli(x - floor(x)),
  an integer in {-g, ..., g} (both ends are grid points), the coin an exact Bernoulli of the float
  x's fractional part (``_protocol_kernels.add_box_codes``). Unbiased (E xhat = x; the privacy proof
  below does not use the coin's law), variance <= 1/4.
- *Sensitivity after rounding, proved.* Whatever the rounding does, a code lies in the integer box
  {-g, ..., g}^s, so replacing one client moves every coordinate of a code (and of the sum of codes)
  by at most 2g: box sensitivity Delta = 2g per coordinate, l2 at most 2g sqrt(s), exactly the
  unrounded 2B sqrt(s) in grid units. Rounding costs no sensitivity *because the box's corners are
  grid points* (an L2 clamp, or a scale with g B not on the grid, would not have that property:
  ``audits/planted/dpdpe_grid_off_lattice.toml``).
- *Noise*: exact discrete Gaussian N_Z(0, sigma^2) per coordinate (``dpverify.discrete_gaussian``,
  CKS Algorithm 3 with its candidates and acceptances by exact inversion against certified
  thresholds, ``dpverify._executed._inversion``: integer comparisons only), sigma^2 an integer. Central (CDP-DPE): the analyzer adds
  one vector to the sum of the n codes; local (LDP-DPE): each client adds its own to its code.
  *A decodes*: (integer sum) * B / (g n), post-processing of an integer vector.
- *Accounting, as executed*: the mechanism is ``accounting``'s
  :class:`~accounting._mechanisms.DiscreteGaussianVector` (sigma^2, Delta = 2g, d = s): exact
  Renyi curve, tight zCDP rho = s (2g)^2 / (2 sigma^2) (CKS 2020), and a certified (eps, delta)
  profile (the corner of the box dominates; the loss depends on the sum of the coordinates, whose
  law is the one-dimensional discrete Gaussian of variance s sigma^2 up to a certified factor; see
  that module). Each phase is charged ``ApproxDP(eps_l, delta_l)`` with eps_l that certified epsilon
  (as SDP-DPE's phases are): the ledger's own conversion of a mechanism goes through its Renyi
  curve, which at the paper's delta = 0.25 costs 15-32% more noise than the exact profile. The
  charge's label names the mechanism, its sigma^2, Delta and grid.
- *The samplers' truncation, charged.* What executes is not exactly DiscreteGaussianVector: each
  draw of the exact sampler is N_Z(0, sigma^2) conditioned on |Z| <= ymax (its int64 range;
  t_1 = P[|Z| > ymax] <= 2^-100, ``dpverify._executed._samplers.DG_TRUNCATION_TV``). Adding to an integer
  query x that moves by <= Delta = 2g per coordinate, for every event E (B_x the box of outputs
  within ymax of x per coordinate)

      P'_x[E] = P_x[E and B_x] / P[box] <= (P_x[E and B_x and B_x'] + P_x[B_x minus B_x']) / P[box]
              <= (e^eps P'_x'[E] P[box] + delta_0 + s tau) / P[box],

  tau = P[|Z| > ymax - Delta] (certified, ``_samplers.discrete_gaussian_tail``), so the release is
  (eps, (delta_0 + s tau) / (1 - s t_1))-DP when the untruncated one is (eps, delta_0)-DP. (The
  generic total-variation fact, delta + (1 + e^eps) s t_1, is too weak at large eps: e^100 2^-100 >
  1.) LDP-DPE's aggregate path draws the n clients' summed noise as one N_Z(0, n sigma^2), whose pmf
  is within a factor lambda = 1 + 2^-100 of the sum's per coordinate (:data:`AGGREGATE_MAX_TV`,
  ``sum_total_variation``), and truncates it: (eps + 2 s log lambda, (lambda^s delta_0 + s tau_n) /
  (1 - s t_1,n))-DP; it is used only where t_1,n <= 2^-100 and tau_n is within what the charge
  allows for. Each phase is charged ``ApproxDP(eps_l, delta_l)``: eps_l certified for the ideal
  mechanism at the largest delta_0 with delta_l <= delta (LDP-DPE: plus 2 s log lambda, one charge for
  both paths), delta_l that bound rounded up (Arb). Ordinarily tau is below 10^-70 and the charge
  moves by an ulp; at eps = 130, s = 1, tau ~ 9e-8, which the former charge left out.
- *Choice of g and sigma^2.* With z the analytic-Gaussian noise multiplier of the idealised version
  (below), g = max(1, floor(sqrt(T / s) / (2 z))) and sigma^2 the least integer >= (2 g z)^2 s
  whose certified eps_l meets the target (one or two certified evaluations: the discrete
  Gaussian's profile is the continuous one's to ~1e-7), with T = SIGMA2_TARGET = 10^8 for the
  central sum and T = 10^8 / 2^ceil(log2 n) for each local client (so the n clients' summed noise
  is in range too). Then sigma^2 ~ T grid steps^2 per coordinate, inside the exact sampler's range
  (sigma^2 < 2e8), and the rounding's variance is a fraction n / (4 sigma^2) of the central noise's
  (<= n / 4e8: 5.4e-5 at the largest phase of a T = 1e6 run, n = 21,619) and 1 / (4 sigma^2) of a
  local message's (8.3e-5 there, sigma^2 = 3,012..3,051). With sigma^2 rounded up to an integer (at
  most 1/sigma^2 more variance), the released average's sd is the idealised one's to 1e-4
  (central) and 2.1e-4 (local) at every phase of such a run, with the same z up to 1e-6, and the
  regret is the idealised mechanism's within Monte Carlo noise (REPRODUCTION.md, "Float-safe vs
  idealised").

**Idealised (explicit choice, ``noise="idealised"``): :class:`CentralGaussianIdealised`,
:class:`LocalGaussianIdealised`** — the paper's float Gaussians, kept to reproduce its figures.
*Not DP in floating point* (numpy ``rng.normal``); every record they produce says so.
Central (CDP-DPE, eq. (4)): R and S are identities; A returns the average plus N(0, sigma_nc^2 I_s):
the Gaussian mechanism on a query of sensitivity Delta_avg, charged as ``accounting``
``Gaussian(sigma_nc, Delta_avg)``. Local (LDP-DPE, eq. (5)): each client's R adds N(0, sigma_nl^2 I_s)
to its own report, charged as ``Gaussian(sigma_nl, Delta_loc)`` (an LDP guarantee); A averages.
The former names ``CentralGaussian`` and ``LocalGaussian`` still refer to these two classes.

The constants inside the paper's O(.): the paper sets sigma_nc = O(B sqrt(d ln(1/delta)) /
(eps |U_l|)) and sigma_nl = O(B sqrt(d ln(1/delta)) / eps). We take sigma = z Delta with the
noise multiplier z calibrated *once* with the exact accountant (``accounting.calibrate`` on
``Gaussian(z, 1)``: smallest z whose certified (eps, delta), by Balle & Wang's analytic formula
for 1/z-GDP, meets the target). Since sqrt(s) <= sqrt(S), S = 4 d log log d + 16
= O(d), this has the paper's form, with the constant z * 2 * sqrt(s / d) made explicit.
Per phase, sigma_l = z * Delta_l is rounded up (``nextafter``), so Delta_l / sigma_l <= 1/z exactly
and every phase's charge is within the calibrated guarantee. Clients are fresh in every phase,
so the ledger composes the phases in parallel and each user spends one phase's guarantee.

The width term sigma_n of eq. (3) is Theorem 2's: central 2 sigma_nc sqrt(S d), local
2 sigma_nl sqrt(S d / |U_l|) (:meth:`VectorProtocol.paper_width_sd`). :meth:`VectorProtocol.noise_sd`
is the per-coordinate sd of the noise in the released average (sigma_nc, or sigma_nl / sqrt(n));
for the float-safe versions it is the sub-Gaussian variance proxy of the discrete noise plus the
rounding errors (a discrete Gaussian is sigma^2-sub-Gaussian, CKS 2020; a rounding error is a
centred variable in an interval of length 1, 1/4-sub-Gaussian by Hoeffding), so eq. (3) keeps
its sub-Gaussian justification. The runner's ``privacy_width="exact"`` option uses it.

A :class:`VectorPrivatizer` mirrors the scalar ``dpverify._executed._privatizer.Privatizer``: it holds a
protocol, an ``accounting.Ledger`` and its own random stream; :meth:`VectorPrivatizer.release_mean`
charges the ledger *first* (``BudgetExceeded`` leaves the ledger unchanged, draws no noise and
computes no statistic), then runs R, S, A and returns only the analyzer's output.
:class:`NonPrivateAggregator` is the explicit non-private channel of DPE (no noise, no ledger).
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import arb

from accounting import ApproxDP, Calibration, Gaussian, calibrate, working_precision, DiscreteGaussianVector, AccountingError
from accounting.internal import exact, lower_float, upper_float, sum_total_variation, check_positive, check_probability

from ..._executed import _protocol_kernels as pk
from ..._executed._kinds import NoiseMode
from ..._executed._privatizer import AccountedReleaser
from ..._executed._samplers import DG_TRUNCATION_TV, discrete_gaussian, discrete_gaussian_range, discrete_gaussian_tail
from ._design import support_bound

__all__ = [
    "CentralDiscreteGaussian",
    "CentralGaussian",
    "CentralGaussianIdealised",
    "GridNoise",
    "LocalDiscreteGaussian",
    "LocalGaussian",
    "LocalGaussianIdealised",
    "SIGMA2_TARGET",
    "NonPrivateAggregator",
    "VectorPrivatizer",
    "VectorProtocol",
    "VectorRelease",
    "calibrate_noise_multiplier",
    "grid_noise",
    "l2_sensitivity",
]


@functools.lru_cache(maxsize=4096)  # a pure function of its arguments, asked at every release
def l2_sensitivity(reward_bound: float, support_size: int, n: int = 1) -> float:
    """2 B sqrt(s) / n rounded up: the l2 sensitivity of the average of n reports in [-B, B]^s (replace-one)."""
    check_positive("reward_bound", reward_bound)
    if isinstance(support_size, bool) or not isinstance(support_size, (int, np.integer)) or support_size < 1:
        raise AccountingError("support_size", support_size, "an integer >= 1")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise AccountingError("n", n, "an integer >= 1")
    with working_precision(None):
        return upper_float(2 * exact(float(reward_bound)) * arb(int(support_size)).sqrt() / int(n))


@functools.lru_cache(maxsize=256)
def calibrate_noise_multiplier(epsilon: float, delta: float, *, relative_tolerance: float = 1e-6) -> Calibration:
    """Smallest noise multiplier z (sigma / l2-sensitivity) of the Gaussian mechanism meeting (epsilon, delta).

    Uses the exact accountant (``accounting.calibrate`` on ``Gaussian(z, 1)``); the returned
    ``Calibration`` carries the certified epsilon actually achieved and its route.
    """
    check_positive("epsilon", epsilon)
    check_probability("delta", delta)
    return calibrate(lambda z: Gaussian(z, 1), epsilon, delta, lower=1e-4, upper=1e4, relative_tolerance=relative_tolerance)


def _scaled_up(z: float, sensitivity: float) -> float:
    """A float >= z * sensitivity exactly (so sensitivity / result <= 1 / z)."""
    return float(np.nextafter(z * sensitivity, np.inf))


@dataclass(frozen=True)
class VectorRelease:
    """What a privatizer hands back: the analyzer's estimate of the clients' average report."""

    estimate: np.ndarray
    n: int
    path: str


class VectorProtocol(ABC):
    """A private protocol for the average of n report vectors in [-B, B]^s."""

    #: "central", "local" or "shuffle"
    model: str = "protocol"
    #: "float-safe" (DP as executed) or "idealised" (float noise: not DP in floating point)
    implementation: NoiseMode = NoiseMode.FLOAT_SAFE

    def __init__(self, epsilon: float, delta: float, reward_bound: float) -> None:
        check_positive("reward_bound", reward_bound)
        self.epsilon = float(check_positive("epsilon", epsilon))
        self.delta = float(check_probability("delta", delta))
        self.reward_bound = float(reward_bound)
        self.calibration = calibrate_noise_multiplier(self.epsilon, self.delta)
        self.noise_multiplier = float(self.calibration.parameter)

    @abstractmethod
    def guarantee(self, n: int, s: int) -> Any:
        """What the ledger is charged for one release to n clients with s-vectors (per user)."""

    def mechanism(self, n: int, s: int) -> Any:
        """The ``accounting`` mechanism of one release as executed (what the auditor tests)."""
        return self.guarantee(n, s)

    @property
    def idealised(self) -> bool:
        """Float noise (not DP in floating point): what ``AccountedReleaser`` reads to refuse its
        charges on a durable ledger unless allowed, and to label them, as for the scalar protocols."""
        return self.implementation.idealised

    def charge_label(self, n: int, s: int) -> str:
        """How the ledger's record names the implementation of a release."""
        return self.implementation

    @abstractmethod
    def noise_sd(self, n: int, s: int) -> float:
        """The per-coordinate sd (sub-Gaussian proxy) of the noise in the released average."""

    @abstractmethod
    def paper_width_sd(self, n: int, s: int, d: int) -> float:
        """Theorem 2's sigma_n for the width W_l of eq. (3)."""

    @abstractmethod
    def release(self, reports: np.ndarray, rng: np.random.Generator, *, path: str) -> np.ndarray:
        """Run R, S, A on the (n, s) reports; return the analyzer's (s,) estimate of their average."""

    def describe(self) -> dict:
        return {
            "model": self.model,
            "implementation": self.implementation,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "reward_bound": self.reward_bound,
            "noise_multiplier": self.noise_multiplier,
            "calibration": self.calibration.as_dict(),
        }


IDEALISED_NOTE = "idealised: not DP in floating point (numpy float Gaussian noise, Mironov 2012)"


class CentralGaussianIdealised(VectorProtocol):
    """CDP-DPE (eq. (4)) as the paper states it: the analyzer adds float N(0, sigma_nc^2) per coordinate.

    Idealised: not DP in floating point. Use :class:`CentralDiscreteGaussian` for a private run.
    """

    model = "central"
    implementation = NoiseMode.IDEALISED

    def sigma(self, n: int, s: int) -> float:
        return _scaled_up(self.noise_multiplier, l2_sensitivity(self.reward_bound, s, n))

    def guarantee(self, n: int, s: int) -> Any:
        return Gaussian(self.sigma(n, s), l2_sensitivity(self.reward_bound, s, n))

    def charge_label(self, n: int, s: int) -> str:
        return IDEALISED_NOTE

    def noise_sd(self, n: int, s: int) -> float:
        return self.sigma(n, s)

    def paper_width_sd(self, n: int, s: int, d: int) -> float:
        return 2.0 * self.sigma(n, s) * math.sqrt(support_bound(d) * d)

    def release(self, reports: np.ndarray, rng: np.random.Generator, *, path: str) -> np.ndarray:
        n, s = reports.shape
        return reports.mean(axis=0) + rng.normal(0.0, self.sigma(n, s), size=s)

    def describe(self) -> dict:
        return {**super().describe(), "note": IDEALISED_NOTE}


class LocalGaussianIdealised(VectorProtocol):
    """LDP-DPE (eq. (5)) as the paper states it: every client adds float N(0, sigma_nl^2); the analyzer averages.

    Idealised: not DP in floating point. Use :class:`LocalDiscreteGaussian` for a private run.
    ``path="aggregate"`` draws the sum of the n clients' noises as one N(0, n sigma_nl^2) per
    coordinate: the same law (a sum of independent Gaussians), recorded as such in results.
    """

    model = "local"
    implementation = NoiseMode.IDEALISED

    def sigma(self, s: int) -> float:
        return _scaled_up(self.noise_multiplier, l2_sensitivity(self.reward_bound, s, 1))

    def guarantee(self, n: int, s: int) -> Any:
        return Gaussian(self.sigma(s), l2_sensitivity(self.reward_bound, s, 1))

    def charge_label(self, n: int, s: int) -> str:
        return IDEALISED_NOTE

    def noise_sd(self, n: int, s: int) -> float:
        return self.sigma(s) / math.sqrt(n)

    def paper_width_sd(self, n: int, s: int, d: int) -> float:
        return 2.0 * self.sigma(s) * math.sqrt(support_bound(d) * d / n)

    def release(self, reports: np.ndarray, rng: np.random.Generator, *, path: str) -> np.ndarray:
        n, s = reports.shape
        sigma = self.sigma(s)
        if path == "per-user":
            noisy = reports + rng.normal(0.0, sigma, size=(n, s))  # R at each client
            return noisy.mean(axis=0)  # S identity, A averages
        return (reports.sum(axis=0) + rng.normal(0.0, sigma * math.sqrt(n), size=s)) / n

    def describe(self) -> dict:
        return {**super().describe(), "note": IDEALISED_NOTE}


#: The former names of the idealised classes (kept so existing code keeps importing them).
CentralGaussian = CentralGaussianIdealised
LocalGaussian = LocalGaussianIdealised

#: Per-coordinate sigma^2 the float-safe grid aims at: ~10^4 grid steps, inside the exact
#: discrete Gaussian sampler's range (sigma^2 < 2e8, ``dpverify._executed._samplers.discrete_gaussian_range``).
#: The local model aims at SIGMA2_TARGET / 2^ceil(log2 n) per client, so that the n clients' summed
#: noise, n sigma^2 <= SIGMA2_TARGET, is also in range (the aggregate path draws it at once).
SIGMA2_TARGET = 10**8
#: The aggregate path draws the n clients' summed discrete Gaussians as one N_Z(0, n sigma^2) only
#: when the certified total variation between the two laws is below this (the sampler's own
#: truncation bound, ``dpverify._executed._samplers.DG_TRUNCATION_LOG2_TV``); else it draws per client.
#: That total variation is charged (``draws_per_coordinate`` of :class:`LocalDiscreteGaussian`).
AGGREGATE_MAX_TV = DG_TRUNCATION_TV


def _grid_gaussian(rng: np.random.Generator, sigma2: int, size: Any) -> np.ndarray:
    """N_Z(0, sigma^2) draws of the float-safe privatizers: CKS Algorithm 3's law by exact inversion
    (``dpverify._executed._inversion``; 3x faster than the rejection loops, which made LDP-DPE's per-client
    noise cost 1.9x the idealised run, ``benchmarks/linear.md``)."""
    return discrete_gaussian(rng, sigma2, size=size, method="inversion")


@dataclass(frozen=True)
class GridNoise:
    """The float-safe parameters of one support size s: grid g, integer sigma^2, and the certified
    (epsilon, delta) of the mechanism as executed, the exact sampler's truncation included (module
    docstring, "The samplers' total variation, charged"); ``tail``: tau, the per-coordinate
    P[|Z| > ymax - 2g] the charge allows for (LDP-DPE's one-draw sum is used only within it)."""

    grid: int
    sigma2: int
    epsilon: float
    delta: float = 0.0
    tail: float = 0.0

    @property
    def sensitivity(self) -> int:
        """The box sensitivity of a code (and of a sum of codes) per coordinate: 2g."""
        return 2 * self.grid


@functools.lru_cache(maxsize=1024)
def grid_noise(epsilon: float, delta: float, noise_multiplier: float, s: int, sigma2_target: int = SIGMA2_TARGET,
               aggregate: bool = False) -> GridNoise:
    """g and sigma^2 for support size s (module docstring, "Choice of g and sigma^2"), certified.

    g = max(1, floor(sqrt(sigma2_target / s) / (2z))); sigma^2 starts at ceil((2 g z)^2 s) and grows
    by 2^-20 relative steps until the charged eps (module docstring, "The samplers' total variation,
    charged": the certified eps of ``DiscreteGaussianVector(sigma^2, 2g, s)`` at the delta_0 that
    leaves room for the exact sampler's truncation; ``aggregate``: and for LDP-DPE's one-draw sum)
    is <= ``epsilon``; the charged delta is <= ``delta``.
    """
    s = _check_support(s)
    g = max(1, int(math.sqrt(sigma2_target / s) / (2.0 * noise_multiplier)))
    sigma2 = math.ceil((2 * g * noise_multiplier) ** 2 * s * (1 + 1e-12))
    for _ in range(64):
        _check_sampler_range(epsilon, sigma2)
        delta0, charged_delta, tail = _truncation_slack(sigma2, 2 * g, s, delta, aggregate)
        achieved = DiscreteGaussianVector(sigma2, 2 * g, s).epsilon(delta0)
        charged_eps = _aggregate_epsilon(achieved, s) if aggregate else achieved
        if charged_eps <= epsilon:
            return GridNoise(g, sigma2, charged_eps, charged_delta, tail)
        sigma2 += max(1, sigma2 >> 20)
    raise AccountingError("epsilon", epsilon, f"a target the discrete Gaussian reaches near sigma^2 = {sigma2} (s = {s}, delta = {delta})")


def _truncation_slack(sigma2: int, sensitivity: int, s: int, delta: float, aggregate: bool) -> tuple[float, float, float]:
    """(delta_0, charged delta, tail) for s coordinates of the exact sampler's N_Z(0, sigma^2)
    conditioned on |Z| <= ymax, on a query moving by <= Delta = ``sensitivity`` per coordinate
    (module docstring): charged = (lambda^s delta_0 + s tau) / (1 - s t_1) <= delta, with t_1 =
    P[|Z| > ymax], tau = P[|Z| > ymax - Delta] (certified, ``_samplers.discrete_gaussian_tail``);
    ``aggregate``: lambda = 1 + 2^-100, and t_1, tau at least 2^-100 (what the one-draw sum may use)."""
    p, q, _, ymax = discrete_gaussian_range(sigma2)
    t1 = discrete_gaussian_tail(sigma2, ymax)  # <= 2^-100 (the range check)
    tail = discrete_gaussian_tail(sigma2, ymax - sensitivity)
    lam = 1.0
    if aggregate:
        t1, tail, lam = max(t1, AGGREGATE_MAX_TV), max(tail, AGGREGATE_MAX_TV), 1.0 + AGGREGATE_MAX_TV
    with working_precision(None):
        lam_s = exact(lam) ** s
        keep = 1 - s * exact(t1)
        delta0 = lower_float((exact(delta) * keep - s * exact(tail)) / lam_s)
        if not delta0 > 0:
            raise AccountingError("delta", delta, f"a delta above the exact sampler's truncation slack (s = {s}, tau = {tail!r})")
        charged = upper_float((lam_s * exact(delta0) + s * exact(tail)) / keep)
    return delta0, min(charged, delta), tail


def _aggregate_epsilon(epsilon: float, s: int) -> float:
    """eps + 2 s log(1 + 2^-100) rounded up: the one-draw sum's pmf is within a factor 1 + 2^-100 of the
    n clients' summed draws per coordinate (``sum_total_variation``), so its eps is at most this."""
    with working_precision(None):
        return upper_float(exact(epsilon) + 2 * s * (1 + exact(AGGREGATE_MAX_TV)).log())


def _check_support(s: Any) -> int:
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
        raise AccountingError("s", s, "an integer >= 1 (the support size)")
    return int(s)


def _check_sampler_range(epsilon: float, sigma2: int) -> None:
    try:
        discrete_gaussian_range(sigma2)
    except AccountingError:
        raise AccountingError(
            "epsilon", epsilon, "a target whose discrete Gaussian fits the exact sampler's range (sigma^2 < 2e8 grid steps^2 at g = 1)",
            f"sigma^2 = {sigma2} needed",
        ) from None


class _DiscreteGaussianGrid(VectorProtocol):
    """The float-safe privatizers' shared part: the grid, the rounding, the noise law, the accounting."""

    implementation = NoiseMode.FLOAT_SAFE
    #: whether the charge also covers LDP-DPE's one-draw sum (module docstring)
    aggregate = False

    def sigma2_target(self, n: int) -> int:
        """The per-coordinate sigma^2 the grid aims at for a release to n clients."""
        return SIGMA2_TARGET

    def grid_noise(self, n: int, s: int) -> GridNoise:
        return grid_noise(self.epsilon, self.delta, self.noise_multiplier, int(s), self.sigma2_target(int(n)), self.aggregate)

    def mechanism(self, n: int, s: int) -> DiscreteGaussianVector:
        params = self.grid_noise(n, s)
        return DiscreteGaussianVector(params.sigma2, params.sensitivity, int(s))

    def guarantee(self, n: int, s: int) -> ApproxDP:
        """(eps_l, delta_l): the certified guarantee of the release as executed, the samplers' total
        variation from ``mechanism(n, s)`` paid in delta (delta_l <= delta)."""
        p = self.grid_noise(n, s)
        return ApproxDP(p.epsilon, p.delta)

    def total_variation(self, n: int, s: int) -> float:
        """An upper bound on the total variation between a release as executed and ``mechanism(n, s)``'s
        law: s 2^-100 for the truncation, twice that where LDP-DPE's one-draw sum may replace the clients'
        draws (the charge accounts for it more finely, module docstring; this is what reports show)."""
        return int(s) * DG_TRUNCATION_TV * (2 if self.aggregate else 1)

    def charge_label(self, n: int, s: int) -> str:
        p = self.grid_noise(n, s)
        where = "the sum of the codes (analyzer)" if self.model == "central" else "each client's code"
        return (f"float-safe: exact discrete Gaussian N_Z(0, {p.sigma2}) on {where}, grid B/{p.grid}, "
                f"DiscreteGaussianVector(sigma2={p.sigma2}, Delta=2g={p.sensitivity}, d={int(s)}), certified eps {p.epsilon!r}, "
                f"delta {p.delta!r} including the exact sampler's truncation (tail {p.tail!r})")

    def encode(self, reports: np.ndarray, rng: np.random.Generator, noise: np.ndarray | None = None) -> np.ndarray:
        """R's encoder: randomised rounding of y g / B to {-g, ..., g} (int64), one exact coin per
        coordinate (``_protocol_kernels.add_box_codes``), added to ``noise`` if given (the local
        messages: one pass, no code array)."""
        g = self.grid_noise(*reports.shape).grid
        out = np.zeros(reports.shape, dtype=np.int64) if noise is None else noise
        pk.add_box_codes(rng, np.ascontiguousarray(reports, dtype=np.float64), g / self.reward_bound, g, out)
        return out

    def _decode(self, total: np.ndarray, n: int, s: int) -> np.ndarray:
        return total * (self.reward_bound / (self.grid_noise(n, s).grid * n))

    def describe(self) -> dict:
        return {
            **super().describe(),
            "note": "float-safe: DP as executed (integer codes on the grid B/g, exact discrete Gaussian noise)",
            "grid_rule": f"g = max(1, floor(sqrt(T / s) / (2 z))), T = {SIGMA2_TARGET:.0e} (central) or {SIGMA2_TARGET:.0e} / 2^ceil(log2 n) (local); "
                         "sigma^2 the least integer >= (2 g z)^2 s meeting eps",
            "accounting": "DiscreteGaussianVector(sigma^2, 2g, s): certified (eps, delta) per phase, charged as ApproxDP, "
                          "with the exact sampler's truncation (and LDP-DPE's one-draw sum) paid in the charge",
        }


class CentralDiscreteGaussian(_DiscreteGaussianGrid):
    """CDP-DPE, float-safe (the default): codes summed, exact N_Z(0, sigma^2) added to the sum per coordinate."""

    model = "central"

    def noise_sd(self, n: int, s: int) -> float:
        p = self.grid_noise(n, s)
        return math.sqrt(p.sigma2 + n / 4.0) * self.reward_bound / (p.grid * n)

    def paper_width_sd(self, n: int, s: int, d: int) -> float:
        return 2.0 * self.noise_sd(n, s) * math.sqrt(support_bound(d) * d)

    def release(self, reports: np.ndarray, rng: np.random.Generator, *, path: str) -> np.ndarray:
        n, s = reports.shape
        codes = self.encode(reports, rng)  # R at each client (S: identity)
        total = codes.sum(axis=0) + _grid_gaussian(rng, self.grid_noise(n, s).sigma2, s)  # A: the noise on the sum
        return self._decode(total, n, s)


class LocalDiscreteGaussian(_DiscreteGaussianGrid):
    """LDP-DPE, float-safe (the default): each client sends its code plus its own exact N_Z(0, sigma^2).

    ``path="aggregate"`` draws the n clients' summed noise as one N_Z(0, n sigma^2) per coordinate
    when the certified total variation between that law and the sum of n iid N_Z(0, sigma^2) is
    below 2^-100 (``accounting``'s ``sum_total_variation``: the sum's pmf is the discrete Gaussian's
    times a factor in [1/lambda, lambda]; at DP-DPE's sigma^2 >= 10^3, lambda - 1 < 10^-1000), the
    bound the exact sampler already meets for its own truncation; otherwise it draws per client.
    Both total variations are charged in delta, on either path (module docstring).
    The per-client sigma^2 aims at SIGMA2_TARGET / 2^ceil(log2 n), so n sigma^2 stays in range.
    """

    model = "local"
    aggregate = True

    def sigma2_target(self, n: int) -> int:
        return max(1, SIGMA2_TARGET >> (int(n) - 1).bit_length())

    def client_sd(self, n: int, s: int) -> float:
        """sd (sub-Gaussian proxy) of one client's message noise, in reward units."""
        p = self.grid_noise(n, s)
        return math.sqrt(p.sigma2 + 0.25) * self.reward_bound / p.grid

    def noise_sd(self, n: int, s: int) -> float:
        return self.client_sd(n, s) / math.sqrt(n)

    def paper_width_sd(self, n: int, s: int, d: int) -> float:
        return 2.0 * self.client_sd(n, s) * math.sqrt(support_bound(d) * d / n)

    def messages(self, reports: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """R at every client: its integer message, code plus N_Z(0, sigma^2) per coordinate (n, s)."""
        n, s = reports.shape
        return self.encode(reports, rng, noise=_grid_gaussian(rng, self.grid_noise(n, s).sigma2, (n, s)))

    def summed_noise_in_one_draw(self, n: int, s: int) -> bool:
        """Whether the aggregate path draws the n clients' summed noise at once (class docstring)."""
        params = self.grid_noise(n, s)
        if sum_total_variation(params.sigma2, int(n)) > AGGREGATE_MAX_TV:
            return False
        try:
            _, _, _, ymax = discrete_gaussian_range(int(n) * params.sigma2)
        except AccountingError:
            return False
        # the charge allows for a tail tau at ymax - 2g (and t_1 <= 2^-100: the range check)
        return discrete_gaussian_tail(int(n) * params.sigma2, ymax - params.sensitivity) <= params.tail

    def release(self, reports: np.ndarray, rng: np.random.Generator, *, path: str) -> np.ndarray:
        n, s = reports.shape
        if path == "per-user":
            return self._decode(self.messages(reports, rng).sum(axis=0), n, s)  # S identity, A sums
        codes = self.encode(reports, rng)
        sigma2 = self.grid_noise(n, s).sigma2
        if self.summed_noise_in_one_draw(n, s):
            noise = _grid_gaussian(rng, n * sigma2, s)
        else:
            noise = _grid_gaussian(rng, sigma2, (n, s)).sum(axis=0)
        return self._decode(codes.sum(axis=0) + noise, n, s)


def _check_reports(reports: Any, bound: float) -> np.ndarray:
    array = np.asarray(reports, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise AccountingError("reports", f"array of shape {array.shape}", "a non-empty (n clients, s actions) array")
    if not np.all(np.isfinite(array)):
        raise AccountingError("reports", "non-finite entries", f"finite reports in [-B, B] = [-{bound}, {bound}]")
    if np.abs(array).max() > bound:
        raise AccountingError("reports", f"max |y| = {np.abs(array).max():.6g}", f"reports in [-B, B] = [-{bound}, {bound}] (clip at the client, visibly)")
    return array


class VectorPrivatizer(AccountedReleaser):
    """A vector protocol bound to a ledger: charges first, then releases; refuses once the budget is spent."""

    __slots__ = ()
    protocol_type = VectorProtocol
    protocol_name = "a VectorProtocol (CentralDiscreteGaussian, LocalDiscreteGaussian, their ...Idealised versions, ShuffleBits)"

    def release_mean(self, reports: Any, participants: range | np.ndarray | None, *, label: str = "") -> VectorRelease:
        """Charge the ledger for this phase, then return the protocol's private estimate of the mean report."""
        array = _check_reports(reports, self._protocol.reward_bound)
        n, s = array.shape
        note = self._protocol.charge_label(n, s)
        self._charge(self._protocol.guarantee(n, s), participants, n, f"{label} [{note}]" if label else note)
        estimate = self._protocol.release(array, self._rng, path=self._path)
        if self._transcript is not None:  # a run audit's recording: the release is the server's view
            self._transcript.observe_vector(estimate, n, label)
        return VectorRelease(estimate, n, self._path)

    def __repr__(self) -> str:
        return f"VectorPrivatizer({self._protocol.model}, path={self._path}, releases={self._released}, {self._ledger!r})"


class NonPrivateAggregator:
    """DPE's channel: the exact average of the reports. No privacy, no ledger; said so in results."""

    __slots__ = ("_released", "reward_bound")

    path = "exact"

    def __init__(self, reward_bound: float) -> None:
        self.reward_bound = float(check_positive("reward_bound", reward_bound))
        self._released = 0

    @property
    def releases(self) -> int:
        return self._released

    def release_mean(self, reports: Any, participants: range | np.ndarray | None, *, label: str = "") -> VectorRelease:
        array = _check_reports(reports, self.reward_bound)
        self._released += 1
        return VectorRelease(array.mean(axis=0), array.shape[0], "exact")
