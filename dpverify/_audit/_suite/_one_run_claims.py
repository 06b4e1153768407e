"""Claim files with ``mode = "one-run"``: a one-run canary audit of a run as a suite claim (issue 33).

A one-run claim names a local-model algorithm (or, for a server-view audit of a central or
distributed algorithm, one of :data:`~dpverify._audit._one_run_server.SERVER_ALGORITHMS` with
parameters epsilon, horizon, arms, seeds -- the runs pooled --, guesses, delta, planted_scale:
:func:`~dpverify._audit._one_run_server.server_one_run_audit`; its verdict is the f-DP test of the
claim's certified trade-off curve, re-scored at any level from the counts and the curve it records),
or a local-model algorithm (``target``: one of
:data:`~dpverify._audit._one_run.ONE_RUN_ALGORITHMS`) and its run::

    mode = "one-run"
    target = "ldp-ucb-l"
    [parameters]
    epsilon = 1.0        # the run's eps; the claim is the per-user guarantee its ledger records
    horizon = 50_000     # T users
    canaries = 10_000    # m of them canaries with a fair random reward bit
    # arms = 2, guesses = (chosen on a pilot), chunk = (the UCB runner's), delta = 0.0,
    # planted_scale = 1.0 (planted files only: the privatizer's noise at this times eps)

The run is audited once (:func:`~dpverify._audit._one_run.one_run_audit`) with the claim's seed;
its result is an :class:`~dpverify._audit._results.AuditResult` of estimator ``"one-run"`` that
carries its counts (m, guesses, correct), so the gate re-scores it at any level like any other
result (``_rescore``: the one-run bound at that level) and its p-value -- the smallest grid level
at which the bound exceeds the claim, a valid p-value since the bound at level l exceeds the true
eps with probability at most l -- joins Holm's procedure over the suite's claims.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import math

from .._one_run import ONE_RUN_ALGORITHMS, one_run_audit
from .._one_run_server import SERVER_ALGORITHMS, server_one_run_audit

from .._results import HOLDS, VIOLATED, AuditResult
from ._spec import ClaimSpec, SuiteError

__all__ = ["ONE_RUN", "check_one_run", "one_run_result"]

ONE_RUN = "one-run"
_PARAMETERS = {"epsilon", "horizon", "canaries", "arms", "guesses", "chunk", "delta", "planted_scale"}
_SERVER_PARAMETERS = {"epsilon", "horizon", "arms", "seeds", "guesses", "delta", "planted_scale"}


def _options(spec: ClaimSpec) -> dict[str, Any]:
    params = dict(spec.parameters)
    server = spec.target in SERVER_ALGORITHMS
    allowed = _SERVER_PARAMETERS if server else _PARAMETERS
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise SuiteError(spec.file, f"parameters.{unknown[0]}", f"unknown key for a one-run claim (allowed: {', '.join(sorted(allowed))})")
    for key in ("epsilon", "horizon") if server else ("epsilon", "horizon", "canaries"):
        if key not in params:
            raise SuiteError(spec.file, f"parameters.{key}", "missing (required by a one-run claim)")
    for key in ("horizon", "canaries", "arms", "guesses", "chunk", "seeds"):
        if key in params and (isinstance(params[key], bool) or not isinstance(params[key], int) or params[key] < 1):
            raise SuiteError(spec.file, f"parameters.{key}", f"expected an integer >= 1, got {params[key]!r}")
    for key in ("epsilon", "planted_scale"):
        if key in params and (isinstance(params[key], bool) or not isinstance(params[key], (int, float)) or not params[key] > 0):
            raise SuiteError(spec.file, f"parameters.{key}", f"expected a number > 0, got {params[key]!r}")
    if "planted_scale" in params and not spec.planted:
        raise SuiteError(spec.file, "parameters.planted_scale", "only in a planted file (it plants a wrong noise scale)")
    if "delta" in params and (isinstance(params["delta"], bool) or not isinstance(params["delta"], (int, float)) or not 0 <= params["delta"] < 1):
        raise SuiteError(spec.file, "parameters.delta", f"expected a probability in [0, 1), got {params['delta']!r}")
    if not server and params["canaries"] > params["horizon"]:
        raise SuiteError(spec.file, "parameters.canaries", f"expected at most horizon = {params['horizon']}, got {params['canaries']!r}")
    return params


def check_one_run(spec: ClaimSpec) -> None:
    """Validate a one-run claim before anything runs (the suite fails fast on a malformed file)."""
    if spec.target not in ONE_RUN_ALGORITHMS + SERVER_ALGORITHMS:
        raise SuiteError(spec.file, "target", f"a one-run claim audits one of {', '.join(ONE_RUN_ALGORITHMS)} (the local model) or "
                         f"{', '.join(SERVER_ALGORITHMS)} (server view), got {spec.target!r}")
    if spec.claim and set(spec.claim) - {"form"} or spec.claim.get("form", "pure") != "pure":
        raise SuiteError(spec.file, "claim.form", 'a one-run claim is "pure" (the per-user eps the run\'s ledger records)')
    _options(spec)


def one_run_result(spec: ClaimSpec, seed: int, level: float) -> tuple[AuditResult, str]:
    """The claim's one-run audit at error level ``level``: (its result, the claim's text)."""
    check_one_run(spec)
    params = _options(spec)
    if spec.target in SERVER_ALGORITHMS:
        return _server_result(spec, params, seed, level)
    started = time.perf_counter()
    audit = one_run_audit(spec.target, epsilon=float(params["epsilon"]), horizon=params["horizon"], canaries=params["canaries"],
                          arms=params.get("arms", 2), level=level, delta=float(params.get("delta", 0.0)), seed=seed,
                          guesses=params.get("guesses"), chunk=params.get("chunk"), planted_scale=float(params.get("planted_scale", 1.0)))
    details = {"canaries": audit.canaries, "guesses": audit.guesses, "correct": audit.correct, "delta": audit.delta,
               "observed": audit.observed, "users": audit.users, "view": audit.view, "result_share": 1.0}
    accuracy = audit.correct / audit.guesses if audit.guesses else 0.5
    estimate = math.log(accuracy / (1 - accuracy)) if 0 < accuracy < 1 else (math.inf if accuracy == 1 else 0.0)
    result = AuditResult(
        claimed=audit.claim_epsilon, lower_bound=audit.epsilon_lower, estimate=estimate, confidence=1.0 - level,
        verdict=VIOLATED if audit.epsilon_lower > audit.claim_epsilon else HOLDS, samples=1, seconds=time.perf_counter() - started,
        event=f"{audit.guesses} guesses on the most confident of {audit.canaries} canaries ({audit.observed} observed), {audit.correct} correct",
        method="one-run (Steinke, Nasr & Jagielski 2023), certified in Arb", estimator=ONE_RUN,
        pair=f"{audit.view} view: {audit.users} users, {audit.canaries} canaries with fair reward bits", direction="both (one budget)",
        details=details,
    )
    return result, f"{audit.claim_epsilon:.6g}-DP per user (one run)"


def _server_result(spec: ClaimSpec, params: dict[str, Any], seed: int, level: float) -> tuple[AuditResult, str]:
    started = time.perf_counter()
    options = {key: params[key] for key in ("horizon", "arms", "seeds", "guesses") if key in params}
    audit = server_one_run_audit(spec.target, epsilon=float(params["epsilon"]), seed=seed, level=level, delta=float(params.get("delta", 1e-6)),
                                 planted_scale=float(params.get("planted_scale", 1.0)), **options)
    details = {"canaries": audit.canaries, "guesses": audit.guesses, "correct": audit.correct, "delta": audit.claim_delta,
               "observed": audit.observed, "seeds_pooled": audit.seeds_pooled, "users": audit.users_per_run, "view": audit.view,
               "result_share": 1.0, "fdp_epsilons": list(audit.curve.epsilons), "fdp_deltas": list(audit.curve.deltas),
               "epsilon_lower_snj": audit.epsilon_approx, "epsilon_lower_pure": audit.epsilon_pure}
    accuracy = audit.correct / audit.guesses if audit.guesses else 0.5
    estimate = math.log(accuracy / (1 - accuracy)) if 0 < accuracy < 1 else (math.inf if accuracy == 1 else 0.0)
    result = AuditResult(
        claimed=audit.claim_epsilon, lower_bound=audit.epsilon_fdp, estimate=estimate, confidence=1.0 - level,
        verdict=VIOLATED if audit.fdp_rejects_claim else HOLDS, samples=audit.seeds_pooled, seconds=time.perf_counter() - started,
        event=(f"{audit.guesses} guesses on the most confident of {audit.canaries} canaries ({audit.observed} observed, "
               f"{audit.seeds_pooled} seeds pooled), {audit.correct} correct"),
        method="one-run, server view: f-DP test of the claim's certified curve (Mahloujifar, Melis & Chaudhuri), mpmath-confirmed",
        estimator=ONE_RUN, pair=f"{audit.view}: a canary with a fair reward bit first in every release", direction="both (one budget)",
        details=details,
    )
    return result, audit.claim


def one_run_specs(specs: Sequence[ClaimSpec]) -> list[ClaimSpec]:
    return [s for s in specs if getattr(s, "mode", "") == ONE_RUN]
