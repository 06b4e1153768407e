"""The golden corpus's queries: how each is described (JSON), rebuilt, run and compared bit for bit.

A query is a JSON object ``{"id": ..., "kind": ..., ...}``; objects inside it (mechanisms,
guarantees, dp_accounting events, RDP curves) are specs ``{"@": name, "args": [...], "kwargs": {...}}``
rebuilt by :func:`build` (``{"$": "x"}`` is the parameter of a calibration family). :func:`run`
answers a query with a flat dict of results: every float as its ``repr`` (which round-trips, so
equal strings mean equal bits), route names as strings, and where the planner reports them the
list of (route, status, value) of every alternative. :func:`differences` compares a recorded
result with a replayed one, accepting only the entries of the allow-list whose new value is
tighter (an upper bound that went down; a remaining budget that went up).

Kinds: ``epsilon`` (``epsilon_routes``), ``delta`` (``delta_routes``), ``shuffle``
(``shuffle_routes``), ``event`` (``from_dp_event`` then ``epsilon_routes``), ``accountant``
(``CertifiedAccountant``), ``calibrate``, ``ledger`` (in memory or durable SQLite), ``run_budget``
(a bandit run's budget), ``function`` (a public function of ``accounting``) and ``cli`` (the
``dpverify`` command line: ``--json`` output, or the default job's printed numbers).
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from fractions import Fraction
from typing import Any

import accounting as acc

#: CLI JSON keys left out of the comparison: timings, and prose that says how (not what)
CLI_IGNORED_KEYS = frozenset({"seconds", "estimated_seconds", "detail", "reason", "how", "setting", "description", "ledger", "url",
                              "version", "versions", "elapsed", "time", "timestamp", "id", "hash", "chain", "created"})
#: result keys where a larger value is the tighter one (everything else is an upper bound)
LARGER_IS_TIGHTER = ("remaining",)


# ---- specs ----------------------------------------------------------------------------------------


def M(name: str, *args: Any, **kwargs: Any) -> dict:
    """The spec of ``name(*args, **kwargs)`` (see :func:`build`)."""
    spec: dict = {"@": name}
    if args:
        spec["args"] = list(args)
    if kwargs:
        spec["kwargs"] = kwargs
    return spec


X = {"$": "x"}


def _rdp_of(mechanism: Any, k: int = 1) -> Any:
    curve = mechanism.rdp()
    return curve if k == 1 else curve.times(k)


def _resolve(name: str) -> Any:
    if name == "Fraction":
        return Fraction
    if name == "rdp_of":
        return _rdp_of
    if name.startswith("dp."):
        from dp_accounting import dp_event

        return getattr(dp_event, name[3:])
    if name.startswith("mech."):
        from accounting import _mechanisms

        return getattr(_mechanisms, name[5:])
    obj: Any = acc
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def build(spec: Any, x: Any = None) -> Any:
    """The object a spec describes (``x`` replaces ``{"$": "x"}``)."""
    if isinstance(spec, dict):
        if "$" in spec:
            return x
        if "@" in spec:
            args = [build(a, x) for a in spec.get("args", [])]
            kwargs = {k: build(v, x) for k, v in spec.get("kwargs", {}).items()}
            return _resolve(spec["@"])(*args, **kwargs)
        return {k: build(v, x) for k, v in spec.items()}
    if isinstance(spec, list):
        return [build(s, x) for s in spec]
    return spec


# ---- results --------------------------------------------------------------------------------------


def f(value: Any) -> str | None:
    """A float as its repr (round-trips exactly), None kept."""
    return None if value is None else repr(float(value))


def _epsilon_result(result: Any, *, value: str = "epsilon") -> dict:
    out = {"epsilon": f(result.epsilon), "delta": f(result.delta), "route": result.route, "alpha": f(getattr(result, "alpha", None))}
    for name in ("epsilon_lower", "delta_lower", "truncated_mass", "infinite_loss_mass"):  # a PLDResult's bracket and masses
        if getattr(result, name, None) is not None:
            out[name] = f(getattr(result, name))
    for name in ("discretisation", "pld_grid", "exact", "outcomes"):
        field = getattr(result, name, None)
        if field is not None:
            out[name] = f(field) if isinstance(field, float) else field
    alternatives = getattr(result, "alternatives", ())
    if alternatives:
        out["routes"] = [[a.route, getattr(a, "status", getattr(a, "certified", "")), f(getattr(a, value))] for a in alternatives]
    return out


def _budget(g: Any) -> dict:
    if g is None:
        return {"type": None}
    out: dict = {"type": type(g).__name__}
    for name in ("epsilon", "delta", "rho"):
        if hasattr(g, name):
            out[name] = f(getattr(g, name))
    return out


def _flatten_json(value: Any, path: str, out: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in CLI_IGNORED_KEYS:
                _flatten_json(item, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _flatten_json(item, f"{path}[{index}]", out)
    elif isinstance(value, float):
        out[path] = f(value)
    else:
        out[path] = value


_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?|inf)")


def _cli(args: list[str], stdin_event: Any = None) -> dict:
    from click.testing import CliRunner

    from dpverify.cli import main

    text = None
    if stdin_event is not None:  # a dp_accounting event as `account event -` reads it
        from accounting._events._dp_event import event_to_dict

        text = json.dumps(event_to_dict(build(stdin_event)))
    with tempfile.TemporaryDirectory() as tmp:
        args = [a.replace("{tmp}", tmp) for a in args]
        # a fixed width: a table's wrapping (and so the numbers in it) must not depend on the terminal
        result = CliRunner(env={"COLUMNS": "200", "LINES": "50", "NO_COLOR": "1"}).invoke(main, args, input=text, catch_exceptions=False,
                                                                                         terminal_width=200)
    out: dict = {"exit_code": result.exit_code}
    if "--json" in args:
        _flatten_json(json.loads(result.output), "", out)
    else:  # a table: the numbers it prints, in order
        out["numbers"] = _NUMBER.findall(result.output)
    return out


# ---- running a query ------------------------------------------------------------------------------


def _options(query: dict, *names: str) -> dict:
    return {n: query[n] for n in names if n in query}


def _ledger(query: dict) -> dict:
    budget = build(query["budget"])
    steps = []
    with tempfile.TemporaryDirectory() as tmp:
        if query.get("durable"):
            ledger = acc.Ledger.open(f"sqlite:///{tmp}/ledger.db", budget, name="golden", create=True)
        else:
            ledger = acc.Ledger(budget, name="golden")
        try:
            for guarantee, users in query["charges"]:
                participants = None if users is None else range(users[0], users[1])
                try:
                    ledger.charge(build(guarantee), participants)
                    accepted = True
                except acc.BudgetExceeded:
                    accepted = False
                steps.append({"accepted": accepted, "spent": _budget(ledger.spent()), "remaining": f(ledger.remaining())})
            final = {"charges": len(ledger.charges), "max_charges_per_user": ledger.max_charges_per_user(), "total_variation": f(ledger.total_variation())}
        finally:
            close = getattr(ledger, "close", None)
            if callable(close):
                close()
    return {"steps": steps, **final}


def _accountant(query: dict) -> dict:
    from dp_accounting import NeighboringRelation

    accountant = acc.CertifiedAccountant(getattr(NeighboringRelation, query["relation"]), **_options(query, "time_budget"))
    for event, count in query["events"]:
        accountant.compose(build(event), count)
    return {f"{what}({arg!r})": f(accountant.get_epsilon(arg) if what == "get_epsilon" else accountant.get_delta(arg)) for what, arg in query["ask"]}


def _run_budget(query: dict) -> dict:
    from dpverify._bandits._builtin import _budget_cached, run_budget
    from dpverify._bandits._runner import RunConfig

    _budget_cached.cache_clear()
    config = RunConfig(**query["config"])
    return _budget(run_budget(config, query["arms"]))


def _function(query: dict) -> dict:
    value = build(M(query["name"], *query.get("args", []), **query.get("kwargs", {})))
    if isinstance(value, (float, int)) and not isinstance(value, bool):
        return {"value": f(value)}
    if value is None:
        return {"value": None}
    if isinstance(value, list):  # dist_rdp_se_returning: rows of floats
        out: dict = {}
        _flatten_json(value, "rows", out)
        return out
    if hasattr(value, "route"):
        return _epsilon_result(value)
    out = {}
    for name in ("epsilon", "delta", "rho", "epsilon_lower", "parameter"):
        if hasattr(value, name):
            out[name] = f(getattr(value, name))
    for name in ("route", "method"):
        if isinstance(getattr(value, name, None), str):
            out[name] = getattr(value, name)
    if not out:
        raise TypeError(f"no result fields in {value!r}")
    return out


def run(query: dict) -> dict:
    """The results of one query (see the module docstring)."""
    from accounting._routing._routes import delta_routes

    kind = query["kind"]
    if kind == "epsilon":
        result = acc.epsilon_routes(build(query["subject"]), query["delta"],
                                    **_options(query, "compose", "time_budget", "exhaustive", "include_pld", "comparisons"))
        return _epsilon_result(result)
    if kind == "delta":
        result = delta_routes(build(query["subject"]), query["epsilon"], **_options(query, "compose", "time_budget"))
        return _epsilon_result(result, value="delta")
    if kind == "shuffle":
        result = acc.shuffle_routes(build(query["subject"]), query["delta"], **_options(query, "compose", "include_pld", "comparisons"))
        return _epsilon_result(result)
    if kind == "event":
        result = acc.epsilon_routes(acc.from_dp_event(build(query["event"])), query["delta"], **_options(query, "time_budget", "exhaustive"))
        return _epsilon_result(result)
    if kind == "accountant":
        return _accountant(query)
    if kind == "calibrate":
        family_spec = query["family"]
        c = acc.calibrate(lambda x: build(family_spec, x), query["target_epsilon"], query["delta"],
                          **_options(query, "compose", "lower", "upper", "time_budget", "include_pld", "relative_tolerance"))
        return {"parameter": f(c.parameter), "iterations": c.iterations, "failures": c.failures,
                **{f"achieved.{k}": v for k, v in _epsilon_result(c.achieved).items() if k != "routes"}}
    if kind == "ledger":
        return _ledger(query)
    if kind == "run_budget":
        return _run_budget(query)
    if kind == "function":
        return _function(query)
    if kind == "cli":
        return _cli(query["args"], query.get("stdin_event"))
    raise ValueError(f"unknown query kind {kind!r}")


# ---- comparing ------------------------------------------------------------------------------------


def _leaves(value: Any, path: str, out: dict) -> dict:
    if isinstance(value, dict):
        for key, item in value.items():
            _leaves(item, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _leaves(item, f"{path}[{index}]", out)
    else:
        out[path] = value
    return out


def _tighter(key: str, new: Any, old: Any) -> bool:
    try:
        new_value, old_value = float(new), float(old)
    except (TypeError, ValueError):
        return False
    if math.isnan(new_value) or math.isnan(old_value):
        return False
    if key.rsplit(".", 1)[-1].startswith(LARGER_IS_TIGHTER):
        return new_value >= old_value
    return new_value <= old_value


def differences(recorded: dict, replayed: dict, allowed: dict | None = None) -> list[str]:
    """Every leaf where ``replayed`` differs from ``recorded``, as readable lines; an empty list
    means identical bit for bit. ``allowed`` (an allow-list entry's ``values``: leaf path -> new
    value) accepts a leaf only if the replayed value is exactly the listed one and is tighter than
    the recorded one (a string, e.g. a route name, is accepted if it is the listed one)."""
    allowed = allowed or {}
    lines = []
    if allowed.get("routes") == "by-name":
        # (issue 30, planner30) an entry whose report gained a route: its alternatives compared
        # route by route, not slot by slot: every recorded route with a value is still listed,
        # at that value or tighter (a recorded route without a value may be gone)
        lines += _routes_by_name(recorded.get("routes", []), replayed.get("routes", []))
        recorded = {k: v for k, v in recorded.items() if k != "routes"}
        replayed = {k: v for k, v in replayed.items() if k != "routes"}
    old, new = _leaves(recorded, "", {}), _leaves(replayed, "", {})
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key, "<absent>"), new.get(key, "<absent>")
        if a == b:
            continue
        if key in allowed and b == allowed[key] and (_tighter(key, b, a) or (isinstance(b, str) and not _is_float(b))):
            continue
        note = " (allow-listed, but not the listed value or not tighter)" if key in allowed else ""
        lines.append(f"{key}: recorded {a!r}, now {b!r}{note}")
    return lines


def _routes_by_name(recorded: list, replayed: list) -> list[str]:
    now = {route: value for route, _, value in replayed}
    lines = []
    for route, _, value in recorded:
        if route not in now:
            if _is_float(value) and math.isfinite(float(value)):
                lines.append(f"routes: {route} (recorded {value!r}) is gone")
        elif now[route] != value and not _tighter("routes", now[route], value):
            lines.append(f"routes: {route} recorded {value!r}, now {now[route]!r} (not tighter)")
    return lines


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
