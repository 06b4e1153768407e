"""Float-safe against idealised regret, at every decade of the horizon (REPRODUCTION.md, issue #20).

Run the figures twice, then compare their CSVs:

    dpverify reproduce ren-fig1 --workers 2 --out OUT/ren_float-safe
    dpverify reproduce ren-fig1 --workers 2 --noise idealised --out OUT/ren_idealised
    python benchmarks/repro_float_safe.py OUT/ren_float-safe/ren-fig1.csv OUT/ren_idealised/ren-fig1.csv

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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
