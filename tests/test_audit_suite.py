"""The declarative audit suite and its CI gate (``dpverify audit PATH``).

The first test runs the real suite (``audits/``) through the CLI at the CI budget (the files'
own budgets, 2 worker processes): every ordinary claim must hold and every planted bug must be
caught, with its lower bound (a number, or "inf") above the claim; the idealised claims report
"violated in floating point" and hold in real arithmetic. Its false-alarm rate is the suite's:
at most alpha = 1e-3 family-wise (Holm over chains: floating point, then real arithmetic), with a
fixed seed, never retried. The other tests use tiny suites written to a temporary directory: a
planted bug replaced by a correct mechanism is "missed" (exit 1), a violated ordinary claim exits
1, a malformed file exits 2.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from accounting import DiscreteLaplace
from dpverify._audit import NeighbourPair, audit
from dpverify._audit._rescore import rescore, result_p_value, result_share
from dpverify._audit._suite import (
    TARGETS,
    SuiteError,
    chain_holm,
    holm,
    load_suite,
    p_value_grid,
)
from dpverify._cli._cmd_audit import audit_command

SUITE = Path(__file__).resolve().parents[1] / "audits"


def _invoke(*args: str):
    return CliRunner().invoke(audit_command, list(args), catch_exceptions=False)


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---- the real suite -------------------------------------------------------------------------------


@pytest.mark.slow
def test_real_suite_passes_at_ci_budget(tmp_path: Path) -> None:
    report = tmp_path / "audit.json"
    junit = tmp_path / "audit.xml"
    result = _invoke(str(SUITE), "--json", str(report), "--junit", str(junit), "--workers", "2", "--seed", "0")
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    rows = data["results"]
    specs = load_suite(SUITE)
    assert len(rows) == len(specs) >= 40
    planted = [r for r in rows if r["planted"]]
    must_catch = [r for r in planted if r["expect"].startswith("violated")]
    assert len(must_catch) >= 10
    for row in rows:
        assert {"name", "claimed", "lower_bound", "verdict", "arithmetic", "finding", "real_arithmetic_verdict"} <= set(row)
        assert row["verdict"] in ("holds", "violated", "caught", "missed")
        # #20: no claim about real arithmetic only, except the idealised ones
        assert row["float_bits"] or "idealised" in Path(row["file"]).name, row
    # the idealised claims: violated in floating point, holding in real arithmetic at the same draws
    idealised = [r for r in rows if "idealised" in Path(r["file"]).name]
    assert len(idealised) >= 5
    for row in idealised:
        assert row["verdict"] == "caught" and row["arithmetic"] == "floating point", row
        assert row["finding"] == "violated in floating point; holds in real arithmetic at these draws", row
        assert row["real_arithmetic_verdict"] == "holds" and row["real_lower_bound"] <= row["claimed"], row
    by_name = {r["name"]: r for r in rows}
    assert by_name["planted/float_laplace_bits"]["arithmetic"] == "floating point"  # the float artefact label
    assert by_name["planted/ctl_scale_eps"]["arithmetic"] == "both"  # a wrong scale: a bug in real arithmetic
    for row in must_catch:
        assert row["verdict"] == "caught", row
        lower = row["lower_bound"]
        assert lower == "inf" or (isinstance(lower, float) and math.isfinite(lower) and lower > row["claimed"]), row
    for row in rows:
        if row["expect"] == "holds":
            assert row["verdict"] == "holds" and row["arithmetic"] == "none", row
            assert isinstance(row["lower_bound"], float) and row["lower_bound"] <= row["claimed"]
    # the must-not-flag utility bug is part of the planted set and holds
    assert any(r["planted"] and r["expect"] == "holds" and "underflow" in r["name"] for r in rows)
    # infinite epsilon is reported as infinite, not as a large number
    assert any(r["lower_bound"] == "inf" for r in must_catch)
    # the table names every claim; the JUnit report has one test case per claim and no failures
    for row in rows:
        assert row["name"] in result.output
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and suite.get("errors") == "0"
    assert len(suite.findall("testcase")) == len(rows)


def test_every_target_is_used_by_the_suite() -> None:
    from dpverify._audit._runs import RUN_ALGORITHMS

    used = {spec.target for spec in load_suite(SUITE) if spec.mode == "repeated"}  # one-run claims name algorithms (issue 33)
    builtin = {t for t in used if not t.startswith("run:")}
    assert set(TARGETS) == builtin, set(TARGETS) ^ builtin
    # run targets: every planted run variant has its file
    planted_runs = {t.removeprefix("run:") for t in used if t.startswith("run:bug.")}
    assert planted_runs == {name for name in RUN_ALGORITHMS if name.startswith("bug.")}


def test_planted_files_state_their_verdict() -> None:
    for spec in load_suite(SUITE):
        assert spec.planted == (Path(spec.file).parent.name == "planted")
        if spec.target.removeprefix("run:").startswith("bug."):
            assert spec.planted and spec.expect.startswith("violated"), spec.file


# ---- small suites: exit codes ----------------------------------------------------------------------

CORRECT = """
target = "discrete-laplace"
[parameters]
scale = 4
[audit]
samples = 200_000
"""


def test_planted_bug_replaced_by_correct_mechanism_is_missed(tmp_path: Path) -> None:
    # the real planted file, its buggy sampler replaced by the correct one: the "bug" must escape
    planted = (SUITE / "planted" / "discrete_laplace_scale_off_by_one.toml").read_text()
    assert 'target = "bug.discrete-laplace-scale"' in planted
    _write(tmp_path, "planted/discrete_laplace_scale_off_by_one.toml",
           planted.replace('target = "bug.discrete-laplace-scale"', 'target = "discrete-laplace"'))
    _write(tmp_path, "discrete_laplace_scale4.toml", (SUITE / "discrete_laplace_scale4.toml").read_text())
    report = tmp_path / "out.json"
    result = _invoke(str(tmp_path), "--json", str(report), "--executor", "serial")
    assert result.exit_code == 1, result.output
    rows = {r["name"]: r for r in json.loads(report.read_text())["results"]}
    missed = rows["planted/discrete_laplace_scale_off_by_one"]
    assert missed["verdict"] == "missed" and missed["lower_bound"] <= missed["claimed"]
    assert rows["discrete_laplace_scale4"]["verdict"] == "holds"
    assert "missed" in result.output


def test_planted_bug_is_caught_exit_0(tmp_path: Path) -> None:
    _write(tmp_path, "planted/off_by_one.toml", CORRECT.replace('"discrete-laplace"', '"bug.discrete-laplace-scale"')
           .replace("200_000", "1_000_000").replace("target", 'expect = "violated"\ntarget', 1))
    report = tmp_path / "out.json"
    result = _invoke(str(tmp_path), "--json", str(report), "--executor", "serial")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(report.read_text())["results"]
    assert row["verdict"] == "caught" and row["lower_bound"] > row["claimed"] == 0.25


def test_violated_claim_exits_1_and_junit_reports_it(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.toml", CORRECT.replace('"discrete-laplace"', '"bug.discrete-laplace-scale"').replace("200_000", "1_000_000"))
    report, junit = tmp_path / "out.json", tmp_path / "out.xml"
    result = _invoke(str(path), "--json", str(report), "--junit", str(junit), "--executor", "serial")
    assert result.exit_code == 1, result.output
    (row,) = json.loads(report.read_text())["results"]
    assert row["verdict"] == "violated"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"


def test_json_to_stdout(tmp_path: Path) -> None:
    path = _write(tmp_path, "dlap.toml", CORRECT.replace("200_000", "2_000"))
    result = CliRunner().invoke(audit_command, [str(path), "--json", "-", "--executor", "serial"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["results"][0]["verdict"] == "holds" and data["correction"] == "holm"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("target = 'discrete-laplace'\n[parameters\nscale = 1\n", "malformed TOML"),
        ("target = 'discrete-laplace'\n[parameters]\nscal = 1\n[audit]\nsamples = 2000\n", "parameters.scal"),
        ("target = 'discrete-laplace'\n[parameters]\nscale = -1\n[audit]\nsamples = 2000\n", "parameters.scale"),
        ("target = 'no-such-target'\n[audit]\nsamples = 2000\n", "target"),
        ("target = 'discrete-laplace'\n[parameters]\nscale = 1\n", "audit.samples"),
        ("target = 'discrete-laplace'\n[parameters]\nscale = 1\n[claim]\nform = 'zcdp'\n[audit]\nsamples = 2000\n", "claim.form"),
        ("target = 'skellam'\n[parameters]\nvariance = 4\n[audit]\nsamples = 2000\nestimators = ['epsilon']\n", "audit.estimators"),
        ("target = 'dist-dp'\n[parameters]\nepsilon = 1.0\nn = 4\n[neighbours]\nvalues = [0.0, 2.0]\n[audit]\nsamples = 2000\n", "neighbours.values"),
        ("target = 'discrete-laplace'\nexpect = 'violated'\n[parameters]\nscale = 1\n[audit]\nsamples = 2000\n", "expect"),
        ("target = 'discrete-laplace'\nexpect = 'violated-in-both'\n[parameters]\nscale = 1\n[audit]\nsamples = 2000\n", "expect"),
        ("target = 'discrete-laplace'\nexpect = 'wrong'\n[parameters]\nscale = 1\n[audit]\nsamples = 2000\n", "expect"),
        # #20: a real-arithmetic claim, or an expected floating-point violation, only in a file named idealised
        ("target = 'laplace'\n[parameters]\nscale = 1.0\n[audit]\nsamples = 2000\nfloat_bits = false\n", "audit.float_bits"),
        ("target = 'laplace'\nexpect = 'violated-in-floating-point'\n[parameters]\nscale = 1.0\n[audit]\nsamples = 2000\n",
         "expect"),
    ],
)
def test_malformed_suite_exits_2_naming_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    _write(tmp_path, "good.toml", CORRECT)
    bad = _write(tmp_path, "broken.toml", text)
    result = _invoke(str(tmp_path), "--executor", "serial")
    assert result.exit_code == 2
    assert str(bad) in result.output and key in result.output


def test_idealised_file_must_expect_the_floating_point_violation(tmp_path: Path) -> None:
    bad = _write(tmp_path, "laplace_idealised.toml", 'target = "laplace"\nexpect = "holds"\n[parameters]\nscale = 1.0\n'
                 "[audit]\nsamples = 2000\nfloat_bits = false\n")
    result = _invoke(str(tmp_path), "--executor", "serial")
    assert result.exit_code == 2 and str(bad) in result.output and "violated-in-floating-point" in result.output
    # without expect, float_bits = false in an idealised file means it; the table's spelling reads the same
    for expect in ("", 'expect = "violated in floating point"\n'):
        bad.write_text(f'target = "laplace"\n{expect}[parameters]\nscale = 1.0\n[audit]\nsamples = 2000\nfloat_bits = false\n')
        (spec,) = load_suite(tmp_path)
        assert spec.expect == "violated-in-floating-point" and not spec.float_bits


IDEALISED = """
target = "laplace"
[parameters]
scale = 1.0
[audit]
samples = 20_000
float_bits = false
"""


def test_which_arithmetic_in_the_gate(tmp_path: Path) -> None:
    """#20 item 4 in the gate, 20,000 draws per input, seed 0, family-wise alpha 1e-3 over 4 claims.

    numpy's float Laplace(1) is 1-DP in real arithmetic only: as an idealised claim it is
    "caught" in floating point (power: its lowest set bit takes values impossible under the
    neighbour in about half the draws) and holds in real arithmetic (a false "violated in both"
    has probability <= 1e-3); the same mechanism as an ordinary claim is violated, in floating
    point only, and fails the gate (exit 1: the floating-point verdict governs). CTL with scale
    eps = 0.5 instead of 2 (true eps 2 > 0.5) is violated in both; as a planted file expecting
    the floating-point artefact it is "violated" (not the artefact expected), and expecting
    "violated-in-both" it is caught."""
    _write(tmp_path, "laplace_idealised.toml", IDEALISED)
    _write(tmp_path, "laplace_as_executed.toml", IDEALISED.replace("float_bits = false\n", ""))
    _write(tmp_path, "planted/ctl_scale_idealised.toml",
           'target = "bug.ctl-scale"\nexpect = "violated-in-floating-point"\n[parameters]\nepsilon = 0.5\n'
           "[audit]\nsamples = 20_000\nfloat_bits = false\n")
    _write(tmp_path, "planted/ctl_scale.toml",
           'target = "bug.ctl-scale"\nexpect = "violated-in-both"\n[parameters]\nepsilon = 0.5\n[audit]\nsamples = 20_000\n')
    report, junit = tmp_path / "out.json", tmp_path / "out.xml"
    result = _invoke(str(tmp_path), "--json", str(report), "--junit", str(junit), "--executor", "serial")
    assert result.exit_code == 1, result.output
    rows = {r["name"]: r for r in json.loads(report.read_text())["results"]}
    ideal = rows["laplace_idealised"]
    assert (ideal["verdict"], ideal["arithmetic"], ideal["real_arithmetic_verdict"]) == ("caught", "floating point", "holds")
    assert ideal["lower_bound"] > 1.0 >= ideal["real_lower_bound"] and not ideal["float_bits"]
    assert ideal["finding"] == "violated in floating point; holds in real arithmetic at these draws"
    executed = rows["laplace_as_executed"]
    assert (executed["verdict"], executed["arithmetic"]) == ("violated", "floating point")
    assert executed["lower_bound"] > 1.0 >= executed["real_lower_bound"]
    both = rows["planted/ctl_scale"]
    assert (both["verdict"], both["arithmetic"]) == ("caught", "both") and both["real_lower_bound"] > 0.5
    assert rows["planted/ctl_scale_idealised"]["verdict"] == "violated"
    assert rows["planted/ctl_scale_idealised"]["finding"] == "violated in both floating point and real arithmetic"
    assert "floating point" in result.output and "both" in result.output
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "2"
    text = "".join(case.findtext("system-out") or "" for case in suite.findall("testcase"))
    assert "holds in real arithmetic at these draws" in text


def test_dask_without_dask_installed_exits_2_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """#23 item 9: --dask (and --executor ADDRESS) check the optional dependency first: exit 2
    naming the extra, before the suite is even loaded."""
    import sys

    import dpverify._audit._suite as suite

    path = _write(tmp_path, "dlap.toml", CORRECT)
    for name in ("dask", "dask.distributed", "distributed"):
        monkeypatch.setitem(sys.modules, name, None)  # import dask.distributed now raises ImportError

    def no_work(*args, **kwargs):
        raise AssertionError("the suite was loaded before the dependency check")

    monkeypatch.setattr(suite, "load_suite", no_work)
    for option in (["--dask", "tcp://127.0.0.1:8786"], ["--executor", "tcp://127.0.0.1:8786"], ["--executor", "dask"]):
        result = CliRunner().invoke(audit_command, [str(path), *option])
        assert result.exit_code == 2 and "pip install 'dpverify[dask]'" in result.output, (option, result.output)
        assert "Traceback" not in result.output
    # a malformed address or --dask beside --executor are usage errors (exit 2) as well
    assert CliRunner().invoke(audit_command, [str(path), "--dask", "scheduler"]).exit_code == 2
    assert CliRunner().invoke(audit_command, [str(path), "--dask", "tcp://h:1", "--executor", "serial"]).exit_code == 2


@pytest.mark.slow
def test_dask_option_runs_the_claims_on_a_cluster(tmp_path: Path) -> None:
    """--dask ADDRESS gives the serial run's numbers (claim seeds do not depend on the executor)."""
    import distributed  # a test dependency (pyproject [test]): never skipped

    _write(tmp_path, "dlap.toml", CORRECT.replace("200_000", "20_000"))
    _write(tmp_path, "planted/off_by_one.toml", CORRECT.replace('"discrete-laplace"', '"bug.discrete-laplace-scale"')
           .replace("target", 'expect = "violated"\ntarget', 1))
    serial, remote = tmp_path / "serial.json", tmp_path / "remote.json"
    assert _invoke(str(tmp_path), "--json", str(serial), "--executor", "serial").exit_code == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        result = _invoke(str(tmp_path), "--json", str(remote), "--dask", cluster.scheduler_address)
    assert result.exit_code == 0, result.output
    key = lambda path: [(r["name"], r["lower_bound"], r["verdict"]) for r in json.loads(path.read_text())["results"]]
    assert key(serial) == key(remote)


def test_planted_file_without_expect_exits_2(tmp_path: Path) -> None:
    bad = _write(tmp_path, "planted/x.toml", CORRECT)
    result = _invoke(str(tmp_path), "--executor", "serial")
    assert result.exit_code == 2 and str(bad) in result.output and "expect" in result.output


def test_missing_path_and_bad_options_exit_2(tmp_path: Path) -> None:
    assert _invoke(str(tmp_path / "nowhere")).exit_code == 2
    path = _write(tmp_path, "dlap.toml", CORRECT)
    assert CliRunner().invoke(audit_command, [str(path), "--alpha", "2"]).exit_code == 2
    assert CliRunner().invoke(audit_command, [str(path), "--samples-scale", "0"]).exit_code == 2


def test_crashing_target_is_a_suite_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "dlap.toml", CORRECT.replace("200_000", "2_000"))
    import dpverify._executed._samplers as samplers

    def broken(*args, **kwargs):
        raise RuntimeError("sampler exploded")

    monkeypatch.setattr(samplers, "discrete_laplace", broken)
    result = _invoke(str(path), "--executor", "serial")
    assert result.exit_code == 2 and "sampler exploded" in result.output


def test_load_suite_validates_before_running(tmp_path: Path) -> None:
    _write(tmp_path, "a.toml", CORRECT)
    _write(tmp_path, "b.toml", 'name = "a"\n' + CORRECT)
    with pytest.raises(SuiteError, match="duplicate claim name"):
        load_suite(tmp_path)


# ---- Holm and re-scoring --------------------------------------------------------------------------


def test_holm_step_down() -> None:
    rejected, levels = holm([0.01, 0.04, 0.03, 0.005], 0.05)
    # sorted: 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop
    assert rejected == [True, False, False, True]
    assert levels == [0.05 / 3, 0.05 / 2, 0.05 / 2, 0.05 / 4]
    assert holm([0.2, 0.3], 0.05) == ([False, False], [0.025, 0.025])
    assert holm([0.0, 0.0], 0.05)[0] == [True, True]


def test_chain_holm_passes_weight_along_a_chain_and_on_when_it_is_done() -> None:
    """Chains (floating point, real arithmetic) at alpha = 0.05 over 2 claims."""
    # claim 0 violated in floating point only: its weight stays on its real-arithmetic hypothesis,
    # so claim 1 is tested at 0.025 (Holm would have given it 0.05 after claim 0's rejection)
    assert chain_holm([[0.001, 0.5], [0.04]], 0.05) == ([1, 0], [[0.025, 0.025], [0.025]])
    # claim 0 violated in both: its chain is done and its weight moves on to claim 1
    assert chain_holm([[0.001, 0.001], [0.04]], 0.05) == ([2, 1], [[0.025, 0.025], [0.05]])
    # nothing rejected: every chain's first hypothesis tested at alpha/m, the rest never
    assert chain_holm([[0.2, 0.0], [0.3]], 0.05) == ([0, 0], [[0.025, None], [0.025]])
    # chains of one hypothesis are Holm's procedure
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    assert chain_holm([[x] for x in p], 0.05)[0] == [1 if r else 0 for r in holm(p, 0.05)[0]]


def test_chain_holm_controls_the_family_wise_error() -> None:
    """Monte Carlo, seed 0, 20,000 suites of 5 claims at alpha = 0.2, independent uniform
    p-values for the true hypotheses: 3 claims violated in floating point only (p = 0, then a
    true real-arithmetic hypothesis), 2 true claims. The rate of suites with any false rejection
    must not be above alpha: the test fails only if the rate's Clopper-Pearson lower bound at
    1e-6 exceeds 0.2 (false-alarm probability <= 1e-6 for a valid procedure). Power: the wrong
    variant that tests each real-arithmetic hypothesis at the full alpha (no chain weight) has a
    rate near 1 - 0.8^3 = 0.49 and is rejected by the same check."""
    from dpverify._statistics._confidence import cp_lower

    rng = np.random.default_rng(0)
    alpha, reps = 0.2, 20_000
    u = rng.random((reps, 5))
    false_chain = false_naive = 0
    for row in u:
        chains = [[0.0, row[0]], [0.0, row[1]], [0.0, row[2]], [row[3], 1.0], [row[4], 1.0]]
        rejected, _ = chain_holm(chains, alpha)
        false_chain += any(rejected[j] >= 2 for j in range(3)) or any(rejected[j] >= 1 for j in (3, 4))
        naive = holm([row[3], row[4]], alpha)[0]
        false_naive += any(x <= alpha for x in row[:3]) or any(naive)
    assert float(cp_lower(false_chain, reps, 1e-6)) <= alpha
    assert float(cp_lower(false_naive, reps, 1e-6)) > alpha


def test_p_value_grid_contains_every_holm_threshold() -> None:
    grid = p_value_grid(1e-3, 7)
    for k in range(1, 8):
        assert any(math.isclose(g, 1e-3 / k, rel_tol=0, abs_tol=0) for g in grid)
    assert grid == sorted(grid) and grid[0] < 1e-3 / 7 * 1e-15


def _dlap(scale):
    from dpverify import discrete_laplace

    def mechanism(x, rng, size):
        return x + discrete_laplace(rng, scale, size=size)

    return mechanism


@pytest.mark.parametrize(("estimators", "claim"), [(("epsilon",), DiscreteLaplace(2, 1).pure()),
                                                     (("renyi",), DiscreteLaplace(2, 1).pure()),
                                                     (("delta",), DiscreteLaplace(2, 1).pure())])
def test_rescore_at_the_audit_level_reproduces_the_audit(estimators, claim) -> None:
    report = audit(_dlap(2), NeighbourPair(0, 1), claim, samples=50_000, alpha=1e-3, seed=3, estimators=estimators)
    for res in report.results:
        level = 1e-3 * result_share(res, len(report.results))
        again = rescore(res, level)
        assert again.verdict == res.verdict
        assert again.lower_bound == pytest.approx(res.lower_bound, rel=1e-6, abs=1e-9)
        looser = rescore(res, min(1.0, 1e3 * level))
        assert looser.lower_bound >= again.lower_bound - 1e-9  # the bound grows with the level


def test_p_value_is_the_first_rejecting_grid_level() -> None:
    # Lap_Z(1) audited against a claim of 0.8: violated at small levels already
    report = audit(_dlap(1), NeighbourPair(0, 1), DiscreteLaplace(5, 4).pure(), samples=100_000, alpha=1e-3, seed=1,
                   directions="forward")
    (res,) = report.results
    grid = p_value_grid(1e-3, 10)
    p = result_p_value(res, grid)
    assert 0 < p <= 1e-3
    assert rescore(res, p).violated
    below = [g for g in grid if g < p]
    if below:
        assert not rescore(res, below[-1]).violated
    # a claim that holds has p-value 1 on this grid
    holds = audit(_dlap(1), NeighbourPair(0, 1), DiscreteLaplace(1, 1).pure(), samples=20_000, alpha=1e-3, seed=1,
                  directions="forward")
    assert result_p_value(holds.results[0], grid) == 1.0


def test_infinite_bound_has_p_value_zero_and_survives_rescoring() -> None:
    def constant(x, rng, size):
        return np.full(size, x, dtype=np.int64)

    def log_pmf(x, outputs):
        return np.where(np.asarray(outputs) == x, 0.0, -math.inf)

    report = audit(constant, NeighbourPair(0, 1), DiscreteLaplace(1, 1).pure(), samples=1_000, log_pmf=log_pmf, seed=0)
    for res in report.results:
        assert res.lower_bound == math.inf
        assert result_p_value(res, [1e-3]) == 0.0
        assert rescore(res, 1e-9).lower_bound == math.inf
