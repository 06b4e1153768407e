"""The ledger: per-user accounting, refusal without side effects, reloadable trail."""

import numpy as np
import pytest

from accounting import ZCDP, ApproxDP, BudgetExceeded, Ledger, PureDP, zcdp_to_epsilon


def test_fresh_users_compose_in_parallel_and_returning_users_sequentially():
    ledger = Ledger(PureDP(1.0))
    for b in range(10):  # ten batches of fresh users
        ledger.charge(PureDP(0.4), range(100 * b, 100 * (b + 1)))
    assert ledger.spent() == PureDP(0.4)
    ledger.charge(PureDP(0.4), range(50, 150))  # users 50..149 come back once
    assert ledger.spent().epsilon == pytest.approx(0.8)
    assert ledger.remaining() == pytest.approx(0.2)
    assert ledger.remaining() <= 1.0 - ledger.spent().epsilon


def test_refused_charge_leaves_the_ledger_unchanged():
    ledger = Ledger(PureDP(1.0))
    ledger.charge(PureDP(0.6), range(0, 10))
    before = ledger.to_json()
    with pytest.raises(BudgetExceeded, match="unchanged"):
        ledger.charge(PureDP(0.5), np.array([3, 4, 99]))
    assert ledger.to_json() == before
    # the users it would have touched can still be charged within budget elsewhere
    ledger.charge(PureDP(0.5), np.array([99, 100]))
    assert ledger.spent() == PureDP(0.6)
    assert not ledger.can_afford(PureDP(0.41), None)
    assert ledger.can_afford(PureDP(0.4), None)


def test_approximate_budget_uses_the_exact_rdp_route():
    ledger = Ledger(ApproxDP(3.0, 1e-6))
    for _ in range(20):
        ledger.charge(ZCDP(0.005), None)
    spent = ledger.spent()
    expected = zcdp_to_epsilon(0.1, 1e-6).epsilon
    # both are certified bounds of the same infimum over alpha, found by different searches
    assert spent.epsilon == pytest.approx(expected, rel=1e-8)
    with pytest.raises(BudgetExceeded):
        for _ in range(1000):
            ledger.charge(ZCDP(0.005), None)


def test_mixed_notions_are_refused_where_they_cannot_compose():
    with pytest.raises(ValueError, match="guarantee"):
        Ledger(PureDP(1.0)).charge(ZCDP(0.1))
    with pytest.raises(ValueError, match="budget"):
        Ledger(0.5)  # type: ignore[arg-type]
    z = Ledger(ZCDP(0.5))
    z.charge(PureDP(0.5))  # pure DP converts to zCDP exactly (eps tanh(eps/2))
    assert z.spent().rho == PureDP(0.5).to_zcdp().rho


def test_json_trail_round_trips_and_replays():
    ledger = Ledger(ApproxDP(1.0, 1e-5), name="demo")
    ledger.charge(ZCDP(0.01), range(0, 1000), label="batch 1")
    ledger.charge(PureDP(0.1), np.array([1, 2, 3]), label="batch 2")
    ledger.charge(ApproxDP(0.05, 1e-7), range(500, 600), label="batch 3")
    again = Ledger.from_json(ledger.to_json())
    assert again.spent() == ledger.spent()
    assert [c.label for c in again.charges] == ["batch 1", "batch 2", "batch 3"]


def test_bad_participants():
    ledger = Ledger(PureDP(1.0))
    with pytest.raises(ValueError, match="participants"):
        ledger.charge(PureDP(0.1), np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match="participants"):
        ledger.charge(PureDP(0.1), np.array([-1, 2]))
    assert ledger.spent() is None


def test_trail_with_mechanism_charges_reloads_to_equal_mechanisms():
    from fractions import Fraction

    import accounting as acc

    ledger = Ledger(PureDP(2.0))
    mechanism = acc.DiscreteLaplace(scale=Fraction(32, 3), sensitivity=4)
    ledger.charge(mechanism, range(0, 10), label="batch")
    again = Ledger.from_json(ledger.to_json())
    assert again.charges[0].guarantee == mechanism
    assert again.spent() == ledger.spent()


def test_fast_path_for_fresh_users_agrees_with_full_regrouping():
    """Random charges (ranges and id arrays, fresh or overlapping): the incremental spend equals
    the spend recomputed from scratch over all users after every charge."""
    rng = np.random.default_rng(3)
    ledger = Ledger(PureDP(50.0))
    for step in range(60):
        if rng.random() < 0.5:
            start = int(rng.integers(0, 400))
            users = range(start, start + int(rng.integers(1, 40)))
        else:
            users = np.unique(rng.integers(0, 400, size=int(rng.integers(1, 20))))
        ledger.charge(PureDP(float(rng.uniform(0.1, 1.0))), users)
        assert ledger.spent().epsilon == ledger._spend(list(ledger.charges))


def test_many_fresh_batches_compose_in_parallel():
    ledger = Ledger(PureDP(1.0))
    for b in range(2000):  # took minutes before the fresh-users fast path; now well under a second
        ledger.charge(PureDP(0.5), range(1000 * b, 1000 * (b + 1)))
    assert ledger.spent() == PureDP(0.5)
    with pytest.raises(BudgetExceeded):
        ledger.charge(PureDP(0.6), range(500, 1500))


def test_covered_user_runs_match_a_set_oracle():
    """The ledger's merged runs of charged users (with the append fast path for increasing
    ranges) against a plain Python set, after every add, over 400 random operations mixing
    contiguous and gapped increasing ranges, earlier ranges and id arrays."""
    from accounting._ledger import _normalise_participants, _Runs

    rng = np.random.default_rng(17)
    runs, users, top = _Runs(), set(), 0
    for _ in range(400):
        kind = rng.integers(0, 4)
        if kind == 0:  # continues the last run
            part = range(top, top + int(rng.integers(1, 30)))
        elif kind == 1:  # after a gap
            start = top + int(rng.integers(1, 30))
            part = range(start, start + int(rng.integers(1, 30)))
        elif kind == 2:  # anywhere below
            start = int(rng.integers(0, max(top, 1)))
            part = range(start, start + int(rng.integers(1, 30)))
        else:
            part = np.unique(rng.integers(0, top + 50, size=int(rng.integers(1, 10))))
        part = _normalise_participants(part)
        ids = set(int(i) for i in part)
        assert runs.disjoint(part) == (not (ids & users))
        runs.add(part)
        users |= ids
        top = max(top, max(ids) + 1)
        expected = sorted(users)
        covered = set()
        for a, b in zip(runs.starts.tolist(), runs.stops.tolist()):
            covered |= set(range(a, b))
        assert covered == set(expected)
        assert np.all(runs.starts[1:] > runs.stops[:-1])  # merged: no touching or overlapping runs
