"""Users' own mechanisms in the gate: a claim file whose target is an importable callable.

``target = "mypackage.mechanisms:noisy_max"`` names a function ``f(data, rng, size, **parameters)``
returning ``size`` outputs (the :func:`dpverify.audit` contract); the claim file then states the
claim itself, since there is no ``accounting`` guarantee to read it from::

    target = "mypackage.mechanisms:noisy_max"
    [parameters]              # passed to the callable as keyword arguments
    epsilon = 1.0
    [claim]                   # exactly one of these shapes ("form" optional; it must match):
    epsilon = 1.0             #   pure eps-DP
    # epsilon = 1.0, delta = 1e-6              (eps, delta)-DP: delta audited at this epsilon
    # rho = 0.5                                rho-zCDP
    # orders = [2, 4, 8], epsilons = [...]     RDP at those orders
    [neighbours]              # an explicit list of [D, D'] pairs, or a generator
    pairs = [[[1, 1, 1], [2, 1, 1]], [[1, 1, 1], [0, 1, 1]]]
    # generator = "statdp", length = 5 (sensitivity = 1)
    # generator = "scalar", value = 0 (sensitivity = 1)
    # generator = "replace-one", dataset = [...], values = [...] (position = 0)
    [audit]
    samples = 200_000

The target plugs into the registry's path: :func:`user_target` returns a
:class:`~._registry.Target` whose builder reads the tables like any built-in's (an unknown
neighbours key is an error), and whose "guarantee" is the stated claim (:class:`StatedClaim`),
so :func:`~._build.build` derives the audited claim exactly as for a built-in.

An RDP claim stated at orders a_1 < ... < a_k bounds eps(alpha) <= min{e_i : a_i >= alpha} for
every alpha <= a_k (Renyi divergences are non-decreasing in the order); the audit tests the
stated orders unless ``[audit] orders`` picks some of them.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from accounting import Mechanism

from .._neighbours import NeighbourPair, as_pairs, replace_one_pairs, scalar_pairs, statdp_pairs
from ._registry import Built, Target
from ._spec import FORMS, SuiteError, _Table

__all__ = ["StatedClaim", "check_user_claim", "is_user_target", "user_target"]

_TARGET_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
_CLAIM_KEYS = {"form", "epsilon", "delta", "rho", "orders", "epsilons"}
GENERATORS = ("statdp", "scalar", "replace-one")


def is_user_target(name: str) -> bool:
    """Whether a claim file's ``target`` names a user's callable (``module:attribute``)."""
    return ":" in name


def check_target_name(file: str, name: str) -> None:
    if not _TARGET_RE.match(name):
        raise SuiteError(file, "target", f'expected "package.module:function" for a user mechanism, got {name!r}')


# ---- the stated claim ----------------------------------------------------------------------------


def _number(file: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise SuiteError(file, f"claim.{key}", f"expected a finite number > 0, got {value!r}")
    return float(value)


def check_user_claim(file: str, claim: Mapping[str, Any], audit_orders: tuple[float, ...] | None) -> tuple[str, tuple[float, ...] | None]:
    """Validate a user target's ``[claim]`` table: (its form, the Renyi orders to audit)."""
    unknown = sorted(set(claim) - _CLAIM_KEYS)
    if unknown:
        raise SuiteError(file, f"claim.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(_CLAIM_KEYS))})")
    keys = frozenset(claim) - {"form"}
    shapes = {frozenset({"epsilon"}): "pure", frozenset({"epsilon", "delta"}): "approx", frozenset({"rho"}): "zcdp",
              frozenset({"orders", "epsilons"}): "rdp"}
    form = shapes.get(keys)
    if form is None:
        raise SuiteError(file, "claim", "a user mechanism states its claim: epsilon (pure), epsilon and delta (approx), "
                         f"rho (zcdp), or orders and epsilons (rdp); got keys {sorted(keys) or 'none'}")
    stated = claim.get("form", form)
    if stated not in FORMS or stated != form:
        raise SuiteError(file, "claim.form", f"expected {form!r} for the keys given ({', '.join(sorted(keys))}), got {stated!r}")
    if form in ("pure", "approx"):
        _number(file, "epsilon", claim["epsilon"])
    if form == "approx":
        delta = claim["delta"]
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 <= delta < 1:
            raise SuiteError(file, "claim.delta", f"expected a probability in [0, 1), got {delta!r}")
    if form == "zcdp":
        _number(file, "rho", claim["rho"])
    orders = audit_orders
    if form == "rdp":
        points = _rdp_points(file, claim)
        stated_orders = tuple(a for a, _ in points)
        if audit_orders is None:
            orders = stated_orders
        elif any(o > stated_orders[-1] for o in audit_orders):
            raise SuiteError(file, "audit.orders", f"the claim bounds orders up to {stated_orders[-1]:g} only, got {list(audit_orders)}")
    elif audit_orders is not None and form == "approx":
        raise SuiteError(file, "audit.orders", "an (epsilon, delta) claim has no Renyi curve to audit")
    return form, orders


def _rdp_points(file: str, claim: Mapping[str, Any]) -> list[tuple[float, float]]:
    orders, epsilons = claim["orders"], claim["epsilons"]
    if (not isinstance(orders, list) or not orders
            or any(isinstance(o, bool) or not isinstance(o, (int, float)) or not 1 < o < math.inf for o in orders)):
        raise SuiteError(file, "claim.orders", f"expected a non-empty list of Renyi orders > 1, got {orders!r}")
    if len(set(orders)) != len(orders):
        raise SuiteError(file, "claim.orders", f"expected distinct orders, got {orders!r}")
    if not isinstance(epsilons, list) or len(epsilons) != len(orders):
        raise SuiteError(file, "claim.epsilons", f"expected a list of {len(orders)} numbers (one per order), got {epsilons!r}")
    values = [_number(file, "epsilons", e) for e in epsilons]
    return sorted(zip((float(o) for o in orders), values))


@dataclass(frozen=True)
class StatedClaim(Mechanism):
    """A claim written in the claim file, in the shape of an ``accounting`` guarantee object
    (``pure()`` / ``zcdp()`` / ``rdp()`` / ``approx_dp(eps)``; every other form is ``None``)."""

    form: str
    values: Mapping[str, Any]

    def describe(self) -> str:
        return f"the stated {self.form} claim"

    def pure(self) -> Any:
        from accounting import PureDP

        return PureDP(self.values["epsilon"]) if self.form == "pure" else None

    def zcdp(self) -> Any:
        from accounting import ZCDP

        return ZCDP(self.values["rho"]) if self.form == "zcdp" else None

    def approx_dp(self, epsilon: float) -> Any:
        from accounting import ApproxDP

        if self.form != "approx" or float(epsilon) != float(self.values["epsilon"]):
            return None
        return ApproxDP(self.values["epsilon"], self.values["delta"])

    def rdp(self) -> Any:
        if self.form != "rdp":
            return None
        return _step_curve(_rdp_points("", self.values))


def _step_curve(points: list[tuple[float, float]]) -> Any:
    """The RDP curve implied by bounds at finitely many orders: eps(alpha) <= e_i for the first
    stated order a_i >= alpha (Renyi divergence is non-decreasing in the order); undefined above."""
    from accounting import RDP, AccountingError
    from accounting.internal import exact

    balls = [(exact(a), exact(e)) for a, e in points]
    top = points[-1][0]
    # the smallest stated e_j over orders a_j >= a_i (monotonicity makes the later bounds apply)
    suffix_min = [min(e for _, e in points[i:]) for i in range(len(points))]

    def curve(alpha: Any) -> Any:
        for (a, _), best in zip(balls, suffix_min):
            if alpha <= a:  # arb comparison: true only if the whole ball is <= a
                return exact(best)
        raise AccountingError("alpha", alpha, f"an order <= {top:g} (the largest order the claim states)")

    def approx(alphas: np.ndarray) -> np.ndarray:
        out = np.full(alphas.shape, np.inf)
        for (a, _), best in zip(reversed(points), reversed(suffix_min)):
            out = np.where(alphas <= a, best, out)
        return out

    return RDP.from_function(curve, f"RDP stated at orders {', '.join(f'{a:g}' for a, _ in points)}", approx)


# ---- the callable and its pairs ------------------------------------------------------------------


def _import(file: str, name: str) -> Callable[..., Any]:
    module_name, _, attribute = name.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise SuiteError(file, "target", f"cannot import module {module_name!r} ({error}); is it installed or on PYTHONPATH?") from None
    except Exception as error:  # the user's module raised on import
        raise SuiteError(file, "target", f"importing module {module_name!r} raised {type(error).__name__}: {error}") from None
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise SuiteError(file, "target", f"module {module_name!r} has no attribute {attribute!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise SuiteError(file, "target", f"{name!r} is a {type(obj).__name__}, not a callable mechanism(data, rng, size)")
    return obj


def _check_signature(file: str, name: str, fn: Callable[..., Any], parameters: Mapping[str, Any]) -> None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin or a compiled function without a signature: its first call will tell
    try:
        signature.bind(None, None, 1, **parameters)
    except TypeError as error:
        keys = f" and keyword arguments {', '.join(sorted(parameters))} (from [parameters])" if parameters else ""
        raise SuiteError(file, "target", f"{name}{signature} cannot be called as f(data, rng, size){keys}: {error}") from None


def _as_input(value: Any) -> Any:
    """A TOML value as a mechanism input: lists become numpy arrays, scalars stay Python numbers."""
    return np.asarray(value) if isinstance(value, list) else value


def _user_pairs(nb: _Table) -> tuple[NeighbourPair, ...]:
    generator = nb._get("generator", None)
    if generator is None:
        raw = nb._get("pairs", None)
        if raw is None:
            raise nb.error("pairs", 'missing: a list of [D, D\'] pairs, or generator = "statdp" | "scalar" | "replace-one"')
        if not isinstance(raw, list) or not raw or any(not isinstance(p, list) or len(p) != 2 for p in raw):
            raise nb.error("pairs", f"expected a non-empty list of [D, D'] pairs, e.g. [[0, 1], [1, 0]] (two pairs), got {raw!r}")
        return as_pairs([(_as_input(d), _as_input(d_prime)) for d, d_prime in raw])
    if generator not in GENERATORS:
        raise nb.error("generator", f"expected one of {', '.join(map(repr, GENERATORS))}, got {generator!r}")
    if generator == "statdp":
        length = nb.integer("length", minimum=1, maximum=10**6)
        return statdp_pairs(length, nb.number("sensitivity", 1.0))
    if generator == "scalar":
        value = nb._get("value", None)
        sensitivity = nb._get("sensitivity", 1)
        for key, v in (("value", value), ("sensitivity", sensitivity)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise nb.error(key, f"expected a finite number, got {v!r}")
        if sensitivity <= 0:
            raise nb.error("sensitivity", f"expected a number > 0, got {sensitivity!r}")
        return scalar_pairs(value, sensitivity)
    dataset, values = nb._get("dataset", None), nb._get("values", None)
    if not isinstance(dataset, list) or not dataset:
        raise nb.error("dataset", f"expected a non-empty list of records, got {dataset!r}")
    if not isinstance(values, list) or not values:
        raise nb.error("values", f"expected a non-empty list of replacement records, got {values!r}")
    position = nb.integer("position", 0, minimum=-len(dataset), maximum=len(dataset) - 1)
    try:
        return replace_one_pairs(np.asarray(dataset), values, position)
    except ValueError as error:
        raise nb.error("values", str(error)) from None


def user_target(file: str, name: str, claim: Mapping[str, Any]) -> Target:
    """The registry entry of a user's callable: its builder imports it, checks its signature,
    binds ``[parameters]`` as keyword arguments and reads the pairs from ``[neighbours]``."""
    check_target_name(file, name)
    form, _ = check_user_claim(file, claim, None)

    def builder(p: _Table, nb: _Table) -> Built:
        fn = _import(file, name)
        parameters = p.remaining()
        _check_signature(file, name, fn, parameters)
        pairs = _user_pairs(nb)
        if parameters:
            def mechanism(data: Any, rng: np.random.Generator, size: int) -> Any:
                return fn(data, rng, size, **parameters)
        else:
            mechanism = fn
        values = {k: v for k, v in claim.items() if k != "form"}
        return Built(mechanism, pairs, StatedClaim(form, values), form, note=f"user mechanism {name}")

    return Target(name, f"user mechanism {name}", builder)
