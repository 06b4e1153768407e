"""Why did CDP-DPE's per-round regret at t = 1e4, 1e5 rise when its noise fell? (issue #23, item 10)

REPRODUCTION.md's synthetic exact-width table (eps = 10, 20 runs) first read CDP-DPE's per-round
regret R(t)/t = 0.659, 0.381, 0.057, 0.0076 at t = 1e3..1e6 with the CKS-calibrated noise
(z = 0.285), then 0.657, 0.394, 0.063, 0.0069 after the analytic calibration (z = 0.2472, 13%
less noise): higher at 1e4 and 1e5. This script runs the same 20 runs (``li_fig2``'s tasks: seed 0,
run r's streams, per-user path) with both multipliers and reads R(t)/t two ways: exactly at
t = 10^k (R(t) at a checkpoint; the runs now keep every power of ten), and at the log-spaced
checkpoint nearest to 10^k in log t (890, 9,249, 96,172, 10^6), the rule ``repro_dpe_rows.py``
used. Run from the repository root::

    python benchmarks/repro_dpe_checkpoints.py OUT.json [RUNS]

2 worker processes; prints the table and the wall time.
"""

import dataclasses
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

EPS, DELTA = 10.0, 0.25
DECADES = (1_000, 10_000, 100_000, 1_000_000)


def cks_multiplier(epsilon: float, delta: float) -> float:
    """The smallest z whose Gaussian(z, 1) meets (eps, delta) through the CKS conversion of its Renyi
    curve: the calibration DP-DPE used before the analytic-Gaussian route (bisection, rel. 1e-9)."""
    from accounting import Gaussian
    from accounting._core._conversions import mechanism_rdp_epsilon

    lo, hi = 1e-3, 1e3
    while hi / lo - 1 > 1e-9:
        mid = (lo * hi) ** 0.5
        lo, hi = (lo, mid) if mechanism_rdp_epsilon(Gaussian(mid, 1), delta).epsilon <= epsilon else (mid, hi)
    return hi


def _run(spec: tuple) -> dict:
    calibration, run_index = spec
    from dpverify._bandits.linear import _privatizers
    from dpverify._bandits.linear import DPEConfig, run_linear, synthetic_instance

    if calibration == "cks":
        real = _privatizers.calibrate_noise_multiplier(EPS, DELTA)
        z = cks_multiplier(EPS, DELTA)
        _privatizers.calibrate_noise_multiplier = lambda e, d: dataclasses.replace(real, parameter=z)
    config = DPEConfig(horizon=1_000_000, epsilon=EPS, delta=DELTA, privacy_width="exact", path="per-user", noise="idealised")
    result = run_linear("cdp-dpe", synthetic_instance(), 0, config, run_index=run_index)
    return {"calibration": calibration, "run_index": run_index, "z": result.privacy["noise_multiplier"],
            "checkpoints": result.checkpoints, "regret": result.regret, "final_regret": result.final_regret}


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__)
    out, runs = argv[0], int(argv[1]) if len(argv) > 1 else 20
    started = time.time()
    with ProcessPoolExecutor(2) as pool:
        records = list(pool.map(_run, [(c, r) for c in ("analytic", "cks") for r in range(runs)]))
    seconds = time.time() - started
    table = {}
    for calibration in ("analytic", "cks"):
        picked = [r for r in records if r["calibration"] == calibration]
        t = np.asarray(picked[0]["checkpoints"], dtype=np.float64)
        logspaced = t[~np.isin(t, DECADES[:-1])]  # the 60 log-spaced points of the old runs (and T)
        per_round = np.asarray([r["regret"] for r in picked]) / t
        exact = {x: per_round[:, int(np.flatnonzero(t == x)[0])] for x in DECADES}
        nearest_t = {x: float(logspaced[int(np.argmin(np.abs(np.log(logspaced) - np.log(x))))]) for x in DECADES}
        nearest = {x: per_round[:, int(np.flatnonzero(t == nearest_t[x])[0])] for x in DECADES}
        table[calibration] = {
            "z": picked[0]["z"],
            "runs": len(picked),
            "final_regret_mean": float(np.mean([r["final_regret"] for r in picked])),
            "exact_at": {str(x): [float(exact[x].mean()), float(exact[x].std(ddof=1) / np.sqrt(len(picked)))] for x in DECADES},
            "nearest_checkpoint": {str(x): nearest_t[x] for x in DECADES},
            "at_nearest": {str(x): [float(nearest[x].mean()), float(nearest[x].std(ddof=1) / np.sqrt(len(picked)))] for x in DECADES},
            "curve": {"t": t.astype(int).tolist(), "per_round_mean": per_round.mean(axis=0).tolist()},
        }
    Path(out).write_text(json.dumps({"epsilon": EPS, "delta": DELTA, "runs": runs, "seconds": seconds, "table": table}, indent=1))
    for calibration, row in table.items():
        print(calibration, "z =", round(row["z"], 4))
        print("  exact t:  ", "  ".join(f"{x:>7}: {m:.4f} +- {se:.4f}" for x, (m, se) in row["exact_at"].items()))
        print("  nearest:  ", "  ".join(f"{row['nearest_checkpoint'][x]:>7.0f}: {m:.4f} +- {se:.4f}" for x, (m, se) in row["at_nearest"].items()))
    print(f"{seconds:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
