"""Vector privatizers of DP-DPE: guarantees come from the accountant, charges precede releases.

Both implementations are covered: the float-safe defaults (``CentralDiscreteGaussian``,
``LocalDiscreteGaussian``: integer grid, exact discrete Gaussian, each phase charged its certified
(eps, delta)) and the paper's float Gaussians (``...GaussianIdealised``).

Randomised tests use fixed seeds (deterministic in CI). Each states its false-alarm rate (the
probability that a correct implementation fails, for a random seed) and its power against the
named wrong variant; both are computed from the exact law of the test statistic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import naive
from accounting import ApproxDP, BudgetExceeded, Ledger, epsilon_routes
from dpverify._bandits.linear import (
    CentralDiscreteGaussian,
    CentralGaussianIdealised,
    DPEConfig,
    LinearInstance,
    LocalDiscreteGaussian,
    LocalGaussianIdealised,
    NonPrivateAggregator,
    VectorPrivatizer,
    calibrate_noise_multiplier,
    l2_sensitivity,
    run_linear,
    synthetic_instance,
)
from dpverify._bandits.linear._privatizers import Gaussian
from dpverify._executed._samplers import discrete_gaussian

EPS, DELTA, B = 10.0, 0.25, 2.5


def _seed(k: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(20240611, spawn_key=(k,))


def test_sensitivity_is_rounded_up_and_matches_the_formula() -> None:
    for s in (1, 2, 3, 43, 104):
        for n in (1, 3, 7, 21619):
            value = l2_sensitivity(B, s, n)
            assert value >= 2 * B * math.sqrt(s) / n
            assert value <= (2 * B * math.sqrt(s) / n) * (1 + 4e-16)


def test_calibration_meets_the_target_with_the_exact_accountant() -> None:
    cal = calibrate_noise_multiplier(EPS, DELTA)
    certified = epsilon_routes(Gaussian(cal.parameter, 1), DELTA, include_pld=False).epsilon
    assert certified == cal.achieved.epsilon <= EPS
    assert certified > EPS * (1 - 1e-5)  # not needlessly noisy
    # the per-phase mechanism (sigma rounded up, sensitivity rounded up) is within the target
    protocol = CentralGaussianIdealised(EPS, DELTA, B)
    for n, s in ((2, 43), (21619, 41), (5, 1)):
        g = protocol.guarantee(n, s)
        assert g.sensitivity == l2_sensitivity(B, s, n)
        assert epsilon_routes(g, DELTA, include_pld=False).epsilon <= EPS


PROTOCOLS = {
    ("cdp-dpe", "float-safe"): CentralDiscreteGaussian,
    ("ldp-dpe", "float-safe"): LocalDiscreteGaussian,
    ("cdp-dpe", "idealised"): CentralGaussianIdealised,
    ("ldp-dpe", "idealised"): LocalGaussianIdealised,
}


@pytest.mark.parametrize("algorithm, noise", list(PROTOCOLS))
def test_ledger_equals_the_accountant(algorithm: str, noise: str) -> None:
    result = run_linear(algorithm, synthetic_instance(), 3, DPEConfig(horizon=20_000, epsilon=EPS, delta=DELTA, noise=noise))
    ledger = result.ledger
    assert ledger is not None and len(ledger.charges) == result.communication["phases_with_feedback"]
    protocol = PROTOCOLS[algorithm, noise](EPS, DELTA, B)
    fed = [p for p in result.phases if p["clients"]]
    mechanisms = [protocol.mechanism(p["clients"], p["support_size"]) for p in fed]
    # fresh clients per phase: the worst user's spend is the worst single charge, and each charge is
    # the certified epsilon of the mechanism the protocol samples (float-safe: the discrete
    # Gaussian vector's exact profile; idealised: the Gaussian's analytic one)
    if noise == "float-safe":
        # the exact sampler's truncation, paid in the charge (naive.truncation_charge, computed in mpmath)
        aggregate = algorithm == "ldp-dpe"
        slack = [naive.truncation_charge(m.sigma2, m.sensitivity, m.dimension, DELTA, aggregate) for m in mechanisms]
        per_charge = [m.epsilon(d0) for m, (d0, _) in zip(mechanisms, slack)]
        if aggregate:
            per_charge = [naive.aggregate_epsilon(e, m.dimension) for e, m in zip(per_charge, mechanisms)]
        charged = [d for _, d in slack]
        assert [c.guarantee for c in ledger.charges] == [ApproxDP(e, d) for e, d in zip(per_charge, charged)]
        assert all(d <= DELTA for d in charged)
    else:
        per_charge = [epsilon_routes(c.guarantee, DELTA, include_pld=False).epsilon for c in ledger.charges]
        assert [c.guarantee for c in ledger.charges] == mechanisms
    assert result.privacy["spent"]["epsilon"] == max(per_charge) <= EPS
    assert result.privacy["zcdp_rho"] == max(m.zcdp().rho for m in mechanisms)
    assert result.privacy["implementation"] == noise
    for charge, phase in zip(ledger.charges, fed):
        assert charge.guarantee == protocol.guarantee(phase["clients"], phase["support_size"])
        assert len(charge.participants) == phase["clients"]
        # the ledger's record names the implementation
        assert charge.label.startswith(f"phase {phase['phase']} [{noise}")
        assert ("not DP in floating point" in charge.label) == (noise == "idealised")
    users = [set(c.participants) for c in ledger.charges]
    assert sum(len(u) for u in users) == len(set().union(*users))  # disjoint


@pytest.mark.parametrize("cls", [CentralDiscreteGaussian, LocalDiscreteGaussian, CentralGaussianIdealised])
def test_budget_exhausted_raises_before_any_release(cls) -> None:
    protocol = cls(EPS, DELTA, B)
    ledger = Ledger(ApproxDP(1.0, DELTA))  # less than one release costs
    privatizer = VectorPrivatizer(protocol, ledger, _seed(0))
    state = privatizer._rng.bit_generator.state
    with pytest.raises(BudgetExceeded):
        privatizer.release_mean(np.zeros((10, 4)), range(10))
    assert privatizer.releases == 0 and ledger.charges == ()
    assert privatizer._rng.bit_generator.state == state  # no noise was drawn


def test_returning_users_exhaust_the_budget_inside_a_run() -> None:
    """A population too small for the schedule: users return, the ledger composes and refuses."""
    base = synthetic_instance(d=4, k=20, population=12)
    with pytest.raises(BudgetExceeded):
        run_linear("cdp-dpe", base, 0, DPEConfig(horizon=50_000, epsilon=EPS, delta=DELTA))
    # with enough users the same run is within budget
    roomy = synthetic_instance(d=4, k=20, population=100_000)
    result = run_linear("cdp-dpe", roomy, 0, DPEConfig(horizon=50_000, epsilon=EPS, delta=DELTA))
    assert result.clients["returning"] == 0 and result.privacy["spent"]["epsilon"] <= EPS


def test_reports_outside_the_bound_are_refused_not_clipped() -> None:
    privatizer = VectorPrivatizer(CentralDiscreteGaussian(EPS, DELTA, B), Ledger(ApproxDP(EPS, DELTA)), _seed(1))
    with pytest.raises(ValueError, match="reports"):
        privatizer.release_mean(np.full((3, 2), B + 0.1), range(3))
    with pytest.raises(ValueError, match="participants"):
        privatizer.release_mean(np.zeros((3, 2)), range(4))
    assert privatizer.releases == 0 and privatizer.ledger.charges == ()
    with pytest.raises(ValueError, match="reports"):
        NonPrivateAggregator(B).release_mean(np.array([[np.nan]]), None)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: CentralDiscreteGaussian(0.0, DELTA, B), "epsilon"),
        (lambda: CentralGaussianIdealised(EPS, 1.0, B), "delta"),
        (lambda: LocalDiscreteGaussian(EPS, DELTA, -1.0), "reward_bound"),
        (lambda: LocalGaussianIdealised(EPS, DELTA, -1.0), "reward_bound"),
        (lambda: CentralDiscreteGaussian(EPS, DELTA, B).grid_noise(1, 0), "s"),
        (lambda: CentralDiscreteGaussian(1e-3, 1e-6, B).grid_noise(1, 43), "epsilon"),  # beyond the exact sampler's range
        (lambda: DPEConfig(epsilon=1.0, delta=0.1, noise="float"), "noise"),
        (lambda: l2_sensitivity(B, 0, 1), "support_size"),
        (lambda: VectorPrivatizer(object(), Ledger(ApproxDP(1.0, 0.1)), _seed(0)), "protocol"),
        (lambda: VectorPrivatizer(CentralDiscreteGaussian(EPS, DELTA, B), Ledger(ApproxDP(1.0, 0.1)), 5), "seed"),
        (lambda: VectorPrivatizer(CentralDiscreteGaussian(EPS, DELTA, B), Ledger(ApproxDP(1.0, 0.1)), _seed(0), path="fast"), "path"),
    ],
)
def test_bad_input_names_the_parameter(call, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()


def _variance_test(samples: np.ndarray, sigma: float, alpha: float = 1e-6) -> bool:
    """Two-sided chi-square test of Var = sigma^2 for iid N(0, sigma^2) samples: True = accept."""
    m = samples.size
    statistic = float(np.sum(samples**2)) / sigma**2  # mean is known (0): chi2 with m dof
    return stats.chi2.ppf(alpha / 2, m) <= statistic <= stats.chi2.ppf(1 - alpha / 2, m)


class _UnderNoised(CentralGaussianIdealised):
    """A wrong variant: draws 10% less noise than it charges for."""

    def release(self, reports, rng, *, path):
        n, s = reports.shape
        return reports.mean(axis=0) + rng.normal(0.0, self.sigma(n, s) / 1.1, size=s)


class _UnderNoisedDiscrete(CentralDiscreteGaussian):
    """A wrong float-safe variant: its discrete Gaussian has sd / 1.1 (variance / 1.21) of what it charges for."""

    def release(self, reports, rng, *, path):
        n, s = reports.shape
        total = self.encode(reports, rng).sum(axis=0) + discrete_gaussian(rng, math.ceil(self.grid_noise(n, s).sigma2 / 1.21), size=s)
        return self._decode(total, n, s)


def test_released_noise_has_the_charged_variance() -> None:
    """The noise in the central and local releases has exactly the charged mechanism's variance.

    Statistic: sum of squared noise / sd^2 over m = 20,000 coordinates, chi-square(m) under the
    correct law (for the float-safe privatizers the noise is (B / (g n)) times a discrete Gaussian of
    sigma ~ 10^4 grid steps, whose moments are the continuous Gaussian's up to e^{-2 pi^2 sigma^2};
    zero reports are grid points, so no rounding noise enters; ``noise_sd``'s rounding term n/4
    changes sd by < 1e-8). Two-sided test at level 1e-6 per check, 6 checks (Bonferroni: family-wise
    false alarm <= 6e-6). Power against the under-noised variants (sd / 1.1, float and discrete;
    variance ratio 0.826): the statistic's mean shifts by 0.174 m = 3480 against a sd of
    sqrt(2m) = 200 (17 sd), power > 1 - 1e-30 each.
    """
    n, s, releases = 7, 2000, 10
    reports = np.zeros((n, s))
    checks = []
    cases = [(CentralDiscreteGaussian, "per-user"), (LocalDiscreteGaussian, "per-user"), (LocalDiscreteGaussian, "aggregate"),
             (CentralGaussianIdealised, "per-user"), (LocalGaussianIdealised, "per-user"), (LocalGaussianIdealised, "aggregate")]
    for k, (cls, path) in enumerate(cases):
        protocol = cls(EPS, DELTA, B)
        privatizer = VectorPrivatizer(protocol, Ledger(ApproxDP(EPS, DELTA)), _seed(10 + k), path=path)
        noise = np.concatenate([privatizer.release_mean(reports, range(i * n, (i + 1) * n)).estimate for i in range(releases)])
        checks.append(_variance_test(noise, protocol.noise_sd(n, s)))
    wrong_rejected = []
    for k, wrong in enumerate((_UnderNoised(EPS, DELTA, B), _UnderNoisedDiscrete(EPS, DELTA, B))):
        privatizer = VectorPrivatizer(wrong, Ledger(ApproxDP(EPS, DELTA)), _seed(20 + k))
        noise = np.concatenate([privatizer.release_mean(reports, range(i * n, (i + 1) * n)).estimate for i in range(releases)])
        wrong_rejected.append(not _variance_test(noise, wrong.noise_sd(n, s)))
    assert checks == [True] * 6
    assert wrong_rejected == [True, True]


def test_non_private_instances_are_validated() -> None:
    with pytest.raises(ValueError, match="theta"):
        LinearInstance("x", np.eye(2), np.array([2.0, 0.0]))
    with pytest.raises(ValueError, match="actions"):
        LinearInstance("x", 2 * np.eye(2), np.array([0.5, 0.0]))
    with pytest.raises(ValueError, match="theta"):
        LinearInstance("x", np.eye(2), np.array([0.5, 0.5]))  # two optimal actions
