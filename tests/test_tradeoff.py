"""The certified trade-off curve (accounting._routing._tradeoff, issue 31 item 5) against closed forms and dp_accounting.

Each check compares the curve read off the certified PLD with a value computed independently here:
the Gaussian's mu-GDP curve G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu) (Dong, Roth & Su, with
mu = sqrt(k) / sigma for k composed releases), the Laplace location family's Neyman-Pearson curve
F(F^-1(1 - alpha) - 1), randomized response's f_{eps,0}, all in mpmath at 40 digits, and a
dp_accounting PLD's delta curve turned into f the same way. "Sound" means the certified lower bound
never exceeds the true curve (beyond 1e-12, the closed forms' own rounding); "close" that it is
within the PLD's certification margin plus the eps grid's coarseness. The checks are deterministic
(no sampling). Wrong variants -- the curve without its e^-eps branch, and the curve read off the
optimistic PLD -- are run through the same checks and rejected: the first is far from G_mu at large
alpha (0.096 at mu = 1), the second exceeds G_mu at the alphas where a grid eps is the
Neyman-Pearson threshold (by the PLD's margin, ~1.5e-5).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import accounting as acc
from accounting import TradeOffCurve, tradeoff_curve

mpmath.mp.dps = 40
SOUND = 1e-12


def gdp(mu: float, alpha: np.ndarray) -> np.ndarray:
    """G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu), in mpmath (Phi^-1(1 - a) = -Phi^-1(a))."""
    out = []
    for a in alpha:
        a = mpmath.mpf(float(a))
        if a == 0:
            out.append(1.0)
        elif a == 1:
            out.append(0.0)
        else:
            z = -mpmath.sqrt(2) * mpmath.erfinv(2 * a - 1)  # Phi^-1(1 - a)
            out.append(float(mpmath.ncdf(z - mu)))
    return np.array(out)


def laplace_tradeoff(alpha: np.ndarray, b: float = 1.0, shift: float = 1.0) -> np.ndarray:
    """The Neyman-Pearson curve of Lap(0, b) against Lap(shift, b): reject for x > t, alpha = 1 - F(t),
    beta = F(t - shift), with F the Laplace CDF."""

    def cdf(x):
        return mpmath.exp(x / b) / 2 if x < 0 else 1 - mpmath.exp(-x / b) / 2

    def quantile(p):
        return b * mpmath.log(2 * p) if p < mpmath.mpf(1) / 2 else -b * mpmath.log(2 - 2 * p)

    out = []
    for a in alpha:
        a = mpmath.mpf(float(a))
        out.append(1.0 if a == 0 else (0.0 if a == 1 else float(cdf(quantile(1 - a) - shift))))
    return np.array(out)


def alphas_for(curve: TradeOffCurve, mu: float | None = None) -> np.ndarray:
    """A grid of FPRs, plus (Gaussian) the alphas whose Neyman-Pearson threshold is a grid eps: there
    the profile's sup is attained, so a curve read off too small a delta shows above G_mu."""
    grid = [np.logspace(-6, -1, 26), np.linspace(0.1, 1.0, 46)]
    if mu is not None:
        eps = np.asarray(curve.epsilons[1:])
        tangent = np.array([float(mpmath.ncdf(-e / mu - mu / 2)) for e in eps])
        grid += [tangent, gdp(mu, tangent)]  # both branches' touching points (G_mu is symmetric)
    return np.clip(np.concatenate(grid), 0.0, 1.0)


def check_against(lower: np.ndarray, truth: np.ndarray, close: float) -> None:
    assert np.all(lower <= truth + SOUND), f"above the true curve by {np.max(lower - truth):.3g}"
    assert np.all(truth - lower <= close), f"{np.max(truth - lower):.3g} below the true curve"


def without_second_branch(curve: TradeOffCurve, alpha: np.ndarray) -> np.ndarray:
    """Wrong variant: sup_eps max(0, 1 - delta - e^eps alpha) (the e^-eps branch dropped)."""
    e, d = np.asarray(curve.epsilons), np.asarray(curve.deltas)
    return np.maximum(0.0, (1 - d[:, None] - np.exp(e)[:, None] * alpha[None, :]).max(axis=0))


@pytest.fixture(scope="module")
def gaussian():
    return tradeoff_curve(acc.Gaussian(sigma=1.0, sensitivity=1.0))


def test_gaussian_curve_is_sound_and_close_to_mu_gdp(gaussian):
    a = alphas_for(gaussian, 1.0)
    truth = gdp(1.0, a)
    check_against(gaussian.type_ii(a), truth, close=1e-4)  # measured 4.0e-5 (256 eps)
    upper = gaussian.type_ii_upper(a)  # the other side of the sandwich holds the truth too
    assert np.all(upper >= truth - SOUND) and np.all(upper >= gaussian.type_ii(a))
    assert np.max(upper - truth) <= 1e-3  # and is close (measured 3.1e-4: the convexity chords between grid points)
    # the curve is a trade-off function: non-increasing and convex in alpha
    x = np.linspace(0, 1, 201)
    f = gaussian.type_ii(x)
    assert np.all(np.diff(f) <= 1e-15) and np.all(f[:-2] + f[2:] - 2 * f[1:-1] >= -1e-12)
    # TPR at an FPR is the complement, rounded up
    assert gaussian.tpr(0.01) >= 1 - float(gdp(1.0, [0.01])[0]) - SOUND


def test_the_same_checks_reject_the_wrong_variants(gaussian):
    a = alphas_for(gaussian, 1.0)
    truth = gdp(1.0, a)
    with pytest.raises(AssertionError, match="below the true curve"):
        check_against(without_second_branch(gaussian, a), truth, close=1e-4)
    optimistic = TradeOffCurve(gaussian.epsilons, gaussian.deltas_lower)  # the optimistic PLD's profile as if certified
    with pytest.raises(AssertionError, match="above the true curve"):
        check_against(optimistic.type_ii(a), truth, close=1e-4)


def test_composed_gaussians_follow_mu_sqrt_k():
    k, sigma = 3, 2.0
    curve = tradeoff_curve(acc.Gaussian(sigma=sigma, sensitivity=1.0), compose=k)
    mu = math.sqrt(k) / sigma
    a = alphas_for(curve, mu)
    check_against(curve.type_ii(a), gdp(mu, a), close=2e-4)
    with pytest.raises(AssertionError):  # the single release's curve is far from the composition's
        check_against(curve.type_ii(a), gdp(1 / sigma, a), close=2e-4)


def test_pure_dp_mechanisms_against_their_closed_forms():
    # randomized response attains f_{eps,0}; on its exact lattice the curve is exact up to rounding
    eps = 1.0
    rr = tradeoff_curve(acc.RandomizedResponse(epsilon=eps))
    a = np.linspace(0, 1, 101)
    truth = np.maximum.reduce([np.zeros_like(a), 1 - math.exp(eps) * a, math.exp(-eps) * (1 - a)])
    check_against(rr.type_ii(a), truth, close=1e-12)
    assert abs(rr.advantage - math.tanh(eps / 2)) < 1e-12
    # Laplace (b = 1, sensitivity 1): its own Neyman-Pearson curve, strictly above f_{1,0} inside
    lap = tradeoff_curve(acc.Laplace(scale=1.0, sensitivity=1.0))
    a = alphas_for(lap)
    truth = laplace_tradeoff(a)
    check_against(lap.type_ii(a), truth, close=1e-6)  # measured 3.4e-7
    pure = TradeOffCurve.from_approx_dp(1.0, 0.0).type_ii(a)
    assert np.all(pure <= lap.type_ii(a) + SOUND) and np.max(lap.type_ii(a) - pure) > 0.05


def test_advantage_is_the_total_variation(gaussian):
    tv = float(2 * mpmath.ncdf(0.5) - 1)  # N(0,1) vs N(1,1)
    assert gaussian.advantage_lower <= tv <= gaussian.advantage <= tv + 1e-4
    # and no FPR gives more than it
    x = np.linspace(0, 1, 1001)
    assert np.max(gaussian.tpr(x) - x) <= gaussian.advantage + 1e-12


def test_subsampled_gaussian_against_dp_accounting():
    """dp_accounting's PLD of the same release, its delta at our eps grid turned into f the same way:
    ours is at most the curve of its optimistic PLD and within 1e-6 of its pessimistic one (measured: 1.4e-12)."""
    pl = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    sigma, q = 1.0, 0.2
    ours = tradeoff_curve(acc.PoissonSampled(acc.Gaussian(sigma=sigma, sensitivity=1.0), q))
    eps = np.asarray(ours.epsilons)
    refs = {}
    for pessimistic in (True, False):
        pld = pl.from_gaussian_mechanism(sigma, sensitivity=1.0, sampling_prob=q, pessimistic_estimate=pessimistic,
                                         value_discretization_interval=1e-4)
        deltas = np.clip(np.asarray(pld.get_delta_for_epsilon(eps), dtype=float), 0.0, 1.0)
        refs[pessimistic] = TradeOffCurve(ours.epsilons, np.maximum.accumulate(deltas[::-1])[::-1])
    a = alphas_for(ours)
    mine = ours.type_ii(a)
    assert np.all(mine <= refs[False].type_ii(a) + 1e-9)
    assert np.all(mine >= refs[True].type_ii(a) - 1e-6)
    # wrong variant: the optimistic side of our own PLD, as if certified, is above dp_accounting's
    # pessimistic curve by more than the tolerance (measured 1.5e-5)
    assert np.max(TradeOffCurve(ours.epsilons, ours.deltas_lower).type_ii(a) - refs[True].type_ii(a)) > 1e-6


def test_claim_curves():
    # an (eps, delta) claim: TPR <= min(1, e^eps FPR + delta, 1 - e^-eps (1 - FPR - delta))
    x = np.linspace(0, 1, 101)
    eps, delta = 0.7, 1e-3
    expected = np.minimum.reduce([np.ones_like(x), math.exp(eps) * x + delta, 1 - math.exp(-eps) * (1 - x - delta)])
    got = TradeOffCurve.from_approx_dp(eps, delta).tpr(x)
    assert np.all(got >= expected - 1e-15) and np.all(got - expected <= 1e-12)
    # an RDP claim (a Gaussian's, sigma = 2): the least of Mironov's (eps, delta) curves, sound
    # against the Gaussian's own trade-off and looser than it
    orders = [1.5, 2, 4, 8, 16, 32]
    curve = TradeOffCurve.from_rdp(orders, [a / (2 * 4.0) for a in orders])
    a = np.linspace(0, 1, 101)
    truth = gdp(0.5, a)
    assert np.all(curve.type_ii(a) <= truth + SOUND) and np.max(truth - curve.type_ii(a)) > 0.01


def test_dp_event_subject():
    dp_event = pytest.importorskip("dp_accounting.dp_event")
    curve = tradeoff_curve(acc.from_dp_event(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(2.0), 4)))
    a = alphas_for(curve, 1.0)
    check_against(curve.type_ii(a), gdp(1.0, a), close=2e-4)
    assert curve.gaussian_mu == pytest.approx(1.0)


def test_shuffled_reports_read_the_clone_pair():
    """Shuffled eps0-LDP reports: the profile is the PLD of FMT21's clone pair, so at every eps its
    certified delta is at least the pair's exact hockey-stick divergence (accounting.clone_delta,
    Arb) and within 1e-5 of it (measured 6.6e-6 at eps 0: the PLD grid and the grouping of c). The
    same check rejects the stronger FMT23 pair for a randomizer that did not declare it."""
    eps0, n = 1.0, 10_000
    curve = tradeoff_curve(acc.ShuffledLDP(eps0, n), points=64)
    picked = range(0, 64, 9)
    exact = [acc.clone_delta(eps0, n, curve.epsilons[i]) for i in picked]
    assert all(d <= curve.deltas[i] + 1e-15 and curve.deltas[i] - d <= 1e-5 for i, d in zip(picked, exact))
    stronger = tradeoff_curve(acc.ShuffledLDP(eps0, n, stronger_clone=True), points=64)
    assert any(stronger.deltas[i] < d for i, d in zip(picked, exact))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda c: c.type_ii(1.5), "alpha"),
        (lambda c: c.type_ii(-0.1), "alpha"),
        (lambda c: c.tpr([0.1, float("nan")]), "fpr"),
        (lambda c: TradeOffCurve((0.0, 1.0), (0.5,)), "deltas"),
        (lambda c: TradeOffCurve((1.0, 0.5), (0.5, 0.4)), "epsilons"),
        (lambda c: TradeOffCurve((0.0,), (1.5,)), "deltas"),
        (lambda c: TradeOffCurve((0.0,), (0.1,), (0.2,)), "deltas_lower"),
        (lambda c: TradeOffCurve.from_approx_dp(-1.0, 0.0), "epsilon"),
        (lambda c: TradeOffCurve.from_rdp([0.5], [1.0]), "orders"),
        (lambda c: tradeoff_curve(acc.Gaussian(sigma=1.0, sensitivity=1.0), points=1), "points"),
        (lambda c: tradeoff_curve(acc.Gaussian(sigma=1.0, sensitivity=1.0), points=10**6), "points"),
        (lambda c: tradeoff_curve(acc.PureDP(1.0)), "subject"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    curve = TradeOffCurve.from_approx_dp(1.0, 0.0)
    with pytest.raises(ValueError, match=rf"^{name}=.* is invalid: expected"):
        call(curve)


def test_cli_tradeoff_table_json_and_plot(tmp_path):
    """``account epsilon ... --tradeoff``: the JSON carries the curve the API computes (randomized
    response, eps = 1: TPR <= e * FPR below the kink, advantage tanh(1/2)); --plot writes a PNG."""
    import json

    from click.testing import CliRunner

    from dpverify.cli import main

    png = tmp_path / "curve.png"
    args = ["account", "epsilon", "randomized-response", "--epsilon", "1", "--delta", "1e-5", "--tradeoff", "--fpr", "0.1", "--fpr", "0.5"]
    result = CliRunner().invoke(main, [*args, "--points", "16", "--plot", str(png), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)["tradeoff"]
    by_fpr = {p["fpr"]: p for p in data["points"]}
    assert by_fpr[0.1]["tpr_upper"] == pytest.approx(math.e * 0.1, abs=1e-12)
    assert by_fpr[0.5]["tpr_upper"] == pytest.approx(1 - math.exp(-1) * 0.5, abs=1e-12)
    assert data["advantage"] == pytest.approx(math.tanh(0.5), abs=1e-12)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = CliRunner().invoke(main, [*args, "--points", "16"])
    assert table.exit_code == 0 and "Trade-off (f-DP)" in table.output and "attack advantage" in table.output
    # bad input: exit 2 naming the option, before any work
    bad = CliRunner().invoke(main, [*args[:-4], "--fpr", "1.5"])
    assert bad.exit_code == 2 and "fpr=1.5 is invalid" in bad.output
    assert CliRunner().invoke(main, args[:2] + ["randomized-response", "--epsilon", "1", "--delta", "1e-5", "--plot", str(png)]).exit_code == 2
