"""Unambiguous pair input, and the report's other readings of a bound: epsilon at the claimed delta
(beside delta at the claimed epsilon) and the implied zCDP rho, as fields of their own.

Error rates. The statistical tests audit at alpha = 1e-3 with fixed seeds, never retried: each
stated lower bound exceeds the truth with probability at most 1e-3, so "the bound is below the
true value" fails with probability <= 1e-3 on the correct mechanisms. Power: the wrong variants
are far from their claims (randomized response at eps0 = 2 against a claim computed for
eps0 = 1; a Gaussian with sigma = 1, rho = 0.5, against the claimed rho = 0.125), so at 200,000
draws the bounds clear the claims by many widths; the asserted margins are wide.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from accounting import ZCDP, ApproxDP
from dpverify._audit import audit
from dpverify._audit._estimators import event_delta_bound, event_epsilon_bound
from dpverify._audit._neighbours import as_pairs
from dpverify._audit._rescore import rescore
from dpverify._audit._results import AuditResult
from dpverify._cli._cmd_audit import audit_command

# ---- pairs ------------------------------------------------------------------------------------------


def test_a_tuple_of_two_pairs_is_rejected_not_read_as_one_pair() -> None:
    with pytest.raises(ValueError, match=r"pairs=.*ambiguous: pass a list \[\(0, 1\), \(1, 0\)\] for two pairs"):
        as_pairs(((0, 1), (1, 0)))

    def mechanism(data, rng, size):
        return data + rng.integers(0, 2, size=size)

    with pytest.raises(ValueError, match="ambiguous"):  # through the public entry point too
        audit(mechanism, ((0, 1), (1, 0)), ApproxDP(1.0, 0.1), samples=1000)


def test_unambiguous_pair_inputs() -> None:
    assert [(p.d, p.d_prime) for p in as_pairs([(0, 1), (1, 0)])] == [(0, 1), (1, 0)]  # a list: two pairs
    assert [(p.d, p.d_prime) for p in as_pairs(((0, 1), (1, 0), (2, 3)))] == [(0, 1), (1, 0), (2, 3)]
    (one,) = as_pairs([((0, 1), (1, 0))])  # one pair of tuple inputs, wrapped
    assert (one.d, one.d_prime) == ((0, 1), (1, 0))
    (scalar,) = as_pairs((0, 1))
    assert (scalar.d, scalar.d_prime) == (0, 1)
    (vector,) = as_pairs((np.array([0, 1]), np.array([1, 0])))
    assert vector.d.tolist() == [0, 1]


# ---- epsilon at the claimed delta --------------------------------------------------------------------


def _delta_result(a: int, n: int, b: int, m: int, k: int, eps: float, delta: float, level: float) -> AuditResult:
    each = level / (2 * k)
    lower = max(event_delta_bound(a, n, b, m, each, math.exp(eps)), 0.0)
    return AuditResult(delta, lower, a / n - math.exp(eps) * b / m, 1.0 - level, "holds", n, 0.0, "E", "", "delta",
                       details={"counts": (a, n, b, m), "epsilon": eps, "events_tested": k})


def test_epsilon_at_delta_inverts_the_delta_bound() -> None:
    """Same event, same level: the delta bound evaluated at epsilon_at_delta(delta) is delta,
    and with delta = 0 it is the event's epsilon bound (both computed by the estimators' code)."""
    a, n, b, m, k, level = 40_000, 100_000, 15_000, 100_000, 8, 1e-4
    for delta in (0.0, 1e-3, 0.05, 0.2):
        r = _delta_result(a, n, b, m, k, 0.5, delta, level)
        eps_d = r.epsilon_at_delta
        assert r.delta_at_epsilon == r.lower_bound
        assert eps_d is not None and eps_d > 0
        back = event_delta_bound(a, n, b, m, level / (2 * k), math.exp(eps_d))
        assert back == pytest.approx(delta, abs=1e-12)
    zero = _delta_result(a, n, b, m, k, 0.5, 0.0, level)
    assert zero.epsilon_at_delta == pytest.approx(event_epsilon_bound(a, n, b, m, level / (2 * k)) - 0.0, rel=1e-9, abs=1e-9)
    # a delta above the event's probability leaves nothing: 0, not a negative or nan
    assert _delta_result(a, n, b, m, k, 0.5, 0.5, level).epsilon_at_delta == 0.0
    # re-scored at a larger level: narrower intervals, larger bound, recomputed (not carried over)
    r = _delta_result(a, n, b, m, k, 0.5, 1e-3, level)
    assert rescore(r, 1e-2).epsilon_at_delta > r.epsilon_at_delta


def _rr(eps0: float):
    p = math.exp(eps0) / (1 + math.exp(eps0))

    def mechanism(bit, rng, size):
        keep = rng.random(size) < p
        return np.where(keep, bit, 1 - bit).astype(np.int64)

    return mechanism, p


def test_epsilon_at_delta_on_randomized_response() -> None:
    """RR(eps0 = 1) is (0.5, delta(0.5))-DP exactly, delta(eps) = p - e^eps (1 - p): the report's
    epsilon at that delta is a lower bound on the true 0.5 and close to it; RR(eps0 = 2) claimed
    the same is violated, and its epsilon at that delta is far above 0.5 (true log((p2 - d)/(1 - p2)))."""
    mech, p = _rr(1.0)
    delta = p - math.exp(0.5) * (1 - p)
    claim = ApproxDP(0.5, delta)
    report = audit(mech, [(0, 1), (1, 0)], claim, samples=200_000, alpha=1e-3, seed=3)
    assert report.passed
    eps_d = [r.epsilon_at_delta for r in report]
    assert all(e is not None and e <= 0.5 + 1e-9 for e in eps_d)
    assert max(eps_d) > 0.4
    mech2, p2 = _rr(2.0)
    bad = audit(mech2, [(0, 1), (1, 0)], claim, samples=200_000, alpha=1e-3, seed=3)
    assert not bad.passed
    true_eps = math.log((p2 - claim.delta) / (1 - p2))
    worst = max(r.epsilon_at_delta for r in bad)
    assert 1.5 < worst <= true_eps  # power far above the claim 0.5; soundness: never above the exact eps at delta
    assert "epsilon >= " in str(bad.worst())
    assert {"delta_at_epsilon", "epsilon_at_delta", "rho"} <= set(bad.to_dict()["results"][0])


# ---- rho for zCDP claims -----------------------------------------------------------------------------


def _gaussian(sigma: float):
    def mechanism(x, rng, size):
        return x + rng.normal(0.0, sigma, size=size)

    return mechanism


def test_rho_on_gaussian() -> None:
    """N(x, 4) is 0.125-zCDP exactly: result.rho is a lower bound on 0.125 and within a factor 2
    of it; N(x, 1) (rho 0.5) claimed 0.125-zCDP is violated with rho > 0.2."""
    # real-arithmetic claims (float_bits=False): numpy's float Gaussian leaks through its low bits
    good = audit(_gaussian(2.0), (0.0, 1.0), ZCDP(0.125), samples=200_000, alpha=1e-3, seed=5, float_bits=False)
    assert good.passed
    assert all(r.rho is not None and 0.06 < r.rho <= 0.125 for r in good)
    r = good.results[0]
    assert r.rho == pytest.approx(max(lo / a for lo, a in zip(r.details["lower"], r.details["orders"])))
    bad = audit(_gaussian(1.0), (0.0, 1.0), ZCDP(0.125), samples=200_000, alpha=1e-3, seed=5, float_bits=False)
    assert not bad.passed and max(r.rho for r in bad) > 0.2
    assert all(r.epsilon_at_delta is None and r.delta_at_epsilon is None for r in bad)


# ---- in the gate's JSON and table ---------------------------------------------------------------------


def test_gate_reports_the_new_fields(tmp_path: Path) -> None:
    # the discrete Gaussian (integer outputs: no floating-point artefact to tell apart), 0.125-zCDP
    (tmp_path / "g.toml").write_text('target = "discrete-gaussian"\n[parameters]\nsigma = 2\n[audit]\nsamples = 20_000\n')
    (tmp_path / "b.toml").write_text('target = "binomial"\n[parameters]\ntrials = 64\np = 0.5\n'
                                     '[claim]\nform = "approx"\nepsilon = 1.0\n[audit]\nsamples = 20_000\n')
    report = tmp_path / "out.json"
    result = CliRunner().invoke(audit_command, [str(tmp_path), "--json", str(report), "--executor", "serial"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(report.read_text())["results"]}
    g, b = rows["g"], rows["b"]
    assert g["claimed_rho"] == 0.125 and 0 <= g["rho"] <= 0.125 and g["epsilon_at_delta"] is None
    assert b["estimator"] == "delta" and b["delta_at_epsilon"] == b["lower_bound"]
    assert b["epsilon_at_delta"] is not None and b["epsilon_at_delta"] <= 1.0 and b["rho"] is None
    assert "rho " in result.output and "eps " in result.output and " @ " in result.output
