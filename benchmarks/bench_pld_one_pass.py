"""Benchmark (issue #12): the one-FFT-pass PLD composition against dp_accounting, same process.

Run:  python benchmarks/bench_pld_one_pass.py [--runs 5]   (markdown on stdout; the tables in
benchmarks/pld_one_pass.md come from it)

For each case, ours (certified upper bound, accounting._privacy_loss._pld with accounting._privacy_loss._pld_fft_power) and
dp_accounting 0.6.0 (pessimistic PLD, connect-the-dots for Laplace / Gaussian, a float estimate)
are timed alternately in one process, ``--runs`` times each; the table gives medians, the time
ratio ours / dp_accounting and the eps ratio. "previous engine" is ours with the one-pass route
switched off (repeated squaring with a truncation after every product, as before #12), measured
in the same run. The load average is printed; a numpy rfft of 2^20 points is the machine baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import accounting as acc  # noqa: E402
import accounting._privacy_loss._pld as pld_module  # noqa: E402
from accounting._mechanisms._skellam import SkellamPair  # noqa: E402
from accounting._privacy_loss._pld import PrivacyLossDistribution  # noqa: E402

warnings.simplefilter("ignore")
DELTA = 1e-5


def alternate(fns, runs):
    """Median time and last value of each function, the functions run alternately."""
    times = [[] for _ in fns]
    values = [None] * len(fns)
    for _ in range(runs):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            values[i] = fn()
            times[i].append(time.perf_counter() - t0)
    return [(statistics.median(t), v) for t, v in zip(times, values)]


def previous_engine(fn):
    """fn run with the one-pass route off (repeated squaring)."""

    def run():
        saved = pld_module._factors_of
        pld_module._factors_of = lambda side, step=None: None
        try:
            return fn()
        finally:
            pld_module._factors_of = saved

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = args.runs
    from dp_accounting.pld import privacy_loss_distribution as pl

    x = np.random.default_rng(0).random(1 << 20)
    base = alternate([lambda: np.fft.rfft(x)], runs)[0][0]
    print(f"load {os.getloadavg()[0]:.2f} (2 cores); delta = {DELTA:g}; median of {runs} alternating runs; baseline numpy rfft(2^20) = {base * 1e3:.1f} ms\n")
    print("| case | ours: certified eps | ours s | previous engine: eps, s | dp_accounting pessimistic eps | dp_acc s | eps ours / dp_acc | time ours / dp_acc |")
    print("|---|---|---|---|---|---|---|---|")

    def row(name, ours, theirs):
        (t_o, e_o), (t_p, e_p), (t_d, e_d) = alternate([ours, previous_engine(ours), theirs], runs)
        print(f"| {name} | {e_o:.9f} | {t_o:.3f} | {e_p:.9f}, {t_p:.3f} | {e_d:.9f} | {t_d:.3f} | {e_o / e_d:.10f} | {t_o / t_d:.2f} |")
        sys.stdout.flush()

    h = 1e-4
    row(
        "Laplace(b=10), k=1000, h=1e-4",
        lambda: PrivacyLossDistribution.from_pair(acc.Laplace(10, 1), discretisation=h, lower_bound=False).self_compose(1000).epsilon(DELTA).epsilon,
        lambda: pl.from_laplace_mechanism(10.0, value_discretization_interval=h).self_compose(1000).get_epsilon_for_delta(DELTA),
    )

    def ours_mixed():
        return (
            PrivacyLossDistribution.from_pair(acc.Laplace(10, 1), discretisation=h, lower_bound=False).self_compose(100)
            + PrivacyLossDistribution.from_pair(acc.Gaussian(10, 1), discretisation=h, lower_bound=False).self_compose(100)
            + PrivacyLossDistribution.from_pair(acc.DiscreteLaplace(10, 1), discretisation=h, lower_bound=False).self_compose(100)
        ).epsilon(DELTA).epsilon

    def dpa_mixed():
        kw = {"value_discretization_interval": h}
        return (
            pl.from_laplace_mechanism(10.0, **kw).self_compose(100)
            .compose(pl.from_gaussian_mechanism(10.0, **kw).self_compose(100))
            .compose(pl.from_discrete_laplace_mechanism(0.1, 1, **kw).self_compose(100))
        ).get_epsilon_for_delta(DELTA)

    row("100 Laplace(10) + 100 Gaussian(10) + 100 discrete Laplace(10), h=1e-4", ours_mixed, dpa_mixed)
    sg = acc.PoissonSampled(acc.Gaussian(1, 1), 0.01)
    row(
        "Poisson(q=0.01) Gaussian(1), k=1000, h=1e-4",
        lambda: PrivacyLossDistribution.from_pair(sg, discretisation=h, lower_bound=False).self_compose(1000).epsilon(DELTA).epsilon,
        lambda: pl.from_gaussian_mechanism(1.0, sampling_prob=0.01, value_discretization_interval=h).self_compose(1000).get_epsilon_for_delta(DELTA),
    )

    # Skellam(mu = 100, Delta = 1), 1,000-fold: dp_accounting from its scipy pmf, as in bench_pld.py
    ks = np.arange(-320, 321)
    lp = stats.skellam.logpmf(ks, 50, 50)
    lower = {int(k): float(v) for k, v in zip(ks, lp)}
    upper = {int(k) + 1: float(v) for k, v in zip(ks, lp)}

    def ours_sk(step):
        return lambda: PrivacyLossDistribution.from_pair(SkellamPair(100, 1), discretisation=step, lower_bound=False).self_compose(1000).epsilon(DELTA).epsilon

    def dpa_sk(step):
        return lambda: pl.from_two_probability_mass_functions(lower, upper, value_discretization_interval=step).self_compose(1000).get_epsilon_for_delta(DELTA)

    for ours_h, their_h in ((1e-4, 1e-4), (9e-5, 1e-4), (2e-5, 2e-5), (1.8e-5, 2e-5), (1e-5, 1e-5)):
        row(f"Skellam(mu=100), k=1000: ours h={ours_h:g} vs dp_acc h={their_h:g}", ours_sk(ours_h), dpa_sk(their_h))


if __name__ == "__main__":
    main()
