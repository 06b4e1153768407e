"""Re-measure the CDP-DPE / LDP-DPE rows of Li et al. Fig. 2 (REPRODUCTION.md, "Linear bandits").

Run from the repository root::

    python benchmarks/repro_dpe_rows.py INSTANCE WIDTH RUNS PATH OUT.json [EPS ...] [--noise NOISE]

e.g. ``python benchmarks/repro_dpe_rows.py linear exact 20 per-user dpe-linear-exact.json 1 2 5 10 20``.
NOISE is ``float-safe`` (the default privatizers), ``idealised`` (the paper's float Gaussians) or
``both`` (the default here: both, and their comparison).

It submits exactly the tasks ``li_fig2`` submits for the algorithms whose noise depends on the
Gaussian calibration (``cdp-dpe``, ``ldp-dpe``), with the same specs (instance, seed 0, run r,
config), so each row equals the row ``li_fig2`` / ``dpverify reproduce li-fig2`` would give with
the same arguments (tasks are pure functions of their spec). DPE, DPE-FixedU and SDP-DPE do not
use the Gaussian calibration and are not re-run. R(t)/t is read exactly at t = 10^3 .. 10^6 (the
runs keep every power of ten among their checkpoints). With ``both``, each (algorithm, eps, t)
gets the float-safe minus idealised difference of mean per-round regret, its unpaired standard
error sqrt(sd_f^2/m + sd_i^2/m) and its paired one (run r of both shares the clients and their
rewards; only the privacy noise differs), and whether |difference| <= 3 standard errors.
2 worker processes, one BLAS thread each; prints the wall time.
"""

import os

# one BLAS thread per worker process (2 workers on 2 cores): threaded BLAS in each worker's SVDs
# only contends for the same cores
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from dpverify._bandits.linear._experiments import FIG2_DELTA, _summary, _task  # noqa: E402

ALGORITHMS = ("cdp-dpe", "ldp-dpe")
REPORT_T = (1_000, 10_000, 100_000, 1_000_000)


def _row(picked: list[dict]) -> dict:
    t = np.asarray(picked[0]["checkpoints"], dtype=np.int64)
    per_round = np.asarray([r["regret"] for r in picked]) / t
    columns = {x: int(np.flatnonzero(t == x)[0]) for x in REPORT_T}
    return {
        "final_regret": _summary([r["final_regret"] for r in picked]),
        "per_round_at": {x: float(per_round[:, i].mean()) for x, i in columns.items()},
        "per_round_sd_at": {x: float(per_round[:, i].std(ddof=1)) if len(picked) > 1 else 0.0 for x, i in columns.items()},
        "per_round_runs_at": {x: per_round[:, i].tolist() for x, i in columns.items()},
        "noise_multiplier": picked[0]["noise_multiplier"],
        "spent_max": max(r["spent"]["epsilon"] for r in picked),
        "zcdp_rho_max": max(r["zcdp_rho"] for r in picked),
        "bits_per_client_max": _summary([r["communication"]["bits_per_user_max"] for r in picked]),
        "phases": [r["phases"] for r in picked],
        "clipped": int(sum(r["clipped"] for r in picked)),
    }


def _comparison(safe: dict, ideal: dict, runs: int) -> dict:
    out = {}
    for x in REPORT_T:
        a, b = np.asarray(safe["per_round_runs_at"][x]), np.asarray(ideal["per_round_runs_at"][x])
        diff = float(a.mean() - b.mean())
        unpaired = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / runs) if runs > 1 else 0.0
        paired = float((a - b).std(ddof=1) / math.sqrt(runs)) if runs > 1 else 0.0
        out[x] = {"difference": diff, "ratio": float(a.mean() / b.mean()), "se_unpaired": unpaired, "se_paired": paired,
                  "within_3se": abs(diff) <= 3 * unpaired if unpaired > 0 else diff == 0.0}
    return out


def main(argv: list[str]) -> None:
    noise = "both"
    if "--noise" in argv:
        i = argv.index("--noise")
        noise = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 5 or noise not in ("float-safe", "idealised", "both"):
        raise SystemExit(__doc__)
    instance, width, runs, path, out = argv[0], argv[1], int(argv[2]), argv[3], argv[4]
    epsilons = tuple(float(e) for e in argv[5:]) or (1.0, 2.0, 5.0, 10.0, 20.0)
    noises = ("float-safe", "idealised") if noise == "both" else (noise,)
    horizon, alpha, seed = 1_000_000, 0.8, 0
    base = {"horizon": horizon, "alpha": alpha, "privacy_width": width, "path": path}
    # the order li_fig2 uses: run-major, then epsilon, then algorithm
    specs = [
        (instance, algorithm, seed, r, {**base, "epsilon": eps, "delta": FIG2_DELTA, "noise": n}, False)
        for n in noises
        for r in range(runs)
        for eps in epsilons
        for algorithm in ALGORITHMS
    ]
    started = time.time()
    with ProcessPoolExecutor(2) as executor:
        records = [{**record, "noise": spec[4]["noise"]} for spec, task in zip(specs, executor.map(_task, specs)) for record in task]
    seconds = time.time() - started
    Path(out + ".records").write_text(json.dumps(records))  # raw, before any summarising
    rows, comparisons = {}, {}
    for n in noises:
        for algorithm in ALGORITHMS:
            for eps in epsilons:
                picked = [r for r in records if r["algorithm"] == algorithm and r["epsilon"] == eps and r["noise"] == n]
                rows[f"{algorithm} {n} {eps:g}"] = _row(picked)
    if noise == "both":
        for algorithm in ALGORITHMS:
            for eps in epsilons:
                comparisons[f"{algorithm} {eps:g}"] = _comparison(rows[f"{algorithm} float-safe {eps:g}"], rows[f"{algorithm} idealised {eps:g}"], runs)
    result = {"instance": instance, "privacy_width": width, "runs": runs, "path": path, "horizon": horizon, "noise": list(noises),
              "alpha": alpha, "delta": FIG2_DELTA, "seed": seed, "epsilons": list(epsilons), "seconds": seconds, "rows": rows,
              "float_safe_minus_idealised": comparisons}
    Path(out).write_text(json.dumps(result, indent=1))
    for key, row in rows.items():
        print(f"{key:28s} R(T) {row['final_regret']['mean']:10,.0f} +- {row['final_regret']['sd']:8,.0f}   R(t)/t "
              + "  ".join(f"{row['per_round_at'][x]:.4f}" for x in REPORT_T))
    for key, comp in comparisons.items():
        print(f"{key:16s} float-safe - idealised: " + "  ".join(
            f"t={x:.0e}: {c['difference']:+.4f} (se {c['se_unpaired']:.4f}, paired {c['se_paired']:.4f}){'' if c['within_3se'] else ' >3se'}" for x, c in comp.items()))
    print("wrote", out, "in", round(seconds), "s")


if __name__ == "__main__":
    main(sys.argv[1:])
