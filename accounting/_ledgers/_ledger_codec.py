"""Guarantees and participants as JSON: the ledger's trail and the durable ledger's rows.

A guarantee is written as ``{"type": "pure"|"approx"|"zcdp", ...}`` or, for a mechanism,
``{"type": "mechanism", "family": ..., "parameters": {...}}`` with the mechanism's constructor
fields. Field values are JSON numbers, strings and booleans as they are (floats are written
exactly: ``repr`` round-trips), exact rationals as ``{"fraction": "p/q"}``, a mechanism inside a
mechanism (``PoissonSampled``'s base, a ``Composition``'s parts) as ``{"mechanism": {...}}`` and a
tuple as ``{"tuple": [...]}``, so that every guarantee and mechanism exported by
:mod:`accounting` reloads to an object equal to the one written. :func:`guarantee_spec` is the
canonical text (sorted keys): equal guarantees have equal text in every process and store.

Free-form RDP curves (``RDP.from_function``) have no parameters to write and are refused.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _mechanisms
from .._events._dp_event import Composition, KaryRandomizedResponse, NonPrivate
from .._core._guarantees import RDP, ZCDP, ApproxDP, PureDP
from .._core._mechanism_base import Mechanism
from .._amplification._shuffling import Shuffled
from .._amplification._subsampling import PoissonSampled, SampledWithoutReplacement
from .._core._total_variation import WithinTotalVariation
from .._core._validation import AccountingError, check_integer

__all__ = ["guarantee_from_dict", "guarantee_spec", "guarantee_to_dict", "participants_from_json", "participants_to_json"]

#: the mechanism families the trail can name (beyond those of accounting._mechanisms)
_MORE_FAMILIES = (*Shuffled, PoissonSampled, SampledWithoutReplacement, Composition, KaryRandomizedResponse, NonPrivate, WithinTotalVariation)


@functools.lru_cache(maxsize=1)
def mechanism_classes() -> dict[str, type]:
    """family name -> class, for every frozen-dataclass mechanism accounting exports."""
    classes = {cls.family: cls for cls in _MORE_FAMILIES}
    for name in _mechanisms.__all__:
        cls = getattr(_mechanisms, name)  # the module's exported names (classes, constants)
        if isinstance(cls, type) and issubclass(cls, Mechanism) and dataclasses.is_dataclass(cls):
            classes[cls.family] = cls
    return classes


def guarantee_to_dict(g: Any) -> dict:
    if isinstance(g, PureDP):
        return {"type": "pure", "epsilon": g.epsilon}
    if isinstance(g, ApproxDP):
        return {"type": "approx", "epsilon": g.epsilon, "delta": g.delta}
    if isinstance(g, ZCDP):
        return {"type": "zcdp", "rho": g.rho}
    if isinstance(g, RDP):
        raise AccountingError("guarantee", g, "a mechanism or a PureDP/ZCDP/ApproxDP (free-form RDP curves cannot be saved)")
    return {"type": "mechanism", **_mechanism_to_spec(g)}


def guarantee_from_dict(d: dict) -> Any:
    if not isinstance(d, dict):
        raise AccountingError("guarantee", d, "a JSON object with a 'type'")
    kind = d.get("type")
    if kind == "pure":
        return PureDP(d["epsilon"])
    if kind == "approx":
        return ApproxDP(d["epsilon"], d["delta"])
    if kind == "zcdp":
        return ZCDP(d["rho"])
    if kind == "mechanism":
        return _mechanism_from_spec(d)
    raise AccountingError("type", kind, "one of 'pure', 'approx', 'zcdp', 'mechanism'")


def guarantee_spec(g: Any) -> str:
    """The canonical text of a guarantee: the JSON trail's dict with sorted keys (floats written
    exactly, Fractions as "p/q"), so equal guarantees have equal text in every process and store."""
    return json.dumps(guarantee_to_dict(g), sort_keys=True, separators=(",", ":"))


def _encode_value(value: Any) -> Any:
    if isinstance(value, Fraction):
        return {"fraction": f"{value.numerator}/{value.denominator}"}
    if isinstance(value, tuple):
        return {"tuple": [_encode_value(v) for v in value]}
    if isinstance(value, list):
        return [_encode_value(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"mechanism": _mechanism_to_spec(value)}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise AccountingError("guarantee", value, "a mechanism whose parameters are numbers, fractions, tuples or mechanisms")


def _decode_value(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"fraction"}:
            return Fraction(value["fraction"])
        if set(value) == {"tuple"}:
            return tuple(_decode_value(v) for v in value["tuple"])
        if set(value) == {"mechanism"}:
            return _mechanism_from_spec(value["mechanism"])
        raise AccountingError("parameter", value, "a number, a string, {'fraction'}, {'tuple'} or {'mechanism'}")
    if isinstance(value, list):
        return [_decode_value(v) for v in value]
    return value


def _mechanism_to_spec(mechanism: Any) -> dict:
    family = mechanism.family if isinstance(mechanism, Mechanism) else None
    if family not in mechanism_classes() or not dataclasses.is_dataclass(mechanism):
        raise AccountingError("guarantee", mechanism, "an accounting mechanism (a registered frozen dataclass)")
    fields = {f.name: _encode_value(getattr(mechanism, f.name)) for f in dataclasses.fields(mechanism) if f.init}
    return {"family": family, "parameters": fields}


def _mechanism_from_spec(spec: dict) -> Any:
    classes = mechanism_classes()
    family = spec.get("family") if isinstance(spec, dict) else None
    if family not in classes:
        raise AccountingError("family", family, f"one of {sorted(classes)}")
    parameters = spec.get("parameters")
    if not isinstance(parameters, dict):
        raise AccountingError("parameters", parameters, f"the constructor fields of a {family} mechanism")
    try:
        return classes[family](**{k: _decode_value(v) for k, v in parameters.items()})
    except TypeError as error:  # a field the class does not have, or one missing
        raise AccountingError("parameters", parameters, f"the constructor fields of a {family} mechanism ({error})") from None


def participants_to_json(p: Any) -> Any:
    if p is None:
        return None
    if isinstance(p, range):
        return {"range": [p.start, p.stop]}
    return {"ids": p.tolist()}


def participants_from_json(p: Any) -> Any:
    if p is None:
        return None
    if "range" in p:
        start, stop = p["range"]
        return range(check_integer("start", start, minimum=0), check_integer("stop", stop, minimum=0))
    return np.asarray(p["ids"], dtype=np.int64)
