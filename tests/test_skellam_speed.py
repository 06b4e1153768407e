"""The Skellam accountant's fast paths (module docstring of accounting._mechanisms._skellam,
sections 2, 7 and 8) and the shared, memoised conversions: each must leave every reported value
certified, and the memos must be transparent (same inputs, same output, whatever was computed
before)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from flint import arb

import accounting as acc
from accounting._core._certified import exact, working_precision
from accounting._core._conversions import mechanism_rdp_epsilon, rdp_to_epsilon
from accounting._ledgers._ledger import Ledger
from accounting._mechanisms import _skellam


def _clear_memos() -> None:
    _skellam._BALLS.clear()
    _skellam._PLANS.clear()
    _skellam._CHUNKS.clear()


@pytest.fixture
def fresh_memos():
    """Tests that change module constants must not leave values computed under them memoised."""
    _clear_memos()
    yield
    _clear_memos()


def _same_ball(x: arb, y: arb) -> bool:
    return x.mid().man_exp() == y.mid().man_exp() and x.rad().man_exp() == y.rad().man_exp()


# ---- section 7: the split bound -----------------------------------------------------------------


@pytest.mark.parametrize(
    "delta,terms,af",
    [(91, 28_000, 8.0), (2897, 900_000, 46.0), (2048, 600_000, 2.0), (363, 110_000, 64.0), (5, 10**7, 1.5), (1000, 25_000, 200.0)],
)
def test_split_pieces_partition_delta_and_mu(delta, terms, af):
    pieces = _skellam._split_pieces(delta, terms, af)
    assert sum(d * c for d, c in pieces) == delta
    assert all(d >= 1 and c >= 1 for d, c in pieces)
    assert len(pieces) == 1 or (len(pieces) == 2 and pieces[0][0] == pieces[1][0] + 1)
    mu = Fraction(839260900)
    assert sum(mu * d / delta * c for d, c in pieces) == mu  # the pieces' variances add up to mu


@pytest.mark.parametrize("mu,delta", [(409600, 64), (828100, 91), (6553600, 1280)])
def test_split_bound_is_above_the_exact_sum_and_tight(fresh_memos, monkeypatch, mu, delta):
    """Dist-RDP-SE batch mechanisms (mu = g^2/eps^2, eps = 0.1 and 0.5) whose windows exceed
    EXACT_WINDOW_TERMS: the split bound never goes below the exact value and gives away < 1e-9."""
    alphas = [1.5, 8.0, 45.7, 64.0]
    law = _skellam._float_law(mu)
    assert all(_skellam._window_terms(_skellam._plan(law, delta, a, 96)) > _skellam.EXACT_WINDOW_TERMS for a in alphas)
    with working_precision(96):
        split = [_skellam.skellam_rdp_ball(mu, delta, exact(a)) for a in alphas]
        monkeypatch.setattr(_skellam, "EXACT_WINDOW_TERMS", 10**9)
        _clear_memos()
        summed = [_skellam.skellam_rdp_ball(mu, delta, exact(a)) for a in alphas]
    for a, s, e in zip(alphas, split, summed):
        assert s.upper() >= e.lower(), a
        assert s.upper() > e.upper(), a  # the split path was taken (its slack is visible)
        assert float(((s.upper() - e.upper()) / e.upper()).mid()) < 1e-9, a


def test_split_makes_huge_variances_finite_and_accurate():
    """Dist-RDP-SE with s = 100 at T = 1e7 (mu ~ 8e10): the exact window (~1e7 terms) is beyond
    MAX_WINDOW_TERMS; the split bound is finite and within 1e-8 of the float approximation (itself
    ~1e-11 from the exact value), and never below it by more than that approximation's error."""
    m = acc.Skellam(83891329600, 28964)
    curve = m.rdp()
    law = _skellam._float_law(m.variance)
    assert _skellam._window_terms(_skellam._plan(law, 28964, 8.0, 96)) > _skellam.MAX_WINDOW_TERMS
    for a in (1.5, 8.0, 46.0, 64.0):
        value = curve(a)
        approx = float(curve.approx(np.array([a]))[0])
        assert math.isfinite(value)
        assert approx * (1 - 1e-10) <= value <= approx * (1 + 1e-8), a
    result = acc.epsilon_routes(m, 1e-6, include_pld=False, comparisons=False)
    assert math.isfinite(result.epsilon) and result.route == "rdp-cks"


# ---- section 8: memoised balls are a function of their arguments ---------------------------------


def test_balls_do_not_depend_on_cache_state_or_request_order(fresh_memos):
    cases = [(409600, 64, 8.0), (409600, 64, 64.0), (100, 1, 2.0), (102400, 160, 1000.0), (828100, 91, 45.7), (37, 50, 3000.0), (52900, 23, 1.0001)]
    with working_precision(96):
        first = [_skellam.skellam_rdp_ball(mu, d, exact(a)) for mu, d, a in cases]
        again = [_skellam.skellam_rdp_ball(mu, d, exact(a)) for mu, d, a in cases]
        _clear_memos()
        backwards = [_skellam.skellam_rdp_ball(mu, d, exact(a)) for mu, d, a in reversed(cases)][::-1]
    with working_precision(128):  # the precision is part of the key
        finer = _skellam.skellam_rdp_ball(100, 1, exact(2.0))
    for x, y, z in zip(first, again, backwards):
        assert y is x
        assert _same_ball(x, z)
    assert finer.rad() < first[2].rad()


def test_chunked_pmf_matches_arb_bessel_across_chunk_edges():
    C = _skellam._CHUNK
    with working_precision(96):
        seg = _skellam._Segment(828100, C - 3, 2 * C + 2, 140)
        for n in (C - 3, C - 1, C, C + 1, 2 * C - 1, 2 * C, 2 * C + 2):
            direct = arb(828100).bessel_i(n, scaled=True).log()
            assert seg.logs[n - seg.lo].overlaps(direct)
            assert seg.logs[n - seg.lo].rad() < 1e-35


# ---- section 2/6: float planning ------------------------------------------------------------------


@pytest.mark.parametrize("mu,delta,alphas", [(828100, 91, (1.0001, 1.5, 8.0, 64.0, 1000.0, 1e5)), (839260900, 2897, (8.0,))])
def test_coarse_window_scan_finds_the_dense_window(monkeypatch, mu, delta, alphas):
    law = _skellam._float_law(mu)
    for a in alphas:
        coarse = _skellam._plan_window(law, delta, a, 96)
        with monkeypatch.context() as patch:
            patch.setattr(_skellam, "_DENSE_SCAN", 10**9)
            dense = _skellam._plan_window(law, delta, a, 96)
        assert coarse == dense, a


def test_float_pmf_matches_arb():
    for mu in (300.0, 5000.0, 828100.0, 8.3e10):
        n = np.array([0.0, 1.0, 17.0, math.sqrt(mu), 10 * math.sqrt(mu)]).round()
        got = _skellam._debye_log_pmf(n, mu)
        with working_precision(128):
            ref = [float(arb(mu).bessel_i(int(k), scaled=True).log().mid()) for k in n]
        assert np.allclose(got, ref, rtol=1e-13, atol=0), mu


def test_scalar_mode_matches_array_mode():
    for mu, delta in ((4, 3), (100, 1), (102400, 160), (839260900, 2897)):
        law = _skellam._float_law(mu)
        for am1 in (1e-4, 0.5, 7.0, 63.0, 999.0, 1e5):
            (n_arr,), (s_arr,) = law.mode(np.array([am1]), delta)
            n_sc, s_sc = law.mode_scalar(am1, delta)
            assert n_sc == pytest.approx(n_arr, rel=1e-9, abs=1e-6)
            assert s_sc == pytest.approx(s_arr, rel=1e-9)


# ---- shared conversions: budget, ledger and summary ask for the same thing --------------------


def test_mechanism_conversion_memo_is_transparent():
    m = acc.Skellam(52900, 23)
    fresh = rdp_to_epsilon(m.rdp().times(3), 1e-6)
    cached = mechanism_rdp_epsilon(m, 1e-6, compose=3)
    assert (cached.epsilon, cached.alpha) == (fresh.epsilon, fresh.alpha)
    assert mechanism_rdp_epsilon(acc.Skellam(52900, 23), 1e-6, compose=3) is cached  # equal mechanisms share
    assert mechanism_rdp_epsilon(m, 1e-6, compose=2).epsilon < cached.epsilon  # compose is part of the key
    assert mechanism_rdp_epsilon(m, 1e-7, compose=3).epsilon > cached.epsilon  # so is delta


def test_routes_without_comparisons_give_the_same_answer():
    m = acc.Skellam(25600, 16)
    full = acc.epsilon_routes(m, 1e-6, include_pld=False)
    lean = acc.epsilon_routes(m, 1e-6, include_pld=False, comparisons=False)
    assert (lean.epsilon, lean.route, lean.alpha) == (full.epsilon, full.route, full.alpha)
    # the planner lists every route; without comparisons only the answer's route is run
    assert {r.route for r in lean.alternatives if r.seconds is not None} == {"rdp-cks"}
    assert {r.route for r in lean.alternatives if r.detail.endswith("comparisons=False")} >= {"rdp-mironov"}
    assert {"rdp-mironov", "closed-form:agarwal_2021_thm3.5"} <= {r.route for r in full.alternatives}


def test_ledger_admits_the_worst_batch_the_budget_was_computed_from():
    """A run's budget is the worst per-batch eps; charging every batch (fresh users) must be
    admitted and the spend must be exactly that worst value (split and exact batches alike)."""
    batches = [acc.Skellam(100 * g * g, g) for g in (2, 3, 8, 23, 64, 91, 2897)]
    worst = max(acc.epsilon_routes(g, 1e-6, include_pld=False, comparisons=False).epsilon for g in batches)
    ledger = Ledger(acc.ApproxDP(worst, 1e-6))
    for i, g in enumerate(batches):
        ledger.charge(g, range(10 * i, 10 * i + 10))
    assert ledger.spent().epsilon == worst


def test_ledger_composes_a_returning_user_like_the_curve():
    g = acc.Skellam(6400, 8)
    ledger = Ledger(acc.ApproxDP(10.0, 1e-6))
    for _ in range(3):
        ledger.charge(g, range(0, 5))
    expected = rdp_to_epsilon(acc.RDP.sequence([g.rdp()], [3]), 1e-6).epsilon
    assert ledger.spent().epsilon == expected
    tight = Ledger(acc.ApproxDP(expected * (1 - 1e-9), 1e-6))
    tight.charge(g, range(0, 5))
    tight.charge(g, range(0, 5))
    with pytest.raises(acc.BudgetExceeded):
        tight.charge(g, range(0, 5))
