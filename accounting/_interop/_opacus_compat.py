"""Opacus's accountant interface with certified numbers: DP-SGD accounting through the route planner.

Opacus trains with DP-SGD: each optimizer step releases a Gaussian-noised sum of clipped gradients
of a Poisson sample (each record kept with ``sample_rate`` q, noise standard deviation
``noise_multiplier`` times the clipping norm). Its accountants (``opacus.accountants``: RDP, GDP,
PRV) record the steps as ``history``, a list of ``(noise_multiplier, sample_rate, num_steps)`` with
consecutive equal steps merged, and answer ``get_epsilon(delta)``. :class:`CertifiedOpacusAccountant`
offers the same interface (``step``, ``get_epsilon``, ``history``, ``__len__``, ``mechanism``,
``get_optimizer_hook_fn``, ``state_dict``, ``load_state_dict``) and answers every query with the
route planner (:func:`accounting.epsilon_routes`): one step is ``PoissonSampled(Gaussian(sigma), q)``
(``Gaussian(sigma)`` when q = 1, which the exact analytic-Gaussian route answers), the history is
one heterogeneous composition, and the value returned is a certified upper bound of epsilon.
:func:`get_noise_multiplier` is Opacus's calibration function with the same keyword arguments,
searching through :func:`accounting.calibrate`: the sigma it returns has itself been certified
to meet the target.

Code written for Opacus changes one line (the import), or registers the class for
``PrivacyEngine(accountant=...)`` (README, "Opacus users"). Neither Opacus nor torch is needed:
the class only duck-types Opacus's ``IAccountant`` (Opacus's ``PrivacyEngine`` calls it through
that interface and never checks the base class).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from copy import deepcopy
from typing import Any, Callable, Optional

from .._core._planner import DEFAULT_TIME_BUDGET
from .._core._validation import AccountingError, check_positive

__all__ = ["CertifiedOpacusAccountant", "get_noise_multiplier", "MECHANISM"]

#: the name under which the accountant registers with Opacus (``state_dict()["mechanism"]``)
MECHANISM = "certified"

#: keyword arguments of Opacus's accountants' ``get_epsilon`` that tune their own estimators
#: (PRV's error targets, RDP's orders); accepted and not needed: the planner's answer is certified
_OPACUS_ESTIMATOR_OPTIONS = frozenset({"eps_error", "delta_error", "alphas", "poisson"})

#: Opacus's largest noise multiplier before it declares a budget unreachable
MAX_SIGMA = 1e6


def _check_step(noise_multiplier: Any, sample_rate: Any, num_steps: Any = 1) -> tuple[float, float, int]:
    if isinstance(noise_multiplier, bool) or not isinstance(noise_multiplier, (int, float)) or not (0 <= noise_multiplier < math.inf):
        raise AccountingError("noise_multiplier", noise_multiplier, "a finite number >= 0")
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, float)) or not (0 <= sample_rate <= 1):
        raise AccountingError("sample_rate", sample_rate, "a number in [0, 1]")
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 0:
        raise AccountingError("num_steps", num_steps, "an integer >= 0")
    return noise_multiplier, sample_rate, num_steps


def dp_sgd_step(noise_multiplier: float, sample_rate: float) -> Any:
    """One DP-SGD step as an accounting mechanism: the Gaussian with standard deviation
    ``noise_multiplier`` (sensitivity 1) on a Poisson sample of rate ``sample_rate``; the bare
    Gaussian when every record is used (rate 1). None for a step that costs nothing (rate 0)."""
    from .._mechanisms import Gaussian
    from .._amplification._subsampling import PoissonSampled

    _check_step(noise_multiplier, sample_rate)
    if sample_rate == 0:
        return None
    if noise_multiplier == 0:
        raise AccountingError("noise_multiplier", noise_multiplier, "a number > 0 for a step that samples records (sample_rate > 0)")
    gaussian = Gaussian(float(noise_multiplier))
    return gaussian if sample_rate == 1 else PoissonSampled(gaussian, float(sample_rate))


class CertifiedOpacusAccountant:
    """Opacus's accountant interface (``opacus.accountants.IAccountant``) answered by the certified
    route planner (module :mod:`accounting._interop._opacus_compat`). ``time_budget``: seconds on one core
    each ``get_epsilon`` may spend (the planner's cost guard)."""

    def __init__(self, *, time_budget: float = DEFAULT_TIME_BUDGET) -> None:
        check_positive("time_budget", time_budget, allow_inf=True)
        self.time_budget = float(time_budget)
        #: (noise_multiplier, sample_rate, num_steps), consecutive equal steps merged, as Opacus keeps it
        self.history: list = []

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimisation step (merged into the last entry when it repeats it)."""
        _check_step(noise_multiplier, sample_rate)
        if self.history:
            last_sigma, last_rate, count = self.history[-1]
            if last_sigma == noise_multiplier and last_rate == sample_rate:
                self.history[-1] = (last_sigma, last_rate, count + 1)
                return
        self.history.append((noise_multiplier, sample_rate, 1))

    def __len__(self) -> int:
        """As Opacus's accountants: the number of history entries (runs of equal steps)."""
        return len(self.history)

    @classmethod
    def mechanism(cls) -> str:
        return MECHANISM

    def releases(self) -> list:
        """The history as the planner's query: a list of (mechanism, count), or [] if nothing costs."""
        from .._events._dp_event import Composition

        parts = []
        for index, entry in enumerate(self.history):
            if not isinstance(entry, (tuple, list)) or len(entry) != 3:
                raise AccountingError(f"history[{index}]", entry, "a (noise_multiplier, sample_rate, num_steps) tuple")
            sigma, rate, count = _check_step(*entry)
            if count == 0:
                continue
            release = dp_sgd_step(sigma, rate)
            if release is not None:
                parts.append((release, count))
        return [Composition(tuple(parts))] if parts else []

    def get_epsilon(self, delta: float, **kwargs: Any) -> float:
        """A certified upper bound of epsilon at ``delta`` for every recorded step (0 before any).

        Opacus's estimator options (``eps_error``, ``delta_error``, ``alphas``) are accepted and
        not needed; ``time_budget`` overrides the accountant's for this query."""
        from .._routing._routes import epsilon_routes, query_of

        unknown = set(kwargs) - _OPACUS_ESTIMATOR_OPTIONS - {"time_budget"}
        if unknown:
            raise TypeError(f"get_epsilon() got unexpected keyword arguments {sorted(unknown)}")
        budget = kwargs.get("time_budget", self.time_budget)
        releases = self.releases()
        if not releases:
            query_of(dp_sgd_step(1.0, 1.0), delta)  # validates delta as every query does
            return 0.0
        return epsilon_routes(releases, delta, comparisons=False, time_budget=budget).epsilon

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The callback Opacus attaches to its ``DPOptimizer``: one step per optimizer step, at the
        optimizer's noise multiplier and ``sample_rate`` times its accumulated iterations."""
        _check_step(1.0, sample_rate)

        def hook_fn(optim: Any) -> None:
            self.step(noise_multiplier=optim.noise_multiplier, sample_rate=sample_rate * optim.accumulated_iterations)

        return hook_fn

    def state_dict(self, destination: Optional[dict] = None) -> dict:
        """The history and the mechanism's name, as Opacus saves an accountant in a checkpoint."""
        if destination is None:
            destination = OrderedDict()
        destination["history"] = deepcopy(self.history)
        destination["mechanism"] = self.mechanism()
        return destination

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict`` of this mechanism (another accountant's is refused: its
        history would be read with another analysis)."""
        if not state_dict:
            raise AccountingError("state_dict", state_dict, "a non-empty mapping with 'history' and 'mechanism'")
        for key in ("history", "mechanism"):
            if key not in state_dict:
                raise AccountingError("state_dict", dict(state_dict), f"a mapping with the key {key!r}")
        if state_dict["mechanism"] != self.mechanism():
            raise AccountingError("state_dict['mechanism']", state_dict["mechanism"], f"{self.mechanism()!r} (this accountant's mechanism)")
        history = list(state_dict["history"])
        for index, entry in enumerate(history):
            if not isinstance(entry, (tuple, list)) or len(entry) != 3:
                raise AccountingError(f"history[{index}]", entry, "a (noise_multiplier, sample_rate, num_steps) tuple")
            _check_step(*entry)
        self.history = history


def get_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    epochs: Optional[int] = None,
    steps: Optional[int] = None,
    accountant: str = MECHANISM,
    epsilon_tolerance: float = 0.01,
    relative_tolerance: float = 1e-3,
    time_budget: float = DEFAULT_TIME_BUDGET,
    **kwargs: Any,
) -> float:
    """The least noise multiplier (within ``relative_tolerance``) whose certified epsilon at
    ``target_delta`` after ``steps`` DP-SGD steps (or ``epochs / sample_rate`` of them, as Opacus
    counts) is at most ``target_epsilon``: Opacus's ``get_noise_multiplier`` signature, searched by
    :func:`accounting.calibrate`, whose answer has been certified itself.

    ``accountant`` names Opacus's analysis ("rdp", "gdp", "prv") or "certified"; every name is
    answered by the certified planner (a certified bound is valid for whichever was asked).
    ``epsilon_tolerance`` (Opacus's stopping rule on epsilon) is accepted; the search stops on
    sigma's ``relative_tolerance`` instead, and the answer never exceeds the target."""
    from .._routing._calibration import calibrate

    if accountant not in ("rdp", "gdp", "prv", MECHANISM):
        raise AccountingError("accountant", accountant, f"one of 'rdp', 'gdp', 'prv', {MECHANISM!r}")
    unknown = set(kwargs) - _OPACUS_ESTIMATOR_OPTIONS
    if unknown:
        raise TypeError(f"get_noise_multiplier() got unexpected keyword arguments {sorted(unknown)}")
    if (steps is None) == (epochs is None):
        raise ValueError("get_noise_multiplier takes as input EITHER a number of steps or a number of epochs")
    check_positive("target_epsilon", target_epsilon)
    check_positive("epsilon_tolerance", epsilon_tolerance)
    _check_step(1.0, sample_rate)
    if sample_rate == 0:
        raise AccountingError("sample_rate", sample_rate, "a number in (0, 1] (a rate of 0 trains on nothing)")
    if steps is None:
        check_positive("epochs", epochs)
        steps = int(epochs / sample_rate)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise AccountingError("steps", steps, "an integer >= 1")
    try:
        result = calibrate(lambda sigma: dp_sgd_step(sigma, sample_rate), target_epsilon, target_delta, compose=steps, lower=1e-2,
                           upper=MAX_SIGMA, relative_tolerance=relative_tolerance, time_budget=time_budget)
    except AccountingError as error:
        if error.name == "upper":  # Opacus's "The privacy budget is too low.", naming the parameter
            raise AccountingError("target_epsilon", target_epsilon, f"a budget some noise multiplier <= {MAX_SIGMA:g} meets",
                                  str(error)) from error
        raise
    return result.parameter
