"""Returning users: exact per-batch calibration vs the ICLR paper's App. I, on the same total budget.

For each algorithm, horizon T and B (the most batches a user may join), the total budget is
(eps, delta) per user over the whole run. The per-batch noise is calibrated two ways:

- exact: ``accounting.calibrate`` on the B-fold composition of the worst batch's exact RDP curve;
- App. I: the paper's advanced-composition split eps_i = eps / (2 sqrt(2B log(2/delta))),
  delta_i = delta / (2B) (its Theorem 7, eps < 1), then the least noise meeting (eps_i, delta_i).

The population is N = max(ceil(T/B), the largest batch the run can release): every batch needs
distinct users, so with Algorithm 1's doubling batches a user joins at most ceil(T/N) <= 2
batches *of one run* (B' below); the calibration covers B, e.g. returns over several runs.
Both rules run on the same seeds (common random numbers: same instance, same reward streams),
so the regret difference is paired.

Run (2 cores: ~11 min in all, almost all of it the Dist-RDP-SE calibrations, whose exact
Skellam curves are slow; --quick takes ~10 s):

    python benchmarks/repro_returning.py                 # Dist-DP-SE and Dist-RDP-SE
    python benchmarks/repro_returning.py --quick         # Dist-DP-SE only, 20 seeds
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from dpverify._bandits import RunConfig, run
from dpverify._bandits._builtin import largest_release
from dpverify._bandits._results import _t_quantile_975

RULES = ("exact", "appendix-i")


def _config(algorithm: str, horizon: int, returns: int, rule: str, args) -> RunConfig:
    population = max(math.ceil(horizon / returns), largest_release(horizon, 2))
    return RunConfig(algorithm, "easy", horizon, epsilon=args.eps, delta=args.delta, seeds=args.seeds, seed=args.seed,
                     population=population, max_returns=returns, returning_calibration=rule, path="aggregate")


def _one(config: RunConfig):
    t0 = time.perf_counter()
    result = run(config, workers=1, progress=False)
    return config, result, time.perf_counter() - t0


def _ci(values: np.ndarray) -> tuple[float, float]:
    half = _t_quantile_975(values.size - 1) * values.std(ddof=1) / math.sqrt(values.size)
    return float(values.mean()), float(half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, default=0.5, help="total per-user eps over the run (App. I needs eps < 1)")
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--returns", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--dp-horizon", type=int, default=10**5)
    parser.add_argument("--rdp-horizon", type=int, default=2**15)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="Dist-DP-SE only, 20 seeds")
    args = parser.parse_args()
    if args.quick:
        args.seeds = min(args.seeds, 20)
    algorithms = [("dist-dp-se", args.dp_horizon)] + ([] if args.quick else [("dist-rdp-se", args.rdp_horizon)])
    tasks = [_config(a, T, B, rule, args) for a, T in algorithms for B in args.returns for rule in RULES]
    # one task per configuration: its calibration is computed once, in the process that runs its seeds
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        done = list(pool.map(_one, tasks))
    results = {(c.algorithm, c.max_returns, c.returning_calibration): (c, r, s) for c, r, s in done}

    print(f"Returning users, easy instance, total budget (eps, delta) = ({args.eps:g}, {args.delta:g}) per user, "
          f"{args.seeds} paired seeds (seed {args.seed}), aggregate path; {time.perf_counter() - t0:.0f} s on {args.workers} workers.\n")
    print("| algorithm | T | B | N | B' | eps_b exact | eps_b App. I | eps_b ratio | spent exact / App. I | "
          "regret exact (95% CI) | regret App. I (95% CI) | App. I - exact (paired 95% CI) | regret saved | exact wins |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for algorithm, horizon in algorithms:
        for returns in args.returns:
            (ce, re_, _), (_, ra, _) = results[(algorithm, returns, "exact")], results[(algorithm, returns, "appendix-i")]
            cal_e, cal_a = re_.per_run[0]["returning_users"], ra.per_run[0]["returning_users"]
            exact, app_i = np.array(re_.final_regrets), np.array(ra.final_regrets)
            (me, he), (ma, ha), (md, hd) = _ci(exact), _ci(app_i), _ci(app_i - exact)
            observed = max(re_.ledger["max_releases_per_user"], ra.ledger["max_releases_per_user"])
            spent = f"{re_.ledger['spent']['epsilon']:.3f} / {ra.ledger['spent']['epsilon']:.3f}"
            name = {"dist-dp-se": "Dist-DP-SE", "dist-rdp-se": "Dist-RDP-SE(s=10)"}[algorithm]
            print(f"| {name} | {horizon} | {returns} | {ce.population} | {observed} | {cal_e['batch_epsilon']:.4g} | {cal_a['batch_epsilon']:.4g} | "
                  f"{cal_e['batch_epsilon'] / cal_a['batch_epsilon']:.2f} | {spent} | {me:.0f} ± {he:.0f} | {ma:.0f} ± {ha:.0f} | "
                  f"{md:.0f} ± {hd:.0f} | {md / ma:.0%} | {(exact < app_i).sum()}/{exact.size} (ties {(exact == app_i).sum()}) |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
