"""The dp_accounting drop-ins against dp_accounting's own classes, same run (issue 31).

1. The RDP flavour: ``CertifiedRdpAccountant`` vs dp_accounting's ``RdpAccountant`` on DP-SGD
   (Poisson q = 0.01, sigma = 1.0, 1,000 steps; default orders): compose + get_epsilon(1e-5).
2. Calibration: ``dp_accounting.mechanism_calibration.calibrate_dp_mechanism`` with
   ``CertifiedAccountant`` vs ``PLDAccountant`` as the factory, same case (1,000 steps), target
   eps 1 at delta 1e-5, bracket [0.5, 5], tol 1e-4.

Medians of ``--runs`` (default 5) calls, wall and CPU seconds; the ratio is ours / theirs.
Writes benchmarks/dp_accounting_compat.md.

    python benchmarks/bench_dp_accounting_compat.py [--runs 5]
"""

from __future__ import annotations

import argparse
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

    def cal(factory, key):
        def run():
            values[key] = mc.calibrate_dp_mechanism(factory, _sgd, 1.0, DELTA, mc.ExplicitBracketInterval(0.5, 5.0), tol=1e-4)
        return run

    for label, ours, theirs, value_keys in [
        ("RDP flavour: DP-SGD q=0.01 sigma=1 x1000, get_epsilon(1e-5)", rdp_ours, rdp_theirs, ("rdp ours", "rdp theirs")),
        ("calibrate_dp_mechanism: q=0.01 x1000 to eps 1 at 1e-5, bracket [0.5, 5]", cal(acc.CertifiedAccountant, "cal ours"), cal(pa.PLDAccountant, "cal theirs"),
         ("cal ours", "cal theirs")),
    ]:
        ours_wall, ours_cpu = median_seconds(ours, args.runs)
        theirs_wall, theirs_cpu = median_seconds(theirs, args.runs)
        rows.append((label, ours_wall, ours_cpu, theirs_wall, theirs_cpu, values[value_keys[0]], values[value_keys[1]]))
        print(rows[-1], flush=True)
    out = ["# dp_accounting drop-ins against dp_accounting's classes (same run)", "",
           f"`python benchmarks/bench_dp_accounting_compat.py --runs {args.runs}`; medians of {args.runs} runs; seconds wall (CPU).", "",
           "| case | ours | theirs | ratio (wall) | our value (certified) | their value |", "|---|---|---|---|---|---|"]
    for label, ow, oc, tw, tc, ov, tv in rows:
        out.append(f"| {label} | {ow:.3f} ({oc:.3f}) | {tw:.3f} ({tc:.3f}) | {ow / tw:.2f}x | {ov:.10g} | {tv:.10g} |")
    Path(__file__).with_name("dp_accounting_compat.md").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
