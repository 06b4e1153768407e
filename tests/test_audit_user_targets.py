"""Users' own mechanisms in the audit gate (``target = "pkg.mod:fn"``) and :func:`dpverify.testing.assert_private`.

The mechanisms live in ``tests/user_mechanisms/``, a package outside dpverify put on ``sys.path``
and ``PYTHONPATH`` here (the gate's worker processes import it by name).

Error rates. Every audit here runs at a fixed seed, never retried. The gate runs at family-wise
alpha = 1e-3 (Holm over the suite's claims), ``assert_private`` at its default alpha = 1e-3: a
correct mechanism is reported violated with probability at most 1e-3 per run. Power: the wrong
variants leak far more than claimed (a Laplace sum whose sensitivity 4 was forgotten: truly 2-DP
against the claimed 0.5 on the replace-one pair 0 -> 4, 1.5-DP on 1 -> 4; report-noisy-max with its
noise scale divided by 4: lower bounds above 1.7 against the claimed 1), so at 100,000-200,000
draws their lower bounds clear the claims by margins many times the bounds' widths (the measured
bounds are asserted below); the correct versions are the same code with the right parameter.
"""

from __future__ import annotations

import json
import math
import os
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner

from accounting import ZCDP, PureDP
from dpverify import replace_one_pairs, statdp_pairs
from dpverify._audit._suite import SuiteError, load_suite
from dpverify._cli._cmd_audit import audit_command
from dpverify.testing import assert_private

TESTS = Path(__file__).resolve().parent


@pytest.fixture()
def user_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``tests/`` on sys.path and PYTHONPATH, so that ``user_mechanisms`` imports (also in workers)."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p))


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _invoke(*args: str):
    return CliRunner().invoke(audit_command, list(args), catch_exceptions=False)


CLIPPED = """
target = "user_mechanisms.mechanisms:{fn}"
{expect}
[parameters]
epsilon = 0.5
bound = 4.0
[claim]
epsilon = 0.5
[neighbours]
generator = "replace-one"
dataset = [1.0, 2.0, 3.0]
values = [0.0, 4.0]
[audit]
samples = 100_000
{float_bits}
"""
#: the correct clipped sum adds numpy's float Laplace: private in real arithmetic only, so its claim
#: is an idealised one (file named *idealised*, float_bits = false: expected violated in floating point)
IDEALISED = "float_bits = false"

NOISY_MAX = """
target = "user_mechanisms.mechanisms:{fn}"
{expect}
[parameters]
epsilon = 1.0
[claim]
epsilon = 1.0
[neighbours]
{neighbours}
[audit]
samples = 100_000
"""


def test_user_targets_gate_through_the_cli(tmp_path: Path, user_path: None) -> None:
    """A suite of user mechanisms: the correct ones hold (the float clipped sum in real arithmetic:
    an idealised claim, violated in floating point), the planted wrong ones are caught (exit 0)."""
    _write(tmp_path, "clipped_sum_idealised.toml", CLIPPED.format(fn="clipped_sum", expect="", float_bits=IDEALISED))
    _write(tmp_path, "noisy_max.toml", NOISY_MAX.format(fn="noisy_max", expect="",
                                                         neighbours='generator = "statdp"\nlength = 3'))
    _write(tmp_path, "planted/forgot_bound.toml", CLIPPED.format(fn="clipped_sum_forgot_bound", expect='expect = "violated-in-both"',
                                                                 float_bits=""))
    _write(tmp_path, "planted/scale_halved.toml", NOISY_MAX.format(
        fn="noisy_max_scale_halved", expect='expect = "violated"', neighbours="pairs = [[[1, 1, 1], [2, 1, 1]], [[1, 1, 1], [0, 1, 1]]]"))
    report = tmp_path / "out.json"
    junit = tmp_path / "out.xml"
    result = _invoke(str(tmp_path), "--json", str(report), "--junit", str(junit), "--workers", "2")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(report.read_text())["results"]}
    assert {n: (r["verdict"], r["arithmetic"]) for n, r in rows.items()} == {
        "clipped_sum_idealised": ("caught", "floating point"), "noisy_max": ("holds", "none"),
        "planted/forgot_bound": ("caught", "both"), "planted/scale_halved": ("caught", "both")}
    clipped = rows["clipped_sum_idealised"]
    assert clipped["target"] == "user_mechanisms.mechanisms:clipped_sum" and clipped["claim"] == "0.5-DP"
    assert clipped["real_arithmetic_verdict"] == "holds" and clipped["real_lower_bound"] <= 0.5
    # the true epsilons of the wrong variants in real arithmetic: 1.5 (pair 1 -> 4) and 2 (pair 1 -> 0,
    # bound 4, scale 2); lower end: power on the 1.5 / 2 violations; upper end: a sound lower bound
    # never passes the true 2 (in floating point the forgotten bound is far worse: the low bits leak)
    assert 1.2 < rows["planted/forgot_bound"]["real_lower_bound"] <= 2.0
    assert rows["planted/scale_halved"]["lower_bound"] > 1.5
    assert junit.read_text().count("<testcase") == 4


def test_a_wrong_user_mechanism_as_an_ordinary_claim_fails_the_gate(tmp_path: Path, user_path: None) -> None:
    """The same wrong mechanism, not marked planted, is a violated claim: exit 1; as an idealised
    claim too, since it is violated in real arithmetic (not only in floating point)."""
    path = _write(tmp_path, "forgot_bound_idealised.toml", CLIPPED.format(fn="clipped_sum_forgot_bound", expect="",
                                                                           float_bits=IDEALISED))
    report = tmp_path / "out.json"
    result = _invoke(str(path), "--json", str(report), "--executor", "serial")
    assert result.exit_code == 1, result.output
    (row,) = json.loads(report.read_text())["results"]
    assert row["verdict"] == "violated" and row["arithmetic"] == "both" and row["lower_bound"] > row["claimed"] == 0.5
    assert row["real_lower_bound"] > 0.5


def test_user_claim_forms(tmp_path: Path, user_path: None) -> None:
    """(eps, delta), zCDP and RDP claims are read from the file; the RDP orders become the audit's."""
    base = 'target = "user_mechanisms.mechanisms:noisy_max"\n[neighbours]\npairs = [[[1, 1], [2, 1]]]\n[audit]\nsamples = 2000\n'
    _write(tmp_path, "a.toml", base + "[claim]\nepsilon = 1.0\ndelta = 1e-6\n")
    _write(tmp_path, "z.toml", base + "[claim]\nrho = 0.5\n")
    _write(tmp_path, "r.toml", base + '[claim]\nform = "rdp"\norders = [8, 2]\nepsilons = [1.0, 0.5]\n')
    specs = {s.name: s for s in load_suite(tmp_path)}
    from dpverify._audit._suite import build

    a, z, r = build(specs["a"]), build(specs["z"]), build(specs["r"])
    assert (a.form, a.claim.epsilon, a.claim.delta, a.text) == ("approx", 1.0, 1e-6, "(1, 1e-06)-DP")
    assert z.claim == ZCDP(0.5) and z.text == "0.5-zCDP"
    assert specs["r"].orders == (2.0, 8.0)
    assert r.claim(2) == 0.5 and r.claim(8) == 1.0
    assert r.claim(1.5) == 0.5 and r.claim(4) == 1.0  # monotone in the order: the next stated order's bound
    with pytest.raises(ValueError, match="alpha"):
        r.claim(9)


@pytest.mark.parametrize(
    "text, key, message",
    [
        ('target = "no_such_package_xyz.mech:f"', "target", "cannot import module 'no_such_package_xyz.mech'"),
        ('target = "user_mechanisms.mechanisms:missing"', "target", "has no attribute 'missing'"),
        ('target = "user_mechanisms.mechanisms:NOT_CALLABLE"', "target", "not a callable"),
        ('target = "user_mechanisms.mechanisms:two_arguments"', "target", "cannot be called as f(data, rng, size)"),
        ('target = "user_mechanisms.mechanisms:noisy_max"\n[parameters]\nepsilon = 1\nsigma = 2', "target", "sigma"),
        ('target = "user_mechanisms/mechanisms:noisy_max"', "target", "package.module:function"),
    ],
)
def test_user_target_errors_name_the_problem(tmp_path: Path, user_path: None, text: str, key: str, message: str) -> None:
    body = "\n[claim]\nepsilon = 1.0\n[neighbours]\npairs = [[0, 1]]\n[audit]\nsamples = 2000\n"
    if "[parameters]" in text:
        head, params = text.split("\n", 1)
        path = _write(tmp_path, "x.toml", head + body + params + "\n")
    else:
        path = _write(tmp_path, "x.toml", text + body)
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert info.value.key == key and message in str(info.value), str(info.value)
    result = _invoke(str(path))  # the CLI: exit 2 with the message, no traceback
    assert result.exit_code == 2 and message in result.output


@pytest.mark.parametrize(
    "claim, neighbours, key, message",
    [
        ("epsilon = 1.0\nrho = 0.5", "pairs = [[0, 1]]", "claim", "states its claim"),
        ("", "pairs = [[0, 1]]", "claim", "states its claim"),
        ('form = "zcdp"\nepsilon = 1.0', "pairs = [[0, 1]]", "claim.form", "expected 'pure'"),
        ("epsilon = -1.0", "pairs = [[0, 1]]", "claim.epsilon", "expected a finite number > 0"),
        ("epsilon = 1.0\ndelta = 1.5", "pairs = [[0, 1]]", "claim.delta", "probability"),
        ("orders = [2, 4]\nepsilons = [1.0]", "pairs = [[0, 1]]", "claim.epsilons", "one per order"),
        ("orders = [0.5]\nepsilons = [1.0]", "pairs = [[0, 1]]", "claim.orders", "orders > 1"),
        ("epsilon = 1.0", "pairs = [0, 1]", "neighbours.pairs", "two pairs"),
        ("epsilon = 1.0", "", "neighbours.pairs", "missing"),
        ("epsilon = 1.0", 'generator = "stat"', "neighbours.generator", "'statdp'"),
        ("epsilon = 1.0", 'generator = "statdp"\nlength = 3\nwidth = 2', "neighbours.width", "unknown key"),
    ],
)
def test_user_claim_and_pair_errors(tmp_path: Path, user_path: None, claim: str, neighbours: str, key: str, message: str) -> None:
    path = _write(tmp_path, "x.toml", f'target = "user_mechanisms.mechanisms:noisy_max"\n[claim]\n{claim}\n'
                                      f"[neighbours]\n{neighbours}\n[audit]\nsamples = 2000\n")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert info.value.key == key and message in str(info.value), str(info.value)


# ---- assert_private --------------------------------------------------------------------------------


def test_assert_private_passes_a_correct_mechanism_and_fails_a_wrong_one(user_path: None) -> None:
    """Defaults (200,000 draws, alpha 1e-3), seed 1. Correct: holds (false alarm <= 1e-3). Wrong
    (sensitivity 4 forgotten: truly 2-DP against the claimed 0.5): must fail, naming the event."""
    from user_mechanisms import mechanisms as m

    pairs = replace_one_pairs([0.0, 2.0, 3.0], [4.0])
    # real-arithmetic claims: numpy's float Laplace leaks through its low bits (float_bits's finding)
    report = assert_private(partial(m.clipped_sum, epsilon=0.5, bound=4.0), pairs, 0.5, seed=1, float_bits=False)
    assert report.passed and max(r.lower_bound for r in report) <= 0.5
    with pytest.raises(AssertionError) as info:
        assert_private(partial(m.clipped_sum_forgot_bound, epsilon=0.5, bound=4.0), pairs, 0.5, seed=1, float_bits=False)
    text = str(info.value)
    assert "0.5-DP violated" in text and "witness event: " in text and "record 0: 0.0 -> 4.0" in text
    bound = float(text.split("epsilon >= ")[1].split(" ")[0])
    assert 1.5 < bound <= 2.0  # power above the claim 0.5 (and 1.5); soundness: a lower bound on the true 2


def test_assert_private_on_noisy_max_with_statdp_pairs(user_path: None) -> None:
    """Report-noisy-max on StatDP's pairs of 3 queries, seed 1: Laplace(2/eps) holds at eps = 1;
    the scale divided by 4 is caught (its lower bound is far above 1)."""
    from user_mechanisms import mechanisms as m

    assert_private(partial(m.noisy_max, epsilon=1.0), statdp_pairs(3), PureDP(1.0), seed=1)
    with pytest.raises(AssertionError, match=r"epsilon >= (\d+\.\d+).*witness event: output == "):
        assert_private(partial(m.noisy_max_scale_halved, epsilon=1.0), statdp_pairs(3), 1.0, seed=1)


def test_assert_private_claim_shorthands_and_errors() -> None:
    from dpverify.testing import _as_claim

    assert _as_claim(1.0) == PureDP(1.0)
    assert _as_claim((1.0, 1e-6)).delta == 1e-6
    with pytest.raises(ValueError, match="claim"):
        _as_claim("1-DP")
    with pytest.raises(ValueError, match="epsilon=inf"):
        _as_claim(math.inf)


def test_readme_assert_private_example() -> None:
    """The README's pytest example, run as written (its two tests, seed 1; rates as above)."""
    import re

    text = (TESTS.parent / "README.md").read_text()
    match = re.search(r"<!-- assert-private-example -->\s*```python\n(.*?)```", text, re.S)
    assert match, "README.md must hold the assert_private example after <!-- assert-private-example -->"
    namespace: dict = {}
    exec(compile(match.group(1), "README.md", "exec"), namespace)
    namespace["test_clipped_sum_is_private"]()
    namespace["test_forgotten_sensitivity_is_caught"]()


def test_user_zcdp_and_rdp_claims_gate(tmp_path: Path, user_path: None) -> None:
    """A count plus numpy's float N(0, 4) is 0.125-zCDP (RDP 0.125 alpha) in real arithmetic: stated
    both ways as idealised claims it holds there (and is violated in floating point); with sigma = 1
    (rho = 0.5, D_2 = 1 against the claimed 0.25) the same claims are caught in both arithmetics.
    Seeds fixed (the suite's seed 0 and the file names); alpha 1e-3 family-wise."""
    from dpverify._audit._suite import run_suite

    head = 'target = "user_mechanisms.mechanisms:gaussian_count"\n{expect}\n[parameters]\nsigma = {sigma}\n'
    tail = "[neighbours]\npairs = [[[0, 1], [1, 1]]]\n[audit]\nsamples = 50_000\n{float_bits}\n"
    zcdp = "[claim]\nrho = 0.125\n"
    rdp = "[claim]\norders = [2, 4, 8, 16]\nepsilons = [0.25, 0.5, 1.0, 2.0]\n"
    for sigma, expect, name, bits in ((2.0, "", "gauss_{}_idealised", IDEALISED),
                                      (1.0, 'expect = "violated-in-both"', "planted/gauss_{}", "")):
        for form, claim in (("zcdp", zcdp), ("rdp", rdp)):
            _write(tmp_path, name.format(form) + ".toml", head.format(expect=expect, sigma=sigma) + claim + tail.format(float_bits=bits))
    outcome = run_suite(load_suite(tmp_path), executor="serial")
    verdicts = {row.spec.name: (row.verdict, row.arithmetic) for row in outcome.rows}
    assert verdicts == {"gauss_zcdp_idealised": ("caught", "floating point"), "gauss_rdp_idealised": ("caught", "floating point"),
                        "planted/gauss_zcdp": ("caught", "both"), "planted/gauss_rdp": ("caught", "both")}, verdicts
    rows = {row.spec.name: row for row in outcome.rows}
    ideal = rows["gauss_zcdp_idealised"]
    assert ideal.claimed_rho == 0.125 and ideal.real_result is not None and ideal.real_result.rho <= 0.125
    assert rows["planted/gauss_rdp"].real_result.rho > 0.2 and outcome.exit_code == 0
