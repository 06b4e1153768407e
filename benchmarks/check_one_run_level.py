"""Is the local one-run bound's CI configuration at its level? (issue 33, soundness note)

Audits LDP-UCB-L as ``tests/test_one_run.py::test_soundness_over_200_seeded_correct_runs`` does (eps = 1,
T = 3,000, 1,000 canaries, 600 guesses fixed in advance, runner chunk 64) for seeds LO..HI-1, and records
which messages the 600 guesses were made on. If every guess is on an extreme message (CTL response >= 1 or
<= 0, where the likelihood ratio is exactly e^eps), the correct count is exactly Binomial(600, e/(1+e)) and
the probability that the bound exceeds the claim is exactly P[Bin(600, e/(1+e)) >= 457] = 0.0487.

    PYTHONPATH=. NUMBA_CACHE_DIR=$PWD/.numba-cache nice python benchmarks/check_one_run_level.py 0 1200
"""
import numpy as np, math, sys, time
from scipy import stats
import dpverify._audit._one_run as O
cap = {}
orig = O._guess
def wrapped(scores, k, rng):
    order, g = orig(scores, k, rng); cap['s'] = scores[order]; return order, g
O._guess = wrapped
p = math.e/(1+math.e)
lo, hi = int(sys.argv[1]), int(sys.argv[2])
ext=[]; viol=0; correct=[]; t=time.time()
for seed in range(lo, hi):
    a = O.one_run_audit("ldp-ucb-l", epsilon=1.0, horizon=3000, canaries=1000, seed=seed, guesses=600, chunk=64)
    s = cap['s']; ext.append(np.mean((s >= 1) | (s <= 0))); viol += a.epsilon_lower > a.claim_epsilon; correct.append(a.correct)
correct=np.array(correct)
print(f"seeds {lo}..{hi-1}: {time.time()-t:.0f}s; min extreme fraction {min(ext)}; violations {viol}/{hi-lo}; mean correct {correct.mean():.3f} (Bin: {600*p:.3f}), sd {correct.std():.3f} ({math.sqrt(600*p*(1-p)):.3f})")
z = (correct.mean()-600*p)/(math.sqrt(600*p*(1-p))/math.sqrt(len(correct)))
print("z of the mean:", round(z,3), " KS p:", stats.kstest(correct, stats.binom(600,p).cdf).pvalue)
# chi-square on bins
edges=[0,420,430,435,440,445,450,457,601]
obs=np.histogram(correct,bins=edges)[0]; exp=np.diff(stats.binom.cdf(np.array(edges)-1,600,p))*len(correct)
print("bins", edges, "obs", obs.tolist(), "exp", np.round(exp,1).tolist(), "chi2 p", stats.chisquare(obs, exp).pvalue)
np.save(f"/tmp/b33/correct_{lo}_{hi}.npy", correct)
