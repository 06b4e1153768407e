"""Learned-event views: a classifier's score on features of the output, cut into threshold events.

DP-Sniper (Bichsel et al., IEEE S&P 2021) trains a probabilistic classifier to tell M(D) from
M(D') and thresholds its score: by Neyman-Pearson the optimal events for epsilon and for
delta(eps) are level sets of the likelihood ratio p(x)/q(x), and a well-trained classifier's
log-odds is a monotone estimate of it. Here the classifier's score becomes one more *view* (see
:mod:`._views`): its cells are bins of the score, cut at quantiles of the score on the training
sample, ordered, so the estimators' tail events {score >= t} are DP-Sniper's threshold attacks.

Validity: the classifier, its feature map and the bin edges are fitted on a *training* sample
drawn only for them (its own SeedSequence stream, :data:`TRAIN_STREAM`), independent of the
selection and bound samples. Conditional on the training sample the view is a fixed partition of
the output space, exactly like a pilot-fitted view, so every bound the estimators compute on it
keeps its stated level (the training draws are reported in the sample count).

Feature maps are chosen from the output type, on the training sample:

- ``raw``: the coordinates, standardised;
- ``onehot``: for discrete coordinates with 3..16 values (e.g. SVT's answers true/false/abort),
  one indicator per (coordinate, value);
- ``sorted``: for vector outputs, the sorted coordinates and, for discrete vectors, the count of
  each value (symmetric statistics such as "number of answers above the threshold");
- ``bits`` and ``residue``: for float coordinates (at most :data:`MAX_BIT_COLUMNS`), the 64-bit
  IEEE-754 pattern and the exponent of the lowest set bit (Mironov 2012: a textbook float Laplace
  leaks through its low-order bits).

The residue itself is also exposed as an exact discrete view (:class:`ResidueView`): under an
input whose noise is added to a shifted location, outputs near zero are multiples of a coarser
power of two than under the unshifted input, and an exact histogram of the lowest-set-bit exponent
finds outputs that one input (almost) never produces.

scikit-learn is optional (the ``learn`` extra): :func:`sklearn_available` tells the auditor
whether learned views can be built; without it the auditor falls back to the pilot views.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ._score_kernels import affine_rows
from ._views import DiscreteView, _column, _discrete_hist, _edges, _fmt, _is_discrete, _tally, single_thread_blas

__all__ = ["LearnedView", "ResidueView", "TRAIN_STREAM", "fit_learned_views", "lowest_bit_exponent", "shared_values",
           "sklearn_available"]

#: SeedSequence stream of the training sample (the pilot uses 2**31 - 1).
TRAIN_STREAM = 2**31 - 2
#: Float coordinates for which bit patterns are features (64 features each).
MAX_BIT_COLUMNS = 4
#: Feature-matrix entries scored per batch (32 MiB of float64).
SCORE_ENTRIES = 1 << 22
#: Output coordinates screened by logistic-regression weight for per-coordinate views.
SCREENED_COLUMNS = 4
#: The MLP is trained only on feature maps at most this wide (its cost grows with the width).
MAX_MLP_FEATURES = 256
#: Lowest-set-bit exponent given to 0 and to non-finite values (outside every finite exponent).
ZERO_RESIDUE = -2000
NONFINITE_RESIDUE = 2000


def sklearn_available() -> bool:
    """Whether scikit-learn can be imported (learned views need it)."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return False
    return True


def lowest_bit_exponent(values: np.ndarray) -> np.ndarray:
    """The exponent k of the lowest set bit of each float64: the largest k with x / 2^k an integer.

    Read from the IEEE-754 pattern: for a normal x = (2^52 + m) 2^(e - 1075), k = e - 1075 +
    trailing_zeros(2^52 + m); subnormals have the implicit bit 0 and exponent field 1. Zero maps to
    :data:`ZERO_RESIDUE`, infinities and NaN to :data:`NONFINITE_RESIDUE`.
    """
    x = np.ascontiguousarray(values, dtype=np.float64)
    bits = x.view(np.uint64)
    field = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    mant = bits & np.uint64((1 << 52) - 1)
    normal = field > 0
    mant = np.where(normal, mant | np.uint64(1 << 52), mant)
    low = mant & (~mant + np.uint64(1))  # the lowest set bit alone (0 for x = +-0)
    with np.errstate(divide="ignore"):
        tz = np.where(low > 0, np.frexp(low.astype(np.float64))[1] - 1, 0)  # exact: low is a power of two
    out = np.maximum(field, 1) - 1075 + tz
    out = np.where(mant == 0, ZERO_RESIDUE, out)
    return np.where(field == 0x7FF, NONFINITE_RESIDUE, out).astype(np.int64)


@dataclass(frozen=True)
class ResidueView(DiscreteView):
    """Exact histogram of the lowest-set-bit exponent of a float output (or of one coordinate)."""

    @property
    def name(self) -> str:
        target = "output" if self.column is None else f"output[{self.column}]"
        return f"lowest-set-bit exponent of {target}"

    @property
    def exact_outputs(self) -> bool:
        return False

    def count(self, table: np.ndarray, weights: np.ndarray | None = None) -> Any:
        """Histogram of the table's outputs (``weights``: row i stands for weights[i] outputs)."""
        return _discrete_hist(lowest_bit_exponent(_column(table, self.column)), weights)


# ------------------------------------------------------------------------------------------
# Feature maps


@dataclass(frozen=True)
class FeatureMap:
    """A fixed map from an output table to a float64 feature matrix (fitted on the training sample)."""

    width: int  # output coordinates (0 for scalar outputs)
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    onehot: tuple[tuple[int, tuple[float, ...]], ...]  # (coordinate, its values)
    sorted_values: bool
    value_counts: tuple[float, ...]  # values counted across coordinates (discrete vectors)
    bit_columns: tuple[int, ...]
    names: tuple[str, ...]

    def __call__(self, table: np.ndarray) -> np.ndarray:
        # each block is written into its columns of one preallocated matrix (no temporaries to
        # concatenate); every entry is the same elementwise float operation as before
        x = np.asarray(table, dtype=np.float64)
        x = x.reshape(-1, 1) if x.ndim == 1 else x
        x = np.nan_to_num(x, nan=0.0, posinf=1e300, neginf=-1e300)
        n, d = x.shape
        out = np.empty((n, len(self.names)), dtype=np.float64)
        np.subtract(x, np.asarray(self.mean), out=out[:, :d])
        np.divide(out[:, :d], np.asarray(self.scale), out=out[:, :d])
        col = d
        for j, vals in self.onehot:
            out[:, col:col + len(vals)] = x[:, j:j + 1] == np.asarray(vals)[None, :]
            col += len(vals)
        if self.sorted_values:
            block = out[:, col:col + d]
            block[...] = x
            block.sort(axis=1)
            np.subtract(block, float(np.mean(self.mean)), out=block)
            np.divide(block, float(np.mean(self.scale)), out=block)
            col += d
        for v in self.value_counts:
            out[:, col] = np.count_nonzero(x == v, axis=1)
            col += 1
        for j in self.bit_columns:
            raw = np.ascontiguousarray(np.asarray(table, dtype=np.float64).reshape(n, -1)[:, j])
            out[:, col:col + 64] = np.unpackbits(raw.view(np.uint8).reshape(-1, 8), axis=1)
            res = np.clip(lowest_bit_exponent(raw), -1100, 1100).astype(np.float64)
            out[:, col + 64] = (res + 60.0) / 20.0
            # indicators of the residue's low range, where the leaks of float noise live
            for i, k in enumerate((-56, -54, -53, -52, -51, -50)):
                out[:, col + 65 + i] = res <= k
            col += 71
        if col != out.shape[1]:  # pragma: no cover - the names are built from the same blocks
            raise AssertionError(f"feature map wrote {col} of {out.shape[1]} features")
        return out


def _feature_map(train: np.ndarray, float_bits: bool = True) -> FeatureMap:
    x = train.reshape(-1, 1) if train.ndim == 1 else train
    x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0, posinf=1e300, neginf=-1e300)
    width = 0 if train.ndim == 1 else x.shape[1]
    d = x.shape[1]
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    names = [f"x[{j}]" for j in range(d)]
    onehot = []
    discrete = []
    for j in range(d):
        if _is_discrete(x[:, j]):
            vals = np.unique(x[:, j])
            discrete.append(j)
            if 3 <= vals.size <= 16 and d * vals.size <= 4096:
                onehot.append((j, tuple(float(v) for v in vals)))
                names.extend(f"x[{j}]=={_fmt(v)}" for v in vals)
    sorted_values = 2 <= d <= 64 and len(discrete) < d
    if sorted_values:
        names.extend(f"sorted[{j}]" for j in range(d))
    counts: tuple[float, ...] = ()
    if d >= 2 and len(discrete) == d:
        vals = np.unique(x)
        if vals.size <= 16:
            counts = tuple(float(v) for v in vals)
            names.extend(f"#(x=={_fmt(v)})" for v in vals)
    floats = [j for j in range(d) if j not in discrete]
    bit_columns = tuple(floats) if float_bits and 0 < len(floats) <= MAX_BIT_COLUMNS else ()
    for j in bit_columns:
        names.extend([f"bit{b}(x[{j}])" for b in range(64)] + [f"residue(x[{j}])"] + [f"residue(x[{j}])<={k}" for k in (-56, -54, -53, -52, -51, -50)])
    return FeatureMap(width, tuple(map(float, mean)), tuple(map(float, scale)), tuple(onehot), sorted_values,
                      counts, bit_columns, tuple(names))


# ------------------------------------------------------------------------------------------
# The view


@dataclass(frozen=True, eq=False)
class LearnedView:
    """Bins of a trained classifier's log-odds score; cell i is [edges[i-1], edges[i])."""

    features: FeatureMap
    model: Any  # a fitted scikit-learn classifier (picklable)
    edges: tuple[float, ...]
    kind: str
    ordered: bool = True
    exact_outputs: bool = False

    @property
    def name(self) -> str:
        return f"{self.kind} score"

    def values(self, table: np.ndarray) -> np.ndarray:
        return shared_values((self,), table)[0]

    def count(self, table: np.ndarray, weights: np.ndarray | None = None) -> Any:
        """Histogram of the table's outputs (``weights``: row i stands for weights[i] outputs)."""
        return self.count_values(self.values(table), weights)

    def count_values(self, values: np.ndarray, weights: np.ndarray | None = None) -> Any:
        """:meth:`count` from the scores :meth:`values` gave (see :func:`shared_values`)."""
        cells = np.searchsorted(np.asarray(self.edges), values, side="right")
        counts = _tally(cells, weights, len(self.edges) + 1)
        return np.arange(len(counts), dtype=np.int64), counts

    def describe(self, keys: np.ndarray, mask: np.ndarray) -> str:
        edges = (-math.inf, *self.edges, math.inf)
        idx = keys[mask]
        if idx.size == 0:
            return f"{self.name} in {{}}"
        runs = np.split(idx, np.flatnonzero(np.diff(idx) != 1) + 1)
        parts = [f"[{_fmt(edges[r[0]])}, {_fmt(edges[r[-1] + 1])})" for r in runs]
        if len(parts) == 1 and edges[idx[-1] + 1] == math.inf:
            return f"{self.name} >= {_fmt(edges[idx[0]])}"
        if len(parts) == 1 and edges[idx[0]] == -math.inf:
            return f"{self.name} < {_fmt(edges[idx[-1] + 1])}"
        shown = " u ".join(parts[:4]) + (f" u ... ({len(parts)} intervals)" if len(parts) > 4 else "")
        return f"{self.name} in {shown}"


def shared_values(views: Sequence[LearnedView], table: np.ndarray) -> list[np.ndarray]:
    """Each view's scores on ``table``, the features computed once per batch for views that share
    one feature map (the logistic regression and the MLP of one fit do); batches of at most
    :data:`SCORE_ENTRIES` feature entries bound the memory."""
    fmap = views[0].features
    if any(v.features is not fmap for v in views):
        raise ValueError("shared_values: views with different feature maps")
    out = [np.empty(table.shape[0], dtype=np.float64) for _ in views]
    batch = max(256, SCORE_ENTRIES // max(len(fmap.names), 1))
    for start in range(0, table.shape[0], batch):
        stop = min(start + batch, table.shape[0])
        feats = fmap(table[start:stop])
        for v, o in zip(views, out):
            o[start:stop] = _log_odds(v.model, feats)
    return out


def _log_odds(model: Any, feats: np.ndarray) -> np.ndarray:
    """The classifier's log-odds of "drawn from D" for each row of features.

    The two classifiers fitted here are evaluated from their fitted weights row by row
    (:func:`._score_kernels.affine_rows`), not through scikit-learn's BLAS products, so that a row's
    score does not depend on the other rows of its batch (it decides the row's cell when the score
    equals an edge). Same formulas as scikit-learn's: the logistic regression's decision function
    x w + b; the MLP's ReLU layers, its logistic output p, and log(p) - log(1 - p) with p clipped
    to [1e-15, 1 - 1e-15] (as from ``predict_proba``). Other models go through scikit-learn.
    """
    from scipy.special import expit

    coef = getattr(model, "coef_", None)
    if coef is not None and np.ndim(coef) == 2 and np.shape(coef)[0] == 1 and hasattr(model, "intercept_"):
        return affine_rows(feats, np.asarray(coef).T, np.asarray(model.intercept_))[:, 0]
    layers = getattr(model, "coefs_", None)
    if (layers is not None and getattr(model, "activation", None) == "relu"
            and getattr(model, "out_activation_", None) == "logistic"):
        h = feats
        for w, b in zip(layers[:-1], model.intercepts_[:-1]):
            h = affine_rows(h, w, b, relu=True)
        p = expit(affine_rows(h, layers[-1], model.intercepts_[-1])[:, 0])
    elif hasattr(model, "decision_function"):
        return np.asarray(model.decision_function(feats), dtype=np.float64)
    else:
        p = np.asarray(model.predict_proba(feats)[:, 1], dtype=np.float64)
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return np.log(p) - np.log1p(-p)


def fit_learned_views(train_p: np.ndarray, train_q: np.ndarray, seed: int,
                      float_bits: bool = True) -> tuple[tuple[LearnedView, ...], tuple[int, ...]]:
    """Logistic regression and a small MLP trained to tell the two training samples apart.

    ``seed`` fixes the classifiers' own randomness (MLP initialisation, shuffling), so a run is
    reproducible. ``float_bits`` adds the bit-pattern and residue features of float coordinates.
    Bin edges are pilot-style quantiles of the score on the pooled training sample.
    Also returns the output coordinates with the largest standardised logistic-regression
    weights (at most :data:`SCREENED_COLUMNS`): per-coordinate views of these cover a leak in
    any coordinate of a wide vector, not only in the first few.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    pooled = np.concatenate([train_p, train_q], axis=0)
    fmap = _feature_map(pooled, float_bits)
    feats = fmap(pooled)
    labels = np.r_[np.ones(len(train_p)), np.zeros(len(train_q))]
    models: list[tuple[str, Any]] = [
        ("logistic regression", LogisticRegression(C=1.0, max_iter=100, tol=1e-3)),
    ]
    if feats.shape[1] <= MAX_MLP_FEATURES:
        models.append(("MLP(10,5)", MLPClassifier(hidden_layer_sizes=(10, 5), alpha=1e-4, learning_rate_init=3e-3,
                                                  max_iter=40, batch_size=512, random_state=seed % 2**32,
                                                  n_iter_no_change=5, tol=1e-5)))
    views = []
    for kind, model in models:
        with warnings.catch_warnings(), single_thread_blas():
            warnings.simplefilter("ignore")  # convergence warnings: an unconverged model is still a fixed score
            model.fit(feats, labels)
        probe = LearnedView(fmap, model, (0.0,), kind)
        views.append(LearnedView(fmap, model, _edges(probe.values(pooled)), kind))
    screened: tuple[int, ...] = ()
    if fmap.width >= 2:
        weight = np.abs(np.asarray(models[0][1].coef_).reshape(-1)[: fmap.width])
        top = np.argsort(-weight, kind="stable")[:SCREENED_COLUMNS]
        screened = tuple(int(j) for j in top if weight[j] > 0)
    return tuple(views), screened
