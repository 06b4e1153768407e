"""The public API exposes no private names (issue #23, item 7).

Every callable exported by ``accounting`` and ``dpverify`` (their ``__all__``), and every public
method of the exported classes, is inspected: no parameter of a public signature may start with an
underscore (a private keyword such as the old ``audit(_predict_at=...)`` is an internal detail that
users would come to depend on). The wrong variant is checked too: the same inspection flags a
function that has such a keyword.
"""

from __future__ import annotations

import inspect

import pytest

import accounting
import dpverify


def _private_parameters(fn) -> list[str]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins and numba dispatchers without a Python signature
        return []
    return [name for name in signature.parameters if name.startswith("_")]


def _public_callables():
    for package in (accounting, dpverify):
        for name in package.__all__:
            obj = getattr(package, name)
            if inspect.isclass(obj):
                yield f"{package.__name__}.{name}", obj
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr != "__init__":
                        continue
                    member = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
                    if callable(member):
                        yield f"{package.__name__}.{name}.{attr}", member
            elif callable(obj):
                yield f"{package.__name__}.{name}", obj


def test_the_inspection_flags_a_private_keyword():
    def leaky(data, *, samples=10, _internal=None):
        return data

    assert _private_parameters(leaky) == ["_internal"]


def test_no_public_signature_has_a_private_parameter():
    offenders = {name: bad for name, fn in _public_callables() if (bad := _private_parameters(fn))}
    assert not offenders, f"private parameters in public signatures: {offenders}"


@pytest.mark.parametrize("package", [accounting, dpverify])
def test_every_exported_name_exists(package):
    missing = [name for name in package.__all__ if not hasattr(package, name)]
    assert not missing
