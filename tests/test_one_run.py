"""One-run audits (issue 33): the bound's arithmetic against an independent mpmath implementation of
the published theorem, one error budget for both directions, soundness over seeded runs, and a
planted per-user bug caught in one run."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from dpverify._audit._one_run import OneRunAudit, one_run_audit
from dpverify._audit._one_run_bound import one_run_epsilon, one_run_epsilon_two_sided

# ---- an independent implementation of Steinke, Nasr & Jagielski's main theorem (mpmath, brute force) ----


def _reference_rhs(eps: float, delta: float, m: int, r: int, v: int) -> mp.mpf:
    """f(v) + 2 m delta max_{i=1..m} (f(v-i) - f(v)) / i, f(v) = P[Bin(r, e^eps/(1+e^eps)) >= v], by sums of the pmf."""
    with mp.workdps(40):
        p = mp.e ** mp.mpf(eps) / (1 + mp.e ** mp.mpf(eps))
        pmf = [mp.binomial(r, j) * p**j * (1 - p) ** (r - j) for j in range(r + 1)]

        def f(w: int) -> mp.mpf:
            return mp.mpf(1) if w <= 0 else (mp.mpf(0) if w > r else mp.fsum(pmf[w:]))

        fv = f(v)
        if delta == 0:
            return fv
        return fv + 2 * m * mp.mpf(delta) * max((f(v - i) - fv) / i for i in range(1, m + 1))


_GRID = [(m, r, v, delta) for m, r in ((60, 20), (200, 100), (400, 400)) for frac in (0.65, 0.8, 0.95, 1.0)
         for v in (int(round(frac * r)),) for delta in (0.0, 1e-4)]


@pytest.mark.parametrize("m, r, v, delta", _GRID)
def test_bound_matches_the_published_formula(m, r, v, delta):
    """The certified bound rejects (eps, delta) at the eps it reports (the reference's right-hand side
    <= beta there: the report is valid) and is tight: 1e-6 above it the reference does not reject.
    Deterministic (no randomness). A bound spending the budget twice (beta -> 2 beta) is rejected:
    the reference does not reject at the eps it reports (checked where it reports more than 0)."""
    level = 0.05
    eps = one_run_epsilon(m, r, v, level=level, delta=delta)
    if eps == 0.0:
        assert _reference_rhs(1e-6, delta, m, r, v) > level
        return
    assert _reference_rhs(eps, delta, m, r, v) <= level
    assert _reference_rhs(eps + 1e-6 * max(1.0, eps), delta, m, r, v) > level
    wrong = one_run_epsilon(m, r, v, level=2 * level, delta=delta)  # the whole budget in each of two directions
    assert wrong > eps and _reference_rhs(wrong, delta, m, r, v) > level


def test_two_directions_share_one_error_budget():
    """Exact: canaries whose guesses are right independently with probability e/(1+e) (eps = 1 exactly,
    randomized response), 150 "in" and 150 "out" guesses. The probability that a procedure's bound exceeds
    1 is computed exactly from the binomial laws. Both directions under one budget (beta/2 each, or one
    joint count) stay <= beta; the whole budget spent in each direction (jax_privacy's invalid variant
    before its PR #270) exceeds beta, so this test rejects it. Deterministic."""
    level, k, m = 0.05, 150, 300
    p = math.e / (1 + math.e)

    def exceed_probability(bound_of) -> float:  # P[bound(W) > 1] for W ~ Bin(k, p): the set {w >= w*}
        over = [w for w in range(k + 1) if bound_of(w) > 1.0]
        return float(stats.binom.sf(min(over) - 1, k, p)) if over else 0.0

    one_at_full = exceed_probability(lambda w: one_run_epsilon(m, k, w, level=level))
    one_at_half = exceed_probability(lambda w: one_run_epsilon(m, k, w, level=level / 2))
    wrong = 1 - (1 - one_at_full) ** 2  # max of the two directions, each at the full beta
    shared = 1 - (1 - one_at_half) ** 2  # one_run_epsilon_two_sided: beta/2 each
    assert one_at_full <= level and shared <= level
    assert wrong > level
    joint = [w for w in range(2 * k + 1) if one_run_epsilon(m, 2 * k, w, level=level) > 1.0]
    assert float(stats.binom.sf(min(joint) - 1, 2 * k, p)) <= level
    assert one_run_epsilon_two_sided(m, (k, 120), (k, 110), level=level) == one_run_epsilon(m, k, 120, level=level / 2)


def test_bound_rejects_bad_input():
    with pytest.raises(ValueError, match="correct"):
        one_run_epsilon(10, 5, 6)
    with pytest.raises(ValueError, match="level"):
        one_run_epsilon(10, 5, 5, level=1.5)
    with pytest.raises(ValueError, match="canaries"):
        one_run_audit("ldp-ucb-l", epsilon=1.0, horizon=100, canaries=200)
    with pytest.raises(ValueError, match="algorithm"):
        one_run_audit("dist-dp-se", epsilon=1.0, horizon=100, canaries=10)


# ---- audits of runs ----------------------------------------------------------------------------------


def test_soundness_over_200_seeded_correct_runs():
    """200 one-run audits of correct LDP-UCB-L runs (eps = 1, T = 3000, 1000 canaries, runner chunk 64, seeds 0..199) at
    95% confidence. The bound is tight for this mechanism (its extreme messages are right with
    probability exactly e/(1+e)), so up to 5% of the bounds may exceed the claim; the test fails if more
    than 20 of 200 do (false-alarm rate P[Bin(200, 0.05) > 20] = 0.0014 for a valid bound). Power: an
    invalid bound exceeding the claim in 15% of runs fails with probability 0.93; the wrong variant here,
    the point estimate ln(acc / (1 - acc)) with no confidence, exceeds it in about half and is rejected."""
    violations = naive = 0
    for seed in range(200):
        audit = one_run_audit("ldp-ucb-l", epsilon=1.0, horizon=3000, canaries=1000, seed=seed, guesses=600, chunk=64)
        violations += audit.epsilon_lower > audit.claim_epsilon
        accuracy = audit.correct / audit.guesses
        naive += math.log(accuracy / (1 - accuracy)) > audit.claim_epsilon
    assert violations <= 20
    assert naive > 20


@pytest.mark.parametrize("algorithm", ["ldp-ucb-l", "ldp-se"])
def test_planted_wrong_scale_caught_in_one_run(algorithm):
    """A local randomizer with the wrong scale (noise drawn at 2 eps, the ledger charging eps = 1) is
    caught -- the one-run lower bound exceeds the claim -- in at least 19 of 20 seeds (T = 20000, 4000
    canaries). The correct run on the same seeds exceeds it in at most 3 (a valid 95% bound: false-alarm
    probability P[Bin(20, 0.05) > 3] = 0.016). The same test rejects the correct run as 'planted' (it
    would fail the first assertion) and a no-power auditor (bound 0)."""
    caught = correct_flagged = 0
    for seed in range(20):
        planted = one_run_audit(algorithm, epsilon=1.0, horizon=20000, canaries=4000, seed=seed, planted_scale=2.0, chunk=256)
        caught += planted.verdict == "violated"
        honest = one_run_audit(algorithm, epsilon=1.0, horizon=20000, canaries=4000, seed=seed, chunk=256)
        correct_flagged += honest.verdict == "violated"
    assert caught >= 19
    assert correct_flagged <= 3


def test_result_names_view_counts_and_bound():
    """The result's fields are the run's: counts add up, the bound is recomputable from them, and the
    JSON form says one-run. Seeded (seed 7); deterministic given the seed."""
    audit = one_run_audit("ldp-se", epsilon=1.0, horizon=20000, canaries=3000, seed=7)
    assert isinstance(audit, OneRunAudit)
    assert audit.view == "server" and audit.canaries == 3000 and 0 < audit.observed <= 3000
    assert 0 < audit.correct <= audit.guesses <= audit.canaries
    assert audit.epsilon_lower == one_run_epsilon(audit.canaries, audit.guesses, audit.correct, level=0.05)
    record = audit.as_dict()
    assert record["mode"] == "one-run" and record["verdict"] in ("holds", "no power", "violated")
    again = one_run_audit("ldp-se", epsilon=1.0, horizon=20000, canaries=3000, seed=7)
    assert (again.correct, again.guesses) == (audit.correct, audit.guesses)


# ---- in the gate -------------------------------------------------------------------------------------


def test_one_run_claims_join_holm(tmp_path):
    """The shipped one-run claim holds and its planted twin (noise at 2 eps) is caught in one suite run
    (alpha = 1e-3, Holm over 2 claims, seed 0). The planted p-value is far below its Holm level; the
    correct claim's row shows its bound re-scored at its level, equal to the bound recomputed from its
    counts. A suite that spent no budget (always 'holds') or judged the planted file by its point
    estimate alone would still pass the first assertion but fail the p-value and recomputation ones."""
    from pathlib import Path

    from dpverify._audit._suite import load_suite, run_suite

    root = Path(__file__).resolve().parents[1] / "audits"
    specs = load_suite(root / "ldp_ucb_l_eps1_one_run.toml") + load_suite(root / "planted" / "one_run_ldp_ucb_l_wrong_scale.toml")
    outcome = run_suite(specs, executor="serial")
    rows = {r.spec.name: r for r in outcome.rows}
    assert outcome.exit_code == 0
    honest, planted = rows["ldp_ucb_l_eps1_one_run"], rows["planted/one_run_ldp_ucb_l_wrong_scale"]
    assert honest.verdict == "holds" and planted.verdict == "caught"
    assert planted.p_value <= planted.level < 1e-3
    d = honest.result.details
    assert honest.result.lower_bound == one_run_epsilon(d["canaries"], d["guesses"], d["correct"], level=honest.level)
    assert honest.to_dict()["estimator"] == "one-run"


@pytest.mark.parametrize("text, key", [
    ('mode = "one-rn"\ntarget = "ldp-ucb-l"\n', "mode"),
    ('mode = "one-run"\ntarget = "ldp"\n[parameters]\nepsilon = 1.0\nhorizon = 100\ncanaries = 10\n', "target"),
    ('mode = "one-run"\ntarget = "ldp-se"\n[parameters]\nepsilon = 1.0\nhorizon = 100\ncanaries = 10\nscale = 2\n', "parameters.scale"),
    ('mode = "one-run"\ntarget = "ldp-se"\n[parameters]\nepsilon = 1.0\nhorizon = 100\ncanaries = 10\nplanted_scale = 2.0\n', "parameters.planted_scale"),
    ('mode = "one-run"\ntarget = "ldp-se"\n[parameters]\nepsilon = 1.0\nhorizon = 100\ncanaries = 10\n[audit]\nsamples = 5000\n', "audit"),
])
def test_one_run_claim_files_are_validated(tmp_path, text, key):
    from dpverify._audit._suite import SuiteError, load_suite

    file = tmp_path / "x.toml"
    file.write_text(text)
    with pytest.raises(SuiteError, match=key):
        load_suite(file)


def test_bound_at_scale_matches_a_direct_sum():
    """At the benchmark's scale (m = 10^5, 60,000 guesses, 43,800 right) the certified bound's tail,
    summed directly in mpmath (40 digits, the terms beyond v + 3000 are below 1e-40), is the level to
    9 digits and at most the level: the Arb incomplete beta is the published f. Deterministic."""
    m, r, v = 100_000, 60_000, 43_800
    eps = one_run_epsilon(m, r, v)
    with mp.workdps(40):
        p = 1 / (1 + mp.e ** (-mp.mpf(eps)))
        lp, lq, top = mp.log(p), mp.log(1 - p), mp.loggamma(r + 1)
        tail = mp.fsum(mp.e ** (top - mp.loggamma(j + 1) - mp.loggamma(r - j + 1) + j * lp + (r - j) * lq) for j in range(v, v + 3001))
    assert tail <= 0.05 and abs(tail - 0.05) < 1e-9
    assert 0.97 < eps < 1.0
