"""Run dp_accounting's own installed test modules with the class under test swapped for ours.

dp_accounting 0.6.0 ships its tests in the wheel: the contract tests
(``dp_accounting/privacy_accountant_test.py``, an abstract ``PrivacyAccountantTest``), the PLD
accountant's (``pld/pld_privacy_accountant_test.py``) and the RDP accountant's
(``rdp/rdp_privacy_accountant_test.py``). Those modules build their accountants through the module
attribute (``pld_privacy_accountant.PLDAccountant(...)``, ``rdp_privacy_accountant.RdpAccountant(...)``)
at call time, so replacing that attribute for the duration of a run swaps the class under test
without editing a copy. Each test is run by :mod:`unittest` and reported by its id with its
outcome and whether it built an accountant (the RDP module also tests free functions of
dp_accounting's RDP module -- ``_compute_log_a``, ``compute_epsilon`` -- which have no accountant to
swap; those are reported apart and not counted).

Usage: ``python tests/_dp_accounting_suite.py [ours|theirs|adapted]`` prints each suite's pass count
and failures (``theirs``: dp_accounting's own classes, the harness's control; ``adapted``: the
plain ``CertifiedAccountant`` behind an adapter that drops ``orders``, the issue's baseline).
"""

from __future__ import annotations

import contextlib
import time
import unittest
import warnings
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Outcome:
    """One test of dp_accounting's: its id, whether it passed, whether it built an accountant, its
    failure text (empty if passed) and its wall time."""

    test_id: str
    passed: bool
    uses_accountant: bool
    detail: str
    seconds: float


class _Counting:
    """A factory that counts the accountants it builds (so a test that builds none is known)."""

    def __init__(self, factory: Callable[..., Any]) -> None:
        self.factory = factory
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.factory(*args, **kwargs)


@contextlib.contextmanager
def _swapped(module: Any, name: str, replacement: Any):
    original = getattr(module, name)
    setattr(module, name, replacement)
    try:
        yield
    finally:
        setattr(module, name, original)


def _short(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _run(case_class: type, counter: _Counting | None, module: Any, name: str, select: Callable[[str], bool] | None = None) -> list[Outcome]:
    loader = unittest.TestLoader()
    outcomes = []
    for test in loader.loadTestsFromTestCase(case_class):
        test_id = f"{type(test).__name__}.{test._testMethodName}"
        if select is not None and not select(test_id):
            continue
        result = unittest.TestResult()
        start = time.perf_counter()
        # as under absltest: warnings are not errors (pytest's filterwarnings=error would turn
        # dp_accounting's own RuntimeWarnings into failures of its tests)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if counter is not None:
                counter.calls = 0
                with _swapped(module, name, counter):
                    test.run(result)
                uses = counter.calls > 0
            else:
                test.run(result)
                uses = True
        seconds = time.perf_counter() - start
        problems = result.failures + result.errors
        passed = not problems and not result.skipped and result.testsRun == 1
        detail = _short(problems[0][1]) if problems else ("skipped" if result.skipped else "")
        outcomes.append(Outcome(test_id, passed, uses, detail, seconds))
    return outcomes


def contract_case(factory: Callable[[Any], Any]) -> type:
    """dp_accounting's abstract contract test class, made concrete for ``factory(relation)``."""
    from dp_accounting import privacy_accountant as pa
    from dp_accounting import privacy_accountant_test as pat

    relations = (pa.NeighboringRelation.ADD_OR_REMOVE_ONE, pa.NeighboringRelation.REPLACE_ONE, pa.NeighboringRelation.REPLACE_SPECIAL)

    class ContractTest(pat.PrivacyAccountantTest):
        def _make_test_accountants(self):
            return [factory(relation) for relation in relations]

    ContractTest.__name__ = ContractTest.__qualname__ = "ContractTest"
    # absltest's skipThisClass marks the abstract base; the subclass is concrete
    ContractTest.__unittest_skip__ = False
    return ContractTest


def run_contract(factory: Callable[[Any], Any] | None) -> list[Outcome]:
    """The 13 contract tests against ``factory(relation)`` (None: dp_accounting's PLD accountant)."""
    if factory is None:
        from dp_accounting.pld import pld_privacy_accountant as pld

        factory = pld.PLDAccountant
    return _run(contract_case(factory), None, None, "")


def run_pld(replacement: Callable[..., Any] | None, select: Callable[[str], bool] | None = None) -> list[Outcome]:
    """dp_accounting's PLD accountant tests with ``PLDAccountant`` replaced (None: the original)."""
    from dp_accounting.pld import pld_privacy_accountant as pld
    from dp_accounting.pld import pld_privacy_accountant_test as test_module

    counter = _Counting(replacement if replacement is not None else pld.PLDAccountant)
    return _run(test_module.PldPrivacyAccountantTest, counter, pld, "PLDAccountant", select)


def run_rdp(replacement: Callable[..., Any] | None, select: Callable[[str], bool] | None = None) -> list[Outcome]:
    """dp_accounting's RDP accountant tests with ``RdpAccountant`` replaced (None: the original)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp
    from dp_accounting.rdp import rdp_privacy_accountant_test as test_module

    counter = _Counting(replacement if replacement is not None else rdp.RdpAccountant)
    return _run(test_module.RdpPrivacyAccountantTest, counter, rdp, "RdpAccountant", select)


def _summary(label: str, outcomes: list[Outcome]) -> None:
    counted = [o for o in outcomes if o.uses_accountant]
    passed = [o for o in counted if o.passed]
    total = sum(o.seconds for o in outcomes)
    print(f"{label}: {len(passed)}/{len(counted)} pass ({len(outcomes) - len(counted)} tests build no accountant, not counted); {total:.1f} s")
    for o in counted:
        if not o.passed:
            print(f"  FAIL {o.test_id}: {o.detail}")
    slow = sorted(outcomes, key=lambda o: -o.seconds)[:5]
    print("  slowest: " + ", ".join(f"{o.test_id} {o.seconds:.2f}s" for o in slow))


def main(argv: list[str] | None = None) -> None:
    import sys

    mode = (argv if argv is not None else sys.argv[1:] or ["ours"])[0]
    if mode == "theirs":
        _summary("contract", run_contract(None))
        _summary("pld", run_pld(None))
        _summary("rdp", run_rdp(None))
        return
    import accounting as acc

    if mode == "adapted":
        cls = acc.CertifiedAccountant

        def rdp_factory(orders=None, neighboring_relation=None):
            return cls() if neighboring_relation is None else cls(neighboring_relation)

        _summary("contract", run_contract(cls))
        _summary("pld", run_pld(cls))
        _summary("rdp", run_rdp(rdp_factory))
        return
    _summary("contract", run_contract(acc.CertifiedAccountant))
    _summary("pld", run_pld(acc.CertifiedAccountant))
    _summary("rdp", run_rdp(acc.CertifiedRdpAccountant))


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root: accounting
    main()
