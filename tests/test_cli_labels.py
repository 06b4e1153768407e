"""Labels that agree with fields, and a ``--eps`` that says what it means (issue 34, items 5 and 7)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dpverify.cli import main


@pytest.mark.parametrize("compose", [1])
def test_shuffle_certified_field_follows_the_truth(compose):
    """Item 5: the shuffled-count route of binary randomized response at n = 10^4 scans only part
    of the configurations; its detail said "NOT certified" while its JSON field said
    ``"certified": true`` (the CLI marked everything but closed forms certified). The accountant
    now marks every comparison in the row's ``direction``; the field follows it, and the text
    follows the field."""
    argv = ["account", "shuffle", "--eps0", "1", "--n", "10000", "--delta", "1e-6", "--randomizer", "rr", "--compose", str(compose)]
    data = json.loads(CliRunner().invoke(main, [*argv, "--json"]).output)
    rows = data["routes"]
    assert any("NOT certified" in r["detail"] for r in rows)  # the case under test occurs
    for r in rows:
        assert r["certified"] == (r["direction"] == "upper bound"), r
        if "NOT certified" in r["detail"] or r["route"].startswith(("closed-form", "advanced:closed-form")):
            assert r["certified"] is False, r
    answer = next(r for r in rows if r["route"] == data["route"])
    assert answer["certified"] and data["epsilon"] == min(r["epsilon"] for r in rows if r["certified"])
    table = CliRunner().invoke(main, argv).output
    for r in rows:
        if not r["certified"]:
            line = next(line for line in table.splitlines() if f" {r['route']} " in line)
            assert "comparison" in line, line


def test_shuffle_comparisons_after_composition_say_so_in_their_field():
    """Item 5, k rounds (through the API, without the PLD routes to stay cheap): a value built on
    a comparison (the exact-count route whose scan was partial, a closed form) composed by
    advanced composition is a comparison too, and its field says so."""
    import accounting as acc

    report = acc.shuffle_routes(acc.ShuffledRandomizedResponse(1.0, 10_000), 1e-6, compose=10, include_pld=False)
    marked = {r.route: r.direction for r in report.alternatives}
    assert marked["advanced:exact-count"] != "upper bound" and marked["advanced:closed-form:fmt21-thm3.1"] != "upper bound"
    assert marked["advanced:fmt21-clone"] == "upper bound" and marked["pure"] == "upper bound"
    assert report.route in {r for r, d in marked.items() if d == "upper bound"}


def _eps_option():
    from dpverify._cli._cmd_bandits import run_command

    return next(p for p in run_command.params if p.name == "epsilon")


def test_run_help_says_what_eps_means_for_each_algorithm():
    """Item 7: ``run --help`` said "Privacy level eps (per user)" for every algorithm, while
    Dist-RDP-SE at --eps 1 records a per-user (5.22, 1e-6). Now every private algorithm is named
    with its meaning of eps, and the RDP/zCDP ones say they are not an (eps, delta) guarantee."""
    from dpverify._bandits import algorithms

    text = _eps_option().help
    for name, spec in algorithms().items():
        if spec.private:
            assert name in text, name
    rdp = text.split("dist-rdp-se:")[1].split(";")[0]
    assert "RDP" in rdp and "NOT an (eps, delta)" in text.split("dist-rdp-se:")[1]
    assert "zCDP" in text.split("dist-cdp-se:")[1].split(";")[0]
    assert "budget of each user over all her batches" in text


def test_run_result_records_what_eps_meant():
    """Item 7: the result says what --eps meant, and the help's statement about Dist-RDP-SE
    (an (eps, delta) larger than eps, about 5.2 at eps 1 and delta 1e-6) is what the run records."""
    result = CliRunner().invoke(main, ["run", "-a", "dist-rdp-se", "-i", "easy", "--eps", "1", "-T", "20000", "--seeds", "1", "--json", "-"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output.splitlines()[-1])
    assert "RDP parameter" in data["epsilon_meaning"]
    recorded = data["ledger"]["per_user"]["approx"]["epsilon"]
    assert recorded > 1 and round(recorded, 1) == 5.2
    text = CliRunner().invoke(main, ["run", "-a", "dist-dp-se", "-i", "easy", "--eps", "1", "-T", "20000", "--seeds", "1"]).output
    assert "--eps 1.0: pure eps-DP per user and batch" in text


def test_returning_run_says_it_spends_half_and_why():
    """Item 7: a returning-users run calibrated for B = 4 batches whose horizon gives a user at
    most 2 spends half its eps; the run now says so and why (README's example is this case at
    T = 10^6, N = 600,000)."""
    argv = ["run", "-a", "dist-dp-se", "-i", "easy", "--eps", "0.5", "-T", "100000", "--seeds", "1", "--population", "70000",
            "--max-returns", "4", "--path", "aggregate"]
    text = CliRunner().invoke(main, argv).output
    line = next(line for line in text.splitlines() if line.strip().startswith("spent eps"))
    assert "(50%)" in line and "calibrated for 4 batches" in line and "at most 2" in line
    assert "budget of each user over all her batches" in text


def test_reproduce_html_draws_the_figure_the_png_draws(tmp_path):
    """Item 10: ``reproduce --html`` drew Reg(t)/t for every figure, while the PNG of Ren et al.'s
    figure draws cumulative regret; and an eps-sweep panel was titled with its first curve's eps.
    The figure's summary now carries its definition (quantity, axis label, panel titles) and the
    page draws from it: the same axis label and numbers as the PNG, the panel's own title."""
    import csv
    import re

    from dpverify._bandits._figures import Curve, Panel, make_figure
    from dpverify._cli._html_report import reproduce_report

    sweep = Panel("c", "LDP-UCB-L, varying eps", "ren-bernoulli", 1.0, 2000,
                  (Curve("ldp-ucb-l", "eps=0.5"), Curve("ldp-ucb-l", "eps=2")), (0.5, 2.0))
    paths = make_figure("sweep", (sweep,), tmp_path, runs=1, workers=1, ylabel="cumulative regret", per_time=False, progress=False)
    csv_path = next(p for p in paths if p.suffix == ".csv")
    summary = json.loads(next(p for p in paths if p.suffix == ".json").read_text())
    page = reproduce_report(summary, csv_path)
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "cumulative regret" in svg and "Reg(t)/t" not in svg
    assert "LDP-UCB-L, varying eps" in svg and "eps=0.5, T=" not in svg
    # the plotted quantity: the largest y tick is of the size of the cumulative regret, not of Reg(t)/t (< 1)
    with csv_path.open() as handle:
        final = max(float(row["mean_regret"]) for row in csv.DictReader(handle))
    ticks = [float(t) for t in re.findall(r">(\d+(?:\.\d+)?)</text>", svg)]
    assert final > 10 and max(ticks) > 1
