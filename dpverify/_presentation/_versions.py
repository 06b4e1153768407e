"""The versions behind a result: Python, the platform and the packages that compute it.

One function for every output that records them (a run's JSON, a figure's summary, the HTML
pages). Versions are read from the installed distributions' metadata, so nothing is imported:
an audit's page does not import numba, and a run's JSON does not depend on what was imported.
Imports nothing from :mod:`dpverify`, so every layer may use it.
"""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

__all__ = ["PACKAGES", "versions"]

#: the distributions whose versions a result records
PACKAGES = ("dpverify", "numpy", "numba", "scipy", "python-flint", "mpmath", "scikit-learn")


def versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """``{"python": ..., "platform": ..., package: version}``; a package that is not installed reads
    "not installed" (dpverify run from a source tree without installing it: "source tree")."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in packages:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "source tree" if name == "dpverify" else "not installed"
    return out
