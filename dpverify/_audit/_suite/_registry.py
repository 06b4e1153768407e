"""The registry of auditable targets, and building a claim from a validated claim file.

A target turns a claim file's ``[parameters]`` and ``[neighbours]`` tables into a :class:`Built`:
the mechanism ``(data, rng, size) -> outputs``, its neighbouring pairs, the ``accounting``
guarantee the claim is taken from, the default claim form and, optionally, an exact log-pmf.
:func:`build` reads the claim of the requested form off that guarantee (never a hand-written
number).

How a module registers a target. Decorate a builder ``(params: _Table, neighbours: _Table) ->
Built`` with :func:`_target`; read every key through the tables (``p.number("epsilon")``,
``p.integer("n", minimum=1)``, ``nb.pair("values", [0, 1], integer=True)``, ...: a wrong value
is a :class:`SuiteError` naming the file and the key, and a key the builder never reads is
rejected as unknown)::

    from dpverify._audit._suite._registry import Built, _Table, _scalar_pair, _target

    @_target("shuffle-rr", "binary randomized response, shuffled; ShuffleGuarantee(eps0, n)", cost=3.0)
    def _shuffle_rr(p: _Table, nb: _Table) -> Built:
        eps0 = p.number("epsilon0")
        ...
        return Built(mechanism, _scalar_pair(nb, (0, 1), integer=True), guarantee, "approx")

``cost`` is a rough per-draw cost relative to a scalar sampler (the gate schedules the longest
claims first); names starting ``bug.`` are planted bugs. The module must be imported for its
targets to exist: add one import line to ``dpverify/_audit/_suite/__init__.py`` (the built-ins
of :mod:`._targets` and :mod:`._planted` are imported there), and every target needs a claim file
in ``audits/`` (``tests/test_audit_suite.py`` checks that the registry and the suite agree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .._neighbours import NeighbourPair
from ._schema import ClaimSpec, SuiteError, _Table

__all__ = ["PREFIXES", "TARGETS", "Built", "Claim", "Target", "build", "prefixed_target", "_Table", "_target"]


# ------------------------------------------------------------------------------------------------
# The registry of auditable targets
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    """What a target builder returns: the mechanism, its neighbours, the accountant's guarantee
    object (``pure()`` / ``rdp()`` / ``zcdp()``), the default claim form and, optionally, the
    exact log-pmf of the mechanism (only where it is known exactly, e.g. a noiseless view)."""

    mechanism: Callable[..., Any]
    pairs: tuple[NeighbourPair, ...]
    guarantee: Any
    default_form: str
    log_pmf: Callable[[Any, np.ndarray], np.ndarray] | None = None
    note: str = ""
    #: extra keyword arguments of ``dpverify.audit`` the target needs (a run target's pair search)
    audit_options: dict[str, Any] = field(default_factory=dict)
    #: rewrites a witness event's description (a run target names the view, batch and arm of a coordinate)
    describe_event: Callable[[str], str] | None = None


@dataclass(frozen=True)
class Target:
    name: str
    summary: str
    builder: Callable[[_Table, _Table], Built]
    planted: bool = False


TARGETS: dict[str, Target] = {}
_TARGETS_COST: dict[str, float] = {}
#: families of targets named "<prefix>:<name>" (``"run:dist-dp-se"``): prefix -> resolver(file, name) -> Target
PREFIXES: dict[str, Callable[[str, str], Target]] = {}


def prefixed_target(file: str, name: str) -> Target | None:
    """The target of a prefixed name (a SuiteError if the family does not know it), or None if
    ``name`` has no registered prefix."""
    prefix, sep, rest = name.partition(":")
    if not sep or prefix not in PREFIXES:
        return None
    return PREFIXES[prefix](file, rest)


def _target(name: str, summary: str, *, cost: float = 1.0) -> Callable[[Callable[[_Table, _Table], Built]], Callable[[_Table, _Table], Built]]:
    def register(fn: Callable[[_Table, _Table], Built]) -> Callable[[_Table, _Table], Built]:
        TARGETS[name] = Target(name, summary, fn, name.startswith("bug."))
        _TARGETS_COST[name] = cost
        return fn

    return register


def _scalar_pair(nb: _Table, default: tuple[Any, Any], *, integer: bool) -> tuple[NeighbourPair, ...]:
    d, d_prime = nb.pair("values", list(default), integer=integer)
    return (NeighbourPair(d, d_prime, f"input {d!r} -> {d_prime!r}"),)



# ------------------------------------------------------------------------------------------------
# Building a claim
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    mechanism: Callable[..., Any]
    pairs: tuple[NeighbourPair, ...]
    claim: Any
    log_pmf: Callable[..., Any] | None
    form: str
    guarantee: Any
    text: str
    audit_options: dict[str, Any] = field(default_factory=dict)
    describe_event: Callable[[str], str] | None = None


def build(spec: ClaimSpec) -> Claim:
    """The target's mechanism, neighbours, the claim (from the accountant) and the law, if declared."""
    from accounting import ApproxDP, PureDP, RDP, ZCDP, rdp_to_delta
    from accounting._validation import AccountingError

    if spec.target in TARGETS:
        target = TARGETS[spec.target]
    elif (found := prefixed_target(spec.file, spec.target)) is not None:
        target = found
    else:
        from ._user import user_target  # "package.module:function" (load_claim checked the form)

        target = user_target(spec.file, spec.target, spec.claim)
    params = _Table(spec, "parameters", spec.parameters)
    neighbours = _Table(spec, "neighbours", spec.neighbours)
    try:
        built = target.builder(params, neighbours)
    except SuiteError:
        raise
    except AccountingError as error:
        raise SuiteError(spec.file, f"parameters.{error.name}" if getattr(error, "name", None) else "parameters", str(error)) from None
    params.done()
    neighbours.done()
    form = spec.claim.get("form", built.default_form)
    g = built.guarantee
    try:
        if form == "pure":
            claim = g.pure()
            if not isinstance(claim, PureDP):
                raise SuiteError(spec.file, "claim.form", f"{g.describe()} has no pure DP guarantee")
            text = f"{claim.epsilon:.6g}-DP"
        elif form == "rdp":
            claim = g.rdp()
            if not isinstance(claim, RDP):
                raise SuiteError(spec.file, "claim.form", f"{g.describe()} has no RDP curve")
            text = "RDP"
        elif form == "zcdp":
            claim = g.zcdp()
            if not isinstance(claim, ZCDP):
                raise SuiteError(spec.file, "claim.form", f"{g.describe()} has no zCDP guarantee")
            text = f"{claim.rho:.6g}-zCDP"
        else:
            eps = float(spec.claim["epsilon"])
            if hasattr(g, "approx_dp"):
                claim = g.approx_dp(eps)
            else:
                claim = ApproxDP(eps, rdp_to_delta(g.rdp(), eps).delta)
            if not isinstance(claim, ApproxDP):
                raise SuiteError(spec.file, "claim.form", f"{g.describe()} has no (eps, delta) guarantee")
            text = f"({claim.epsilon:.6g}, {claim.delta:.3g})-DP"
    except AccountingError as error:
        raise SuiteError(spec.file, "claim.form", str(error)) from None
    if spec.estimators is not None:
        allowed = {"pure": {"epsilon", "delta", "renyi"}, "rdp": {"renyi"}, "zcdp": {"renyi"}, "approx": {"delta"}}[form]
        bad = [e for e in spec.estimators if e not in allowed]
        if bad:
            raise SuiteError(spec.file, "audit.estimators", f"{bad[0]!r} does not test a {form!r} claim (allowed: {sorted(allowed)})")
    return Claim(built.mechanism, built.pairs, claim, built.log_pmf, form, g, text, built.audit_options, built.describe_event)

