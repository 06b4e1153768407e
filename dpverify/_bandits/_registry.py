"""The registry of algorithms, instances and figures that ``dpverify run`` / ``reproduce`` use.

Other packages (``dpverify._bandits.linear``) register into it with :func:`register_algorithm`,
:func:`register_instance` and :func:`register_figure`; see ``dpverify/_bandits/__init__.py``.
Registration is explicit (a function call at the registering module's import), and the registry
imports the linear package lazily the first time a listing is asked for, so importing
``dpverify`` has no side effects beyond defining things.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from accounting._validation import AccountingError

__all__ = [
    "AlgorithmSpec",
    "FigureSpec",
    "InstanceSpec",
    "algorithms",
    "figures",
    "get_algorithm",
    "get_figure",
    "get_instance",
    "instance_name",
    "instances",
    "register_algorithm",
    "register_figure",
    "register_instance",
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
_LOADED = False

#: packages that register into this registry when imported
_PLUGINS = ("dpverify._bandits._builtin", "dpverify._bandits.linear")


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


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module in _PLUGINS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name != module:  # the plugin exists but is broken: say so
                raise


def algorithms() -> dict[str, AlgorithmSpec]:
    _load()
    return dict(_ALGORITHMS)


def instances() -> dict[str, InstanceSpec]:
    _load()
    return dict(_INSTANCES)


def figures() -> dict[str, FigureSpec]:
    _load()
    return dict(_FIGURES)


def get_algorithm(name: str) -> AlgorithmSpec:
    table = algorithms()
    if name not in table:
        raise AccountingError("algorithm", name, f"one of {sorted(table)}")
    return table[name]


def instance_name(instance: Any) -> str:
    """The name of a registered instance (a string) or of a user's instance object."""
    return instance if isinstance(instance, str) else str(getattr(instance, "name", type(instance).__name__))


def get_instance(name: Any) -> InstanceSpec:
    """The spec of a registered instance, or one wrapping a user's instance object.

    A ``BanditInstance`` (multi-armed) or ``LinearInstance`` (linear) object stands for itself:
    every seed runs on it (it is fixed, not drawn per seed).
    """
    if not isinstance(name, str):
        from ._environments import BanditInstance

        if isinstance(name, BanditInstance):
            family = "multi-armed"
        else:
            try:
                from .linear import LinearInstance
            except ImportError:  # pragma: no cover - the linear package is part of dpverify
                LinearInstance = ()  # type: ignore[assignment]
            if not isinstance(name, LinearInstance):
                raise AccountingError("instance", name, "an instance name (see --list), a BanditInstance or a LinearInstance")
            family = "linear"
        fixed = name
        return InstanceSpec(instance_name(fixed), family, lambda config, seed: fixed, f"user instance {instance_name(fixed)!r}")
    table = instances()
    if name not in table:
        raise AccountingError("instance", name, f"one of {sorted(table)}")
    return table[name]


def get_figure(name: str) -> FigureSpec:
    table = figures()
    if name not in table:
        raise AccountingError("figure", name, f"one of {sorted(table)}")
    return table[name]
