"""``--tradeoff`` of ``dpverify account epsilon`` and ``account event``: risk as people read it.

The certified trade-off curve of the accounted releases (:class:`accounting.TradeOffCurve`, read off
the certified PLD the planner's PLD route builds): at each ``--fpr``, the least type II error any
attack can have (a certified lower bound) and so the largest TPR (a certified upper bound), the
attack advantage max (TPR - FPR) (a certified upper bound: the total variation distance), and the
other side of the sandwich from the optimistic PLD (a reading aid). As a table, in the command's
JSON under ``"tradeoff"``, and with ``--plot FILE.png`` as a figure: the certified curve (ROC form,
TPR against FPR, and type II against type I), the optimistic side, and for Gaussian releases the
mu-GDP closed form. A neutral module below both commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import click

__all__ = ["check_tradeoff_options", "tradeoff_options", "tradeoff_report", "write_plot"]

#: the figure formats --plot writes (by the file's extension)
_FORMATS = (".png", ".svg", ".pdf")
#: accounting._routing._tradeoff's MAX_POINTS (checked here before the accountant is imported)
_MAX_POINTS = 4096


def tradeoff_options(function: Callable) -> Callable:
    """The options ``--tradeoff``, ``--fpr``, ``--points`` and ``--plot``."""
    options = [
        click.option("--tradeoff", is_flag=True, help="Also print the certified trade-off curve (f-DP): TPR at each --fpr, the attack advantage."),
        click.option("--fpr", "fprs", type=float, multiple=True,
                     help="FPRs (type I errors) at which --tradeoff reports the largest TPR (repeat; default 1e-4 ... 0.5)."),
        click.option("--points", type=int, default=256, show_default=True, help="Epsilons (2 to 4096) at which --tradeoff reads the PLD's delta(eps) (more: tighter, slower)."),
        click.option("--plot", "plot_path", type=str, default=None,
                     help="With --tradeoff: write the curve as a figure (PNG, SVG or PDF by the file's extension)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def check_tradeoff_options(tradeoff: bool, fprs: Sequence[float], points: int, plot_path: str | None) -> tuple[float, ...] | None:
    """Validate before the work (exit 2 naming the parameter); returns the FPRs to report (None:
    the curve's defaults)."""
    from .._presentation._output import check_output_file

    if (fprs or plot_path) and not tradeoff:
        raise click.UsageError("--fpr and --plot need --tradeoff")
    for value in fprs:
        if not (0 <= value <= 1):
            raise click.BadParameter(f"fpr={value!r} is invalid: expected a probability in [0, 1]", param_hint="--fpr")
    if not 2 <= points <= _MAX_POINTS:
        raise click.BadParameter(f"points={points!r} is invalid: expected an integer in [2, {_MAX_POINTS}]", param_hint="--points")
    if plot_path is not None:
        if "\x00" in plot_path:
            raise click.BadParameter(f"plot={plot_path!r} is invalid: expected a file path (no NUL character)", param_hint="--plot")
        if Path(plot_path).suffix.lower() not in _FORMATS:
            raise click.BadParameter(f"plot={plot_path!r} is invalid: expected a file name ending in {', '.join(_FORMATS)} (the figure's format)",
                                     param_hint="--plot")
        try:
            check_output_file("--plot", plot_path)
        except ValueError as error:  # OutputPathError: names the option, the path and what it expects
            raise click.BadParameter(str(error), param_hint="--plot") from None
    return tuple(fprs) if fprs else None


def tradeoff_report(subject: Any, compose: int, fprs: Sequence[float] | None, points: int, plot_path: str | None, title: str) -> tuple[dict, Callable[[], None]]:
    """(the JSON under "tradeoff", a function printing its table); writes the figure if asked."""
    import accounting as acc

    from .._presentation._console import busy

    with busy(f"reading the trade-off curve off the certified PLD at {points} epsilons"):
        curve = acc.tradeoff_curve(subject, compose=compose, points=points)
    payload = curve.as_dict(fprs) if fprs else curve.as_dict()
    if plot_path is not None:
        payload["plot"] = str(plot_path)
        try:
            write_plot(curve, plot_path, title)
        except OSError as error:  # the path was checked before the work; a disk that fills up since
            raise click.BadParameter(f"plot={plot_path!r} is invalid: expected a writable file ({error.strerror or error})", param_hint="--plot") from None

    def table() -> None:
        from rich.table import Table

        from .._presentation._console import print_table

        t = Table(title=f"Trade-off (f-DP) of {title}",
                  caption=("certified: no attack has a smaller type II error (a larger TPR) at that FPR; the optimistic PLD's side beside it "
                           "(the true curve lies between: PLD margin and eps grid)"))
        for column in ("FPR (type I)", "type II >= (certified)", "TPR <= (certified)", "TPR >= (optimistic side)"):
            t.add_column(column, justify="right")
        if curve.gaussian_mu is not None:
            t.add_column(f"mu-GDP TPR, mu = {curve.gaussian_mu:.4g}", justify="right")
        for p in (curve.points(fprs) if fprs else curve.points()):
            row = [f"{p.fpr:.4g}", f"{p.type_ii_lower:.6g}", f"{p.tpr_upper:.6g}", "-" if p.tpr_lower is None else f"{p.tpr_lower:.6g}"]
            if curve.gaussian_mu is not None:
                row.append(f"{1 - _gdp(curve.gaussian_mu, p.fpr):.6g}")
            t.add_row(*row)
        print_table(t)
        low = curve.advantage_lower
        click.echo(f"attack advantage max(TPR - FPR) <= {curve.advantage:.6g} (certified; the total variation distance"
                   + (f", >= {low:.6g} by the optimistic PLD)" if low is not None else ")"))
        click.echo(f"profile: {curve.source}" + (f"; figure written to {plot_path}" if plot_path else ""))

    return payload, table


def _gdp(mu: float, alpha: Any) -> Any:
    """G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu) (scipy; isf keeps small alphas accurate)."""
    from scipy.stats import norm

    return norm.cdf(norm.isf(alpha) - mu)


def write_plot(curve: Any, path: str, title: str) -> None:
    """The curve as a figure, written atomically: ROC form on linear axes and on log FPR."""
    import numpy as np

    from .._presentation._output import atomic_path
    from .._presentation._plots import pyplot

    plt = pyplot()
    if plt is None:
        raise click.UsageError("--plot needs matplotlib (pip install matplotlib)")
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4))
    linear = np.linspace(0.0, 1.0, 801)
    logs = np.logspace(-6, 0, 601)
    for ax, x, log in ((axes[0], linear, False), (axes[1], logs, True)):
        ax.plot(x, curve.tpr(x), color="#1f5fa8", linewidth=1.6, label="certified: TPR <= (from the pessimistic PLD)")
        lower = curve.tpr_lower(x)
        if lower is not None:
            ax.fill_between(x, lower, curve.tpr(x), color="#1f5fa8", alpha=0.15, linewidth=0, label="optimistic side (true curve inside)")
        if curve.gaussian_mu is not None:
            ax.plot(x, 1 - _gdp(curve.gaussian_mu, x), color="#c0392b", linewidth=1.0, linestyle="--",
                    label=f"mu-GDP closed form, mu = {curve.gaussian_mu:.4g}")
        ax.plot(x, x, color="#b8bec9", linewidth=0.8, linestyle=":", label="random guessing")
        ax.set_xlabel("FPR (type I error)")
        ax.set_ylabel("TPR (1 - type II error)")
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(1e-6, 1)
            ax.set_ylim(max(1e-6, float(np.min(curve.tpr(x[:1])))) / 2, 1.05)
            ax.set_title("log axes (small FPR)", fontsize=9)
        else:
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1.02)
            ax.set_title(f"advantage max(TPR - FPR) <= {curve.advantage:.4g}", fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower right")
    # the margin: how far the certified TPR is above the optimistic side (and above mu-GDP)
    ax = axes[2]
    upper = curve.tpr(logs)
    lower = curve.tpr_lower(logs)
    if lower is not None:
        ax.plot(logs, upper - lower, color="#1f5fa8", linewidth=1.2, label="certified TPR - optimistic TPR (the sandwich)")
    if curve.gaussian_mu is not None:
        ax.plot(logs, upper - (1 - _gdp(curve.gaussian_mu, logs)), color="#c0392b", linewidth=1.2, linestyle="--",
                label="certified TPR - mu-GDP TPR (>= 0: sound)")
    ax.axhline(0.0, color="#1d2330", linewidth=0.6)
    ax.set_xscale("log")
    ax.set_xlim(1e-6, 1)
    ax.set_xlabel("FPR (type I error)")
    ax.set_ylabel("TPR difference")
    ax.set_title("certification margin", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle(f"Certified trade-off: {title}"[:150], fontsize=9)
    fig.tight_layout()
    with atomic_path(path) as temporary:
        fig.savefig(temporary, dpi=120)
    plt.close(fig)
