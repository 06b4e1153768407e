"""Regret figures, drawn in one place: a paper's figure (PNG) and the HTML page of a figure (SVG).

matplotlib is imported only when a figure is drawn, on the headless Agg backend, without LaTeX,
with text kept as text in SVG. A figure is a grid of panels (at most 3 columns); each panel shows
its curves' mean regret against log time with a one-standard-error band, and a legend. Imports
nothing from :mod:`dpverify`, so the bandits' figures and the HTML reports can both use it.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["pyplot", "regret_panels"]

#: a curve: (label, times, mean, standard error)
Curve = tuple[str, Sequence[float], Sequence[float], Sequence[float]]


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["text.usetex"] = False
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, and small
    return plt


def regret_panels(plt: Any, panels: Sequence[tuple[str, Sequence[Curve]]], *, ylabel: str, title: str) -> Any:
    """The figure of ``panels`` ((panel title, curves) each): returns it, for the caller to save."""
    n = len(panels)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    for idx, (panel_title, curves) in enumerate(panels):
        ax = axes[idx // cols][idx % cols]
        for label, times, mean, se in curves:
            t, m, s = (np.asarray(v, dtype=float) for v in (times, mean, se))
            line = ax.plot(t, m, label=label)[0]
            ax.fill_between(t, m - s, m + s, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_xscale("log")
        ax.set_xlabel("round t")
        ax.set_ylabel(ylabel)
        ax.set_title(panel_title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for idx in range(n, rows * cols):
        axes[idx // cols][idx % cols].set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
