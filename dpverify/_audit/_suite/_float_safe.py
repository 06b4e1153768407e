"""Planted bugs of the float-safe privatizers (``dpverify._noise``): what the suite must catch.

- ``bug.grid-ceil-rounding``: the float-safe CTL curator whose encoder rounds up before randomising,
  xhat = ceil(x g) + Bernoulli(x g - floor(x g)): off-grid values land in {1, ..., g + 1}, so the
  integer's sensitivity is g + 1 while the accountant charges g (the claim is the correct curator's
  ``GridDiscreteLaplace(g, g/eps)``). Run through the real encoder and sampler
  (``_protocol_kernels.randomize``), plus the bug's +1.

The other float-safe audits use the built-in targets: ``curator`` and ``dp-se`` with ``noise`` =
"float-safe" (the default) or "idealised", and ``grid``.
"""

from __future__ import annotations

import numpy as np

from ._registry import Built, _scalar_pair, _Table, _target
from ._targets import _check_unit


@_target("bug.grid-ceil-rounding", "PLANTED float-safe CTL whose encoder rounds ceil(x g) + Bernoulli(frac): sensitivity g + 1, charged g")
def _bug_grid_ceil_rounding(p: _Table, nb: _Table) -> Built:
    from ... import _protocol_kernels as pk
    from ..._bandits._ucb import LocalCurator

    eps = p.number("epsilon")
    grid = p.integer("grid", minimum=1, maximum=2**10)
    curator = LocalCurator("ctl", eps, grid=grid)
    pairs = _scalar_pair(nb, (0.0, 1.0 - 1.0 / (8 * grid)), integer=False)
    _check_unit(nb, pairs)
    scale = curator.scale

    def mechanism(reward: float, rng: np.random.Generator, size: int) -> np.ndarray:
        x = np.full(size, float(reward))
        y = pk.randomize(rng, x, grid, None, "discrete_laplace", scale=scale)
        xg = x * grid
        return (y + (xg != np.floor(xg))) / grid  # the bug: ceil, not floor, for an off-grid value

    return Built(mechanism, pairs, curator.guarantee(), "pure", note=f"{curator.describe()}, encoder rounding up")
