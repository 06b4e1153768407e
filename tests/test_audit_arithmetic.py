"""Verdicts that say which arithmetic (issue #20, item 4), through the public API.

An audit of a float mechanism with floating-point views (``float_bits=True``, the default) that
finds a violation is followed by the real-arithmetic audit (``float_bits=False``) of the same
pairs on the same draws; the report says "violated in floating point; holds in real arithmetic
at these draws" or "violated in both", and its ``verdict`` (floating point) governs.

Every audit here: 50,000 draws per input, alpha = 1e-3 family-wise over both verdicts (a fixed
sequence: see dpverify/_audit/_audit.py), fixed seeds. False alarms: a true claim -- the
discrete Laplace mechanism's, and float Laplace's in real arithmetic -- is reported violated
with probability <= 1e-3. Power: numpy's float Laplace x + Lap(1) has outputs whose lowest set
bit is impossible under the neighbour in about half the draws (Mironov 2012); the wrong scale
Lap(1/2) claimed 1-DP is truly 2-DP, far above the claim at this size.
"""

from __future__ import annotations

import pytest

import dpverify
from accounting import PureDP
from dpverify.testing import assert_private

SAMPLES = 50_000
ALPHA = 1e-3


def float_laplace(x, rng, size):
    """The textbook Laplace mechanism as numpy runs it: x + Lap(1) in floating point (1-DP in real arithmetic)."""
    return x + rng.laplace(0.0, 1.0, size)


def float_laplace_wrong_scale(x, rng, size):
    """Lap(1/2) where 1-DP needs Lap(1): truly 2-DP, in real arithmetic too."""
    return x + rng.laplace(0.0, 0.5, size)


def discrete_laplace(x, rng, size):
    """x + Lap_Z(1), exactly (integers): 1-DP."""
    return x + dpverify.discrete_laplace(rng, 1, size=size)


def _audit(mechanism, pair, **options):
    return dpverify.audit(mechanism, pair, PureDP(1.0), samples=SAMPLES, alpha=ALPHA, seed=2, **options)


@pytest.fixture(scope="module")
def float_report():
    """numpy's float Laplace audited at the defaults (learned views included), once for the module."""
    return _audit(float_laplace, (0.0, 1.0))


def test_float_laplace_is_violated_in_floating_point_and_holds_in_real_arithmetic(float_report):
    report = float_report
    assert report.verdict == "violated" and not report.passed  # the floating-point verdict governs
    assert report.arithmetic == "floating point" and report.real_arithmetic_verdict == "holds"
    assert report.finding == "violated in floating point; holds in real arithmetic at these draws"
    assert report.worst().lower_bound > 3.0  # far above the claim 1
    real = report.real_arithmetic
    assert real is not None and not real.float_bits and not real.floating_point_views
    assert max(r.lower_bound for r in real) <= 1.0
    assert "violated in floating point; holds in real arithmetic" in str(report)
    d = report.to_dict()
    assert (d["verdict"], d["arithmetic"], d["real_arithmetic_verdict"]) == ("violated", "floating point", "holds")
    assert d["real_arithmetic"]["verdict"] == "holds"


def test_the_real_arithmetic_audit_reuses_the_same_draws(float_report):
    """It is the audit with float_bits=False and the same seed: the same pilot, selection and bound
    draws, so the same numbers (which is what "at these draws" means)."""
    report = float_report
    alone = _audit(float_laplace, (0.0, 1.0), float_bits=False)
    assert report.real_arithmetic is not None
    assert [(r.lower_bound, r.event, r.samples) for r in report.real_arithmetic] == [
        (r.lower_bound, r.event, r.samples) for r in alone]
    assert alone.arithmetic == "none" and alone.finding == "holds (real arithmetic only: float_bits=False)"


def test_discrete_laplace_holds():
    report = _audit(discrete_laplace, (0, 1))
    assert report.verdict == "holds" and report.arithmetic == "none" and report.finding == "holds"
    # integer outputs: no view looks at a bit pattern, so the audit is its own real-arithmetic one
    assert not report.floating_point_views and report.real_arithmetic is None and report.real_arithmetic_verdict == "holds"


def test_wrong_scale_is_violated_in_both():
    report = _audit(float_laplace_wrong_scale, (0.0, 1.0), learned=False)  # the bit views need no classifier
    assert report.verdict == "violated" and report.arithmetic == "both"
    assert report.finding == "violated in both floating point and real arithmetic"
    assert report.real_arithmetic is not None and report.real_arithmetic.worst().lower_bound > 1.2  # true 2


def test_integer_outputs_need_no_second_audit():
    """A violated integer mechanism (Lap_Z(1) on inputs 3 apart: truly 3-DP against the claim 1):
    float_bits changes no view, so the verdict is "both" at once, with the same numbers."""
    report = _audit(discrete_laplace, (0, 3))
    assert report.verdict == "violated" and report.arithmetic == "both" and report.real_arithmetic is None
    same = _audit(discrete_laplace, (0, 3), float_bits=False)
    assert [r.lower_bound for r in report] == [r.lower_bound for r in same]


def test_assert_private_says_which_arithmetic():
    """assert_private at its default alpha (1e-3), learned views off (the bit views suffice)."""
    with pytest.raises(AssertionError) as info:
        assert_private(float_laplace, (0.0, 1.0), 1.0, samples=SAMPLES, seed=2, learned=False)
    text = str(info.value)
    assert "1-DP violated in floating point; holds in real arithmetic at these draws" in text
    assert "real arithmetic (float_bits=False, the same pairs and draws): holds" in text
    with pytest.raises(AssertionError, match="violated in both"):
        assert_private(float_laplace_wrong_scale, (0.0, 1.0), 1.0, samples=SAMPLES, seed=2, learned=False)
    assert assert_private(discrete_laplace, (0, 1), 1.0, samples=SAMPLES, seed=2).finding == "holds"
    # the idealised claim: float_bits=False asserts real arithmetic only
    assert assert_private(float_laplace, (0.0, 1.0), 1.0, samples=SAMPLES, seed=2, float_bits=False, learned=False).passed


def test_sequential_mode_and_pair_search_keep_the_pairs():
    """The real-arithmetic audit runs on the pairs the floating-point audit kept (after a pair
    search) and in the same mode."""
    pairs = [(0.0, 1.0), (0.0, 0.0 + 2.0**-40)]
    report = dpverify.audit(float_laplace, pairs, PureDP(1.0), samples=SAMPLES, alpha=ALPHA, seed=3, sequential=True,
                            initial_samples=10_000, pair_search="pilot", search_samples=2_000, learned=False)
    assert report.arithmetic == "floating point"
    real = report.real_arithmetic
    assert real is not None and {r.pair for r in real} == {r.pair for r in report} and len({r.pair for r in real}) == 1
    assert all("pair chosen by a search" in r.method and "rounds" in r.details for r in real)
    assert max(r.lower_bound for r in real) <= 1.0


def test_readme_float_example_runs(capsys):
    """The README's float example, as written (50,000 draws, seed 3, alpha 0.05 by default)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    match = re.search(r"<!-- audit-float-example -->\s*```python\n(.*?)```", text, re.S)
    assert match, "README.md must hold the float example after <!-- audit-float-example -->"
    exec(compile(match.group(1), "README.md", "exec"), {"__name__": "audit_float_example"})
    assert "violated in floating point; holds in real arithmetic at these draws" in capsys.readouterr().out
