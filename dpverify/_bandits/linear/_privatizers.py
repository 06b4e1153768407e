"""Vector privatizers P = (R, S, A) for DP-DPE (Li, Zhou and Ji, Section IV-C), bound to a ledger.

In phase l each of the n = |U_l| clients holds a report vector y^u in [-B, B]^s (its average
reward for each of the s = |supp(pi_l)| support actions; the client clips to [-B, B] before
R). Two datasets are neighbours when one client's report is replaced by any other report (n is
fixed by the schedule), so

- the l2 sensitivity of one report is Delta_loc = ||y - y'||_2 <= 2 B sqrt(s);
- the l2 sensitivity of the average (1/n) sum_u y^u is Delta_avg = 2 B sqrt(s) / n.

Both are rounded *up* to a float in Arb before use.

**Central (CDP-DPE, eq. (4)).** R and S are identities; A returns the average plus
N(0, sigma_nc^2 I_s): the Gaussian mechanism on a query of sensitivity Delta_avg, charged as
``accounting`` ``Gaussian(sigma_nc, Delta_avg)`` to the participating users.
**Local (LDP-DPE, eq. (5)).** Each client's R adds N(0, sigma_nl^2 I_s) to its own report: the
Gaussian mechanism on a query of sensitivity Delta_loc, charged as ``Gaussian(sigma_nl,
Delta_loc)`` (an LDP guarantee: it holds for the view of anyone, the server included); A
averages.

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
is the actual per-coordinate sd of the noise in the released average (sigma_nc, or
sigma_nl / sqrt(n)); the runner's ``privacy_width="exact"`` option uses it to compute the exact sd
of the noise's effect on <theta_l, x> instead of Theorem 2's bound.

A :class:`VectorPrivatizer` mirrors the scalar ``dpverify._privatizer.Privatizer``: it holds a
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

from accounting import Calibration, calibrate
from accounting._certified import exact, upper_float, working_precision
from accounting._validation import AccountingError, check_positive, check_probability

from ..._privatizer import AccountedReleaser
from ._design import support_bound

from accounting import Gaussian

__all__ = [
    "CentralGaussian",
    "LocalGaussian",
    "NonPrivateAggregator",
    "VectorPrivatizer",
    "VectorProtocol",
    "VectorRelease",
    "calibrate_noise_multiplier",
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

    #: "central" or "local"
    model: str = "protocol"

    def __init__(self, epsilon: float, delta: float, reward_bound: float) -> None:
        check_positive("reward_bound", reward_bound)
        self.epsilon = float(check_positive("epsilon", epsilon))
        self.delta = float(check_probability("delta", delta))
        self.reward_bound = float(reward_bound)
        self.calibration = calibrate_noise_multiplier(self.epsilon, self.delta)
        self.noise_multiplier = float(self.calibration.parameter)

    @abstractmethod
    def guarantee(self, n: int, s: int) -> Any:
        """The per-user guarantee of one release to n clients with s-vectors (an ``accounting`` mechanism)."""

    @abstractmethod
    def noise_sd(self, n: int, s: int) -> float:
        """The per-coordinate sd of the noise in the released average."""

    @abstractmethod
    def paper_width_sd(self, n: int, s: int, d: int) -> float:
        """Theorem 2's sigma_n for the width W_l of eq. (3)."""

    @abstractmethod
    def release(self, reports: np.ndarray, rng: np.random.Generator, *, path: str) -> np.ndarray:
        """Run R, S, A on the (n, s) reports; return the analyzer's (s,) estimate of their average."""

    def describe(self) -> dict:
        return {
            "model": self.model,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "reward_bound": self.reward_bound,
            "noise_multiplier": self.noise_multiplier,
            "calibration": self.calibration.as_dict(),
        }


class CentralGaussian(VectorProtocol):
    """CDP-DPE (eq. (4)): the analyzer adds N(0, sigma_nc^2) per coordinate to the average."""

    model = "central"

    def sigma(self, n: int, s: int) -> float:
        return _scaled_up(self.noise_multiplier, l2_sensitivity(self.reward_bound, s, n))

    def guarantee(self, n: int, s: int) -> Any:
        return Gaussian(self.sigma(n, s), l2_sensitivity(self.reward_bound, s, n))

    def noise_sd(self, n: int, s: int) -> float:
        return self.sigma(n, s)

    def paper_width_sd(self, n: int, s: int, d: int) -> float:
        return 2.0 * self.sigma(n, s) * math.sqrt(support_bound(d) * d)

    def release(self, reports: np.ndarray, rng: np.random.Generator, *, path: str) -> np.ndarray:
        n, s = reports.shape
        return reports.mean(axis=0) + rng.normal(0.0, self.sigma(n, s), size=s)


class LocalGaussian(VectorProtocol):
    """LDP-DPE (eq. (5)): every client adds N(0, sigma_nl^2) per coordinate; the analyzer averages.

    ``path="aggregate"`` draws the sum of the n clients' noises as one N(0, n sigma_nl^2) per
    coordinate: the same law (a sum of independent Gaussians), recorded as such in results.
    """

    model = "local"

    def sigma(self, s: int) -> float:
        return _scaled_up(self.noise_multiplier, l2_sensitivity(self.reward_bound, s, 1))

    def guarantee(self, n: int, s: int) -> Any:
        return Gaussian(self.sigma(s), l2_sensitivity(self.reward_bound, s, 1))

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
    protocol_name = "a VectorProtocol (CentralGaussian or LocalGaussian)"

    def release_mean(self, reports: Any, participants: range | np.ndarray | None, *, label: str = "") -> VectorRelease:
        """Charge the ledger for this phase, then return the protocol's private estimate of the mean report."""
        array = _check_reports(reports, self._protocol.reward_bound)
        n, s = array.shape
        self._charge(self._protocol.guarantee(n, s), participants, n, label)
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
