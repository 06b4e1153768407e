"""A drop-in for dp_accounting's accountants: its ``PrivacyAccountant`` contract, certified numbers.

Code written for dp_accounting (``acct = PLDAccountant(); acct.compose(event, n);
acct.get_epsilon(delta)``) gets certified upper bounds by changing one line::

    from accounting import CertifiedAccountant as PLDAccountant

The class implements dp_accounting's abstract ``PrivacyAccountant`` (``compose``, ``supports``,
``get_epsilon``, ``get_delta``, ``ledger``): events are translated by
:func:`accounting.from_dp_event` and every ``get_epsilon`` is one query of the route planner
(:func:`accounting.epsilon_routes`: the analytic Gaussian, optimal composition, the certified PLD,
the RDP curves, ..., the tightest that fits ``time_budget``). ``get_delta`` is one query of the same planner
the other way round (:func:`accounting._routes.delta_routes`: the smallest certified delta(eps) of
the analytic Gaussian, the composed PLD and the RDP curves converted by CKS, under the same cost
guard and ``time_budget``). Supported, mirroring dp_accounting's own relations: under ADD_OR_REMOVE_ONE the
Gaussian, Laplace and discrete Laplace events, Poisson sampling of those, compositions, no-ops and
non-private events; under REPLACE_ONE randomized response, sampling without replacement (of a
Gaussian), compositions, no-ops and non-private events.

dp_accounting is not a dependency of the library: its base class is imported when the class is
first asked for (``accounting.CertifiedAccountant``), and a missing package is reported with the
extra that installs it.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["certified_accountant_class"]

#: the extra that installs dp_accounting
EXTRA = "pip install 'dpverify[dp-accounting]'"

_CLASS: list = []


def certified_accountant_class() -> type:
    """The ``CertifiedAccountant`` class (built once, on first use, on dp_accounting's base)."""
    if _CLASS:
        return _CLASS[0]
    try:
        from dp_accounting import dp_event
        from dp_accounting import privacy_accountant as pa
    except ImportError as error:
        raise ImportError(f"accounting.CertifiedAccountant implements dp_accounting's PrivacyAccountant and needs that package: {EXTRA}") from error
    _CLASS.append(_build(dp_event, pa))
    return _CLASS[0]


def _build(dp_event: Any, pa: Any) -> type:
    from ._dp_event import Composition, NonPrivate, _translate
    from ._planner import DEFAULT_TIME_BUDGET
    from ._routes import epsilon_routes, query_of
    from ._validation import AccountingError, check_nonnegative, check_positive

    relation = pa.NeighboringRelation
    add_remove = {"GaussianDpEvent", "LaplaceDpEvent", "DiscreteLaplaceDpEvent", "PoissonSampledDpEvent"}
    replace = {"RandomizedResponseDpEvent", "SampledWithoutReplacementDpEvent"}

    class CertifiedAccountant(pa.PrivacyAccountant):
        """dp_accounting's ``PrivacyAccountant`` answered by the certified route planner
        (module :mod:`accounting._dp_accounting_compat`). ``time_budget``: seconds on one core
        each ``get_epsilon`` or ``get_delta`` may spend (both go through the route planner's
        cost guard)."""

        def __init__(self, neighboring_relation=relation.ADD_OR_REMOVE_ONE, *, time_budget: float = DEFAULT_TIME_BUDGET) -> None:
            super().__init__(neighboring_relation)
            check_positive("time_budget", time_budget, allow_inf=True)
            self._time_budget = float(time_budget)
            self._parts: list[tuple[Any, int]] = []
            self._non_private = False

        def _unsupported(self, event: Any, message: str):
            return pa.PrivacyAccountant.CompositionErrorDetails(invalid_event=event, error_message=message)

        def _check(self, event: Any):
            name = type(event).__name__
            if isinstance(event, (dp_event.NoOpDpEvent, dp_event.NonPrivateDpEvent)):
                return None
            if isinstance(event, dp_event.SelfComposedDpEvent):
                return self._check(event.event)
            if isinstance(event, dp_event.ComposedDpEvent):
                for sub in event.events:
                    error = self._check(sub)
                    if error is not None:
                        return error
                return None
            if name in add_remove:
                if self.neighboring_relation != relation.ADD_OR_REMOVE_ONE:
                    return self._unsupported(event, f"neighboring_relation must be ADD_OR_REMOVE_ONE for {name}")
                if isinstance(event, dp_event.PoissonSampledDpEvent):
                    inner = event.event
                    if not isinstance(inner, (dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent, dp_event.DiscreteLaplaceDpEvent, dp_event.NoOpDpEvent,
                                              dp_event.NonPrivateDpEvent)):
                        return self._unsupported(event, f"Poisson sampling of {type(inner).__name__} is not supported")
                return None
            if name in replace:
                if self.neighboring_relation != relation.REPLACE_ONE:
                    return self._unsupported(event, f"neighboring_relation must be REPLACE_ONE for {name}")
                if isinstance(event, dp_event.SampledWithoutReplacementDpEvent) and not isinstance(event.event, dp_event.GaussianDpEvent):
                    return self._unsupported(event, "sampling without replacement is supported of a GaussianDpEvent")
                return None
            return self._unsupported(event, f"{name} is not supported by the certified accountant")

        def _maybe_compose(self, event: Any, count: int, do_compose: bool):
            error = self._check(event)
            if error is not None:
                return error
            try:
                mechanism = _translate(event)  # None: a tree of no-ops, which costs nothing
            except AccountingError as invalid:
                # never dropped (that would under-report epsilon): supports() answers False and
                # compose raises UnsupportedEventError with the message naming the parameter
                return self._unsupported(event, str(invalid))
            if not do_compose or count == 0 or mechanism is None:
                return None
            if isinstance(mechanism, NonPrivate):
                self._non_private = True
            else:
                self._parts.append((mechanism, count))
            return None

        def _subject(self):
            return Composition(tuple(self._parts))

        def get_epsilon(self, target_delta: float) -> float:
            """A certified upper bound of epsilon at ``target_delta`` for everything composed."""
            query_of(NonPrivate(), target_delta)  # validates target_delta, as every query does
            if self._non_private:
                return math.inf
            if not self._parts:
                return 0.0
            return epsilon_routes(self._subject(), target_delta, comparisons=False, time_budget=self._time_budget).epsilon

        def get_delta(self, target_epsilon: float) -> float:
            """A certified upper bound of delta at ``target_epsilon`` (the smallest of the PLD, the
            analytic Gaussian and the RDP curves' CKS conversion, where each applies)."""
            check_nonnegative("target_epsilon", target_epsilon)
            if self._non_private:
                return 1.0
            if not self._parts:
                return 0.0
            return certified_delta(self._subject(), float(target_epsilon), self._time_budget)

    CertifiedAccountant.__module__ = "accounting"
    return CertifiedAccountant


def certified_delta(subject: Any, epsilon: float, time_budget: float | None = None) -> float:
    """The smallest certified delta(epsilon) of ``subject`` over the routes that give one (the
    analytic Gaussian, the composed PLD, the RDP curves by CKS), chosen and run by the route
    planner under ``time_budget`` (:func:`accounting._routes.delta_routes`): the PLD's cost is
    estimated before it is built, so a composition too large for the budget is coarsened or
    skipped with its reason (another route answers), or refused naming the time budget that
    would run it, as :meth:`get_epsilon` does; never started and left running."""
    from ._planner import DEFAULT_TIME_BUDGET
    from ._routes import delta_routes

    budget = DEFAULT_TIME_BUDGET if time_budget is None else time_budget
    return min(1.0, delta_routes(subject, epsilon, time_budget=budget).delta)
