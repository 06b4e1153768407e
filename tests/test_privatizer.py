"""The privatizer charges the ledger before it releases, and refuses once the budget is spent."""

import numpy as np
import pytest

import accounting as acc
from dpverify._executed._privatizer import BatchProtocol, Privatizer


class _CountingProtocol(BatchProtocol):
    """A test protocol that records how often its noise was drawn (it must not be, when refused)."""

    name = "counting"

    def __init__(self) -> None:
        self.draws = 0

    def mechanism(self, n):
        return acc.DiscreteLaplace(scale=4, sensitivity=1)  # 0.25-DP per user

    def estimate_sum(self, rewards, rng, *, path="per-user"):
        self.draws += 1
        return float(np.sum(rewards) + rng.laplace(0, 4))

    def assumption1(self, n, p):
        return 0.0, 4.0


def _privatizer(budget=1.0):
    protocol = _CountingProtocol()
    ledger = acc.Ledger(acc.PureDP(budget))
    return protocol, ledger, Privatizer(protocol, ledger, np.random.SeedSequence(7))


def test_charge_happens_before_release_and_matches_the_accountant():
    protocol, ledger, privatizer = _privatizer()
    release = privatizer.release_sum(np.full(10, 0.5), range(0, 10))
    assert protocol.draws == 1 and privatizer.releases == 1
    assert ledger.spent() == acc.DiscreteLaplace(scale=4, sensitivity=1).pure()
    assert release.n == 10 and release.path == "per-user"


def test_a_refused_charge_draws_no_noise_and_leaves_the_ledger_unchanged():
    protocol, ledger, privatizer = _privatizer(budget=0.5)
    users = range(0, 5)
    privatizer.release_sum(np.zeros(5), users)
    privatizer.release_sum(np.zeros(5), users)  # 0.5 spent by users 0..4
    before = ledger.to_json()
    with pytest.raises(acc.BudgetExceeded):
        privatizer.release_sum(np.zeros(5), users)
    assert protocol.draws == 2, "no statistic may be computed once the ledger refuses"
    assert ledger.to_json() == before
    # fresh users can still be served (parallel composition)
    privatizer.release_sum(np.zeros(5), range(5, 10))
    assert protocol.draws == 3


def test_same_seed_same_releases():
    a = _privatizer()[2].release_sum(np.linspace(0, 1, 8), None).estimate
    b = _privatizer()[2].release_sum(np.linspace(0, 1, 8), None).estimate
    assert a == b


@pytest.mark.parametrize(
    "rewards, name",
    [(np.array([0.2, np.nan]), "rewards"), (np.array([1.5]), "rewards"), (np.array([]), "rewards"), (np.array([-0.1, 0.3]), "rewards")],
)
def test_rewards_outside_the_unit_interval_are_refused_not_clipped(rewards, name):
    protocol, ledger, privatizer = _privatizer()
    with pytest.raises(ValueError, match=name):
        privatizer.release_sum(rewards, None)
    assert protocol.draws == 0 and ledger.spent() is None


def test_bad_construction():
    with pytest.raises(ValueError, match="seed"):
        Privatizer(_CountingProtocol(), acc.Ledger(acc.PureDP(1.0)), 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="path"):
        Privatizer(_CountingProtocol(), acc.Ledger(acc.PureDP(1.0)), np.random.SeedSequence(1), path="fast")
    with pytest.raises(ValueError, match="participants"):
        _privatizer()[2].release_sum(np.zeros(3), range(0, 4))


def test_public_api_matches_all():
    import accounting
    import dpverify

    for package in (accounting, dpverify):
        for name in package.__all__:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"
        assert sorted(package.__all__) == sorted(set(package.__all__))


def test_guarantee_is_a_deprecated_alias_of_mechanism():
    """``protocol.guarantee(n)`` (the old name: it returns a mechanism) warns and answers what
    ``mechanism(n)`` does, for a built-in protocol and a subclass; a subclass written against the old
    name (defining only ``guarantee``) still charges, with a warning; one defining neither is refused."""
    from dpverify._executed._protocols import central_dp_protocol, dist_rdp_protocol

    for protocol in (central_dp_protocol(0.5, 0.1), dist_rdp_protocol(0.5, 10.0, 0.1), _CountingProtocol()):
        with pytest.warns(DeprecationWarning, match=r"guarantee\(n\) is deprecated"):
            assert protocol.guarantee(16) == protocol.mechanism(16)

    class _OldStyle(_CountingProtocol):
        mechanism = BatchProtocol.mechanism  # as written before the rename: only guarantee(n)

        def guarantee(self, n):
            return acc.DiscreteLaplace(scale=2, sensitivity=1)

    ledger = acc.Ledger(acc.PureDP(1.0))
    with pytest.warns(DeprecationWarning, match="rename it mechanism"):
        Privatizer(_OldStyle(), ledger, np.random.SeedSequence(7)).release_sum(np.full(4, 0.5), range(0, 4))
    assert ledger.spent() == acc.DiscreteLaplace(scale=2, sensitivity=1).pure()

    class _Neither(_CountingProtocol):
        mechanism = BatchProtocol.mechanism

    with pytest.raises(NotImplementedError, match="must define mechanism"):
        _Neither().mechanism(4)
