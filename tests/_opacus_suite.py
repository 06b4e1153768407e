"""Opacus 1.6.0's own accountant tests against ``accounting.CertifiedOpacusAccountant`` (issue 31, item 6).

Not collected by pytest: Opacus needs torch, which the test extra does not install (a CPU wheel of
several hundred MB and ~25 CPU s for the suite), and a check that skips where torch is missing would
be a skipped check in CI. Run it where Opacus is installed::

    python tests/_opacus_suite.py      # exit 0 when the outcome equals OPACUS_EXPECTED

Measured (opacus 1.6.0, torch 2.13.0 CPU): 5 of 15 pass with the class swapped; the others assert
Opacus's own estimates to 4-7 places (listed below with both numbers; ours are certified upper bounds).
"""

from __future__ import annotations

import sys
import unittest

from accounting import CertifiedOpacusAccountant, get_noise_multiplier

#: Opacus 1.6.0's ``opacus/tests/accountants_test.py`` with its accountants and
#: ``get_noise_multiplier`` swapped for ours: every test and whether it passes. The failures assert
#: Opacus's own estimates to 7 places (not bounds); the reason and both numbers are listed.
OPACUS_EXPECTED = {
    "test_register_accountant": True,
    "test_create_accountant_not_registered": True,
    "test_register_existing_accountant": True,
    "test_force_register_existing_accountant": True,
    "test_accountant_state_dict": True,
    # expects loading an RDP accountant's state into a GDP one to raise; swapped, both are ours
    "test_accountant_load_state_dict": False,
    # each asserts Opacus's own value to 4 or 7 places (opacus 1.6.0's vs ours, certified):
    "test_rdp_accountant": False,  # RDP 7.32911117 vs 6.76878737 (2,250 steps of sigma 1.5, q 0.04)
    "test_prv_accountant": False,  # PRV 6.77739571 vs 6.76705109 (2,249 steps)
    "test_gdp_accountant": False,  # asserts 6.59 < eps < 6.6 (the CLT approximation, below the true value); ours 6.76705109
    "test_get_noise_multiplier_rdp_epochs": False,  # RDP 1.416 vs 1.34632649 (less noise for the same budget)
    "test_get_noise_multiplier_rdp_steps": False,  # RDP 1.3562 vs 1.29001780
    "test_get_noise_multiplier_prv_epochs": False,  # PRV 1.34765625 vs 1.34632649
    "test_get_noise_multiplier_prv_steps": False,  # PRV 1.2915 vs 1.29001780
    "test_get_noise_multiplier_gdp": False,  # GDP 1.3232421875 vs 1.34632649 (GDP under-reports)
}
#: not run here (3 examples cost ~4 CPU minutes): Hypothesis's example (eps 6.5645, delta 1e-5, q 1e-4,
#: 27 epochs = 270,000 steps) fails it: get_noise_multiplier certifies sigma 0.41675 at 6.5622 (a
#: coarse PLD, h = 0.0014), but get_epsilon's query at the default time budget (10 s) plans a finer
#: PLD that fails with MemoryError (> 12 GB) and falls back to RDP, 10.3656: both certified bounds,
#: the planner's larger budget giving the looser one. That was before the planner's memory budget
#: (issue 30 item 4): the same query now answers 6.5174 by the PLD in 1.8 s at 0.25 GB peak RSS
#: (measured after the merge), so the case is expected to pass; still not run here for its cost
OPACUS_NOT_RUN = {"test_get_noise_multiplier_overshoot"}


def run_opacus_suite() -> dict[str, bool]:
    """Every test of Opacus's accountant module (but OPACUS_NOT_RUN) and whether it passed."""
    import opacus.tests.accountants_test as theirs
    from opacus.accountants import registry

    for name in ("RDPAccountant", "PRVAccountant", "GaussianAccountant"):
        setattr(theirs, name, CertifiedOpacusAccountant)
    theirs.get_noise_multiplier = get_noise_multiplier
    for name in ("rdp", "prv", "gdp"):
        registry._ACCOUNTANTS[name] = CertifiedOpacusAccountant
    outcome = {}
    for case in unittest.defaultTestLoader.loadTestsFromModule(theirs):
        for test in case:
            name = test.id().rsplit(".", 1)[-1]
            if name not in OPACUS_NOT_RUN:
                result = unittest.TestResult()
                test.run(result)
                outcome[name] = result.wasSuccessful()
    return outcome


if __name__ == "__main__":
    outcome = run_opacus_suite()
    for name, passed in sorted(outcome.items()):
        print(f"{'pass' if passed else 'FAIL'}  {name}")
    sys.exit(0 if outcome == OPACUS_EXPECTED else 1)
