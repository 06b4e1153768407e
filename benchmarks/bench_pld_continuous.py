"""Benchmark: continuous and subsampled PLDs, dp_accounting events, and the Skellam re-measure.

Run:  python benchmarks/bench_pld_continuous.py [--runs 5]   (markdown on stdout; the tables in
benchmarks/pld_continuous.md come from it)

Every case is measured in one process, on the same core, side by side with dp_accounting
(0.6.0: PLD pessimistic = connect-the-dots, optimistic = privacy buckets rounded down, and its RDP
accountant) and prv-accountant (0.2.0: its [lower, upper] bracket at eps_error = 0.01). Times are
medians of ``--runs`` runs (wall clock; a same-run baseline, a numpy FFT of 2^20 points, gives
the machine's speed at the time). dp_accounting and prv are benchmark/test dependencies only.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import accounting as acc  # noqa: E402
from accounting._events._dp_event import event_to_dict  # noqa: E402
from accounting._mechanisms._skellam import SkellamPair  # noqa: E402
from accounting._privacy_loss._pld import PrivacyLossDistribution  # noqa: E402

warnings.simplefilter("ignore")
DELTA = 1e-5
H = 1e-4


def median_time(fn, runs):
    times, value = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), value


def baseline(runs):
    x = np.random.default_rng(0).random(1 << 20)
    return median_time(lambda: np.fft.rfft(x), runs)[0]


def ours_pld(make, k, lower=False):
    def run():
        pld = make()
        r = pld.self_compose(k).epsilon(DELTA) if k > 1 else pld.epsilon(DELTA)
        return r.epsilon, r.epsilon_lower

    return run


def prv_eps(prv, k):
    from prv_accountant import PRVAccountant

    def run():
        a = PRVAccountant(prvs=[prv], max_self_compositions=[k], eps_error=0.01, delta_error=1e-10)
        lo, est, up = a.compute_epsilon(DELTA, [k])
        return lo, up

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = args.runs
    import dp_accounting as dpa
    from dp_accounting.pld import pld_privacy_accountant as pa
    from dp_accounting.pld import privacy_loss_distribution as pl
    from dp_accounting.rdp import rdp_privacy_accountant as ra
    from prv_accountant import GaussianMechanism, LaplaceMechanism, PoissonSubsampledGaussianMechanism

    base = baseline(runs)
    print(f"load {os.getloadavg()[0]:.2f}; delta = {DELTA:g}; h = {H:g}; median of {runs} runs; baseline numpy rfft(2^20) = {base * 1e3:.1f} ms\n")
    print("| case | ours: route | ours eps [certified lower, upper] | ours s | dp_acc PLD [optimistic, pessimistic] | dp_acc s | prv [lower, upper] | prv s | ours / dp_acc pess |")
    print("|---|---|---|---|---|---|---|---|---|")

    def row(name, route, ours_fn, dpa_fn, prv_fn):
        t_o, (up, lo) = median_time(ours_fn, runs)
        t_d, (d_opt, d_pes) = median_time(dpa_fn, runs) if dpa_fn else (math.nan, (math.nan, math.nan))
        t_p, (p_lo, p_up) = median_time(prv_fn, runs) if prv_fn else (math.nan, (math.nan, math.nan))
        lo_s = f"{lo:.6f}" if lo is not None else "-"
        print(
            f"| {name} | {route} | [{lo_s}, {up:.6f}] | {t_o:.2f} ({t_o / base:.0f}x) | [{d_opt:.6f}, {d_pes:.6f}] | {t_d:.2f} | [{p_lo:.6f}, {p_up:.6f}] | {t_p:.2f} | {up / d_pes:.6f} |"
        )
        sys.stdout.flush()

    def dpa_pair(pess, opt, k):
        def run():
            return opt().self_compose(k).get_epsilon_for_delta(DELTA), pess().self_compose(k).get_epsilon_for_delta(DELTA)

        return run

    # 1. Laplace, one release (exact: delta(eps) = 1 - e^{(eps - 1)/2}, so eps(1e-5) = 1 + 2 log(1 - 1e-5))
    row(
        "Laplace(b=1), k=1 (exact 0.999980)",
        "pld (connect-the-dots)",
        ours_pld(lambda: PrivacyLossDistribution.from_pair(acc.Laplace(1, 1), discretisation=H), 1),
        dpa_pair(lambda: pl.from_laplace_mechanism(1.0, value_discretization_interval=H), lambda: pl.from_laplace_mechanism(1.0, value_discretization_interval=H, pessimistic_estimate=False, use_connect_dots=False), 1),
        prv_eps(LaplaceMechanism(1.0), 1),
    )
    # 2. 1,000-fold Laplace
    row(
        "Laplace(b=10), k=1000",
        "pld (connect-the-dots)",
        ours_pld(lambda: PrivacyLossDistribution.from_pair(acc.Laplace(10, 1), discretisation=H, lower_bound=False), 1000),
        dpa_pair(lambda: pl.from_laplace_mechanism(10.0, value_discretization_interval=H), lambda: pl.from_laplace_mechanism(10.0, value_discretization_interval=H, pessimistic_estimate=False, use_connect_dots=False), 1000),
        prv_eps(LaplaceMechanism(0.1), 1000)  # prv takes mu = Delta / b,
    )
    # 3. mixed: 100 Laplace(b=10) + 100 Gaussian(sigma=10) + 100 discrete Laplace(b=10)
    def ours_mixed():
        pld = (
            PrivacyLossDistribution.from_pair(acc.Laplace(10, 1), discretisation=H, lower_bound=False).self_compose(100)
            + PrivacyLossDistribution.from_pair(acc.Gaussian(10, 1), discretisation=H, lower_bound=False).self_compose(100)
            + PrivacyLossDistribution.from_pair(acc.DiscreteLaplace(10, 1), discretisation=H, lower_bound=False).self_compose(100)
        )
        r = pld.epsilon(DELTA)
        return r.epsilon, r.epsilon_lower

    def dpa_mixed():
        def build(pess):
            kw = {"value_discretization_interval": H, "pessimistic_estimate": pess}
            if not pess:
                kw["use_connect_dots"] = False
            return (
                pl.from_laplace_mechanism(10.0, **kw).self_compose(100)
                .compose(pl.from_gaussian_mechanism(10.0, **kw).self_compose(100))
                .compose(pl.from_discrete_laplace_mechanism(0.1, 1, value_discretization_interval=H, pessimistic_estimate=pess).self_compose(100))
            )

        return build(False).get_epsilon_for_delta(DELTA), build(True).get_epsilon_for_delta(DELTA)

    row("100 Laplace(10) + 100 Gaussian(10) + 100 discrete Laplace(10)", "pld (mixed grid)", ours_mixed, dpa_mixed, None)
    # 4. subsampled Gaussian, q = 0.01, sigma = 1, 1000 steps
    sg = acc.PoissonSampled(acc.Gaussian(1, 1), 0.01)
    row(
        "Poisson(q=0.01) Gaussian(sigma=1), k=1000",
        "pld (connect-the-dots, both directions)",
        ours_pld(lambda: PrivacyLossDistribution.from_pair(sg, discretisation=H, lower_bound=False), 1000),
        dpa_pair(
            lambda: pl.from_gaussian_mechanism(1.0, sampling_prob=0.01, value_discretization_interval=H),
            lambda: pl.from_gaussian_mechanism(1.0, sampling_prob=0.01, value_discretization_interval=H, pessimistic_estimate=False, use_connect_dots=False),
            1000,
        ),
        prv_eps(PoissonSubsampledGaussianMechanism(sampling_probability=0.01, noise_multiplier=1.0), 1000),
    )
    t_o, with_lower = median_time(ours_pld(lambda: PrivacyLossDistribution.from_pair(sg, discretisation=H), 1000), max(1, runs // 2))
    print(f"\nSubsampled Gaussian with the certified lower bound too: [{with_lower[1]:.6f}, {with_lower[0]:.6f}] in {t_o:.2f} s.\n")

    # RDP routes
    print("| case | ours RDP (certified) | ours s | dp_acc RDP | dp_acc s |")
    print("|---|---|---|---|---|")

    def rdp_row(name, mech, event, relation):
        t_o, e_o = median_time(lambda: acc.rdp_to_epsilon(mech.rdp(), DELTA).epsilon, runs)

        def theirs():
            r = ra.RdpAccountant(neighboring_relation=relation)
            r.compose(event)
            return r.get_epsilon(DELTA)

        t_d, e_d = median_time(theirs, runs)
        print(f"| {name} | {e_o:.6f} | {t_o:.3f} | {e_d:.6f} | {t_d:.3f} |")

    rdp_row(
        "Poisson(q=0.01) Gaussian(1), k=1000 (MTZ)",
        acc.from_dp_event(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 1000)),
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 1000),
        dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
    )
    wor = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(1000, 10, dpa.GaussianDpEvent(1.0)), 100)
    rdp_row("10 of 1000 w/o replacement, Gaussian(1), k=100 (WBK Thm 9 vs dp_acc Thm 27)", acc.from_dp_event(wor), wor, dpa.NeighboringRelation.REPLACE_ONE)

    # from_dp_event, every route, a composite tree
    event = dpa.ComposedDpEvent(
        [
            dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 100),
            dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(10.0), 50),
            dpa.NoOpDpEvent(),
        ]
    )
    text = __import__("json").dumps(event_to_dict(event))
    t_o, rep = median_time(lambda: acc.epsilon_routes(acc.from_dp_event(text), DELTA, comparisons=False), runs)

    def theirs_event():
        a = pa.PLDAccountant(value_discretization_interval=H)
        a.compose(event)
        return a.get_epsilon(DELTA)

    t_d, e_d = median_time(theirs_event, runs)
    print(f"\nfrom_dp_event (100 x Poisson(0.01) Gaussian(1) + 50 x Laplace(10) + no-op), from JSON: ours {rep.epsilon:.6f} via {rep.route} in {t_o:.2f} s; dp_accounting PLD (pessimistic) {e_d:.6f} in {t_d:.2f} s; ratio {rep.epsilon / e_d:.6f}.\n")

    # Skellam re-measure, one process
    print("Skellam(mu = 100, Delta = 1), k = 1000, one process:\n")
    t_o, r_o = median_time(lambda: PrivacyLossDistribution.from_pair(SkellamPair(100, 1), discretisation=2e-5, lower_bound=False).self_compose(1000).epsilon(DELTA).epsilon, runs)
    print(f"- ours (certified upper, h = 2e-5, the route's default for k = 1000): {r_o:.6f} in {t_o:.2f} s")
    t_o4, r_o4 = median_time(lambda: PrivacyLossDistribution.from_pair(SkellamPair(100, 1), discretisation=1e-4, lower_bound=False).self_compose(1000).epsilon(DELTA).epsilon, runs)
    print(f"- ours (certified upper, h = 1e-4): {r_o4:.6f} in {t_o4:.2f} s")
    ks = np.arange(-12 * 10 - 200, 12 * 10 + 201)
    lp = stats.skellam.logpmf(ks, 50, 50)
    lower = {int(x): float(v) for x, v in zip(ks, lp)}
    upper = {int(x) + 1: float(v) for x, v in zip(ks, lp)}
    for h in (1e-4, 1e-5):
        t_d, e_d = median_time(lambda: pl.from_two_probability_mass_functions(lower, upper, value_discretization_interval=h).self_compose(1000).get_epsilon_for_delta(DELTA), runs)
        print(f"- dp_accounting (pessimistic, h = {h:g}): {e_d:.6f} in {t_d:.2f} s")


if __name__ == "__main__":
    main()
