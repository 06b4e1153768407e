"""Benchmark (issue #21): the route planner and the certified subsampled-Gaussian PLD.

Run:  python benchmarks/bench_planner.py [--runs 5] [--skip-slow]   (markdown on stdout; the tables
in benchmarks/planner.md come from it)

1. DP-SGD (Poisson q = 0.01, sigma = 1, delta = 1e-5) at 1,000 and 10,000 steps, grids h = 1e-4
   and 1e-3: our certified PLD (single release by the blockwise Taylor connect-the-dots, one-FFT-
   pass composition, certified eps search) against dp_accounting 0.6.0's PLDAccountant (its
   pessimistic estimate, floats) at the same h, alternating in one process, ``--runs`` times each,
   every run cold (our memos cleared: nothing is reused between runs); medians of wall and CPU
   seconds, the time ratio ours / dp_accounting, both values.
2. epsilon_routes on the issue's reference queries: answer, route, median wall and CPU seconds
   (cold), the planner's estimate of the routes it ran, and how many routes it ran / skipped.
3. calibrate for the discrete Gaussian sum (target eps 1, delta 1e-5) at n = 700, 4,096, 65,536,
   each answer re-checked by epsilon_routes.

The load average is printed: the 2-core machine is shared; the same-run ratios are the numbers
to compare.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import accounting as acc  # noqa: E402
import accounting._core._conversions as conversions  # noqa: E402
import accounting._privacy_loss._pld_fft_power as power  # noqa: E402
import accounting._routing._pld_route as pld_route  # noqa: E402
from accounting._privacy_loss._pld import PrivacyLossDistribution  # noqa: E402

warnings.simplefilter("ignore")
DELTA = 1e-5


def cold() -> None:
    """Forget everything our side memoises, so that a run recomputes it all."""
    pld_route.PldRoute.composed.clear()
    pld_route.PldRoute.spreads.clear()
    conversions._mechanism_epsilon_cached.cache_clear()
    power._TABLES.clear()
    power._TWIDDLE_CACHE.clear()
    power._LOGS.clear()


def timed(fn):
    cold()
    w, c = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - w, time.process_time() - c


def alternate(fns, runs):
    rows = [([], [], None) for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            value, w, c = timed(fn)
            rows[i][0].append(w)
            rows[i][1].append(c)
            rows[i] = (rows[i][0], rows[i][1], value)
    return [(statistics.median(w), statistics.median(c), v) for w, c, v in rows]


def dpsgd_table(runs: int) -> None:
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    mechanism = acc.PoissonSampled(acc.Gaussian(1.0), 0.01)

    def ours(h, k):
        return PrivacyLossDistribution.from_pair(mechanism, discretisation=h, lower_bound=False).self_compose(k).epsilon(DELTA).epsilon

    def theirs(h, k):
        accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=h)
        accountant.compose(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), k)
        return accountant.get_epsilon(DELTA)

    ours(1e-3, 10), theirs(1e-3, 10)  # imports and first-call costs outside the measured runs
    print("\n### 1. DP-SGD (q = 0.01, sigma = 1, delta = 1e-5): certified PLD vs dp_accounting's PLDAccountant, same h\n")
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores); median of {runs} alternating cold runs\n")
    print("| steps | h | ours: certified eps | ours wall s | ours CPU s | dp_accounting eps (pessimistic) | dp wall s | dp CPU s | "
          "time ratio (wall) | time ratio (CPU) | eps ours / dp |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for h in (1e-4, 1e-3):
        for k in (1000, 10_000):
            (wo, co, eo), (wt, ct, et) = alternate([functools.partial(ours, h, k), functools.partial(theirs, h, k)], runs)
            print(f"| {k:,} | {h:g} | {eo:.10f} | {wo:.3f} | {co:.3f} | {et:.10f} | {wt:.3f} | {ct:.3f} | {wo / wt:.2f} | {co / ct:.2f} | {eo / et:.10f} |",
                  flush=True)


def routes_table(runs: int, skip_slow: bool) -> None:
    cases = [
        ("DP-SGD 1,000 steps", acc.PoissonSampled(acc.Gaussian(1.0), 0.01), 1000),
        ("DP-SGD 10,000 steps", acc.PoissonSampled(acc.Gaussian(1.0), 0.01), 10_000),
        ("DP-SGD 100,000 steps", acc.PoissonSampled(acc.Gaussian(1.0), 0.01), 100_000),
        ("1,000 x Gaussian(1) (exact closed route)", acc.Gaussian(1.0), 1000),
        ("10^12 x Gaussian(1) (exact closed route)", acc.Gaussian(1.0), 10**12),
        ("1,000 x DLap(b=20, Delta=10)", acc.DiscreteLaplace(20, 10), 1000),
        ("1,000 x DLap(b=1000, Delta=100)", acc.DiscreteLaplace(1000, 100), 1000),
        ("1,000 x DLap(b=0.5, Delta=100)", acc.DiscreteLaplace(0.5, 100), 1000),
        ("[DLap(10,1), DLap(10,1), Gauss(10), Gauss(10)]", [acc.DiscreteLaplace(10, 1)] * 2 + [acc.Gaussian(10.0)] * 2, 1),
        ("1,000 x Skellam(mu=100)", acc.Skellam(100), 1000),
        ("100 x PureDP(0.1) (exact closed route)", acc.PureDP(0.1), 100),
    ]
    if skip_slow:
        cases = [c for c in cases if "100,000" not in c[0]]
    print("\n### 2. epsilon_routes on the reference queries (default time budget 10 s)\n")
    print(f"load average {os.getloadavg()[0]:.2f}; median of {runs} cold runs\n")
    print("| query | answer | route | wall s | CPU s | estimated s (routes run) | routes run / not run |")
    print("|---|---|---|---|---|---|---|")
    for label, subject, k in cases:
        (w, c, report), = alternate([functools.partial(acc.epsilon_routes, subject, DELTA, compose=k)], runs)
        ran = [r for r in report.alternatives if r.status in ("run", "answer")]
        skipped = [r for r in report.alternatives if r.status == "not run"]
        estimate = sum(r.estimated_seconds or 0.0 for r in ran)
        print(f"| {label} | {report.epsilon:.10g} | {report.route} | {w:.3f} | {c:.3f} | {estimate:.3g} | {len(ran)} / {len(skipped)} |", flush=True)


def calibrate_table() -> None:
    print("\n### 3. calibrate: discrete Gaussian sum, target eps 1, delta 1e-5, checked by epsilon_routes\n")
    print(f"load average {os.getloadavg()[0]:.2f}; one cold run each\n")
    print("| n | sigma | eps certified | route | failed evaluations | wall s | CPU s | eps by epsilon_routes at sigma |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (700, 4096, 65_536):
        result, w, c = timed(lambda: acc.calibrate(lambda s: acc.DiscreteGaussianSum(n, s, 1), 1.0, DELTA, lower=1e-3, upper=1e6))
        check = acc.epsilon_routes(acc.DiscreteGaussianSum(n, result.parameter, 1), DELTA).epsilon
        print(f"| {n:,} | {result.parameter:.6g} | {result.achieved.epsilon:.6g} | {result.achieved.route} | {result.failures} | {w:.2f} | {c:.2f} | {check:.6g} |",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-slow", action="store_true", help="leave out DP-SGD at 100,000 steps in part 2")
    parser.add_argument("--only", choices=["dpsgd", "routes", "calibrate"], default=None)
    args = parser.parse_args()
    if args.only in (None, "dpsgd"):
        dpsgd_table(args.runs)
    if args.only in (None, "routes"):
        routes_table(args.runs, args.skip_slow)
    if args.only in (None, "calibrate"):
        calibrate_table()


if __name__ == "__main__":
    main()
