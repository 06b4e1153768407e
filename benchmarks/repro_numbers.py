"""Numbers for REPRODUCTION.md (multi-armed part). Run: python benchmarks/repro_numbers.py > out.json"""
import json, sys, time
from dpverify._bandits import RunConfig, sweep

def cfgs():
    out = []
    for alg in ("ucb1", "ldp-ucb-l", "ldp-ucb-b"):
        for inst in ("ren-bernoulli", "ren-mixed"):
            out.append(RunConfig(alg, inst, 10**6, epsilon=2.0, seeds=50, seed=0))
    for eps in (0.1, 0.5):
        for T in (10**5, 10**6, 10**7) if eps == 0.1 else (10**6,):
            for alg in ("dp-se", "dist-dp-se"):
                out.append(RunConfig(alg, "easy", T, epsilon=eps, seeds=20, seed=0, path="aggregate"))
    for alg in ("cdp-se", "dist-dp-se", "ldp-se"):
        out.append(RunConfig(alg, "easy", 10**6, epsilon=0.5, seeds=20, seed=0, path="aggregate" if alg != "ldp-se" else "per-user"))
    return out

t = time.perf_counter()
res = sweep(cfgs(), workers=2, progress=False)
rows = [{"algorithm": r.algorithm, "instance": r.instance, "eps": r.epsilon, "T": r.horizon, "runs": r.seeds,
         "mean_final_regret": r.mean_final_regret, "ci95": r.final_regret_ci95, "reg_over_T": r.mean_final_regret / r.horizon,
         "se_over_T": r.se_regret[-1] / r.horizon, "path": r.ledger.get("path")} for r in res]
json.dump({"seconds": time.perf_counter() - t, "rows": rows}, sys.stdout, indent=1)
