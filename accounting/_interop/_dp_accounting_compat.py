"""A drop-in for dp_accounting's accountants: its ``PrivacyAccountant`` contract, certified numbers.

Code written for dp_accounting (``acct = PLDAccountant(); acct.compose(event, n);
acct.get_epsilon(delta)``) gets certified upper bounds by changing one line::

    from accounting import CertifiedAccountant as PLDAccountant

The class implements dp_accounting's abstract ``PrivacyAccountant`` (``compose``, ``supports``,
``get_epsilon``, ``get_delta``, ``ledger``): events are translated by
:func:`accounting.from_dp_event` and every ``get_epsilon`` is one query of the route planner
(:func:`accounting.epsilon_routes`: the analytic Gaussian, optimal composition, the certified PLD,
the RDP curves, ..., the tightest that fits ``time_budget``). ``get_delta`` is one query of the same planner
the other way round (:func:`accounting._routing._routes.delta_routes`: the smallest certified delta(eps) of
the analytic Gaussian, the composed PLD and the RDP curves converted by CKS, under the same cost
guard and ``time_budget``).

The contract, as dp_accounting's own tests state it (``tests/test_dp_accounting_suite.py`` runs
them against this class): the constructor takes ``PLDAccountant``'s arguments; delta 0 answers the
certified pure-DP epsilon (inf if there is none), delta >= 1 answers 0, epsilon inf answers delta
0; nothing composed answers 0, a non-private event inf / 1; ``compose(event, count < 1)`` and an
event parameter out of range are ValueErrors naming the parameter; unsupported events raise
``UnsupportedEventError`` naming the innermost culprit. Neighbouring relations as dp_accounting's
PLD accountant: ADD_OR_REMOVE_ONE and REPLACE_SPECIAL read the Gaussian family with sensitivity 1,
REPLACE_ONE with sensitivity 2 (Gaussian, and Poisson-sampled Gaussians through dp_accounting's
replace pair); Laplace, discrete Laplace and mixtures of Gaussians are refused under REPLACE_ONE,
randomized response under ADD_OR_REMOVE_ONE, tree aggregation outside REPLACE_SPECIAL and
sampling without replacement outside REPLACE_ONE, with dp_accounting's messages. Events:
:mod:`accounting._events._dp_event` (all of dp_accounting 0.6.0's; sampling with replacement of Gaussian
subevents only, and not by the RDP flavour, as dp_accounting's RdpAccountant).

``CertifiedRdpAccountant(orders=None, neighboring_relation=..., *, real_orders=True)`` is the
RdpAccountant flavour: ``_rdp``/``rdp`` are certified RDP upper bounds at ``orders`` (computed when
read) and ``get_epsilon_and_optimal_order`` converts at those orders and, unless
``real_orders=False``, over real orders (the certified optimiser), the smallest certified value
with its order; it refuses what dp_accounting's RdpAccountant refuses (Poisson sampling under
REPLACE_ONE).

dp_accounting is not a dependency of the library: its base class is imported when the class is
first asked for (``accounting.CertifiedAccountant``), and a missing package is reported with the
extra that installs it.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["certified_accountant_class", "certified_rdp_accountant_class"]

#: the extra that installs dp_accounting
EXTRA = "pip install 'dpverify[dp-accounting]'"

_CLASS: list = []
_RDP_CLASS: list = []

#: given orders the RDP flavour certifies per query: the best few by the curve's float approximation
_REFINED_ORDERS = 3


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


_ADD_OR_SPECIAL = "neighboring_relation must be `ADD_OR_REMOVE_ONE` or `REPLACE_SPECIAL` for `{}`. Found {}."
_REPLACE_OR_SPECIAL = "neighboring_relation must be `REPLACE_ONE` or `REPLACE_SPECIAL` for `{}`. Found {}."


def _relation_error(event: Any, relation: Any, flavour: str) -> str | None:
    """dp_accounting's refusal for ``event`` under ``relation`` (its message), or None.

    ``flavour`` "pld" mirrors its PLDAccountant, "rdp" its RdpAccountant: Laplace, discrete
    Laplace, mixtures of Gaussians and Poisson sampling of a Laplace are add/remove events (PLD);
    Poisson sampling is refused under REPLACE_ONE by the RDP accountant only (the PLD accountant
    takes a Poisson-sampled Gaussian there); sampling without replacement needs REPLACE_ONE and tree
    aggregation REPLACE_SPECIAL; randomized response is a replace event for both; sampling with
    replacement is refused by the RDP flavour (as by dp_accounting's RdpAccountant, whose suite
    asserts it) and taken by the PLD flavour for Gaussian and Laplace subevents (dp_accounting refuses it
    everywhere: ours is the only certified route)."""
    name = type(event).__name__
    rel = relation.name
    if name == "RandomizedResponseDpEvent" and rel == "ADD_OR_REMOVE_ONE":
        return _REPLACE_OR_SPECIAL.format(name, relation)
    if rel == "REPLACE_ONE":
        if name in ("LaplaceDpEvent", "DiscreteLaplaceDpEvent", "MixtureOfGaussiansDpEvent") and flavour == "pld":
            return _ADD_OR_SPECIAL.format(name, relation)
        if name == "PoissonSampledDpEvent":
            from .._events._dp_event import _gaussian_inverse_variance

            try:
                gaussian_tree = _gaussian_inverse_variance(event.event) is not None
            except ValueError:
                gaussian_tree = False
            if flavour == "rdp" or not gaussian_tree:
                return _ADD_OR_SPECIAL.format(name, relation)
    if name == "SampledWithReplacementDpEvent":
        if flavour == "rdp":  # as dp_accounting's RdpAccountant (its suite asserts the refusal)
            return f"Unsupported event: `{name}` is not supported by the RDP accountant (dp_accounting's RdpAccountant refuses it too)."
        from .._events._dp_event import _gaussian_inverse_variance

        try:
            gaussian_tree = _gaussian_inverse_variance(event.event) is not None
        except ValueError:
            gaussian_tree = False
        if not gaussian_tree and type(event.event).__name__ not in ("NoOpDpEvent", "NonPrivateDpEvent", "LaplaceDpEvent"):
            return f"Subevent of `{name}` must be a `GaussianDpEvent`, a composition of them or a `LaplaceDpEvent`. Found {event.event}."
    if name == "SampledWithoutReplacementDpEvent" and rel != "REPLACE_ONE":
        return f"neighboring_relation must be `REPLACE_ONE` for `{name}`. Found {relation}."
    if name == "SingleEpochTreeAggregationDpEvent" and rel != "REPLACE_SPECIAL":
        return f"neighboring_relation must be `REPLACE_SPECIAL` for `{name}`. Found {relation}."
    return None


def _build(dp_event: Any, pa: Any) -> type:
    from .._events._dp_event import Composition, NonPrivate, _translate
    from .._core._planner import DEFAULT_TIME_BUDGET
    from .._routing._routes import epsilon_routes
    from .._core._validation import AccountingError, check_positive

    relation = pa.NeighboringRelation
    #: events answered (translated to a mechanism with certified routes); the rest are refused
    known = {"GaussianDpEvent", "LaplaceDpEvent", "DiscreteLaplaceDpEvent", "PoissonSampledDpEvent", "RandomizedResponseDpEvent",
             "SampledWithoutReplacementDpEvent", "ZCDpEvent", "SingleEpochTreeAggregationDpEvent", "MixtureOfGaussiansDpEvent",
             "TruncatedSubsampledGaussianDpEvent", "SampledWithReplacementDpEvent"}
    nested = {"RepeatAndSelectDpEvent"}

    class CertifiedAccountant(pa.PrivacyAccountant):
        """dp_accounting's ``PrivacyAccountant`` answered by the certified route planner
        (module :mod:`accounting._interop._dp_accounting_compat`). Takes the arguments of dp_accounting's
        ``PLDAccountant`` (``neighboring_relation``, ``value_discretization_interval``: accepted and
        unused, our PLD chooses its own certified grid) plus ``time_budget``: seconds on one core
        each ``get_epsilon`` or ``get_delta`` may spend (both go through the route planner's cost
        guard)."""

        _flavour = "pld"

        def __init__(self, neighboring_relation=relation.ADD_OR_REMOVE_ONE, value_discretization_interval: float = 1e-4, *,
                      time_budget: float = DEFAULT_TIME_BUDGET) -> None:
            if not isinstance(neighboring_relation, relation):
                raise AccountingError("neighboring_relation", neighboring_relation, "a dp_accounting NeighboringRelation")
            super().__init__(neighboring_relation)
            check_positive("value_discretization_interval", value_discretization_interval)
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
            if name in nested:
                return self._check(event.event)
            if name not in known:
                return self._unsupported(event, f"Unsupported event: {name} is not supported by the certified accountant.")
            message = _relation_error(event, self.neighboring_relation, self._flavour)
            if message is not None:
                return self._unsupported(event, message)
            return None

        def compose(self, event: Any, count: int = 1):
            """dp_accounting's ``compose``: ``count`` >= 1 (ValueError otherwise, as its PLD accountant)."""
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise AccountingError("count", count, "an integer >= 1 (how many times the event is composed)")
            if isinstance(event, dp_event.DpEvent) and self._check(event) is None:
                # a parameter out of range is a ValueError naming it (dp_accounting raises one),
                # before the ledger records the event; supports() answers False for it
                _translate(event, self.neighboring_relation.name.lower())
            return super().compose(event, count)

        def _maybe_compose(self, event: Any, count: int, do_compose: bool):
            error = self._check(event)
            if error is not None:
                return error
            try:
                mechanism = _translate(event, self.neighboring_relation.name.lower())  # None: no privacy cost
            except AccountingError as invalid:
                if do_compose:  # a parameter out of range: ValueError naming it, as dp_accounting raises
                    raise
                # never dropped (that would under-report epsilon): supports() answers False and
                # compose raises UnsupportedEventError with the message naming the parameter
                return self._unsupported(event, str(invalid))
            except ZeroDivisionError as invalid:  # pragma: no cover - a parameter the translation missed
                return self._unsupported(event, f"invalid parameter: {invalid}")
            if not do_compose or count == 0 or mechanism is None:
                return None
            if isinstance(mechanism, NonPrivate):
                self._non_private = True
            else:
                self._parts.append((mechanism, count))
            return None

        def _subject(self):
            return Composition(tuple(self._parts))

        def _edge_epsilon(self, target_delta: float) -> float | None:
            """The contract's answers that need no route: inf for a non-private release, 0 with no
            release or at delta >= 1, and the certified pure-DP epsilon (or inf) at delta 0."""
            _check_delta(target_delta)
            if self._non_private:
                return math.inf
            if not self._parts or target_delta >= 1:
                return 0.0
            if target_delta == 0:
                pure = self._subject().pure()
                return math.inf if pure is None else float(pure.epsilon)
            return None

        def _edge_delta(self, target_epsilon: float) -> float | None:
            _check_epsilon(target_epsilon)
            if self._non_private:
                return 1.0
            if not self._parts or target_epsilon == math.inf:
                return 0.0
            return None

        def get_epsilon(self, target_delta: float) -> float:
            """A certified upper bound of epsilon at ``target_delta`` for everything composed."""
            edge = self._edge_epsilon(target_delta)
            if edge is not None:
                return edge
            return epsilon_routes(self._subject(), target_delta, comparisons=False, time_budget=self._time_budget).epsilon

        def get_delta(self, target_epsilon: float) -> float:
            """A certified upper bound of delta at ``target_epsilon`` (the smallest of the PLD, the
            analytic Gaussian and the RDP curves' CKS conversion, where each applies)."""
            edge = self._edge_delta(target_epsilon)
            if edge is not None:
                return edge
            return certified_delta(self._subject(), float(target_epsilon), self._time_budget)

    CertifiedAccountant.__module__ = "accounting"
    return CertifiedAccountant


def _build_rdp(base: type, pa: Any) -> type:
    import numpy as np

    from .._core._certified import exact, upper_float, working_precision
    from .._core._conversions import _delta_at, _epsilon_at, rdp_to_delta, rdp_to_epsilon
    from .._core._validation import AccountingError

    relation = pa.NeighboringRelation
    try:
        from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS
    except ImportError:  # pragma: no cover - the same package provides the base class
        DEFAULT_RDP_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024]

    class CertifiedRdpAccountant(base):
        """dp_accounting's ``RdpAccountant`` contract answered by certified RDP curves
        (module :mod:`accounting._interop._dp_accounting_compat`): ``CertifiedRdpAccountant(orders=None,
        neighboring_relation=ADD_OR_REMOVE_ONE)``. ``_rdp`` / ``rdp`` hold certified upper bounds of
        the composed Renyi divergence at each order in ``orders`` (order 1 and below: the value
        just above 1, an upper bound since D_alpha is nondecreasing in alpha; order inf: the
        certified pure-DP epsilon, else inf). ``get_epsilon_and_optimal_order`` converts by CKS
        (Canonne, Kamath & Steinke 2020) at the given orders *and* over real orders (the certified
        optimiser of :func:`accounting.rdp_to_epsilon`) and returns the smallest certified value
        with its order; ``get_delta_and_optimal_order`` likewise. Never a float estimate: the
        curve's float approximation only ranks the given orders, and the best few are certified.

        Real orders are the default (issue 31: "certified, over real orders too"): every order
        gives a valid bound, so the smallest over more orders is still certified and never larger
        -- 100 Laplace releases of eps 1 at delta 1e-10 answer 83.15 at order 2.2 where
        dp_accounting's orders ``[1, 1+1e-6, 1.1+-1e-6, 1e10]`` give 100. ``real_orders=False``
        converts at the given orders only, as dp_accounting's RdpAccountant does, for code that
        expects the optimal order to be one of ``orders`` (e.g. indexes ``rdp`` by it)."""

        _flavour = "rdp"

        def __init__(self, orders=None, neighboring_relation=relation.ADD_OR_REMOVE_ONE, *, real_orders: bool = True,
                     time_budget: float | None = None) -> None:
            kwargs = {} if time_budget is None else {"time_budget": time_budget}
            super().__init__(neighboring_relation, **kwargs)
            if not isinstance(real_orders, bool):
                raise AccountingError("real_orders", real_orders, "True (convert over real orders too) or False (at the given orders only)")
            self._real_orders = real_orders
            values = DEFAULT_RDP_ORDERS if orders is None else orders
            array = np.array(values, dtype=float).reshape(-1)
            if array.size == 0 or np.isnan(array).any() or (array <= 0).any():
                raise AccountingError("orders", values, "a non-empty sequence of Renyi orders > 0")
            self._orders = array
            #: (composed state, curve, pure, curve at the given orders), rebuilt when the state changes
            self._curve_cache: tuple | None = None
            #: orders that answered an epsilon query (candidates of later delta queries)
            self._answered_orders: set[float] = set()

        def _curve(self):
            # one pair of curves per composed state: their evaluations are cached across queries
            key = tuple(self._parts)
            cached = self._curve_cache
            if cached is None or cached[0] != key:
                subject = self._subject()
                plain, fine = _curves(subject)
                cached = (key, plain, subject.pure(), fine)
                self._curve_cache = cached
            return cached[1]

        def _order_curve(self):
            """The curve at the given orders: Poisson-subsampled Gaussians at non-integer orders by
            certified integration (:func:`_curves`; at most :meth:`_curve` everywhere); the
            real-order searches use :meth:`_curve`."""
            self._curve()
            return self._curve_cache[3]

        def _pure(self):
            self._curve()
            return self._curve_cache[2]

        @staticmethod
        def _at(curve, alpha: float) -> float:
            if alpha <= 1:
                alpha = 1 + 2.0 ** -30  # D_alpha is nondecreasing: the value above 1 bounds it
            try:
                value = curve(alpha)
            except (AccountingError, ZeroDivisionError, OverflowError):
                return math.inf
            return value if math.isfinite(value) else math.inf

        @property
        def _rdp(self) -> "np.ndarray":
            if self._non_private:
                return np.full(self._orders.shape, np.inf)
            if not self._parts:
                return np.zeros(self._orders.shape)
            curve = self._order_curve()
            pure = self._pure()
            out = []
            for alpha in self._orders:
                if alpha == math.inf:
                    out.append(math.inf if pure is None else float(pure.epsilon))
                else:
                    out.append(self._at(curve, float(alpha)))
            return np.array(out)

        @property
        def rdp(self) -> "np.ndarray":
            """Certified upper bounds of the composed RDP at each of ``orders``."""
            return np.copy(self._rdp)

        @property
        def orders(self) -> "np.ndarray":
            return np.copy(self._orders)

        def get_epsilon_and_optimal_order(self, target_delta: float):
            """(certified epsilon at ``target_delta``, the order that gives it) -- None as the order
            where no order is involved (nothing composed, delta >= 1, a non-private release)."""
            edge = self._edge_epsilon(target_delta)
            if edge is not None and (self._non_private or not self._parts or target_delta >= 1 or not math.isfinite(edge)):
                return edge, None
            candidates: list[tuple[float, float]] = []
            pure = self._pure()
            if pure is not None:
                candidates.append((float(pure.epsilon), math.inf))
            if target_delta > 0:
                curve = self._curve()
                at_orders = self._order_curve()
                log_inv_float = -math.log(target_delta)

                def float_epsilon(alphas, values):  # CKS in floats (ranking only)
                    return values + (log_inv_float - np.log(alphas)) / (alphas - 1) + np.log1p(-1 / alphas)

                with working_precision(None):
                    log_inv = (1 / exact(target_delta)).log()
                    # the given orders ranked by the curve's float approximation; the best few
                    # certified on the integrated curve (at most the chord everywhere)
                    ranked, wanted = _ranked(at_orders, [float(a) for a in self._orders if 1 < a < math.inf], float_epsilon)
                    certified = 0
                    for alpha in ranked:
                        if certified == wanted:
                            break
                        try:
                            value = upper_float(_epsilon_at(at_orders, exact(alpha), log_inv, "cks"))
                        except (AccountingError, ZeroDivisionError, OverflowError):
                            continue
                        if math.isfinite(value):
                            candidates.append((max(value, 0.0), alpha))
                            certified += 1
                if self._real_orders:
                    try:
                        real = rdp_to_epsilon(curve, target_delta)
                        if math.isfinite(real.epsilon):
                            candidates.append((max(real.epsilon, 0.0), real.alpha))
                    except (AccountingError, ZeroDivisionError, OverflowError):
                        pass
            if not candidates:
                return math.inf, None
            best = min(candidates, key=lambda c: c[0])
            if best[1] is not None and math.isfinite(best[1]):
                # the order that answered is a candidate of later delta queries (any order is
                # valid): get_delta(get_epsilon(delta)) then gives back at most delta
                self._answered_orders.add(float(best[1]))
            return best

        def get_epsilon(self, target_delta: float) -> float:
            return self.get_epsilon_and_optimal_order(target_delta)[0]

        def get_delta_and_optimal_order(self, target_epsilon: float):
            """(certified delta at ``target_epsilon``, the order that gives it)."""
            edge = self._edge_delta(target_epsilon)
            if edge is not None:
                return edge, None
            candidates: list[tuple[float, float]] = [(1.0, None)]
            pure = self._pure()
            if pure is not None and float(pure.epsilon) <= target_epsilon:
                candidates.append((0.0, math.inf))
            curve = self._curve()
            at_orders = self._order_curve()
            given = {float(a) for a in self._orders if 1 < a < math.inf}
            alphas = sorted(given | self._answered_orders)
            if target_epsilon == 0 and self._real_orders:  # (the real-order optimiser needs eps > 0): a grid of real orders
                alphas += [1 + 2.0 ** k for k in range(-10, 14)]
            eps_float = float(target_epsilon)

            def float_log_delta(a, values):  # log of CKS's delta in floats (ranking only)
                return (a - 1) * (values - eps_float) + (a - 1) * np.log1p(-1 / a) - np.log(a)

            with working_precision(None):
                eps_ball = exact(eps_float)

                def at(alpha):
                    # the curve the epsilon queries use there: integrated at the given orders,
                    # the real-order curve elsewhere (so an answered order gives back its delta)
                    which = at_orders if alpha in given else curve
                    try:
                        value = upper_float(_delta_at(which, exact(alpha), eps_ball))
                    except (AccountingError, ZeroDivisionError, OverflowError):
                        return None
                    return min(value, 1.0) if math.isfinite(value) else None

                # the orders that answered an epsilon query always (get_delta(get_epsilon(d)) <= d),
                # and the best few of the rest by the float approximation
                ranked, wanted = _ranked(_Pieced(at_orders, curve, given), alphas, float_log_delta)
                chosen = sorted(self._answered_orders) + [a for a in ranked if a not in self._answered_orders][:wanted]
                for alpha in chosen:
                    value = at(alpha)
                    if value is not None:
                        candidates.append((value, alpha))
            if target_epsilon > 0 and self._real_orders:
                try:
                    real = rdp_to_delta(curve, float(target_epsilon))
                    candidates.append((min(real.delta, 1.0), real.alpha))
                except (AccountingError, ZeroDivisionError, OverflowError):
                    pass
            return min(candidates, key=lambda c: c[0])

        def get_delta(self, target_epsilon: float) -> float:
            return self.get_delta_and_optimal_order(target_epsilon)[0]

    CertifiedRdpAccountant.__module__ = "accounting"
    return CertifiedRdpAccountant


def _curves(subject: Any) -> tuple:
    """(``subject.rdp()``, the same curve with every Poisson-subsampled Gaussian evaluated at
    non-integer orders by certified integration), the second built over the first's parts (each
    subsampled Gaussian's chord curve once). dp_accounting's RdpAccountant uses MTZ's
    fractional-order formula at those orders; the chord between integer orders alone is looser.
    (None, None) when the subject has no RDP curve."""
    from .._events._dp_event import Composition
    from .._events._dp_event_mechanisms import FractionalOrderSampledGaussian
    from .._core._guarantees import RDP
    from .._mechanisms import Gaussian
    from .._amplification._subsampling import PoissonSampled

    if isinstance(subject, Composition):
        pairs = [_curves(m) for m, _ in subject.parts]
        if any(plain is None for plain, _ in pairs):
            return None, None
        counts = [n for _, n in subject.parts]
        return RDP.sequence([plain for plain, _ in pairs], counts), RDP.sequence([fine for _, fine in pairs], counts)
    curve = subject.rdp()
    if curve is not None and isinstance(subject, PoissonSampled) and isinstance(subject.mechanism, Gaussian) and subject.probability != 1:
        return curve, FractionalOrderSampledGaussian(subject).rdp_from(curve)
    return curve, curve


class _Pieced:
    """The float approximation of ``inside`` at ``orders`` and of ``outside`` elsewhere (a delta
    query's ranking: given orders on the integrated curve, other orders on the real-order curve,
    as they are then certified)."""

    def __init__(self, inside: Any, outside: Any, orders: set) -> None:
        self.inside, self.outside, self.orders = inside, outside, orders

    def approx(self, alphas):
        import numpy as np

        mask = np.array([a in self.orders for a in alphas], dtype=bool)
        out = np.empty(len(alphas))
        for curve, part in ((self.inside, mask), (self.outside, ~mask)):
            if part.any():
                values = curve.approx(alphas[part])
                if values is None:
                    return None
                out[part] = values
        return out


def _ranked(curve: Any, alphas: list[float], objective: Any) -> tuple[list[float], int]:
    """(``alphas`` best first by ``objective(alphas, float curve values)``, how many of them to
    certify): the curve's float approximation ranks the orders (NaN last) and the best
    ``_REFINED_ORDERS`` are certified; without a float approximation (or with none finite) every
    order is certified, as given. Steering only: every reported number is certified at the order
    it names."""
    import numpy as np

    if not alphas:
        return [], 0
    array = np.array(alphas, dtype=float)
    try:
        values = curve.approx(array)
    except (ValueError, ZeroDivisionError, OverflowError, FloatingPointError):
        values = None
    if values is None:
        return list(alphas), len(alphas)
    with np.errstate(all="ignore"):
        scores = np.asarray(objective(array, np.asarray(values, dtype=float)), dtype=float)
    scores = np.where(np.isnan(scores), np.inf, scores)
    if not np.isfinite(scores).any():
        return list(alphas), len(alphas)
    return [alphas[i] for i in np.argsort(scores, kind="stable")], _REFINED_ORDERS


def certified_rdp_accountant_class() -> type:
    """The ``CertifiedRdpAccountant`` class (dp_accounting's RdpAccountant contract, certified)."""
    if _RDP_CLASS:
        return _RDP_CLASS[0]
    from dp_accounting import privacy_accountant as pa

    _RDP_CLASS.append(_build_rdp(certified_accountant_class(), pa))
    return _RDP_CLASS[0]


def _check_delta(target_delta: Any) -> None:
    from .._core._validation import AccountingError

    if isinstance(target_delta, bool) or not isinstance(target_delta, (int, float)) or not (0 <= target_delta <= 1):
        raise AccountingError("target_delta", target_delta, "a probability in [0, 1]")


def _check_epsilon(target_epsilon: Any) -> None:
    from .._core._validation import AccountingError

    if isinstance(target_epsilon, bool) or not isinstance(target_epsilon, (int, float)) or not (target_epsilon >= 0):
        raise AccountingError("target_epsilon", target_epsilon, "a real number >= 0 (inf allowed)")


def certified_delta(subject: Any, epsilon: float, time_budget: float | None = None) -> float:
    """The smallest certified delta(epsilon) of ``subject`` over the routes that give one (the
    analytic Gaussian, the composed PLD, the RDP curves by CKS), chosen and run by the route
    planner under ``time_budget`` (:func:`accounting._routing._routes.delta_routes`): the PLD's cost is
    estimated before it is built, so a composition too large for the budget is coarsened or
    skipped with its reason (another route answers), or refused naming the time budget that
    would run it, as :meth:`get_epsilon` does; never started and left running."""
    from .._core._planner import DEFAULT_TIME_BUDGET
    from .._routing._routes import delta_routes

    budget = DEFAULT_TIME_BUDGET if time_budget is None else time_budget
    return min(1.0, delta_routes(subject, epsilon, time_budget=budget).delta)
