"""The exact laws behind ``benchmarks/dpsniper_attainable.py`` checked against the mechanisms themselves.

Each law (one StatDP pair per mechanism) is compared with a seeded Monte Carlo sample of the
benchmark mechanism's own code by a Pearson chi-square test on the outcome codes (cells merged to
>= 50 expected draws, ``tests/_gof.py``) at level 1e-4 per input: 20 mechanisms x 2 inputs, so the
family's false-alarm rate is <= 4e-3 (Bonferroni) under the chi-square approximation. The cells of
the laws with continuous outputs (RNM3, SVT3, NumericalSVT, SVT34Parallel) are the outcome codes. Power: the
same test, on the same samples, must reject the law computed with every noise scale multiplied by
0.5 (RAPPOR: the flip probability f; SVT2: 0.3; the truncated geometric: eps divided by 1.2, as
halving the noise leaves its integer table unchanged), and its computed power against that wrong
law (noncentral chi-square) is asserted >= 0.99 before the verdict. 2e5 draws per input (4e5-6e5
for the SVT laws, which move little when both noises scale together). What this cannot see: an
error as small as the privacy loss itself (the SVT laws of the two inputs of a pair differ by a
few percent on outcomes of probability ~0.02; telling them apart needs ~1e7 draws). The SVT
quadrature is therefore also checked against scipy's adaptive quadrature to 1e-10, and the RNM3,
SVT3 and SVT34Parallel (its SVT3 half with c = 2) log-ratio ranges pointwise against the densities
recomputed from their definitions.

The Neyman-Pearson machinery is checked against brute force: on laws with few outputs, no
deterministic event (all 2^k subsets, both directions) beats the certified upper value, and the
attained value is at least every likelihood-ratio prefix set's.
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import dpsniper_attainable as da  # noqa: E402
import statdp_mechanisms as sm  # noqa: E402
from _gof import counts_gof  # noqa: E402
from bench_dpsniper import pairs_for  # noqa: E402

ALPHA = 1e-4
# draws per input, and the factor on the noise scales of the wrong law: the SVT laws move little
# when both noises scale together, so they get more draws (power is asserted, not assumed)
DRAWS = {"SVT1": 600_000, "SVT2": 500_000, "SVT4": 400_000}
# NumericalSVT's pattern law barely moves with the noise scale (t = 1 against noise of scale 30-120):
# its power is in the released values' loss classes, which 200 merged bins would blur together
BINS = {"NumericalSVT": 2_000}
WRONG = {"TruncatedGeometric": 1.2, "SVT2": 0.3}
SEEDS = {name: 1000 + i for i, name in enumerate(da.LAWS)}


def _pair(name: str):
    entry = next(e for e in sm.BENCHMARK if e.name == name)
    pairs, _ = pairs_for(entry)
    return entry, pairs[-1]  # "x shape" for query vectors (every coordinate differs), "1 ~ 2" for scalars


def _counts(keys: np.ndarray, codes: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(keys, codes)
    idx = np.minimum(idx, keys.size - 1)
    assert np.all(keys[idx] == codes), f"sampled outputs outside the law's support: {np.unique(codes[keys[idx] != codes])[:5]}"
    return np.bincount(idx, minlength=keys.size)


@pytest.mark.parametrize("name", list(da.LAWS))
def test_exact_law_matches_the_mechanism(name):
    entry, pair = _pair(name)
    law = da.LAWS[name]
    keys, cells = law.cells(pair.d, pair.d_prime)
    factor = WRONG.get(name, 0.5)
    wkeys, wrong = law.cells(pair.d, pair.d_prime, noise=factor)
    assert np.array_equal(keys, wkeys)
    rng = np.random.default_rng(SEEDS[name])
    for data, probs, wprobs in ((pair.d, cells.p, wrong.p), (pair.d_prime, cells.q, wrong.q)):
        codes = law.codes(entry.mechanism(data, rng, DRAWS.get(name, 200_000)), pair.d, pair.d_prime)
        counts = _counts(keys, codes)
        res = counts_gof(counts, probs, alpha=ALPHA, max_bins=BINS.get(name, 200))
        assert res.power_against(wprobs) >= 0.99, f"{name}: the test cannot tell the x{factor} law apart"
        assert not res.rejected, f"{name} on {pair.label}: exact law rejected: {res}"
        wres = counts_gof(counts, wprobs, alpha=ALPHA, max_bins=BINS.get(name, 200))
        assert wres.rejected, f"{name}: the mis-scaled law (x{factor}) was not rejected: {wres}"

def test_svt_quadrature_agrees_with_adaptive_quadrature():
    """The composite Gauss-Legendre law of SVT1 equals scipy's adaptive quad on the same integral."""
    x = np.r_[np.zeros(5), np.ones(5)]
    t, b_rho, b_nu = 0.5, 20.0, 40.0
    probs, err = da._svt_first_above(x, t, b_rho, b_nu)
    assert err < 1e-12 and abs(probs.sum() - 1.0) < 1e-12
    for k in (0, 5, 10):
        def f(r, k=k):
            z = r + t - x
            below = np.prod(da._lap_cdf(z[:k], b_nu)) if k else 1.0
            last = da._lap_sf(z[k], b_nu) if k < x.size else 1.0
            return float(da._lap_pdf(r, b_rho) * below * last)
        ref = sum(integrate.quad(f, a, b, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
                  for a, b in [(-3000, -0.5), (-0.5, 0), (0, 0.5), (0.5, 3000)])
        assert abs(ref - probs[k]) < 1e-10


@pytest.mark.parametrize("name, pair_index", [("TruncatedGeometric", 0), ("SVT1", -1), ("Rappor", 0), ("SVT5", -1)])
def test_oracle_bracket_covers_every_deterministic_event(name, pair_index):
    entry = next(e for e in sm.BENCHMARK if e.name == name)
    pairs, _ = pairs_for(entry)
    pair = pairs[pair_index]
    _, cells = da.LAWS[name].cells(pair.d, pair.d_prime)
    cells = da._finite(cells)
    n, level = 1e7, da.LEVEL_95
    o = da.oracle(cells, n, level)
    k = cells.p.size
    assert k <= 12
    best_subset, best_prefix = -np.inf, -np.inf
    masks = np.array(list(itertools.product([0, 1], repeat=k)), dtype=float)
    for P, Q in ((masks @ cells.p, masks @ cells.q), (masks @ cells.q, masks @ cells.p)):
        best_subset = max(best_subset, float(np.max(da.bound_at(P, Q, n, level))))
    for p, q in ((cells.p, cells.q), (cells.q, cells.p)):
        with np.errstate(divide="ignore"):
            P, Q = da._curve(p, q, np.log(p) - np.log(q))
        best_prefix = max(best_prefix, float(np.max(da.bound_at(P, Q, n, level))))
    assert best_subset <= o.upper + 1e-12
    assert o.lower >= best_prefix - 1e-12
    assert o.lower <= o.upper
    # the attained value is a point of the (randomised) curve: its bound recomputes
    assert math.isclose(float(da.bound_at(o.P, o.Q, n, level)), o.lower, rel_tol=1e-9, abs_tol=1e-12)


def test_true_epsilons_match_the_closed_forms():
    """Independent formulas: RAPPOR's per-bit ratio times the differing Bloom bits, the truncated
    geometric's ln(1 + 2^-k), Laplace's 1/b per differing coordinate."""
    for name in ("Rappor", "OneTimeRappor"):
        for label, c in da.pair_laws(name):
            v = int(label.split("~")[1])
            D = int(np.count_nonzero(sm.bloom(1) != sm.bloom(v)))
            want = sm.rappor_epsilon(0.75, 0.45, 0.55, differing=D) if name == "Rappor" else sm.rappor_epsilon(0.95, differing=D)
            assert math.isclose(c.true_epsilon()[0], want, rel_tol=1e-9)
    assert math.isclose(max(c.true_epsilon()[0] for _, c in da.pair_laws("TruncatedGeometric")), sm.truncated_geometric_epsilon(), rel_tol=1e-12)
    for name, want in (("Laplace", 0.1), ("LaplaceParallel", 0.1), ("PrefixSum", 1.0), ("NoisyHist2", 10.0)):
        got = max(c.true_epsilon()[0] for _, c in da.pair_laws(name))
        assert math.isclose(got, want, rel_tol=1e-9), (name, got)


def test_rnm3_ratio_ranges_contain_the_pointwise_ratio():
    """The certified log-ratio interval of every RNM3 cell contains the exact log density ratio at
    random points of the cell (the Lipschitz bound is not undercut)."""
    entry = next(e for e in sm.BENCHMARK if e.name == "ReportNoisyMax3")
    pairs, _ = pairs_for(entry)
    rng = np.random.default_rng(7)
    b = 2.0 / sm.EPS
    for pair in pairs:
        x, x2 = np.asarray(pair.d, float), np.asarray(pair.d_prime, float)
        e = da._rnm3_edges(x, x2, b)
        _, cells = da._rnm3_cells(x, x2, b, e)
        i = rng.integers(0, e.size - 1, 20_000)
        y = e[i] + rng.random(i.size) * (e[i + 1] - e[i])
        lr = da._rnm3_logpdf(y, x, b) - da._rnm3_logpdf(y, x2, b)
        assert np.all(cells.lo[i + 1] <= lr + 1e-12) and np.all(lr <= cells.hi[i + 1] + 1e-12), pair.label
        y_left = e[0] - rng.exponential(50.0, 1000)  # the exact left cell
        lr_left = da._rnm3_logpdf(y_left, x, b) - da._rnm3_logpdf(y_left, x2, b)
        assert np.allclose(lr_left, cells.lo[0], atol=1e-9)


def _svt3_log_density(k: int, v: np.ndarray, x: np.ndarray, t: float, b: float) -> np.ndarray:
    """log f_nu(v - x_k) + log H_k(v - t) of SVT3's output (k, v), H_k by its own composite rule on
    (-inf, s] (s a breakpoint, so the rule is exact piecewise), independent of the law's cell sums."""
    out = []
    for vv in v:
        s = vv - t
        r, w = da._rule(np.r_[0.0, x - t, s], 60 * b, b / 4, 30)
        keep = r <= s
        phi = da._lap_pdf(r, b) * np.prod(da._lap_cdf(r[None, :] + t - x[:k, None], b), axis=0)
        out.append(math.log(float(da._lap_pdf(vv - x[k], b))) + math.log(float(phi[keep] @ w[keep])))
    return np.asarray(out)


def test_svt3_ratio_ranges_contain_the_pointwise_ratio():
    """Every SVT3 cell's certified log-ratio interval contains the exact log density ratio at random
    points of the cell (H_k recomputed by quadrature, not from the cells' cumulative sums), on every
    StatDP pair; the left cell's constant is checked far to the left. A wrong variant, every interval
    shrunk 10x about its midpoint, is rejected by the same check (some point falls outside). Deterministic
    (fixed seed): no false-alarm rate beyond the 1e-10 rounding slack the intervals carry."""
    entry = next(e for e in sm.BENCHMARK if e.name == "SVT3")
    pairs, _ = pairs_for(entry)
    rng = np.random.default_rng(11)
    t, b = 1.0, 20.0
    shrunk_missed = 0
    for pair in pairs:
        x, x2 = np.asarray(pair.d, float), np.asarray(pair.d_prime, float)
        e = da._svt3_edges(x, x2, t, b)
        _, cells = da._svt3_cells(x, x2, t, b, b, e)
        lo, hi = cells.lo[:-1].reshape(x.size, e.size + 1), cells.hi[:-1].reshape(x.size, e.size + 1)
        for k in (0, 4, 9):
            # cells where the mass is: near the kinks and out to a few noise scales
            j = rng.integers(0, np.searchsorted(e, e[0] + 80.0), 25)
            v = e[j] + rng.random(j.size) * (e[j + 1] - e[j])
            lr = _svt3_log_density(k, v, x, t, b) - _svt3_log_density(k, v, x2, t, b)
            assert np.all(lo[k, j + 1] <= lr) and np.all(lr <= hi[k, j + 1]), (pair.label, k)
            mid = (lo[k, j + 1] + hi[k, j + 1]) / 2
            shrunk_missed += int(np.any(np.abs(lr - mid) > (hi[k, j + 1] - lo[k, j + 1]) / 20))
            v_left = e[0] - rng.exponential(30.0, 3)
            lr_left = _svt3_log_density(k, v_left, x, t, b) - _svt3_log_density(k, v_left, x2, t, b)
            assert np.allclose(lr_left, lo[k, 0], atol=1e-9) and lo[k, 0] == hi[k, 0]
    assert shrunk_missed > 0, "the check cannot tell a too-narrow interval"


def _svt3c2_log_density(A: tuple[int, ...], v: np.ndarray, x: np.ndarray, t: float, b_rho: float, b_nu: float) -> float:
    """log density of SVT3 (c = 2) releasing the values v of the above queries A, from its definition:
    prod_j f_nu(v_j - x_j) times the integral over threshold noise r <= min(v) - t of f_rho(r) times
    P(every query answered below is below), by its own composite rule."""
    last = max(A) if len(A) == 2 else x.size - 1
    S = [i for i in range(last + 1) if i not in A]
    s = float(np.min(v)) - t
    r, w = da._rule(np.r_[0.0, x - t, s], 60 * max(b_rho, b_nu), 5.0, 30)
    keep = r <= s
    phi = da._lap_pdf(r, b_rho) * np.prod(da._lap_cdf(r[None, :] + t - x[S, None], b_nu), axis=0)
    return sum(math.log(float(da._lap_pdf(vj - x[j], b_nu))) for j, vj in zip(A, v)) + math.log(float(phi[keep] @ w[keep]))


def test_svt3_c2_cells_contain_the_pointwise_ratio_and_sum_to_the_patterns():
    """SVT34Parallel's SVT3 half (c = 2), on the x-shape and half-half pairs: (a) the cells of each
    above-pattern sum to the pattern's probability from the separate pattern quadrature (to 1e-12);
    (b) at random points of random cells (one released value, or two: the smaller value's cell and
    the other's class, or both in one cell), the exact log density ratio lies in the cell's certified
    range. Wrong variant: the ranges shrunk 10x about their midpoints miss some point. Deterministic
    (fixed seed)."""
    entry = next(e for e in sm.BENCHMARK if e.name == "SVT34Parallel")
    pairs, _ = pairs_for(entry)
    rng = np.random.default_rng(12)
    t, b_rho, b_nu = 1.0, 20.0, 40.0
    combos = list(itertools.combinations(range(10), 2))
    pats = da._nsvt_patterns(10, 2)
    shrunk_missed = checked_below = 0
    for pair in (pairs[-1], pairs[4]):
        x, x2 = np.asarray(pair.d, float), np.asarray(pair.d_prime, float)
        e = da._svt3_edges(x, x2, t, b_nu)
        NC = e.size + 1
        lower, upper = np.r_[-np.inf, e], np.r_[e, np.inf]
        keys, P, Q, lo, hi, _ = da._svt3c2_raw(x, x2, t, b_rho, b_nu, e)
        p0, _ = da._nsvt_pattern_probs(x, t, b_rho, b_nu, 2)
        single = (keys >= 1) & (keys < 1 + 10 * NC)
        rest = keys - 1 - 10 * NC
        pat_of = np.where(single, -1, rest // (NC * (NC + 2)) // 3)
        for A in ((), (0,), (7,), (0, 1), (2, 9), (4, 5)):
            sel = (keys == 0) if not A else (single & ((keys - 1) // NC == A[0])) if len(A) == 1 else (~single & (keys > 0) & (pat_of == combos.index(A)))
            assert abs(P[sel].sum() - p0[pats.index(A)]) < 1e-12, A
        inner = np.flatnonzero(keys > 0)
        rest = (keys - 1 - 10 * NC) % (NC + 2)
        below_class = np.flatnonzero(~single & (keys > 0) & (rest == NC))  # rare among random cells
        same_cell = np.flatnonzero(~single & (keys > 0) & ((keys - 1 - 10 * NC) // (NC + 2) // NC % 3 == 2))
        chosen = np.r_[rng.choice(inner, 120, replace=False), rng.choice(below_class, 20 if below_class.size else 0), rng.choice(same_cell, 20)]
        for i in chosen:
            key = int(keys[i])
            if key < 1 + 10 * NC:
                j, c = divmod(key - 1, NC)
                if c == 0 or c == NC - 1:
                    continue
                A, v = (j,), np.r_[lower[c] + rng.random() * (upper[c] - lower[c])]
            else:
                r = key - 1 - 10 * NC
                other, r = r % (NC + 2), r // (NC + 2)
                c, ps = r % NC, r // NC
                side, (j, k) = ps % 3, combos[ps // 3]
                if c == 0:
                    continue
                small = lower[c] + rng.random() * (upper[c] - lower[c])
                if side == 2:
                    big = lower[c] + rng.random() * (upper[c] - lower[c])
                else:
                    o = k if side == 0 else j
                    a_o, b_o = min(x[o], x2[o]), max(x[o], x2[o])
                    if other == NC:
                        big = upper[c] + rng.random() * (a_o - upper[c])
                    elif other == NC + 1:
                        big = max(upper[c], b_o) + rng.exponential(30.0)
                    else:
                        big = lower[other] + rng.random() * (upper[other] - lower[other])
                A = (j, k)
                v = np.r_[small, big] if side != 1 else np.r_[big, small]
            lr = _svt3c2_log_density(A, v, x, t, b_rho, b_nu) - _svt3c2_log_density(A, v, x2, t, b_rho, b_nu)
            assert lo[i] <= lr <= hi[i], (pair.label, key, A, v, lr, lo[i], hi[i])
            mid, half = (lo[i] + hi[i]) / 2, (hi[i] - lo[i]) / 20
            shrunk_missed += int(abs(lr - mid) > half)
        checked_below += below_class.size > 0
    assert checked_below, "no pair exercised the class below the other value's kinks"
    assert shrunk_missed > 0, "the check cannot tell a too-narrow range"
