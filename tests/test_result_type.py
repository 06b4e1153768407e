"""Validated once, one result type (issue 30, item 3).

- one type, :class:`accounting.Result`, carries value, route, grid, provenance and timing; the old
  public names are deprecated aliases of it (a DeprecationWarning), gone from ``__all__``;
- a winning answer is built once: the planner's report names it (``answer``), the very object among
  its records, and the layers above (the shuffle report, ``optimal_composition_epsilon``) hand that
  object on;
- the query is validated where it is built (:class:`accounting._core._planner.Query`: ``delta`` becomes a
  validated :class:`~accounting._core._validation.Probability`), and no public function is a validating
  wrapper of a private twin (AST);
- the PLD route's plan hands the release PLDs it built while planning to its run (``Plan.prepared``):
  no release is built twice, and accounting holds no module-level mutable store outside a listed,
  reasoned set (AST): the old ``_RELEASES`` hand-off is gone.

Deterministic (no randomness); each check has its wrong variant beside it.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import warnings

import pytest

import accounting as acc
from accounting._routing import _pld_route
from accounting._core._planner import Query
from accounting._core._validation import Probability, probability

ROOT = pathlib.Path(__file__).resolve().parent.parent

# ---- one result type ----------------------------------------------------------------------------


def test_one_result_type_carries_value_route_grid_provenance_and_timing():
    names = {f.name for f in dataclasses.fields(acc.Result)}
    assert {"epsilon", "delta", "route", "alpha", "detail", "direction"} <= names  # the value
    assert {"status", "seconds", "estimated_seconds", "exact", "comparison", "reason", "how", "setting", "grid", "outcomes"} <= names  # a record
    assert {"alternatives", "answer"} <= names  # a report
    assert {"discretisation", "truncated_mass", "infinite_loss_mass", "epsilon_lower", "delta_lower", "truncation_negligible"} <= names  # a PLD
    # every entry point answers with it
    report = acc.epsilon_routes(acc.Gaussian(2.0), 1e-5, compose=3)
    pld = acc.pld_epsilon(acc.RandomizedResponse(1.0), 3, 1e-5)
    converted = acc.rdp_to_delta(acc.Gaussian(2.0).rdp(), 1.0)
    optimal = acc.optimal_composition_epsilon([(0.5, 4)], 1e-5)
    for value in (report, *report.alternatives, pld, converted, optimal, acc.shuffle_routes(acc.ShuffledLDP(1.0, 100), 1e-6)):
        assert type(value) is acc.Result
    assert pld.discretisation == "exact lattice" and pld.epsilon_lower is not None and pld.as_dict()["direction"] in ("P||Q", "Q||P", "P||Q = Q||P")
    assert report.answer is not None and report.answer.seconds is not None and report.answer.status == "answer"


def test_old_result_names_are_deprecated_aliases_outside_all():
    for name in ("EpsilonResult", "DeltaResult", "PLDResult", "OptimalComposition"):
        assert name not in acc.__all__
        with pytest.warns(DeprecationWarning, match=name):
            assert getattr(acc, name) is acc.Result
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert acc.Result is acc.Result  # the new name does not warn
    with pytest.raises(AttributeError):  # the wrong variant: a name that never existed is not aliased
        acc.RouteOutcome  # noqa: B018


# ---- a winning answer built once -----------------------------------------------------------------


def _answer_records(report):
    return [r for r in report.alternatives if r.status == "answer"]


def test_the_winning_record_is_the_reports_answer_itself():
    report = acc.epsilon_routes([acc.Laplace(1.0), acc.Laplace(2.0)], 1e-6, compose=2)
    (winner,) = _answer_records(report)
    assert report.answer is winner
    assert (report.epsilon, report.route, report.alpha, report.detail) == (winner.epsilon, winner.route, winner.alpha, winner.detail)
    # the wrong variant: an equal copy is not the answer
    copy = dataclasses.replace(winner)
    assert copy == winner and copy is not report.answer


def test_the_answer_is_handed_on_through_the_shuffle_report_and_optimal_composition(monkeypatch):
    """The shuffle report and optimal_composition_epsilon hand on the planner's winning record
    (caught from the planner itself), not a copy."""
    from accounting._routing import _routes, _tight_routes

    seen = []

    def spy(run_plan):
        def wrapped(routes, query):
            report = run_plan(routes, query)
            seen.append(report)
            return report

        return wrapped

    monkeypatch.setattr(_routes, "run_plan", spy(_routes.run_plan))
    monkeypatch.setattr(_tight_routes, "run_plan", spy(_tight_routes.run_plan))
    shuffled = acc.epsilon_routes(acc.ShuffledLDP(1.0, 200), 1e-6)
    assert shuffled.answer is seen[-1].answer and shuffled.answer is not None
    assert shuffled.epsilon == shuffled.answer.epsilon and shuffled.route == shuffled.answer.route
    optimal = acc.optimal_composition_epsilon([(0.1, 30), (0.3, 5)], 1e-5)
    assert optimal is seen[-1].answer and optimal.status == "answer" and optimal.outcomes and optimal.exact


# ---- the query validated once ----------------------------------------------------------------------


def test_the_query_is_validated_where_it_is_built():
    query = Query(((acc.Laplace(1.0), 2),), 1e-5)
    assert type(query.delta) is Probability and query.delta == 1e-5 and repr(query.delta) == "1e-05"
    assert probability("delta", query.delta) is query.delta  # passes at once: not validated again
    for bad in (0.0, 1.0, -1e-9, float("nan")):
        with pytest.raises(ValueError, match="delta"):
            Query(((acc.Laplace(1.0), 1),), bad)
    with pytest.raises(ValueError, match="time_budget"):
        Query(((acc.Laplace(1.0), 1),), 1e-5, time_budget=0.0)
    with pytest.raises(ValueError, match="count"):
        Query(((acc.Laplace(1.0), 0),), 1e-5)
    with pytest.raises(ValueError, match="delta"):  # a Fraction that no float in (0, 1) holds
        from fractions import Fraction

        probability("delta", Fraction(1, 10**400))
    # the public conversions accept the validated delta and refuse a bad one themselves
    curve = acc.Gaussian(1.0).rdp()
    assert acc.rdp_to_epsilon(curve, query.delta).epsilon == acc.rdp_to_epsilon(curve, 1e-5).epsilon
    with pytest.raises(ValueError, match="delta"):
        acc.rdp_to_epsilon(curve, 1.5)


_WRAPPERS_ALLOWED = {
    # (file, public name): why the public function calls a private one of the same name
    ("accounting/_ledgers/_durable.py", "add_segments"): "the undo log's flag (log=False replays), not a skipped validation",
    ("accounting/_ledgers/_durable.py", "remove_segment"): "the undo log's flag (log=False replays), not a skipped validation",
    ("accounting/_core/_guarantees.py", "approx"): "one implementation for the upper and lower approximations (a flag)",
    ("accounting/_privacy_loss/_pld_fft_power.py", "build"): "sets the float error state and the working precision around the build",
}


def _validating_twins(source: str, path: str) -> set[tuple[str, str]]:
    """(path, name) for every public function or method that calls its private twin ``_name``
    defined beside it (the pattern of a validating wrapper around an unchecked twin)."""
    tree = ast.parse(source)
    bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    out = set()
    for body in bodies:
        functions = {n.name: n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for name, fn in functions.items():
            if name.startswith("_") or f"_{name}" not in functions:
                continue
            called = {c.func.id if isinstance(c.func, ast.Name) else c.func.attr for c in ast.walk(fn)
                      if isinstance(c, ast.Call) and isinstance(c.func, (ast.Name, ast.Attribute))}
            if f"_{name}" in called:
                out.add((path, name))
    return out


def test_no_public_private_twin_that_skips_validation():
    found = set()
    for path in sorted((ROOT / "accounting").rglob("*.py")):
        found |= _validating_twins(path.read_text(), str(path.relative_to(ROOT)))
    assert found <= set(_WRAPPERS_ALLOWED), sorted(found - set(_WRAPPERS_ALLOWED))
    # the wrong variant: the pattern the issue removed is found
    twin = "def rdp_to_epsilon(curve, delta):\n    check(delta)\n    return _rdp_to_epsilon(curve, delta)\n\ndef _rdp_to_epsilon(curve, delta):\n    return 1\n"
    assert _validating_twins(twin, "x.py") == {("x.py", "rdp_to_epsilon")}


# ---- the plan hands what it built to the run ------------------------------------------------------------

#: module-level mutable containers accounting keeps, and why each is not a hand-off between two places
_MODULE_STATE_ALLOWED = {
    ("accounting/_routing/_routes.py", "_REGISTERED"): "the public route registry (register_route / unregister_route)",
    ("accounting/_routing/_routes.py", "_ON_CHANGE"): "the registry's listeners (on_routes_changed)",
    ("accounting/_interop/_dp_accounting_compat.py", "_CLASS"): "the accountant class, built on first use (dp_accounting is optional)",
    ("accounting/_interop/_dp_accounting_compat.py", "_RDP_CLASS"): "the RDP accountant class, built on first use (dp_accounting is optional)",
    ("accounting/_mechanisms/_discrete_gaussian_sum.py", "_TABLES"): "memo of residue tables keyed on (n, sigma)",
    ("accounting/_mechanisms/_skellam.py", "_FLOAT_LAWS"): "memo of float laws keyed on mu",
    ("accounting/_mechanisms/_skellam.py", "_CHUNKS"): "memo of log-pmf chunks keyed on (mu, chunk, bits), least recently used out",
    ("accounting/_mechanisms/_skellam.py", "_LAST_CHUNK"): "memo of the last chunk read, keyed on (mu, chunk, bits)",
    ("accounting/_mechanisms/_skellam.py", "_PLANS"): "memo of summation plans, least recently used out",
    ("accounting/_mechanisms/_skellam.py", "_BALLS"): "memo of certified Renyi balls, least recently used out",
    ("accounting/_privacy_loss/_pld_fft_power.py", "_TABLES"): "memo of Arb power tables keyed on the step",
    ("accounting/_privacy_loss/_pld_fft_power.py", "_LOGS"): "memo of a factor's losses and log masses, keyed on the (kept) factor",
    ("accounting/_privacy_loss/_pld_fft_power.py", "_TWIDDLE_CACHE"): "memo of FFT twiddles keyed on the length",
}
_CONTAINERS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "Counter", "bytearray"}
_READ_ONLY = {"len", "sorted", "tuple", "frozenset", "iter", "any", "all", "min", "max", "sum", "enumerate", "isinstance", "zip",
              "repr", "str", "next", "reversed", "map", "filter", "bool", "list", "dict", "set", "print", "id", "type"}
_MUTATORS = {"append", "extend", "insert", "pop", "popitem", "clear", "update", "setdefault", "add", "discard", "remove",
             "move_to_end", "appendleft", "sort", "reverse"}


def _module_state(source: str) -> set[str]:
    """Names bound at module level to a mutable container that the module changes: an item set or
    deleted, a mutating method called, or the container handed to a function (which may change it)."""
    tree = ast.parse(source)
    names = set()
    for node in tree.body:
        targets, value = ([node.target], node.value) if isinstance(node, ast.AnnAssign) else (getattr(node, "targets", []), getattr(node, "value", None))
        call = isinstance(value, ast.Call) and (getattr(value.func, "id", None) in _CONTAINERS or getattr(value.func, "attr", None) in _CONTAINERS)
        if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)) or call:
            names |= {t.id for t in targets if isinstance(t, ast.Name) and t.id != "__all__"}
    changed = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            for target in node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id in names:
                    changed.add(target.value.id)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _MUTATORS and isinstance(func.value, ast.Name) and func.value.id in names:
                changed.add(func.value.id)
            if not (isinstance(func, ast.Name) and func.id in _READ_ONLY):
                changed |= {a.id for a in node.args if isinstance(a, ast.Name) and a.id in names}
    return changed


def test_no_module_level_hand_off_in_accounting():
    found = set()
    for path in sorted((ROOT / "accounting").rglob("*.py")):
        found |= {(str(path.relative_to(ROOT)), name) for name in _module_state(path.read_text())}
    assert found <= set(_MODULE_STATE_ALLOWED), sorted(found - set(_MODULE_STATE_ALLOWED))
    assert ("accounting/_privacy_loss/_pld.py", "_RELEASES") not in found
    # the wrong variant: the hand-off the issue removed is found
    hand_off = "_RELEASES: dict = {}\n\ndef release_pld(key):\n    if key in _RELEASES:\n        return _RELEASES[key]\n    _RELEASES[key] = 1\n"
    assert _module_state(hand_off) == {"_RELEASES"}
    assert _module_state("_KEPT: list = []\n\ndef keep(x):\n    _remember(_KEPT, x)\n") == {"_KEPT"}
    assert _module_state("LABELS = {'a': 1}\n\ndef label(x):\n    return LABELS.get(x)\n") == set()  # a constant table is not state


def test_skellam_provenance_travels_with_the_value(monkeypatch):
    """The Skellam curve's label is the path memoised with its value (keyed by mu, Delta, alpha and
    precision), or the same evaluation made afresh: no hand-off from the last evaluation. After
    the memo is emptied the label is still the path of that value (Agarwal's bound at 1e30, the
    exact sum at 100), at the routes' precision and at another one; a stale record of the other
    mechanism's path (the wrong variant a hand-off keyed without the variance would give) is not
    what is read."""
    from accounting._mechanisms import _skellam
    from accounting.internal import rdp_provenance

    assert not hasattr(_skellam, "_PATHS")
    beyond, exact_sum = acc.Skellam(1e30), acc.Skellam(100)
    beyond.rdp()(2.5)
    monkeypatch.setattr(_skellam, "_BALLS", type(_skellam._BALLS)())
    assert beyond.rdp_provenance(2.5) == _skellam.AGARWAL_BOUND
    assert exact_sum.rdp_provenance(2.5) == _skellam.EXACT_SUM
    assert exact_sum.rdp_provenance(2.5, precision=200) == _skellam.EXACT_SUM
    assert rdp_provenance(beyond, 2.5, 200) == _skellam.AGARWAL_BOUND


def test_the_plan_hands_the_releases_it_built_to_the_run(monkeypatch):
    """A discrete Gaussian's PLD is cheap: the route builds it while planning (to read its lattice)
    and the run composes that very PLD: one build in all (with _RELEASES, the run found it only if
    the module-level store still held it). The wrong variant: composing without the plan's PLDs
    builds it again, and the counter sees it."""
    built = []
    real = _pld_route.release_pld

    def counting(*args, **kwargs):
        pld = real(*args, **kwargs)
        built.append(pld)
        return pld

    monkeypatch.setattr(_pld_route, "release_pld", counting)
    _pld_route.PldRoute.composed.clear()
    subject = acc.DiscreteGaussian(1.2345)
    query = Query(((subject, 8),), 1e-6)
    plan = _pld_route.PldRoute().plan(query, 10.0)
    assert len(built) == 1 and plan.prepared and plan.prepared[0][3] is built[0]
    result = plan.run(10.0)
    assert len(built) == 1 and result.route == "pld" and result.exact
    report = acc.epsilon_routes(subject, 1e-6, compose=8, exhaustive=True)
    assert next(r for r in report.alternatives if r.route == "pld").epsilon == result.epsilon
    _pld_route.PldRoute.composed.clear()
    _pld_route.pld_for_parts(((subject, 8),))  # no plan: built again
    assert len(built) == 3  # (epsilon_routes planned once more: one build; the memo had its composition)
