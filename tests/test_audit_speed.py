"""The auditor's fast paths compute exactly what the slow ones did.

Each hot path rewritten for speed is checked against the computation it replaced, bit for bit:

- :func:`unique_rows` (rows coded into one int64 key) against ``np.unique(axis=0)``: same
  distinct rows in the same order, same dtype, inverse and counts (hypothesis draws the tables);
- counting each distinct row once with its multiplicity (:func:`distinct_rows` and the views'
  ``weights``) against counting every row, for every kind of view the auditor builds;
- the row-wise score kernels: a row's score does not depend on its batch (the property that makes
  the two counts above agree), and agrees with the BLAS / scikit-learn formulas to rounding;
- the benchmark's SVT mechanisms (numba scans) against the numpy code they replaced, same seed.

Not statistical: no test here makes a randomised claim; seeds only make the tables.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpverify._audit import statdp_pairs
from dpverify._audit._runner import ChunkTask, run_chunk
from dpverify._audit._score_kernels import affine_rows, gaussian_lr_rows
from dpverify._audit._views import (
    BinnedView,
    JointView,
    RowsView,
    distinct_rows,
    fit_views,
    merge_hists,
    unique_rows,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import statdp_mechanisms as sm  # noqa: E402


def _reference(rows: np.ndarray):
    uniq, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    return uniq, inverse.reshape(-1), counts


def _same(a, b) -> bool:
    return (a[0].dtype == b[0].dtype and a[0].shape == b[0].shape and np.array_equal(a[0], b[0], equal_nan=True)
            and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2]))


# ---- unique_rows -------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.int64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=40),
                  elements=st.integers(-3, 3) | st.integers(-2**62, 2**62)))
def test_unique_rows_matches_numpy_on_integers(rows):
    assert _same(unique_rows(rows), _reference(rows))


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=40),
                  elements=st.sampled_from([-2000.0, -1000.0, 0.0, -0.0, 0.5, 1.0, 3.25, np.inf, np.nan])
                  | st.floats(-1e6, 1e6)))
def test_unique_rows_matches_numpy_on_floats(rows):
    """Including NaN and -0.0 (where the exact path steps aside for np.unique itself)."""
    assert _same(unique_rows(rows), _reference(rows))


def test_unique_rows_on_large_tables_and_the_re_ranking_path():
    rng = np.random.default_rng(0)
    svt = sm.svt1(np.ones(10), rng, 50_000)
    wide = rng.integers(0, 5000, (5000, 6))  # radix product 5000**6 > 2**62: the key is re-ranked
    flags = np.where(rng.random((20_000, 4)) < 0.5, -1000.0, 2.5)  # floats with few values: searched, not sorted
    late = np.r_[np.zeros((5000, 2)), np.full((3, 2), 7.5)]  # a value the first rows never show
    for rows in (svt, wide, flags, late, np.zeros((0, 3), dtype=np.int64)):
        assert _same(unique_rows(rows), _reference(rows))
    # the order is lexicographic with column 0 first: a key with the significance reversed
    # would order these rows differently, and the comparison above would catch it
    rows = np.array([[0, 1], [1, 0]])
    assert unique_rows(rows)[0].tolist() == [[0, 1], [1, 0]]
    assert unique_rows(rows[:, ::-1])[0].tolist() == [[0, 1], [1, 0]]


def test_merge_hists_adds_counts_on_the_union():
    a = (np.array([[0, 1], [2, 2]]), np.array([3, 4]))
    b = (np.array([[0, 0], [2, 2]]), np.array([5, 6]))
    c = (np.array([[0, 1]]), np.array([1]))
    keys, counts = merge_hists([a, b, c])
    assert keys.tolist() == [[0, 0], [0, 1], [2, 2]] and counts.tolist() == [5, 4, 10]
    # histograms on the same cells (binned views) add elementwise, keys kept
    keys, counts = merge_hists([(np.arange(3), np.array([1, 2, 3])), (np.arange(3), np.array([4, 0, 1]))])
    assert keys.tolist() == [0, 1, 2] and counts.tolist() == [5, 2, 4]


# ---- counting distinct rows with weights ---------------------------------------------------


def _svt_views(mechanism, pair, rng):
    from dpverify._audit._learned import ResidueView, fit_learned_views

    pilot = [np.asarray(mechanism(d, rng, 16_384)) for d in (pair.d, pair.d_prime)]
    views = fit_views(*pilot)
    learned, _ = fit_learned_views(mechanism(pair.d, rng, 4096), mechanism(pair.d_prime, rng, 4096), seed=3)
    pooled = np.concatenate(pilot).astype(np.float64)
    # fit_views adds no Gaussian score when whole rows are exact cells: build one to test its counting
    from dpverify._audit._views import _edges, _gaussian_fit

    stat = ("gaussian-lr", *_gaussian_fit(pilot[0].astype(np.float64)), *_gaussian_fit(pilot[1].astype(np.float64)))
    gaussian = BinnedView(_edges(BinnedView((0.0,), stat).values(pooled)), stat)
    extra = (JointView(0, 1, tuple(np.quantile(pooled[:, 1], [0.25, 0.5, 0.75]))), RowsView((0, 2, 4)),
             ResidueView(3), gaussian)
    return views + learned + extra


@pytest.mark.parametrize("mechanism", [sm.svt1, sm.svt2, sm.svt5])
def test_weighted_counts_of_distinct_rows_equal_counts_of_all_rows(mechanism):
    """Every view kind (rows, columns, Gaussian LR, logistic, MLP, joint, residue) on SVT answers."""
    rng = np.random.default_rng(5)
    pair = list(statdp_pairs(10))[0]
    views = _svt_views(mechanism, pair, rng)
    assert any(isinstance(v, BinnedView) and v.statistic[0] == "gaussian-lr" for v in views)
    table = mechanism(pair.d, rng, 60_000)
    distinct = distinct_rows(table)
    assert distinct is not None and len(distinct[0]) <= 11
    uniq, _, weights = distinct
    for view in views:
        full = view.count(table)
        fast = view.count(uniq, weights)
        assert full[0].dtype == fast[0].dtype and np.array_equal(full[0], fast[0]), view.name
        assert np.array_equal(full[1], fast[1]), view.name
        assert int(fast[1].sum()) == table.shape[0]


def test_run_chunk_gives_the_same_histograms_with_and_without_distinct_rows(monkeypatch):
    rng = np.random.default_rng(6)
    pair = list(statdp_pairs(10))[1]
    views = _svt_views(sm.svt1, pair, rng)
    task = ChunkTask(sm.svt1, pair.d, 11, (0, 0, 0), 20_000, 4000, views, "sized", "generator")
    fast = run_chunk(task)
    monkeypatch.setattr("dpverify._audit._runner.distinct_rows", lambda table: None)
    slow = run_chunk(task)
    for f_parts, s_parts in zip(fast, slow):
        for (fk, fc), (sk, sc) in zip(f_parts, s_parts):
            assert np.array_equal(fk, sk) and fk.dtype == sk.dtype and np.array_equal(fc, sc)


@pytest.mark.parametrize("mechanism", [sm.svt1, sm.svt3])
def test_run_chunk_equals_counting_each_view_on_its_own(mechanism):
    """run_chunk scores the learned views of one fit together (features once per batch)."""
    from dpverify._audit._runner import draw

    rng = np.random.default_rng(12)
    pair = list(statdp_pairs(10))[2]
    views = _svt_views(mechanism, pair, rng)
    task = ChunkTask(mechanism, pair.d, 13, (0, 1, 2), 12_000, 3000, views, "sized", "generator")
    table = draw(mechanism, pair.d, np.random.SeedSequence(13, spawn_key=(0, 1, 2)), 12_000, "sized", "generator")
    parts = (table[:1500], table[1500:3000], table[3000:])
    for view, got in zip(views, run_chunk(task)):
        for part, (keys, counts) in zip(parts, got):
            want = view.count(part)
            assert np.array_equal(keys, want[0]) and np.array_equal(counts, want[1]), view.name


def test_distinct_rows_declines_tables_of_mostly_distinct_rows():
    rng = np.random.default_rng(7)
    assert distinct_rows(rng.normal(size=(10_000, 3))) is None
    assert distinct_rows(sm.rappor(np.array([1]), rng, 10_000)) is None  # 2^20 possible reports
    assert distinct_rows(np.full((10_000, 2), np.nan)) is None  # no exact code
    assert distinct_rows(np.zeros(10_000)) is None  # scalar outputs: nothing to gain


# ---- row-wise score kernels ---------------------------------------------------------------


def test_score_kernels_are_row_wise_and_agree_with_blas():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(3000, 12))
    a = rng.normal(size=(12, 12))
    prec = a @ a.T + np.eye(12)
    mu_p, mu_q = rng.normal(size=12), rng.normal(size=12)
    score = gaussian_lr_rows(x, mu_p, prec, mu_q, 0.5 * prec, 0.25)
    dp, dq = x - mu_p, x - mu_q
    blas = 0.5 * (((dq @ (0.5 * prec)) * dq).sum(axis=1) - ((dp @ prec) * dp).sum(axis=1)) + 0.25
    assert np.allclose(score, blas, rtol=1e-12, atol=1e-9)
    w, b = rng.normal(size=(12, 7)), rng.normal(size=7)
    hidden = affine_rows(x, w, b, relu=True)
    assert np.allclose(hidden, np.maximum(x @ w + b, 0.0), rtol=1e-12, atol=1e-12)
    # a row's value is the same alone, at another position and inside a batch of another size
    for i in (0, 1, 7, 2999):
        assert gaussian_lr_rows(x[i:i + 1], mu_p, prec, mu_q, 0.5 * prec, 0.25)[0] == score[i]
        assert np.array_equal(affine_rows(x[i:i + 1], w, b, relu=True)[0], hidden[i])
    shuffled = rng.permutation(3000)
    assert np.array_equal(gaussian_lr_rows(x[shuffled], mu_p, prec, mu_q, 0.5 * prec, 0.25), score[shuffled])
    with pytest.raises(ValueError, match="bias"):
        affine_rows(x, w, b[:3])


def test_learned_scores_agree_with_scikit_learn():
    from dpverify._audit._learned import fit_learned_views

    rng = np.random.default_rng(9)
    pair = list(statdp_pairs(10))[0]
    views, _ = fit_learned_views(sm.svt3(pair.d, rng, 2048), sm.svt3(pair.d_prime, rng, 2048), seed=4)
    table = sm.svt3(pair.d, rng, 5000)
    for view in views:
        feats = view.features(table)
        if hasattr(view.model, "decision_function"):
            reference = view.model.decision_function(feats)
        else:
            p = np.clip(view.model.predict_proba(feats)[:, 1], 1e-15, 1 - 1e-15)
            reference = np.log(p) - np.log1p(-p)
        ours = view.values(table)
        assert np.allclose(ours, reference, rtol=1e-9, atol=1e-12), view.name
        assert np.array_equal(view.values(table[17:18]), ours[17:18])


# ---- the benchmark's SVT mechanisms ---------------------------------------------------------


def _lap(rng, scale, shape):
    return rng.laplace(0.0, scale, shape)


def _abort_after(above, c):
    seen = np.cumsum(above, axis=1)
    before = np.concatenate([np.zeros((above.shape[0], 1), dtype=seen.dtype), seen[:, :-1]], axis=1)
    return before >= c


def _numpy_svt1(x, rng, size, c=1, t=0.5, e1=sm.EPS / 2, scale=None):
    rho = _lap(rng, 1 / e1, (size, 1))
    nu = _lap(rng, scale if scale is not None else 2 * c / (sm.EPS - e1), (size, x.size))
    above = (x[None, :] + nu) >= (rho + t)
    out = above.astype(np.int64)
    out[_abort_after(above, c)] = -1
    return out


def _numpy_svt2(x, rng, size, c=1, t=1.0):
    e1 = sm.EPS / 2
    nu = _lap(rng, 2 * c / (sm.EPS - e1), (size, x.size))
    fresh = _lap(rng, c / e1, (size, x.size))
    rho = fresh[:, 0].copy()
    out = np.empty((size, x.size), dtype=np.int64)
    count = np.zeros(size, dtype=np.int64)
    for j in range(x.size):
        above = x[j] + nu[:, j] >= rho + t
        out[:, j] = np.where(count >= c, -1, above.astype(np.int64))
        count += above & (count < c)
        if j + 1 < x.size:
            rho = np.where(above, fresh[:, j + 1], rho)
    return out


def _numpy_svt3(x, rng, size, c=1, t=1.0):
    e1 = sm.EPS / 2
    rho = _lap(rng, 1 / e1, (size, 1))
    noisy = x[None, :] + _lap(rng, c / (sm.EPS - e1), (size, x.size))
    above = noisy >= rho + t
    out = np.where(above, noisy, -1000.0)
    out[_abort_after(above, c)] = -2000.0
    return out


def _numpy_numerical_svt(x, rng, size, c=2, t=1.0):
    rho1 = _lap(rng, 3 / sm.EPS, (size, 1))
    rho2 = _lap(rng, 6 * c / sm.EPS, (size, x.size))
    rho3 = _lap(rng, 3 * c / sm.EPS, (size, x.size))
    above = x[None, :] + rho2 >= t + rho1
    out = np.where(above, x[None, :] + rho3, 0.0)
    out[_abort_after(above, c)] = -1000.0
    return out


REFERENCES = [
    (sm.svt1, _numpy_svt1),
    (sm.svt2, _numpy_svt2),
    (sm.svt3, _numpy_svt3),
    (sm.svt4, lambda x, rng, size: _numpy_svt1(x, rng, size, t=1.0, e1=sm.EPS / 4, scale=1 / (sm.EPS - sm.EPS / 4))),
    (sm.numerical_svt, _numpy_numerical_svt),
    (lambda d, rng, size: sm.svt3(d, rng, size, c=3), lambda x, rng, size: _numpy_svt3(x, rng, size, c=3)),
]


@pytest.mark.parametrize("fast, reference", REFERENCES)
def test_svt_kernels_reproduce_the_numpy_mechanisms(fast, reference):
    for pair in list(statdp_pairs(10))[:6]:
        for seed in range(2):
            ours = fast(pair.d, np.random.default_rng(seed), 5000)
            theirs = reference(np.asarray(pair.d, dtype=np.float64), np.random.default_rng(seed), 5000)
            assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), pair.label


# ---- the learned views' feature map ----------------------------------------------------------


def _reference_features(fmap, table):
    """The feature map as it was written before (a list of blocks, concatenated)."""
    from dpverify._audit._learned import lowest_bit_exponent

    x = np.asarray(table, dtype=np.float64)
    x = x.reshape(-1, 1) if x.ndim == 1 else x
    x = np.nan_to_num(x, nan=0.0, posinf=1e300, neginf=-1e300)
    parts = [((x - np.asarray(fmap.mean)) / np.asarray(fmap.scale)).astype(np.float64)]
    for j, vals in fmap.onehot:
        parts.append((x[:, j:j + 1] == np.asarray(vals)[None, :]).astype(np.float64))
    if fmap.sorted_values:
        parts.append(((np.sort(x, axis=1) - float(np.mean(fmap.mean))) / float(np.mean(fmap.scale))).astype(np.float64))
    if fmap.value_counts:
        parts.append(np.stack([(x == v).sum(axis=1) for v in fmap.value_counts], axis=1).astype(np.float64))
    for j in fmap.bit_columns:
        raw = np.ascontiguousarray(np.asarray(table, dtype=np.float64).reshape(len(x), -1)[:, j])
        parts.append(np.unpackbits(raw.view(np.uint8).reshape(-1, 8), axis=1).astype(np.float64))
        res = np.clip(lowest_bit_exponent(raw), -1100, 1100).astype(np.float64)
        parts.append(((res + 60.0) / 20.0)[:, None])
        parts.append(np.stack([(res <= k) for k in (-56, -54, -53, -52, -51, -50)], axis=1).astype(np.float64))
    return np.concatenate(parts, axis=1)


@pytest.mark.parametrize("make", [
    lambda rng, n: sm.svt1(np.ones(10), rng, n),  # one-hot answers and value counts
    lambda rng, n: sm.svt3(np.ones(10), rng, n),  # sorted values of a mixed float vector
    lambda rng, n: sm.svt34_parallel(np.ones(10), rng, n),  # one-hot and sorted together
    lambda rng, n: sm.float_laplace(np.zeros(1), rng, n),  # IEEE-754 bits and residues of a scalar
    lambda rng, n: np.c_[sm.laplace(np.zeros(1), rng, n), np.where(rng.random(n) < 0.3, np.nan, 1.5)],  # NaN, bits
])
def test_feature_map_writes_the_same_features_as_the_concatenated_blocks(make):
    from dpverify._audit._learned import _feature_map

    rng = np.random.default_rng(10)
    fmap = _feature_map(make(rng, 4096), float_bits=True)
    table = make(rng, 3000)
    ours = fmap(table)
    assert ours.shape == (3000, len(fmap.names))
    assert np.array_equal(ours, _reference_features(fmap, table))


def test_signed_counts_kernel_matches_the_vote_matrix():
    """The numba kernel's (A, V) equal the numpy vote matrix's signed sums (codes vote 0, values
    +1 above / -1 not above their medians), codes and NaN included."""
    from dpverify._audit._score_kernels import signed_counts_rows
    from dpverify._audit._views import _votes

    rng = np.random.default_rng(4)
    x = rng.normal(size=(500, 6))
    x[rng.random(x.shape) < 0.3] = 0.0
    x[rng.random(x.shape) < 0.1] = -1000.0
    x[0, 0] = np.nan
    codes = ((0.0, -1000.0), (0.0,), (), (-1000.0,), (0.0, -1000.0), ())
    medians = np.array([0.1, -0.2, 0.0, 0.3, 0.0, 0.5])
    signs = np.array([1, -1, 0, 1, 1, -1])
    released, votes = signed_counts_rows(x, medians, signs, codes)
    is_value = np.ones_like(x)
    for j, c in enumerate(codes):
        is_value[np.isin(x[:, j], c), j] = 0.0
    assert np.array_equal(released, (is_value @ signs).astype(np.int64))
    assert np.array_equal(votes, (_votes(x, medians, codes) @ signs).astype(np.int64))
