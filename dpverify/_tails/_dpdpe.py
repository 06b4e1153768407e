"""DP-DPE's confidence width W_l (Li, Zhou & Ji), checked against the estimator's exact variance.

For phase l with design pi_l (``g_optimal_design`` of the bandits package, the one DP-DPE runs),
counts T_l(x) = ceil(h_l pi_l(x)), V_l = sum_x T_l(x) x x^T and n = |U_l| = ceil(2^{alpha l})
clients, the estimation error at an action x is

    <theta_l - theta*, x> = x^T V_l^+ sum_{x'} T_l(x') x' e(x'),
    e(x') = <xi_bar, x'> + (mean over clients of their averaged reward noise at x') + gamma(x'),

three independent zero-mean parts: the clients' offsets xi_u (sigma-sub-Gaussian vectors, mean of
n: proxy sigma^2 ||x||^2 / n), the reward noise (1-sub-Gaussian per observation, averaged over
T_l(x') rounds and n clients: proxy ||x||^2_{V_l^+} / n) and the privacy noise (per coordinate sd
``protocol.noise_sd(n, s)``: variance sd^2 ||diag(T_l) X_s V_l^+ x||^2). Their sum is
sub-Gaussian with proxy v(x), the sum of the three, so

    P[<theta_l - theta*, x> > W_l] <= exp(-W_l^2 / (2 v(x)))      (upper, any sub-Gaussian noise)
                                   >= Phi_bar(W_l / sqrt(v(x)))   (equality for Gaussian noise: lower)

and the claim (eq. (3), with beta = 1/(kT) in Theorems 1, 2) is that this is <= beta for every x in
D_l. Evaluated on the full action set (D_1 = D) for every phase of a horizon-T run; float64
linear algebra (the margins are orders of magnitude, see the slack column).

Two implementations of the private versions, one row each:

- ``dpdpe-width`` for CDP-DPE and LDP-DPE is the float-safe default (``CentralDiscreteGaussian``,
  ``LocalDiscreteGaussian``): the privacy noise in a released coordinate is a discrete Gaussian
  N_Z(0, sigma^2) (sigma^2-sub-Gaussian, Canonne, Kamath & Steinke 2020) plus the clients'
  randomised-rounding errors (each centred in an interval of length 1: 1/4-sub-Gaussian, Hoeffding),
  scaled by B/(g n); ``noise_sd`` is the square root of that proxy, so the upper bound above holds
  as stated. The noise is not Gaussian, so no lower bound is claimed (lower = 0): such a row
  reads "holds" or "inconclusive", never "violated".
- ``dpdpe-width-idealised``: the paper's float Gaussians (``...GaussianIdealised``), with the
  Gaussian lower bound.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np
from scipy.special import ndtr

from .._executed._noise import check_noise
from ._claims import Claim, Grid
from ._model import Evaluation

__all__ = ["dpdpe_catalogue"]

DPE = "Li, Zhou & Ji (DP-DPE)"


def _phases(horizon: int, alpha: float):
    h, l, t = 2.0, 1, 0
    while t < horizon and l <= 30:
        yield l, h, math.ceil(2 ** (alpha * l))
        t += int(h) + 64  # a phase plays about h rounds (ceil adds at most the support size)
        h *= 2
        l += 1


def _run(algorithm: str, sqrt2: bool = True, noise: str = "float-safe"):
    def run(grid: Grid) -> Iterable[Evaluation]:
        from .._bandits.linear._design import g_optimal_design
        from .._bandits.linear._instances import synthetic_instance
        from .._bandits.linear._privatizers import (
            CentralDiscreteGaussian,
            CentralGaussianIdealised,
            LocalDiscreteGaussian,
            LocalGaussianIdealised,
        )

        central, local = (CentralDiscreteGaussian, LocalDiscreteGaussian) if not check_noise(noise).idealised else (CentralGaussianIdealised, LocalGaussianIdealised)

        inst = synthetic_instance(d=grid.dpe_d, k=grid.dpe_k)
        X, d, k = inst.actions, inst.d, inst.k
        beta = 1.0 / (k * grid.dpe_horizon)
        log_term = math.sqrt((2.0 if sqrt2 else 1.0) * math.log(1.0 / beta))
        design = g_optimal_design(X)
        xs = X[design.support]
        s = xs.shape[0]
        for eps in grid.dpe_epsilons if algorithm != "dpe" else (None,):
            protocol = None
            if algorithm == "cdp-dpe":
                protocol = central(eps, grid.dpe_delta, inst.reward_bound)
            elif algorithm == "ldp-dpe":
                protocol = local(eps, grid.dpe_delta, inst.reward_bound)
            for l, h, n in _phases(grid.dpe_horizon, grid.dpe_alpha):
                counts = np.ceil(h * design.weights)
                V = (xs * counts[:, None]).T @ xs
                Vp = np.linalg.pinv(V, hermitian=True)
                quad = np.einsum("ij,jk,ik->i", X, Vp, X)  # ||x||^2_{V^+}
                v = quad / n + inst.sigma**2 * np.einsum("ij,ij->i", X, X) / n
                sigma_n = 0.0
                if protocol is not None:
                    influence = (X @ Vp @ xs.T) * counts[None, :]
                    v = v + protocol.noise_sd(n, s) ** 2 * np.einsum("ij,ij->i", influence, influence)
                    sigma_n = protocol.paper_width_sd(n, s, d)
                width = (math.sqrt(2.0 * d / (n * h)) + inst.sigma / math.sqrt(n) + sigma_n) * log_term
                worst = float(v.max())
                z = width / math.sqrt(worst)
                upper = math.exp(-0.5 * z * z)
                gaussian = protocol is None or check_noise(noise).idealised  # else the privacy noise is discrete
                lower = float(ndtr(-z)) if gaussian else 0.0
                r_min = math.sqrt(2 * worst * math.log(1 / beta))  # smallest width the sub-Gaussian bound certifies
                yield Evaluation(
                    {"algorithm": algorithm, "noise": noise if protocol is not None else None, "eps": eps, "delta": grid.dpe_delta if eps else None, "phase": l, "h": h, "clients": n, "support": s, "g": design.g},
                    beta,
                    lower,
                    upper,
                    "chernoff",
                    width,
                    r_min,
                    note="upper: sub-Gaussian bound (any noise in the model); lower: Gaussian noise" if gaussian
                    else "upper: sub-Gaussian bound (discrete Gaussian sigma^2-sub-Gaussian, rounding 1/4-sub-Gaussian); no lower bound (non-Gaussian noise)",
                )

    return run


def dpdpe_catalogue(planted: bool = False) -> list[Claim]:
    claims = []
    if not planted:
        for algorithm in ("dpe", "cdp-dpe", "ldp-dpe"):
            claims.append(
                Claim(
                    "dpdpe-width",
                    f"{algorithm.upper()}: confidence width W_l" + ("" if algorithm == "dpe" else " (float-safe: grid + discrete Gaussian)"),
                    f"{DPE}, eq. (3) with Theorem 1 (DPE) / Theorem 2 (sigma_n of CDP-, LDP-DPE); Lattimore & Szepesvari ch. 21"
                    + ("" if algorithm == "dpe" else "; Canonne, Kamath & Steinke 2020 (discrete Gaussian sub-Gaussian); Hoeffding (rounding)"),
                    "P[<theta_l - theta*, x> > W_l] <= beta = 1/(kT) for every action x, every phase",
                    algorithm,
                    _run(algorithm),
                )
            )
        for algorithm in ("cdp-dpe", "ldp-dpe"):
            claims.append(
                Claim(
                    "dpdpe-width-idealised",
                    f"{algorithm.upper()}: confidence width W_l (idealised float Gaussian)",
                    f"{DPE}, eq. (3) with Theorem 2 (sigma_n of CDP-, LDP-DPE); Lattimore & Szepesvari ch. 21",
                    "P[<theta_l - theta*, x> > W_l] <= beta = 1/(kT) for every action x, every phase",
                    algorithm,
                    _run(algorithm, noise="idealised"),
                )
            )
        return claims
    return [
        Claim(
            "planted-dpdpe-log",
            "PLANTED: DPE's W_l with sqrt(log(1/beta)) instead of sqrt(2 log(1/beta))",
            f"{DPE}, eq. (3) with a wrong constant",
            "P[<theta_l - theta*, x> > W_l] <= beta",
            "dpe",
            _run("dpe", sqrt2=False),
            planted=True,
        )
    ]
