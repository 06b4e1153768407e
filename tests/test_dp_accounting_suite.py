"""dp_accounting 0.6.0's own accountant tests, run against ours (issue 31, "dp_accounting's tests in CI").

The installed wheel's test modules are imported and run unchanged; only the class under test is
swapped (the module attribute ``PLDAccountant`` / ``RdpAccountant`` is replaced for the duration of
each test, see :mod:`tests._dp_accounting_suite`). The failing set must equal the list in
``tests/data/dp_accounting_expected_failures.toml`` exactly -- a new failure fails the suite, and
so does a listed test that starts passing (the list cannot go stale) -- and the pass counts must
not fall below the measured ones. Deterministic (dp_accounting's tests seed what they draw).

A control run of the contract and RDP modules against dp_accounting's own classes checks the
harness itself counts a passing suite as passing (the PLD control is left out of CI: its mixture
test takes ~32 s of dp_accounting's own time). The RDP module also tests dp_accounting's free
functions (``_compute_log_a``, ``compute_epsilon``, ...), which build no accountant: those are not
run here (they test nothing of ours); every RDP test that builds an accountant is.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest

dp = pytest.importorskip("dp_accounting")
pytest.importorskip("absl")

import _dp_accounting_suite as suite  # noqa: E402  (tests/ is on the path, as for _gof)
import accounting as acc  # noqa: E402

# the list below is dp_accounting 0.6.0's (the test extra pins it): another release has other tests
_VERSION = importlib.metadata.version("dp-accounting")
if _VERSION != "0.6.0":  # pragma: no cover
    pytest.skip(f"the expected-failure list is for dp_accounting 0.6.0, not {_VERSION}", allow_module_level=True)

EXPECTED = tomllib.loads((Path(__file__).parent / "data" / "dp_accounting_expected_failures.toml").read_text())["failure"]

# dp_accounting's RDP tests of its own free functions (no accountant to swap)
_RDP_FREE_FUNCTIONS = (
    "test_compute_log_a_equals_mp",
    "test_truncated_negative_binomial_mean",
    "test_gamma_truncated_negative_binomial",
    "test_log_a_frac_positive",
    "test_effective_gaussian_noise_multiplier",
    "test_compute_rdp_randomized_response_boundary",
    "test_compute_rdp_randomized_response_inf_order",
    "test_compute_rdp_randomized_response_raises",
    "test_compute_epsilon_delta_pure_dp",
    "test_compute_epsilon_delta_gaussian",
    "test_delta_bounds_gaussian",
)


def _uses_accountant(test_id: str) -> bool:
    return not test_id.split(".", 1)[1].startswith(_RDP_FREE_FUNCTIONS)


def _expected(name: str) -> set[str]:
    return {f["test"] for f in EXPECTED if f["suite"] == name and f.get("ci", True)}


#: passing tests too slow for CI, measured outside it (``python tests/_dp_accounting_suite.py``):
#: the mixture-of-Gaussians test takes ~8 s of CPU of ours (theirs: 28 s), more than CI affords;
#: ours there: delta 9.999994077e-7 at eps 17.193115 (theirs 9.999993698e-7, tolerance 1e-12)
_SLOW_PASSING = {"PldPrivacyAccountantTest.test_mixture_of_gaussians_basic"}

#: listed failures too slow for CI (``ci = false`` in the file: measured outside CI, reported
#: there) and the slow passing tests above
_NOT_IN_CI = {f["test"] for f in EXPECTED if not f.get("ci", True)} | _SLOW_PASSING


def _in_ci(test_id: str) -> bool:
    return test_id not in _NOT_IN_CI


def _check(name: str, outcomes: list, minimum_passed: int, total: int) -> None:
    counted = [o for o in outcomes if o.uses_accountant]
    failed = {o.test_id for o in counted if not o.passed}
    details = {o.test_id: o.detail for o in counted if not o.passed}
    expected = _expected(name)
    assert len(counted) == total, f"{name}: {len(counted)} tests built an accountant, expected {total}"
    assert failed - expected == set(), f"{name}: new failures {sorted(failed - expected)}: {[details[t] for t in sorted(failed - expected)]}"
    assert expected - failed == set(), f"{name}: listed as failing but passing now (update the list): {sorted(expected - failed)}"
    assert len(counted) - len(failed) >= minimum_passed


def test_expected_failures_file_is_well_formed():
    """Every listed failure names its suite, a reason from the allowed set, and -- for "tighter"
    and "looser" -- both numbers, ordered as the reason says."""
    for failure in EXPECTED:
        assert failure["suite"] in ("pld", "rdp", "contract")
        assert failure["reason"] in ("tighter", "looser", "unsupported")
        if failure["reason"] != "unsupported":
            ours, theirs = failure["ours"], failure["theirs"]
            if isinstance(ours, float) and isinstance(theirs, float):
                assert (ours < theirs) == (failure["reason"] == "tighter"), failure["test"]


def test_contract_suite_all_pass():
    """dp_accounting's 13 contract tests (privacy_accountant_test.PrivacyAccountantTest), run
    for our accountant under each of the three neighbouring relations: all pass."""
    _check("contract", suite.run_contract(acc.CertifiedAccountant), 13, 13)


def test_pld_suite_with_certified_accountant():
    """dp_accounting's 68 PLD accountant tests with PLDAccountant swapped for ours: 67 pass, the one
    failure is the listed one ("tighter": truncated Poisson subsampling; baseline before issue 31:
    28/68). The mixture-of-Gaussians test (passing, ~8 s of CPU) is measured outside CI; the
    other 67 run here (66 pass)."""
    _check("pld", suite.run_pld(acc.CertifiedAccountant, select=_in_ci), 66, 68 - len(_NOT_IN_CI))


def test_rdp_suite_with_certified_rdp_accountant():
    """dp_accounting's RDP accountant tests that build an accountant (90) with RdpAccountant swapped
    for our CertifiedRdpAccountant: 87 pass (96.7%), the 3 failures are the listed ones, each
    tighter and certified (baseline with the constructor adapted to the PLD-style class: 12/90;
    80/90 before the Poisson repeat-and-select values covered their float reference)."""
    _check("rdp", suite.run_rdp(acc.CertifiedRdpAccountant, select=_uses_accountant), 87, 90)


def test_harness_counts_dp_accountings_own_classes_as_passing():
    """The control: the same harness with dp_accounting's own classes passes every contract and
    RDP test it runs (so a failure above is ours, not the harness's)."""
    contract = suite.run_contract(None)
    rdp = suite.run_rdp(None, select=_uses_accountant)
    assert all(o.passed for o in contract) and len(contract) == 13
    assert all(o.passed for o in rdp if o.uses_accountant) and sum(o.uses_accountant for o in rdp) == 90


def test_wrong_class_is_caught():
    """A wrong variant the harness rejects: an accountant that under-reports (epsilon always 0)
    fails tests of dp_accounting's PLD module that were passing."""
    cls = acc.CertifiedAccountant

    class UnderReporting(cls):
        def get_epsilon(self, target_delta):
            return 0.0

    outcomes = suite.run_pld(UnderReporting, select=lambda t: "basic" in t and _in_ci(t))
    assert sum(not o.passed for o in outcomes) >= 4
