"""Amplification by shuffling (accounting._amplification._shuffling): printed values, brute-force oracles, orderings.

Deterministic tests (no randomness): every check compares a certified value with an independent
computation (mpmath at 60 digits over the whole output space) or with a number the papers'
reference code prints.
"""

from __future__ import annotations

import math
import random

import mpmath
import pytest
from click.testing import CliRunner

import accounting as acc
from accounting._amplification._shuffling import _FULL_SCAN
from accounting._amplification._shuffling import _HalfBinomialTail


# ---- oracles: full enumeration in mpmath -------------------------------------------------------


def _mp_clone_delta(eps0: float, n: int, eps: float, variant: str) -> mpmath.mpf:
    """delta(eps) of the FMT clone pair by enumerating every output (c, a), both directions."""
    ctx = mpmath.mp.clone()
    ctx.dps = 60
    e0 = ctx.mpf(eps0)
    p = ctx.exp(-e0) if variant == "fmt21" else 2 / (ctx.exp(e0) + 1)
    q = ctx.exp(e0) / (ctx.exp(e0) + 1)
    r = 1 - q
    E = ctx.exp(ctx.mpf(eps))
    forward = backward = ctx.mpf(0)
    for c in range(n):
        w = ctx.binomial(n - 1, c) * p**c * (1 - p) ** (n - 1 - c)
        for a in range(c + 2):
            b_prev = ctx.binomial(c, a - 1) / ctx.mpf(2) ** c if a >= 1 else 0
            b_here = ctx.binomial(c, a) / ctx.mpf(2) ** c if a <= c else 0
            P = w * (q * b_prev + r * b_here)
            Q = w * (r * b_prev + q * b_here)
            forward += max(P - E * Q, 0)
            backward += max(Q - E * P, 0)
    return max(forward, backward)


def _mp_count_delta(eps0: float, n: int, m: int, eps: float) -> mpmath.mpf:
    """hs(P_m || Q_m) of the shuffled RR count: m of the n-1 others hold 1; P: user 1 holds 1."""
    ctx = mpmath.mp.clone()
    ctx.dps = 60
    q = ctx.exp(ctx.mpf(eps0)) / (ctx.exp(ctx.mpf(eps0)) + 1)
    r = 1 - q
    zeros = [ctx.binomial(n - 1 - m, i) * r**i * q ** (n - 1 - m - i) for i in range(n - m)]
    ones = [ctx.binomial(m, i) * q**i * r ** (m - i) for i in range(m + 1)]
    f = [ctx.mpf(0)] * n
    for i, x in enumerate(zeros):
        for j, y in enumerate(ones):
            f[i + j] += x * y
    E = ctx.exp(ctx.mpf(eps))
    total = ctx.mpf(0)
    for t in range(n + 1):
        prev = f[t - 1] if t >= 1 else 0
        here = f[t] if t < n else 0
        total += max(q * prev + r * here - E * (r * prev + q * here), 0)
    return total


# ---- values the papers' code prints -------------------------------------------------------------


def test_fmt21_reference_code_printed_values() -> None:
    """The authors' README (apple/ml-shuffling-amplification, accompanying arXiv 2012.12803) prints,
    for n = 1e5, eps0 = 4, delta = 1e-6: numerical eps in [0.1675385583317841, 0.172790550755978]
    and closed form 0.5378040242374512. Our exact value of the same pair must lie in their bracket
    (their lower end is a bisection point, loose by at most epsupper / 2^10 = 0.5378 / 1024) and
    be at most their upper bound; our closed form reproduces theirs, rounded up."""
    eps = acc.clone_epsilon(4.0, 10**5, 1e-6, "fmt21")
    assert 0.1675385583317841 - 0.5378040242374512 / 1024 <= eps <= 0.172790550755978
    closed = acc.fmt21_closed_form(4.0, 10**5, 1e-6)
    assert 0.5378040242374512 <= closed <= 0.5378040242374512 * (1 + 1e-14)


def test_closed_forms_refuse_outside_their_range() -> None:
    # FMT21 needs eps0 <= log(n / (16 log(2/delta))): for n = 1000, delta = 1e-6 that is ~1.49
    assert acc.fmt21_closed_form(1.0, 1000, 1e-6) is not None
    assert acc.fmt21_closed_form(1.6, 1000, 1e-6) is None
    assert acc.fmt23_closed_form(2.1, 1000, 1e-6) is not None  # log(1000 / (8 log 2e6)) ~ 2.17
    assert acc.fmt23_closed_form(2.3, 1000, 1e-6) is None


# ---- the clone pair against full enumeration ----------------------------------------------------


@pytest.mark.parametrize("variant", ["fmt21", "fmt23"])
@pytest.mark.parametrize("eps0, n, eps", [(1.0, 25, 0.3), (2.0, 40, 0.8), (0.5, 12, 0.05), (3.0, 30, 2.9)])
def test_clone_delta_matches_enumeration(variant: str, eps0: float, n: int, eps: float) -> None:
    """Certified delta of the clone pair is >= the enumerated value and equal to it to 1e-12."""
    oracle = _mp_clone_delta(eps0, n, eps, variant)
    ours = acc.clone_delta(eps0, n, eps, variant)
    assert ours >= oracle
    assert ours <= oracle * (1 + 1e-12) + 1e-30


def test_clone_epsilon_is_tight_at_delta() -> None:
    """eps(delta) is certified (delta at it <= target) and tight: 1e-6 below it the enumerated delta
    exceeds the target (a looser search would fail this)."""
    eps0, n, delta = 1.5, 40, 1e-3
    eps = acc.clone_epsilon(eps0, n, delta, "fmt21")
    assert _mp_clone_delta(eps0, n, eps, "fmt21") <= delta
    assert _mp_clone_delta(eps0, n, eps * (1 - 1e-6), "fmt21") > delta


def test_half_binomial_tail_walk_is_exact() -> None:
    """The Pascal walk of sum_{i >= J} C(c, i) matches direct sums after random moves (fixed seed)."""
    for c in range(0, 12):
        for J in range(0, c + 1):  # both initial walks (from the top and from the bottom)
            start = _HalfBinomialTail(c, J)
            assert (start.b, start.S) == (math.comb(c, J), sum(math.comb(c, i) for i in range(J, c + 1)))
    rng = random.Random(20211215)
    tail = _HalfBinomialTail(40, 17)
    for _ in range(400):
        move = rng.choice(("up", "down", "c"))
        if move == "up" and tail.J < tail.c:
            tail.up()
        elif move == "down" and tail.J >= 1:
            tail.down()
        elif move == "c":
            tail.next_c()
        assert tail.b == math.comb(tail.c, tail.J)
        assert tail.S == sum(math.comb(tail.c, i) for i in range(tail.J, tail.c + 1))


# ---- binary randomized response: the exact count -------------------------------------------------


def test_shuffled_rr_count_matches_enumeration_for_every_configuration() -> None:
    eps0, n, eps = 1.0, 10, 0.5
    for m in range(n):
        oracle = _mp_count_delta(eps0, n, m, eps)
        ours = acc.shuffled_rr_delta(eps0, n, eps, m)
        assert oracle <= ours <= oracle * (1 + 1e-12) + 1e-30


def test_shuffled_rr_worst_configuration_is_not_all_zeros() -> None:
    """For n = 10, eps0 = 1 the worst neighbour is not 'every other user holds 0' (m = 0): the
    route must find the true worst (m = 8 here, the mirror of m = 1), so eps(delta) is certified
    against *every* configuration, which the enumeration checks."""
    eps0, n, delta = 1.0, 10, 1e-2
    eps = acc.shuffled_rr_epsilon(eps0, n, delta)
    worst = max(_mp_count_delta(eps0, n, m, eps) for m in range(n))
    assert worst <= delta
    assert max(_mp_count_delta(eps0, n, m, eps * (1 - 1e-6)) for m in range(n)) > delta
    only_m0 = acc.shuffle_routes(acc.ShuffledRandomizedResponse(eps0, n), delta).epsilon
    assert only_m0 == eps
    # the m = 0 pair alone would under-report: at eps, m = 0 has slack the worst pair lacks
    assert _mp_count_delta(eps0, n, 0, eps) < 0.9 * delta


GRID = [(0.5, 1000, 1e-6), (1.0, 10_000, 1e-6), (2.0, 5000, 1e-8), (4.0, 1000, 1e-6), (1.0, 300, 1e-5)]


@pytest.mark.parametrize("eps0, n, delta", GRID)
def test_generic_bounds_never_below_exact_rr(eps0: float, n: int, delta: float) -> None:
    """exact shuffled RR <= FMT23 stronger clone <= FMT21 clone <= eps0, and each closed form (where
    valid) >= its numerical bound."""
    report = acc.epsilon_routes(acc.ShuffledRandomizedResponse(eps0, n), delta)
    routes = {r.route: r.epsilon for r in report.alternatives}
    assert routes["exact-count"] <= routes["fmt23-stronger-clone"] <= routes["fmt21-clone"] <= routes["pure"] == eps0
    if n <= _FULL_SCAN:  # every configuration scanned: the exact count is certified and wins
        assert report.epsilon == routes["exact-count"] and report.route == "exact-count"
    else:  # a partial scan may miss the worst configuration: shown, never the certified answer
        certified = {r.route for r in report.alternatives if not r.route.startswith("closed-form") and r.route != "exact-count"}
        assert report.route in certified and report.epsilon == routes["fmt23-stronger-clone"]
    if "closed-form:fmt21-thm3.1" in routes:
        assert routes["closed-form:fmt21-thm3.1"] >= routes["fmt21-clone"]
    if "closed-form:fmt23" in routes:
        assert routes["closed-form:fmt23"] >= routes["fmt23-stronger-clone"]


@pytest.mark.parametrize("eps0, n, delta", [(0.1, 10_000, 1e-6), (2.0, 10_000, 1e-6), (3.5, 10_000, 1e-6), (1.0, 2_000, 1e-4), (0.5, 50_000, 1e-8)])
def test_closed_forms_never_below_numerical(eps0: float, n: int, delta: float) -> None:
    fmt21 = acc.fmt21_closed_form(eps0, n, delta)
    fmt23 = acc.fmt23_closed_form(eps0, n, delta)
    assert fmt21 is not None and fmt23 is not None  # every point is inside both ranges
    assert fmt21 >= acc.clone_epsilon(eps0, n, delta, "fmt21")
    assert fmt23 >= acc.clone_epsilon(eps0, n, delta, "fmt23")


def test_generic_ldp_routes_and_the_declared_decomposition() -> None:
    plain = acc.epsilon_routes(acc.ShuffledLDP(1.0, 10_000), 1e-6)
    declared = acc.epsilon_routes(acc.ShuffledLDP(1.0, 10_000, stronger_clone=True), 1e-6)
    assert {r.route for r in plain.alternatives} == {"pure", "fmt21-clone", "closed-form:fmt21-thm3.1"}
    assert "fmt23-stronger-clone" in {r.route for r in declared.alternatives}
    assert declared.epsilon < plain.epsilon and plain.route == "fmt21-clone"


# ---- composition ---------------------------------------------------------------------------------


def test_pld_route_dominates_one_round_and_beats_advanced_composition() -> None:
    subject = acc.ShuffledLDP(1.0, 2000)
    one = acc.epsilon_routes(subject, 1e-6).epsilon
    # k = 2 by PLD is at least one round (composition cannot help) and at most 2 rounds' basic sum
    two = acc.epsilon_routes(subject, 1e-6, compose=2)
    routes = {r.route: r.epsilon for r in two.alternatives}
    assert one <= routes["pld:fmt21-clone"] <= 2 * acc.clone_epsilon(1.0, 2000, 5e-7)
    assert routes["pld:fmt21-clone"] < routes["advanced:fmt21-clone"]
    # without the PLD the answer is the (certified) advanced composition of the certified round
    no_pld = acc.epsilon_routes(subject, 1e-6, compose=2, include_pld=False)
    assert no_pld.route == "advanced:fmt21-clone" and no_pld.epsilon == routes["advanced:fmt21-clone"]


def test_ledger_composes_rounds_through_the_shuffle_routes() -> None:
    g = acc.ShuffledLDP(1.0, 2000)
    ledger = acc.Ledger(acc.ApproxDP(5.0, 1e-6))
    ledger.charge(g)
    assert ledger.spent().epsilon == acc.shuffle_routes(g, 1e-6).epsilon
    ledger.charge(g)
    ledger.charge(g)
    assert ledger.spent().epsilon == acc.shuffle_routes(g, 1e-6, compose=3, comparisons=False).epsilon
    replay = acc.Ledger.from_json(ledger.to_json())
    assert replay.spent() == ledger.spent()
    # a pure budget charges the unamplified eps0 and refuses to overspend, unchanged
    pure = acc.Ledger(acc.PureDP(1.5))
    pure.charge(g)
    with pytest.raises(acc.BudgetExceeded):
        pure.charge(g)
    assert len(pure.charges) == 1


@pytest.mark.slow
def test_thousand_rounds_n_1e4() -> None:
    """1000 rounds of a shuffled eps0 = 1 randomizer over 1e4 users: the PLD route lies between the
    single-round value times sqrt(1000) / 4 and the advanced-composition comparison."""
    report = acc.epsilon_routes(acc.ShuffledLDP(1.0, 10_000), 1e-6, compose=1000)
    routes = {r.route: r.epsilon for r in report.alternatives}
    single = acc.clone_epsilon(1.0, 10_000, 1e-6)
    assert report.route == "pld:fmt21-clone"
    assert math.sqrt(1000) * single / 4 < report.epsilon < routes["advanced:fmt21-clone"]


# ---- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: acc.ShuffledLDP(0.0, 100), "epsilon0"),
        (lambda: acc.ShuffledLDP(1.0, 1), "n"),
        (lambda: acc.ShuffledLDP(1.0, 10.5), "n"),
        (lambda: acc.ShuffledRandomizedResponse(-1, 100), "epsilon0"),
        (lambda: acc.shuffle_routes(acc.ShuffledLDP(1.0, 100), 1.5), "delta"),
        (lambda: acc.shuffle_routes(acc.ShuffledLDP(1.0, 100), 1e-6, compose=0), "compose"),
    ],
)
def test_bad_input_names_the_parameter(build, name: str) -> None:
    with pytest.raises(acc.AccountingError) as info:
        build()
    assert info.value.name == name


def test_cli_account_shuffle() -> None:
    from dpverify.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["account", "shuffle", "--eps0", "1", "--n", "1000", "--delta", "1e-6", "--randomizer", "rr", "--json"])
    assert result.exit_code == 0, result.output
    import json

    payload = json.loads(result.output)
    assert payload["route"] == "exact-count"
    assert payload["epsilon"] == min(r["epsilon"] for r in payload["routes"] if r["certified"])
    bad = runner.invoke(main, ["account", "shuffle", "--eps0", "1", "--n", "1", "--delta", "1e-6"])
    assert bad.exit_code == 2 and "n=1" in bad.output and "Traceback" not in bad.output


def test_one_round_pld_of_the_grouped_pairs_is_pessimistic() -> None:
    """The PLD pairs are dominating: for one round their eps is >= the exact value of the pair they
    dominate (grouping c *down*; rounding c up would land below it) and within 1% of it."""
    from accounting._amplification._shuffling import _clone_pld, _count_pld, _count_epsilon, _count

    eps0, n, delta = 1.0, 2000, 1e-6
    for variant in ("fmt21", "fmt23"):
        exact = acc.clone_epsilon(eps0, n, delta, variant)
        grouped = _clone_pld(eps0, n, variant, 1e-5).epsilon(delta).epsilon
        assert exact <= grouped <= 1.01 * exact
    for m in (0, 1, n - 1):
        # the PLD covers both directions; Q_m || P_m is the mirror image of P_(n-1-m) || Q_(n-1-m)
        exact = max(_count_epsilon(_count(eps0, n, m), delta), _count_epsilon(_count(eps0, n, n - 1 - m), delta))
        pld = _count_pld(eps0, n, m, 1e-5).epsilon(delta).epsilon
        # (the exact value is itself certified to ~1e-9 relative above the smallest eps: a
        # connect-the-dots PLD may land in that slack; its own soundness is the next line's)
        assert exact * (1 - 2e-9) <= pld <= 1.01 * exact
        assert max(_count(eps0, n, m).delta(pld), _count(eps0, n, n - 1 - m).delta(pld)) <= delta
