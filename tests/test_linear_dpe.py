"""DP-DPE runs: sublinear regret, the paper's schedule, reproducibility, registration, validation."""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from dpverify._bandits.linear import (
    ALGORITHMS,
    DPEConfig,
    fixed_client_count,
    li_fig2,
    linear_streams,
    mslr_linear_instance,
    run_linear,
    support_bound,
    synthetic_instance,
)

SMALL = dict(d=5, k=40)


def test_dpe_regret_is_sublinear_on_a_small_instance() -> None:
    """Per-round regret falls by > 10x between T/100 and T and the best action is played most.

    Deterministic given the seeds; a failure is a bug (the elimination is a 1/(kT)-confidence
    rule: with these seeds no wrong elimination occurs and the final active set is {x*}).
    """
    instance = synthetic_instance(**SMALL)
    for seed in range(3):
        result = run_linear("dpe", instance, seed, DPEConfig(horizon=200_000))
        t = np.asarray(result.checkpoints)
        regret = np.asarray(result.regret)
        early = regret[np.searchsorted(t, 2_000)] / 2_000
        assert regret[-1] / t[-1] < early / 10
        assert int(np.argmax(result.pulls)) == instance.best
        assert result.pulls[instance.best] > 0.9 * 200_000
        assert all(a != instance.best for a, _ in result.eliminations)
        assert np.all(np.diff(regret) >= 0)


def test_private_regret_is_sublinear_at_large_epsilon() -> None:
    instance = synthetic_instance(**SMALL)
    # LDP-DPE's privacy term is O(T^{1 - alpha/2}) with a large constant: at this horizon it
    # learns only at large epsilon (at eps = 10 its per-round regret falls 0.71 -> 0.42).
    for algorithm, epsilon in (("cdp-dpe", 10.0), ("ldp-dpe", 100.0)):
        result = run_linear(algorithm, instance, 1, DPEConfig(horizon=200_000, epsilon=epsilon, delta=0.25, privacy_width="exact"))
        t = np.asarray(result.checkpoints)
        regret = np.asarray(result.regret)
        assert regret[-1] / t[-1] < 0.5 * regret[np.searchsorted(t, 2_000)] / 2_000


def test_phase_schedule_matches_the_paper() -> None:
    instance = synthetic_instance(**SMALL)
    result = run_linear("dpe", instance, 0, DPEConfig(horizon=100_000, alpha=0.8))
    beta = 1 / (instance.k * 100_000)
    assert result.config["beta"] == beta
    for p in result.phases:
        assert p["h"] == 2.0 ** p["phase"]  # h_1 = 2, doubling
        assert p["support_size"] <= support_bound(instance.d)
        assert p["g"] <= 2 * instance.d
        if p["clients"]:
            n = p["clients"]
            assert n == math.ceil(2 ** (0.8 * p["phase"]))
            width = (math.sqrt(2 * instance.d / (n * p["h"])) + instance.sigma / math.sqrt(n)) * math.sqrt(2 * math.log(1 / beta))
            assert math.isclose(p["width"], width, rel_tol=1e-12)
    assert sum(p["length"] for p in result.phases) == 100_000
    assert sum(result.pulls) == 100_000
    comm = result.communication
    assert comm["reals_total"] == sum(p["clients"] * p["support_size"] for p in result.phases)
    assert comm["bits_total"] == 64 * comm["reals_total"]


def test_fixed_u_uses_the_same_communication_rule() -> None:
    instance = synthetic_instance(**SMALL)
    config = DPEConfig(horizon=100_000)
    dpe = run_linear("dpe", instance, 4, config)
    fixed = run_linear("dpe-fixedu", instance, 4, config)
    u = fixed_client_count(dpe.phases)
    fed = [p for p in dpe.phases if p["clients"]]
    assert u == math.ceil(sum(p["clients"] * p["support_size"] for p in fed) / sum(p["support_size"] for p in fed))
    assert fixed.communication["clients_per_phase"] == u
    assert {p["clients"] for p in fixed.phases if p["clients"]} == {u}
    assert fixed.communication["fixed_from"]["dpe_reals_total"] == dpe.communication["reals_total"]


def test_one_seed_determines_a_run_and_algorithms_share_streams() -> None:
    instance = synthetic_instance(**SMALL)
    config = DPEConfig(horizon=30_000, epsilon=5.0, delta=0.1)
    a = run_linear("cdp-dpe", instance, 11, config, run_index=2)
    b = run_linear("cdp-dpe", instance, 11, config, run_index=2, streams=linear_streams(11, 2))
    assert a.as_dict() == b.as_dict()
    # another run index gives another run (DPE eliminates here, so its regret shows it)
    d = run_linear("dpe", instance, 11, DPEConfig(horizon=30_000), run_index=2)
    e = run_linear("dpe", instance, 11, DPEConfig(horizon=30_000), run_index=3)
    assert d.regret != e.regret
    # common random numbers: DPE and CDP-DPE see the same phase-1 clients and design
    assert d.phases[0]["support_size"] == a.phases[0]["support_size"] and d.clients["sampled"] == a.clients["sampled"]


def test_sweep_does_not_depend_on_the_executor() -> None:
    kwargs = dict(runs=2, horizon=3_000, epsilons=(10.0,), seed=5)
    with ThreadPoolExecutor(max_workers=1) as one:
        serial = li_fig2(executor=one, **kwargs)
    with ProcessPoolExecutor(max_workers=2) as two:
        parallel = li_fig2(executor=two, **kwargs)
    assert serial == parallel
    assert serial["a"]["spent"]["cdp-dpe"][0] <= 10.0


def test_results_carry_the_required_records() -> None:
    result = run_linear("ldp-dpe", mslr_linear_instance(), 0, DPEConfig(horizon=5_000, epsilon=2.0, delta=0.25))
    data = result.as_dict()
    assert data["instance"]["provenance"]["theta_rescaled_by"] == pytest.approx(1 / 6.380423, rel=1e-6)
    assert data["privacy"]["spent"]["epsilon"] <= 2.0 and data["privacy"]["zcdp_rho"] > 0
    assert data["privacy"]["noise_multiplier"] > 0 and data["privacy"]["calibration"]["route"] == "analytic-gaussian"
    assert data["communication"]["bits_per_user_max"] > 0
    assert data["checkpoints"][-1] == 5_000 and len(data["regret"]) == len(data["checkpoints"])
    assert data["path"] == "per-user" and "ledger" not in data


def test_registered_in_the_bandits_registry() -> None:
    from dpverify._bandits import _catalog as registry
    from dpverify._bandits._figures import figures

    assert set(ALGORITHMS) <= set(registry.algorithms())
    assert {"linear", "mslr-linear"} <= set(registry.instances())
    assert "li-fig2" in figures()
    assert registry.get_algorithm("ldp-dpe").family == "linear" and not registry.get_algorithm("dpe").private


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: run_linear("xdp-dpe", synthetic_instance(**SMALL), 0), "algorithm"),
        (lambda: run_linear("sdp-dpe", synthetic_instance(**SMALL), 0), "epsilon"),
        (lambda: run_linear("dpe", "linear", 0), "instance"),
        (lambda: run_linear("dpe", synthetic_instance(**SMALL), -1), "seed"),
        (lambda: run_linear("cdp-dpe", synthetic_instance(**SMALL), 0, DPEConfig()), "epsilon"),
        (lambda: run_linear("cdp-dpe", synthetic_instance(**SMALL), 0, DPEConfig(epsilon=1.0)), "delta"),
        (lambda: run_linear("dpe", synthetic_instance(**SMALL), 0, DPEConfig(epsilon=1.0, delta=0.1)), "epsilon"),
        (lambda: run_linear("dpe", synthetic_instance(**SMALL), 0, DPEConfig(clients_per_phase=3)), "clients_per_phase"),
        (lambda: DPEConfig(alpha=1.0), "alpha"),
        (lambda: DPEConfig(horizon=0), "horizon"),
        (lambda: DPEConfig(privacy_width="tight"), "privacy_width"),
        (lambda: DPEConfig(epsilon=float("inf")), "epsilon"),
        (lambda: synthetic_instance(d=0), "d"),
        (lambda: synthetic_instance(population=0), "population"),
        (lambda: li_fig2(instance="nope"), "instance"),
    ],
)
def test_bad_input_names_the_parameter(call, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()
