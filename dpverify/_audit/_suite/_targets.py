"""The built-in targets of the audit suite: the project's samplers, curators, protocols, privatizers.

Every target runs the project's own code: the samplers of :mod:`dpverify._executed._samplers`, the
protocols' ``server_views`` / ``messages`` / ``analyze`` / ``estimate_sum``, the LDP curators'
``respond``, DP-DPE's ``release``; the claim is the matching ``accounting`` guarantee.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..._executed._kinds import ProtocolKind
from .._neighbours import NeighbourPair
from ._registry import Built, _scalar_pair, _Table, _target

# ---- samplers with their accountant guarantee ---------------------------------------------------


@_target("discrete-laplace", "integer query + Lap_Z(scale) (dpverify.discrete_laplace); DiscreteLaplace(scale, sensitivity)")
def _discrete_laplace(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._executed import _samplers

    scale = p.rational("scale")
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.DiscreteLaplace(scale=scale, sensitivity=sensitivity)

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.discrete_laplace(rng, scale, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "pure")


@_target("polya-difference-sum", "integer query + the sum of n per-user Polya(1/n, e^{-1/b}) differences; PolyaDifferenceSum(n, b)", cost=4.0)
def _polya_sum(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._executed import _samplers

    n = p.integer("n", minimum=1, maximum=4096)
    scale = p.rational("scale")
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.PolyaDifferenceSum(n=n, scale=scale, sensitivity=sensitivity)
    beta = math.exp(-1.0 / float(scale))

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.polya_difference(rng, 1.0 / n, beta, size=(size, n)).sum(axis=1)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "pure")


@_target("discrete-gaussian", "integer query + N_Z(0, sigma^2) (dpverify.discrete_gaussian); DiscreteGaussian(sigma, sensitivity)", cost=2.0)
def _discrete_gaussian(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._executed import _samplers

    sigma = p.rational("sigma")
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.DiscreteGaussian(sigma=sigma, sensitivity=sensitivity)
    sigma2 = sigma * sigma

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.discrete_gaussian(rng, sigma2, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "zcdp")


@_target("skellam", "integer query + Sk(0, variance) (dpverify.skellam); Skellam(variance, sensitivity)")
def _skellam(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._executed import _samplers

    variance = p.rational("variance")
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.Skellam(variance=variance, l1_sensitivity=sensitivity, l2_sensitivity=sensitivity)

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.skellam(rng, variance, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "rdp")


@_target("binomial", "integer query + Bin(trials, p) (dpverify.binomial); Binomial(trials, p, sensitivity): (eps, delta) only")
def _binomial(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._executed import _samplers

    trials = p.integer("trials", minimum=1, maximum=10**6)
    prob = p.number("p", maximum=1.0)
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.Binomial(trials=trials, p=prob, sensitivity=sensitivity)

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.binomial(rng, trials, prob, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "approx")


@_target("laplace", "real query + continuous Laplace(scale) (dpverify.laplace, the float baseline); Laplace(scale, sensitivity)")
def _laplace(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._executed import _samplers

    scale = p.number("scale")
    sensitivity = p.number("sensitivity", 1.0)
    guarantee = acc.Laplace(scale=scale, sensitivity=sensitivity)

    def mechanism(data: float, rng: np.random.Generator, size: int) -> np.ndarray:
        # the textbook float mechanism, an audit target only (claims *_idealised.toml, planted/float_laplace_bits.toml)
        return data + _samplers.laplace(rng, scale, size=size)

    return Built(mechanism, _scalar_pair(nb, (0.0, sensitivity), integer=False), guarantee, "pure")


@_target("gaussian", "real query + continuous N(0, sigma^2) (dpverify.gaussian, the float baseline); Gaussian(sigma, sensitivity)")
def _gaussian(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._executed import _samplers

    sigma = p.number("sigma")
    sensitivity = p.number("sensitivity", 1.0)
    guarantee = acc.Gaussian(sigma=sigma, sensitivity=sensitivity)

    def mechanism(data: float, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.gaussian(rng, sigma, size=size)

    return Built(mechanism, _scalar_pair(nb, (0.0, sensitivity), integer=False), guarantee, "zcdp")


# ---- the LDP curators of Ren et al. (dpverify._bandits._ucb.LocalCurator) -------------------------


def _curator_mechanism(curator: Any, *, binary: bool, coins: Callable[[Any], Any] | None = None) -> Callable[..., np.ndarray]:
    """The curator's ``respond`` as a mechanism; ``coins`` (planted bugs only) wraps the generator."""

    def mechanism(reward: float, rng: np.random.Generator, size: int) -> np.ndarray:
        source = rng if coins is None else coins(rng)
        out = curator.respond(np.full(size, float(reward)), source)
        return out.astype(np.int64) if binary else out

    return mechanism


@_target("randomized-response", "binary randomized response: the CTB curator on bits (LocalCurator('ctb').respond); RandomizedResponse(eps)")
def _randomized_response(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from ..._bandits._ucb import LocalCurator

    eps = p.number("epsilon")
    curator = LocalCurator("ctb", eps)
    pairs = _scalar_pair(nb, (0, 1), integer=True)
    _check_unit(nb, pairs)
    return Built(_curator_mechanism(curator, binary=True), pairs, acc.RandomizedResponse(eps), "pure")


@_target("curator", "an LDP curator of Ren et al. (ctl, ctb, ctl-s, ctb-s: LocalCurator.respond; CTL float-safe or idealised); its mechanism()")
def _curator(p: _Table, nb: _Table) -> Built:
    from ..._executed import _noise
    from ..._bandits._ucb import LocalCurator

    kind = p.choice("kind", ("ctl", "ctb", "ctl-s", "ctb-s"))
    eps = p.number("epsilon")
    noise = p.choice("noise", _noise.NOISE_CHOICES, _noise.DEFAULT_NOISE)
    grid = p.integer("grid", _noise.FLOAT_SAFE_GRID, minimum=1, maximum=2**20)
    curator = LocalCurator(kind, eps, noise=noise, grid=grid)
    pairs = _scalar_pair(nb, (0.0, 1.0), integer=False)
    _check_unit(nb, pairs)
    return Built(_curator_mechanism(curator, binary=curator.kind.binary), pairs, curator.mechanism(), "pure")


def _check_unit(nb: _Table, pairs: Sequence[NeighbourPair]) -> None:
    for pair in pairs:
        if not (0 <= pair.d <= 1 and 0 <= pair.d_prime <= 1):
            raise nb.error("values", f"rewards must lie in [0, 1], got [{pair.d!r}, {pair.d_prime!r}]")


# ---- the ICLR 2023 batch protocols (dpverify._executed._protocols) ------------------------------------------



def _protocol(kind: ProtocolKind, p: _Table, *, underflow: bool = True) -> Any:
    from ..._executed import _protocols as P

    eps = p.number("epsilon", maximum=10.0)
    conf = p.number("p", 0.1, maximum=0.999)
    s = p.number("s", 1.0, minimum=1.0, maximum=100.0) if kind.scaled else 1.0
    return P.DistributedProtocol(kind, eps, conf, s, underflow_correction=underflow)


def _reward_pair(nb: _Table, n: int) -> tuple[NeighbourPair, ...]:
    """Reward vectors of n users differing in user 0's reward (0 vs 1: the worst case for the sum)."""
    v, v_prime = nb.pair("values", [0.0, 1.0], lo=0.0, hi=1.0)
    others = nb.number("others", 0.0, positive=False, minimum=0.0, maximum=1.0)
    d = np.full(n, others)
    d_prime = d.copy()
    d[0], d_prime[0] = v, v_prime
    label = f"user 0: {v:g} -> {v_prime:g} (other {n - 1} users {others:g})"
    return (NeighbourPair(d, d_prime, label),)


def _make_protocol_target(kind: ProtocolKind) -> None:
    summaries = {
        ProtocolKind.DIST_DP: "Dist-DP-SE (Thm 1): Polya noise per user, SecAgg; the server's view (server_views) or A's output",
        ProtocolKind.DIST_RDP: "Dist-RDP-SE (Thm 2): Skellam noise per user, SecAgg; the server's view or A's output",
        ProtocolKind.DIST_CDP: "Dist-CDP-SE (Thm 4): discrete Gaussian noise per user, SecAgg; the server's view or A's output",
        ProtocolKind.CDP: "CDP-SE (Thm 5): the analyzer adds one Lap_Z(g/eps); its noisy view or A's output",
        ProtocolKind.LDP: "LDP-SE (Thm 6): every user adds Lap_Z(g/eps); the SecAgg view, or each message (output = 'messages')",
    }

    def builder(p: _Table, nb: _Table) -> Built:
        n = p.integer("n", minimum=1, maximum=2**16)
        outputs = ("view", "analyzer", "messages") if kind.reveals_messages else ("view", "analyzer")
        output = p.choice("output", outputs, "view")
        underflow = p.boolean("underflow_correction", True) if kind.distributed else True
        paths = ("per-user", "aggregate") if kind.aggregate_path else ("per-user",)
        path = p.choice("path", paths, "per-user")
        proto = _protocol(kind, p, underflow=underflow)
        pairs = _reward_pair(nb, n)
        guarantee = proto.mechanism(n)
        if output == "messages":
            def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
                return np.stack([proto.messages(rewards, rng) for _ in range(size)])
        elif output == "analyzer":
            def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
                return np.asarray(proto.analyze(proto.server_views(rewards, rng, size, path=path), rewards.size))
        else:
            def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
                return proto.server_views(rewards, rng, size, path=path)
        default = "pure" if kind.pure else "rdp"
        return Built(mechanism, pairs, guarantee, default, note=proto.describe())

    _target(kind.value, summaries[kind], cost={ProtocolKind.LDP: 30.0, ProtocolKind.DIST_CDP: 8.0}.get(kind, 2.0))(builder)


for _kind in ProtocolKind:
    _make_protocol_target(_kind)


@_target("dp-se", "DP-SE's privatizer (Sajed & Sheffet; estimate_sum): float-safe grid + exact Lap_Z, GridDiscreteLaplace(g, g/eps); "
                 "or noise = 'idealised': reward sum + float Laplace(1/eps), Laplace(1/eps, 1)", cost=10.0)
def _dp_se(p: _Table, nb: _Table) -> Built:
    from ..._executed import _noise
    from ..._executed import _protocols as P

    eps = p.number("epsilon", maximum=10.0)
    n = p.integer("n", minimum=1, maximum=2**16)
    noise = p.choice("noise", _noise.NOISE_CHOICES, _noise.DEFAULT_NOISE)
    grid = p.integer("grid", _noise.FLOAT_SAFE_GRID, minimum=1, maximum=2**20)
    proto = P.CentralLaplaceIdealised(eps) if _noise.check_noise(noise).idealised else P.CentralGridLaplaceProtocol(eps, grid)
    pairs = _reward_pair(nb, n)

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return proto.estimate_sums(rewards, rng, size)

    return Built(mechanism, pairs, proto.mechanism(n), "pure", note=proto.describe())

