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
    base = "zeros"          # or a list: "threshold", "zeros", "ones", "mixed", "flat", or a table file
                            #   (.npy or .csv, one row per user; path relative to the claim file);
                            #   default: threshold, zeros, ones, mixed (``dpverify._audit._runs.run_pairs``)
    keep = 1                # candidate pairs kept by the search and audited at full size
    search_samples = 2000   # draws per table per candidate in the search
    [audit]
    samples = 100_000

A user's own loop (``dpverify._audit._loops``: ``loop(run, **parameters)`` written against
``run.pull``, ``run.privatizer``, ``run.ledger``) is named ``target = "run:package.module:loop"``;
``[parameters]`` then holds ``arms``, ``horizon``, ``view``, optional ``slots = [[batch, arm], ...]``,
and every other key is passed to the loop as a keyword argument. Its default claim form is
"pure" when every charge has a pure guarantee, else "rdp".

The claim is what the run's ledger records per user (``[claim] form`` picks pure, rdp or zcdp;
default: the algorithm's). The auditor's pair search chooses among the generated candidates on
samples of its own (no error budget spent), and witness events name the view, batch and arm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from accounting import AccountingError

from .._loops import loop_engine
from .._runs import BASES, RUN_ALGORITHMS, SUITE_LEARNED, SUITE_SEARCH_SAMPLES, run_target
from ._registry import PREFIXES, _TARGETS_COST, Built, Target, _Table
from ._schema import SuiteError
from ._user import _import, check_target_name

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


def _bases(file: str, nb: _Table) -> list[Any] | None:
    raw = nb._get("base", None)
    if raw is None:
        return None
    items = raw if isinstance(raw, list) else [raw]
    if not items or any(not isinstance(x, str) or not x for x in items):
        raise nb.error("base", f'expected a base name ({", ".join(BASES)}), a table file, or a list of them, got {raw!r}')
    out: list[Any] = []
    for item in items:
        if item in BASES:
            out.append(item)
            continue
        path = Path(file).parent / item
        try:
            table = np.load(path, allow_pickle=False) if path.suffix == ".npy" else np.loadtxt(path, delimiter=",", ndmin=2)
        except (OSError, ValueError) as error:
            raise nb.error("base", f"{item!r} is neither a base name ({', '.join(BASES)}) nor a readable .npy/.csv table ({error})") from None
        out.append(np.asarray(table, dtype=np.float64))
    return out


def _neighbour_options(file: str, engine: Any, nb: _Table) -> tuple[dict[str, Any], int, int]:
    placements = _placements(nb)
    extremes = nb.pair("extremes", [engine.low, engine.high], lo=engine.low, hi=engine.high)
    keep = nb.integer("keep", 1, minimum=1, maximum=8)
    search_samples = nb.integer("search_samples", SUITE_SEARCH_SAMPLES, minimum=100, maximum=10**6)
    return {"placements": placements, "extremes": extremes, "base": _bases(file, nb)}, keep, search_samples


def _target_from(file: str, engine: Any, view: str, nb: _Table, form: str | None) -> Built:
    pair_options, keep, search_samples = _neighbour_options(file, engine, nb)
    try:
        target = run_target(engine, view, **pair_options)
    except AccountingError as error:
        if error.name in ("placements", "extremes", "base"):
            raise nb.error(error.name, str(error)) from None
        raise
    if form is None:  # a user's loop: the strongest form every charge has
        form = "pure" if target.guarantee.pure() is not None else "rdp"
    options = {"pair_search": "pilot", "search_budget": len(target.pairs), "keep_pairs": min(keep, len(target.pairs)),
               "search_samples": search_samples, "learned": SUITE_LEARNED}
    note = f"{engine.describe()}; {view} view; {target.guarantee.describe()}"
    return Built(target.mechanism, target.pairs, target.guarantee, form, note=note, audit_options=options,
                 describe_event=target.describe_event)


def _slots(p: _Table) -> list[tuple[int, int]] | None:
    raw = p._get("slots", None)
    if raw is None:
        return None
    if (not isinstance(raw, list) or not raw
            or any(not isinstance(x, list) or len(x) != 2 or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in x) for x in raw)):
        raise p.error("slots", f"expected a list of [batch, arm] pairs of integers >= 0, e.g. [[1, 0], [1, 1]], got {raw!r}")
    return [(int(b), int(a)) for b, a in raw]


def _user_loop(file: str, name: str) -> Target:
    """``run:package.module:loop``: a user's loop written against the public pieces (``._loops``)."""
    check_target_name(file, name)
    _TARGETS_COST.setdefault(f"run:{name}", 40.0)

    def builder(p: _Table, nb: _Table) -> Built:
        loop = _import(file, name)
        arms = p.integer("arms", 2, minimum=2, maximum=20)
        horizon = p.integer("horizon", minimum=4, maximum=10**6)
        view = p.choice("view", ("server", "public", "transcript"), "transcript")
        slots = _slots(p)
        parameters = p.remaining()
        try:
            engine = loop_engine(loop, arms=arms, horizon=horizon, slots=slots, **parameters)
        except TypeError as error:  # the loop does not take these parameters
            raise p.error(next(iter(parameters), "arms"), f"{name}(run, **parameters) raised TypeError: {error}") from None
        return _target_from(file, engine, view, nb, None)

    return Target(f"run:{name}", f"user loop {name}", builder)


def _resolve(file: str, algorithm: str) -> Target:
    if ":" in algorithm:
        return _user_loop(file, algorithm)
    spec = RUN_ALGORITHMS.get(algorithm)
    if spec is None:
        raise SuiteError(file, "target", f"unknown run algorithm {algorithm!r} (run: one of {', '.join(sorted(RUN_ALGORITHMS))}, "
                         'or a user loop "run:package.module:loop")')
    name = f"run:{algorithm}"
    _TARGETS_COST.setdefault(name, 40.0)  # a run is ~10^3 users: schedule these claims first

    def builder(p: _Table, nb: _Table) -> Built:
        arms = p.integer("arms", 2, minimum=2, maximum=20)
        horizon = p.integer("horizon", minimum=4, maximum=10**6)
        epsilon = p.number("epsilon", maximum=10.0)
        view = p.choice("view", ("server", "public", "transcript"))
        engine = spec.build(arms=arms, horizon=horizon, epsilon=epsilon, **_options(p))
        return _target_from(file, engine, view, nb, spec.form)

    return Target(name, spec.summary, builder, planted=spec.planted)


PREFIXES["run"] = _resolve
