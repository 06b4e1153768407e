"""Server-view one-run audits and the f-DP form of the one-run bound (issue 33): the recursion against an
independent mpmath implementation and an independent linear program, its exact level on randomized
response, a wrong variant rejected, and server-view audits of Dist-DP-SE / Dist-RDP-SE runs."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import optimize, stats

from accounting import TradeOffCurve
from dpverify._audit._one_run_fdp import (
    fdp_epsilon,
    fdp_mu,
    fdp_rejects,
    fdp_rejects_mp,
    fdp_total_mass,
    gdp_curve,
)
from dpverify._audit._one_run_server import server_one_run_audit

# ---- the recursion, written again in mpmath (50 digits) from the paper's statement ----------------------


def _reference_total(eps: float, delta: float, m: int, c: int, v: int, tau: float, *, all_right_start: bool = False) -> mp.mpf:
    """r_0 + h_0 of Mahloujifar, Melis & Chaudhuri's recursion for the (eps, delta) curve, in mpmath.
    ``all_right_start``: the wrong variant that starts from r = tau c / m (every guess counted right)."""
    with mp.workdps(50):
        E = mp.e ** mp.mpf(eps)
        d = mp.mpf(delta)

        def least_fpr(x):  # inf {a : 1 - f(a) >= x} for f of (eps, delta)-DP
            return max(mp.mpf(0), (x - d) / E, 1 - d - E * (1 - x))

        r = mp.mpf(tau) * (c if all_right_start else v) / m
        h = mp.mpf(tau) * (c - v) / m
        for i in range(v - 1, -1, -1):
            h_next = max(h, least_fpr(r))
            r = min(r + mp.mpf(i) / (c - i) * (h_next - h), mp.mpf(1))
            h = h_next
        return r + h


def _lp_total(eps: float, delta: float, m: int, c: int, v: int, tau: float) -> float:
    """The least (c/m) sum_i P[C = i] that the f-DP constraints H_{j-1} >= b^-1(R_j) and P[C >= v] >= tau
    allow, as a linear program over (P[C = i])_i (an independent formulation: no greedy order)."""
    n, e = c + 1, math.exp(eps)
    rows, rhs = [np.r_[np.zeros(v), -np.ones(n - v)]], [-tau]
    for j in range(1, c + 1):
        h = np.array([(c - i) / m if i >= j - 1 else 0.0 for i in range(n)])
        r = np.array([i / m if i >= j else 0.0 for i in range(n)])
        rows += [-h + r / e, -h + e * r]
        rhs += [delta / e, -(1 - delta - e)]
    res = optimize.linprog(np.ones(n), A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[(0, None)] * n, method="highs")
    return float(res.fun) * c / m


_GRID = [(m, c, v, eps, delta) for (m, c, v) in ((20, 10, 9), (30, 20, 17), (50, 30, 25), (40, 40, 32), (60, 20, 19))
         for (eps, delta) in ((0.5, 0.0), (1.0, 0.0), (1.0, 0.01))]


@pytest.mark.parametrize("m, c, v, eps, delta", _GRID)
def test_fdp_recursion_matches_mpmath_and_the_linear_program(m, c, v, eps, delta):
    """Deterministic. The float recursion equals the mpmath one to 1e-12; where its cap (r <= 1) is
    inactive it equals the linear program's minimum (so the greedy recursion is the least mass the
    constraints allow: it never over-rejects), and where the cap is active both exceed c/m (both reject)."""
    curve = TradeOffCurve.from_approx_dp(eps, delta)
    ours = fdp_total_mass(curve, m, c, v, 0.05)
    reference = float(_reference_total(eps, delta, m, c, v, 0.05))
    assert abs(ours - reference) <= 1e-12 * max(1.0, reference)
    lp = _lp_total(eps, delta, m, c, v, 0.05)
    if ours < 1.0:
        assert abs(ours - lp) <= 1e-7 * max(1.0, lp)
    else:
        assert ours > c / m and lp > c / m
    assert fdp_rejects(curve, m, c, v, level=0.05) == (reference > mp.mpf(c) / m)


def test_fdp_test_has_its_level_on_randomized_response_and_rejects_a_wrong_variant():
    """Exact, deterministic: guesses right independently with probability e/(1+e) (eps = 1 randomized
    response, the extreme case of a 1-DP mechanism). The probability that the f-DP test of the 1-DP curve
    rejects is P[Bin(c, e/(1+e)) >= w*] (w* the least rejecting count) <= 0.05. The wrong variant that
    starts the recursion with every guess counted right (r = tau c / m) rejects with probability > 0.05
    (0.137 at (1000, 600)), so this test rejects it."""
    p = math.e / (1 + math.e)
    curve = TradeOffCurve.from_approx_dp(1.0, 0.0)
    for m, c in ((1000, 600), (300, 150)):
        start = int(0.7 * c)  # below e/(1+e) c: no count there rejects (checked: the scan must not start rejecting)
        assert not fdp_rejects(curve, m, c, start, level=0.05, certify=False)
        ours = next(w for w in range(start, c + 1) if fdp_rejects(curve, m, c, w, level=0.05, certify=False))
        assert stats.binom.sf(ours - 1, c, p) <= 0.05
        wrong = next(w for w in range(start, c + 1) if _reference_total(1.0, 0.0, m, c, w, 0.05, all_right_start=True) > mp.mpf(c) / m)
        assert wrong < ours
        if m == 1000:
            assert stats.binom.sf(wrong - 1, c, p) > 0.05


def test_fdp_epsilon_is_a_rejected_epsilon_and_bad_input_is_refused():
    """Deterministic: the reported eps is rejected by the mpmath recursion and eps + 1e-6 is not."""
    eps = fdp_epsilon(1000, 600, 457)
    assert 0.95 < eps < 1.05
    assert _reference_total(eps, 0.0, 1000, 600, 457, 0.05) > mp.mpf(600) / 1000
    assert not _reference_total(eps + 1e-6, 0.0, 1000, 600, 457, 0.05) > mp.mpf(600) / 1000
    with pytest.raises(ValueError, match="correct"):
        fdp_epsilon(10, 5, 6)
    with pytest.raises(ValueError, match="deltas"):
        TradeOffCurve((1.0,), (1.5,))


def test_gdp_curve_is_below_the_exact_one_and_fdp_mu_is_a_rejected_mu():
    """Deterministic. The GDP curve the test uses lies below the exact mu-GDP trade-off Phi(Phi^-1(1 - x) - mu)
    (mpmath, 30 digits) at 201 points -- so testing it is conservative -- and within 0.002 of it (a curve of
    one (eps, delta) pair, the wrong variant, is 0.1 below somewhere and fails the second check). fdp_mu's
    answer is rejected by the mpmath recursion and 1.01 times it is not."""
    mu = 1.0
    curve = gdp_curve(mu)
    x = np.linspace(0.0, 1.0, 201)
    with mp.workdps(30):
        exact = np.array([float(mp.ncdf(mp.sqrt(2) * mp.erfinv(2 * (1 - mp.mpf(float(a))) - 1) - mu)) if 0 < a < 1 else float(a == 0) for a in x])
    ours = curve.type_ii(x)
    assert np.all(ours <= exact + 1e-12)
    assert np.max(exact - ours) < 2e-3
    one_pair = TradeOffCurve.from_approx_dp(1.0, float(curve.deltas[int(np.searchsorted(curve.epsilons, 1.0))]))
    assert np.max(exact - one_pair.type_ii(x)) > 0.05
    found = fdp_mu(5600, 400, 396)
    assert 1.0 < found < 2.0
    assert fdp_rejects_mp(gdp_curve(found), 5600, 400, 396, 0.05)
    assert not fdp_rejects_mp(gdp_curve(1.01 * found), 5600, 400, 396, 0.05)


# ---- server-view audits of runs -------------------------------------------------------------------


def test_server_view_audit_catches_an_aggregator_at_the_wrong_scale():
    """Dist-DP-SE at eps = 1, 10 runs of 20,480 users pooled (1,400 canary slots), seeds 0, 10, .., 40. The planted
    aggregator (Polya shares drawn at 2 eps, ledger charging eps) is caught -- its f-DP test of the 1-DP
    curve rejects at 95% -- in all 5; the correct runs are flagged in at most 1 (false-alarm probability
    P[Bin(5, 0.05) >= 2] = 0.023 for a valid test). A no-power auditor fails the first assertion, an
    auditor that flags everything the second."""
    caught = flagged = 0
    for seed in range(0, 50, 10):
        planted = server_one_run_audit("dist-dp-se", epsilon=1.0, seeds=10, seed=seed, planted_scale=2.0)
        honest = server_one_run_audit("dist-dp-se", epsilon=1.0, seeds=10, seed=seed)
        caught += planted.verdict == "violated"
        flagged += honest.verdict == "violated"
        assert planted.epsilon_pure > honest.epsilon_pure
    assert caught == 5
    assert flagged <= 1


def test_server_view_result_names_view_seeds_and_counts():
    """Seeded (seed 3), deterministic given the seed: the counts add up, the bounds are recomputable from
    them, and the result says how many seeds were pooled."""
    from dpverify._audit._one_run_bound import one_run_epsilon

    audit = server_one_run_audit("dist-rdp-se", epsilon=1.0, seeds=4, seed=3, horizon=2_560, arms=4)
    assert audit.seeds_pooled == 4 and audit.canaries == 4 * 4 * 11 and 0 < audit.observed <= audit.canaries
    assert 0 < audit.correct <= audit.guesses <= audit.canaries
    assert audit.epsilon_approx == one_run_epsilon(audit.canaries, audit.guesses, audit.correct, delta=audit.claim_delta)
    assert audit.as_dict()["seeds_pooled"] == 4 and audit.as_dict()["view"].startswith("server")
    with pytest.raises(ValueError, match="algorithm"):
        server_one_run_audit("ldp-se", epsilon=1.0)


def test_server_view_claims_join_holm():
    """The shipped Dist-DP-SE server-view claim holds and its planted twin is caught in one suite run (Holm
    over the 2 claims, seed 0); the planted p-value is below its Holm level, and the honest row's bound is
    the f-DP form's recomputed from its counts."""
    from pathlib import Path

    from dpverify._audit._suite import load_suite, run_suite

    root = Path(__file__).resolve().parents[1] / "audits"
    specs = load_suite(root / "dist_dp_se_eps1_one_run_server.toml") + load_suite(root / "planted" / "one_run_server_dist_dp_se_wrong_scale.toml")
    outcome = run_suite(specs, executor="serial")
    rows = {r.spec.name: r for r in outcome.rows}
    assert outcome.exit_code == 0
    honest, planted = rows["dist_dp_se_eps1_one_run_server"], rows["planted/one_run_server_dist_dp_se_wrong_scale"]
    assert honest.verdict == "holds" and planted.verdict == "caught"
    assert planted.p_value <= planted.level
    d = honest.result.details
    assert honest.result.lower_bound == fdp_epsilon(d["canaries"], d["guesses"], d["correct"], level=honest.level, delta=d["delta"])
