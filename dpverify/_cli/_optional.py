"""Optional dependencies, checked before any work starts.

A command that needs an optional package (Dask for ``--dask``, psycopg for a PostgreSQL ledger)
calls :func:`require` while it validates its arguments, so that a missing package is a one-line
error naming the extra to install (exit 2 on the command line), never a traceback after minutes
of computing. The extras are those of ``pyproject.toml``.
"""

from __future__ import annotations

import importlib
from typing import Any

from accounting import AccountingError

__all__ = ["EXTRAS", "dask_client", "require"]

#: module -> (the extra that installs it, what it is for)
EXTRAS = {
    "dask.distributed": ("dask", "--dask: running on a Dask cluster"),
    "psycopg": ("postgres", "a postgresql:// ledger"),
    "sklearn": ("learn", "the learned (classifier) views of the auditor"),
    "dp_accounting": ("bench", "dp_accounting's accountants and events"),
}


def require(module: str) -> Any:
    """Import ``module`` (a key of :data:`EXTRAS`), or raise an error naming the extra to install."""
    extra, purpose = EXTRAS[module]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise AccountingError("dependency", module, f"an installed package for {purpose}: pip install 'dpverify[{extra}]'") from None


def dask_client(address: str, timeout: float = 30.0) -> Any:
    """A ``dask.distributed.Client`` connected to the scheduler at ``address`` within ``timeout`` s.

    A missing Dask or a scheduler that cannot be reached is an ``AccountingError`` naming the
    address (the command exits 2 before any work), not a traceback.
    """
    if not isinstance(address, str) or not address:
        raise AccountingError("dask address", address, "a scheduler address such as tcp://host:8786")
    distributed = require("dask.distributed")
    try:
        return distributed.Client(address, timeout=timeout)
    except (OSError, TimeoutError) as error:
        raise AccountingError("dask address", address, f"a Dask scheduler reachable within {timeout:g} s ({type(error).__name__}: {error})") from None
