"""Row-wise score kernels of the fitted views (thin numba kernels, ``cache=True``, no fastmath).

A view's cells are bins of a score cut at edges that are themselves scores of training or pilot
outputs, so on discrete outputs many rows score *exactly* an edge. The cell of such a row is then
decided by the last bit of its score, and BLAS products (numpy's ``@``, scikit-learn's
``decision_function`` and ``predict_proba``) give a row a score that depends on where it sits in
the batch (kernel tiles, remainder loops, threads): the same output could fall on either side of
an edge. These kernels compute each row's score from that row alone, with a fixed order of
summation (k = 0, 1, ... for every dot product), so a score is a function of the output: equal
outputs get equal scores, in any batch, at any position, which is also what lets the runner score
each distinct row of a chunk once (see :func:`._views.distinct_rows`).

- :func:`affine_rows`: ``x @ w + b`` row by row, optionally followed by ReLU (the layers of a
  logistic regression and of an MLP);
- :func:`gaussian_lr_rows`: ``0.5 (dq' Pq dq - dp' Pp dp) + c``, dp = x - mu_p, dq = x - mu_q
  (the log-likelihood ratio of two fitted Gaussians, Pp and Pq their precision matrices);
- :func:`signed_counts_rows`: per row, A = sum_j s_j [x_j is no code] and V = sum_j s_j v_j with
  v_j = +1 above, -1 not above the median m_j, 0 on a code (the signed-count and pattern/value
  views; integer sums, exact in any order).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["affine_rows", "gaussian_lr_rows", "signed_counts_rows"]


@numba.njit(cache=True)
def _affine(x: np.ndarray, w: np.ndarray, b: np.ndarray, relu: bool, out: np.ndarray) -> None:
    n, k = x.shape
    m = w.shape[1]
    for i in range(n):
        for j in range(m):
            out[i, j] = 0.0
        for t in range(k):
            xt = x[i, t]
            for j in range(m):  # independent accumulators: vectorised over j, each summed over t in order
                out[i, j] += xt * w[t, j]
        for j in range(m):
            v = out[i, j] + b[j]
            if relu and v < 0.0:
                v = 0.0
            out[i, j] = v


@numba.njit(cache=True)
def _quadratic(x: np.ndarray, mu: np.ndarray, prec: np.ndarray, i: int, dx: np.ndarray, y: np.ndarray) -> float:
    d = x.shape[1]
    for t in range(d):
        dx[t] = x[i, t] - mu[t]
    for j in range(d):
        y[j] = 0.0
    for t in range(d):
        v = dx[t]
        for j in range(d):
            y[j] += v * prec[t, j]
    total = 0.0
    for j in range(d):
        total += y[j] * dx[j]
    return total


@numba.njit(cache=True)
def _gaussian_lr(x: np.ndarray, mu_p: np.ndarray, prec_p: np.ndarray, mu_q: np.ndarray, prec_q: np.ndarray,
                 const: float, out: np.ndarray) -> None:
    d = x.shape[1]
    dx = np.empty(d)
    y = np.empty(d)
    for i in range(x.shape[0]):
        qp = _quadratic(x, mu_p, prec_p, i, dx, y)
        qq = _quadratic(x, mu_q, prec_q, i, dx, y)
        out[i] = 0.5 * (qq - qp) + const


def affine_rows(x: np.ndarray, w: np.ndarray, b: np.ndarray, relu: bool = False) -> np.ndarray:
    """``x @ w + b`` (then ``max(., 0)`` if ``relu``), each row from that row alone."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64).reshape(x.shape[1], -1)
    b = np.ascontiguousarray(b, dtype=np.float64).reshape(-1)
    if b.shape[0] != w.shape[1]:
        raise ValueError(f"affine_rows: bias of length {b.shape[0]} for {w.shape[1]} outputs")
    out = np.empty((x.shape[0], w.shape[1]))
    _affine(x, w, b, bool(relu), out)
    return out


def gaussian_lr_rows(x: np.ndarray, mu_p: np.ndarray, prec_p: np.ndarray, mu_q: np.ndarray, prec_q: np.ndarray,
                     const: float) -> np.ndarray:
    """Per row ``0.5 * ((x - mu_q)' prec_q (x - mu_q) - (x - mu_p)' prec_p (x - mu_p)) + const``."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    d = x.shape[1]
    arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in (mu_p, prec_p, mu_q, prec_q)]
    if any(a.shape != s for a, s in zip(arrays, ((d,), (d, d), (d,), (d, d)))):
        raise ValueError(f"gaussian_lr_rows: means and precisions must have shapes ({d},) and ({d}, {d})")
    out = np.empty(x.shape[0])
    _gaussian_lr(x, arrays[0], arrays[1], arrays[2], arrays[3], float(const), out)
    return out


@numba.njit(cache=True)
def _signed_counts(x: np.ndarray, medians: np.ndarray, codes: np.ndarray, n_codes: np.ndarray, signs: np.ndarray,
                   released: np.ndarray, votes: np.ndarray) -> None:
    n, d = x.shape
    for i in range(n):
        a = 0
        v = 0
        for j in range(d):
            s = signs[j]
            if s == 0:
                continue
            xij = x[i, j]
            coded = False
            for c in range(n_codes[j]):
                if xij == codes[j, c]:
                    coded = True
                    break
            if coded:
                continue
            a += s
            v += s if xij > medians[j] else -s
        released[i] = a
        votes[i] = v


def signed_counts_rows(x: np.ndarray, medians, signs, codes) -> tuple[np.ndarray, np.ndarray]:
    """(A, V) per row: signed counts of the non-code coordinates and of their sides of the medians."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    d = x.shape[1]
    width = max([len(c) for c in codes] + [1])
    table = np.zeros((d, width))
    counts = np.zeros(d, dtype=np.int64)
    for j, c in enumerate(codes):
        table[j, :len(c)] = c
        counts[j] = len(c)
    released = np.empty(x.shape[0], dtype=np.int64)
    votes = np.empty(x.shape[0], dtype=np.int64)
    _signed_counts(x, np.ascontiguousarray(medians, dtype=np.float64), table, counts,
                   np.ascontiguousarray(signs, dtype=np.int64), released, votes)
    return released, votes
