"""Where ``accounting.calibrate``'s second phase starts (issue 31 item 4: its time on DP-SGD).

The first phase bisects with a small share of the time budget per evaluation; the second re-checks
with the full routes. When the first phase's evaluations ran every applicable route (the PLD on
a coarser grid), the second phase re-checks the first phase's uncertified parameters, largest
first, instead of restarting from the lower end. Deterministic and cheap: the planner is replaced
by a stand-in whose certified epsilon is C / x with the full budget and (1 + slack) C / x with a
first-phase share (a coarser grid is looser), so the smallest parameter the full routes certify
is exactly C / target. Checked: the answer is certified and within the relative tolerance of that
smallest parameter (the final bracket's lower end was re-checked with the full routes), in at
most five evaluations after the first phase (three re-checks, then steps interpolated between the
two full evaluations; a restart from the lower end, as before, took 14). The
wrong variant, trusting the first phase (its smallest certified parameter, the answer the coarse
routes alone give), is more than the tolerance above it and is rejected by the same check. When
the PLD did not fit the first phase's share, the second phase still searches from the lower end
and reaches the same answer.
"""

from __future__ import annotations

import pytest

import accounting as acc
from accounting._core._planner import DEFAULT_TIME_BUDGET
from accounting._core._result import Result
from accounting._routing import _calibration

C, TARGET, DELTA, TOL = 1.4, 1.0, 1e-5, 1e-4
#: the first phase's looseness: 3e-4 relative, three times the tolerance
SLACK = 3e-4


#: the time budget of one first-phase evaluation (calibrate's default budget)
SHARE = DEFAULT_TIME_BUDGET * _calibration._FIRST_PHASE_SHARE


def _stand_in(calls: list, *, complete: bool, slack: float = SLACK):
    def epsilon_routes(x, delta, *, compose, include_pld, comparisons, time_budget):
        coarse = time_budget <= SHARE
        calls.append((x, coarse))
        eps = C / x * ((1 + slack) if coarse else 1.0)
        pld = Result(eps, delta, "pld", status="answer", estimated_seconds=0.1 if coarse else 0.2)
        others = (Result(2 * eps, delta, "rdp-cks", status="run", estimated_seconds=0.01),)
        if not complete:  # the PLD did not fit the first phase's share
            if coarse:
                pld = Result(float("inf"), delta, "pld", status="not run", estimated_seconds=0.3)
                others = (Result(eps, delta, "rdp-cks", status="answer", estimated_seconds=0.01),)
        answer = min((pld, *others), key=lambda r: r.epsilon)
        return Result(answer.epsilon, delta, answer.route, status="answer", alternatives=(pld, *others))

    return epsilon_routes


def _calibrate(monkeypatch, calls, **options):
    monkeypatch.setattr(_calibration, "epsilon_routes", _stand_in(calls, **options))
    return acc.calibrate(lambda x: x, TARGET, DELTA, compose=1000, lower=0.3, upper=5.0, relative_tolerance=TOL)


def _within_tolerance_of_the_smallest(parameter: float) -> bool:
    smallest = C / TARGET  # the full routes certify exactly the parameters >= C / target
    return smallest <= parameter <= smallest * (1 + TOL)


@pytest.mark.parametrize("complete", [True, False])
def test_the_second_phase_finds_the_smallest_parameter_the_full_routes_certify(monkeypatch, complete):
    calls: list = []
    result = _calibrate(monkeypatch, calls, complete=complete)
    assert result.achieved.epsilon <= TARGET
    assert _within_tolerance_of_the_smallest(result.parameter)
    first = sum(1 for _, coarse in calls if coarse)
    second = len(calls) - first
    assert first >= 15  # bisection of [0.3, 5] to 1e-4
    if complete:
        assert second <= 5, calls[first:]  # 3 re-checks, one interpolated step, one that closes the bracket
        # the second phase starts by re-checking the first phase's largest uncertified parameter
        assert calls[first][0] == max(x for x, coarse in calls if coarse and (1 + SLACK) * C / x > TARGET)
        # the wrong variant: trusting the first phase (its smallest certified parameter) is rejected
        trusted = min(x for x, coarse in calls if coarse and (1 + SLACK) * C / x <= TARGET)
        assert not _within_tolerance_of_the_smallest(trusted)
