"""``reproduce --quick`` figures show what the figure is about, and say what they are (issue 15).

Regression tests for the fifth case of issue 15: ``dpverify reproduce iclr-fig4 --quick`` drew a
figure in which every curve coincided (at its horizon of 10^4 no arm had been eliminated, so every
successive-elimination algorithm had pulled the arms round-robin), and titled it with its slug.

Not statistical in the hypothesis-test sense: the runs use fixed seeds, so each check is a fixed
computation. The wrong variant (the old quick horizon T/100 = 10^4) is run beside the fixed one
and must show the coincidence the issue reported, so the separation check can fail.
"""

from __future__ import annotations

import dataclasses

import pytest

from dpverify._bandits import _figures, _runner
from dpverify._bandits._figures import ICLR_FIGURES, QUICK_FLOOR, _configs, quick_horizon


def test_quick_iclr_fig4_curves_separate_where_the_old_quick_horizon_did_not():
    """Panel (a) (easy, eps = 0.1), its aggregate-path curves (CDP-SE, Dist-DP-SE, Dist-RDP-SE), 2
    runs. At the old quick horizon T/100 = 10^4 (the wrong variant) no run has eliminated an arm
    and the curves' final regrets are equal; at the quick horizon (>= 10^5) every run has
    eliminated an arm and the final regrets differ by more than 10% (measured: 9,814 vs 7,951)."""
    _, panels = ICLR_FIGURES["iclr-fig4"]
    panel = next(p for p in panels if p.epsilon == 0.1)
    horizon = quick_horizon(panel, QUICK_FLOOR["iclr-fig4"])
    assert horizon >= 10**5
    quick = [c for c in _configs(panel, 2, 0, True, "auto", {}, QUICK_FLOOR["iclr-fig4"]) if c.path == "aggregate"]
    assert len(quick) >= 3 and all(c.horizon == horizon for c in quick)
    old = [dataclasses.replace(c, horizon=panel.horizon // 100) for c in quick]

    before, after = _runner.sweep(old, workers=1), _runner.sweep(quick, workers=1)
    assert all(not run for r in before for run in r.eliminations)
    assert len({r.mean_final_regret for r in before}) == 1
    assert all(run for r in after for run in r.eliminations)
    regrets = [r.mean_final_regret for r in after]
    assert (max(regrets) - min(regrets)) / max(regrets) > 0.10, regrets


@pytest.mark.slow
def test_quick_figure_title_names_paper_figure_instances_and_eps(tmp_path, monkeypatch):
    """The figure drawn by ``make`` is titled with the paper, figure, instance and eps (not the slug),
    and the quick caption says it is a quick run and gives the full-size horizon. (The runs are cut to
    T = 2,000, one seed, through the real sweep: only the title is checked here.)"""
    real_sweep, titles = _runner.sweep, []

    def small_sweep(configs, **kwargs):
        return real_sweep([dataclasses.replace(c, horizon=2000, seeds=1) for c in configs], **kwargs)

    def spy_plot(title, *args, **kwargs):
        titles.append(title)

    monkeypatch.setattr(_runner, "sweep", small_sweep)
    monkeypatch.setattr(_figures, "_plot", spy_plot)
    from dpverify import figures

    figures()["iclr-fig4"].make(tmp_path, quick=True, runs=1, workers=1)
    (title,) = titles
    assert title.startswith("ICLR 2023 Fig. 4") and "iclr-fig4" not in title
    assert "easy" in title and "eps = 0.1, 0.5, 1" in title
    assert "quick: T = 1e+05" in title and "full size: T = 1e+06" in title
