"""Benchmark of the analytic-Gaussian and optimal-composition routes against dp_accounting and prv.

Run:  python benchmarks/bench_tight_routes.py [--runs 5]     (prints a markdown table)

For each case, in the same process and run: our certified eps(delta) through
``accounting.epsilon_routes`` (the route that wins is printed), dp_accounting's PLD accountant
(pessimistic estimate, connect-the-dots, at its default grid 1e-4 and at 1e-5), dp_accounting's
RDP accountant, and prv_accountant's PRV accountant (its upper estimate, eps_error = 1e-2), with
the exact value where one exists (Balle & Wang's formula / Kairouz-Oh-Viswanath's, 50 digits in
mpmath). Times are the median of ``--runs`` runs (fresh objects each run; our memoised curve
conversions are cleared between runs so nothing is served from a cache). dp_accounting and prv
are benchmark/test dependencies only.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import mpmath

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import accounting as acc  # noqa: E402
from accounting._core import _conversions  # noqa: E402

DELTA = 1e-5


def _clear_caches() -> None:
    for name in dir(_conversions):
        fn = getattr(_conversions, name)
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()


def timed(fn, runs: int) -> tuple[float, float]:
    values, times = [], []
    for _ in range(runs):
        _clear_caches()
        t0 = time.perf_counter()
        values.append(fn())
        times.append(time.perf_counter() - t0)
    return values[-1], statistics.median(times)


# ---- exact references -------------------------------------------------------------------------


def exact_gaussian(mu: float) -> float:
    ctx = mpmath.MPContext()
    ctx.dps = 40
    m = ctx.mpf(mu)

    def delta(eps):
        return ctx.ncdf(-eps / m + m / 2) - ctx.exp(eps) * ctx.ncdf(-eps / m - m / 2)

    lo, hi = ctx.mpf(0), ctx.mpf(1)
    while delta(hi) > DELTA:
        hi *= 2
    for _ in range(120):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta(mid) > DELTA else (lo, mid)
    return float(hi)


def exact_kov(k: int, eps0: float) -> float:
    ctx = mpmath.MPContext()
    ctx.dps = 40
    e0 = ctx.mpf(eps0)

    def delta(eps):
        total = ctx.mpf(0)
        for l in range(k + 1):
            term = ctx.exp((k - l) * e0) - ctx.exp(eps + l * e0)
            if term > 0:
                total += math.comb(k, l) * term
        return total / (1 + ctx.exp(e0)) ** k

    lo, hi = ctx.mpf(0), ctx.mpf(k * eps0)
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta(mid) > DELTA else (lo, mid)
    return float(hi)


# ---- the tools --------------------------------------------------------------------------------


def dpa_pld(steps: list[tuple[str, float, int]], h: float) -> float:
    """dp_accounting's pessimistic PLD for [(kind, parameter, count)]."""
    from dp_accounting.pld import privacy_loss_distribution as pm

    total = None
    for kind, parameter, count in steps:
        if kind == "gaussian":
            one = pm.from_gaussian_mechanism(parameter, value_discretization_interval=h)
        else:
            one = pm.from_laplace_mechanism(parameter, value_discretization_interval=h)
        part = one.self_compose(count) if count > 1 else one
        total = part if total is None else total.compose(part)
    return total.get_epsilon_for_delta(DELTA)


def dpa_rdp(steps: list[tuple[str, float, int]]) -> float:
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    accountant = rdp.RdpAccountant()
    for kind, parameter, count in steps:
        event = dp_event.GaussianDpEvent(parameter) if kind == "gaussian" else dp_event.LaplaceDpEvent(parameter)
        accountant.compose(event, count)
    return accountant.get_epsilon(DELTA)


def prv(steps: list[tuple[str, float, int]]) -> float:
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import GaussianMechanism, LaplaceMechanism

    # prv's LaplaceMechanism takes the privacy parameter mu = Delta / b; eps_error = 1e-3 needs > 15 GB here
    prvs = [GaussianMechanism(noise_multiplier=p) if kind == "gaussian" else LaplaceMechanism(mu=1.0 / p) for kind, p, _ in steps]
    counts = [count for _, _, count in steps]
    accountant = PRVAccountant(prvs=prvs, max_self_compositions=counts, eps_error=1e-2, delta_error=DELTA * 1e-3)
    return accountant.compute_epsilon(delta=DELTA, num_self_compositions=counts)[2]


def ours(steps: list[tuple[str, float, int]]) -> acc.Result:
    if len(steps) == 1:
        kind, parameter, count = steps[0]
        mech = acc.Gaussian(parameter) if kind == "gaussian" else acc.Laplace(parameter)
        return acc.epsilon_routes(mech, DELTA, compose=count, comparisons=False)
    subjects = []
    for kind, parameter, count in steps:
        subjects.extend([acc.Gaussian(parameter) if kind == "gaussian" else acc.Laplace(parameter)] * count)
    return acc.epsilon_routes(subjects, DELTA, comparisons=False)


CASES = [
    ("Gaussian sigma=1, one release", [("gaussian", 1.0, 1)], lambda: exact_gaussian(1.0)),
    ("Gaussian sigma=20, 1,000-fold", [("gaussian", 20.0, 1000)], lambda: exact_gaussian(math.sqrt(1000) / 20)),
    (
        "1,000 different Gaussians (sigma 20..30)",
        [("gaussian", 20.0 + 0.01 * i, 1) for i in range(1000)],
        lambda: exact_gaussian(math.sqrt(sum(1 / (20.0 + 0.01 * i) ** 2 for i in range(1000)))),
    ),
    ("Laplace b=10 (eps0=0.1), 100-fold", [("laplace", 10.0, 100)], lambda: exact_kov(100, 0.1)),
    ("Laplace b=100 (eps0=0.01), 1,000-fold", [("laplace", 100.0, 1000)], lambda: exact_kov(1000, 0.01)),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-slow", action="store_true", help="skip dp_accounting at h = 1e-5 on heterogeneous cases")
    args = parser.parse_args()
    print(f"delta = {DELTA:g}; times: median of {args.runs} runs, seconds; eps to 10 decimals\n")
    print("| case | exact | ours (route) | ours s | dp_acc PLD h=1e-4 | s | dp_acc PLD h=1e-5 | s | dp_acc RDP | s | prv (upper) | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, steps, exact in CASES:
        truth = exact()
        mine, t_mine = timed(lambda: ours(steps), args.runs)
        p4, t_p4 = timed(lambda: dpa_pld(steps, 1e-4), args.runs)
        if args.skip_slow and len(steps) > 1:
            p5, t_p5 = float("nan"), float("nan")
        else:
            p5, t_p5 = timed(lambda: dpa_pld(steps, 1e-5), args.runs)
        r, t_r = timed(lambda: dpa_rdp(steps), args.runs)
        v, t_v = float("nan"), float("nan")  # prv: 1,000 distinct PRVs exhaust memory here (> 6 GB)
        if len(steps) <= 10:
            v, t_v = timed(lambda: prv(steps), args.runs)
        print(
            f"| {label} | {truth:.10f} | {mine.epsilon:.10f} ({mine.route}) | {t_mine:.3g} | {p4:.10f} | {t_p4:.3g} | "
            f"{p5:.10f} | {t_p5:.3g} | {r:.10f} | {t_r:.3g} | {v:.10f} | {t_v:.3g} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
