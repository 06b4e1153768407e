"""Audit targets for the shuffle model: SDP-DPE's server view, and two planted broken shufflers.

Registered into :data:`dpverify._audit._suite.TARGETS` through its ``_target`` decorator (imported
by the package's ``__init__``, beside the built-in targets). The view audited is what the server of SDP-DPE receives
(``dpverify._bandits.linear._shuffle``): for one coordinate, the shuffled multiset of n (g + k)
bit messages (each client's g unary randomised-rounding bits and k fair coins), represented by
its histogram, i.e. the number of 1-bits (the number of messages is public). Its claim is the
accountant's ``Binomial(n k, 1/2, sensitivity g)``, audited in the (eps, delta) form.

Planted bugs (the claim stays the correct protocol's):

- ``bug.shuffler-keeps-order``: the "shuffler" forwards the messages in arrival order, so the
  first message is client 0's first data bit; the view (count, first message) is encoded
  count*2 + bit. Client 0's report at -B vs +B makes that bit 0 vs 1 deterministically: delta near 1.
- ``bug.shuffle-reuses-shares``: client 0 reuses its first data bit as its k noise shares (copies
  instead of fresh coins), so its contribution to the count can move by g + k: sensitivity g + k.
"""

from __future__ import annotations

import numpy as np

from .._neighbours import NeighbourPair
from ._registry import Built, _Table, _target

__all__: list[str] = []


def _params(p: _Table) -> tuple[int, int, int, float]:
    n = p.integer("n", minimum=1, maximum=4096)
    k = p.integer("noise_bits", minimum=1, maximum=4096)
    g = p.integer("precision", 1, minimum=1, maximum=256)
    bound = p.number("reward_bound", 1.0)
    return n, k, g, bound


def _client0_pair(nb: _Table, n: int, bound: float) -> tuple[NeighbourPair, ...]:
    lo, hi = nb.pair("values", [-bound, bound], lo=-bound, hi=bound)
    # default: the other clients at -B, whose bits are then deterministic (the worst case: no extra noise)
    others = nb.number("others", -bound, positive=False, minimum=-bound, maximum=bound)
    d = np.full(n, float(others))
    d_prime = d.copy()
    d[0], d_prime[0] = lo, hi
    return (NeighbourPair(d, d_prime, f"client 0's report {lo:g} -> {hi:g} (other {n - 1} clients {others:g})"),)


def _messages(reports: np.ndarray, rng: np.random.Generator, size: int, g: int, k: int, bound: float, *, reuse: bool = False) -> np.ndarray:
    """(size, n (g + k)) bit messages in arrival order: client by client, g unary data bits then k coins (R of SDP-DPE)."""
    scaled = (np.asarray(reports, dtype=np.float64) + bound) / (2.0 * bound) * g
    floor = np.floor(scaled)
    n = scaled.size
    xhat = (floor + (rng.random((size, n)) < scaled - floor)).astype(np.int64)  # randomised rounding to {0..g}
    data = (np.arange(g)[None, None, :] < xhat[:, :, None]).astype(np.int8)
    coins = rng.integers(0, 2, size=(size, n, k), dtype=np.int8)
    if reuse:  # the planted bug: client 0's noise shares are copies of its first data bit
        coins[:, 0, :] = data[:, 0, :1]
    return np.concatenate([data, coins], axis=2).reshape(size, n * (g + k))


def _guarantee(n: int, k: int, g: int):
    import accounting as acc

    return acc.Binomial(n * k, 0.5, g)


@_target("sdp-dpe", "SDP-DPE's shuffled bit messages for one coordinate (Cheu et al. 2021 vector summation), histogram view; Binomial(n k, 1/2, g)", cost=4.0)
def _sdp_dpe(p: _Table, nb: _Table) -> Built:
    n, k, g, bound = _params(p)

    def mechanism(reports: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        shuffled = rng.permuted(_messages(reports, rng, size, g, k, bound), axis=1)  # S: a uniform permutation per draw
        return shuffled.sum(axis=1, dtype=np.int64)  # the multiset's histogram: the number of 1-bits

    return Built(mechanism, _client0_pair(nb, n, bound), _guarantee(n, k, g), "approx", note="SDP-DPE shuffled bit messages, one coordinate")


@_target("bug.shuffler-keeps-order", "PLANTED shuffler that keeps arrival order: the view (count, first message = client 0's data bit)", cost=4.0)
def _bug_keeps_order(p: _Table, nb: _Table) -> Built:
    n, k, g, bound = _params(p)

    def mechanism(reports: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        messages = _messages(reports, rng, size, g, k, bound)  # no permutation
        return messages.sum(axis=1, dtype=np.int64) * 2 + messages[:, 0]

    return Built(mechanism, _client0_pair(nb, n, bound), _guarantee(n, k, g), "approx")


@_target("bug.shuffle-reuses-shares", "PLANTED SDP-DPE whose client 0 reuses its data bit as its k noise shares (sensitivity k + 1)", cost=4.0)
def _bug_reuses_shares(p: _Table, nb: _Table) -> Built:
    n, k, g, bound = _params(p)

    def mechanism(reports: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        shuffled = rng.permuted(_messages(reports, rng, size, g, k, bound, reuse=True), axis=1)
        return shuffled.sum(axis=1, dtype=np.int64)

    return Built(mechanism, _client0_pair(nb, n, bound), _guarantee(n, k, g), "approx")
