"""Algorithm and instance lookups by name, over every built-in family.

The registry (``_registry``) holds the tables and nothing else; this module sits above the
families that fill them (``_builtin``, ``dpverify._bandits.linear``) and imports them on the first
lookup, so that importing the runner stays cheap (the linear package pulls in its design solver
and kernels, about a second) while every import arrow still points one way:
``_runner`` -> ``_catalog`` -> families -> ``_registry``. Figures, which run sweeps, are looked up
in ``_figures`` one layer higher.
"""

from __future__ import annotations

import importlib
from typing import Any

from accounting import AccountingError

from ._registry import AlgorithmSpec, InstanceSpec, instance_name, lookup, registered

__all__ = ["algorithms", "get_algorithm", "get_instance", "instances", "load"]

#: the built-in families, imported (and so registered) on the first lookup
_FAMILIES = ("dpverify._bandits._builtin", "dpverify._bandits.linear")
_loaded = False


def load() -> None:
    """Import every built-in family once (each registers itself at import)."""
    global _loaded
    if not _loaded:
        for module in _FAMILIES:
            importlib.import_module(module)
        _loaded = True


def algorithms() -> dict[str, AlgorithmSpec]:
    load()
    return registered()[0]


def instances() -> dict[str, InstanceSpec]:
    load()
    return registered()[1]


def get_algorithm(name: str) -> AlgorithmSpec:
    return lookup(algorithms(), "algorithm", name)


def get_instance(name: Any) -> InstanceSpec:
    """The spec of a registered instance, or one wrapping a user's instance object.

    A ``BanditInstance`` (multi-armed) or ``LinearInstance`` (linear) object, or an object of any
    class registered with ``register_instance_type``, stands for itself: every seed runs on it (it
    is fixed, not drawn per seed).
    """
    if isinstance(name, str):
        return lookup(instances(), "instance", name)
    load()
    family = next((fam for cls, fam in registered()[3].items() if isinstance(name, cls)), None)
    if family is None:
        raise AccountingError("instance", name, "an instance name (see --list), a BanditInstance or a LinearInstance")
    fixed = name
    return InstanceSpec(instance_name(fixed), family, lambda config, seed: fixed, f"user instance {instance_name(fixed)!r}")
