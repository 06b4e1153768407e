"""Empirical privacy auditing: lower confidence bounds on epsilon, delta and Renyi divergences.

Public surface (re-exported by :mod:`dpverify`): :func:`audit`, :class:`AuditResult`,
:class:`AuditReport`, :class:`NeighbourPair`, the pair generators, and the exact binomial
bounds used throughout.
"""

from ._audit import DEFAULT_ORDERS, ESTIMATORS, audit
from ._neighbours import NeighbourPair, replace_one_pairs, scalar_pairs, statdp_pairs
from ._results import AuditReport, AuditResult
from .._statistics._confidence import cp_lower, cp_upper, rate_interval, sequential_level

__all__ = [
    "DEFAULT_ORDERS",
    "ESTIMATORS",
    "AuditReport",
    "AuditResult",
    "NeighbourPair",
    "audit",
    "cp_lower",
    "cp_upper",
    "rate_interval",
    "replace_one_pairs",
    "scalar_pairs",
    "sequential_level",
    "statdp_pairs",
]
