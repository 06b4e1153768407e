"""The certified trade-off curve against a dp_accounting-based reference, same run (issue 31 item 5).

For each case, ``accounting.tradeoff_curve`` (the certified PLD with its optimistic twin, delta(eps)
at 96 eps) against the reference built the same way from dp_accounting 0.6.0's pessimistic PLD
(``from_gaussian_mechanism(..., pessimistic_estimate=True)``, value_discretization_interval 1e-4,
self-composed; ``get_delta_for_epsilon`` at the same eps grid, turned into f by the same
``TradeOffCurve``). Times are medians of ``--runs`` (default 5) cold builds (the PLD memo caches
cleared before each), wall and CPU seconds; the ratio is ours / theirs. Values: the largest gap
between the two curves over 2,000 FPRs, and for the Gaussian the gap to the mu-GDP closed form.
Writes benchmarks/tradeoff.md.

    python benchmarks/bench_tradeoff.py [--runs 5]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from scipy.stats import norm  # noqa: E402

from benchmarks._common import machine, median_seconds  # noqa: E402

import accounting as acc  # noqa: E402
from accounting import TradeOffCurve  # noqa: E402
from dp_accounting.pld import privacy_loss_distribution as pl  # noqa: E402

FPRS = np.concatenate([np.logspace(-6, -1, 1000), np.linspace(0.1, 1.0, 1000)])


def _clear() -> None:
    from accounting._privacy_loss import _pld
    from accounting._routing import _pld_route

    _pld_route._composed.cache_clear()
    _pld._RELEASES.clear()


def _ours(subject, k):
    _clear()
    return acc.tradeoff_curve(subject, compose=k)


def _theirs(sigma, q, k, eps):
    pld = pl.from_gaussian_mechanism(sigma, sensitivity=1.0, sampling_prob=q, pessimistic_estimate=True, value_discretization_interval=1e-4)
    if k > 1:
        pld = pld.self_compose(k)
    d = np.clip(np.asarray(pld.get_delta_for_epsilon(eps), dtype=float), 0.0, 1.0)
    return TradeOffCurve(tuple(eps), tuple(np.maximum.accumulate(d[::-1])[::-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cases = [("Gaussian sigma = 1, 4 releases (mu = 2)", 1.0, 1.0, 4), ("DP-SGD: Poisson q = 0.01, sigma = 1, 100 steps", 1.0, 0.01, 100)]
    lines = ["# Trade-off curves against dp_accounting (`benchmarks/bench_tradeoff.py`)", "", f"Machine: {machine()}; medians of {args.runs} cold runs.", "",
             "| case | ours wall (CPU) s | dp_accounting wall (CPU) s | ratio (CPU) | max f_ref - f_ours | max f_ours - f_ref | advantage <= | vs mu-GDP |",
             "|---|---|---|---|---|---|---|---|"]
    for label, sigma, q, k in cases:
        subject = acc.Gaussian(sigma=sigma, sensitivity=1.0)
        if q < 1:
            subject = acc.PoissonSampled(subject, q)
        ours = _ours(subject, k)
        eps = np.asarray(ours.epsilons)
        ref = _theirs(sigma, q, k, eps)
        wall, cpu = median_seconds(lambda: _ours(subject, k), args.runs)
        twall, tcpu = median_seconds(lambda: _theirs(sigma, q, k, eps), args.runs)
        f, g = ours.type_ii(FPRS), ref.type_ii(FPRS)
        gdp = "-"
        if q == 1:
            mu = math.sqrt(k) / sigma
            truth = norm.cdf(norm.isf(FPRS) - mu)
            gdp = f"max G_mu - f = {np.max(truth - f):.2e}, max f - G_mu = {np.max(f - truth):.1e}"
        lines.append(f"| {label} | {wall:.2f} ({cpu:.2f}) | {twall:.2f} ({tcpu:.2f}) | {cpu / tcpu:.2f}x | {np.max(g - f):.2e} | {np.max(f - g):.2e} | "
                     f"{ours.advantage:.6g} | {gdp} |")
        print(lines[-1], flush=True)
    out = Path(__file__).with_name("tradeoff.md")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
