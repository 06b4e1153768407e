"""accounting.CertifiedOpacusAccountant and accounting.get_noise_multiplier: Opacus's interface, certified.

Deterministic (no random draws). Opacus needs torch, so its own accountants are not the reference
here; the same DP-SGD histories are compared instead with dp_accounting's PLD of the
Poisson-subsampled Gaussian, independently computed: ours is never below its optimistic estimate
(Privacy Buckets) and never above its pessimistic one (connect-the-dots) by more than 1e-8
relative (a wrong translation -- sensitivity 2, a dropped or double-counted run of steps, a
sampling rate taken as 1 -- leaves that band). At sample_rate = 1, DP-SGD is the Gaussian
mechanism composed, whose exact epsilon comes from the mu-GDP closed form in mpmath: ours is an
upper bound of it and within 1e-6 relative (a linear sum of per-step epsilons, or the RDP
conversion, would be far above). Calibration is checked the same way: the returned sigma meets
the target, and 0.5% less noise does not (1% for a Poisson-sampled history, by
dp_accounting's optimistic PLD). Opacus's own accountant tests, with its accountant classes and
``get_noise_multiplier`` swapped for ours, run from ``tests/_opacus_suite.py`` where Opacus (and
torch) are installed: not here, where a check that skips without torch would be a skipped check.
"""

from __future__ import annotations

import math
import types

import mpmath
import pytest

from accounting import CertifiedOpacusAccountant, get_noise_multiplier

DELTA = 1e-5


# ---- the interface ----------------------------------------------------------------------------


def test_steps_are_merged_into_history_as_opacus_keeps_it():
    accountant = CertifiedOpacusAccountant()
    assert accountant.get_epsilon(DELTA) == 0.0 and len(accountant) == 0
    for sigma, rate in [(1.0, 0.01)] * 3 + [(2.0, 0.01)] + [(1.0, 0.01)] * 2:
        accountant.step(noise_multiplier=sigma, sample_rate=rate)
    assert accountant.history == [(1.0, 0.01, 3), (2.0, 0.01, 1), (1.0, 0.01, 2)]
    assert len(accountant) == 3 and accountant.mechanism() == "certified"


def test_optimizer_hook_steps_at_the_accumulated_rate():
    accountant = CertifiedOpacusAccountant()
    hook = accountant.get_optimizer_hook_fn(sample_rate=0.01)
    optimizer = types.SimpleNamespace(noise_multiplier=1.3, accumulated_iterations=4)
    hook(optimizer)
    hook(optimizer)
    assert accountant.history == [(1.3, 0.04, 2)]


def test_state_dict_round_trip_and_refusals():
    accountant = CertifiedOpacusAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=1.0)
    saved = accountant.state_dict({"other": 1})
    assert saved["other"] == 1 and saved["mechanism"] == "certified" and saved["history"] == accountant.history
    assert saved["history"] is not accountant.history
    fresh = CertifiedOpacusAccountant()
    fresh.load_state_dict(saved)
    assert fresh.history == accountant.history and fresh.get_epsilon(DELTA) == accountant.get_epsilon(DELTA)
    for bad in ({}, {"history": []}, {"mechanism": "certified"}, {"history": [], "mechanism": "rdp"},
                {"history": [(1.0, 2.0, 1)], "mechanism": "certified"}):
        with pytest.raises(ValueError):
            fresh.load_state_dict(bad)


@pytest.mark.parametrize("sigma, rate, name", [(-1.0, 0.1, "noise_multiplier"), (math.inf, 0.1, "noise_multiplier"),
                                               (1.0, 1.5, "sample_rate"), (1.0, -0.1, "sample_rate")])
def test_bad_steps_are_refused_naming_the_parameter(sigma, rate, name):
    with pytest.raises(ValueError, match=name):
        CertifiedOpacusAccountant().step(noise_multiplier=sigma, sample_rate=rate)


def test_edge_steps_free_and_non_private():
    accountant = CertifiedOpacusAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=0.0)  # samples nobody: costs nothing
    assert accountant.get_epsilon(DELTA) == 0.0
    accountant.step(noise_multiplier=0.0, sample_rate=0.1)  # no noise: refused, never reported as finite
    with pytest.raises(ValueError, match="noise_multiplier"):
        accountant.get_epsilon(DELTA)
    with pytest.raises(TypeError):
        CertifiedOpacusAccountant().get_epsilon(DELTA, not_an_option=1)
    with pytest.raises(ValueError, match="delta"):
        CertifiedOpacusAccountant().get_epsilon(1.5)


# ---- sample_rate = 1: the Gaussian composed, mu-GDP in mpmath -----------------------------------


def _gdp_delta(mu, eps):
    """delta(eps) of mu-GDP (Dong, Roth & Su), in mpmath at 50 digits."""
    with mpmath.workdps(50):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("history", [[(2.0, 1.0, 10)], [(1.0, 1.0, 1), (3.0, 1.0, 20), (1.5, 1.0, 4)]])
def test_full_batch_is_the_analytic_gaussian(history):
    accountant = CertifiedOpacusAccountant()
    accountant.history = list(history)
    eps = accountant.get_epsilon(DELTA)
    mu = math.sqrt(sum(n / s**2 for s, _, n in history))
    assert _gdp_delta(mu, eps) <= DELTA  # an upper bound of the true epsilon
    assert _gdp_delta(mu, eps * (1 - 1e-6)) > DELTA  # and tight


# ---- Poisson-sampled histories against dp_accounting's PLD --------------------------------------


def _dp_accounting_epsilon(history, pessimistic):
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = None
    for sigma, rate, steps in history:
        one = pld.from_gaussian_mechanism(sigma, sampling_prob=rate, pessimistic_estimate=pessimistic,
                                          value_discretization_interval=1e-3, use_connect_dots=pessimistic)
        part = one.self_compose(steps)
        total = part if total is None else total.compose(part)
    return total.get_epsilon_for_delta(DELTA)


@pytest.mark.parametrize("history", [[(1.2, 0.02, 300)], [(1.5, 0.04, 60), (1.0, 0.02, 100), (1.5, 0.04, 60)]])
def test_dp_sgd_histories_within_dp_accountings_pld_band(history):
    pytest.importorskip("dp_accounting")
    accountant = CertifiedOpacusAccountant()
    for sigma, rate, steps in history:
        for _ in range(steps):
            accountant.step(noise_multiplier=sigma, sample_rate=rate)
    assert accountant.history == history
    eps = accountant.get_epsilon(DELTA)
    optimistic, pessimistic = _dp_accounting_epsilon(history, False), _dp_accounting_epsilon(history, True)
    assert optimistic <= eps <= pessimistic * (1 + 1e-8), (optimistic, eps, pessimistic)


def test_readme_example():
    """The README's "Opacus users" example and the number it prints."""
    from accounting import CertifiedOpacusAccountant as PRVAccountant

    accountant = PRVAccountant()
    for _ in range(300):
        accountant.step(noise_multiplier=1.2, sample_rate=0.02)
    assert f"{accountant.get_epsilon(delta=1e-5):.7f}" == "1.5259964"


# ---- calibration -----------------------------------------------------------------------------


def test_get_noise_multiplier_full_batch_against_mu_gdp():
    sigma = get_noise_multiplier(target_epsilon=1.0, target_delta=DELTA, sample_rate=1.0, steps=10)
    assert _gdp_delta(math.sqrt(10) / sigma, 1.0) <= DELTA  # meets the target
    assert _gdp_delta(math.sqrt(10) / (sigma * 0.995), 1.0) > DELTA  # and is within 0.5% of the least noise


def test_get_noise_multiplier_dp_sgd_is_certified_and_near_least():
    pytest.importorskip("dp_accounting")
    sigma = get_noise_multiplier(target_epsilon=2.0, target_delta=DELTA, sample_rate=0.05, epochs=2, accountant="prv")
    accountant = CertifiedOpacusAccountant()
    accountant.history = [(sigma, 0.05, 40)]
    assert accountant.get_epsilon(DELTA) <= 2.0
    assert _dp_accounting_epsilon([(sigma * 0.99, 0.05, 40)], False) > 2.0  # 1% less noise misses it (optimistic PLD)


def test_get_noise_multiplier_refusals():
    with pytest.raises(ValueError, match="EITHER"):
        get_noise_multiplier(target_epsilon=1.0, target_delta=DELTA, sample_rate=0.1)
    with pytest.raises(ValueError, match="accountant"):
        get_noise_multiplier(target_epsilon=1.0, target_delta=DELTA, sample_rate=0.1, steps=10, accountant="moments")
    with pytest.raises(ValueError, match="sample_rate"):
        get_noise_multiplier(target_epsilon=1.0, target_delta=DELTA, sample_rate=1.5, steps=10)
    with pytest.raises(ValueError, match="target_epsilon"):  # Opacus: "The privacy budget is too low."
        get_noise_multiplier(target_epsilon=1e-9, target_delta=DELTA, sample_rate=1.0, steps=10**6)


# ---- Opacus's own accountant tests, with the class swapped (when Opacus is importable) ------------

