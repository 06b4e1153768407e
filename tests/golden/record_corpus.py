"""Record the golden corpus: ``python tests/golden/record_corpus.py`` (from the repository root).

Builds the query list (:func:`corpus_queries`), answers every query twice with the current code
(:func:`golden.queries.run`), keeps only the queries whose two answers are identical (the others
are listed on stderr and dropped: nondeterministic) and writes ``tests/golden/corpus.json`` in the
list's order. ``--check`` records once and compares with the file instead of writing it;
``--timings FILE`` writes each query's recording seconds (not committed: they depend on the machine).
Every query passes an explicit ``time_budget`` where the planner takes one: the planner decides on
its cost estimates only, never on the clock, so the answers do not depend on the machine's speed.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent)]

from golden.queries import M, X, differences, run  # noqa: E402

CORPUS = HERE / "corpus.json"
TB = 1.0  # the time budget of most planner queries (seconds on one core, as the planner estimates)


def _mechanisms() -> list[tuple[str, dict]]:
    """Every public mechanism type of ``accounting``, a few parameter sets each: (label, spec)."""
    return [
        ("gaussian-s1", M("Gaussian", 1.0)),
        ("gaussian-s3-d2", M("Gaussian", 3.0, 2.0)),
        ("gaussian-s0.7", M("Gaussian", 0.7)),
        ("laplace-b1", M("Laplace", 1.0)),
        ("laplace-b10-d3", M("Laplace", 10.0, 3.0)),
        ("rr-0.5", M("RandomizedResponse", 0.5)),
        ("rr-2", M("RandomizedResponse", 2.0)),
        ("bernoulli-1", M("BernoulliCurator", 1.0)),
        ("bernoulli-0.1", M("BernoulliCurator", 0.1)),
        ("binomial-10", M("Binomial", 10, 0.5)),
        ("binomial-1000", M("Binomial", 1000, 0.5)),
        ("dgauss-s2", M("DiscreteGaussian", 2.0)),
        ("dgauss-s5-d3", M("DiscreteGaussian", 5.0, 3)),
        ("dgsum-4", M("DiscreteGaussianSum", 4, 1.0)),
        ("dgsum-8-s2", M("DiscreteGaussianSum", 8, 2.0, 2)),
        ("dlaplace-b2", M("DiscreteLaplace", 2.0)),
        ("dlaplace-b10-d3", M("DiscreteLaplace", 10.0, 3)),
        ("grid-dlaplace", M("GridDiscreteLaplace", 4, 2.0)),
        ("polya-16", M("PolyaDifferenceSum", 16, 3.0, 2)),
        ("polya-4", M("PolyaDifferenceSum", 4, 1.0)),
        ("skellam-100", M("Skellam", 100)),
        ("skellam-6400-8", M("Skellam", 6400, 8)),
        ("skellam-l2", M("Skellam", 100, 1, 1)),
        ("snapping", M("Snapping", 4.0, 64.0)),
        ("snapping-1-100", M("Snapping", 1.0, 100.0)),
        ("dgvector", M("mech.DiscreteGaussianVector", 16, 1, 3)),
    ]


def _guarantees() -> list[tuple[str, dict]]:
    return [
        ("pure-1", M("PureDP", 1.0)),
        ("pure-0.1", M("PureDP", 0.1)),
        ("zcdp-0.5", M("ZCDP", 0.5)),
        ("zcdp-0.01", M("ZCDP", 0.01)),
        ("rdp-pure", M("RDP.pure", 0.5)),
        ("rdp-zcdp", M("RDP.zcdp", 0.1)),
        ("rdp-of-skellam", M("rdp_of", M("Skellam", 400))),
    ]


def _sampled() -> list[tuple[str, dict]]:
    return [
        ("poisson-gauss", M("PoissonSampled", M("Gaussian", 1.0), 0.01)),
        ("poisson-gauss-q0.1", M("PoissonSampled", M("Gaussian", 2.0), 0.1)),
        ("poisson-laplace", M("PoissonSampled", M("Laplace", 1.0, 1.0), 0.1)),
        ("poisson-dlaplace", M("PoissonSampled", M("DiscreteLaplace", 2.0), 0.05)),
        ("poisson-rr", M("PoissonSampled", M("RandomizedResponse", 1.0), 0.2)),
        ("wor-gauss", M("SampledWithoutReplacement", M("Gaussian", 2.0), 50, 1000)),
        ("wor-laplace", M("SampledWithoutReplacement", M("Laplace", 1.0, 1.0), 10, 100)),
    ]


def _shuffled() -> list[tuple[str, dict]]:
    return [
        ("shuffled-ldp-1-100", M("ShuffledLDP", 1.0, 100)),
        ("shuffled-ldp-1-2000", M("ShuffledLDP", 1.0, 2000)),
        ("shuffled-ldp-0.5-10000-strong", M("ShuffledLDP", 0.5, 10_000, stronger_clone=True)),
        ("shuffled-ldp-2-5000", M("ShuffledLDP", 2.0, 5000)),
        ("shuffled-rr-1-1000", M("ShuffledRandomizedResponse", 1.0, 1000)),
        ("shuffled-rr-0.5-200", M("ShuffledRandomizedResponse", 0.5, 200)),
    ]


def corpus_queries() -> list[dict]:
    """Every query of the corpus, in a fixed order, each with a stable id."""
    queries: list[dict] = []

    def add(qid: str, **query) -> None:
        queries.append({"id": qid, **query})

    # every mechanism type alone and composed, at two deltas
    for label, spec in _mechanisms() + _guarantees():
        for k in (1, 10, 200):
            for delta in (1e-5, 1e-9):
                add(f"eps/{label}/k{k}/d{delta:g}", kind="epsilon", subject=spec, delta=delta, compose=k, time_budget=TB)
        add(f"eps/{label}/k5/d1e-6/exhaustive", kind="epsilon", subject=spec, delta=1e-6, compose=5, time_budget=TB, exhaustive=True)
        add(f"eps/{label}/k30/d1e-6/no-pld", kind="epsilon", subject=spec, delta=1e-6, compose=30, time_budget=TB, include_pld=False)
    # the default time budget (10 s), where the planner affords finer grids
    for label, spec in _mechanisms()[::2] + _sampled()[::3]:
        for k in (1, 50):
            add(f"eps/{label}/k{k}/d1e-6/tb10", kind="epsilon", subject=spec, delta=1e-6, compose=k, time_budget=10.0)
    # subsampled and shuffled subjects (the planner, and shuffled ones through their own routes)
    for label, spec in _sampled() + _shuffled():
        for k in (1, 50):
            add(f"eps/{label}/k{k}/d1e-6", kind="epsilon", subject=spec, delta=1e-6, compose=k, time_budget=TB)
    for label, spec in _shuffled():
        for k in (1, 4, 3000):
            add(f"shuffle/{label}/k{k}/d1e-7", kind="shuffle", subject=spec, delta=1e-7, compose=k)
        add(f"shuffle/{label}/k2/d1e-5/no-pld", kind="shuffle", subject=spec, delta=1e-5, compose=2, include_pld=False)
    # within a sampler's total variation
    for label, inner in (("gauss", M("Gaussian", 2.0)), ("dlaplace", M("DiscreteLaplace", 2.0)), ("skellam", M("Skellam", 100))):
        spec = M("WithinTotalVariation", inner, 1e-15)
        for k in (1, 20):
            add(f"eps/tv-{label}/k{k}/d1e-6", kind="epsilon", subject=spec, delta=1e-6, compose=k, time_budget=TB)
        add(f"delta/tv-{label}/k20/e1", kind="delta", subject=spec, epsilon=1.0, compose=20, time_budget=TB)
    # mixed lists of releases
    mixed = {
        "gauss+gauss": [M("Gaussian", 1.0), M("Gaussian", 2.0, 2.0)],
        "gauss+laplace": [M("Gaussian", 2.0), M("Laplace", 3.0)],
        "pure+rr": [M("PureDP", 0.3), M("RandomizedResponse", 0.5), M("PureDP", 0.3)],
        "pure-mix": [M("PureDP", 0.1), M("PureDP", 0.5), M("BernoulliCurator", 0.2)],
        "dlaplace+dgauss": [M("DiscreteLaplace", 2.0), M("DiscreteGaussian", 3.0)],
        "skellam+zcdp": [M("Skellam", 400), M("ZCDP", 0.01)],
        "poisson+gauss": [M("PoissonSampled", M("Gaussian", 1.0), 0.01), M("Gaussian", 5.0)],
        "rdp+pure+gauss": [M("RDP.zcdp", 0.05), M("PureDP", 0.2), M("Gaussian", 4.0)],
        "laplace+laplace": [M("Laplace", 1.0), M("Laplace", 2.0), M("Laplace", 1.0)],
        "dgsum+polya": [M("DiscreteGaussianSum", 4, 1.0), M("PolyaDifferenceSum", 4, 1.0)],
    }
    for label, spec in mixed.items():
        for k in (1, 20):
            add(f"eps/mixed-{label}/k{k}/d1e-6", kind="epsilon", subject=spec, delta=1e-6, compose=k, time_budget=TB)
        add(f"delta/mixed-{label}/k5/e1", kind="delta", subject=spec, epsilon=1.0, compose=5, time_budget=TB)
    # delta(epsilon)
    for label, spec in (_mechanisms() + _guarantees() + _sampled())[::2]:
        for k, eps in ((1, 0.5), (20, 2.0)):
            add(f"delta/{label}/k{k}/e{eps:g}", kind="delta", subject=spec, epsilon=eps, compose=k, time_budget=TB)
    add("delta/gaussian/k1/e0", kind="delta", subject=M("Gaussian", 1.0), epsilon=0.0, time_budget=TB)
    add("delta/zcdp/k1/e0", kind="delta", subject=M("ZCDP", 0.1), epsilon=0.0, time_budget=TB)
    # dp_accounting event trees
    events = {
        "gauss": M("dp.GaussianDpEvent", 3.0),
        "gauss-x100": M("dp.SelfComposedDpEvent", M("dp.GaussianDpEvent", 3.0), 100),
        "laplace-x50": M("dp.SelfComposedDpEvent", M("dp.LaplaceDpEvent", 10.0), 50),
        "dlaplace-x30": M("dp.SelfComposedDpEvent", M("dp.DiscreteLaplaceDpEvent", 0.2, 3), 30),
        "dpsgd-x300": M("dp.SelfComposedDpEvent", M("dp.PoissonSampledDpEvent", 0.02, M("dp.GaussianDpEvent", 1.2)), 300),
        "mixed-noop": M("dp.ComposedDpEvent", [M("dp.GaussianDpEvent", 2.0), M("dp.NoOpDpEvent"), M("dp.LaplaceDpEvent", 4.0),
                                               M("dp.SelfComposedDpEvent", M("dp.DiscreteLaplaceDpEvent", 0.5, 1), 5)]),
        "rr-list": M("dp.ComposedDpEvent", [M("dp.RandomizedResponseDpEvent", 0.5, 4)] * 20),
        "wor-x50": M("dp.SelfComposedDpEvent", M("dp.SampledWithoutReplacementDpEvent", 1000, 50, M("dp.GaussianDpEvent", 2.0)), 50),
        "nested": M("dp.ComposedDpEvent", [M("dp.SelfComposedDpEvent", M("dp.ComposedDpEvent", [M("dp.GaussianDpEvent", 5.0),
                                                                                                M("dp.LaplaceDpEvent", 20.0)]), 10)]),
    }
    for label, event in events.items():
        for delta in (1e-5, 1e-8):
            add(f"event/{label}/d{delta:g}", kind="event", event=event, delta=delta, time_budget=TB)
    accountant_cases = [
        ("gauss-x100", "ADD_OR_REMOVE_ONE", [[events["gauss"], 100]]),
        ("laplace-x50", "ADD_OR_REMOVE_ONE", [[events["laplace-x50"], 1]]),
        ("dpsgd", "ADD_OR_REMOVE_ONE", [[M("dp.PoissonSampledDpEvent", 0.02, M("dp.GaussianDpEvent", 1.2)), 300]]),
        ("mixed-noop", "ADD_OR_REMOVE_ONE", [[events["mixed-noop"], 2]]),
        ("rr-list", "REPLACE_ONE", [[events["rr-list"], 1]]),
        ("wor-x50", "REPLACE_ONE", [[events["wor-x50"], 1]]),
    ]
    for label, relation, composed in accountant_cases:
        add(f"accountant/{label}", kind="accountant", relation=relation, events=composed, time_budget=TB,
            ask=[["get_epsilon", 1e-5], ["get_epsilon", 1e-9], ["get_delta", 1.0], ["get_delta", 4.0]])
    # calibration
    calibrations = [
        ("gauss-sigma", M("Gaussian", X), 1.0, 1e-5, 1, 0.01, 100.0),
        ("gauss-sigma-k100", M("Gaussian", X), 2.0, 1e-6, 100, 0.1, 1000.0),
        ("laplace-scale-k10", M("Laplace", X), 1.0, 1e-6, 10, 0.1, 1000.0),
        ("dgauss-sigma", M("DiscreteGaussian", X), 1.0, 1e-5, 5, 0.1, 100.0),
        ("dlaplace-scale", M("DiscreteLaplace", X), 0.5, 1e-6, 1, 0.1, 100.0),
        ("skellam-variance", M("Skellam", X), 1.0, 1e-5, 10, 1.0, 1e6),
        ("polya-scale", M("PolyaDifferenceSum", 8, X), 2.0, 1e-6, 3, 0.1, 100.0),
        ("poisson-gauss", M("PoissonSampled", M("Gaussian", X), 0.01), 1.0, 1e-5, 100, 0.5, 50.0),
    ]
    for label, family, target, delta, k, lower, upper in calibrations:
        add(f"calibrate/{label}", kind="calibrate", family=family, target_epsilon=target, delta=delta, compose=k, lower=lower, upper=upper,
            time_budget=TB)
    add("calibrate/gauss-sigma-no-pld", kind="calibrate", family=M("Gaussian", X), target_epsilon=0.5, delta=1e-6, compose=20,
        lower=0.1, upper=1000.0, time_budget=TB, include_pld=False, relative_tolerance=1e-6)
    # ledgers, in memory and durable (SQLite in a temporary directory)
    ledgers = {
        "pure-fresh": (M("PureDP", 1.0), [[M("PureDP", 0.5), [0, 100]], [M("PureDP", 0.5), [100, 200]], [M("PureDP", 0.5), [50, 150]],
                                           [M("PureDP", 0.4), [150, 250]], [M("RandomizedResponse", 0.1), None]]),
        "pure-mech": (M("PureDP", 2.0), [[M("Laplace", 2.0), [0, 10]], [M("DiscreteLaplace", 3.0), [0, 10]], [M("BernoulliCurator", 0.3), [5, 15]],
                                         [M("Laplace", 1.0), [0, 10]]]),
        "zcdp": (M("ZCDP", 0.5), [[M("Gaussian", 2.0), [0, 100]], [M("ZCDP", 0.1), [0, 100]], [M("PureDP", 0.3), [50, 60]],
                                  [M("DiscreteGaussian", 3.0), None], [M("Gaussian", 1.0), [0, 100]]]),
        "approx-gauss": (M("ApproxDP", 3.0, 1e-6), [[M("Gaussian", 2.0), [0, 100]]] * 3 + [[M("Gaussian", 4.0, 2.0), [0, 50]], [M("Gaussian", 1.0), None]]),
        "approx-mixed": (M("ApproxDP", 2.0, 1e-5), [[M("Laplace", 5.0), [0, 10]], [M("ApproxDP", 0.1, 1e-7), [0, 10]], [M("ZCDP", 0.01), [0, 20]],
                                                  [M("Skellam", 400), [0, 10]], [M("PureDP", 0.2), [0, 10]]]),
        "approx-one-mech": (M("ApproxDP", 1.5, 1e-6), [[M("DiscreteGaussian", 4.0), [0, 5]]] * 4 + [[M("DiscreteLaplace", 2.0), [0, 5]]]),
        "approx-shuffled": (M("ApproxDP", 1.0, 1e-6), [[M("ShuffledLDP", 1.0, 2000), [0, 2000]]] * 3 + [[M("ShuffledRandomizedResponse", 1.0, 1000), [0, 1000]]]),
        "approx-tv": (M("ApproxDP", 2.0, 1e-6), [[M("WithinTotalVariation", M("Gaussian", 2.0), 1e-10), [0, 10]]] * 2
                      + [[M("WithinTotalVariation", M("Skellam", 400), 1e-9), [0, 10]]]),
        "approx-poisson": (M("ApproxDP", 2.0, 1e-5), [[M("PoissonSampled", M("Gaussian", 1.0), 0.01), None]] * 3),
    }
    for label, (budget, charges) in ledgers.items():
        for durable in (False, True):
            add(f"ledger/{'durable' if durable else 'memory'}/{label}", kind="ledger", budget=budget, charges=charges, durable=durable)
    # free-form RDP curves cannot be saved in a durable ledger: in memory only
    add("ledger/memory/approx-rdp-curve", kind="ledger", budget=M("ApproxDP", 2.0, 1e-5), durable=False,
        charges=[[M("RDP.zcdp", 0.05), [0, 10]], [M("Laplace", 5.0), [0, 10]], [M("RDP.pure", 0.3), [5, 15]], [M("RDP.zcdp", 0.5), None]])
    # a bandit run's budget
    run_budgets = [
        ("dist-dp-se", dict(algorithm="dist-dp-se", instance="easy", horizon=10_000, epsilon=0.5)),
        ("dist-rdp-se", dict(algorithm="dist-rdp-se", instance="easy", horizon=10_000, epsilon=0.5)),
        ("dist-rdp-se-eps1-d1e-8", dict(algorithm="dist-rdp-se", instance="easy", horizon=4096, epsilon=1.0, delta=1e-8)),
        ("dist-rdp-se-s4-base4", dict(algorithm="dist-rdp-se", instance="easy", horizon=100_000, epsilon=0.2, s=4.0, batch_base=4)),
        ("dist-cdp-se", dict(algorithm="dist-cdp-se", instance="easy", horizon=10_000, epsilon=0.5)),
        ("cdp-se", dict(algorithm="cdp-se", instance="easy", horizon=10_000, epsilon=0.1)),
        ("ldp-se", dict(algorithm="ldp-se", instance="easy", horizon=10_000, epsilon=1.0)),
    ]
    for label, config in run_budgets:
        add(f"run_budget/{label}", kind="run_budget", config=config, arms=10)
    # public functions of accounting
    functions = [
        ("gdp_epsilon", [1.0, 1e-5], {}), ("gdp_epsilon", [0.1, 1e-9], {}), ("gdp_delta", [1.0, 1.0], {}), ("gdp_delta", [3.0, 0.5], {}),
        ("gdp_mu_for", [1.0, 1e-5], {}), ("zcdp_to_epsilon", [0.5, 1e-5], {}), ("zcdp_to_epsilon", [0.01, 1e-9], {}),
        ("zcdp_epsilon_closed_form", [0.5, 1e-5], {}),
        ("rdp_to_epsilon", [M("rdp_of", M("Gaussian", 2.0), 10), 1e-6], {}),
        ("rdp_to_epsilon", [M("rdp_of", M("Skellam", 400), 5), 1e-6], {"conversion": "mironov"}),
        ("rdp_to_delta", [M("rdp_of", M("DiscreteGaussian", 2.0), 10), 2.0], {}),
        ("advanced_composition", [M("PureDP", 0.1), 100, 1e-6], {}),
        ("advanced_composition", [M("ApproxDP", 0.5, 1e-8), 10, 1e-6], {}),
        ("appendix_i_per_batch", [0.5, 1e-6, 10], {}),
        ("optimal_composition_epsilon", [[[0.1, 50]], 1e-6], {"time_budget": TB}),
        ("optimal_composition_epsilon", [[[0.5, 3], [0.2, 4]], 1e-5], {"time_budget": TB}),
        ("clone_epsilon", [1.0, 1000, 1e-6], {}), ("clone_epsilon", [1.0, 1000, 1e-6], {"variant": "fmt23"}),
        ("clone_delta", [1.0, 1000, 0.2], {}), ("shuffled_rr_epsilon", [1.0, 1000, 1e-6], {}),
        ("shuffled_rr_delta", [1.0, 1000, 0.3], {}), ("fmt21_closed_form", [1.0, 10_000, 1e-6], {}),
        ("fmt23_closed_form", [1.0, 10_000, 1e-6], {}),
        ("dist_rdp_se_returning", [0.5, 10.0, 1024, [1, 10], 1e-6], {"include_pld": False}),
        ("pld_epsilon", [M("GaussianLoss", 1.0, 1.0), 10, 1e-5], {"discretisation": 1e-3}),
        ("pld_epsilon", [M("LaplaceLoss", 1.0, 1.0), 20, 1e-6], {"discretisation": 1e-3}),
        ("pld_delta", [M("GaussianLoss", 2.0, 1.0), 5, 1.0], {"discretisation": 1e-3}),
    ]
    for name, args, kwargs in functions:
        add(f"function/{name}/{json.dumps([args, kwargs], sort_keys=True)}", kind="function", name=name, args=args, kwargs=kwargs)
    # the command line: the default job and `dpverify account ... --json`
    add("cli/default-job", kind="cli", args=[])
    cli = [
        ["account", "returning", "--json"],
        ["account", "returning", "--epsilon", "1.0", "--batch-size", "256", "--returns", "1", "--returns", "5", "--json"],
        ["account", "epsilon", "gaussian", "--sigma", "2", "--delta", "1e-5", "--compose", "10", "--time-budget", "1", "--json"],
        ["account", "epsilon", "laplace", "--scale", "3", "--delta", "1e-6", "--compose", "20", "--time-budget", "1", "--json"],
        ["account", "epsilon", "skellam", "--variance", "400", "--delta", "1e-6", "--compose", "5", "--time-budget", "1", "--json"],
        ["account", "epsilon", "discrete-gaussian", "--sigma", "3", "--delta", "1e-6", "--compose", "5", "--time-budget", "1", "--json"],
        ["account", "epsilon", "discrete-laplace", "--scale", "2", "--delta", "1e-6", "--compose", "5", "--time-budget", "1", "--json"],
        ["account", "epsilon", "randomized-response", "--epsilon", "0.5", "--delta", "1e-6", "--compose", "20", "--time-budget", "1", "--json"],
        ["account", "epsilon", "randomized-response", "--epsilon", "0.5", "--delta", "1e-6", "--compose", "8", "--time-budget", "1",
         "--all-routes", "--json"],
        ["account", "epsilon", "gaussian", "--sigma", "5", "--delta", "1e-8", "--compose", "100", "--no-pld", "--json"],
        ["account", "curve", "gaussian", "--sigma", "2", "--alpha", "2", "--alpha", "10", "--alpha", "100", "--json"],
        ["account", "curve", "skellam", "--variance", "100", "--alpha", "2", "--alpha", "32", "--json"],
        ["account", "curve", "discrete-gaussian", "--sigma", "1.5", "--alpha", "1.5", "--alpha", "8", "--json"],
        ["account", "calibrate", "gaussian", "--target-epsilon", "1", "--delta", "1e-5", "--compose", "10", "--lower", "0.1",
         "--upper", "100", "--time-budget", "1", "--json"],
        ["account", "calibrate", "skellam", "--target-epsilon", "2", "--delta", "1e-6", "--compose", "5", "--lower", "1",
         "--upper", "1e6", "--time-budget", "1", "--json"],
        ["account", "calibrate", "discrete-laplace", "--target-epsilon", "2", "--delta", "1e-6", "--compose", "5", "--lower", "0.01",
         "--upper", "100", "--time-budget", "1", "--json"],
        ["account", "shuffle", "--eps0", "1", "--n", "1000", "--delta", "1e-6", "--json"],
        ["account", "shuffle", "--eps0", "0.5", "--n", "5000", "--delta", "1e-7", "--compose", "10", "--json"],
        ["account", "shuffle", "--eps0", "1", "--n", "1000", "--delta", "1e-6", "--randomizer", "rr", "--compose", "3", "--json"],
        ["account", "shuffle", "--eps0", "1", "--n", "10000", "--delta", "1e-6", "--stronger-clone", "--json"],
        ["account", "charge", "--ledger", "sqlite:///{tmp}/l.db", "--budget", "approx:2,1e-6", "--create", "--approx", "0.5,1e-7",
         "--users", "0:100", "--json"],
        ["account", "charge", "--ledger", "sqlite:///{tmp}/l.db", "--budget", "pure:1", "--create", "--pure", "0.25", "--json"],
        ["account", "charge", "--ledger", "sqlite:///{tmp}/l.db", "--budget", "zcdp:0.5", "--create", "--zcdp", "0.125", "--json"],
    ]
    for args in cli:
        add("cli/" + " ".join(args), kind="cli", args=args)
    for label in ("gauss-x100", "dpsgd-x300", "mixed-noop"):
        for args in (["account", "event", "-", "--delta", "1e-6", "--time-budget", "1", "--json"],
                     ["account", "event", "-", "--delta", "1e-6", "--time-budget", "1", "--bracket", "--json"]):
            add(f"cli/{' '.join(args)} < {label}", kind="cli", args=args, stdin_event=events[label])
    return queries


def _record(queries: list[dict], timings: dict | None = None) -> list[dict]:
    out = []
    for query in queries:
        start = time.process_time()
        results = run(query)
        if timings is not None:
            timings[query["id"]] = time.process_time() - start
        out.append(results)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the corpus instead of writing it")
    parser.add_argument("--timings", help="write each query's CPU seconds (of the first recording) to this JSON file")
    parser.add_argument("--only", help="only the queries whose id contains this text (with --check or --timings)")
    options = parser.parse_args()
    queries = corpus_queries()
    if options.only:
        queries = [q for q in queries if options.only in q["id"]]
    ids = [q["id"] for q in queries]
    assert len(set(ids)) == len(ids), "duplicate query ids"
    timings: dict = {}
    first = _record(queries, timings)
    if options.timings:
        pathlib.Path(options.timings).write_text(json.dumps(timings, indent=1))
    if options.check:
        recorded = {e["id"]: e["results"] for e in json.loads(CORPUS.read_text())["queries"]}
        bad = [(q["id"], d) for q, r in zip(queries, first) if q["id"] in recorded for d in [differences(recorded[q["id"]], r)] if d]
        for qid, lines in bad:
            print(qid, *lines, sep="\n  ", file=sys.stderr)
        print(f"{len(queries)} queries, {len(bad)} differ", file=sys.stderr)
        sys.exit(1 if bad else 0)
    if options.only:
        sys.exit("--only records nothing: use it with --check or --timings")
    # the second recording in the reverse order: a result that depends on what ran before (a
    # cache keyed on too little) differs, as one that depends on the clock or on chance
    second = _record(queries[::-1])[::-1]
    entries, dropped = [], []
    for query, a, b in zip(queries, first, second):
        lines = differences(a, b)
        if lines:
            dropped.append(query["id"])
            print(f"nondeterministic, dropped: {query['id']}", *lines, sep="\n  ", file=sys.stderr)
            continue
        entries.append({**query, "results": a})
    corpus = {"recorded_from": _head(), "dropped_as_nondeterministic": dropped, "queries": entries}
    CORPUS.write_text(json.dumps(corpus, indent=1, sort_keys=False) + "\n")
    print(f"{len(entries)} queries recorded in {CORPUS} ({len(dropped)} dropped); {sum(timings.values()):.1f} CPU s", file=sys.stderr)


def _head() -> str:
    """The last commit that changed the library (``accounting``, ``dpverify``), marked if the
    working tree changes it further."""
    import subprocess

    root = HERE.parent.parent
    try:
        commit = subprocess.run(["git", "log", "-1", "--format=%H", "--", "accounting", "dpverify"], cwd=root, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "accounting", "dpverify"], cwd=root, capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + (" + uncommitted changes" if dirty else "")


if __name__ == "__main__":
    main()
