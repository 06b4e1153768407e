"""The bandit runner's aggregate path: the users' rounded sum drawn from its law, O(g) per batch.

What must hold for the fast path to be the protocol run on simulated users:
- ``ArmLaw.rounded_law(g)`` is the law of one user's randomised rounding (mean g E[x] exactly;
  the per-user kernel's roundings fit it);
- ``RewardStreams.rounded_sum`` is the sum of n such roundings (fits the n-fold convolution);
- the noise and analyzer after it are the protocol's (same kernel as ``aggregate_views``);
- the privatizer charges before it computes anything and refuses what it cannot do.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import accounting as acc
from dpverify._executed import _protocol_kernels as pk
from dpverify._executed import _protocols as P
from dpverify._executed import _samplers as S
from dpverify._bandits import RunConfig, run_seed
from dpverify._bandits._environments import ArmLaw, bernoulli_instance, clipped_gaussian_instance
from dpverify._executed._privatizer import Privatizer

from _gof import integer_gof

LAWS = [
    ArmLaw("clipped-gaussian", (0.3, 0.1)),
    ArmLaw("clipped-gaussian", (0.98, 0.2)),
    ArmLaw("clipped-gaussian", (-0.4, 0.3)),
    ArmLaw("bernoulli", (0.37,)),
    ArmLaw("beta-a-1", (4.0,)),
    ArmLaw("uniform", (0.2, 0.7)),
    ArmLaw("two-point", (0.4, 1.0)),
    ArmLaw("categorical", (0.0, 0.25, 0.5, 0.75, 1.0, 0.5, 0.2, 0.1, 0.1, 0.1)),
]


@pytest.mark.parametrize("law", LAWS, ids=lambda a: f"{a.kind}{a.params}")
@pytest.mark.parametrize("g", [1, 7, 205, 20480])
def test_rounded_law_is_a_law_with_mean_g_mu(law, g):
    """Randomised rounding is unbiased: sum_k k P[xhat = k] = g E[x] (to float accuracy)."""
    pmf = law.rounded_law(g)
    assert pmf.shape == (g + 1,) and pmf.min() >= 0
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert pmf @ np.arange(g + 1) == pytest.approx(g * law.mean, rel=1e-11, abs=1e-12)


def _per_user_roundings(law: ArmLaw, g: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = law.sample(rng, n)
    return pk.randomize(rng, x, g, n * g + 1, "none")


@pytest.mark.parametrize("law", [LAWS[0], LAWS[1], LAWS[4], LAWS[7]], ids=lambda a: a.kind)
def test_per_user_roundings_fit_rounded_law(law):
    """Chi-square (alpha = 1e-6) of 10^6 per-user roundings (the protocol kernel) against rounded_law(7).

    False alarm 1e-6 per law. Power: > 0.999 against any binned law 1% away in total variation
    (asserted); the wrong variant (deterministic floor(g x), no coin) is rejected below."""
    g = 7
    xhat = _per_user_roundings(law, g, 10**6, seed=11)
    res = integer_gof(xhat, 0, law.rounded_law(g), alpha=1e-6)
    assert not res.rejected, str(res)
    assert res.power_at_tv(0.01) > 0.999


def test_wrong_rounding_law_is_rejected():
    """The same test rejects the law of floor(g x) (rounding without the coin): it can fail."""
    law, g = LAWS[0], 7
    xhat = _per_user_roundings(law, g, 10**6, seed=11)
    rng = np.random.default_rng(3)
    floor_law = np.bincount(np.floor(law.sample(rng, 10**6) * g).astype(int), minlength=g + 1) / 10**6
    res = integer_gof(xhat, 0, floor_law, alpha=1e-6)
    assert res.rejected


def test_rounded_sum_fits_convolution_of_rounded_law():
    """rounded_sum(arm, n=3, g=4) against the 3-fold convolution of rounded_law(4): chi-square at
    alpha = 1e-6 over 3*10^5 draws; power > 0.999 at 1% TV. A wrong variant (the sum of 3 floors,
    i.e. no rounding coin) is rejected by the same test."""
    inst = clipped_gaussian_instance([0.45, 0.6], sd=0.2)
    streams = inst.streams(np.random.SeedSequence(5))
    g, n, draws = 4, 3, 300_000
    sums = np.array([streams.rounded_sum(0, n, g) for _ in range(draws)])
    one = inst.arms[0].rounded_law(g)
    law = np.convolve(np.convolve(one, one), one)
    res = integer_gof(sums, 0, law, alpha=1e-6)
    assert not res.rejected, str(res)
    assert res.power_at_tv(0.01) > 0.999
    rng = np.random.default_rng(9)
    floors = np.floor(inst.arms[0].sample(rng, (draws * n)) * g).astype(int).reshape(draws, n).sum(axis=1)
    assert integer_gof(floors, 0, law, alpha=1e-6).rejected


def test_rounded_sum_of_bernoulli_is_g_times_binomial():
    """Bernoulli rewards round exactly (x g is 0 or g): rounded_sum / g ~ Binomial(n, mu).
    Chi-square at alpha = 1e-6, 10^5 draws; a Binomial(n, mu + 0.02) null is rejected."""
    from scipy import stats

    inst = bernoulli_instance([0.3, 0.5])
    streams = inst.streams(np.random.SeedSequence(6))
    g, n = 5, 40
    sums = np.array([streams.rounded_sum(0, n, g) for _ in range(100_000)])
    assert np.all(sums % g == 0)
    k = sums // g
    assert not integer_gof(k, 0, stats.binom.pmf(np.arange(n + 1), n, 0.3), alpha=1e-6).rejected
    assert integer_gof(k, 0, stats.binom.pmf(np.arange(n + 1), n, 0.32), alpha=1e-6).rejected


def test_views_of_sum_is_the_aggregate_kernel():
    """With integral x g (no rounding coins) the two entry points draw the same view from the same stream."""
    g, m = 4, 10_001
    x = np.array([0.25, 0.5, 1.0, 0.0, 0.75])
    for noise, kw in (("discrete_laplace", {"scale": 8}), ("skellam", {"variance": 50.0})):
        a = pk.aggregate_views(np.random.default_rng(1), x, g, m, 50, noise, **kw)
        b = pk.aggregate_views_of_sum(np.random.default_rng(1), int(round(x.sum() * g)), m, 50, noise, **kw)
        assert np.array_equal(a, b)


def test_estimate_from_rounded_sum_matches_analyzer():
    """estimate_from_rounded_sum = A(view) with the protocol's analyzer, on the same stream."""
    for proto in (P.dist_dp_protocol(0.5, 0.1), P.dist_rdp_protocol(0.5, 10, 0.1), P.central_dp_protocol(0.5, 0.1)):
        n = 64
        params = proto.parameters(n)
        for xhat_sum in (0, 1, n * params.g // 2, n * params.g):
            est = proto.estimate_from_rounded_sum(xhat_sum, n, np.random.default_rng(4))
            noise = ("skellam", {"variance": float(params.total_variance)}) if proto.kind == "dist-rdp" else ("discrete_laplace", {"scale": params.scale})
            view = pk.aggregate_views_of_sum(np.random.default_rng(4), xhat_sum, params.m, 1, noise[0], **noise[1])
            assert est == proto.analyze(view, n)[0]


def test_protocols_without_one_draw_noise_have_no_fast_path():
    for proto in (P.dist_cdp_protocol(0.5, 10, 0.1), P.local_dp_protocol(0.5, 0.1), P.central_laplace_protocol(0.5, noise="idealised")):
        assert proto.aggregate_resolution(64) is None
        with pytest.raises(ValueError, match="protocol"):
            proto.estimate_from_rounded_sum(3, 64, np.random.default_rng(0))


def test_float_safe_dp_se_aggregate_path_is_its_per_user_path_given_the_rounded_sum():
    """DP-SE float-safe depends on the users only through sum xhat (grid 1/g) plus one Lap_Z draw:
    on the same stream, estimate_from_rounded_sum(s) is (s + the per-user path's noise draw) / g."""
    proto = P.central_laplace_protocol(0.5)
    g = proto.aggregate_resolution(64)
    assert g == 2**16
    for xhat_sum in (0, 7, 64 * g):
        est = proto.estimate_from_rounded_sum(xhat_sum, 64, np.random.default_rng(4))
        noise = int(S.discrete_laplace(np.random.default_rng(4), proto.scale, method="inversion"))
        assert est == (xhat_sum + noise) / g


def test_privatizer_charges_first_and_refuses_cleanly():
    proto = P.dist_dp_protocol(0.5, 0.1)
    ledger = acc.Ledger(acc.PureDP(0.5))
    priv = Privatizer(proto, ledger, np.random.SeedSequence(1), path="aggregate")
    g = proto.aggregate_resolution(16)
    rel = priv.release_rounded_sum(3 * g, 16, range(16), label="b=4")
    assert rel.path == "aggregate" and len(ledger.charges) == 1
    # the same users again: 2 x eps > budget; refused, nothing recorded
    with pytest.raises(acc.BudgetExceeded):
        priv.release_rounded_sum(3 * g, 16, range(16))
    assert len(ledger.charges) == 1 and priv.releases == 1
    with pytest.raises(ValueError, match="xhat_sum"):
        priv.release_rounded_sum(16 * g + 1, 16, range(100, 116))
    with pytest.raises(ValueError, match="xhat_sum"):
        priv.release_rounded_sum(-1, 16, range(100, 116))
    assert len(ledger.charges) == 1
    per_user = Privatizer(proto, acc.Ledger(acc.PureDP(0.5)), np.random.SeedSequence(1), path="per-user")
    with pytest.raises(ValueError, match="path"):
        per_user.release_rounded_sum(0, 16, range(16))


def test_aggregate_and_per_user_runs_agree_in_mean():
    """Dist-DP-SE, easy, T = 2^16, 40 paired instances: aggregate and per-user runs have the same
    mean final regret up to sampling error. Welch z-test at alpha = 1e-4 (|z| < 3.9); under the
    null the false-alarm rate is 1e-4. A run that skipped the noise or the rounding would change
    the regret law, but this test only has power against differences of ~1 standard error of the
    mean x 4 (it is a consistency check; the laws are pinned by the tests above)."""
    kw = dict(epsilon=0.5, seeds=40, seed=3)
    from dpverify._bandits import run

    agg = run(RunConfig("dist-dp-se", "easy", 2**16, path="aggregate", **kw))
    per = run(RunConfig("dist-dp-se", "easy", 2**16, path="per-user", **kw))
    a, b = np.asarray(agg.final_regrets), np.asarray(per.final_regrets)
    z = (a.mean() - b.mean()) / math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(z) < 3.9, (a.mean(), b.mean(), z)
    assert agg.ledger["path"] == "aggregate" and agg.ledger["per_user"]["pure"] == pytest.approx(0.5, rel=1e-12)


def test_aggregate_run_draws_no_individual_reward(monkeypatch):
    """The fast path is O(g) per batch: an aggregate pseudo-regret run never samples a reward."""

    def refuse(self, rng, n):
        raise AssertionError("a reward was drawn one by one")

    monkeypatch.setattr(ArmLaw, "sample", refuse)
    rec = run_seed(RunConfig("dist-rdp-se", "hard", 20_000, epsilon=1.0, path="aggregate"), 0)
    assert rec.pulls.sum() == 20_000
    with pytest.raises(AssertionError, match="one by one"):
        run_seed(RunConfig("dist-rdp-se", "hard", 20_000, epsilon=1.0, path="per-user"), 0)


def test_realised_regret_on_aggregate_path_draws_rewards():
    """Realised regret needs every reward: the aggregate path then draws them (still one noise draw)."""
    rec = run_seed(RunConfig("dist-dp-se", "easy", 5000, epsilon=1.0, path="aggregate", realised=True), 0)
    assert np.all(np.isfinite(rec.regret)) and rec.ledger["path"] == "aggregate"


def test_direct_entry_point_draws_what_the_dispatcher_draws():
    """draw_summed_noise calls numba's compiled entry point after its first call: the same views
    as the dispatcher from the same stream (deterministic, 200 draws of each noise kind)."""
    for kind, s, t, half_mu in ((1, 3, 17, 0.0), (2, 1, 1, 1234.5)):
        a, b = np.random.default_rng(8), np.random.default_rng(8)
        out = np.empty(1, dtype=np.int64)
        fast = [pk.draw_summed_noise(a, 77, 100_003, kind, s, t, half_mu, out) for _ in range(200)]
        slow = []
        for _ in range(200):
            pk._aggregate_views(b, 77, pk._NO_FRACTIONS, 100_003, kind, s, t, half_mu, out)
            slow.append(int(out[0]))
        assert fast == slow and len(set(fast)) > 20


def test_entry_points_are_kept_per_argument_layout():
    """The cached entry point of one argument layout is never called with another (it would
    reinterpret the bytes unchecked): a kernel called with an int64, then a float64 output gets
    one entry each and writes each correctly."""
    import numba

    @numba.njit
    def fill(out, value):
        out[:] = value

    ints, floats = np.zeros(3, dtype=np.int64), np.zeros(3)
    pk._call_compiled(fill, (ints, 7))
    pk._call_compiled(fill, (ints, 8))  # through the cached entry point
    pk._call_compiled(fill, (floats, 2.5))
    assert ints.tolist() == [8, 8, 8] and floats.tolist() == [2.5, 2.5, 2.5]
    assert sum(key[0] is fill for key in pk._ENTRIES) == 2
