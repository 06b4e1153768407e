"""The registry of auditable targets.

A target turns a claim file's ``[parameters]`` and ``[neighbours]`` tables into a :class:`Built`:
the mechanism ``(data, rng, size) -> outputs``, its neighbouring pairs, the ``accounting``
guarantee the claim is taken from, the default claim form and, optionally, an exact log-pmf.
:func:`._build.build` reads the claim of the requested form off that guarantee (never a
hand-written number).

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
from ._spec import ClaimSpec, _Table

__all__ = ["PREFIXES", "TARGETS", "Built", "Target", "_Table", "_target", "claim_weight", "prefixed_target"]


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


def claim_weight(spec: ClaimSpec) -> float:
    """A claim's rough cost (the gate schedules the longest claims first)."""
    per_draw = _TARGETS_COST.get(spec.target, 1.0)
    n = spec.parameters.get("n", 1) if isinstance(spec.parameters.get("n", 1), int) else 1
    return spec.samples * per_draw * max(1.0, n / 16)


def _scalar_pair(nb: _Table, default: tuple[Any, Any], *, integer: bool) -> tuple[NeighbourPair, ...]:
    d, d_prime = nb.pair("values", list(default), integer=integer)
    return (NeighbourPair(d, d_prime, f"input {d!r} -> {d_prime!r}"),)
