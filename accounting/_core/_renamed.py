"""Former keyword names of the public API, kept as deprecated aliases.

One concept, one name (issue 30 item 6): the composition count is ``compose`` everywhere (the
``compose``-fold composition: ``epsilon_routes``, ``delta_routes``, ``calibrate``, the CLI's
``--compose``, and now ``pld_epsilon``, ``pld_delta``, ``advanced_composition`` and the
``times`` / ``self_compose`` of guarantees and PLDs, which said ``k``); the grid step of a privacy
loss distribution is ``discretisation`` everywhere. :func:`renamed_keywords` lets a caller still pass
the former name, with a ``DeprecationWarning`` that names the new one, and the same value.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["renamed_keywords"]


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    """Decorate a function whose keyword ``old`` is now ``new`` (``renamed_keywords(old="new")``):
    a call passing ``old=`` warns (``DeprecationWarning``) and is forwarded as ``new=``; passing both
    is a ``TypeError``, as for any keyword given twice. Positional calls are untouched."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def forward(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                for old, new in renames.items():
                    if old in kwargs:
                        if new in kwargs:
                            raise TypeError(f"{function.__qualname__}() got both {new}= and its former name {old}=")
                        warnings.warn(
                            f"{function.__qualname__}({old}=...) is deprecated: the keyword is now {new}=",
                            DeprecationWarning,
                            stacklevel=2,
                        )
                        kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        forward.__renamed_keywords__ = dict(renames)  # type: ignore[attr-defined]
        return forward  # type: ignore[return-value]

    return decorate
