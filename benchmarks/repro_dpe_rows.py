"""Re-measure only the CDP-DPE / LDP-DPE rows of Li et al. Fig. 2 (REPRODUCTION.md, "Linear bandits").

Run from the repository root::

    python benchmarks/repro_dpe_rows.py INSTANCE WIDTH RUNS PATH OUT.json [EPS ...]

e.g. ``python benchmarks/repro_dpe_rows.py linear exact 20 per-user dpe-linear-exact.json 1 2 5 10 20``.

It submits exactly the tasks ``li_fig2`` submits for the algorithms whose noise depends on the
Gaussian calibration (``cdp-dpe``, ``ldp-dpe``), with the same specs (instance, seed 0, run r,
config), so each row equals the row ``li_fig2`` / ``dpverify reproduce li-fig2`` would give with
the same arguments (tasks are pure functions of their spec). DPE, DPE-FixedU and SDP-DPE do not
use the Gaussian calibration and are not re-run. 2 worker processes; prints the wall time.
"""

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from dpverify._bandits.linear._experiments import FIG2_DELTA, _summary, _task  # noqa: E402

ALGORITHMS = ("cdp-dpe", "ldp-dpe")
REPORT_T = (1_000, 10_000, 100_000, 1_000_000)


def main(argv: list[str]) -> None:
    if len(argv) < 5:
        raise SystemExit(__doc__)
    instance, width, runs, path, out = argv[0], argv[1], int(argv[2]), argv[3], argv[4]
    epsilons = tuple(float(e) for e in argv[5:]) or (1.0, 2.0, 5.0, 10.0, 20.0)
    horizon, alpha, seed = 1_000_000, 0.8, 0
    base = {"horizon": horizon, "alpha": alpha, "privacy_width": width, "path": path}
    # the order li_fig2 uses: run-major, then epsilon, then algorithm
    specs = [
        (instance, algorithm, seed, r, {**base, "epsilon": eps, "delta": FIG2_DELTA}, False)
        for r in range(runs)
        for eps in epsilons
        for algorithm in ALGORITHMS
    ]
    started = time.time()
    with ProcessPoolExecutor(2) as executor:
        records = [record for task in executor.map(_task, specs) for record in task]
    seconds = time.time() - started
    Path(out + ".records").write_text(json.dumps(records))  # raw, before any summarising
    rows = {}
    for algorithm in ALGORITHMS:
        for eps in epsilons:
            picked = [r for r in records if r["algorithm"] == algorithm and r["epsilon"] == eps]
            t = np.asarray(picked[0]["checkpoints"], dtype=np.float64)
            per_round = (np.asarray([r["regret"] for r in picked]) / t).mean(axis=0)
            at = {int(x): float(per_round[int(np.argmin(np.abs(np.log(t) - np.log(x))))]) for x in REPORT_T}
            rows[f"{algorithm} {eps:g}"] = {
                "final_regret": _summary([r["final_regret"] for r in picked]),
                "per_round_at": at,
                "per_round_at_checkpoints": [int(t[int(np.argmin(np.abs(np.log(t) - np.log(x))))]) for x in REPORT_T],
                "noise_multiplier": picked[0]["noise_multiplier"],
                "spent_max": max(r["spent"]["epsilon"] for r in picked),
                "zcdp_rho_max": max(r["zcdp_rho"] for r in picked),
                "bits_per_client_max": _summary([r["communication"]["bits_per_user_max"] for r in picked]),
                "phases": [r["phases"] for r in picked],
                "clipped": int(sum(r["clipped"] for r in picked)),
            }
    result = {"instance": instance, "privacy_width": width, "runs": runs, "path": path, "horizon": horizon,
              "alpha": alpha, "delta": FIG2_DELTA, "seed": seed, "epsilons": list(epsilons), "seconds": seconds, "rows": rows}
    Path(out).write_text(json.dumps(result, indent=1))
    print("wrote", out, "in", round(seconds), "s")


if __name__ == "__main__":
    main(sys.argv[1:])
