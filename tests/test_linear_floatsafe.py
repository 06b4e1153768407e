"""DP-DPE's float-safe privatizers: grid encoding, sensitivity after rounding, integer noise only, selection.

Randomised tests use fixed seeds; each states its false-alarm rate and what it has power against.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import naive
from accounting import ApproxDP, Ledger
from accounting._mechanisms import DiscreteGaussianVector
from dpverify._bandits.linear import (
    CentralDiscreteGaussian,
    CentralGaussianIdealised,
    DPEConfig,
    LocalDiscreteGaussian,
    LocalGaussianIdealised,
    VectorPrivatizer,
    run_linear,
    synthetic_instance,
)
from dpverify._bandits.linear._privatizers import SIGMA2_TARGET
from dpverify._bandits.linear._registration import run_for_registry
from dpverify._executed._samplers import discrete_gaussian, discrete_gaussian_range

EPS, DELTA, B = 10.0, 0.25, 2.5
SMALL = dict(d=5, k=40)


@settings(max_examples=200, deadline=None)
@given(
    s=st.integers(1, 50),
    eps=st.sampled_from([0.5, 1.0, 10.0, 20.0]),
    y=st.lists(st.one_of(st.sampled_from([-B, B, np.nextafter(B, 0.0), -np.nextafter(B, 0.0), 0.0]), st.floats(-B, B)), min_size=2, max_size=2),
    seed=st.integers(0, 2**32 - 1),
)
def test_codes_stay_in_the_box_so_rounding_keeps_the_sensitivity(s: int, eps: float, y: list[float], seed: int) -> None:
    """Any report in [-B, B]^s is encoded in {-g..g}^s, so one client moves the sum of codes by <= 2g per
    coordinate: the box sensitivity the accountant charges (``mechanism(n, s).sensitivity``)."""
    protocol = CentralDiscreteGaussian(eps, DELTA, B)
    g = protocol.grid_noise(2, s).grid
    rng = np.random.default_rng(seed)
    reports = np.array([np.full(s, y[0]), np.full(s, y[1])])
    codes = protocol.encode(reports, rng)
    assert codes.dtype == np.int64 and np.all(np.abs(codes) <= g)
    assert protocol.mechanism(2, s).sensitivity == 2 * g
    assert np.all(np.abs(codes[0] - codes[1]) <= 2 * g)


def test_rounding_is_unbiased() -> None:
    """E[code] = y g / B exactly (randomised rounding).

    For each of 5 report values, 200,000 codes; the mean's z-score against y g / B uses the
    rounding's exact variance f (1 - f). Two-sided at level 1e-6 per value (Bonferroni: false
    alarm <= 5e-6). Power against rounding to nearest (bias up to 1/2 grid step, 0.4 here, against
    a standard error of at most 0.0011): > 1 - 1e-100; the wrong variant is rejected below.
    """
    protocol = CentralDiscreteGaussian(EPS, DELTA, B)
    s = 43
    g = protocol.grid_noise(1, s).grid
    rng = np.random.default_rng(20240612)
    m = 200_000
    values = np.array([0.123456, -1.1, 2.49999, -2.5, 0.5 * B / g * 0.8])
    z_crit = stats.norm.isf(0.5e-6)
    for y in values:
        codes = protocol.encode(np.full((1, s), y).repeat(m // s + 1, axis=0), rng).ravel()[:m]
        x = y * g / B
        f = x - math.floor(x)
        se = math.sqrt(max(f * (1 - f), 1e-300) / m)
        assert abs(codes.mean() - x) <= z_crit * se + 1e-12
    nearest = np.round(values[-1] * g / B)  # the wrong variant: rounding to nearest
    x = values[-1] * g / B
    f = x - math.floor(x)
    assert abs(nearest - x) > z_crit * math.sqrt(f * (1 - f) / m)


@pytest.mark.parametrize("cls, path", [(CentralDiscreteGaussian, "per-user"), (LocalDiscreteGaussian, "per-user"), (LocalDiscreteGaussian, "aggregate")])
def test_release_is_a_function_of_integer_codes_and_integer_noise(cls, path: str) -> None:
    """The release equals (integer codes + exact discrete Gaussian draws) * B / (g n), replayed from the
    same stream: no float noise enters (a float Gaussian would consume the stream differently)."""
    protocol = cls(EPS, DELTA, B)
    reports = np.random.default_rng(5).uniform(-B, B, size=(9, 7))
    n, s = reports.shape
    params = protocol.grid_noise(n, s)
    out = protocol.release(reports, np.random.default_rng(77), path=path)
    replay = np.random.default_rng(77)
    if cls is CentralDiscreteGaussian:
        codes = protocol.encode(reports, replay)
        noise = discrete_gaussian(replay, params.sigma2, size=s, method="inversion")
    elif path == "aggregate":  # the n clients' noise summed in one certified draw of N_Z(0, n sigma^2)
        assert protocol.summed_noise_in_one_draw(n, s)
        codes = protocol.encode(reports, replay)
        noise = discrete_gaussian(replay, n * params.sigma2, size=s, method="inversion")
    else:  # each client's message: its noise drawn first (one block for all clients), then its code added
        client_noise = discrete_gaussian(replay, params.sigma2, size=(n, s), method="inversion")
        noise = client_noise.sum(axis=0)
        codes = protocol.encode(reports, replay)
    assert np.array_equal(out, (codes.sum(axis=0) + noise) * (B / (params.grid * n)))


def test_grid_and_noise_match_the_idealised_mechanism() -> None:
    """sigma^2 ~ SIGMA2_TARGET grid steps^2, certified eps within 1e-6 of the target (not needlessly
    noisy), and the released average's noise sd the idealised one's to 1e-4 (central) and 3e-4 (local)
    up to the largest phase of a T = 1e6 run."""
    for eps in (1.0, 10.0):
        central, ideal = CentralDiscreteGaussian(eps, DELTA, B), CentralGaussianIdealised(eps, DELTA, B)
        local, ideal_local = LocalDiscreteGaussian(eps, DELTA, B), LocalGaussianIdealised(eps, DELTA, B)
        for s in (1, 7, 43):
            p = central.grid_noise(21_619, s)
            assert SIGMA2_TARGET * 0.9 <= p.sigma2 <= SIGMA2_TARGET * 1.1
            assert eps * (1 - 1e-6) <= p.epsilon <= eps
            assert p.sigma2 >= (2 * p.grid * central.noise_multiplier) ** 2 * s
            for n in (2, 21_619):
                assert central.noise_sd(n, s) == pytest.approx(ideal.noise_sd(n, s), rel=1e-4)
                # local: sigma^2 ~ 10^8 / 2^ceil(log2 n) (3,051 at n = 21,619), whose rounding up to an
                # integer and the rounding proxy add <= 4.2e-4 to the variance (2.1e-4 to the sd)
                assert local.noise_sd(n, s) == pytest.approx(ideal_local.noise_sd(n, s), rel=3e-4)


def test_the_default_is_float_safe_and_idealised_is_an_explicit_choice() -> None:
    instance = synthetic_instance(**SMALL)
    for algorithm in ("cdp-dpe", "ldp-dpe"):
        default = run_linear(algorithm, instance, 0, DPEConfig(horizon=3_000, epsilon=EPS, delta=DELTA))
        ideal = run_linear(algorithm, instance, 0, DPEConfig(horizon=3_000, epsilon=EPS, delta=DELTA, noise="idealised"))
        assert default.privacy["implementation"] == default.config["noise"] == "float-safe"
        assert ideal.privacy["implementation"] == ideal.config["noise"] == "idealised"
        assert "not DP in floating point" in ideal.privacy["note"] and "float-safe" in default.privacy["note"]
        assert all("float-safe" in c.label for c in default.ledger.charges)
        assert all("not DP in floating point" in c.label for c in ideal.ledger.charges)


def test_registry_reads_the_noise_field_with_a_float_safe_default() -> None:
    """``dpverify run`` goes through ``run_for_registry``: by default (RunConfig's ``noise`` unset)
    it runs float-safe; ``noise="idealised"`` selects the float Gaussians."""
    from dpverify._bandits._runner import RunConfig

    instance = synthetic_instance(**SMALL)
    config = RunConfig("cdp-dpe", instance, 3_000, epsilon=EPS, delta=DELTA)
    seeds = dict(zip(("instance", "environment", "privatizer", "learner"), np.random.SeedSequence(0, spawn_key=(0,)).spawn(4)))
    default = run_for_registry(config, instance, seeds, 0)
    explicit = run_for_registry(dataclasses.replace(config, noise="idealised"), instance, seeds, 0)
    assert default.extra["privacy"]["implementation"] == "float-safe"
    assert default.ledger["notes"].startswith("float-safe")
    assert explicit.extra["privacy"]["implementation"] == "idealised"
    assert explicit.ledger["notes"].startswith("idealised: not DP in floating point")


def test_float_safe_budget_refusal_leaves_the_ledger_unchanged() -> None:
    protocol = LocalDiscreteGaussian(EPS, DELTA, B)
    ledger = Ledger(ApproxDP(EPS, DELTA))
    privatizer = VectorPrivatizer(protocol, ledger, np.random.SeedSequence(3))
    privatizer.release_mean(np.zeros((4, 3)), range(4), label="phase 1")
    # the local charge pays the exact sampler's truncation (and the one-draw sum's factor) (test below)
    m = protocol.mechanism(4, 3)
    delta0, charged_delta = naive.truncation_charge(m.sigma2, m.sensitivity, 3, DELTA, True)
    eps_l = naive.aggregate_epsilon(m.epsilon(delta0), 3)
    assert ledger.charges[0].guarantee == ApproxDP(eps_l, charged_delta)
    with pytest.raises(Exception, match="budget"):
        privatizer.release_mean(np.zeros((4, 3)), range(4), label="phase 2")  # the same users again: 2 eps > EPS
    assert len(ledger.charges) == 1 and privatizer.releases == 1


def _rounded_noise_law(x: float, sigma2: float, support: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of randomised_rounding(x) + N_Z(0, sigma2) on the integers [-support-2, support+2]."""
    k = np.arange(-support, support + 1)
    w = np.exp(-(k**2) / (2 * sigma2))
    w /= w.sum()
    values = np.arange(-support - 2, support + 3)
    law = np.zeros(values.size)
    low = math.floor(x)
    for code, weight in ((low, 1 - (x - low)), (low + 1, x - low)):
        law[k + code + support + 2] += weight * w
    return values, law


def _exact_delta(x: float, x_prime: float, sigma2: float, s: int, eps: float) -> float:
    _, p1 = _rounded_noise_law(x, sigma2)
    _, q1 = _rounded_noise_law(x_prime, sigma2)
    p, q = p1, q1
    for _ in range(s - 1):
        p, q = np.multiply.outer(p, p1).ravel(), np.multiply.outer(q, q1).ravel()
    return float(np.maximum(p - math.exp(eps) * q, 0).sum())


def test_the_planted_off_lattice_grid_is_a_real_violation_and_the_lattice_grid_is_not() -> None:
    """``audits/planted/dpdpe_grid_off_lattice.toml``: corners +-c = +-0.15 off the lattice, rounding to
    {-1, 0, 1}, claimed at the unrounded sensitivity: the exact delta at eps = 3 (s = 2, sigma^2 = 1/4)
    is 0.0233, 35x the claim. A grid whose corners are lattice points (c = 1: a shift by exactly 2 per
    coordinate) has the law the accountant's DiscreteGaussianVector certifies (sigma^2 = 4 here: the
    certified reduction needs sigma^2 well above 1/4 in two dimensions, and refuses below)."""
    from accounting import Gaussian, rdp_to_delta
    from accounting._mechanisms import DiscreteGaussianVector

    claimed = rdp_to_delta(Gaussian(0.5, 2 * 0.15 * math.sqrt(2)).rdp(), 3.0).delta
    true = _exact_delta(0.15, -0.15, 0.25, 2, 3.0)
    assert true == pytest.approx(0.0233, abs=1e-4) and true > 30 * claimed
    for eps in (0.5, 1.0, 3.0):
        on_lattice = _exact_delta(1.0, -1.0, 4.0, 2, eps)
        assert on_lattice * (1 - 1e-9) <= DiscreteGaussianVector(4, 2, 2).delta(eps) <= on_lattice * (1 + 1e-5)
    with pytest.raises(ValueError, match="sigma2"):
        DiscreteGaussianVector(Fraction(1, 4), 2, 2).delta(3.0)


def test_tail_verifier_covers_the_float_safe_width() -> None:
    """``dpverify tails``: DP-DPE's W_l for the float-safe privatizers (the ``dpdpe-width`` rows of
    CDP-/LDP-DPE) holds with the sub-Gaussian proxy of discrete noise plus rounding, claims no lower
    bound (the noise is not Gaussian), and the idealised rows keep the Gaussian lower bound."""
    from dpverify._tails import dpdpe_catalogue
    from dpverify._tails._claims import Grid, evaluate

    grid = Grid(dpe_horizon=10**5, dpe_epsilons=(1.0,))
    rows = {(c.claim, c.protocol): evaluate(c, grid) for c in dpdpe_catalogue()}
    for algorithm in ("cdp-dpe", "ldp-dpe"):
        safe, ideal = rows["dpdpe-width", algorithm], rows["dpdpe-width-idealised", algorithm]
        assert safe.verdict == ideal.verdict == "holds"
        assert all(e.lower == 0.0 and e.setting["noise"] == "float-safe" for e in safe.evaluations)
        assert all(e.setting["noise"] == "idealised" for e in ideal.evaluations)
        # the same widths up to the rounding term (the float-safe proxy is never smaller)
        for a, b in zip(safe.evaluations, ideal.evaluations):
            assert b.radius <= a.radius <= b.radius * (1 + 1e-4)


def test_an_idealised_vector_protocol_needs_the_opt_in_on_a_durable_ledger(tmp_path, monkeypatch) -> None:
    """As for the scalar protocols: float-Gaussian charges go to a durable ledger only with
    allow_idealised_charges=True, and are labelled idealised there; the float-safe one needs nothing."""
    from accounting import DurableLedger

    monkeypatch.setenv("DPVERIFY_LEDGER_WITNESS", str(tmp_path / "witness"))
    durable = DurableLedger.open(f"sqlite:///{tmp_path}/l.db", ApproxDP(EPS, DELTA), create=True)
    with pytest.raises(ValueError, match="allow_idealised_charges"):
        VectorPrivatizer(CentralGaussianIdealised(EPS, DELTA, B), durable, np.random.SeedSequence(4))
    allowed = VectorPrivatizer(CentralGaussianIdealised(EPS, DELTA, B), durable, np.random.SeedSequence(4), allow_idealised_charges=True)
    allowed.release_mean(np.zeros((4, 3)), range(4), label="phase 1")
    assert "not DP in floating point" in durable.charges[0].label
    VectorPrivatizer(LocalDiscreteGaussian(EPS, DELTA, B), durable, np.random.SeedSequence(5))
    durable.close()


#: eps = 130 at delta = 0.25 and s = 1: sigma^2 ~ 10^8 grid steps^2 and Delta = 2g ~ 16 sigma, so the exact
#: sampler's truncation point ymax ~ 22.5 sigma is only ~6.5 sigma beyond a shifted centre: the mass
#: a neighbour's release puts outside this one's support is tau ~ 9e-8, far above float resolution
LARGE_EPS = 130.0


def test_charged_delta_pays_the_samplers_truncation() -> None:
    """What executes is N_Z(0, sigma^2) conditioned on |Z| <= ymax per coordinate (the int64 range of
    the exact sampler), not DiscreteGaussianVector(sigma^2, 2g, s). For every event E,
    P'_x[E] <= (P_x[E within both supports] + P[Z + x - x' leaves the box]) / P[box], so the release is
    (eps, (delta(eps) + s tau) / (1 - s t1))-DP with t1 = P[|Z| > ymax], tau = P[|Z| > ymax - 2g]
    (bounds computed here in mpmath from the sampler's ymax). The former charge, ApproxDP(eps(delta),
    delta), left tau out: at LARGE_EPS tau = 9e-8 while delta(eps) is within 1e-10 of delta, so it
    fails here. Deterministic (no sampling)."""
    n, s = 4, 1
    protocol = CentralDiscreteGaussian(LARGE_EPS, DELTA, B)
    ledger = Ledger(ApproxDP(LARGE_EPS, DELTA))
    VectorPrivatizer(protocol, ledger, np.random.SeedSequence(3)).release_mean(np.zeros((n, s)), range(n))
    charged = ledger.charges[0].guarantee
    params = protocol.grid_noise(n, s)
    mechanism = DiscreteGaussianVector(params.sigma2, 2 * params.grid, s)
    assert protocol.mechanism(n, s) == mechanism
    ctx = mpmath.MPContext()
    ctx.prec = 400
    ymax = naive.discrete_gaussian_ymax(params.sigma2)
    assert discrete_gaussian_range(params.sigma2)[3] == ymax
    t1 = naive.discrete_gaussian_tail_bound(ctx, params.sigma2, ymax)
    tau = naive.discrete_gaussian_tail_bound(ctx, params.sigma2, ymax - 2 * params.grid)
    assert t1 <= ctx.mpf(2) ** -100 and tau > 1e-8  # the regime this test is about
    executed = (ctx.mpf(mechanism.delta(charged.epsilon)) + s * tau) / (1 - s * t1)
    assert ctx.mpf(charged.delta) >= executed
    assert charged.delta <= DELTA and charged.epsilon <= LARGE_EPS


def test_a_delta_below_the_samplers_slack_is_refused() -> None:
    """delta <= s tau leaves nothing for the analysed mechanism: refused, naming delta."""
    from dpverify._bandits.linear._privatizers import _truncation_slack

    # sigma^2 = 10^8 (sigma = 10^4), ymax = 224,747, a shift of 164,747: tau <= 2 e^{-18} / (1 - e^{-6e-4})
    # = 5.1e-5 (the bound at x = 60,001 = 6 sigma), above delta = 1e-5
    ctx = mpmath.MPContext()
    ctx.prec = 200
    tau = naive.discrete_gaussian_tail_bound(ctx, 10**8, 224_747 - 164_747)
    assert 5e-5 < tau < 5.2e-5
    with pytest.raises(ValueError, match="delta=1e-05"):
        _truncation_slack(10**8, 164_747, 1, 1e-5, False)
    delta0, charged, tail = _truncation_slack(10**8, 164_747, 1, 0.25, False)
    assert tail >= tau and delta0 <= 0.25 - tau and charged <= 0.25
