"""Results of bandit runs: one run's record, the aggregate over seeds, the privacy ledger summary.

A :class:`RunRecord` is what one run (one seed) returns: regret at the checkpoints, pulls per arm,
elimination times, its ledger summary and the seed path that produced it. :func:`aggregate`
turns the records of many seeds into a :class:`RunResult` (means, standard errors, a confidence
interval for the final regret), which serialises to the JSON that ``dpverify run`` writes.
No T-by-runs dumps: only the checkpoints are kept.
"""

from __future__ import annotations

import functools

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from accounting import AccountingError

from .._presentation._versions import versions

__all__ = ["RunRecord", "RunResult", "aggregate", "checkpoints", "ledger_summary", "versions"]

RDP_ORDERS = (1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 64.0)


def checkpoints(horizon: int, count: int = 60) -> np.ndarray:
    """Log-spaced integer times in [1, horizon], always ending at the horizon."""
    if horizon < 1:
        raise AccountingError("horizon", horizon, "an integer >= 1")
    grid = np.unique(np.round(np.logspace(0, math.log10(horizon), count)).astype(np.int64))
    grid = grid[(grid >= 1) & (grid <= horizon)]
    if grid[-1] != horizon:
        grid = np.append(grid, horizon)
    return grid


@dataclass
class RunRecord:
    """One run (one seed) of one algorithm on one instance."""

    run_index: int
    times: np.ndarray
    regret: np.ndarray  # pseudo-regret (or realised regret) at ``times``
    pulls: np.ndarray  # pulls per arm (or per action) at the horizon
    eliminations: list  # (arm, time) pairs, time = pulls made when the arm was removed
    ledger: dict  # ledger_summary(...) of this run
    instance: dict  # the instance's description (means, laws, options)
    extra: dict = field(default_factory=dict)

    @property
    def final_regret(self) -> float:
        return float(self.regret[-1])


@dataclass
class RunResult:
    """Many seeds of one configuration: the JSON of ``dpverify run``."""

    algorithm: str
    instance: str
    horizon: int
    seeds: int
    seed: int
    epsilon: float | None
    options: dict
    regret_kind: str
    times: list
    mean_regret: list
    se_regret: list
    mean_final_regret: float
    final_regret_ci95: list
    final_regrets: list
    mean_pulls: list
    eliminations: list
    ledger: dict
    seed_tree: dict
    versions: dict
    per_run: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _t_quantile_975(dof: int) -> float:
    from scipy.special import stdtrit  # scipy.stats takes seconds to import

    return float(stdtrit(dof, 0.975)) if dof > 0 else math.inf


def aggregate(
    records: Sequence[RunRecord],
    *,
    algorithm: str,
    instance: str,
    horizon: int,
    seed: int,
    epsilon: float | None,
    options: dict,
    regret_kind: str,
    seed_tree: dict,
) -> RunResult:
    if not records:
        raise AccountingError("records", 0, "at least one run")
    records = sorted(records, key=lambda r: r.run_index)
    times = records[0].times
    regret = np.stack([r.regret for r in records])
    n = regret.shape[0]
    mean = regret.mean(axis=0)
    se = regret.std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.zeros_like(mean)
    final = regret[:, -1]
    half = _t_quantile_975(n - 1) * float(se[-1]) if n > 1 else math.inf
    pulls = np.mean(np.stack([r.pulls for r in records]), axis=0)
    ledgers = [r.ledger for r in records]
    return RunResult(
        algorithm=algorithm,
        instance=instance,
        horizon=int(horizon),
        seeds=n,
        seed=int(seed),
        epsilon=epsilon,
        options=options,
        regret_kind=regret_kind,
        times=times.tolist(),
        mean_regret=mean.tolist(),
        se_regret=se.tolist(),
        mean_final_regret=float(final.mean()),
        final_regret_ci95=[float(final.mean() - half), float(final.mean() + half)],
        final_regrets=final.tolist(),
        mean_pulls=pulls.tolist(),
        eliminations=[r.eliminations for r in records],
        ledger=_merge_ledgers(ledgers),
        seed_tree=seed_tree,
        versions=versions(),
        per_run=[{"run_index": r.run_index, "instance": r.instance, **r.extra} for r in records],
    )


def _merge_ledgers(ledgers: list[dict]) -> dict:
    """The configuration's ledger: the worst run's per-user guarantee (runs differ only by seed)."""
    if not ledgers:
        return {}
    first = dict(ledgers[0])
    if not first.get("private", False):
        return first
    worst = max(ledgers, key=lambda d: (d.get("per_user", {}).get("approx") or {}).get("epsilon", 0.0))
    out = dict(worst)
    out["runs"] = len(ledgers)
    out["charges_per_run"] = [d.get("charges", 0) for d in ledgers]
    return out


# ---- ledger summary -----------------------------------------------------------------------------


def _guarantee_dict(g: Any) -> dict:
    from accounting.internal import guarantee_to_dict as _guarantee_to_dict

    try:
        return _guarantee_to_dict(g)
    except Exception:  # a free-form guarantee without a spec: describe it
        return {"type": "described", "text": str(g)}


def _views(guarantee: Any) -> tuple[Any, Any, tuple[float, ...] | None]:
    """(pure, zCDP, RDP at RDP_ORDERS) of one charged guarantee, each None where it has none;
    memoised, since every seed of a sweep charges the same few guarantees."""
    try:
        return _views_cached(guarantee)
    except TypeError:  # unhashable
        return _compute_views(guarantee)


def _compute_views(g: Any) -> tuple[Any, Any, tuple[float, ...] | None]:
    import accounting as acc

    pure = g.pure() if isinstance(g, acc.Mechanism) else g
    zcdp = g if isinstance(g, acc.ZCDP) else (g.zcdp() if isinstance(g, acc.Mechanism) else None)
    if isinstance(g, acc.ApproxDP):
        return pure, zcdp, None
    curve = g.to_rdp() if isinstance(g, (acc.PureDP, acc.ZCDP)) else g.rdp()
    return pure, zcdp, tuple(curve(a) for a in RDP_ORDERS)


_views_cached = functools.lru_cache(maxsize=1024)(_compute_views)


@functools.lru_cache(maxsize=1024)
def _routes(guarantee: Any, delta: float, multiplicity: int) -> Any:
    """Every seed's ledger summary asks for the same conversions: compute each once."""
    import accounting as acc

    # only the best certified route is read (comparison routes skipped); the exact conversion is
    # memoised per (mechanism, delta, compose) in accounting, shared with the budget and ledger
    return acc.epsilon_routes(guarantee, delta, compose=multiplicity, include_pld=False, comparisons=False)


def ledger_summary(ledger: Any, *, delta: float, path: str, bits_per_user: int | None, protocol: str, notes: str = "",
                   implementation: str | None = None, idealised: bool | None = None) -> dict:
    """The run's privacy ledger: the per-user guarantee in every notion, bits, path, the charges.

    ``implementation`` names what ran (e.g. the float-safe curator's grid and sampler); ``idealised``
    marks a privatizer with float noise: the summary then carries ``noise = "idealised"`` and the
    warning "idealised: not DP in floating point" (the numbers are those of the real-arithmetic
    mechanism, which no computer runs). ``idealised=None`` (a runner that does not say) records
    ``noise = "unstated"``.

    The per-user guarantee is that of the worst user. Charges here touch disjoint users (unique
    users: each user takes part in one release) *or* are composed by the ledger (returning users);
    the pure/zCDP/RDP views below are computed from the distinct charged guarantees, composed per
    user exactly as the ledger does: for disjoint users the worst one is the maximum, which is the
    ledger's own ``spent()`` in its budget's notion.
    """
    import accounting as acc

    from .._executed._noise import IDEALISED_LABEL

    if ledger is None:
        return {"private": False, "guarantee": "none (non-private baseline)", "path": path, "protocol": protocol}
    noise = {"noise": "unstated" if idealised is None else "idealised" if idealised else "float-safe", "implementation": implementation or protocol}
    if idealised:
        noise["warning"] = IDEALISED_LABEL
    spent = ledger.spent()
    charges = ledger.charges
    distinct: list = []
    try:  # guarantees are frozen values: a dict keeps the first of each, in order
        distinct = list(dict.fromkeys(c.guarantee for c in charges))
    except TypeError:  # an unhashable one
        for c in charges:
            if not any(c.guarantee is d or c.guarantee == d for d in distinct):
                distinct.append(c.guarantee)
    per_user: dict[str, Any] = {}
    # per-user multiplicity: the most charges any single user is touched by
    multiplicity = ledger.max_charges_per_user()
    views = [_views(g) for g in distinct]
    pures = [v[0] for v in views]
    if all(isinstance(p, acc.PureDP) for p in pures) and pures:
        per_user["pure"] = max(p.epsilon for p in pures) * multiplicity if multiplicity > 1 else max(p.epsilon for p in pures)
    else:
        per_user["pure"] = None
    zs = [v[1] for v in views]
    per_user["zcdp"] = (max(z.rho for z in zs) * multiplicity) if zs and all(z is not None for z in zs) else None
    # the samplers' total variation from the analysed laws (Dist-CDP-SE's truncated discrete Gaussians):
    # the zCDP and RDP values above are the analysed laws'; every (eps, delta) here includes it
    per_user["sampler_total_variation"] = ledger.total_variation()
    if distinct and all(v[2] is not None for v in views):
        values = [max(v[2][i] for v in views) * multiplicity for i in range(len(RDP_ORDERS))]
        per_user["rdp"] = {"orders": list(RDP_ORDERS), "epsilons": values, "note": "worst user's curve at these orders"}
        approx = []
        for g in distinct:
            approx.append(_routes(g, delta, multiplicity) if not isinstance(g, acc.ApproxDP) else None)
        best = max(approx, key=lambda r: r.epsilon)
        per_user["approx"] = {"epsilon": best.epsilon, "delta": delta, "route": best.route}
    else:
        per_user["rdp"] = None
        per_user["approx"] = {"epsilon": getattr(spent, "epsilon", None), "delta": getattr(spent, "delta", delta), "route": "ledger"}
    return {
        "private": True,
        "protocol": protocol,
        "path": path,
        "budget": _guarantee_dict(ledger.budget),
        "spent": _guarantee_dict(spent) if spent is not None else None,
        "per_user": per_user,
        "max_releases_per_user": multiplicity,
        "charges": len(charges),
        "distinct_guarantees": [_guarantee_dict(g) for g in distinct],
        "bits_per_user": bits_per_user,
        "notes": notes,
        **noise,
    }
