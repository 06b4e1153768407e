"""Float64 approximations of Rényi curves, used only to steer searches over alpha.

:meth:`accounting.RDP.from_function` accepts ``approx(alphas) -> values``: a vectorised float
evaluation that the conversions use to *locate* a good order; the value reported at that order is
then computed by the certified leaf (see :func:`accounting._core._conversions._float_search`). Nothing
here is certified, so nothing here may ever be reported. What matters is that an approximation is
accurate (so the search lands where the certified optimum is), fast (2049 orders at once), and
never raises: :func:`safe_approx` turns exceptions and non-finite values into a fallback curve
(a closed-form upper bound, monotone in alpha) or NaN, which the search ignores.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["logsumexp_rows", "safe_approx"]

ApproxFn = Callable[[np.ndarray], np.ndarray]


def safe_approx(fn: ApproxFn, fallback: ApproxFn | None = None, *, allow_inf: bool = False) -> ApproxFn:
    """Wrap ``fn`` so that it never raises and returns a float64 array shaped like ``alphas``.

    Entries that come out NaN (or infinite, unless ``allow_inf``) are replaced by ``fallback``
    (itself guarded) where one is given, else left NaN (ignored by the search).
    """

    def approx(alphas) -> np.ndarray:
        a = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
        try:
            with np.errstate(all="ignore"):
                out = np.array(np.broadcast_to(np.asarray(fn(a), dtype=np.float64), a.shape), dtype=np.float64)
        except Exception:  # noqa: BLE001 - an approximation must never raise
            out = np.full(a.shape, np.nan)
        bad = np.isnan(out) if allow_inf else ~np.isfinite(out)
        if fallback is not None and bad.any():
            try:
                with np.errstate(all="ignore"):
                    out[bad] = np.asarray(fallback(a[bad]), dtype=np.float64)
            except Exception:  # noqa: BLE001
                out[bad] = np.nan
        return out.reshape(np.shape(alphas)) if np.ndim(alphas) else out

    return approx


def logsumexp_rows(values: np.ndarray) -> np.ndarray:
    """log(sum(exp(values), axis=-1)), stable; rows that are all -inf give -inf."""
    top = np.max(values, axis=-1)
    safe_top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(all="ignore"):
        total = np.sum(np.exp(values - safe_top[..., None]), axis=-1)
        return np.where(np.isfinite(top), safe_top + np.log(total), top)
