"""One rule for a noise parameter the exact samplers cannot take: round it up
(``dpverify._executed._samplers.sampler_parameter_at_least``), used by the float-safe grid (``_noise``) and the
ICLR protocols (``_protocols``), with MAX_T defined once.

Deterministic except :func:`test_rounded_scale_is_not_cut_at_two_scales`, whose seed is fixed and
whose false-alarm rate and power are stated in its docstring.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from accounting import theorem4_parameters
from dpverify._executed import _kernels, _noise, _samplers
from dpverify._executed._protocols import central_dp_protocol, dist_cdp_protocol, dist_dp_protocol, local_dp_protocol
from dpverify._executed._samplers import MAX_S, MAX_T, sampler_parameter_at_least


def _vmax(t: int) -> int:
    """CKS Algorithm 2's int64 conditioning V <= vmax (the kernel's ``_vmax``, restated)."""
    return ((1 << 62) - t) // t


def test_max_t_is_defined_once_and_keeps_the_laplace_truncation_below_2_to_the_minus_100() -> None:
    assert not hasattr(_kernels, "MAX_T") and not hasattr(_noise, "_MAX_T")
    # P[V > vmax] = e^{-(vmax + 1)}: <= 2^-100 at MAX_T, not one step above it
    assert math.exp(-(_vmax(MAX_T) + 1)) <= 2.0**-100
    assert math.exp(-(_vmax(MAX_T + 1) + 1)) > 2.0**-100
    with pytest.raises(ValueError, match=r"scale=.*numerator must be <= "):
        _samplers.discrete_laplace(np.random.default_rng(0), Fraction(MAX_T + 1), 1)
    assert MAX_S == 1 << 62


REPRESENTABLE_SCALES = [Fraction(655360), Fraction(3 * 2**16), Fraction(2**16 * 10, 3), Fraction(MAX_T), Fraction(MAX_T, MAX_S), Fraction(1, 7)]
REPRESENTABLE_VARIANCES = [Fraction(9), Fraction(1, 4), Fraction(10**8), Fraction(104941537, 1048576)]


@pytest.mark.parametrize("scale", REPRESENTABLE_SCALES)
def test_a_scale_the_sampler_takes_is_kept_and_draws_the_same_stream(scale: Fraction) -> None:
    assert sampler_parameter_at_least("scale", scale, scale, "discrete_laplace") == scale
    kept = sampler_parameter_at_least("scale", scale, scale, "discrete_laplace")
    a = _samplers.discrete_laplace(np.random.default_rng(11), scale, 50)
    b = _samplers.discrete_laplace(np.random.default_rng(11), kept, 50)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("sigma2", REPRESENTABLE_VARIANCES)
def test_a_variance_the_sampler_takes_is_kept(sigma2: Fraction) -> None:
    _samplers.discrete_gaussian_range(sigma2)  # taken
    assert sampler_parameter_at_least("sigma2", sigma2, sigma2, "discrete_gaussian") == sigma2


def test_callers_keep_their_parameters_where_the_sampler_takes_them() -> None:
    """Decimal eps (the CLI's and make_protocol's form): g/eps is kept, as before the shared rule."""
    assert _noise.grid_laplace_scale(0.1) == Fraction(655360)
    assert _noise.grid_laplace_scale(Fraction(1, 3)) == 3 * 2**16
    for make in (central_dp_protocol, dist_dp_protocol, local_dp_protocol):
        protocol = make(Fraction(1, 2), 0.1)
        params = protocol.parameters(64)
        assert params.scale == Fraction(params.g) / Fraction(1, 2)
    protocol = dist_cdp_protocol(Fraction(1, 2), 10.0, 0.1)
    params = protocol.parameters(64)
    assert params.per_user_variance == Fraction(params.g**2) / (64 * Fraction(1, 4))


def _expected_round_up(value: Fraction, takes) -> Fraction:
    """The least k/2^j >= value taken by the sampler, j <= 62 largest: computed here from the definition."""
    for j in range(62, -1, -1):
        k = math.ceil(value * 2**j)
        if takes(Fraction(k, 2**j)):
            return Fraction(k, 2**j)
    raise AssertionError("no representable candidate")


def _laplace_takes(scale: Fraction) -> bool:
    return scale.numerator <= (1 << 62) // 70 and scale.denominator <= 1 << 62


def _gaussian_takes(sigma2: Fraction) -> bool:
    try:
        _samplers.discrete_gaussian_range(sigma2)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    "value",
    [
        Fraction(2**16) / Fraction(repr(0.30000000000000004)),  # 17 decimal digits: g/eps beyond MAX_T
        Fraction(2**16) / Fraction(0.1),  # the binary float 0.1: a 2^55 denominator
        Fraction(10**20 + 1, 3**40),
        Fraction(MAX_T + 2, 3),  # a numerator just above the range
    ],
)
def test_a_scale_the_sampler_cannot_take_is_rounded_up(value: Fraction) -> None:
    """Up, never down (a rounding down would be less noise than asked for and fail the first assert),
    to the least k/2^j the sampler takes at the finest j."""
    assert not _laplace_takes(value)
    rounded = sampler_parameter_at_least("scale", value, value, "discrete_laplace")
    assert rounded >= value
    assert _laplace_takes(rounded)
    assert rounded == _expected_round_up(value, _laplace_takes)
    assert (rounded - value) / value < 2.0**-50


def test_a_variance_the_sampler_cannot_take_is_rounded_up() -> None:
    n, eps = 100, Fraction(2499, 10000)
    value = theorem4_parameters(eps, 10.0, n, 0.1).per_user_variance  # g^2 / (n eps^2) at s = 10, eps = 0.2499
    assert not _gaussian_takes(value)
    rounded = sampler_parameter_at_least("epsilon", eps, value, "discrete_gaussian")
    assert rounded >= value and _gaussian_takes(rounded)
    assert rounded == _expected_round_up(value, _gaussian_takes)
    assert dist_cdp_protocol(eps, 10.0, 0.1).parameters(n).per_user_variance == rounded


def test_a_parameter_beyond_every_representable_fraction_names_itself_and_the_range() -> None:
    with pytest.raises(ValueError, match=r"epsilon=1e-30 is invalid: .*discrete_laplace scale \(1e\+40\).*t <= floor\(2\*\*62/70\)"):
        sampler_parameter_at_least("epsilon", 1e-30, Fraction(10**40), "discrete_laplace")
    with pytest.raises(ValueError, match=r"epsilon=1e-30 is invalid: .*discrete_gaussian sigma2"):
        sampler_parameter_at_least("epsilon", 1e-30, Fraction(10**40), "discrete_gaussian")
    with pytest.raises(ValueError, match="epsilon"):
        _noise.grid_laplace_scale(1e-18)


def test_rounded_up_scale_charges_no_more_than_the_requested_epsilon() -> None:
    awkward = 0.30000000000000004
    protocol = central_dp_protocol(awkward, 0.1)
    params = protocol.parameters(64)
    assert params.scale >= Fraction(params.g) / Fraction(awkward)
    assert protocol.mechanism(64).pure().epsilon <= awkward * (1 + 1e-15)


def test_rounded_scale_is_not_cut_at_two_scales() -> None:
    """g/eps for eps = 0.30000000000000004 is beyond the sampler's range. The former rule rounded it to
    a numerator near 2^61, where CKS Algorithm 2's int64 conditioning (V <= vmax = 1) cut Lap_Z(b) at
    2 scales: no draw beyond 2b, against P[|X| > 3b] = 2 e^{-k/b}/(1 + e^{-1/b}), k = floor(3b) + 1,
    about 0.0498 for the exact law. N = 20,000 draws (seed 7), pass if at least 850 exceed 3b:
    false-alarm rate P[Bin(N, 0.0498) < 850] = 5.7e-7 (computed below); power against the cut law 1."""
    b = _noise.grid_laplace_scale(0.30000000000000004)
    assert _vmax(b.numerator) >= 69
    k = math.floor(3 * b) + 1
    p = 2 * math.exp(-k / float(b)) / (1 + math.exp(-1 / float(b)))
    threshold, n = 850, 20_000
    assert stats.binom.cdf(threshold - 1, n, p) < 1e-6
    draws = _samplers.discrete_laplace(np.random.default_rng(7), b, n, method="inversion")
    assert np.count_nonzero(np.abs(draws) >= k) >= threshold


def test_batch_parameters_name_their_noise_and_keep_noise_as_a_deprecated_alias() -> None:
    """Each kind sets exactly one of scale / total_variance / per_user_variance; the old ``noise``
    still answers that one value and warns; construction with none or two of them is refused."""
    from dpverify._executed._protocols import BatchParameters, dist_rdp_protocol

    cases = (
        (dist_dp_protocol(Fraction(1, 2), 0.1), "scale"),
        (local_dp_protocol(Fraction(1, 2), 0.1), "scale"),
        (dist_rdp_protocol(Fraction(1, 2), 10.0, 0.1), "total_variance"),
        (dist_cdp_protocol(Fraction(1, 2), 10.0, 0.1), "per_user_variance"),
    )
    names = ("scale", "total_variance", "per_user_variance")
    for protocol, name in cases:
        params = protocol.parameters(64)
        assert [k for k in names if getattr(params, k) is not None] == [name]
        with pytest.warns(DeprecationWarning, match="BatchParameters.noise"):
            assert params.noise == getattr(params, name)
    with pytest.raises(ValueError, match="exactly one"):
        BatchParameters(4, 2, 3, 15)
    with pytest.raises(ValueError, match="exactly one"):
        BatchParameters(4, 2, 3, 15, scale=Fraction(1), total_variance=Fraction(1))
    with pytest.raises(ValueError, match="scale"):
        BatchParameters(4, 2, 3, 15, scale=Fraction(-1))
