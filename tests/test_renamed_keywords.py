"""One name per concept in the public API (issue 30 item 6): the composition count is ``compose``.

The former keyword names (``k=`` of ``pld_epsilon``, ``pld_delta``, ``times``, ``self_compose``,
``advanced_composition``; ``step=`` of ``advanced_composition``, which meant the composed guarantee)
still work: they warn (``DeprecationWarning``) and give the same value as the new name. Passing both
is refused. Deterministic and cheap (small lattices, a few compositions).
"""

from __future__ import annotations

import inspect
import warnings
from fractions import Fraction

import pytest

import accounting as acc
from accounting._core._renamed import renamed_keywords


def _warns_and_returns(call):
    with pytest.warns(DeprecationWarning, match="is deprecated: the keyword is now"):
        return call()


def test_guarantee_times_takes_compose_and_the_former_k():
    for guarantee in (acc.PureDP(0.25), acc.ApproxDP(0.25, 1e-7), acc.ZCDP(0.01)):
        new = guarantee.times(compose=7)
        assert new == guarantee.times(7)
        assert _warns_and_returns(lambda: guarantee.times(k=7)) == new
        assert new != guarantee.times(6)  # the count reaches the result
    curve = acc.Gaussian(sigma=2.0, sensitivity=1).rdp()
    old = _warns_and_returns(lambda: curve.times(k=5))
    alphas = [2, 8, 32]
    assert old.evaluate(alphas) == curve.times(compose=5).evaluate(alphas) != curve.times(4).evaluate(alphas)


def test_pld_functions_take_compose_and_the_former_k():
    mechanism = acc.RandomizedResponse(1.0)
    new = acc.pld_epsilon(mechanism, 4, 1e-6)
    assert acc.pld_epsilon(mechanism, compose=4, delta=1e-6).epsilon == new.epsilon
    old = _warns_and_returns(lambda: acc.pld_epsilon(mechanism, k=4, delta=1e-6))
    assert old.epsilon == new.epsilon
    old_delta = _warns_and_returns(lambda: acc.pld_delta(mechanism, k=4, epsilon=2.0))
    assert old_delta.delta == acc.pld_delta(mechanism, compose=4, epsilon=2.0).delta
    pld = acc.PrivacyLossDistribution.from_pair(mechanism, lattice_step=Fraction(1))
    composed = _warns_and_returns(lambda: pld.self_compose(k=3))
    assert composed.compositions == pld.self_compose(compose=3).compositions == 3
    assert _warns_and_returns(lambda: pld.times(k=3)).epsilon(1e-6).epsilon == composed.epsilon(1e-6).epsilon


def test_advanced_composition_takes_guarantee_and_compose():
    step = acc.PureDP(0.1)
    new = acc.advanced_composition(guarantee=step, compose=50, delta_prime=1e-6)
    assert acc.advanced_composition(step, 50, 1e-6) == new
    assert _warns_and_returns(lambda: acc.advanced_composition(step=step, k=50, delta_prime=1e-6)) == new
    with pytest.raises(ValueError, match="compose=0"):
        acc.advanced_composition(step, 0, 1e-6)


def test_both_names_at_once_are_refused_and_signatures_show_the_new_name():
    with pytest.raises(TypeError, match="got both compose= and its former name k="):
        acc.PureDP(0.5).times(compose=2, k=2)
    assert list(inspect.signature(acc.pld_epsilon).parameters)[:3] == ["mechanism_pair", "compose", "delta"]
    assert "compose" in inspect.signature(acc.PrivacyLossDistribution.self_compose).parameters


def test_the_new_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acc.PureDP(0.5).times(compose=2)
        acc.advanced_composition(guarantee=acc.PureDP(0.1), compose=2, delta_prime=1e-6)


def test_the_decorator_forwards_only_the_renamed_keyword():
    @renamed_keywords(old="new")
    def f(a, new=0, other=1):
        return a, new, other

    assert f(1, 2, other=3) == (1, 2, 3)
    with pytest.warns(DeprecationWarning, match=r"f\(old=...\) is deprecated: the keyword is now new="):
        assert f(1, old=5) == (1, 5, 1)


def test_rdp_sequence_takes_compose_and_the_former_counts():
    """``RDP.sequence(curves, compose=[...])``: curve i composed compose[i]-fold; ``counts=`` warns
    and gives the same curve; the count reaches the value (a different count, a different curve)."""
    curves = [acc.Gaussian(sigma=2.0, sensitivity=1).rdp(), acc.PureDP(0.5).to_rdp()]
    alphas = [2, 8]
    new = acc.RDP.sequence(curves, compose=[3, 2]).evaluate(alphas)
    assert new == acc.RDP.sequence(curves, [3, 2]).evaluate(alphas)
    assert _warns_and_returns(lambda: acc.RDP.sequence(curves, counts=[3, 2])).evaluate(alphas) == new
    assert acc.RDP.sequence(curves, compose=[3, 1]).evaluate(alphas) != new
    with pytest.raises(ValueError, match=r"compose\[1\]"):
        acc.RDP.sequence(curves, compose=[3, 0])
    assert "compose" in inspect.signature(acc.RDP.sequence).parameters


def test_total_variation_helpers_take_their_one_name_each():
    """``times_total_variation(t, compose=)`` (a composition count, as everywhere) and
    ``sum_total_variation(sigma2, n=)`` (n users' noises summed, as DiscreteGaussianSum's n: not a
    composition count); the former ``count=`` of each warns and gives the same value."""
    from accounting.internal import sum_total_variation, times_total_variation

    assert times_total_variation(1e-9, compose=7) == times_total_variation(1e-9, 7) > times_total_variation(1e-9, 6)
    assert _warns_and_returns(lambda: times_total_variation(1e-9, count=7)) == times_total_variation(1e-9, 7)
    assert sum_total_variation(4, n=3) == sum_total_variation(4, 3) > 0
    assert _warns_and_returns(lambda: sum_total_variation(4, count=3)) == sum_total_variation(4, 3)
    assert sum_total_variation(4, n=1) == 0.0
