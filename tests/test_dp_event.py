"""from_dp_event and `dpverify account event` against dp_accounting's own answers.

For each event type: ours is never below dp_accounting's optimistic PLD (a lower estimate of the
truth) and at most 1% above its pessimistic PLD (or, for sampling without replacement, which
dp_accounting answers only by RDP, not above 1.5x its RDP value; see BENCHMARKS.md).
"""

from __future__ import annotations

import json
import math
import warnings

import pytest

import accounting as acc
from accounting._events._dp_event import event_to_dict

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.pld import pld_privacy_accountant as pa  # noqa: E402
from dp_accounting.pld import privacy_loss_distribution as pl  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as ra  # noqa: E402

D = dp_accounting
DELTA = 1e-5
H = 1e-4


def theirs_pessimistic(event, relation=D.NeighboringRelation.ADD_OR_REMOVE_ONE):
    acct = pa.PLDAccountant(relation, value_discretization_interval=H)
    acct.compose(event)
    return acct.get_epsilon(DELTA)


def optimistic(pld_obj):
    return pld_obj.get_epsilon_for_delta(DELTA)


def ours(event):
    return acc.epsilon_routes(acc.from_dp_event(event), DELTA, comparisons=False).epsilon


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


CASES = [
    ("gaussian", D.GaussianDpEvent(1.5), lambda: _quiet(pl.from_gaussian_mechanism, 1.5, pessimistic_estimate=False, value_discretization_interval=H, use_connect_dots=False)),
    ("laplace x 20", D.SelfComposedDpEvent(D.LaplaceDpEvent(10.0), 20), lambda: _quiet(pl.from_laplace_mechanism, 10.0, pessimistic_estimate=False, value_discretization_interval=H, use_connect_dots=False).self_compose(20)),
    (
        "poisson gaussian x 50",
        D.SelfComposedDpEvent(D.PoissonSampledDpEvent(0.05, D.GaussianDpEvent(1.0)), 50),
        lambda: _quiet(pl.from_gaussian_mechanism, 1.0, sampling_prob=0.05, pessimistic_estimate=False, value_discretization_interval=H, use_connect_dots=False).self_compose(50),
    ),
    (
        "composed with no-op and discrete laplace",
        D.ComposedDpEvent([D.GaussianDpEvent(3.0), D.NoOpDpEvent(), dp_accounting.dp_event.DiscreteLaplaceDpEvent(0.5, 1), D.SelfComposedDpEvent(D.LaplaceDpEvent(5.0), 3)]),
        lambda: _quiet(pl.from_gaussian_mechanism, 3.0, pessimistic_estimate=False, value_discretization_interval=H, use_connect_dots=False)
        .compose(pl.from_discrete_laplace_mechanism(0.5, sensitivity=1, pessimistic_estimate=False, value_discretization_interval=H))
        .compose(_quiet(pl.from_laplace_mechanism, 5.0, pessimistic_estimate=False, value_discretization_interval=H, use_connect_dots=False).self_compose(3)),
    ),
]


@pytest.mark.parametrize("name,event,opt", CASES, ids=[c[0] for c in CASES])
def test_event_between_dp_accounting_optimistic_and_pessimistic(name, event, opt):
    value = ours(event)
    assert value >= optimistic(opt())
    assert value <= theirs_pessimistic(event) * 1.01


def test_randomized_response_replace_one():
    """dp_accounting 0.4's PLDAccountant ignores ``count`` for a self-composed RandomizedResponse
    (10-fold RR(p=0.2) comes out as one release, 2.197); its answer for the same ten releases
    composed one by one (21.97) is the reference here."""
    event = D.SelfComposedDpEvent(D.RandomizedResponseDpEvent(0.2, 2), 10)
    value = ours(event)
    pess = theirs_pessimistic(D.ComposedDpEvent([D.RandomizedResponseDpEvent(0.2, 2)] * 10), D.NeighboringRelation.REPLACE_ONE)
    opt = pl.from_randomized_response(0.2, 2, pessimistic_estimate=False, value_discretization_interval=H).self_compose(10)
    assert optimistic(opt) <= value <= pess * 1.01


def test_k_ary_randomized_response():
    event = D.ComposedDpEvent([D.RandomizedResponseDpEvent(0.3, 5)] * 20)
    opt = pl.from_randomized_response(0.3, 5, pessimistic_estimate=False, value_discretization_interval=H).self_compose(20)
    pess = theirs_pessimistic(event, D.NeighboringRelation.REPLACE_ONE)
    assert optimistic(opt) <= ours(event) <= pess * 1.01
    # the exact k-ary pair is tighter than binary RR at the same eps (which would also be sound)
    eps0 = acc.from_dp_event(D.RandomizedResponseDpEvent(0.3, 5)).pure().epsilon
    assert ours(event) < acc.epsilon_routes(acc.RandomizedResponse(eps0), DELTA, compose=20).epsilon


def test_sampled_without_replacement_against_rdp():
    event = D.SelfComposedDpEvent(D.SampledWithoutReplacementDpEvent(1000, 10, D.GaussianDpEvent(1.0)), 100)
    acct = ra.RdpAccountant(neighboring_relation=D.NeighboringRelation.REPLACE_ONE)
    acct.compose(event)
    theirs = acct.get_epsilon(DELTA)
    value = ours(event)
    assert value <= 1.5 * theirs
    assert value >= 0.5 * theirs  # a gross slip (e.g. gamma^2 for gamma) would fall far below


def test_non_private_and_no_op():
    assert ours(D.ComposedDpEvent([D.NonPrivateDpEvent(), D.GaussianDpEvent(1.0)])) == math.inf
    assert ours(D.SelfComposedDpEvent(D.GaussianDpEvent(0.0), 3)) == math.inf
    with pytest.raises(ValueError, match="noise_multiplier"):
        acc.from_dp_event({"class_name": "LaplaceDpEvent", "noise_multiplier": -1.0})
    with pytest.raises(ValueError, match="no-op"):
        acc.from_dp_event(D.NoOpDpEvent())
    with pytest.raises(ValueError, match="event"):
        acc.from_dp_event({"class_name": "TreeAggregation"})


def test_json_forms_round_trip():
    event = D.ComposedDpEvent([D.SelfComposedDpEvent(D.PoissonSampledDpEvent(0.01, D.GaussianDpEvent(1.0)), 10), D.LaplaceDpEvent(2.0)])
    direct = acc.from_dp_event(event)
    assert acc.from_dp_event(json.dumps(event_to_dict(event))) == direct
    assert acc.from_dp_event(json.dumps(event.to_named_tuple())) == direct
    assert acc.from_dp_event(event.to_named_tuple()) == direct


def test_cli_reads_dp_accounting_json(tmp_path):
    from click.testing import CliRunner

    from dpverify.cli import main

    event = D.SelfComposedDpEvent(D.LaplaceDpEvent(10.0), 20)
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event_to_dict(event)))
    result = CliRunner().invoke(main, ["account", "event", str(path), "--delta", "1e-5", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["epsilon"] == pytest.approx(ours(event))
    assert {r["route"] for r in payload["routes"]} >= {"pure", "rdp-cks", "pld"}
    bracketed = CliRunner().invoke(main, ["account", "event", str(path), "--bracket", "--json"])
    sandwich = json.loads(bracketed.output)["pld_bracket"]
    assert sandwich["epsilon_lower"] <= payload["epsilon"] <= sandwich["epsilon"] + 1e-12
    # the lower bound is within one grid step per release of dp_accounting's (uncertified) optimistic
    # value: the atom at eps = 0.1 lies just below 1000 h (h = the double nearest 1e-4), so the
    # optimistic side certifiably rounds it down a whole step, where dp_accounting's float floor
    # puts it on 1000 h
    theirs_opt = optimistic(_quiet(pl.from_laplace_mechanism, 10.0, pessimistic_estimate=False, value_discretization_interval=H, use_connect_dots=False).self_compose(20))
    assert theirs_opt - 20 * H * 1.01 <= sandwich["epsilon_lower"] <= theirs_opt
    bad = CliRunner().invoke(main, ["account", "event", str(tmp_path / "missing.json")])
    assert bad.exit_code == 2 and "file=" in bad.output
