"""Every number the accounting layer gave before the issue-30 redesign, replayed bit for bit.

``tests/golden/corpus.json`` holds queries recorded from main at 9662b73 by
``tests/golden/record_corpus.py`` (``epsilon_routes`` of every public mechanism type alone and
composed, mixed lists, subsampled and shuffled subjects, ``delta_routes``, dp_accounting event
trees and the ``CertifiedAccountant``, calibration, in-memory and durable ledgers' charges and
spends, a bandit run's budget, the default job and the ``dpverify account`` CLI's JSON): each query
is rebuilt from its description and run, and every recorded value (float reprs, so equal means
equal bits), route name and (route, status, value) of the alternatives must be identical. The only
exceptions are the entries of ``tests/golden/changed.toml``, each with a reason, accepted only at
the exact new value listed and only if it is tighter than the recorded one.

Deterministic (the planner decides on its cost estimates, never on the clock; the recorder
answered every query twice, the second time in reverse order, and found no difference).
The comparison is shown to reject a value one ulp off, looser or not listed, and a changed route.
"""

from __future__ import annotations

import json
import math
import pathlib
import tomllib

import pytest

from golden.queries import differences, run

HERE = pathlib.Path(__file__).resolve().parent / "golden"
CORPUS = json.loads((HERE / "corpus.json").read_text())
QUERIES = CORPUS["queries"]
CHANGED = tomllib.loads((HERE / "changed.toml").read_text()).get("changed", [])
ALLOWED = {entry["id"]: entry.get("values", {}) for entry in CHANGED}


@pytest.mark.parametrize("query", QUERIES, ids=[q["id"] for q in QUERIES])
def test_replay_is_identical(query):
    if query["kind"] in ("event", "accountant") or "stdin_event" in query:
        pytest.importorskip("dp_accounting")
    spec = {k: v for k, v in query.items() if k != "results"}
    lines = differences(query["results"], run(spec), ALLOWED.get(query["id"]))
    assert not lines, f"golden query {query['id']} changed:\n  " + "\n  ".join(lines)


def test_corpus_covers_the_issue():
    """At least 300 queries, every kind the issue names, every public mechanism type of accounting."""
    import accounting

    assert len(QUERIES) >= 300
    kinds = {q["kind"] for q in QUERIES}
    assert kinds >= {"epsilon", "delta", "shuffle", "event", "accountant", "calibrate", "ledger", "run_budget", "function", "cli"}
    text = json.dumps(QUERIES)
    mechanism_types = ["BernoulliCurator", "Binomial", "DiscreteGaussian", "DiscreteGaussianSum", "DiscreteLaplace", "GridDiscreteLaplace",
                       "Gaussian", "Laplace", "PolyaDifferenceSum", "RandomizedResponse", "Skellam", "Snapping", "PoissonSampled",
                       "SampledWithoutReplacement", "ShuffledLDP", "ShuffledRandomizedResponse", "WithinTotalVariation", "PureDP", "ZCDP"]
    assert set(mechanism_types) <= set(accounting.__all__)
    for name in mechanism_types:
        assert f'"@": "{name}"' in text, name
    assert any(q["kind"] == "ledger" and q["durable"] for q in QUERIES) and any(q["kind"] == "ledger" and not q["durable"] for q in QUERIES)
    assert any(q["kind"] == "cli" and q["args"] == [] for q in QUERIES)  # the default job


def test_recorder_lists_the_recorded_queries():
    """The recorder's query list is the corpus's (minus any it dropped as nondeterministic)."""
    from golden.record_corpus import corpus_queries

    listed = [q for q in corpus_queries() if q["id"] not in CORPUS["dropped_as_nondeterministic"]]
    assert [{k: v for k, v in q.items() if k != "results"} for q in QUERIES] == json.loads(json.dumps(listed))


def test_allow_list_entries_name_recorded_queries_with_a_reason():
    ids = {q["id"] for q in QUERIES}
    for entry in CHANGED:
        assert entry.get("id") in ids, entry
        assert entry.get("reason", "").strip(), entry
        assert entry.get("values"), entry


def _first_float_leaf(results: dict) -> tuple[str, float]:
    for key in ("epsilon", "delta", "value", "parameter"):
        if isinstance(results.get(key), str):
            value = float(results[key])
            if math.isfinite(value) and value > 0:
                return key, value
    raise AssertionError("no finite float leaf")


def test_comparison_rejects_one_ulp_and_accepts_only_listed_tighter_values():
    """The wrong variants: a value one ulp above or below the recorded one, or a different route, is
    reported; an allow-listed value is accepted only if it is the listed one and tighter."""
    query = next(q for q in QUERIES if q["kind"] == "epsilon" and math.isfinite(float(q["results"]["epsilon"])))
    recorded = query["results"]
    assert differences(recorded, json.loads(json.dumps(recorded))) == []
    key, value = _first_float_leaf(recorded)
    up, down = math.nextafter(value, math.inf), math.nextafter(value, -math.inf)
    for perturbed in (up, down):
        lines = differences(recorded, {**recorded, key: repr(perturbed)})
        assert len(lines) == 1 and lines[0].startswith(f"{key}: recorded {recorded[key]!r}, now {repr(perturbed)!r}")
    # tighter and listed: accepted; looser though listed, or listed at another value: rejected
    assert differences(recorded, {**recorded, key: repr(down)}, {key: repr(down)}) == []
    assert differences(recorded, {**recorded, key: repr(up)}, {key: repr(up)}) != []
    assert differences(recorded, {**recorded, key: repr(down)}, {key: repr(math.nextafter(down, -math.inf))}) != []
    # a changed route, a changed alternative, a missing or an extra leaf
    assert differences(recorded, {**recorded, "route": recorded["route"] + "-x"}) != []
    routes = recorded["routes"]
    changed = [list(r) for r in routes]
    changed[-1][1] = "failed"
    assert differences(recorded, {**recorded, "routes": changed}) != []
    assert differences(recorded, {k: v for k, v in recorded.items() if k != "alpha"}) != []
    assert differences(recorded, {**recorded, "extra": "1.0"}) != []
    # a remaining budget is tighter when larger
    ledger = {"steps": [{"remaining": "0.5"}]}
    assert differences(ledger, {"steps": [{"remaining": "0.75"}]}, {"steps[0].remaining": "0.75"}) == []
    assert differences(ledger, {"steps": [{"remaining": "0.25"}]}, {"steps[0].remaining": "0.25"}) != []
