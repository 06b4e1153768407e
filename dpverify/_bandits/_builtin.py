"""The multi-armed algorithms and instances of the two papers, registered into the registry.

Algorithms: Algorithm 1 (batch successive elimination) with Dist-DP-SE (Thm 1), Dist-RDP-SE
(Thm 2), Dist-CDP-SE (Thm 4), CDP-SE and LDP-SE (App. H), non-private SE; DP-SE (Sajed &
Sheffet); UCB1 and LDP-UCB-L/-B/-LS/-BS (Ren et al.). Instances: easy, hard, ren-bernoulli,
ren-mixed, mslr.

Budgets. A run's ledger is given the budget the configuration claims, computed by the
accountant from the protocol's own per-batch guarantees over every batch size the run can use:
PureDP(eps) for the pure protocols (the accountant's certified value: eps rounded up by at most
an ulp when eps is not a dyadic float; a protocol whose batch guarantee exceeded it is refused), rho-zCDP for Dist-CDP-SE, (eps, delta) at the requested delta for
Dist-RDP-SE. Returning users (``population``/``max_returns``): the budget is (eps, delta) for
the whole run and the per-batch privacy parameter is calibrated to it, either exactly
(``accounting.calibrate`` on the B-fold composition) or by the paper's App. I recipe
(``accounting.appendix_i_per_batch``), for comparison.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import accounting as acc
from accounting import AccountingError
from accounting.internal import delta_before_total_variation, times_total_variation, total_variation_of

from .._executed._kinds import ProtocolKind
from ._elimination import EliminationSetup, run_batch_elimination, run_dp_se
from ._environments import BanditInstance, easy_instance, hard_instance, mslr_instance, ren_bernoulli_instance, ren_mixed_instance
from ._registry import AlgorithmSpec, InstanceSpec, register_algorithm, register_instance, register_instance_type
from ._ucb import UCB_ALGORITHMS, UCBSetup, run_ucb

__all__ = ["SE_PROTOCOLS", "dp_se_setup", "make_protocol", "run_budget", "se_setup", "ucb_setup"]

#: Algorithm 1 variants -> the protocol kind of dpverify._executed._protocols.DistributedProtocol
SE_PROTOCOLS = {
    "dist-dp-se": ProtocolKind.DIST_DP,  # Theorem 1
    "dist-rdp-se": ProtocolKind.DIST_RDP,  # Theorem 2 (scale s)
    "dist-cdp-se": ProtocolKind.DIST_CDP,  # Theorem 4 (scale s)
    "cdp-se": ProtocolKind.CDP,  # Theorem 5
    "ldp-se": ProtocolKind.LDP,  # Theorem 6
}


def make_protocol(algorithm: str, epsilon: float, *, s: float, p: float, tau_p: float) -> Any:
    """The protocol of an Algorithm 1 variant (``dpverify._executed._protocols.DistributedProtocol`` of its kind)."""
    from fractions import Fraction

    from .._executed._protocols import DistributedProtocol

    kind = SE_PROTOCOLS.get(algorithm)
    if kind is not None:
        # eps as the decimal the user typed (0.1 -> 1/10), not the binary float 0.1000000000000000055...:
        # the exact parameters (g, tau, noise scale g/eps) stay small rationals the samplers accept.
        epsilon = Fraction(repr(float(epsilon)))
        return DistributedProtocol(kind, epsilon, p, s if kind.scaled else 1.0, tau_p)
    raise AccountingError("algorithm", algorithm, f"one of {tuple(SE_PROTOCOLS)}")


def batch_sizes(horizon: int, base: int) -> list[int]:
    """Every batch size Algorithm 1 can release in a run of ``horizon`` pulls."""
    sizes, n = [], base
    while n < horizon:
        sizes.append(n)
        n *= base
    return sizes or [1]


@lru_cache(maxsize=256)
def _budget_cached(algorithm: str, epsilon: float, s: float, p: float, tau_p: float, horizon: int, base: int, delta: float) -> Any:
    protocol = make_protocol(algorithm, epsilon, s=s, p=p, tau_p=tau_p)
    guarantees = [protocol.mechanism(n) for n in batch_sizes(horizon, base)]
    if algorithm in ("dist-dp-se", "cdp-se", "ldp-se"):
        # the accountant's certified value (eps itself, rounded up when eps is not a dyadic float)
        return acc.PureDP(max(g.pure().epsilon for g in guarantees))
    if algorithm == "dist-cdp-se":
        return acc.ZCDP(max(g.zcdp().rho for g in guarantees))
    # the planner's "ledger" policy: the routes the run's ledger charges with (one path, so a
    # route added to the planner moves the budget and the charge alike); the exact conversion is
    # memoised per (mechanism, delta), shared with the ledger's check
    worst = max(acc.epsilon_routes(g, delta, policy="ledger").epsilon for g in guarantees)
    return acc.ApproxDP(worst, delta)


def _clear_budgets() -> None:
    _budget_cached.cache_clear()
    calibrated_batch_epsilon.cache_clear()


acc.on_routes_changed(_clear_budgets)  # a route added to the planner moves the budgets


def run_budget(config: Any, arms: int) -> Any:
    """The unique-users budget of an Algorithm 1 configuration (module docstring)."""
    return _budget_cached(
        config.algorithm, float(config.epsilon), float(config.s), config.confidence, config.tau_p_for(arms), config.horizon, config.batch_base, config.delta
    )


# ---- returning users --------------------------------------------------------------------------------


def _snap_down(value: float, digits: int = 4) -> float:
    """``value`` rounded *down* to ``digits`` significant decimals (a short decimal: the protocol's
    exact parameters stay small rationals; rounding down means more noise, the safe side)."""
    from decimal import ROUND_FLOOR, Decimal

    d = Decimal(repr(float(value)))
    quantum = Decimal(1).scaleb(d.adjusted() - digits + 1)
    return float(d.quantize(quantum, rounding=ROUND_FLOOR))


def largest_release(horizon: int, base: int) -> int:
    """The largest batch Algorithm 1 can release in ``horizon`` pulls (the largest base^b < T).

    A batch of n users is released only if more than n pulls are left (line 9), so n < T.
    With returning users every batch needs n distinct users: the population must be at least this.
    """
    sizes = batch_sizes(horizon, base)
    return sizes[-1] if horizon > base else 0


@lru_cache(maxsize=64)
def calibrated_batch_epsilon(
    algorithm: str, epsilon: float, delta: float, returns: int, s: float, p: float, tau_p: float, horizon: int, base: int, rule: str
) -> dict:
    """The per-batch protocol eps meeting (epsilon, delta) when a user joins up to ``returns`` batches.

    The per-batch guarantee is the pointwise maximum of the RDP curves of every batch size the
    run can release (``batch_sizes(horizon, base)``): a user's B' <= B releases, whatever their
    sizes, compose to at most B times that curve, which is what is certified. The curve is the
    one the ledger composes (the mechanism's exact RDP curve, CKS conversion), so a calibrated run
    is never refused by its ledger.

    ``rule="exact"``: ``accounting.calibrate`` on the ``returns``-fold composition, at (epsilon,
    delta). ``rule="appendix-i"``: the paper's App. I split (advanced composition, Theorem 7;
    epsilon < 1) into per-batch (eps_i, delta_i), then the least noise meeting (eps_i, delta_i)
    for one batch, by the same calibration. The calibrated parameter is the noise multiplier
    1/eps_b (more noise, larger parameter, as ``calibrate`` expects); eps_b is rounded down to 4
    significant digits inside the family, so the returned ``batch_epsilon`` is the certified one.
    Parameters at which the smallest batch's exact curve alone provably misses the target are
    skipped (``calibrate(ruled_out=...)``, :func:`accounting.rdp_conversion_exceeds`): the same
    bracket, without building the large batches' residue tables there.
    """
    if rule not in ("exact", "appendix-i"):
        raise AccountingError("returning_calibration", rule, "'exact' or 'appendix-i'")
    sizes = tuple(batch_sizes(horizon, base))
    # A protocol executed within total variation t of its analysed law (Dist-CDP-SE's truncated
    # exact samplers: n 2^-100 per batch, whatever the noise) pays (1 + e^eps) t per batch in
    # delta, as its (eps, delta) ledger does: the curves are calibrated at what is left.
    slack = max(total_variation_of(make_protocol(algorithm, epsilon, s=s, p=p, tau_p=tau_p).mechanism(n)) for n in sizes)
    if slack:
        delta = delta_before_total_variation(epsilon, delta, times_total_variation(slack, returns))

    def worst_curve(x: float) -> Any:
        protocol = make_protocol(algorithm, _snap_down(1.0 / x), s=s, p=p, tau_p=tau_p)
        guarantees = [protocol.mechanism(n) for n in sizes]
        if any(total_variation_of(g) > slack for g in guarantees):  # the slack paid above must cover every parameter's
            raise AccountingError("protocol", algorithm, f"a sampler total variation independent of the noise (at most {slack!r} per batch)")
        curves = [g.rdp() for g in guarantees]
        return curves[0].parallel(*curves[1:])

    def cannot_meet(x: float) -> bool:
        # The smallest batch's exact curve is one of the maximum's parts and cheap (its residue
        # table has n = 2 entries). The family is an RDP curve, whose one route is its conversion
        # (rdp-cks): when the conversion of that part alone provably exceeds the target, so does
        # every certified evaluation of the maximum, and calibrate skips the evaluation.
        guarantee = make_protocol(algorithm, _snap_down(1.0 / x), s=s, p=p, tau_p=tau_p).mechanism(sizes[0])
        if isinstance(guarantee, acc.WithinTotalVariation):  # its curve is the analysed mechanism's
            guarantee = guarantee.mechanism
        if not guarantee.rdp_is_exact:
            return False
        try:
            return acc.rdp_conversion_exceeds(guarantee.rdp(), target_delta, target, compose=compose)
        except AccountingError:  # a curve that is not one divergence leaf: nothing proven
            return False

    if rule == "exact":
        target, target_delta, compose, smallest = epsilon, delta, returns, epsilon / (100 * returns)
        extra: dict = {}
    else:
        per_batch = acc.appendix_i_per_batch(epsilon, delta, returns)
        target, target_delta, compose, smallest = per_batch.epsilon, per_batch.delta, 1, per_batch.epsilon / 100
        extra = {"per_batch": [per_batch.epsilon, per_batch.delta]}
    # noise multiplier x = 1/eps_b in [1/epsilon (no more than the one-batch eps), 1/smallest]
    cal = acc.calibrate(worst_curve, target, target_delta, compose=compose, lower=1.0 / epsilon, upper=1.0 / smallest, relative_tolerance=1e-3,
                        ruled_out=cannot_meet)
    return {
        "rule": rule,
        "returns": returns,
        "batch_epsilon": _snap_down(1.0 / cal.parameter),
        "batch_sizes": [sizes[0], sizes[-1]],
        **extra,
        **({"sampler_total_variation": times_total_variation(slack, returns), "delta_for_the_curves": delta} if slack else {}),
        "calibration": cal.as_dict(),
    }


def returning_users_plan(config: Any, arms: int) -> tuple[Any, Any, dict]:
    """(protocol, budget, extra) of a returning-users run of an Algorithm 1 variant with ``arms``
    arms: the per-batch protocol calibrated so that ``max_returns`` batches meet (eps, delta), the
    (eps, delta) budget, and what the result records about it. Shared by the run and by the durable
    ledger's up-front check of a whole run (``dpverify._bandits._runner``)."""
    largest = largest_release(config.horizon, config.batch_base)
    if config.population < largest:
        raise AccountingError(
            "population", config.population,
            f"at least the largest batch the run can release ({largest} = the largest {config.batch_base}^b < T = {config.horizon}): "
            "a user joins a batch at most once",
        )
    tau_p = config.tau_p_for(arms)
    cal = calibrated_batch_epsilon(
        config.algorithm, float(config.epsilon), float(config.delta), int(config.max_returns), float(config.s), config.confidence, tau_p,
        int(config.horizon), int(config.batch_base), config.returning_calibration,
    )
    protocol = make_protocol(config.algorithm, cal["batch_epsilon"], s=config.s, p=config.confidence, tau_p=tau_p)
    budget = acc.ApproxDP(float(config.epsilon), config.delta)
    return protocol, budget, {"returning_users": {"population": config.population, "max_returns": config.max_returns, **cal}}


# ---- runners bound to the registry -----------------------------------------------------------------


def _run_se_family(config: Any, instance: Any, seeds: dict, run_index: int):
    setup, extra = se_setup(config, instance)
    record = run_batch_elimination(setup, seeds, run_index)
    record.extra.update(extra)
    return record


def se_setup(config: Any, instance: Any) -> tuple[EliminationSetup, dict]:
    """The ``EliminationSetup`` ``dpverify run`` builds for an Algorithm 1 configuration (and the
    extra record fields): the protocol, its budget, returning users' calibration."""
    extra: dict = {}
    if config.algorithm == "se":
        protocol, budget = None, None
    elif config.population is not None:
        protocol, budget, extra = returning_users_plan(config, instance.k)
    else:
        protocol = make_protocol(config.algorithm, float(config.epsilon), s=config.s, p=config.confidence, tau_p=config.tau_p_for(instance.k))
        budget = run_budget(config, instance.k)
    setup = EliminationSetup(
        instance=instance,
        horizon=config.horizon,
        protocol=protocol,
        budget=budget,
        p=config.confidence,
        batch_base=config.batch_base,
        path=config.path,
        realised=config.realised,
        population=config.population,
        ledger=config.ledger,
        delta=config.delta,
        checkpoint_count=config.checkpoint_count,
        protocol_label=config.algorithm,
        radius=config.radius,
        allow_idealised_charges=config.allow_idealised_charges,
    )
    return setup, extra


def _run_dp_se(config: Any, instance: Any, seeds: dict, run_index: int):
    return run_dp_se(dp_se_setup(config, instance), float(config.epsilon), seeds, run_index)


def dp_se_setup(config: Any, instance: Any) -> EliminationSetup:
    """The ``EliminationSetup`` ``dpverify run`` builds for DP-SE (its protocol and budget)."""
    from .._executed import _protocols as P

    if config.population is not None:
        raise AccountingError("population", config.population, "None for dp-se (returning users are supported for Algorithm 1 variants)")
    protocol = P.central_laplace_protocol(float(config.epsilon), noise=config.noise)
    setup = EliminationSetup(
        instance=instance,
        horizon=config.horizon,
        protocol=protocol,
        budget=protocol.mechanism(1).pure(),
        p=config.confidence,
        path=config.path,
        realised=config.realised,
        delta=config.delta,
        checkpoint_count=config.checkpoint_count,
        protocol_label="dp-se",
        allow_idealised_charges=config.allow_idealised_charges,
    )
    return setup


def _run_ucb(config: Any, instance: Any, seeds: dict, run_index: int):
    return run_ucb(ucb_setup(config, instance), seeds, run_index)


def ucb_setup(config: Any, instance: Any) -> UCBSetup:
    """The ``UCBSetup`` ``dpverify run`` builds for a UCB-family configuration."""
    if config.population is not None:
        raise AccountingError("population", config.population, "None for the UCB family (unique users)")
    setup = UCBSetup(
        instance=instance,
        horizon=config.horizon,
        algorithm=config.algorithm,
        epsilon=None if config.algorithm == "ucb1" else float(config.epsilon),
        realised=config.realised,
        delta=config.delta,
        checkpoint_count=config.checkpoint_count,
        noise=config.noise,
    )
    return setup


_DESCRIPTIONS = {
    "dist-dp-se": "Algorithm 1, Theorem 1: Polya noise per user, SecAgg, pure DP (ICLR 2023)",
    "dist-rdp-se": "Algorithm 1, Theorem 2: Skellam noise per user, SecAgg, RDP, scale s",
    "dist-cdp-se": "Algorithm 1, Theorem 4: discrete Gaussian noise per user, SecAgg, zCDP, scale s",
    "cdp-se": "Algorithm 1, App. H.1: central discrete Laplace (CDP-SE)",
    "ldp-se": "Algorithm 1, App. H.2: local discrete Laplace (LDP-SE)",
    "se": "Algorithm 1, non-private (exact batch sums)",
    "dp-se": "DP-SE (Sajed & Sheffet 2019): central Laplace (float-safe grid + discrete Laplace; --noise idealised: float)",
    "ucb1": "UCB1 (Auer et al. 2002), non-private baseline",
    "ldp-ucb-l": "LDP-UCB-L (Ren et al.): CTL curator (float-safe; --noise idealised: float), Laplace index",
    "ldp-ucb-b": "LDP-UCB-B (Ren et al.): CTB curator, UCB1 index",
    "ldp-ucb-ls": "LDP-UCB-LS (Ren et al.): sigmoid + CTL (float-safe; --noise idealised: float)",
    "ldp-ucb-bs": "LDP-UCB-BS (Ren et al.): sigmoid + CTB",
}

for _name in SE_PROTOCOLS:
    register_algorithm(AlgorithmSpec(_name, "multi-armed", _run_se_family, _DESCRIPTIONS[_name], True, "ICLR 2023"))
register_algorithm(AlgorithmSpec("se", "multi-armed", _run_se_family, _DESCRIPTIONS["se"], False, "ICLR 2023"))
register_algorithm(AlgorithmSpec("dp-se", "multi-armed", _run_dp_se, _DESCRIPTIONS["dp-se"], True, "Sajed & Sheffet 2019"))
for _name in UCB_ALGORITHMS:
    register_algorithm(AlgorithmSpec(_name, "multi-armed", _run_ucb, _DESCRIPTIONS[_name], _name != "ucb1", "Ren et al. 2020"))

register_instance(InstanceSpec("easy", "multi-armed", lambda c, s: easy_instance(s, reward_sd=c.reward_sd), "K=10, means U[0.25,0.75], clipped Gaussian", True))
register_instance(InstanceSpec("hard", "multi-armed", lambda c, s: hard_instance(s, reward_sd=c.reward_sd), "K=10, means U[0.45,0.55], clipped Gaussian", True))
register_instance(InstanceSpec("ren-bernoulli", "multi-armed", lambda c, s: ren_bernoulli_instance(), "Ren et al. 20 Bernoulli arms"))
register_instance(InstanceSpec("ren-mixed", "multi-armed", lambda c, s: ren_mixed_instance(), "Ren et al. 20 mixed arms"))
register_instance(InstanceSpec("mslr", "multi-armed", lambda c, s: mslr_instance(label_scale=c.label_scale), "MSLR-WEB10K K=50 empirical"))

register_instance_type(BanditInstance, "multi-armed")
