"""Is the local one-run bound's CI configuration at its level? (issue 33, soundness note)

Audits LDP-UCB-L as ``tests/test_one_run.py::test_soundness_over_200_seeded_correct_runs`` does (eps = 1,
T = 3,000, 1,000 canaries, 600 guesses fixed in advance, runner chunk 64) for seeds LO..HI-1, and records
which messages the 600 guesses were made on. If every guess is on an extreme message (CTL response >= 1 or
<= 0, where the likelihood ratio is exactly e^eps), the correct count is exactly Binomial(600, e/(1+e)) and
the probability that the bound exceeds the claim is exactly P[Bin(600, e/(1+e)) >= 457] = 0.0487.

    PYTHONPATH=. NUMBA_CACHE_DIR=$PWD/.numba-cache nice python benchmarks/check_one_run_level.py 0 1200
"""
import math
import sys
import time

import numpy as np
from scipy import stats

import dpverify._audit._one_run as one_run


def main(lo: int, hi: int) -> None:
    picked: dict = {}
    guess = one_run._guess

    def recording_guess(scores, k, rng):  # the audit's own guesser, recording the scores it guessed on
        order, bits = guess(scores, k, rng)
        picked["scores"] = scores[order]
        return order, bits

    one_run._guess = recording_guess
    p = math.e / (1 + math.e)
    extreme, violations, correct = [], 0, []
    t0 = time.perf_counter()
    for seed in range(lo, hi):
        audit = one_run.one_run_audit("ldp-ucb-l", epsilon=1.0, horizon=3000, canaries=1000, seed=seed, guesses=600, chunk=64)
        s = picked["scores"]
        extreme.append(float(np.mean((s >= 1) | (s <= 0))))
        violations += audit.epsilon_lower > audit.claim_epsilon
        correct.append(audit.correct)
    correct = np.array(correct)
    print(f"seeds {lo}..{hi - 1}: {time.perf_counter() - t0:.0f} s; least share of guesses on extreme messages {min(extreme)}; "
          f"violations {violations} / {hi - lo}; mean correct {correct.mean():.3f} (Bin: {600 * p:.3f}), sd {correct.std():.3f} "
          f"({math.sqrt(600 * p * (1 - p)):.3f})")
    threshold = min(w for w in range(601) if one_run.one_run_epsilon(1000, 600, w) > 1.0)
    print(f"least count whose bound exceeds 1: {threshold}; exact violation probability {stats.binom.sf(threshold - 1, 600, p):.4f}")
    edges = [0, 420, 430, 435, 440, 445, 450, 457, 601]
    observed = np.histogram(correct, bins=edges)[0]
    expected = np.diff(stats.binom.cdf(np.array(edges) - 1, 600, p)) * correct.size
    print(f"bins {edges}: observed {observed.tolist()}, expected {np.round(expected, 1).tolist()}, "
          f"chi-square p {stats.chisquare(observed, expected).pvalue:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
