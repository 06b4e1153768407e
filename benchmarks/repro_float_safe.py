"""Float-safe against idealised regret, at every decade of the horizon (REPRODUCTION.md, issue #20).

Run the figures twice, then compare their CSVs:

    dpverify reproduce ren-fig1 --workers 2 --out OUT/ren_float-safe
    dpverify reproduce ren-fig1 --workers 2 --noise idealised --out OUT/ren_idealised
    python benchmarks/repro_float_safe.py OUT/ren_float-safe/ren-fig1.csv OUT/ren_idealised/ren-fig1.csv

or, for DP-SE (the one algorithm of the ICLR figures with a float privatizer; the others run the same
under either choice), its configurations of ICLR Fig. 1-3 and 5 directly, 20 instances each:

    python benchmarks/repro_float_safe.py --dp-se [--workers 2]

and LDP-UCB-L's (or LDP-UCB-LS's) final regrets run by run (paired over the common random numbers):

    python benchmarks/repro_float_safe.py --paired [--workers 2] [--algorithm ldp-ucb-ls] [--seeds 50]

For every curve (panel, curve label) and every decade t = 10^3, 10^4, ... up to the horizon (the
checkpoint nearest below it), it prints the mean regret of both runs (same seeds: the instance and
reward streams are common random numbers; only the privatizer's noise differs), their ratio, and
z = (float-safe - idealised) / sqrt(se_fs^2 + se_id^2). The two runs' noises are independent draws,
so |z| <= 3 is what "within 3 standard errors" means here (a conservative reading: common random
numbers make the difference's true standard error smaller than that). Curves whose privatizer
draws no continuous noise (UCB1, LDP-UCB-B, the Algorithm 1 variants) must coincide exactly; the
script reports them as identical or says where they differ.
"""

from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict


def _load(path: str) -> dict:
    curves: dict = defaultdict(list)
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            curves[(row["panel"], row["curve"])].append(
                (int(row["t"]), float(row["mean_regret"]), float(row["se_regret"]), row.get("noise", "-"), row["algorithm"], row["epsilon"])
            )
    return curves


def main(float_safe: str, idealised: str) -> None:
    fs, ideal = _load(float_safe), _load(idealised)
    print("| panel | curve | t | float-safe mean | idealised mean | ratio | z |")
    print("|---|---|---:|---:|---:|---:|---:|")
    identical = []
    for key in fs:
        a, b = fs[key], ideal[key]
        if [r[:3] for r in a] == [r[:3] for r in b]:
            identical.append(f"{key[0]}/{key[1]}")
            continue
        horizon = a[-1][0]
        decades = [10**k for k in range(3, 1 + int(math.log10(horizon)))]
        for t in decades:
            row_a = max((r for r in a if r[0] <= t), key=lambda r: r[0])
            row_b = max((r for r in b if r[0] <= t), key=lambda r: r[0])
            se = math.hypot(row_a[2], row_b[2])
            z = (row_a[1] - row_b[1]) / se if se > 0 else 0.0
            print(f"| {key[0]} | {key[1]} | {row_a[0]:.0e} | {row_a[1]:,.0f} | {row_b[1]:,.0f} | {row_a[1] / row_b[1]:.3f} | {z:+.2f} |")
    print(f"\nidentical curves (no continuous noise in their privatizers): {', '.join(identical) or 'none'}")


#: DP-SE's panels in the ICLR figures: (figure/panel, instance, eps, horizon)
DP_SE_PANELS = (
    ("Fig. 1/2 (a)", "easy", 0.1, 10**6), ("Fig. 1/2 (b)", "easy", 0.5, 10**6), ("Fig. 2 (c)", "easy", 1.0, 10**6),
    ("Fig. 1 (c) / 3 (a)", "hard", 0.1, 10**7), ("Fig. 3 (b)", "hard", 0.5, 10**7), ("Fig. 3 (c)", "hard", 1.0, 10**7),
    ("Fig. 1 (d) / 5 (a)", "mslr", 1.0, 10**6), ("Fig. 1 (e) / 5 (b)", "mslr", 5.0, 10**6), ("Fig. 1 (f) / 5 (c)", "mslr", 10.0, 10**6),
)


def dp_se(workers: int) -> None:
    """DP-SE float-safe against idealised at each decade, 20 instances, the figures' per-user path."""
    import time

    from dpverify._bandits import RunConfig, sweep

    configs = [RunConfig("dp-se", inst, T, epsilon=eps, seeds=20, seed=0, noise=noise)
               for _, inst, eps, T in DP_SE_PANELS for noise in ("float-safe", "idealised")]
    start = time.perf_counter()
    results = sweep(configs, workers=workers, progress=False)
    print(f"{len(configs)} configurations x 20 runs in {time.perf_counter() - start:.0f} s")
    print("| panel | instance, eps | t | float-safe Reg(t)/t | idealised Reg(t)/t | ratio | z |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for i, (label, inst, eps, T) in enumerate(DP_SE_PANELS):
        fs, ideal = results[2 * i], results[2 * i + 1]
        assert fs.ledger["noise"] == "float-safe" and ideal.ledger["noise"] == "idealised"
        for t in [10**k for k in range(3, 1 + int(math.log10(T)))]:
            j = max(k for k, s in enumerate(fs.times) if s <= t)
            a, b = fs.mean_regret[j], ideal.mean_regret[j]
            se = math.hypot(fs.se_regret[j], ideal.se_regret[j])
            z = (a - b) / se if se > 0 else 0.0
            ratio = f"{a / b:.3f}" if b > 0 else "-"
            print(f"| {label} | {inst}, {eps:g} | {fs.times[j]:.0e} | {a / fs.times[j]:.5f} | {b / fs.times[j]:.5f} | {ratio} | {z:+.2f} |", flush=True)


def paired(workers: int, algorithm: str = "ldp-ucb-l", seeds: int = 50) -> None:
    """LDP-UCB-L (or -LS) at the final horizon, run by run: the same seeds (instance, rewards, learner's
    ties: common random numbers) under both choices, so the paired difference's standard error is the
    sharp one (the figure CSVs give only each curve's own standard error)."""
    import statistics

    from dpverify._bandits import RunConfig, sweep

    settings = [(inst, eps) for inst in ("ren-bernoulli", "ren-mixed") for eps in (2.0, 0.2)] + [("ren-bernoulli", 0.5), ("ren-bernoulli", 1.0)]
    configs = [RunConfig(algorithm, inst, 10**6, epsilon=eps, seeds=seeds, seed=0, noise=noise) for inst, eps in settings for noise in ("float-safe", "idealised")]
    results = sweep(configs, workers=workers, progress=False)
    print("| instance, eps | float-safe mean final regret | idealised | ratio | paired mean difference +- se | paired z |")
    print("|---|---:|---:|---:|---:|---:|")
    for i, (inst, eps) in enumerate(settings):
        a, b = results[2 * i].final_regrets, results[2 * i + 1].final_regrets
        d = [x - y for x, y in zip(a, b)]
        se = statistics.stdev(d) / math.sqrt(len(d))
        print(f"| {inst}, {eps:g} | {statistics.mean(a):,.0f} | {statistics.mean(b):,.0f} | {statistics.mean(a) / statistics.mean(b):.4f} | "
              f"{statistics.mean(d):+,.0f} +- {se:,.0f} | {statistics.mean(d) / se:+.2f} |", flush=True)


if __name__ == "__main__":
    def option(name: str, default):
        return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default

    if len(sys.argv) < 2 or "--help" in sys.argv or "-h" in sys.argv:
        print(__doc__)
        sys.exit()
    if sys.argv[1:2] == ["--paired"]:
        paired(option("--workers", 2), option("--algorithm", "ldp-ucb-l"), option("--seeds", 50))
        sys.exit()
    if sys.argv[1:2] == ["--dp-se"]:
        dp_se(option("--workers", 2))
    else:
        main(sys.argv[1], sys.argv[2])
