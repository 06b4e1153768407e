"""Users' mechanisms, written with plain numpy: correct ones and ones that leak more than claimed.

- :func:`clipped_sum`: the sum of records clipped to [0, bound] plus Laplace(bound / epsilon)
  noise: epsilon-DP when one record is replaced (the sum moves by at most ``bound``).
- :func:`clipped_sum_forgot_bound`: the same with Laplace(1 / epsilon): the sensitivity
  ``bound`` is forgotten, so it is (bound * epsilon)-DP, not epsilon-DP.
- :func:`noisy_max`: report noisy max over counting queries with Laplace(2 / epsilon) noise:
  epsilon-DP for queries of sensitivity 1 (Dwork & Roth 2014, Claim 3.9, with the factor 2 that
  covers non-monotone neighbours).
- :func:`noisy_max_scale_halved`: the same with noise Laplace(1 / (2 epsilon)): the scale divided
  by 4, which leaks more than epsilon on StatDP's neighbouring query vectors.
"""

from __future__ import annotations

import numpy as np


def clipped_sum(data, rng, size, epsilon=1.0, bound=1.0):
    total = float(np.clip(np.asarray(data, dtype=float), 0.0, bound).sum())
    return total + rng.laplace(0.0, bound / epsilon, size=size)


def clipped_sum_forgot_bound(data, rng, size, epsilon=1.0, bound=1.0):
    total = float(np.clip(np.asarray(data, dtype=float), 0.0, bound).sum())
    return total + rng.laplace(0.0, 1.0 / epsilon, size=size)


def noisy_max(data, rng, size, epsilon=1.0):
    answers = np.asarray(data, dtype=float)
    noisy = answers + rng.laplace(0.0, 2.0 / epsilon, size=(size, answers.size))
    return np.argmax(noisy, axis=1)


def noisy_max_scale_halved(data, rng, size, epsilon=1.0):
    answers = np.asarray(data, dtype=float)
    noisy = answers + rng.laplace(0.0, 1.0 / (2.0 * epsilon), size=(size, answers.size))
    return np.argmax(noisy, axis=1)


def two_arguments(data, rng):
    """Not a gate mechanism: no ``size`` argument."""
    return rng.random(10)


NOT_CALLABLE = 3


def gaussian_count(data, rng, size, sigma=2.0):
    """A count plus N(0, sigma^2): rho-zCDP with rho = 1 / (2 sigma^2); RDP eps(alpha) = alpha rho."""
    return float(np.sum(data)) + rng.normal(0.0, sigma, size=size)
