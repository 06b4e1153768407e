"""Value types, certified rounding and the RDP curve algebra."""

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounting import RDP, ZCDP, AccountingError, ApproxDP, PureDP, working_precision


def _binary_rr_divergence(eps, alpha, dps=60):
    """Reference Renyi divergence of binary randomized response, in mpmath at high precision."""
    with mpmath.workdps(dps):
        e, a = mpmath.mpf(eps), mpmath.mpf(alpha)
        return mpmath.log((mpmath.exp(a * e) + mpmath.exp((1 - a) * e)) / (1 + mpmath.exp(e))) / (a - 1)


def test_pure_composition_is_rounded_up_not_to_nearest():
    # 0.1 + 0.2 in floats is 0.30000000000000004 (above); three times 0.1 must never be below 3/10.
    three = PureDP(0.1).times(3).epsilon
    assert Fraction(three) >= 3 * Fraction(0.1)
    assert PureDP(0.1).compose(PureDP(0.1), PureDP(0.1)).epsilon == three


def test_k_fold_equals_k_separate_compositions_for_value_types():
    for k in (1, 2, 7, 1000):
        assert PureDP(0.3).times(k).epsilon >= float(k * Fraction(0.3))
        assert ZCDP(0.01).times(k).rho == ZCDP(0.01).compose(*[ZCDP(0.01)] * (k - 1)).rho if k > 1 else True
    curve = RDP.zcdp(0.02)
    for k in (1, 3, 50):
        one_call = curve.times(k)
        separate = RDP.sequence([curve] * k)
        for alpha in (1.5, 2, 17.25, 300):
            assert one_call(alpha) == pytest.approx(separate(alpha), rel=1e-15)
            assert one_call(alpha) >= float(Fraction(0.02) * k * Fraction(alpha))


def test_parallel_is_the_worst_user():
    assert PureDP(0.5).parallel(PureDP(0.7), PureDP(0.2)).epsilon == 0.7
    curve = RDP.zcdp(0.1).parallel(RDP.pure(1.0))
    for alpha in (1.01, 2, 50):
        assert curve(alpha) == max(RDP.zcdp(0.1)(alpha), RDP.pure(1.0)(alpha))


def test_returning_users_take_the_b_largest_curves_at_each_alpha():
    small, large = RDP.zcdp(0.01), RDP.pure(2.0)
    # Below alpha ~ 2 the pure curve dominates; at large alpha the zCDP line takes over.
    returning = RDP.returning([small, small, large], 2)
    for alpha in (1.5, 3, 1000):
        values = sorted([small(alpha), small(alpha), large(alpha)], reverse=True)
        assert returning(alpha) >= values[0] + values[1] - 1e-12
        assert returning(alpha) <= values[0] + values[1] + 1e-12
    # B at least the number of batches: plain sequential composition
    assert RDP.returning([small, large], 5)(2) == pytest.approx((small + large)(2), rel=1e-15)


@pytest.mark.parametrize("eps", [0.01, 0.5, 1.0, 5.0, 20.0])
@pytest.mark.parametrize("alpha", [1.001, 1.5, 2, 10, 1e4])
def test_pure_to_rdp_is_the_binary_randomized_response_divergence(eps, alpha):
    value = RDP.pure(eps)(alpha)
    reference = _binary_rr_divergence(eps, alpha)
    assert value >= reference  # certified upper bound
    assert value <= reference * (1 + 1e-12)  # and tight
    assert value <= eps and value <= alpha * eps * eps / 2 + 1e-15


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_pure_to_zcdp_is_tight_eps_tanh(eps):
    rho = PureDP(eps).to_zcdp().rho
    with mpmath.workdps(50):
        exact_rho = mpmath.mpf(eps) * mpmath.tanh(mpmath.mpf(eps) / 2)
    assert exact_rho <= rho <= exact_rho * (1 + 1e-15)
    assert rho < eps * eps / 2  # strictly better than the textbook eps^2/2
    # rho*alpha really bounds the pure curve: sup_alpha D_alpha/alpha is approached at alpha -> 1
    for alpha in (1.0001, 1.5, 2, 8, 64):
        assert float(_binary_rr_divergence(eps, alpha)) <= rho * alpha


def test_rdp_curves_are_non_decreasing_in_alpha():
    alphas = [1.0001, 1.01, 1.1, 1.5, 2, 3, 10, 100, 1000]
    for curve in (RDP.pure(0.7), RDP.zcdp(0.3), RDP.pure(0.1) + RDP.zcdp(0.2)):
        values = curve.evaluate(alphas)
        assert all(a <= b for a, b in zip(values, values[1:]))


@given(
    eps=st.floats(min_value=1e-3, max_value=30, allow_nan=False),
    alpha=st.floats(min_value=1.001, max_value=1e5, allow_nan=False),
)
def test_certified_value_is_never_below_a_reference_at_twice_the_precision(eps, alpha):
    curve = RDP.pure(eps)
    value = curve(alpha, precision=64)
    with working_precision(128):
        reference = curve.ball(alpha).mid()
    assert value >= float(reference.upper()) * (1 - 2**-52) and Fraction(value) >= Fraction(str(reference.mid().str(40, radius=False)))


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: PureDP(0), "epsilon"),
        (lambda: PureDP(-1.0), "epsilon"),
        (lambda: PureDP(float("inf")), "epsilon"),
        (lambda: PureDP(float("nan")), "epsilon"),
        (lambda: ApproxDP(1.0, 0), "delta"),
        (lambda: ApproxDP(1.0, 1.0), "delta"),
        (lambda: ZCDP(-0.1), "rho"),
        (lambda: RDP.zcdp(0.1)(1.0), "alpha"),
        (lambda: RDP.zcdp(0.1)(0.5), "alpha"),
        (lambda: PureDP(1.0).times(0), "compose"),
    ],
)
def test_bad_input_names_the_parameter(build, name):
    with pytest.raises(AccountingError) as info:
        build()
    assert info.value.name == name
    assert isinstance(info.value, ValueError)
    assert name in str(info.value)


def test_value_types_are_immutable():
    g = PureDP(1.0)
    with pytest.raises(AttributeError):
        g.epsilon = 0.1  # type: ignore[misc]


def test_errors_survive_pickling_for_process_pools():
    import pickle

    error = AccountingError("epsilon", -1.0, "a real number > 0", "hint")
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) and again.name == "epsilon"


# ---- (0, delta)-DP ------------------------------------------------------------------------------


def test_approx_dp_accepts_epsilon_zero():
    """(0, delta)-DP is a valid guarantee (total variation <= delta): it used to be refused."""
    g = ApproxDP(0, 1e-5)
    assert g.epsilon == 0.0 and g.delta == 1e-5
    assert ApproxDP(0.0, 0.25) == ApproxDP(Fraction(0), 0.25)
    negative_zero = ApproxDP(-0.0, 0.25)
    assert math.copysign(1.0, negative_zero.epsilon) == 1.0 and str(negative_zero) == "(0, 0.25)-DP"


@pytest.mark.parametrize(
    "epsilon, delta, name, allowed",
    [
        (-1e-300, 1e-5, "epsilon", ">= 0"),
        (-1, 1e-5, "epsilon", ">= 0"),
        (float("inf"), 1e-5, "epsilon", "finite"),
        (float("nan"), 1e-5, "epsilon", ">= 0"),
        ("0", 1e-5, "epsilon", ">= 0"),
        (0.0, -0.1, "delta", "(0, 1)"),
        (0.0, 1.5, "delta", "(0, 1)"),
        (0.0, float("nan"), "delta", "(0, 1)"),
    ],
)
def test_approx_dp_still_refuses_what_is_not_a_guarantee(epsilon, delta, name, allowed):
    with pytest.raises(AccountingError) as info:
        ApproxDP(epsilon, delta)
    assert isinstance(info.value, ValueError) and info.value.name == name
    assert f"{name}={epsilon if name == 'epsilon' else delta!r}" in str(info.value) and allowed in str(info.value)


def test_epsilon_zero_composes_by_hand():
    """Expected values computed here in exact rationals, independently of the library's rounding:
    basic composition adds the epsilons (0 + 0 = 0, 0 + 0.5 = 0.5) and the deltas (rounded up),
    parallel composition takes the maxima."""
    a, b = ApproxDP(0.0, 1e-6), ApproxDP(0.5, 2e-6)
    k = ApproxDP(0.0, 1e-6).times(7)
    assert k.epsilon == 0.0
    assert Fraction(k.delta) >= 7 * Fraction(1e-6) and k.delta <= math.nextafter(float(7 * Fraction(1e-6)), 1)
    both = a.compose(b)
    assert both.epsilon == 0.5 and Fraction(both.delta) >= Fraction(1e-6) + Fraction(2e-6)
    assert both.delta <= math.nextafter(float(Fraction(1e-6) + Fraction(2e-6)), 1)
    assert (a + a).epsilon == 0.0
    assert a.parallel(b) == ApproxDP(0.5, 2e-6) and a.parallel(a) == a
    assert a <= b and not b <= a


def test_advanced_composition_of_epsilon_zero():
    """DRV: eps = sqrt(2k log(1/delta')) eps0 + k eps0 (e^eps0 - 1) = 0 for eps0 = 0, and
    delta = k delta0 + delta' (computed here in rationals)."""
    from accounting import advanced_composition

    out = advanced_composition(ApproxDP(0.0, 1e-7), 50, 1e-6)
    exact_delta = 50 * Fraction(1e-7) + Fraction(1e-6)
    assert out.epsilon == 0.0
    assert Fraction(out.delta) >= exact_delta and out.delta <= math.nextafter(float(exact_delta), 1)


def test_epsilon_zero_survives_the_ledger_and_its_codec():
    from accounting import Ledger
    from accounting._ledgers._ledger_codec import guarantee_from_dict, guarantee_to_dict

    g = ApproxDP(0.0, 1e-7)
    assert guarantee_from_dict(guarantee_to_dict(g)) == g
    ledger = Ledger(ApproxDP(1.0, 1e-5))
    ledger.charge(g)
    ledger.charge(g)
    spent = ledger.spent()
    assert spent.epsilon == 0.0


def test_report_composes_a_zero_epsilon_batch_like_any_other():
    """A delta so large that each batch is (0, delta/2)-DP: the report composes that guarantee
    (basic composition keeps eps = 0) instead of a special case."""
    from accounting import dist_rdp_se_returning

    (row,) = dist_rdp_se_returning(0.5, 10, 1024, (1,), 0.9, include_pld=False)
    assert row["advanced_composition_epsilon"] == 0.0 and row["advanced_composition"] == "0 (basic)"
