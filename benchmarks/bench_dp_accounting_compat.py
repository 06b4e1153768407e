"""The dp_accounting drop-ins against dp_accounting's own classes, same run (issue 31).

1. The RDP flavour: ``CertifiedRdpAccountant`` vs dp_accounting's ``RdpAccountant`` on DP-SGD
   (Poisson q = 0.01, sigma = 1.0, 1,000 steps; default orders): compose + get_epsilon(1e-5).
2. Calibration: ``dp_accounting.mechanism_calibration.calibrate_dp_mechanism`` with
   ``CertifiedAccountant`` vs ``PLDAccountant`` as the factory, same case (1,000 steps), target
   eps 1 at delta 1e-5, tol 1e-4, brackets [0.5, 5] and [0.3, 5] (the sigma = 0.3 start: the
   most expensive PLD of the search, eps ~70 there).
3. ``accounting.calibrate`` (our own calibration, the route planner) on the same case from
   [0.3, 5], relative tolerance 1e-4, against ``calibrate_dp_mechanism`` with dp_accounting's
   ``PLDAccountant`` from the same bracket: time and sigma.

Medians of ``--runs`` (default 5) calls, wall and CPU seconds; the ratio is ours / theirs.
Writes benchmarks/dp_accounting_compat.md.

    python benchmarks/bench_dp_accounting_compat.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import median_seconds  # noqa: E402

import accounting as acc  # noqa: E402
from dp_accounting import dp_event as E  # noqa: E402
from dp_accounting import mechanism_calibration as mc  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant as pa  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as ra  # noqa: E402

DELTA = 1e-5


def _sgd(sigma: float, steps: int = 1000):
    return E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(sigma)), steps)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    values = {}

    def rdp_ours():
        values["rdp ours"] = acc.CertifiedRdpAccountant().compose(_sgd(1.0)).get_epsilon(DELTA)

    def rdp_theirs():
        values["rdp theirs"] = ra.RdpAccountant().compose(_sgd(1.0)).get_epsilon(DELTA)

    def cal(factory, key, low):
        def run():
            values[key] = mc.calibrate_dp_mechanism(factory, _sgd, 1.0, DELTA, mc.ExplicitBracketInterval(low, 5.0), tol=1e-4)
        return run

    def own_calibrate():
        result = acc.calibrate(lambda sigma: acc.PoissonSampled(acc.Gaussian(sigma), 0.01), 1.0, DELTA, compose=1000, lower=0.3, upper=5.0,
                               relative_tolerance=1e-4)
        values["calibrate ours"] = result.parameter

    rdp_label = "RDP flavour: DP-SGD q=0.01 sigma=1 x1000, get_epsilon(1e-5)"
    cases = [
        # (functions timed alternately run by run, warm-up call first?, rows: (label, ours, theirs, value keys))
        ({"rdp ours": rdp_ours, "rdp theirs": rdp_theirs}, True, [(rdp_label, "rdp ours", "rdp theirs")]),
        ({"cal ours": cal(acc.CertifiedAccountant, "cal ours", 0.5), "cal theirs": cal(pa.PLDAccountant, "cal theirs", 0.5)}, False,
         [("calibrate_dp_mechanism: q=0.01 x1000 to eps 1 at 1e-5, bracket [0.5, 5], tol 1e-4", "cal ours", "cal theirs")]),
        ({"cal03 ours": cal(acc.CertifiedAccountant, "cal03 ours", 0.3), "calibrate ours": own_calibrate,
          "cal03 theirs": cal(pa.PLDAccountant, "cal03 theirs", 0.3)}, False,
         [("calibrate_dp_mechanism: same, bracket [0.3, 5]", "cal03 ours", "cal03 theirs"),
          ("accounting.calibrate (ours, [0.3, 5], relative tol 1e-4) vs calibrate_dp_mechanism with PLDAccountant ([0.3, 5], tol 1e-4)",
           "calibrate ours", "cal03 theirs")]),
    ]
    for functions, warm, case_rows in cases:
        if warm:
            for fn in functions.values():
                fn()
        timed = {key: ([], []) for key in functions}
        for _ in range(args.runs):  # alternating, so all see the same load
            for key, fn in functions.items():
                wall, cpu = median_seconds(fn, 1)
                timed[key][0].append(wall)
                timed[key][1].append(cpu)
        medians = {key: (statistics.median(w), statistics.median(c)) for key, (w, c) in timed.items()}
        for label, ours_key, theirs_key in case_rows:
            rows.append((label, *medians[ours_key], *medians[theirs_key], values[ours_key], values[theirs_key]))
            print(rows[-1], flush=True)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    out = ["# dp_accounting drop-ins against dp_accounting's classes (same run)", "",
           (f"`python benchmarks/bench_dp_accounting_compat.py --runs {args.runs}`; medians of {args.runs} runs (the RDP case after one warm-up call each), the"
            f" functions of a case alternating run by run; seconds wall (CPU); load average at the end {load} (1 / 5 / 15 min) on a shared machine."), "",
           "| case | ours | theirs | ratio wall (CPU) | our value (certified) | their value |", "|---|---|---|---|---|---|"]
    for label, ow, oc, tw, tc, ov, tv in rows:
        out.append(f"| {label} | {ow:.3f} ({oc:.3f}) | {tw:.3f} ({tc:.3f}) | {ow / tw:.2f}x ({oc / tc:.2f}x) | {ov:.10g} | {tv:.10g} |")
    Path(__file__).with_name("dp_accounting_compat.md").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
