"""Planted bugs: the project's kernels and samplers called with a wrong parameter, or the real view
wrapped so that it leaks. Claim files under ``audits/planted/`` state the verdict the suite must
reach on each (``expect = "violated"``: caught; ``expect = "holds"``: must not be flagged).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..._executed._kinds import ProtocolKind
from ._registry import Built, _scalar_pair, _Table, _target
from ._targets import _check_unit, _curator_mechanism, _protocol, _reward_pair

# ---- planted bugs: the same kernels and samplers with the wrong parameter --------------------------


class _BiasedCoins:
    """A generator whose uniforms are skewed, ``random()`` returning U**k: every coin decided by
    comparing a uniform with a probability q lands heads with probability q**(1/k) instead of q.
    Other methods are the wrapped generator's."""

    def __init__(self, rng: np.random.Generator, k: float) -> None:
        self._rng = rng
        self._k = k

    def random(self, size: Any = None) -> Any:
        return self._rng.random(size) ** self._k

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rng, name)


def _batch_params(kind: ProtocolKind, p: _Table) -> tuple[Any, int, Any]:
    n = p.integer("n", minimum=1, maximum=2**16)
    proto = _protocol(kind, p)
    return proto, n, proto.parameters(n)


@_target("bug.dist-dp-polya-beta", "PLANTED Thm 1 with Polya parameter e^{-eps} instead of e^{-eps/g} (kernel given eps*g)")
def _bug_polya_beta(p: _Table, nb: _Table) -> Built:
    from ..._executed import _protocol_kernels as pk

    proto, n, bp = _batch_params(ProtocolKind.DIST_DP, p)

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.server_views(rng, rewards, bp.g, bp.m, size, "polya", eps=proto.epsilon * bp.g)

    return Built(mechanism, _reward_pair(nb, n), proto.mechanism(n), "pure")


@_target("bug.dist-rdp-skellam-variance", "PLANTED Thm 2 with per-user Skellam variance g/(n eps^2) instead of g^2/(n eps^2)")
def _bug_skellam_variance(p: _Table, nb: _Table) -> Built:
    from ..._executed import _protocol_kernels as pk

    proto, n, bp = _batch_params(ProtocolKind.DIST_RDP, p)
    wrong_eps = proto.epsilon * math.sqrt(bp.g)  # the kernel's g^2/(n eps'^2) is then g/(n eps^2)

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.server_views(rng, rewards, bp.g, bp.m, size, "skellam", eps=wrong_eps)

    return Built(mechanism, _reward_pair(nb, n), proto.mechanism(n), "rdp")


@_target("bug.dist-cdp-variance-over-n", "PLANTED Thm 4 with per-user discrete Gaussian variance g^2/(n^2 eps^2) (divided by n twice)", cost=8.0)
def _bug_dgauss_variance(p: _Table, nb: _Table) -> Built:
    from ..._executed import _protocol_kernels as pk

    proto, n, bp = _batch_params(ProtocolKind.DIST_CDP, p)
    root = math.isqrt(n)
    if root * root != n:
        raise p.error("n", f"this planted bug needs a perfect square n (exact rational eps*sqrt(n)), got {n}")
    wrong_eps = Fraction(proto.epsilon) * root

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.server_views(rng, rewards, bp.g, bp.m, size, "discrete_gaussian", eps=wrong_eps)

    return Built(mechanism, _reward_pair(nb, n), proto.mechanism(n), "rdp")


@_target("bug.cdp-noise-scale", "PLANTED CDP-SE whose central noise is Lap_Z(1/eps) instead of Lap_Z(g/eps) (g forgotten)")
def _bug_cdp_scale(p: _Table, nb: _Table) -> Built:
    from ..._executed import _protocol_kernels as pk

    proto, n, bp = _batch_params(ProtocolKind.CDP, p)
    wrong_scale = 1 / Fraction(proto.epsilon)

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.aggregate_views(rng, rewards, bp.g, bp.m, size, "discrete_laplace", scale=wrong_scale)

    return Built(mechanism, _reward_pair(nb, n), proto.mechanism(n), "pure")


@_target("bug.discrete-laplace-scale", "PLANTED discrete Laplace sampled at scale - 1 (claimed scale b, drawn b - 1)")
def _bug_dlap_scale(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._executed import _samplers

    scale = p.rational("scale")
    sensitivity = p.integer("sensitivity", 1)
    if scale <= 1:
        raise p.error("scale", f"the off-by-one bug needs a scale > 1, got {scale}")
    drawn = scale - 1

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.discrete_laplace(rng, drawn, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True),
                 acc.DiscreteLaplace(scale=scale, sensitivity=sensitivity), "pure")


@_target("bug.biased-coin", "PLANTED randomized response / CTB whose coins are biased (uniforms U**k fed to the real curator)")
def _bug_biased_coin(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._bandits._ucb import LocalCurator

    kind = p.choice("kind", ("rr", "ctb", "ctb-s"))
    eps = p.number("epsilon")
    k = p.number("skew", 2.0)
    curator = LocalCurator("ctb" if kind == "rr" else kind, eps)
    pairs = _scalar_pair(nb, (0, 1) if kind == "rr" else (0.0, 1.0), integer=kind == "rr")
    _check_unit(nb, pairs)
    guarantee = acc.RandomizedResponse(eps) if kind == "rr" else curator.mechanism()
    coins = None if k == 1.0 else (lambda rng: _BiasedCoins(rng, k))
    return Built(_curator_mechanism(curator, binary=True, coins=coins), pairs, guarantee, "pure")


@_target("bug.ctl-scale", "PLANTED CTL whose Laplace noise has scale eps instead of 1/eps (the curator built with 1/eps)")
def _bug_ctl_scale(p: _Table, nb: _Table) -> Built:
    from ..._bandits._ucb import LocalCurator

    eps = p.number("epsilon")
    claimed = LocalCurator("ctl", eps)
    pairs = _scalar_pair(nb, (0.0, 1.0), integer=False)
    _check_unit(nb, pairs)
    return Built(_curator_mechanism(LocalCurator("ctl", 1.0 / eps), binary=False), pairs, claimed.mechanism(), "pure")


@_target("bug.secagg-reveals-first", "PLANTED SecAgg that also reveals user 0's message: the view (yhat, y_1), encoded yhat*m + y_1", cost=20.0)
def _bug_secagg_reveals(p: _Table, nb: _Table) -> Built:
    from ..._executed import _protocol_kernels as pk

    proto, n, bp = _batch_params(ProtocolKind.DIST_DP, p)
    noise = proto.kind.per_user_noise
    eps = proto.epsilon

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        out = np.empty(size, dtype=np.int64)
        for j in range(size):
            y = pk.randomize(rng, rewards, bp.g, bp.m, noise, eps=eps)
            out[j] = pk.secure_aggregate(y, bp.m) * bp.m + int(y[0])
        return out

    return Built(mechanism, _reward_pair(nb, n), proto.mechanism(n), "pure")


@_target("bug.secagg-noise-dropped", "PLANTED Dist-DP-SE whose randomizer adds no noise (noise='none'); its exact law is declared")
def _bug_noise_dropped(p: _Table, nb: _Table) -> Built:
    from ..._executed import _protocol_kernels as pk

    proto, n, bp = _batch_params(ProtocolKind.DIST_DP, p)
    pairs = _reward_pair(nb, n)
    for pair in pairs:
        for x in (pair.d, pair.d_prime):
            if not np.all(x * bp.g == np.floor(x * bp.g)):
                raise nb.error("values", "the declared exact law needs rewards r with r*g integer (no rounding randomness)")

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.server_views(rng, rewards, bp.g, bp.m, size, "none")

    def log_pmf(rewards: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        # without noise and with r*g integer the view is the constant (g * sum r) mod m
        value = int(round(float(np.sum(rewards)) * bp.g)) % bp.m
        return np.where(np.asarray(outputs).reshape(-1) == value, 0.0, -math.inf)

    return Built(mechanism, pairs, proto.mechanism(n), "pure", log_pmf=log_pmf)

