"""The concentration claims of the three papers, as declarative rows with exact evaluators.

A :class:`Claim` names one statement, cites it (paper, equation) and says how to evaluate it at
each setting of its grid; :func:`evaluate` turns it into a :class:`TailResult`. The catalogue:

ICLR 2023 (Chowdhury & Zhou), per protocol builder of ``dpverify._executed._protocols`` at its own
(sigma, h) and tau (the constants are the protocol's claims; nothing is re-derived here):

- ``noise-tail``: the noise part of Assumption 1, P[|Z|/g > sigma_n sqrt(L) + h L] <= p, L = log(2/p),
  sigma_n = sigma - sqrt(n/2)/g (the protocol's split: rounding + noise). Law of Z: Lap_Z(g/eps)
  (Thm 1, 5: Fact 3), Sk(0, g^2/eps^2) (Thm 2: Prop. 1), sum of n N_Z(0, g^2/(n eps^2)) (Thm 4:
  Fact 2), sum of n Lap_Z(g/eps) (Thm 6: Lemma 5 with our explicit Bernstein constant).
- ``analyzer``: eq. (5) of the proof of Thm 1 (and its copies in Thms 2, 4, 5, 6):
  P[|A(yhat) - sum xhat / g| > tau/g] <= p, with the modular wrap-around evaluated exactly
  (:func:`dpverify._tails._laws.wrapped_tail`).
- ``assumption1``: Assumption 1 itself, P[|n_a(b)| > sigma sqrt(L) + h L] <= 2p, sup over reward
  vectors in [0, 1]^n: Hoeffding (proven) for the rounding part plus the exact wrapped noise tail,
  at the confidence p the protocol's tau was computed with.
- ``assumption1-lemma2``: the same at the confidence Lemma 2 applies it, p' = p/(|Phi| b^2)
  (|Phi| = 10 arms, n = 2^b), with tau still computed at p (as the builders and the runner do).
- DP-SE (Sajed & Sheffet baseline): Assumption 1 with sigma = 0, h = 1/eps, exactly.

Generic rows: ``rounding-hoeffding`` (Term (ii) of the proofs; Hoeffding, proven, with the exact
binomial at fractional parts 1/2 for the slack), ``hoeffding-rewards`` (Lemma 8, first term of
beta(b); exact for Bernoulli rewards), ``prop1-skellam`` (Prop. 1 on a grid of variances down to
0.01), Ren et al.'s Lemma 3 with the LDP-UCB-L index (``ren-laplace-sum``) and its Hoeffding term
(``ren-hoeffding``).

Float-safe privatizers (``dpverify._executed._noise``: rewards on the grid 1/g, g = 2^16, exact Lap_Z(g/eps)):
``ren-laplace-sum`` for ``ldp-ucb-l float-safe`` (Ren et al.'s index threshold for the sum of k
discrete Laplace draws Lap_Z(g/eps)/g, at each eps of the grid: eps no longer cancels),
``lemma5-sum`` (ICLR 2023 Lemma 5 for the local model with the builders' explicit Bernstein constant,
at the curator's scale), and DP-SE's Assumption 1 with the discrete noise (``dp-se float-safe``).
The rounding needs no row of its own: a reward rounded to the grid, xhat/g, is in [0, 1] with the
reward's mean, so the Hoeffding rows (``ren-hoeffding``, ``hoeffding-rewards``) hold for it as they do
for the rewards.

Planted wrong variants (``planted=True``; the gate requires them to be caught): tau / radius
with log(1/p) instead of log(2/p), Proposition 1 without its linear term, Theorem 4's tau without
its sqrt(2), LDP-UCB-L's constant 32 replaced by 2 (for the float and the discrete noise).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterable

from .._executed import _noise
from .._executed import _protocols as P
from .._executed._kinds import BatchNoise, ProtocolKind
from ._laws import (
    DiscreteGaussianSumLaw,
    DiscreteLaplaceLaw,
    DiscreteLaplaceSumLaw,
    NoiseLaw,
    SkellamLaw,
    binomial_two_sided,
    binomial_upper_tail,
    laplace_sum_upper_tail,
    laplace_tail,
    wrapped_tail,
)
from ._model import Evaluation, TailResult

__all__ = [
    "Claim",
    "Grid",
    "catalogue",
    "evaluate",
    "noise_law",
    "noise_constants",
    "planted_catalogue",
    "protocol_variants",
]

ICLR = "Chowdhury & Zhou, ICLR 2023"
REN = "Ren, Zhou, Liu & Shroff 2020"
DPE = "Li, Zhou & Ji (DP-DPE)"
ARMS = 10  # |Phi(b)| used for the Lemma 2 confidence rows (the papers' K = 10)


@dataclass(frozen=True)
class Grid:
    """The parameter settings each claim is checked at."""

    batch_sizes: tuple[int, ...] = (2, 2**4, 2**8, 2**12, 2**16, 2**20, 2**24)
    epsilons: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)
    ps: tuple[float, ...] = (0.1, 1e-3, 1e-7)
    scales: tuple[float, ...] = (1.0, 10.0, 100.0)
    #: Monte Carlo rows: draws per setting, batch sizes, epsilons, p (tau's confidence)
    mc_draws: int = 20_000
    mc_batch_sizes: tuple[int, ...] = (2, 16, 128)
    mc_epsilons: tuple[float, ...] = (0.125, 1.0)  # dyadic: dist-cdp per user refuses eps = 0.1 (see report)
    mc_p: float = 0.1
    #: coverage runs of Lemma 2's radius: (instance, eps) settings, seeds per setting, horizon
    runs_settings: tuple[tuple[str, float], ...] = (("easy", 0.125), ("easy", 1.0), ("hard", 0.125), ("hard", 1.0))
    runs_seeds: int = 50
    runs_horizon: int = 2**15
    #: coverage runs of the exact-quantile radius (its failure rate is near its budget: more seeds)
    exact_runs_settings: tuple[tuple[str, float], ...] = (("easy", 0.125), ("hard", 1.0))
    exact_runs_seeds: int = 300
    exact_runs_horizon: int = 2**12
    #: DP-DPE width: the synthetic instance of the paper's experiments
    dpe_d: int = 20
    dpe_k: int = 1000
    dpe_horizon: int = 10**6
    dpe_alpha: float = 0.8
    dpe_delta: float = 0.25
    dpe_epsilons: tuple[float, ...] = (1.0, 10.0)
    seed: int = 20230501
    #: one-sided Clopper-Pearson level of each Monte Carlo bound (set by the runner: Bonferroni)
    mc_level: float = 1e-6

    @classmethod
    def quick(cls) -> "Grid":
        """A small grid for the test suite."""
        return cls(
            batch_sizes=(2, 2**6, 2**12),
            epsilons=(0.1, 1.0, 10.0),
            ps=(0.1, 1e-7),
            scales=(1.0, 10.0),
            mc_draws=4000,
            mc_batch_sizes=(2, 16),
            mc_epsilons=(1.0,),
            runs_settings=(("easy", 0.5),),
            runs_seeds=40,
            runs_horizon=2**11,
            exact_runs_settings=(("easy", 4.0),),
            exact_runs_seeds=40,
            exact_runs_horizon=2**11,
        )


@dataclass(frozen=True)
class Claim:
    """One checkable statement: ``run(grid)`` yields its evaluations."""

    claim: str
    title: str
    source: str
    bound: str
    protocol: str
    run: Callable[[Grid], Iterable[Evaluation]]
    planted: bool = False
    notes: str = ""
    #: a claim *as a paper prints it* that is known to fail: reported (its verdict and numbers are
    #: shown), but the gate rests on the project's own version of the claim beside it
    finding: bool = False
    #: number of Monte Carlo evaluations on a grid (for the Bonferroni split); None: exact claim
    count: Callable[[Grid], int] | None = None


def evaluate(claim: Claim, grid: Grid) -> TailResult:
    start = time.perf_counter()
    evaluations = tuple(claim.run(grid))
    return TailResult(
        claim.claim,
        claim.title,
        claim.source,
        claim.bound,
        claim.protocol,
        evaluations,
        claim.planted,
        time.perf_counter() - start,
        claim.notes,
        claim.finding,
    )


# ---- protocol helpers -------------------------------------------------------------------------------


def noise_law(protocol: P.DistributedProtocol, n: int) -> NoiseLaw:
    """The law of the summed noise Z (integer, in units of 1/g) of one batch of n users."""
    params = protocol.parameters(n)
    return _NOISE_LAWS[protocol.kind.batch_noise](params, n)


#: the tail verifier's law of each batch noise law (``ProtocolKind.batch_noise``)
_NOISE_LAWS: dict[BatchNoise, Callable[[Any, int], NoiseLaw]] = {
    BatchNoise.DISCRETE_LAPLACE: lambda params, n: DiscreteLaplaceLaw(params.scale),
    BatchNoise.SKELLAM: lambda params, n: SkellamLaw(params.total_variance),
    BatchNoise.DISCRETE_GAUSSIAN_SUM: lambda params, n: DiscreteGaussianSumLaw(n, params.per_user_variance),
    BatchNoise.DISCRETE_LAPLACE_SUM: lambda params, n: DiscreteLaplaceSumLaw(n, params.scale),
}


def rounding_constant(n: int, g: int) -> float:
    """The rounding share of sigma in the builders' Assumption 1: sqrt(n/2)/g (Hoeffding, range 1)."""
    return math.sqrt(n / 2) / g


def noise_constants(protocol: P.DistributedProtocol, n: int, p: float) -> tuple[float, float]:
    """(sigma_n, h): the protocol's Assumption 1 constants minus the rounding share."""
    sigma, h = protocol.assumption1(n, p)
    g = protocol.parameters(n).g
    return max(0.0, sigma - rounding_constant(n, g)), h


def _floor_down(x: float) -> int:
    """floor(x), nudged down so a float error can only make the checked event larger."""
    return math.floor(x * (1 - 1e-12) - 1e-12) if x > 0 else -1


def _hoeffding_at(p: float) -> float:
    """Hoeffding's bound at its own radius sqrt(n log(2/p)/2): 2 exp(-log(2/p)) = p, by algebra.

    (Evaluating it in floating point would round the radius and report p (1 + 1e-16): a spurious
    "inconclusive". The event |sum| > r is monotone in r, so no rounding of r is needed either.)
    """
    return p


def protocol_variants(kind: ProtocolKind | str, grid: Grid) -> list[tuple[dict[str, Any], Callable[[float], P.DistributedProtocol]]]:
    """(setting without p, factory p -> protocol) over the grid, for one builder."""
    kind = ProtocolKind.parse(kind, "kind")
    scaled = kind.scaled
    out = []
    for eps in grid.epsilons:
        for s in grid.scales if scaled else (1.0,):
            setting = {"eps": eps, "s": s} if scaled else {"eps": eps}
            out.append((setting, lambda p, e=eps, s=s: P.DistributedProtocol(kind, e, p, s)))
    return out


_SOURCES = {
    ProtocolKind.DIST_DP: (f"{ICLR}, Thm 1; Fact 3 (App. K); eq. (4)-(6) of its proof", "Lap_Z(g/eps)"),
    ProtocolKind.CDP: (f"{ICLR}, Thm 5 (App. H.1); Fact 3", "Lap_Z(g/eps), added by the analyzer"),
    ProtocolKind.DIST_RDP: (f"{ICLR}, Thm 2; Prop. 1 (App. E.1)", "Sk(0, g^2/eps^2)"),
    ProtocolKind.DIST_CDP: (f"{ICLR}, Thm 4 (App. F); Fact 2 / Canonne et al. 2020 Cor. 9", "sum of n N_Z(0, g^2/(n eps^2))"),
    ProtocolKind.LDP: (f"{ICLR}, Thm 6 (App. H.2); Lemma 5 (c made explicit: Bernstein)", "sum of n Lap_Z(g/eps)"),
}
_LABELS = {ProtocolKind.DIST_DP: "Dist-DP-SE", ProtocolKind.CDP: "CDP-SE", ProtocolKind.DIST_RDP: "Dist-RDP-SE", ProtocolKind.DIST_CDP: "Dist-CDP-SE", ProtocolKind.LDP: "LDP-SE"}


def _settings(kind: str, grid: Grid):
    for base, factory in protocol_variants(kind, grid):
        for p in grid.ps:
            protocol = factory(p)
            for n in grid.batch_sizes:
                yield {**base, "p": p, "n": n}, protocol, n, p


# ---- per-protocol claims --------------------------------------------------------------------------------


def _noise_tail_run(kind: str, log_term: Callable[[float], float] | None = None) -> Callable[[Grid], Iterable[Evaluation]]:
    def run(grid: Grid) -> Iterable[Evaluation]:
        for setting, protocol, n, p in _settings(kind, grid):
            law = noise_law(protocol, n)
            g = protocol.parameters(n).g
            sigma_n, h = noise_constants(protocol, n, p)
            L = math.log(2 / p) if log_term is None else log_term(p)
            radius = g * (sigma_n * math.sqrt(L) + h * L)
            t = _floor_down(radius)
            bound = law.tail(t)
            q = law.quantile(p)
            yield Evaluation({**setting, "g": g, "threshold": t}, p, bound.lower, bound.upper, bound.method, radius, float(q))

    return run


def _analyzer_run(kind: str) -> Callable[[Grid], Iterable[Evaluation]]:
    def run(grid: Grid) -> Iterable[Evaluation]:
        for setting, protocol, n, p in _settings(kind, grid):
            law = noise_law(protocol, n)
            params = protocol.parameters(n)
            bound = wrapped_tail(law, params.tau, params.tau, n * params.g)
            q = law.quantile(p)
            yield Evaluation({**setting, "g": params.g, "tau": params.tau, "m": params.m}, p, bound.lower, bound.upper, bound.method, float(params.tau), float(q))

    return run


def _assumption1_eval(protocol, n: int, p_claim: float, setting: dict) -> Evaluation:
    law = noise_law(protocol, n)
    params = protocol.parameters(n)
    g, tau = params.g, params.tau
    sigma_n, h = noise_constants(protocol, n, p_claim)
    L = math.log(2 / p_claim)
    r_round = math.sqrt(n * L / 2)  # in xhat units: g * (sqrt(n/2)/g) sqrt(L)
    r_noise = g * (sigma_n * math.sqrt(L) + h * L)
    hoeff = _hoeffding_at(p_claim)
    noise = wrapped_tail(law, _floor_down(r_noise), tau, n * g)
    at_ones = wrapped_tail(law, _floor_down(r_round + r_noise), tau, n * g)  # all-ones rewards: no rounding
    upper = min(1.0, hoeff + noise.upper)
    q = law.quantile(p_claim)
    r_min = r_round + q if q <= tau else math.inf
    note = "" if q <= tau else f"noise quantile {q} > tau = {tau}: at rewards all 0 or all 1 the wrap-around alone has probability ~T(tau)/2"
    return Evaluation(
        {**setting, "g": g, "tau": tau, "p_claim": p_claim},
        2 * p_claim,
        at_ones.lower,
        upper,
        "chernoff" if noise.method == "chernoff" else "exact",
        r_round + r_noise,
        r_min,
        note=note,
    )


def _assumption1_run(kind: str, lemma2: bool, tau_at_claim: bool = False) -> Callable[[Grid], Iterable[Evaluation]]:
    """Assumption 1 at tau's confidence p, or at Lemma 2's p' (tau at p as the theorems set it,
    or, with ``tau_at_claim``, at p' as the runner's ``tau_rule="lemma2"`` sets it)."""

    def run(grid: Grid) -> Iterable[Evaluation]:
        for setting, protocol, n, p in _settings(kind, grid):
            if lemma2:
                b = max(1, n.bit_length() - 1)  # n = 2^b
                p_claim = p / (ARMS * b * b)
                if tau_at_claim:
                    protocol = dataclasses.replace(protocol, tau_p=p_claim)
                yield _assumption1_eval(protocol, n, p_claim, {**setting, "b": b})
            else:
                yield _assumption1_eval(protocol, n, p, setting)

    return run


def _dpse_run(lemma2: bool) -> Callable[[Grid], Iterable[Evaluation]]:
    def run(grid: Grid) -> Iterable[Evaluation]:
        for eps in grid.epsilons:
            protocol = P.central_laplace_protocol(eps)
            for p in grid.ps:
                for n in grid.batch_sizes if lemma2 else (1,):
                    b = max(1, n.bit_length() - 1)
                    pc = p / (ARMS * b * b) if lemma2 else p
                    sigma, h = protocol.assumption1(n, pc)
                    L = math.log(2 / pc)
                    radius = sigma * math.sqrt(L) + h * L
                    bound = laplace_tail(Fraction(1) / Fraction(eps), Fraction(radius * (1 - 1e-12)))
                    r_min = math.log(1 / (2 * pc)) / eps if 2 * pc < 1 else 0.0
                    setting = {"eps": eps, "p": p, "p_claim": pc} | ({"n": n, "b": b} if lemma2 else {})
                    yield Evaluation(setting, 2 * pc, bound.lower, bound.upper, bound.method, radius, r_min)

    return run


def _protocol_claims(kind: str) -> list[Claim]:
    source, law = _SOURCES[kind]
    label = _LABELS[kind]
    return [
        Claim(
            "noise-tail",
            f"{label}: noise part of Assumption 1",
            source,
            f"P[|Z|/g > sigma_n sqrt(log(2/p)) + h log(2/p)] <= p, Z ~ {law}",
            kind,
            _noise_tail_run(kind),
        ),
        Claim(
            "analyzer",
            f"{label}: analyzer accuracy with modular wrap-around",
            f"{ICLR}, eq. (5) in the proof of Thm 1 (Case 1 / Case 2 underflow argument)" + ("" if kind is ProtocolKind.DIST_DP else f"; reused in {source.split(', ')[1]}"),
            "P[|A(yhat) - sum xhat/g| > tau/g] <= p, sup over sum xhat in [0, n g]",
            kind,
            _analyzer_run(kind),
        ),
        Claim(
            "assumption1",
            f"{label}: Assumption 1 at the confidence of tau",
            f"{ICLR}, Assumption 1 (App. C) with the builders' (sigma, h); {source}",
            "P[|n_a(b)| > sigma sqrt(log(2/p)) + h log(2/p)] <= 2p, sup over rewards in [0, 1]^n",
            kind,
            _assumption1_run(kind, lemma2=False),
        ),
        Claim(
            "assumption1-lemma2",
            f"{label}: Assumption 1 at Lemma 2's confidence p/(|Phi| b^2)",
            f"{ICLR}, Lemma 2 proof (App. C) applying Assumption 1 at p' = p/(|Phi(b)| b^2); tau at p (Thm {kind.theorem})",
            "P[|n_a(b)| > sigma sqrt(log(2/p')) + h log(2/p')] <= 2p', |Phi| = 10, n = 2^b, sup over rewards",
            kind,
            _assumption1_run(kind, lemma2=True),
            notes="paper finding: tau is computed at p, not p'; when the noise radius at p' exceeds tau, rewards all 1 (or all 0) overflow the analyzer's window with probability about P[|Z| > tau]/2 whatever the radius. The runner's tau_rule='lemma2' fixes it (next row)",
            finding=True,
        ),
        Claim(
            "assumption1-lemma2-fixed",
            f"{label}: Assumption 1 at Lemma 2's confidence, tau at p' (tau_rule='lemma2')",
            f"{ICLR}, Lemma 2 proof (App. C); tau recomputed at p' = p/(|Phi(b)| b^2) (dpverify's fix; tau does not enter the privacy guarantee)",
            "P[|n_a(b)| > sigma sqrt(log(2/p')) + h log(2/p')] <= 2p', |Phi| = 10, n = 2^b, sup over rewards",
            kind,
            _assumption1_run(kind, lemma2=True, tau_at_claim=True),
        ),
    ]


# ---- generic claims ------------------------------------------------------------------------------------


def _rounding_run(grid: Grid) -> Iterable[Evaluation]:
    for p in grid.ps:
        for n in grid.batch_sizes:
            L = math.log(2 / p)
            r = math.sqrt(n * L / 2)
            upper = _hoeffding_at(p)
            half = binomial_two_sided(n, Fraction(1, 2), Fraction(r))
            # slack at the max-variance vector: smallest radius with the exact binomial tail <= p
            lo, hi = 0.0, r
            for _ in range(16):
                mid = (lo + hi) / 2
                if binomial_two_sided(n, Fraction(1, 2), Fraction(mid)).upper <= p:
                    hi = mid
                else:
                    lo = mid
            yield Evaluation(
                {"n": n, "p": p},
                p,
                half.lower,
                upper,
                "exact",
                r,
                hi,
                note="upper: Hoeffding (proven, every reward vector); lower and slack: exact binomial at fractional parts 1/2",
            )


def _hoeffding_rewards_run(grid: Grid) -> Iterable[Evaluation]:
    for p in grid.ps:
        for n in grid.batch_sizes:
            r = math.sqrt(math.log(2 / p) / (2 * n)) * n  # in units of the sum
            for mu in (Fraction(1, 2), Fraction(1, 10), Fraction(1, 100)):
                bound = binomial_two_sided(n, mu, Fraction(r * (1 - 1e-12)))
                lo, hi = 0.0, r
                for _ in range(16):
                    mid = (lo + hi) / 2
                    if binomial_two_sided(n, mu, Fraction(mid)).upper <= p:
                        hi = mid
                    else:
                        lo = mid
                yield Evaluation({"n": n, "p": p, "mu": float(mu)}, p, bound.lower, bound.upper, bound.method, r, hi, note="Bernoulli(mu) rewards")


_SKELLAM_MUS = (Fraction(1, 100), Fraction(1, 10), Fraction(1, 2), Fraction(1), Fraction(2), Fraction(10), Fraction(100), Fraction(10**4), Fraction(10**6), Fraction(10**8))


def _prop1_run(linear: bool) -> Callable[[Grid], Iterable[Evaluation]]:
    def run(grid: Grid) -> Iterable[Evaluation]:
        for mu in _SKELLAM_MUS:
            law = SkellamLaw(mu)
            for p in grid.ps:
                L = math.log(2 / p)
                radius = 2 * math.sqrt(float(mu)) * math.sqrt(L) + (math.sqrt(2) * L if linear else 0.0)
                t = _floor_down(radius)
                bound = law.tail(t)
                yield Evaluation({"mu": float(mu), "p": p, "threshold": t}, p, bound.lower, bound.upper, bound.method, radius, float(law.quantile(p)))

    return run


_REN_TS = (10, 10**3, 10**5, 10**7)


def _ren_laplace_run(constant: float) -> Callable[[Grid], Iterable[Evaluation]]:
    def run(grid: Grid) -> Iterable[Evaluation]:
        for t in _REN_TS:
            k0 = math.floor(4 * math.log(t)) + 1  # the lemma needs k > 4 log t
            claimed = float(t) ** -4
            for k in (k0, 2 * k0, 10 * k0, 100 * k0):
                x = math.sqrt(constant * k * math.log(t))  # eps cancels: sum of Laplace(1/eps) vs x/eps
                bound = laplace_sum_upper_tail(k, Fraction(x * (1 - 1e-12)))
                lo, hi = 0.0, x
                if bound.upper <= claimed:
                    for _ in range(24):
                        mid = (lo + hi) / 2
                        if laplace_sum_upper_tail(k, Fraction(mid)).upper <= claimed:
                            hi = mid
                        else:
                            lo = mid
                yield Evaluation({"t": t, "k": k}, claimed, bound.lower, bound.upper, bound.method, x, hi)

    return run


def _ren_discrete_laplace_run(constant: float) -> Callable[[Grid], Iterable[Evaluation]]:
    """Ren et al.'s Lemma 3 threshold for the float-safe curator's noise: the sum of k Lap_Z(b)/g,
    b = g/eps' (eps' = g/b, eps itself on this grid), against sqrt(constant k log t)/eps'. One-sided:
    P[S >= x] = P[|S| >= x]/2 by symmetry, so the law's two-sided tail at ceil(x) - 1, halved (an
    upper bound: Chernoff with the exact mgf, the convolution being out of reach at b = 2^16/eps).
    Lower bound: P[S >= x] >= P[Z_1 >= ceil(x)] P[Z_2 + ... + Z_k >= 0] >= P[Z_1 >= ceil(x)]/2 (the
    rest is symmetric), i.e. a quarter of the exact two-sided tail of one Lap_Z(b) at ceil(x) - 1."""

    def run(grid: Grid) -> Iterable[Evaluation]:
        g = _noise.FLOAT_SAFE_GRID
        for eps in grid.epsilons:
            b = _noise.grid_laplace_scale(eps, g)
            eps_noise = g / b
            for t in _REN_TS:
                k0 = math.floor(4 * math.log(t)) + 1  # the lemma needs k > 4 log t
                claimed = float(t) ** -4
                for k in (k0, 10 * k0, 100 * k0):
                    x = g * math.sqrt(constant * k * math.log(t)) / float(eps_noise)  # in units of 1/g
                    threshold = math.ceil(x * (1 - 1e-12)) - 1  # S >= x implies S > threshold
                    upper = DiscreteLaplaceSumLaw(k, b).tail(threshold).scaled(0.5)
                    one = DiscreteLaplaceLaw(b).tail(threshold)
                    bound = dataclasses.replace(upper, lower=max(upper.lower, one.lower / 4))
                    yield Evaluation({"eps": eps, "g": g, "t": t, "k": k, "threshold": threshold}, claimed, bound.lower, bound.upper,
                                     bound.method, x / g, None, note="radius in reward units")

    return run


def _lemma5_run(grid: Grid) -> Iterable[Evaluation]:
    """ICLR 2023 Lemma 5 with the builders' explicit constant (``_protocols``, Theorem 6: the sum of
    n iid Lap_Z(b), |S| <= sqrt(2 n v_b log(2/p)) + 2 b log(2/p) w.p. >= 1 - p, v_b = 2q/(1-q)^2),
    at the float-safe curator's scale b = g/eps: the concentration the local model's analysis uses."""
    g = _noise.FLOAT_SAFE_GRID
    for eps in grid.epsilons:
        b = _noise.grid_laplace_scale(eps, g)
        bf = float(b)
        q = math.exp(-1.0 / bf)
        v_b = 2 * q / (1 - q) ** 2
        for p in grid.ps:
            L = math.log(2 / p)
            for n in (1, 16, 256, 4096):
                radius = math.sqrt(2 * n * v_b * L) + 2 * bf * L
                t = _floor_down(radius)
                law = DiscreteLaplaceSumLaw(n, b)
                bound = law.tail(t)
                yield Evaluation({"eps": eps, "g": g, "n": n, "p": p, "threshold": t}, p, bound.lower, bound.upper, bound.method, radius, None)


def _dpse_float_safe_run(lemma2: bool) -> Callable[[Grid], Iterable[Evaluation]]:
    """DP-SE float-safe, Assumption 1 with the protocol's (sigma, h) = (sqrt(n/2)/g, 1/eps'): the
    rounding part by Hoeffding (proven: p at its radius), the noise part P[|Lap_Z(b)| > h L g] exactly."""

    def run(grid: Grid) -> Iterable[Evaluation]:
        for eps in grid.epsilons:
            protocol = P.central_laplace_protocol(eps)
            b = protocol.scale
            g = protocol.grid
            for p in grid.ps:
                for n in grid.batch_sizes if lemma2 else (1, 2**10, 2**20):
                    bb = max(1, n.bit_length() - 1)
                    pc = p / (ARMS * bb * bb) if lemma2 else p
                    sigma, h = protocol.assumption1(n, pc)
                    L = math.log(2 / pc)
                    noise = DiscreteLaplaceLaw(b).tail(_floor_down(g * h * L))
                    upper = min(1.0, _hoeffding_at(pc) + noise.upper)
                    setting = {"eps": eps, "g": g, "p": p, "p_claim": pc, "n": n} | ({"b": bb} if lemma2 else {})
                    yield Evaluation(setting, 2 * pc, noise.lower, upper, noise.method, sigma * math.sqrt(L) + h * L, None,
                                     note="upper: Hoeffding (rounding, proven) + the exact discrete Laplace tail; lower: the noise alone")

    return run


def _ren_hoeffding_run(grid: Grid) -> Iterable[Evaluation]:
    for t in _REN_TS:
        k0 = math.floor(4 * math.log(t)) + 1
        claimed = float(t) ** -4
        for k in (k0, 10 * k0, 100 * k0):
            for mu in (Fraction(1, 2), Fraction(9, 10)):
                r = math.sqrt(2 * math.log(t) / k) * k
                bound = binomial_upper_tail(k, mu, math.floor(k * mu + r * (1 - 1e-12)) + 1)
                yield Evaluation({"t": t, "k": k, "mu": float(mu)}, claimed, bound.lower, bound.upper, bound.method, r, None, note="Bernoulli(mu) rewards, one-sided")


def catalogue() -> list[Claim]:
    """Every claim of the default table."""
    claims: list[Claim] = []
    for kind in ProtocolKind:
        claims.extend(_protocol_claims(kind))
    claims += [
        Claim(
            "assumption1",
            "DP-SE: Assumption 1 (continuous Laplace, no rounding)",
            f"{ICLR}, App. J baseline / Sajed & Sheffet 2019; Assumption 1 with sigma = 0, h = 1/eps",
            "P[|Laplace(1/eps)| > log(2/p)/eps] <= 2p",
            "dp-se",
            _dpse_run(lemma2=False),
        ),
        Claim(
            "assumption1-lemma2",
            "DP-SE: Assumption 1 at Lemma 2's confidence",
            f"{ICLR}, Lemma 2 (App. C) with sigma = 0, h = 1/eps",
            "P[|Laplace(1/eps)| > log(2/p')/eps] <= 2p', p' = p/(|Phi| b^2)",
            "dp-se",
            _dpse_run(lemma2=True),
        ),
        Claim(
            "rounding-hoeffding",
            "Randomised rounding error (Term (ii))",
            f"{ICLR}, eq. (5)/(6) of the proof of Thm 1 (Term (ii)), Lemma 6; constant as in the builders (range-1 Hoeffding)",
            "P[|sum xhat - g sum x| > sqrt(n log(2/p)/2)] <= p",
            "all",
            _rounding_run,
        ),
        Claim(
            "hoeffding-rewards",
            "Hoeffding for the batch mean (first term of beta(b))",
            f"{ICLR}, Lemma 8 (App. K), used in Lemma 2",
            "P[|mean of n rewards - mu| > sqrt(log(2/p)/(2n))] <= p",
            "all",
            _hoeffding_rewards_run,
        ),
        Claim(
            "prop1-skellam",
            "Skellam sub-exponential tail",
            f"{ICLR}, Proposition 1 (Sec. 5, proof App. E.1)",
            "P[|Sk(0, mu)| > 2 sqrt(mu) sqrt(log(2/p)) + sqrt(2) log(2/p)] <= p",
            "all",
            _prop1_run(linear=True),
        ),
        Claim(
            "ren-laplace-sum",
            "LDP-UCB-L: sum of k Laplace(1/eps) (index term sqrt(32 log t/(eps^2 N)))",
            f"{REN}, Lemma 3 (Chan et al. Lemma 2.8) as used in the proof of Thm 4 (App. A.2), k > 4 log t",
            "P[sum_{r<=k} L_r >= sqrt(32 k log t)/eps] <= t^-4",
            "ldp-ucb-l",
            _ren_laplace_run(32.0),
        ),
        Claim(
            "ren-laplace-sum",
            "LDP-UCB-L float-safe: sum of k Lap_Z(g/eps)/g against the index term sqrt(32 log t/(eps^2 N))",
            f"{REN}, Lemma 3 threshold as used in the proof of Thm 4 (App. A.2), k > 4 log t, for the discrete noise of the float-safe CTL "
            f"(g = 2^16); it holds by {ICLR}, Lemma 5 (sums of Lap_Z are sub-exponential)",
            "P[sum_{r<=k} Z_r/g >= sqrt(32 k log t)/eps] <= t^-4, Z_r ~ Lap_Z(g/eps)",
            "ldp-ucb-l float-safe",
            _ren_discrete_laplace_run(32.0),
        ),
        Claim(
            "lemma5-sum",
            "Lemma 5 (local model): sum of n Lap_Z(g/eps) at the float-safe curator's scale",
            f"{ICLR}, Lemma 5 (App. H.2) with the explicit Bernstein constant of the builders (Thm 6), b = g/eps, g = 2^16",
            "P[|sum_{i<=n} Lap_Z(b)| > sqrt(2 n v_b log(2/p)) + 2 b log(2/p)] <= p, v_b = 2q/(1-q)^2, q = e^{-1/b}",
            "ldp-ucb-l float-safe",
            _lemma5_run,
        ),
        Claim(
            "assumption1",
            "DP-SE float-safe: Assumption 1 (grid 1/2^16, exact Lap_Z(g/eps))",
            f"{ICLR}, Assumption 1 with the float-safe DP-SE's (sigma, h) = (sqrt(n/2)/g, 1/eps) (App. H.1's central model, no modulus)",
            "P[|n_a| > sigma sqrt(log(2/p)) + h log(2/p)] <= 2p, n_a = rounding + Lap_Z(g/eps)/g",
            "dp-se float-safe",
            _dpse_float_safe_run(lemma2=False),
        ),
        Claim(
            "assumption1-lemma2",
            "DP-SE float-safe: Assumption 1 at Lemma 2's confidence",
            f"{ICLR}, Lemma 2 (App. C) with the float-safe DP-SE's (sigma, h)",
            "P[|n_a| > sigma sqrt(log(2/p')) + h log(2/p')] <= 2p', p' = p/(|Phi| b^2)",
            "dp-se float-safe",
            _dpse_float_safe_run(lemma2=True),
        ),
        Claim(
            "ren-hoeffding",
            "LDP-UCB-L / LDP-UCB-B: Hoeffding term sqrt(2 log t / N)",
            f"{REN}, proof of Thm 4 (App. A.2) and Thm 6 (App. A.4), Hoeffding (Auer et al. 2002)",
            "P[mean of k rewards >= mu + sqrt(2 log t / k)] <= t^-4",
            "ldp-ucb",
            _ren_hoeffding_run,
        ),
    ]
    return claims


def _log1p_over(p: float) -> float:
    return math.log(1 / p)


def _dg_no_sqrt2_run(grid: Grid) -> Iterable[Evaluation]:
    for setting, protocol, n, p in _settings(ProtocolKind.DIST_CDP, grid):
        law = noise_law(protocol, n)
        if not law.exact_possible():  # the planted bug is shown where the law is computed exactly
            continue
        g = protocol.parameters(n).g
        radius = (g / protocol.epsilon) * math.sqrt(math.log(2 / p))
        t = _floor_down(radius)
        bound = law.tail(t)
        yield Evaluation({**setting, "g": g, "threshold": t}, p, bound.lower, bound.upper, bound.method, radius, float(law.quantile(p)))


def planted_catalogue() -> list[Claim]:
    """Deliberately wrong constants: the verifier must report each as violated (where it is)."""
    return [
        Claim(
            "planted-log1p",
            "PLANTED: Dist-DP-SE noise radius with log(1/p) instead of log(2/p)",
            f"{ICLR}, Thm 1 / Fact 3 with a wrong constant",
            "P[|Lap_Z(g/eps)|/g > log(1/p)/eps] <= p",
            ProtocolKind.DIST_DP,
            _noise_tail_run(ProtocolKind.DIST_DP, _log1p_over),
            planted=True,
        ),
        Claim(
            "planted-skellam-no-linear",
            "PLANTED: Proposition 1 without its linear term",
            f"{ICLR}, Prop. 1 with sqrt(2) log(2/p) dropped",
            "P[|Sk(0, mu)| > 2 sqrt(mu) sqrt(log(2/p))] <= p",
            "all",
            _prop1_run(linear=False),
            planted=True,
        ),
        Claim(
            "planted-dg-no-sqrt2",
            "PLANTED: Theorem 4's tau without its sqrt(2)",
            f"{ICLR}, Thm 4 with tau = (g/eps) sqrt(log(2/p))",
            "P[|sum N_Z| > (g/eps) sqrt(log(2/p))] <= p",
            ProtocolKind.DIST_CDP,
            _dg_no_sqrt2_run,
            planted=True,
        ),
        Claim(
            "planted-ren-constant",
            "PLANTED: LDP-UCB-L index with 2 instead of 32",
            f"{REN}, Lemma 3 with a wrong constant",
            "P[sum L_r >= sqrt(2 k log t)/eps] <= t^-4",
            "ldp-ucb-l",
            _ren_laplace_run(2.0),
            planted=True,
        ),
        Claim(
            "planted-ren-constant",
            "PLANTED: LDP-UCB-L float-safe index with 2 instead of 32",
            f"{REN}, Lemma 3 with a wrong constant, discrete noise Lap_Z(g/eps)/g",
            "P[sum Z_r/g >= sqrt(2 k log t)/eps] <= t^-4",
            "ldp-ucb-l float-safe",
            _ren_discrete_laplace_run(2.0),
            planted=True,
        ),
    ]
