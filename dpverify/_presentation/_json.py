"""JSON-ready values: the one rule every report of the toolkit (audit, tails, CLI) writes with.

JSON has no infinities or NaN, and certified bounds are often infinite (a vacuous order, an audit
lower bound when the noise is dropped): they are written as the strings "inf", "-inf" and "nan".
numpy scalars become Python numbers, tuples become lists, mapping keys become strings.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["jsonable"]


def jsonable(value: Any) -> Any:
    """``value`` with every non-finite float replaced by its string (recursively; see module docstring)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return jsonable(value.item())
    return value
