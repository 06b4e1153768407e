"""Planted bugs of the float-safe privatizers (``dpverify._executed._noise``): what the suite must catch.

- ``bug.grid-ceil-rounding``: the float-safe CTL curator whose encoder rounds up before randomising,
  xhat = ceil(x g) + Bernoulli(x g - floor(x g)): off-grid values land in {1, ..., g + 1}, so the
  integer's sensitivity is g + 1 while the accountant charges g (the claim is the correct curator's
  ``GridDiscreteLaplace(g, g/eps)``). Run through the real encoder and sampler
  (``_protocol_kernels.randomize``), plus the bug's +1.

- ``snapping``: Mironov's snapping mechanism (``dpverify._executed._noise_mechanisms.snapping_mechanism``), a
  real-valued release that is DP in doubles; claim ``accounting.Snapping(scale, bound)``. The query
  value is clamped to [-bound, bound] and the neighbours are any two values whose *clamped* values
  differ by at most 1 (the clamp is what bounds a query that is not bounded by construction).
- ``bug.snapping-no-clamp``: the same mechanism without its input clamp, on values beyond the bound:
  their distance is no longer 1, the claim (the correct mechanism's) is broken.

The other float-safe audits use the built-in targets: ``curator`` and ``dp-se`` with ``noise`` =
"float-safe" (the default) or "idealised", and ``grid``.
"""

from __future__ import annotations

import numpy as np

from ._registry import Built, _scalar_pair, _Table, _target
from ._targets import _check_unit


@_target("bug.grid-ceil-rounding", "PLANTED float-safe CTL whose encoder rounds ceil(x g) + Bernoulli(frac): sensitivity g + 1, charged g")
def _bug_grid_ceil_rounding(p: _Table, nb: _Table) -> Built:
    from ..._executed import _protocol_kernels as pk
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

    return Built(mechanism, pairs, curator.mechanism(), "pure", note=f"{curator.describe()}, encoder rounding up")


def _snapping(p: _Table, nb: _Table, *, clamp_input: bool) -> Built:
    from ..._executed._noise_mechanisms import snapping_mechanism

    scale = p.number("scale")
    bound = p.number("bound")
    mech = snapping_mechanism(scale, bound, clamp_input=clamp_input)
    pairs = _scalar_pair(nb, (0.0, 1.0) if clamp_input else (bound - 1.0, bound + 3.0), integer=False)
    for pair in pairs:
        clamped = [min(bound, max(-bound, float(v))) for v in (pair.d, pair.d_prime)]
        if abs(clamped[0] - clamped[1]) > 1:
            raise nb.error("values", f"values whose clamped values differ by at most 1 (sensitivity 1), got [{pair.d!r}, {pair.d_prime!r}]")

    def mechanism(value: float, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.asarray(mech.release(value, rng, size), dtype=np.float64)

    return Built(mechanism, pairs, mech.law, "pure", note=mech.describe())


@_target("snapping", "Mironov's snapping mechanism (dpverify snapping_mechanism: clamp, Laplace in doubles with ln correctly rounded, "
                     "round to a power of two, clamp); Snapping(scale, bound)", cost=20.0)
def _snapping_target(p: _Table, nb: _Table) -> Built:
    return _snapping(p, nb, clamp_input=True)


@_target("bug.snapping-no-clamp", "PLANTED snapping mechanism without its input clamp, on values beyond the bound", cost=20.0)
def _bug_snapping_no_clamp(p: _Table, nb: _Table) -> Built:
    return _snapping(p, nb, clamp_input=False)
