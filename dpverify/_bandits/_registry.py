"""The registry of algorithms, instances and figures that ``dpverify run`` / ``reproduce`` use.

This module is the bottom of the bandits package: the spec types and the tables, nothing else.
Families (``_builtin``, ``dpverify._bandits.linear``, a user's package) register into it with
:func:`register_algorithm`, :func:`register_instance`, :func:`register_figure` and
:func:`register_instance_type`, at their own import; see ``dpverify/_bandits/__init__.py``. The
lookups that load the built-in families first live above them: ``_catalog`` (algorithms and
instances, used by the runner) and ``_figures`` (figures, which run sweeps), so every import arrow
points down to this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from accounting import AccountingError

__all__ = [
    "AlgorithmSpec",
    "FigureSpec",
    "InstanceSpec",
    "instance_name",
    "lookup",
    "register_algorithm",
    "register_figure",
    "register_instance",
    "register_instance_type",
    "registered",
]


@dataclass(frozen=True)
class AlgorithmSpec:
    """An algorithm ``dpverify run`` can run.

    ``run(config, instance, seeds, run_index) -> RunRecord``: ``config`` is the
    :class:`dpverify._bandits._runner.RunConfig`, ``instance`` what the instance spec built for
    this run, ``seeds`` a dict of ``SeedSequence`` ("instance", "environment", "privatizer",
    "learner"), ``run_index`` the seed index. ``family`` says which instances it accepts
    ("multi-armed" or "linear").
    """

    name: str
    family: str
    run: Callable[..., Any]
    description: str
    private: bool = True
    paper: str = ""


@dataclass(frozen=True)
class InstanceSpec:
    """An instance: ``build(config, seed) -> instance`` (``seed`` the run's "instance" SeedSequence)."""

    name: str
    family: str
    build: Callable[..., Any]
    description: str
    random: bool = False  # drawn anew for every seed (the paper's "20 random instances")


@dataclass(frozen=True)
class FigureSpec:
    """A figure ``dpverify reproduce`` can make: ``make(outdir, quick, executor, progress) -> [paths]``."""

    name: str
    description: str
    make: Callable[..., list[Path]]
    paper: str = ""
    options: dict = field(default_factory=dict)


_ALGORITHMS: dict[str, AlgorithmSpec] = {}
_INSTANCES: dict[str, InstanceSpec] = {}
_FIGURES: dict[str, FigureSpec] = {}
#: the algorithm families; an algorithm runs only on instances of its own family
FAMILIES = ("multi-armed", "linear")

#: instance classes that stand for themselves (a user's instance object), by family
_INSTANCE_TYPES: dict[type, str] = {}


def _register(table: dict, spec: Any, kind: str, replace: bool) -> None:
    name = spec.name
    if not isinstance(name, str) or not name or name != name.lower() or " " in name:
        raise AccountingError(f"{kind} name", name, "a non-empty lower-case name with dashes")
    if name in table and not replace and table[name] != spec:
        raise AccountingError(f"{kind} name", name, "a name not already registered (pass replace=True to override)")
    table[name] = spec


def register_algorithm(spec: AlgorithmSpec, *, replace: bool = False) -> None:
    _register(_ALGORITHMS, spec, "algorithm", replace)


def register_instance(spec: InstanceSpec, *, replace: bool = False) -> None:
    _register(_INSTANCES, spec, "instance", replace)


def register_figure(spec: FigureSpec, *, replace: bool = False) -> None:
    _register(_FIGURES, spec, "figure", replace)


def register_instance_type(cls: type, family: str) -> None:
    """Objects of ``cls`` may be passed as the instance itself (every seed runs on that object)."""
    if not isinstance(cls, type):
        raise AccountingError("instance type", cls, "a class")
    if family not in FAMILIES:
        raise AccountingError("family", family, f"one of {FAMILIES}")
    _INSTANCE_TYPES[cls] = family


def registered() -> tuple[dict[str, AlgorithmSpec], dict[str, InstanceSpec], dict[str, FigureSpec], dict[type, str]]:
    """Copies of the four tables as they stand (nothing is loaded: see ``_catalog``)."""
    return dict(_ALGORITHMS), dict(_INSTANCES), dict(_FIGURES), dict(_INSTANCE_TYPES)


def lookup(table: dict[str, Any], kind: str, name: str) -> Any:
    """``table[name]``, or an error naming the ``kind``, the name and the names there are."""
    if name not in table:
        raise AccountingError(kind, name, f"one of {sorted(table)}")
    return table[name]


def instance_name(instance: Any) -> str:
    """The name of a registered instance (a string) or of a user's instance object."""
    return instance if isinstance(instance, str) else str(getattr(instance, "name", type(instance).__name__))
