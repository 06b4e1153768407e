"""The papers' figures: specifications, the sweep behind each, CSV and PNG output.

Each figure is a list of panels; a panel is an instance, a privacy level, a horizon and a list of
curves (algorithm + options). ``make`` runs every curve over ``runs`` seeds (the ICLR paper's "20
random instances": each seed draws its own instance, the same one for every algorithm), writes
``<name>.csv`` (the numbers behind the plot: mean and standard error at log-spaced times),
``<name>.json`` (final regrets, ledgers, options) and ``<name>.png``. ``quick`` shrinks horizons
100-fold and runs to 4 seeds (CI and README size).

Plots (:mod:`dpverify._presentation._plots`, shared with the HTML pages): headless Agg backend, matplotlib imported
when drawing, no LaTeX; log-scale time, labelled axes, a legend, mean with standard-error bands.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .._presentation._output import atomic_path, atomic_write, check_output_dir
from .._presentation._plots import pyplot, regret_panels
from ._catalog import load as _load_families
from ._registry import FigureSpec, lookup, register_figure, registered
from ._runner import RunConfig, sweep

__all__ = ["Curve", "Panel", "figures", "get_figure", "make_figure"]


@dataclass(frozen=True)
class Curve:
    algorithm: str
    label: str
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Panel:
    key: str
    title: str
    instance: str
    epsilon: float
    horizon: int
    curves: tuple[Curve, ...]
    curve_eps: tuple[float, ...] | None = None  # per-curve eps (for "vary eps" panels)


def quick_horizon(panel: Panel, floor: int = 1000) -> int:
    """The horizon of a panel under ``--quick``: T/100, but at least ``floor`` (the figure's own:
    the smallest horizon at which its claim is visible, see ``QUICK_FLOOR``)."""
    return min(panel.horizon, max(panel.horizon // 100, floor))


def _configs(panel: Panel, runs: int, seed: int, quick: bool, path: str, base_options: dict, floor: int = 1000) -> list:
    horizon = quick_horizon(panel, floor) if quick else panel.horizon
    out = []
    for i, c in enumerate(panel.curves):
        eps = panel.curve_eps[i] if panel.curve_eps else panel.epsilon
        chosen = path
        if path == "auto":
            # DP-SE's float-safe privatizer has an aggregate path too (the same law), but its histogram of
            # roundings has g + 1 = 65537 cells: per user is faster (measured: 0.24 s against 0.05 s at T = 10^6)
            chosen = "aggregate" if c.algorithm in ("dist-dp-se", "dist-rdp-se", "cdp-se") else "per-user"
        opts = {**base_options, **c.options}
        if opts.get("radius") == "authors" and c.algorithm not in ("dist-dp-se", "dist-rdp-se"):
            opts.pop("radius")  # the released code has constants for these two only; the others keep Lemma 2
        out.append(RunConfig(algorithm=c.algorithm, instance=panel.instance, horizon=horizon, epsilon=eps, seeds=runs, seed=seed, path=chosen, **opts))
    return out


def make_figure(
    name: str,
    panels: Sequence[Panel],
    outdir: Path,
    *,
    runs: int,
    quick: bool = False,
    executor: Any = None,
    workers: int | None = None,
    progress: bool | None = None,
    seed: int = 0,
    path: str = "auto",
    ylabel: str = "time-average regret Reg(t)/t",
    per_time: bool = True,
    base_options: dict | None = None,
    title: str | None = None,
    quick_floor: int = 1000,
) -> list[Path]:
    outdir = Path(outdir)
    check_output_dir("outdir", outdir)  # before the sweep: a bad directory must not cost the runs
    outdir.mkdir(parents=True, exist_ok=True)
    full_runs = runs
    runs = min(runs, 4) if quick else runs
    configs, owners = [], []
    for panel in panels:
        for i, cfg in enumerate(_configs(panel, runs, seed, quick, path, base_options or {}, quick_floor)):
            configs.append(cfg)
            owners.append((panel, panel.curves[i]))
    results = sweep(configs, executor=executor, workers=workers, progress=progress)
    csv_path = outdir / f"{name}.csv"
    with atomic_path(csv_path) as temporary, temporary.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["figure", "panel", "curve", "algorithm", "instance", "epsilon", "path", "runs", "t", "mean_regret", "se_regret", "mean_regret_over_t",
                    "se_regret_over_t", "noise"])
        for (panel, curve), res in zip(owners, results):
            noise = res.ledger.get("noise") or "-"  # what ran: float-safe, idealised, or - (non-private)
            for t, m, s in zip(res.times, res.mean_regret, res.se_regret):
                w.writerow([name, panel.key, curve.label, res.algorithm, res.instance, res.epsilon, res.options["path"], res.seeds, t, m, s, m / t,
                            s / t, noise])
    idealised = sorted({res.algorithm for res in results if res.ledger.get("noise") == "idealised"})
    summary = {
        "figure": name,
        "quick": quick,
        # the figure's definition, so that every rendering of it (the PNG here, the HTML page of
        # `reproduce --html`) draws the same quantity under the same panel titles (issue 34 item 10)
        "plot": {"per_time": per_time, "ylabel": ylabel},
        "panels": [{"key": panel.key, "title": panel.title} for panel in panels],
        "noise": (base_options or {}).get("noise", "float-safe"),
        "radius": (base_options or {}).get("radius", "lemma2"),
        "curves": [
            {
                "panel": panel.key,
                "curve": curve.label,
                "algorithm": res.algorithm,
                "instance": res.instance,
                "epsilon": res.epsilon,
                "horizon": res.horizon,
                "runs": res.seeds,
                "mean_final_regret": res.mean_final_regret,
                "final_regret_ci95": res.final_regret_ci95,
                "final_regret_over_T": res.mean_final_regret / res.horizon,
                "options": res.options,
                "ledger_per_user": res.ledger.get("per_user"),
                "path": res.ledger.get("path"),
                "noise": res.ledger.get("noise"),
                "implementation": res.ledger.get("implementation"),
                **({"warning": res.ledger["warning"]} if res.ledger.get("warning") else {}),
            }
            for (panel, curve), res in zip(owners, results)
        ],
    }
    json_path = outdir / f"{name}.json"
    atomic_write(json_path, json.dumps(summary, indent=1, default=float))
    png_path = outdir / f"{name}.png"
    title = title or name
    if quick:
        horizons = sorted({quick_horizon(p, quick_floor) for p in panels})
        paper = sorted({p.horizon for p in panels})
        title += (f"\nquick: T = {', '.join(f'{h:.0e}' for h in horizons)} and {runs} runs per curve (full size: T = "
                  f"{', '.join(f'{h:.0e}' for h in paper)}, {full_runs} runs), the smallest power of 10 at which the curves already separate")
    if (base_options or {}).get("radius") == "authors":
        title += " (Dist-DP/RDP-SE with the authors' released elimination radius)"
    if idealised:
        title += f"\n{', '.join(idealised)}: idealised: not DP in floating point (--noise idealised)"
    _plot(title, panels, owners, results, png_path, ylabel, per_time)
    return [png_path, csv_path, json_path]


def _plot(name, panels, owners, results, png_path, ylabel, per_time) -> None:
    plt = pyplot()
    if plt is None:
        raise ImportError("figures need matplotlib: pip install 'dpverify[plot]'")
    drawn = []
    for panel in panels:
        curves = []
        for (p, curve), res in zip(owners, results):
            if p is panel:
                t = np.asarray(res.times, dtype=float)
                m, s = np.asarray(res.mean_regret), np.asarray(res.se_regret)
                idealised = " (idealised: not DP in floating point)" if res.ledger.get("noise") == "idealised" else ""
                curves.append((curve.label + idealised, t, m / t if per_time else m, s / t if per_time else s))
        drawn.append((f"({panel.key}) {panel.title}", curves))
    fig = regret_panels(plt, drawn, ylabel=ylabel, title=name)
    with atomic_path(png_path) as temporary:
        fig.savefig(temporary, dpi=120)
    plt.close(fig)


# ---- the papers' figures --------------------------------------------------------------------------

_FIG1_CURVES = (
    Curve("dp-se", "DP-SE"),
    Curve("dist-dp-se", "Dist-DP-SE"),
    Curve("dist-rdp-se", "Dist-RDP-SE (s=10)", {"s": 10.0}),
    Curve("dist-rdp-se", "Dist-RDP-SE (s=100)", {"s": 100.0}),
)
_FIG4_CURVES = (
    Curve("cdp-se", "CDP-SE"),
    Curve("ldp-se", "LDP-SE"),
    Curve("dist-dp-se", "Dist-DP-SE"),
    Curve("dist-rdp-se", "Dist-RDP-SE (s=10)", {"s": 10.0}),
    Curve("dist-cdp-se", "Dist-CDP-SE (s=10)", {"s": 10.0}),
)

ICLR_FIGURES: dict[str, tuple[str, tuple[Panel, ...]]] = {
    "iclr-fig1": (
        "ICLR 2023 Fig. 1: Dist-DP-SE, Dist-RDP-SE, DP-SE; easy (a, b), hard (c), MSLR (d-f)",
        (
            Panel("a", "easy, eps=0.1, K=10", "easy", 0.1, 10**6, _FIG1_CURVES),
            Panel("b", "easy, eps=0.5, K=10", "easy", 0.5, 10**6, _FIG1_CURVES),
            Panel("c", "hard, eps=0.1, K=10", "hard", 0.1, 10**7, _FIG1_CURVES),
            Panel("d", "MSLR, eps=1, K=50", "mslr", 1.0, 10**6, _FIG1_CURVES),
            Panel("e", "MSLR, eps=5, K=50", "mslr", 5.0, 10**6, _FIG1_CURVES),
            Panel("f", "MSLR, eps=10, K=50", "mslr", 10.0, 10**6, _FIG1_CURVES),
        ),
    ),
    "iclr-fig1abc": (
        "ICLR 2023 Fig. 1 (a)-(c) only (the speed target)",
        (
            Panel("a", "easy, eps=0.1, K=10", "easy", 0.1, 10**6, _FIG1_CURVES),
            Panel("b", "easy, eps=0.5, K=10", "easy", 0.5, 10**6, _FIG1_CURVES),
            Panel("c", "hard, eps=0.1, K=10", "hard", 0.1, 10**7, _FIG1_CURVES),
        ),
    ),
    "iclr-fig2": (
        "ICLR 2023 Fig. 2: easy instance, eps = 0.1, 0.5, 1",
        tuple(Panel(k, f"easy, eps={e:g}", "easy", e, 10**6, _FIG1_CURVES) for k, e in zip("abc", (0.1, 0.5, 1.0))),
    ),
    "iclr-fig3": (
        "ICLR 2023 Fig. 3: hard instance, eps = 0.1, 0.5, 1",
        tuple(Panel(k, f"hard, eps={e:g}", "hard", e, 10**7, _FIG1_CURVES) for k, e in zip("abc", (0.1, 0.5, 1.0))),
    ),
    "iclr-fig4": (
        "ICLR 2023 Fig. 4: CDP-SE, LDP-SE, Dist-DP-SE, Dist-RDP-SE, Dist-CDP-SE; easy, eps = 0.1, 0.5, 1",
        tuple(Panel(k, f"easy, eps={e:g}", "easy", e, 10**6, _FIG4_CURVES) for k, e in zip("abc", (0.1, 0.5, 1.0))),
    ),
    "iclr-fig5": (
        "ICLR 2023 Fig. 5: MSLR-WEB10K K=50, eps = 1, 5, 10",
        tuple(Panel(k, f"MSLR, eps={e:g}", "mslr", e, 10**6, _FIG1_CURVES) for k, e in zip("abc", (1.0, 5.0, 10.0))),
    ),
}

REN_HORIZON = 10**6  # not stated in Ren et al.; recorded in every result
_REN_TRIO = (Curve("ucb1", "UCB1"), Curve("ldp-ucb-l", "LDP-UCB-L"), Curve("ldp-ucb-b", "LDP-UCB-B"))
_REN_EPS = (0.2, 0.5, 1.0, 2.0)
REN_FIGURE = (
    "Ren et al. Fig. 1: UCB1, LDP-UCB-L, LDP-UCB-B on the 20-arm Bernoulli (a-d) and mixed (e, f) instances",
    (
        Panel("a", "Bernoulli, eps=2", "ren-bernoulli", 2.0, REN_HORIZON, _REN_TRIO),
        Panel("b", "Bernoulli, eps=0.2", "ren-bernoulli", 0.2, REN_HORIZON, _REN_TRIO),
        Panel("c", "LDP-UCB-L, Bernoulli, varying eps", "ren-bernoulli", 1.0, REN_HORIZON,
              tuple(Curve("ldp-ucb-l", f"LDP-UCB-L eps={e:g}") for e in _REN_EPS), _REN_EPS),
        Panel("d", "LDP-UCB-B, Bernoulli, varying eps", "ren-bernoulli", 1.0, REN_HORIZON,
              tuple(Curve("ldp-ucb-b", f"LDP-UCB-B eps={e:g}") for e in _REN_EPS), _REN_EPS),
        Panel("e", "mixed, eps=2", "ren-mixed", 2.0, REN_HORIZON, _REN_TRIO),
        Panel("f", "mixed, eps=0.2", "ren-mixed", 0.2, REN_HORIZON, _REN_TRIO),
    ),
)


#: --quick's smallest horizon per figure: at T/100 = 1e4 on the easy instance no arm is eliminated
#: yet and every curve coincides (issue 15); at 1e5 the first eliminations have happened and the
#: curves separate (checked by looking at the quick PNGs; tests/test_quick_figures.py checks the CSV).
QUICK_FLOOR = {"iclr-fig1": 10**5, "iclr-fig1abc": 10**5, "iclr-fig2": 10**5, "iclr-fig3": 10**5, "iclr-fig4": 10**5, "iclr-fig5": 10**5}


def _iclr_maker(name: str, panels: tuple[Panel, ...]):
    def make(outdir, quick=False, executor=None, workers=None, progress=None, seed=0, path="auto", runs=20, **options):
        return make_figure(name, panels, outdir, runs=runs, quick=quick, executor=executor, workers=workers, progress=progress, seed=seed, path=path,
                           base_options=options, title=ICLR_FIGURES[name][0], quick_floor=QUICK_FLOOR.get(name, 1000))

    return make


def _ren_make(outdir, quick=False, executor=None, workers=None, progress=None, seed=0, path="auto", runs=50, **options):
    return make_figure(
        "ren-fig1", REN_FIGURE[1], outdir, runs=runs, quick=quick, executor=executor, workers=workers, progress=progress, seed=seed,
        path="per-user", ylabel="cumulative regret", per_time=False, base_options=options, title=REN_FIGURE[0],
    )


for _name, (_desc, _panels) in ICLR_FIGURES.items():
    register_figure(FigureSpec(_name, _desc, _iclr_maker(_name, _panels), "Chowdhury & Zhou, ICLR 2023"))
register_figure(FigureSpec("ren-fig1", REN_FIGURE[0], _ren_make, "Ren, Zhou, Liu & Shroff 2020"))


def figures() -> dict[str, FigureSpec]:
    """Every registered figure: the multi-armed ones above, and those the families register."""
    _load_families()
    return registered()[2]


def get_figure(name: str) -> FigureSpec:
    return lookup(figures(), "figure", name)
