"""The `dpverify account` interface exactly as the acceptance checks call it."""

import json

import pytest
from click.testing import CliRunner

import accounting as acc
from dpverify.cli import main


def _json(args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize(
    "args, mechanism",
    [
        ("curve skellam --variance 100 --sensitivity 1 --alpha 2 10 100 1000 --json", acc.Skellam(variance=100, l1_sensitivity=1)),
        ("curve discrete-gaussian --sigma 2 --sensitivity 1 --alpha 2 8 32 --json", acc.DiscreteGaussian(sigma=2, sensitivity=1)),
        ("curve discrete-laplace --scale 4 --sensitivity 1 --alpha 2 8 32 --json", acc.DiscreteLaplace(scale=4, sensitivity=1)),
    ],
)
def test_curve_json_matches_the_python_api(args, mechanism):
    data = _json(["account", *args.split()])
    assert data["alphas"] == [float(a) for a in args.split("--alpha ")[1].split(" --json")[0].split()]
    assert data["rdp"] == mechanism.rdp().evaluate(data["alphas"])


@pytest.mark.parametrize(
    "args, mechanism, k",
    [
        ("epsilon skellam --variance 100 --sensitivity 1 --compose 10 --delta 1e-5 --json", acc.Skellam(variance=100, l1_sensitivity=1), 10),
        ("epsilon discrete-laplace --scale 20 --sensitivity 10 --compose 16 --delta 1e-5 --json", acc.DiscreteLaplace(scale=20, sensitivity=10), 16),
    ],
)
def test_epsilon_json_is_the_best_certified_route(args, mechanism, k):
    data = _json(["account", *args.split()])
    expected = acc.epsilon_routes(mechanism, 1e-5, compose=k)
    assert data["epsilon"] == expected.epsilon and data["route"] == expected.route
    assert data["epsilon"] == min(r["epsilon"] for r in data["routes"] if not r["route"].startswith(("closed-form", "rdp-mironov")))


def test_bad_input_exits_2_and_names_the_parameter():
    result = CliRunner().invoke(main, "account curve discrete-laplace --scale -4 --alpha 2".split())
    assert result.exit_code == 2 and "scale" in result.output
    result = CliRunner().invoke(main, "account epsilon skellam --variance 100 --delta 2".split())
    assert result.exit_code == 2 and "delta" in result.output


def test_default_job_prints_three_routes():
    result = CliRunner().invoke(main, [])
    assert result.exit_code == 0, result.output
    assert "Agarwal" in result.output and "exact RDP" in result.output and "Thm 2" in result.output
    # the tightest certified number is labelled with its route (here the PLD, not "exact")
    assert "tightest" in result.output and "PLD" in result.output
    rows = json.loads(CliRunner().invoke(main, ["account", "returning", "--json"]).output)["rows"]
    for row in rows:
        assert row["certified_route"] == "PLD, h=0.0001, connect-the-dots"
        assert row["certified"] < row["rdp_cks"] <= row["agarwal_bound"]
