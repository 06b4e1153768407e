"""Whole runs as suite targets: ``target = "run:<algorithm>"`` (issue 24; ``dpverify._audit._runs``).

A claim file names an algorithm the runners run (or a planted variant, ``run:bug.<name>``, from
:mod:`._planted_runs`), a small instance and horizon, the view, and how its neighbours are made::

    target = "run:dist-dp-se"
    [parameters]
    arms = 2                # the reward table's arms (its rows are the horizon's users)
    horizon = 1024
    epsilon = 1.0
    view = "server"         # "server", "public" or "transcript" (both)
    # s, p, tau_rule, batch_base, radius, population, max_returns: as for ``dpverify run``
    [neighbours]            # optional
    placements = [[7, 0]]   # (batch, arm) of the changed user; default: every batch with a threshold table
    extremes = [0.0, 1.0]   # her rewards in D and in D'
    keep = 1                # candidate pairs kept by the search and audited at full size
    search_samples = 2000   # draws per table per candidate in the search
    [audit]
    samples = 100_000

The claim is what the run's ledger records per user (``[claim] form`` picks pure, rdp or zcdp;
default: the algorithm's). The auditor's pair search chooses among the generated candidates on
samples of its own (no error budget spent), and witness events name the view, batch and arm.
"""

from __future__ import annotations

from typing import Any

from accounting import AccountingError

from .._runs import RUN_ALGORITHMS, run_target
from ._registry import PREFIXES, _TARGETS_COST, Built, Target, _Table
from ._schema import SuiteError

__all__: list[str] = []

#: the engine options a claim file may set, and their type
_OPTIONS = {"s": "number", "p": "number", "tau_rule": "choice", "batch_base": "integer", "radius": "choice", "population": "integer",
            "max_returns": "integer", "delta": "number", "alpha": "number", "reward_bound": "number", "privacy_width": "choice"}


def _options(p: _Table) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, kind in _OPTIONS.items():
        if key not in p._table:
            continue
        if kind == "number":
            out[key] = p.number(key, maximum=100.0)
        elif kind == "integer":
            out[key] = p.integer(key, minimum=1, maximum=10**7)
        elif key == "tau_rule":
            out[key] = p.choice(key, ("theorem", "simulation", "lemma2"))
        elif key == "privacy_width":
            out[key] = p.choice(key, ("paper", "exact"))
        else:
            out[key] = p.choice(key, ("lemma2", "authors"))
    return out


def _placements(nb: _Table) -> list[tuple[int, int]] | None:
    raw = nb._get("placements", None)
    if raw is None:
        return None
    if (not isinstance(raw, list) or not raw
            or any(not isinstance(x, list) or len(x) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in x) for x in raw)):
        raise nb.error("placements", f"expected a list of [batch, arm] pairs of integers, e.g. [[7, 0]], got {raw!r}")
    return [(int(b), int(a)) for b, a in raw]


def _resolve(file: str, algorithm: str) -> Target:
    spec = RUN_ALGORITHMS.get(algorithm)
    if spec is None:
        raise SuiteError(file, "target", f"unknown run algorithm {algorithm!r} (run: one of {', '.join(sorted(RUN_ALGORITHMS))})")
    name = f"run:{algorithm}"
    _TARGETS_COST.setdefault(name, 40.0)  # a run is ~10^3 users: schedule these claims first

    def builder(p: _Table, nb: _Table) -> Built:
        arms = p.integer("arms", 2, minimum=2, maximum=20)
        horizon = p.integer("horizon", minimum=4, maximum=10**6)
        epsilon = p.number("epsilon", maximum=10.0)
        view = p.choice("view", ("server", "public", "transcript"))
        engine = spec.build(arms=arms, horizon=horizon, epsilon=epsilon, **_options(p))
        placements = _placements(nb)
        extremes = nb.pair("extremes", [engine.low, engine.high], lo=engine.low, hi=engine.high)
        keep = nb.integer("keep", 1, minimum=1, maximum=8)
        search_samples = nb.integer("search_samples", 2000, minimum=100, maximum=10**6)
        try:
            target = run_target(engine, view, placements=placements, extremes=extremes)
        except AccountingError as error:
            if error.name in ("placements", "extremes"):
                raise nb.error(error.name, str(error)) from None
            raise
        options = {"pair_search": "pilot", "search_budget": len(target.pairs), "keep_pairs": min(keep, len(target.pairs)),
                   "search_samples": search_samples, "learned": False}
        note = f"{engine.describe()}; {view} view; {target.guarantee.describe()}"
        return Built(target.mechanism, target.pairs, target.guarantee, spec.form, note=note, audit_options=options,
                     describe_event=target.describe_event)

    return Target(name, spec.summary, builder, planted=spec.planted)


PREFIXES["run"] = _resolve
