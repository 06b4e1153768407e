"""Binary randomized response and the CTB Bernoulli curator (Ren et al. 2020).

Randomized response RR(eps): report the true bit with probability p = e^eps/(1 + e^eps).
The neighbouring pair is P = Bernoulli(p), Q = Bernoulli(1 - p), and

    D_alpha = log( p^alpha (1-p)^{1-alpha} + (1-p)^alpha p^{1-alpha} ) / (alpha - 1)
            = log( (e^{alpha eps} + e^{-(alpha-1) eps}) / (1 + e^eps) ) / (alpha - 1)
            = eps + ( log1p(e^{-(2alpha-1) eps}) - log1p(e^{-eps}) ) / (alpha - 1),

the last form being the one evaluated (all terms O(1), tight at any alpha). Both directions
agree (swap the labels).
Its zCDP value sup_alpha D_alpha/alpha = eps tanh(eps/2) (the alpha -> 1 limit, the KL divergence).

CTB(eps) maps a reward r in [0, 1] to Bernoulli((r e^eps + 1 - r)/(1 + e^eps)); the output
probability is affine in r, so the worst neighbouring pair is r = 0 against r = 1, which is
exactly RR(eps): the same guarantees.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb

from .._core._certified import exact
from .._core._guarantees import RDP, PureDP, ZCDP
from .._core._pairs import IntegerPair
from ._approx import safe_approx
from .._core._mechanism_base import Mechanism, alpha_guard_bits, check_scale, guarded, half_square_up

__all__ = ["BernoulliCurator", "BinaryPair", "RandomizedResponse", "rr_rdp_approx"]


def _rr_rdp_ball(epsilon, alpha: arb) -> arb:
    """D_alpha of RR(eps) as a ball. From (e^{alpha eps} + e^{-(alpha-1)eps})/(1 + e^eps)
        = e^{(alpha-1) eps} (1 + e^{-(2alpha-1) eps}) / (1 + e^{-eps}):
    D_alpha = eps + (log1p(e^{-(2alpha-1)eps}) - log1p(e^{-eps})) / (alpha - 1).
    """
    with guarded(alpha_guard_bits(alpha)):
        eps = exact(epsilon)
        result = eps + ((-(2 * alpha - 1) * eps).exp().log1p() - (-eps).exp().log1p()) / (alpha - 1)
    return +result


def rr_rdp_approx(epsilon: float, alphas: np.ndarray) -> np.ndarray:
    """Float form of D_alpha of RR(eps) (search only). With x0 = eps, x1 = (2alpha-1) eps,
    log1p(e^{-x1}) - log1p(e^{-x0}) = log1p(e^{-eps} expm1(-2(alpha-1) eps) / (1 + e^{-eps})),
    which keeps its relative accuracy as alpha -> 1."""
    am1 = alphas - 1.0
    e = np.exp(-epsilon)
    return epsilon + np.log1p(e * np.expm1(-2 * am1 * epsilon) / (1 + e)) / am1


@dataclass(frozen=True)
class BinaryPair(IntegerPair):
    """P = Bernoulli(e^eps/(1+e^eps)), Q = Bernoulli(1/(1+e^eps)) on {0, 1}, log-masses in Arb.

    (The probabilities are irrational, so this is not a :class:`FinitePair` of Fractions; the
    contract is the same: certified log-masses, exact tails.)
    """

    epsilon: float | int | Fraction

    def __post_init__(self) -> None:
        check_scale("epsilon", self.epsilon)

    def _log_keep(self) -> arb:  # log(e^eps/(1+e^eps)) = -log1p(e^{-eps})
        return -((-exact(self.epsilon)).exp().log1p())

    def _log_flip(self) -> arb:  # log(1/(1+e^eps)) = -eps - log1p(e^{-eps})
        return -exact(self.epsilon) - (-exact(self.epsilon)).exp().log1p()

    def log_p(self, k: int) -> arb:
        if k == 1:
            return self._log_keep()
        if k == 0:
            return self._log_flip()
        return arb.neg_inf()

    def log_q(self, k: int) -> arb:
        if k == 1:
            return self._log_flip()
        if k == 0:
            return self._log_keep()
        return arb.neg_inf()

    def _tail(self, lo: int, hi: int, log_mass) -> arb:
        total = arb(0)
        for k in (0, 1):
            if not (lo <= k <= hi):
                total += log_mass(k).exp()
        return total

    def tail_p(self, lo: int, hi: int) -> arb:
        return self._tail(lo, hi, self.log_p)

    def tail_q(self, lo: int, hi: int) -> arb:
        return self._tail(lo, hi, self.log_q)

    def support(self) -> tuple[int, int]:
        return 0, 1


@dataclass(frozen=True)
class RandomizedResponse(Mechanism):
    """Binary randomized response: keep the bit with probability e^eps/(1+e^eps); pure eps-DP."""

    epsilon: float | int | Fraction

    family = "randomized-response"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        check_scale("epsilon", self.epsilon)

    def rdp(self) -> RDP:
        eps = self.epsilon
        eps_f = float(Fraction(eps))
        return RDP.from_function(
            lambda alpha: _rr_rdp_ball(eps, alpha),
            f"{type(self).__name__}(eps={eps}) exact",
            approx=safe_approx(lambda alphas: rr_rdp_approx(eps_f, alphas), lambda alphas: np.full(alphas.shape, eps_f)),
        )

    def pure(self) -> PureDP:
        return PureDP(self.epsilon)

    def zcdp(self) -> ZCDP:
        """eps tanh(eps/2): tight (the KL divergence, the alpha -> 1 limit of D_alpha / alpha)."""
        return self.pure().to_zcdp()

    def closed_forms(self) -> dict:
        return {
            "pure_eps": self.pure(),
            "mironov_2017_pure_to_rdp": RDP.pure(self.pure().epsilon),
            "bun_steinke_2016_eps2_over_2": ZCDP(half_square_up(self.epsilon)),
        }

    def output_pair(self) -> BinaryPair:
        return BinaryPair(self.epsilon)

    def describe(self) -> str:
        return f"binary randomized response, keep probability e^eps/(1+e^eps), eps={self.epsilon}: {self.epsilon}-DP"


@dataclass(frozen=True)
class BernoulliCurator(RandomizedResponse):
    """CTB(eps) of Ren et al.: r in [0,1] -> Bernoulli((r e^eps + 1 - r)/(1 + e^eps)).

    The worst neighbouring pair (r = 0 vs r = 1) is randomized response with the same eps.
    """

    family = "bernoulli-curator"

    def describe(self) -> str:
        return f"CTB Bernoulli curator (Ren et al. 2020), eps={self.epsilon}: worst pair r=0 vs r=1 is RR, {self.epsilon}-DP"
