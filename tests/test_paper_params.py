"""The papers' parameter choices (g, tau, m) are computed exactly, with exact ceilings."""

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounting import theorem1_parameters, theorem2_claimed_rdp, theorem2_parameters, theorem4_parameters


def _ceil_mp(expr, dps=60):
    with mpmath.workdps(dps):
        return int(mpmath.ceil(expr()))


@given(
    eps=st.sampled_from([0.01, 0.1, 0.5, 1.0, 2.0, 10.0]),
    n=st.integers(1, 2**24),
    p=st.sampled_from([0.1, 1e-3, 1e-7]),
    s=st.sampled_from([1.0, 10.0, 100.0]),
)
def test_g_tau_m_match_an_independent_high_precision_computation(eps, n, p, s):
    t1 = theorem1_parameters(eps, n, p)
    e = Fraction(eps)
    # g = ceil(eps sqrt(n)): the least integer with g^2 >= eps^2 n
    assert t1.g ** 2 >= e * e * n and (t1.g - 1) ** 2 < e * e * n or t1.g == 1
    assert t1.tau == _ceil_mp(lambda: t1.g / mpmath.mpf(eps) * mpmath.log(2 / mpmath.mpf(p)))
    assert t1.m == n * t1.g + 2 * t1.tau + 1
    assert t1.laplace_scale == Fraction(t1.g) / e
    t2 = theorem2_parameters(eps, s, n, p)
    x = Fraction(s) * e
    assert t2.g ** 2 >= x * x * n and ((t2.g - 1) ** 2 < x * x * n or t2.g == 1)
    assert t2.tau == _ceil_mp(
        lambda: 2 * t2.g / mpmath.mpf(eps) * mpmath.sqrt(mpmath.log(2 / mpmath.mpf(p))) + mpmath.sqrt(2) * mpmath.log(2 / mpmath.mpf(p))
    )
    assert t2.total_variance == Fraction(t2.g) ** 2 / e**2
    t4 = theorem4_parameters(eps, s, n, p)
    assert t4.tau == _ceil_mp(lambda: t4.g / mpmath.mpf(eps) * mpmath.sqrt(2 * mpmath.log(2 / mpmath.mpf(p))))
    assert t4.per_user_variance * n == Fraction(t4.g) ** 2 / e**2


def test_ceiling_is_exact_where_floats_round_up():
    # s eps sqrt(n) = 10 * 0.5 * 2 = 10 exactly: g must be 10, not 11
    assert theorem2_parameters(0.5, 10.0, 4, 0.1).g == 10
    # eps sqrt(n) = 0.1 * 100 = 10 exactly, although 0.1 is not a float: the float 0.1 is a bit
    # above 1/10, so the exact ceiling of (float 0.1) * 100 is 11
    assert theorem1_parameters(0.1, 10_000, 0.1).g == math.ceil(Fraction(0.1) * 100)


def test_paper_theorem2_curve_as_printed():
    curve = theorem2_claimed_rdp(0.5, 10)
    e, s = Fraction(1, 2), Fraction(10)
    for alpha in (2, 7, 1000):
        a = Fraction(alpha)
        expected = a * e * e / 2 + min((2 * a - 1) * e * e / (4 * s * s) + 3 * e / (2 * s**3), 3 * e * e / (2 * s))
        assert float(expected) <= curve(alpha) <= float(expected) * (1 + 1e-15)


@pytest.mark.parametrize("bad", [dict(epsilon=0.0), dict(n=0), dict(p=1.0), dict(s=0.5)])
def test_bad_input(bad):
    args = dict(epsilon=0.5, s=10.0, n=16, p=0.1) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        theorem2_parameters(**args)


def test_distributed_parameters_name_their_noise_and_keep_noise_as_a_deprecated_alias():
    """Each theorem sets exactly its own one of laplace_scale / total_variance / per_user_variance
    (the others None); the old ``noise`` still answers that value and warns; a construction that
    sets another theorem's field, two fields or a non-positive one is refused naming the field."""
    import dataclasses

    names = ("laplace_scale", "total_variance", "per_user_variance")
    cases = ((theorem1_parameters(0.5, 64, 0.1), "laplace_scale"), (theorem2_parameters(0.5, 10.0, 64, 0.1), "total_variance"),
             (theorem4_parameters(0.5, 10.0, 64, 0.1), "per_user_variance"))
    for params, name in cases:
        assert [k for k in names if getattr(params, k) is not None] == [name]
        with pytest.warns(DeprecationWarning, match="DistributedParameters.noise"):
            assert params.noise == getattr(params, name)
    t2 = cases[1][0]
    with pytest.raises(ValueError, match="laplace_scale"):
        dataclasses.replace(t2, laplace_scale=Fraction(1))
    with pytest.raises(ValueError, match="total_variance"):
        dataclasses.replace(t2, total_variance=None, per_user_variance=t2.total_variance)
    with pytest.raises(ValueError, match="total_variance"):
        dataclasses.replace(t2, total_variance=Fraction(0))
