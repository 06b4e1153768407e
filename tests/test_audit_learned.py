"""Learned-event views, float-representation views, joint views and byte-sized chunks.

Every audit here runs at family-wise alpha = 0.05 with a fixed seed: a "violated" verdict on a
correct mechanism happens with probability <= 0.05 (the auditor's guarantee, re-measured in
benchmarks/audit_soundness.md), and each test pairs a correct mechanism that must hold with a
wrong one that the same settings must reject (the power statement is in each docstring).
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from accounting._core._guarantees import PureDP
from accounting._core._validation import AccountingError
from dpverify._audit import audit
from dpverify._audit._audit import default_chunk_size
from dpverify._audit._learned import ZERO_RESIDUE, lowest_bit_exponent

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import statdp_mechanisms as sm  # noqa: E402

ALPHA = 0.05
EPS = 0.1


def test_lowest_bit_exponent_reads_the_ieee_pattern():
    x = np.array([1.0, 0.5, 3.0, 1.0 + 2.0**-52, 2.0**-1074, 6.0 * 2.0**-1074, 0.0, -0.75, 2.0**60])
    assert lowest_bit_exponent(x).tolist() == [0, -1, 0, -52, -1074, -1073, ZERO_RESIDUE, -2, 60]


# ---- floating-point Laplace (Mironov 2012) against the snapping mechanism -------------------


def float_laplace(x, rng, size):
    """x + (1/eps) sign log U in doubles: outputs near 0 have finer low bits when x = 0 than x = 1."""
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    return float(x) + sign * (1.0 / EPS) * np.log(1.0 - rng.random(size))


def snapping(x, rng, size, bound=100.0):
    """Mironov's snapping mechanism (Thm 1): eps-DP with lambda = (1 + B 2^-49) / eps, grid 2^ceil(log2 lambda)."""
    lam = (1.0 + bound * 2.0**-49) / EPS
    grid = 2.0 ** math.ceil(math.log2(lam))
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    y = min(bound, max(-bound, float(x))) + sign * lam * np.log(1.0 - rng.random(size))
    return np.clip(np.round(y / grid) * grid, -bound, bound)


def test_float_laplace_is_violated_and_snapping_holds():
    """Power: the textbook float Laplace has infinite epsilon; at 50,000 draws the lowest-set-bit
    view sees ~2% of outputs under x = 0 that x = 1 never produces (bound ~ log(1000/3) >> 0.1).
    The snapping mechanism is 0.1-DP in doubles: holds except with probability <= 0.05."""
    bad = audit(float_laplace, (0.0, 1.0), PureDP(EPS), samples=50_000, alpha=ALPHA, seed=3, learned=False)
    assert bad.verdict == "violated"
    assert "lowest-set-bit" in bad.worst().event and bad.worst().lower_bound > 3.0
    good = audit(snapping, (0.0, 1.0), PureDP(EPS), samples=50_000, alpha=ALPHA, seed=3, learned=False)
    assert good.verdict == "holds"
    # real-arithmetic audit of the same float Laplace: its algorithm is 0.1-DP
    assert audit(float_laplace, (0.0, 1.0), PureDP(EPS), samples=50_000, alpha=ALPHA, seed=3, learned=False,
                 float_bits=False).verdict == "holds"


# ---- a 1,000-bit output leaking one user's bit ----------------------------------------------


def bit_vector(user, leak):
    """1,000 fair bits; bit ``user`` is the input bit under randomised response that keeps it with
    probability e/(1+e) (1-DP, correct) or reveals it with probability 0.85 (eps = log 12.3 = 2.5)."""

    def mechanism(d, rng, size):
        bits = rng.integers(0, 2, (size, 1000), dtype=np.int8)
        if leak:
            reveal = rng.random(size) < 0.85
            bits[reveal, user] = d
        else:
            keep = rng.random(size) < math.e / (1 + math.e)
            bits[:, user] = np.where(keep, d, 1 - d)
        return bits

    return mechanism


@pytest.mark.slow
@pytest.mark.parametrize("user", [0, 500])
def test_thousand_bit_leak_is_caught_whichever_user(user):
    """Default settings (learned views on; chunks sized in bytes, no chunk_size). Power: the leaky
    bit gives eps = 2.5 against the claim 1.0; the logistic-regression weights screen column
    ``user`` into an exact per-coordinate view whatever its index. The 1-DP variant holds."""
    bad = audit(bit_vector(user, True), (0, 1), PureDP(1.0), samples=20_000, alpha=ALPHA, seed=11)
    assert bad.verdict == "violated" and bad.worst().lower_bound > 1.5
    good = audit(bit_vector(user, False), (0, 1), PureDP(1.0), samples=20_000, alpha=ALPHA, seed=11)
    assert good.verdict == "holds"


def test_chunks_are_sized_in_bytes():
    # 1,000 int64 coordinates: 8,000 bytes a row -> 1,048 rows of 8 MiB, not 2**19 rows (4 GB)
    assert default_chunk_size(10**6, 8000) == 8 * 2**20 // 8000
    assert default_chunk_size(10**6, 8) == 500_000  # scalar outputs: as before (half the first size)
    assert default_chunk_size(10**8, 8) == 2**20


# ---- joint (index, value) events ------------------------------------------------------------


def index_value(shifted):
    """(index, value): index uniform on 0..9, value U[0, 10) independent of it. The ``shifted`` law
    moves index 9's values to [4, 10) and gives index 8 the missing mass on [0, 4), so both
    marginals are unchanged but {index = 9 and value < 4} has probability 0.04 vs 0."""

    def mechanism(d, rng, size):
        idx = rng.integers(0, 10, size)
        val = 10.0 * rng.random(size)
        if shifted and d == 1:
            nine = idx == 9
            val[nine] = 4.0 + 6.0 * rng.random(int(nine.sum()))
            eight = idx == 8
            low = rng.random(size) < 0.8
            val[eight & low] = 4.0 * rng.random(int((eight & low).sum()))
            val[eight & ~low] = 4.0 + 6.0 * rng.random(int((eight & ~low).sum()))
        return idx, val

    return mechanism


def test_joint_event_on_index_value_outputs():
    """Power: eps is infinite through the joint event alone (the marginals agree); at 50,000 draws
    the joint (index, value-bin) view bounds it above 3. The unshifted mechanism (the same law on
    both inputs) holds."""
    bad = audit(index_value(True), (0, 1), PureDP(0.5), samples=50_000, alpha=ALPHA, seed=5, learned=False, float_bits=False)
    assert bad.verdict == "violated" and bad.worst().lower_bound > 3.0
    assert "output[0] == 9" in bad.worst().event
    good = audit(index_value(False), (0, 1), PureDP(0.5), samples=50_000, alpha=ALPHA, seed=5, learned=False, float_bits=False)
    assert good.verdict == "holds"


# ---- learned views on a sparse vector variant -----------------------------------------------


def svt(cutoff, queries=40, eps=1.0):
    """Lyu et al.'s SVT: threshold noise Lap(2/eps), query noise Lap(4/eps), flags 1/0/-1. With
    ``cutoff`` it stops after the first "above" (Alg. 1, eps-DP); without it (Alg. 6) it answers
    all 40 queries and leaks up to 40 x eps/4 when half the queries move up and half down."""

    def mechanism(d, rng, size):
        x = np.asarray(d, dtype=float)
        rho = rng.laplace(0.0, 2.0 / eps, (size, 1))
        above = x[None, :] + rng.laplace(0.0, 4.0 / eps, (size, x.size)) >= rho + 1.0
        out = above.astype(np.int64)
        if cutoff:
            seen = np.cumsum(above, axis=1)
            out[np.concatenate([np.zeros((size, 1)), seen[:, :-1]], axis=1) >= 1] = -1
        return out

    return mechanism


def test_learned_views_on_sparse_vector():
    """40 flags (2^40 possible rows: no exact row view). Power: Alg. 6 on 20 queries moved up and
    20 down (the threshold noise cannot absorb both) has true epsilon well above 1; the learned score (counts and one-hot features) bounds it above
    the claim at 40,000 draws. Alg. 1 (correct) holds."""
    pair = (np.zeros(40), np.r_[np.ones(20), -np.ones(20)])
    bad = audit(svt(False), pair, PureDP(1.0), samples=40_000, alpha=ALPHA, seed=2)
    assert bad.verdict == "violated" and "score" in bad.worst().event
    good = audit(svt(True), pair, PureDP(1.0), samples=40_000, alpha=ALPHA, seed=2)
    assert good.verdict == "holds"


# ---- without scikit-learn -------------------------------------------------------------------


def test_falls_back_without_sklearn(monkeypatch):
    """With scikit-learn unimportable the auditor warns once and uses the pilot views; the float
    Laplace is still caught (its lowest-set-bit view needs no classifier); learned=True refuses."""
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn -> ImportError
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = audit(float_laplace, (0.0, 1.0), PureDP(EPS), samples=20_000, alpha=ALPHA, seed=4)
    notices = [w for w in caught if "scikit-learn" in str(w.message)]
    assert len(notices) == 1 and rep.verdict == "violated"
    assert all("score" not in r.event for r in rep)
    with pytest.raises(AccountingError, match="learned"):
        audit(float_laplace, (0.0, 1.0), PureDP(EPS), samples=1000, learned=True)


# ---- pair search ----------------------------------------------------------------------------


def compare_first_two(x, rng, size):
    """Randomised response (keep probability e^3/(1+e^3), eps = 3) of the bit [x[0] < x[1]]."""
    v = np.asarray(x, dtype=float)
    bit = int(v[0] < v[1])
    keep = rng.random(size) < math.exp(3) / (1 + math.exp(3))
    return np.where(keep, bit, 1 - bit)


def test_pair_search_finds_the_violating_pattern():
    """The user's pair moves only the last query, which the mechanism ignores: it holds there
    (false-alarm rate <= 0.05). Power: StatDP's "one below" pattern flips [x0 < x1], eps = 3 > 1;
    the search (on draws never reused) finds a violating pair and the full audit rejects the
    claim; the search cost is counted in the samples."""
    pair = (np.ones(5), np.r_[np.ones(4), 2.0])
    plain = audit(compare_first_two, pair, PureDP(1.0), samples=20_000, alpha=ALPHA, seed=8)
    assert plain.verdict == "holds"
    found = audit(compare_first_two, pair, PureDP(1.0), samples=20_000, alpha=ALPHA, seed=8, pair_search="statdp",
                  search_budget=12, search_samples=2_000)
    assert found.verdict == "violated" and found.worst().lower_bound > 2.0
    info = found.worst().details["pair_search"]
    assert info["candidates"] == 12 and found.worst().samples > plain.worst().samples
    assert len({r.pair for r in found}) == 1  # keep_pairs=1: alpha goes to the one pair kept


# ---- signed counts of increments ------------------------------------------------------------


def test_signed_count_of_increments_bounds_prefix_sums():
    """Running sums of 10 answers with Lap(10) noise each (the benchmark's PrefixSum: 1.0-DP for
    neighbours differing by at most 1 in every answer, 10 x 0.1). The pair moves answer 0 up and the other nine down: every increment of the running sum
    carries loss 0.1 on its own side of the shift, so the event "all ten increments on the side
    their pilot medians moved to" has probability about 2^-10 under D and e^-1 of that under D'
    (true eps = 1.0). Power: at 300,000 draws the signed count of increments alone (learned and
    float-bit views off: numpy's float Laplace would leak through its low-order bits first) bounds
    eps near 0.7-0.75 on seeds 3-5, so the claim 0.6 is violated; the true claim 1.0 holds
    (false-alarm rate <= 0.05)."""
    pair = (np.ones(10), np.r_[2.0, np.zeros(9)])
    bad = audit(sm.prefix_sum, pair, PureDP(0.6), samples=300_000, alpha=ALPHA, seed=3, learned=False, float_bits=False)
    assert bad.verdict == "violated" and "first differences" in bad.worst().event
    good = audit(sm.prefix_sum, pair, PureDP(1.0), samples=300_000, alpha=ALPHA, seed=3, learned=False, float_bits=False)
    assert good.verdict == "holds"



# ---- joint pattern / value counts of an SVT that releases its answers -----------------------


def numerical_svt(d, rng, size, eps=1.0, c=2):
    """Numerical SVT (Wang et al. 2019) at eps = 1, c = 2: an above answer releases x + Lap(3c/eps),
    a below one 0, and -1000 once c answers were above: eps-DP."""
    x = np.asarray(d, dtype=float)
    rho = rng.laplace(0.0, 3.0 / eps, (size, 1))
    above = x[None, :] + rng.laplace(0.0, 6.0 * c / eps, (size, x.size)) >= rho + 1.0
    before = np.concatenate([np.zeros((size, 1)), np.cumsum(above, axis=1)[:, :-1]], axis=1)
    out = np.where(above, x[None, :] + rng.laplace(0.0, 3.0 * c / eps, (size, x.size)), 0.0)
    out[before >= c] = -1000.0
    return out


def test_pattern_value_counts_bound_numerical_svt():
    """On StatDP's "x shape" pair the log-likelihood ratio is a pattern term (where the above
    answers fall) plus a value term (where their released values lean); the joint cells of the
    two signed counts, oriented by the inputs, carry both (true eps on the pair about 0.80).
    Power: at 200,000 draws (learned views off) they bound eps near 0.44-0.50 on seeds 1-3, so the
    claim 0.4 is violated; the proven claim 1.0 holds (false-alarm rate <= 0.05)."""
    pair = (np.r_[np.ones(5), np.zeros(5)], np.r_[np.zeros(5), np.ones(5)])
    bad = audit(numerical_svt, pair, PureDP(0.4), samples=200_000, alpha=ALPHA, seed=1, learned=False, float_bits=False)
    assert bad.verdict == "violated" and "(released count, value count)" in bad.worst().event
    good = audit(numerical_svt, pair, PureDP(1.0), samples=200_000, alpha=ALPHA, seed=1, learned=False, float_bits=False)
    assert good.verdict == "holds"


def test_pattern_value_view_cells():
    """A = signed count of released coordinates, V = signed count of their values' sides of the
    median (codes vote 0); cells are the (A, V) pairs, described as such."""
    from dpverify._audit._views import PatternValueView

    view = PatternValueView((5.0, 5.0, 5.0), (1, -1, 1), ((0.0, -1000.0), (0.0, -1000.0), (0.0, -1000.0)))
    table = np.array([[7.0, 0.0, -1000.0],   # released at 0 above median: A = 1, V = 1
                      [0.0, 3.0, 9.0],       # released at 1 below (sign -1) and 2 above: A = 0, V = 2
                      [0.0, 0.0, 0.0]])      # nothing released: A = 0, V = 0
    a, v = view.pair(table)
    assert a.tolist() == [1, 0, 0] and v.tolist() == [1, 2, 0]
    keys, counts = view.count(table)
    assert counts.sum() == 3 and len(keys) == 3
    assert "(1, 1)" in view.describe(keys, keys == keys.max())
