"""Benchmark: (eps, delta) of a 10,000-step heterogeneous composition, certified.

Run: python benchmarks/bench_accounting.py
Composes 5,000 distinct Gaussian (zCDP) steps and 5,000 distinct pure-DP steps (tight RDP curve),
converts at delta = 1e-6, and reports the median of 5 runs on one core. The baseline measured in
the same run is dp_accounting's RDP accountant on the same 10,000 events (Gaussian events with
the same noise multipliers; the pure steps as Laplace events of the same epsilon), when installed.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import accounting as acc


def steps(seed: int = 0):
    rng = np.random.default_rng(seed)
    sigmas = rng.uniform(20.0, 200.0, size=5000)  # Gaussian noise multipliers (sensitivity 1)
    epsilons = rng.uniform(1e-4, 1e-3, size=5000)
    return sigmas, epsilons


def ours(sigmas, epsilons, delta=1e-6):
    curves = [acc.RDP.zcdp(float(1 / (2 * s * s))) for s in sigmas] + [acc.RDP.pure(float(e)) for e in epsilons]
    return acc.rdp_to_epsilon(acc.RDP.sequence(curves), delta)


def baseline(sigmas, epsilons, delta=1e-6):
    try:
        import dp_accounting
        from dp_accounting.rdp import rdp_privacy_accountant as rdp
    except ImportError:
        return None
    accountant = rdp.RdpAccountant()
    for s in sigmas:
        accountant.compose(dp_accounting.GaussianDpEvent(float(s)))
    for e in epsilons:
        accountant.compose(dp_accounting.LaplaceDpEvent(float(1 / e)))
    return accountant.get_epsilon(delta)


def timed(fn, *args, repeats=5):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    sigmas, epsilons = steps()
    t_ours, r = timed(ours, sigmas, epsilons)
    t_base, b = timed(baseline, sigmas, epsilons)
    print(f"ours: eps = {r.epsilon:.8g} at alpha = {r.alpha:.5g}; median {t_ours:.3f} s (5 runs)")
    if b is not None:
        print(f"dp_accounting RdpAccountant: eps = {b:.8g}; median {t_base:.3f} s (5 runs); time ratio ours/theirs = {t_ours / t_base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
