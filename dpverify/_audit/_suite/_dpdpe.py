"""Audit targets for DP-DPE's float-safe vector privatizers, and a planted grid that breaks the sensitivity.

Registered into :data:`dpverify._audit._suite.TARGETS` through its ``_target`` decorator (imported
by the package's ``__init__``, beside the built-ins). The idealised float privatizers are the
target ``dpdpe``; its claim files are named ``*_idealised.toml``.

- ``dpdpe-float-safe``: ``CentralDiscreteGaussian`` / ``LocalDiscreteGaussian(eps, delta, B).release``,
  the code path DP-DPE runs by default (reports encoded on the integer grid B/g, exact discrete
  Gaussian noise, decoded to floats). The claim is the accountant's object for the mechanism as
  executed, ``protocol.mechanism(n, s)`` = ``DiscreteGaussianVector(sigma^2, 2g, s)``: zCDP (its
  default form), its exact Renyi curve, or its certified (eps, delta) profile (``approx``), the
  epsilon each phase is charged. Audited with the float-bit views on: the decoded release is an
  injective function of an integer vector, so its bits carry nothing more.
- ``bug.dpdpe-grid-off-lattice`` (planted): the same central privatizer on a grid whose box corners
  are *not* grid points: reports are scaled to [-c, c] with c = ``scale`` < 1 and randomly rounded,
  so a code reaches +-1 while the charge uses the unrounded sensitivity 2c per coordinate (the
  continuous Gaussian's zCDP at l2 sensitivity 2 c sqrt(s), ``accounting.Gaussian(sigma, 2 c sqrt(s))``).
  At c = 0.15, sigma^2 = 1/4, s = 2 the true delta at eps = 3 is 0.0233 (computed exactly from the
  two product laws, ``tests/test_linear_floatsafe.py``) against a claimed 0.00067.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._neighbours import NeighbourPair
from ._registry import Built, _Table, _target

__all__: list[str] = []


def _client0_pair(nb: _Table, n: int, s: int, bound: float) -> tuple[NeighbourPair, ...]:
    # client 0's report moves between the corners -B(1..1) and +B(1..1) (the worst case: the box
    # sensitivity 2g in every coordinate); the other clients report 0, a grid point (no rounding noise)
    lo, hi = nb.pair("values", [-bound, bound], lo=-bound, hi=bound)
    d = np.zeros((n, s))
    d_prime = d.copy()
    d[0, :], d_prime[0, :] = lo, hi
    return (NeighbourPair(d, d_prime, f"client 0's report {lo:g} -> {hi:g} in all {s} coordinates (other {n - 1} clients 0)"),)


def _vector_mechanism(release: Any, s: int):
    def mechanism(reports: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        out = np.stack([release(reports, rng) for _ in range(size)])
        return out[:, 0] if s == 1 else out

    return mechanism


def _privatizer(p: _Table, nb: _Table, kinds: dict[str, type]) -> tuple[Any, Any, tuple[NeighbourPair, ...], int, int, str]:
    """The parameters both DP-DPE privatizer targets read: (protocol, mechanism, pairs, n, s, model)."""
    model = p.choice("model", ("central", "local"))
    eps = p.number("epsilon", maximum=50.0)
    delta = p.number("delta", maximum=0.5)
    bound = p.number("reward_bound", 1.0)
    n = p.integer("n", minimum=1, maximum=2**16)
    s = p.integer("s", 1, minimum=1, maximum=64)
    path = p.choice("path", ("per-user", "aggregate"), "per-user")
    proto = kinds[model](eps, delta, bound)
    mechanism = _vector_mechanism(lambda reports, rng: proto.release(reports, rng, path=path), s)
    return proto, mechanism, _client0_pair(nb, n, s, bound), n, s, model


@_target("dpdpe-float-safe", "DP-DPE's float-safe vector privatizers (grid B/g, exact discrete Gaussian): CentralDiscreteGaussian / LocalDiscreteGaussian; DiscreteGaussianVector(sigma^2, 2g, s)", cost=15.0)
def _dpdpe_float_safe(p: _Table, nb: _Table) -> Built:
    from ..._bandits.linear._privatizers import CentralDiscreteGaussian, LocalDiscreteGaussian

    proto, mechanism, pairs, n, s, _ = _privatizer(p, nb, {"central": CentralDiscreteGaussian, "local": LocalDiscreteGaussian})
    return Built(mechanism, pairs, proto.mechanism(n, s), "zcdp", note=proto.charge_label(n, s))


@_target("dpdpe", "DP-DPE's idealised vector privatizers (the paper's float Gaussians; not DP in floating point): "
         "CentralGaussianIdealised / LocalGaussianIdealised; Gaussian(sigma, Delta)", cost=15.0)
def _dpdpe_idealised(p: _Table, nb: _Table) -> Built:
    from ..._bandits.linear._privatizers import CentralGaussianIdealised, LocalGaussianIdealised

    proto, mechanism, pairs, n, s, model = _privatizer(p, nb, {"central": CentralGaussianIdealised, "local": LocalGaussianIdealised})
    # client 0 between the corners -B(1..1) and +B(1..1): l2 distance 2 B sqrt(s), the sensitivity the guarantee is computed for
    return Built(mechanism, pairs, proto.guarantee(n, s), "zcdp", note=f"DP-DPE {model} Gaussian privatizer (idealised: not DP in floating point)")


def _off_lattice_privatizer(scale: float, sigma2: Fraction, bound: float) -> Any:
    """The planted bug's privatizer: ``CentralDiscreteGaussian`` whose grid scale c is a real number < 1."""
    from ..._bandits.linear._privatizers import CentralDiscreteGaussian, GridNoise

    class OffLatticeGrid(CentralDiscreteGaussian):
        def grid_noise(self, n: int, s: int) -> GridNoise:
            # the bug: +-B encode to +-c, off the integer lattice; the rounding then reaches +-1
            return GridNoise(scale, sigma2, math.inf)  # type: ignore[arg-type]

    return OffLatticeGrid(10.0, 0.25, bound)  # (eps, delta) unused: the grid and noise are fixed above


@_target("bug.dpdpe-grid-off-lattice", "PLANTED DP-DPE central privatizer on a grid whose box corners are off the lattice (scale c < 1): rounding reaches +-1, charged at the unrounded sensitivity 2c sqrt(s)", cost=15.0)
def _bug_grid_off_lattice(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    scale = p.number("scale", 0.15, maximum=0.99)
    sigma2 = p.rational("sigma2", "1/4")
    bound = p.number("reward_bound", 1.0)
    n = p.integer("n", minimum=1, maximum=2**16)
    s = p.integer("s", 2, minimum=1, maximum=64)
    proto = _off_lattice_privatizer(scale, sigma2, bound)
    mechanism = _vector_mechanism(lambda reports, rng: proto.release(reports, rng, path="per-user"), s)
    claimed = acc.Gaussian(math.sqrt(float(sigma2)), 2 * scale * math.sqrt(s))  # the unrounded l2 sensitivity
    return Built(mechanism, _client0_pair(nb, n, s, bound), claimed, "approx")
