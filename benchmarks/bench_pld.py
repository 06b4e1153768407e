"""Benchmark of the PLD route (accounting._privacy_loss._pld) against dp_accounting's PLD accountant.

Run:  python benchmarks/bench_pld.py [--quick]     (writes a markdown table to stdout)

For each case: our certified eps(delta = 1e-5) (upper), our certified lower bound (optimistic
twin), wall times (one core), and dp_accounting's pessimistic and optimistic PLD estimates at
several discretisation widths, measured in the same run. dp_accounting is a benchmark/test
dependency only; the package never imports it.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from accounting._mechanisms._discrete_laplace import DiscreteLaplace  # noqa: E402
from accounting._mechanisms._skellam import SkellamPair  # noqa: E402
from accounting._privacy_loss._pld import PrivacyLossDistribution  # noqa: E402

DELTA = 1e-5


def ours(subject, k: int, **kwargs) -> dict:
    t0 = time.perf_counter()
    pld = PrivacyLossDistribution.from_pair(subject, **kwargs)
    t1 = time.perf_counter()
    composed = pld.self_compose(k)
    t2 = time.perf_counter()
    res = composed.epsilon(DELTA)
    t3 = time.perf_counter()
    return {
        "eps": res.epsilon,
        "eps_lower": res.epsilon_lower,
        "build": t1 - t0,
        "compose": t2 - t1,
        "search": t3 - t2,
        "total": t3 - t0,
        "disc": res.discretisation,
        "truncated": res.truncated_mass,
        "detail": res.detail,
    }


def dp_accounting_dl(scale: float, sens: int, k: int, h: float) -> tuple[float, float, float]:
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    t0 = time.perf_counter()
    pes = pld_mod.from_discrete_laplace_mechanism(1.0 / scale, sens, value_discretization_interval=h)
    e_p = pes.self_compose(k).get_epsilon_for_delta(DELTA)
    t1 = time.perf_counter()
    opt = pld_mod.from_discrete_laplace_mechanism(1.0 / scale, sens, value_discretization_interval=h, pessimistic_estimate=False)
    e_o = opt.self_compose(k).get_epsilon_for_delta(DELTA)
    return e_p, e_o, t1 - t0


def dp_accounting_skellam(mu: int, sens: int, k: int, h: float) -> tuple[float, float, float]:
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    ks = np.arange(-12 * int(math.sqrt(mu)) - 200, 12 * int(math.sqrt(mu)) + 201)
    lp = stats.skellam.logpmf(ks, mu / 2, mu / 2)
    lower = {int(x): float(v) for x, v in zip(ks, lp)}
    upper = {int(x) + sens: float(v) for x, v in zip(ks, lp)}
    t0 = time.perf_counter()
    pes = pld_mod.from_two_probability_mass_functions(lower, upper, value_discretization_interval=h)
    e_p = pes.self_compose(k).get_epsilon_for_delta(DELTA)
    t1 = time.perf_counter()
    opt = pld_mod.from_two_probability_mass_functions(lower, upper, value_discretization_interval=h, pessimistic_estimate=False)
    e_o = opt.self_compose(k).get_epsilon_for_delta(DELTA)
    return e_p, e_o, t1 - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the finest dp_accounting runs")
    args = parser.parse_args()
    print(f"# PLD route benchmark ({platform.processor() or platform.machine()}, python {platform.python_version()}, load {os.getloadavg()[0]:.2f})\n")
    print(f"delta = {DELTA:g}; times in seconds, one core; 'ours' = certified upper eps, 'lower' = certified lower eps.\n")
    rows = []

    cases = [
        ("DiscreteLaplace(scale 20, Delta 10)", DiscreteLaplace(20, 10), 1000, {}, ("dl", 20.0, 10)),
        ("DiscreteLaplace(scale 1, Delta 1)", DiscreteLaplace(1, 1), 1000, {}, ("dl", 1.0, 1)),
        ("Skellam(mu 100, Delta 1) one release", SkellamPair(100, 1), 1, {"discretisation": 1e-4}, ("sk", 100, 1)),
        ("Skellam(mu 100, Delta 1)", SkellamPair(100, 1), 1000, {"discretisation": 2e-5}, ("sk", 100, 1)),
    ]
    for name, subject, k, kwargs, ref in cases:
        full = ours(subject, k, **kwargs)
        upper_only = ours(subject, k, lower_bound=False, **kwargs)
        hs = [1e-4, 2e-5] if args.quick else [1e-4, 2e-5, 1e-5]
        theirs = {}
        for h in hs:
            if ref[0] == "dl":
                theirs[h] = dp_accounting_dl(ref[1], ref[2], k, h)
            else:
                theirs[h] = dp_accounting_skellam(ref[1], ref[2], k, h)
        tight_h = min(theirs)
        tight = theirs[tight_h][0]
        rows.append((name, k, full, upper_only, theirs, tight_h, tight))

    print("| case | k | h | ours (upper) | ours (lower) | dp_acc pessimistic (h) | dp_acc optimistic | ours / dp_acc tight | ours time (upper only) | ours time (with lower) | dp_acc time (tight h) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, k, full, upper_only, theirs, tight_h, tight in rows:
        print(
            f"| {name} | {k} | {full['disc']} | {full['eps']:.6f} | {full['eps_lower']:.6f} | "
            f"{tight:.6f} ({tight_h:g}) | {theirs[tight_h][1]:.6f} | {full['eps'] / tight:.6f} | "
            f"{upper_only['total']:.2f} | {full['total']:.2f} | {theirs[tight_h][2]:.2f} |"
        )
    print("\n## dp_accounting at each h (pessimistic / optimistic / time)\n")
    for name, k, full, upper_only, theirs, tight_h, tight in rows:
        parts = ", ".join(f"h={h:g}: {p:.6f} / {o:.6f} / {t:.2f}s" for h, (p, o, t) in sorted(theirs.items(), reverse=True))
        print(f"- {name}, k={k}: {parts}")
    print("\n## our time split (build / compose / eps search), with lower bound\n")
    for name, k, full, upper_only, theirs, tight_h, tight in rows:
        print(
            f"- {name}, k={k}: {full['build']:.2f} / {full['compose']:.2f} / {full['search']:.2f}; "
            f"upper only total {upper_only['total']:.2f}; truncated mass {full['truncated']:.2g}; {full['detail']}"
        )


if __name__ == "__main__":
    main()
