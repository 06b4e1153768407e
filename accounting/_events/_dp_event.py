"""dp_accounting's ``DpEvent`` trees as accounting guarantees (a thin translation at the edge).

``from_dp_event(event)`` accepts a dp_accounting ``DpEvent``, its ``to_named_tuple()`` form, or
the JSON form of that named tuple (a dict with ``class_name`` and the event's fields, nested;
e.g. ``json.dumps(namedtuple_to_dict(event.to_named_tuple()))``), and returns a mechanism of
:mod:`accounting` that every route accepts (:func:`accounting.epsilon_routes`, the ledger).
dp_accounting is never imported here: events are read through their field names.

Translation (dp_accounting's conventions, sensitivity 1 unless the event carries one, times 2
under REPLACE_ONE for the additive-noise events; ``neighboring_relation`` chooses, default each
event's own):
GaussianDpEvent(s) -> Gaussian(s, 1); LaplaceDpEvent(s) -> Laplace(s, 1); a zero noise parameter
-> NonPrivate (DiscreteLaplace(0, C) included);
DiscreteLaplaceDpEvent(a, C) -> DiscreteLaplace(scale 1/a, C);
RandomizedResponseDpEvent(p, k) -> KaryRandomizedResponse(p, k) (exact pair on three outputs);
PoissonSampledDpEvent -> PoissonSampled; SampledWithoutReplacementDpEvent -> SampledWithoutReplacement;
SelfComposedDpEvent / ComposedDpEvent -> Composition; NoOpDpEvent -> nothing (dropped from a
composition); NonPrivateDpEvent -> NonPrivate (epsilon = inf on every route);
ZCDpEvent(rho, xi) -> ZCdpGuarantee; SingleEpochTreeAggregationDpEvent(s, steps) ->
Gaussian(s, sqrt(ceil(log2(max steps + 1)))) (Kairouz et al. 2021 App. D);
MixtureOfGaussiansDpEvent -> PoissonSampled(Gaussian) for one non-zero shift, else
GaussianMixtureShift (PLD of the exact pair when the shifts have one sign, RDP by convexity);
RepeatAndSelectDpEvent -> RepeatAndSelect (Papernot & Steinke 2022); Poisson sampling or sampling
without replacement of a composition of Gaussians -> of the one Gaussian it equals (sigma^-2 add);
under REPLACE_ONE PoissonSampled(Gaussian) -> ReplaceOnePoissonGaussian; under REPLACE_SPECIAL
RandomizedResponse -> SpecialRandomizedResponse (:mod:`accounting._events._dp_event_mechanisms`).
TruncatedSubsampledGaussianDpEvent -> TruncatedPoissonGaussian (a disjoint union of the untruncated
and the truncated branch, :mod:`accounting._events._dp_event_sampling`; Poisson sampling when no cut can
happen); SampledWithReplacementDpEvent of a Gaussian tree or a Laplace -> SampledWithReplacementGaussian
(same module; default ADD_OR_REMOVE_ONE). Refused (AccountingError, naming the field): sampling with
replacement of other events, and dp_accounting's UnsupportedDpEvent (an unknown class).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from flint import arb

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP, PureDP
from .._core._mechanism_base import Mechanism
from .._core._validation import AccountingError, check_k_ary

__all__ = ["Composition", "KaryRandomizedResponse", "NonPrivate", "event_from_json", "from_dp_event"]

# field order of dp_accounting's named tuples (after module_name, class_name), for the list form
_FIELDS = {
    "NoOpDpEvent": (),
    "NonPrivateDpEvent": (),
    "GaussianDpEvent": ("noise_multiplier",),
    "LaplaceDpEvent": ("noise_multiplier",),
    "DiscreteLaplaceDpEvent": ("noise_parameter", "sensitivity"),
    "RandomizedResponseDpEvent": ("noise_parameter", "num_buckets"),
    "PoissonSampledDpEvent": ("sampling_probability", "event"),
    "SampledWithoutReplacementDpEvent": ("source_dataset_size", "sample_size", "event"),
    "SelfComposedDpEvent": ("event", "count"),
    "ComposedDpEvent": ("events",),
    "ZCDpEvent": ("rho", "xi"),
    "SingleEpochTreeAggregationDpEvent": ("noise_multiplier", "step_counts"),
    "MixtureOfGaussiansDpEvent": ("standard_deviation", "sensitivities", "sampling_probs"),
    "RepeatAndSelectDpEvent": ("event", "mean", "shape"),
    "TruncatedSubsampledGaussianDpEvent": ("dataset_size", "sampling_probability", "truncated_batch_size", "noise_multiplier"),
    "SampledWithReplacementDpEvent": ("source_dataset_size", "sample_size", "event"),
}


@dataclass(frozen=True)
class Composition(Mechanism):
    """Sequential composition of mechanisms, each with a multiplicity: ((mechanism, count), ...)."""

    parts: tuple

    family = "composition"

    def __post_init__(self) -> None:
        if not self.parts:
            raise AccountingError("parts", self.parts, "a non-empty tuple of (mechanism, count)")
        for mechanism, count in self.parts:
            if not isinstance(mechanism, Mechanism):
                raise AccountingError("parts", mechanism, "an accounting Mechanism in each (mechanism, count)")
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise AccountingError("count", count, "an integer >= 1 (how many times the part is released)")

    @property
    def rdp_is_exact(self) -> bool:
        """The sum of exact curves is the exact curve of the composition (Renyi divergences add over
        independent releases); one bound among the parts makes the sum a bound."""
        return all(m.rdp_is_exact for m, _ in self.parts)

    def rdp(self) -> RDP | None:
        curves = [m.rdp() for m, _ in self.parts]
        if any(c is None for c in curves):
            return None
        return RDP.sequence(curves, [n for _, n in self.parts])

    def pure(self) -> PureDP | None:
        pures = [m.pure() for m, _ in self.parts]
        if any(p is None for p in pures):
            return None
        total = [p.times(n) for p, (_, n) in zip(pures, self.parts)]
        return total[0].compose(*total[1:])

    def describe(self) -> str:
        return " + ".join(m.describe() if n == 1 else f"{n} x ({m.describe()})" for m, n in self.parts)


@dataclass(frozen=True)
class NonPrivate(Mechanism):
    """A release with no privacy guarantee: every route reports epsilon = inf."""

    family = "non-private"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def rdp(self) -> RDP:
        return RDP.from_function(lambda alpha: arb.pos_inf(), "non-private")

    def output_pair(self):
        """P and Q with disjoint supports: all privacy-loss mass at +inf (so the PLD route
        certifies epsilon = inf for every delta < 1)."""
        from .._core._pairs import FinitePair

        return FinitePair.from_masses([1, 0], [0, 1])

    def describe(self) -> str:
        return "non-private release"


@dataclass(frozen=True)
class KaryRandomizedResponse(Mechanism):
    """dp_accounting's RandomizedResponse over ``num_buckets`` = k buckets with noise parameter p:
    keep the bucket with probability 1 - p, else report a uniform bucket. With a = 1 - p + p/k and
    b = p/k, the worst pair (inputs in different buckets) has P = (a, b, (k-2) b), Q = (b, a, (k-2) b)
    on (D's bucket, D''s bucket, the others), so D_alpha = log(a^alpha b^{1-alpha} + b^alpha a^{1-alpha}
    + (k-2) b) / (alpha - 1) and eps = log(a/b). p is read exactly (floats are dyadic)."""

    noise_parameter: Fraction
    num_buckets: int

    family = "k-ary-randomized-response"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_parameter", check_k_ary(self.noise_parameter, self.num_buckets))

    def _ab(self) -> tuple[Fraction, Fraction]:
        p, k = self.noise_parameter, self.num_buckets
        return 1 - p + p / k, p / k

    def rdp(self) -> RDP:
        a, b = self._ab()
        rest = (self.num_buckets - 2) * b

        def curve(alpha: arb) -> arb:
            la, lb = exact(a).log(), exact(b).log()
            total = (alpha * la + (1 - alpha) * lb).exp() + (alpha * lb + (1 - alpha) * la).exp() + exact(rest)
            return total.log() / (alpha - 1)

        return RDP.from_function(curve, f"{self.num_buckets}-ary RR(p={float(self.noise_parameter)}) exact")

    def pure(self) -> PureDP:
        a, b = self._ab()
        with working_precision(None):
            return PureDP(upper_float((exact(a) / exact(b)).log()))

    def output_pair(self):
        from .._core._pairs import FinitePair

        a, b = self._ab()
        rest = (self.num_buckets - 2) * b
        if rest == 0:
            return FinitePair.from_masses([a, b], [b, a])
        return FinitePair.from_masses([a, b, rest], [b, a, rest])

    def describe(self) -> str:
        return f"{self.num_buckets}-ary randomized response, noise parameter {float(self.noise_parameter)}"


def _get(event: Any, name: str) -> Any:
    if isinstance(event, dict):
        if name not in event:
            raise AccountingError("event", event, f"a {event.get('class_name')} with field {name!r}")
        return event[name]
    return getattr(event, name)


def _integer(event: Any, name: str) -> int:
    """An integer field (dp_accounting's JSON may carry 3.0; never inf, NaN or 2.5)."""
    value = _get(event, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise AccountingError(name, value, "an integer")
    return int(value)


def _class_name(event: Any) -> str:
    if isinstance(event, dict):
        name = event.get("class_name")
    elif isinstance(event, (list, tuple)) and len(event) >= 2 and isinstance(event[1], str) and event[1] in _FIELDS:
        name = event[1]
    else:
        name = getattr(event, "class_name", None) or type(event).__name__
    if isinstance(name, bytes):
        name = name.decode()
    return name


def _as_dict(event: Any) -> Any:
    """The list form (a JSON-dumped named tuple: [module, class, fields...]) as a dict."""
    if isinstance(event, (list, tuple)) and not hasattr(event, "_fields") and len(event) >= 2 and event[1] in _FIELDS:
        fields = _FIELDS[event[1]]
        return {"class_name": event[1], **dict(zip(fields, event[2:]))}
    return event


def _exact_float(name: str, value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) or not math.isfinite(float(value)):
        raise AccountingError(name, value, "a finite real number")
    return Fraction(value)


#: dp_accounting's neighbouring relations, by the lower-case names of its enum members
RELATIONS = ("add_or_remove_one", "replace_one", "replace_special")


def _relation_name(relation: Any) -> str:
    name = getattr(relation, "name", relation)
    name = str(name).lower()
    if name not in RELATIONS:
        raise AccountingError("neighboring_relation", relation, f"one of {RELATIONS} (dp_accounting's NeighboringRelation)")
    return name


def _gaussian_inverse_variance(event: Any) -> Fraction | None:
    """sum_i sigma_i^-2 of a tree of Gaussian events (Composed / SelfComposed of GaussianDpEvent),
    exactly; None if the tree holds anything else. A composition of Gaussians with sensitivity 1 is
    a single Gaussian with sigma_eff^-2 = sum_i sigma_i^-2 (a rotation of the product law), which
    is how dp_accounting's RDP accountant reads Poisson sampling of such a tree; 0 stands for a
    zero noise multiplier somewhere (a non-private release)."""
    event = _as_dict(event)
    kind = _class_name(event)
    if kind == "GaussianDpEvent":
        sigma = _exact_float("noise_multiplier", _get(event, "noise_multiplier"))
        if sigma < 0:
            raise AccountingError("noise_multiplier", float(sigma), "a real number >= 0")
        return Fraction(-1) if sigma == 0 else 1 / (sigma * sigma)
    if kind == "SelfComposedDpEvent":
        inner = _gaussian_inverse_variance(_get(event, "event"))
        if inner is None:
            return None
        return inner if inner < 0 else inner * _integer(event, "count")
    if kind == "ComposedDpEvent":
        total = Fraction(0)
        for sub in _get(event, "events"):
            inner = _gaussian_inverse_variance(sub)
            if inner is None:
                return None
            if inner < 0:
                return inner
            total += inner
        return total
    return None


def _sqrt_up(value: Fraction) -> float:
    """A float >= sqrt(value) (value >= 0, exact)."""
    x = math.sqrt(float(value))
    while Fraction(x) ** 2 < value:
        x = math.nextafter(x, math.inf)
    return x


def _inverse_sqrt_down(value: Fraction) -> float:
    """A float <= 1/sqrt(value) (value > 0, exact)."""
    x = 1 / math.sqrt(float(value))
    while Fraction(x) ** 2 * value > 1:
        x = math.nextafter(x, 0.0)
    return x


def _effective_gaussian(inverse_variance: Fraction) -> Any:
    """The single Gaussian N(0, 1) with sensitivity >= sqrt(sum sigma_i^-2): the same privacy
    loss as the composition (sensitivity rounded up, so never less private)."""
    from .._mechanisms import Gaussian

    return Gaussian(1, _sqrt_up(inverse_variance))


def _translate(event: Any, relation: str = "event") -> Any | None:
    """The mechanism of ``event`` under ``relation`` (one of :data:`RELATIONS`, or "event": each
    event under its own relation -- randomized response and sampling without replacement under
    REPLACE_ONE, everything else under ADD_OR_REMOVE_ONE -- from_dp_event's default)."""
    event = _as_dict(event)
    kind = _class_name(event)
    from .._mechanisms import DiscreteLaplace, Gaussian, Laplace
    from .._amplification._subsampling import PoissonSampled, SampledWithoutReplacement
    from ._dp_event_mechanisms import GaussianMixtureShift, ReplaceOnePoissonGaussian, SpecialRandomizedResponse, ZCdpGuarantee

    # under REPLACE_ONE an additive-noise release moves by twice its add/remove sensitivity
    factor = 2 if relation == "replace_one" else 1
    if kind == "NoOpDpEvent":
        return None
    if kind == "NonPrivateDpEvent":
        return NonPrivate()
    if kind in ("GaussianDpEvent", "LaplaceDpEvent"):
        noise = float(_exact_float("noise_multiplier", _get(event, "noise_multiplier")))
        if noise < 0:
            raise AccountingError("noise_multiplier", noise, "a real number >= 0 (Noise multiplier must be non-negative)")
        if noise == 0:  # dp_accounting's convention: no noise is a non-private release
            return NonPrivate()
        return (Gaussian if kind == "GaussianDpEvent" else Laplace)(noise, factor)
    if kind == "DiscreteLaplaceDpEvent":
        a = _exact_float("noise_parameter", _get(event, "noise_parameter"))
        if a < 0:
            raise AccountingError("noise_parameter", float(a), "a real number >= 0")
        sensitivity = _integer(event, "sensitivity")
        if a == 0:  # no noise (scale 1/a infinite): a non-private release, as dp_accounting says
            return NonPrivate()
        if sensitivity == 0:
            return None
        return DiscreteLaplace(1 / a, factor * sensitivity)
    if kind == "RandomizedResponseDpEvent":
        p = _exact_float("noise_parameter", _get(event, "noise_parameter"))
        k = _integer(event, "num_buckets")
        if not (0 <= p <= 1) or k < 1:
            raise AccountingError("noise_parameter", float(p), "a probability in [0, 1] with num_buckets >= 1")
        if k == 1 or p == 1:  # one bucket, or the answer ignores the input
            return None
        if p == 0:
            return NonPrivate()
        if relation == "replace_special":
            return SpecialRandomizedResponse(p, k)
        if relation == "add_or_remove_one":
            raise AccountingError("neighboring_relation", relation.upper(), "REPLACE_ONE or REPLACE_SPECIAL for RandomizedResponseDpEvent")
        return KaryRandomizedResponse(p, k)
    if kind == "ZCDpEvent":
        rho = _exact_float("rho", _get(event, "rho"))
        xi = _exact_float("xi", _get(event, "xi"))
        if rho < 0:
            raise AccountingError("rho", float(rho), "a real number >= 0")
        if xi < 0:
            raise AccountingError("xi", float(xi), "a real number >= 0")
        if rho == 0 and xi == 0:
            return None
        return ZCdpGuarantee(rho, xi)
    if kind == "SingleEpochTreeAggregationDpEvent":
        sigma = _exact_float("noise_multiplier", _get(event, "noise_multiplier"))
        steps = _get(event, "step_counts")
        steps = [steps] if isinstance(steps, (int, float)) else list(steps)
        if sigma < 0:
            raise AccountingError("noise_multiplier", float(sigma), "a non-negative real number")
        if not steps:
            raise AccountingError("step_counts", steps, "a non-empty list of non-negative integers")
        for value in steps:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (isinstance(value, float) and not value.is_integer()):
                raise AccountingError("step_counts", steps, "non-negative integers")
        if sigma == 0:
            return NonPrivate()
        # Kairouz et al. 2021 App. D: a record enters at most ceil(log2(n + 1)) nodes of a tree
        # over n steps, each with N(0, sigma^2) noise: a Gaussian of L2 sensitivity sqrt(depth);
        # restarts within one epoch see each record once, so the deepest tree is the worst
        depth = math.ceil(math.log2(int(max(steps)) + 1))
        if depth == 0:
            return None
        return Gaussian(float(sigma), _sqrt_up(Fraction(depth)))
    if kind == "MixtureOfGaussiansDpEvent":
        sigma = _exact_float("standard_deviation", _get(event, "standard_deviation"))
        shifts = [_exact_float("sensitivities", c) for c in _get(event, "sensitivities")]
        weights = [_exact_float("sampling_probs", w) for w in _get(event, "sampling_probs")]
        if len(shifts) != len(weights) or not shifts or any(w < 0 for w in weights):
            raise AccountingError("sampling_probs", weights, "one probability >= 0 per sensitivity")
        live = [(c, w) for c, w in zip(shifts, weights) if c != 0 and w != 0]
        if not live:
            return None
        if sigma < 0:
            raise AccountingError("standard_deviation", float(sigma), "a real number >= 0")
        if sigma == 0:
            return NonPrivate()
        if relation == "replace_one":
            raise AccountingError("neighboring_relation", relation, "ADD_OR_REMOVE_ONE or REPLACE_SPECIAL for MixtureOfGaussiansDpEvent")
        total = sum(weights)
        if len(live) == 1:  # (1-q) N(0) + q N(c) against N(0): the Poisson-subsampled Gaussian
            c, w = live[0]
            gaussian = Gaussian(float(sigma), abs(float(c)))
            q = w / total
            return gaussian if q == 1 else PoissonSampled(gaussian, q)
        return GaussianMixtureShift(sigma, tuple(shifts), tuple(weights))
    if kind == "PoissonSampledDpEvent":
        q = _exact_float("sampling_probability", _get(event, "sampling_probability"))
        if not (0 <= q <= 1):
            raise AccountingError("sampling_probability", float(q), "a probability in [0, 1] (Sampling rate)")
        if q == 0:
            return None
        inverse_variance = _gaussian_inverse_variance(_get(event, "event"))
        if inverse_variance is not None:
            if inverse_variance < 0:
                return NonPrivate()
            if inverse_variance == 0:
                return None
            if relation == "replace_one":
                return ReplaceOnePoissonGaussian(_inverse_sqrt_down(inverse_variance), q)
            inner_event = _as_dict(_get(event, "event"))
            if _class_name(inner_event) == "GaussianDpEvent":
                inner = _translate(inner_event, relation)
            else:
                inner = _effective_gaussian(inverse_variance)
        else:
            if relation == "replace_one":
                raise AccountingError("neighboring_relation", relation, "ADD_OR_REMOVE_ONE or REPLACE_SPECIAL for Poisson sampling of this event")
            inner = _translate(_get(event, "event"), relation)
        if inner is None:
            return None
        if isinstance(inner, NonPrivate):
            return inner
        return inner if q == 1 else PoissonSampled(inner, q)
    if kind == "SampledWithoutReplacementDpEvent":
        if _integer(event, "sample_size") == 0:
            return None
        inverse_variance = _gaussian_inverse_variance(_get(event, "event"))
        if inverse_variance is not None and _class_name(_as_dict(_get(event, "event"))) != "GaussianDpEvent":
            if inverse_variance < 0:
                return NonPrivate()
            inner = None if inverse_variance == 0 else _effective_gaussian(inverse_variance)
        else:
            inner = _translate(_get(event, "event"), "add_or_remove_one")  # WBK's bound takes the add/remove base
        if inner is None:
            return None
        if isinstance(inner, NonPrivate):
            return inner
        return SampledWithoutReplacement(inner, _integer(event, "sample_size"), _integer(event, "source_dataset_size"))
    if kind == "TruncatedSubsampledGaussianDpEvent":
        from ._dp_event_sampling import TruncatedPoissonGaussian

        n = _integer(event, "dataset_size")
        batch = _integer(event, "truncated_batch_size")
        q = _exact_float("sampling_probability", _get(event, "sampling_probability"))
        sigma = _exact_float("noise_multiplier", _get(event, "noise_multiplier"))
        if n < 0:
            raise AccountingError("dataset_size", n, "an integer >= 0")
        if batch < 0:
            raise AccountingError("truncated_batch_size", batch, "an integer >= 0")
        if not (0 <= q <= 1):
            raise AccountingError("sampling_probability", float(q), "a probability in [0, 1]")
        if sigma < 0:
            raise AccountingError("noise_multiplier", float(sigma), "a real number >= 0")
        if q == 0 or batch == 0 or n == 0:  # an empty batch, always (dp_accounting: no privacy cost)
            return None
        if sigma == 0:
            return NonPrivate()
        truncated = TruncatedPoissonGaussian(sigma, n, q, batch, "add_or_remove_one" if relation == "event" else relation)
        if truncated.kept_rate() is None:  # no cut is possible (n - 1 < B): Poisson subsampling
            return _translate({"class_name": "PoissonSampledDpEvent", "sampling_probability": float(q),
                               "event": {"class_name": "GaussianDpEvent", "noise_multiplier": float(sigma)}}, relation)
        return truncated
    if kind == "SampledWithReplacementDpEvent":
        from ._dp_event_sampling import SampledWithReplacementGaussian

        n = _integer(event, "source_dataset_size")
        m = _integer(event, "sample_size")
        if n < 1:
            raise AccountingError("source_dataset_size", n, "an integer >= 1")
        if m < 0:
            raise AccountingError("sample_size", m, "an integer >= 0")
        if m == 0:
            return None
        inverse_variance = _gaussian_inverse_variance(_get(event, "event"))
        if inverse_variance is None:
            inner = _translate(_get(event, "event"), "add_or_remove_one")
            if inner is None or isinstance(inner, NonPrivate):
                return inner
            if _class_name(_as_dict(_get(event, "event"))) == "LaplaceDpEvent":
                return SampledWithReplacementGaussian(Fraction(inner.scale), 1, n, m, "add_or_remove_one" if relation == "event" else relation,
                                                      noise="laplace")
            raise AccountingError("event", _class_name(_as_dict(_get(event, "event"))),
                                  "a GaussianDpEvent, a composition of them or a LaplaceDpEvent inside SampledWithReplacementDpEvent (a record "
                                  "drawn j times moves the release by 2j sensitivities: certified here for these shift families only)")
        if inverse_variance < 0:
            return NonPrivate()
        if inverse_variance == 0:
            return None
        return SampledWithReplacementGaussian(1, Fraction(_sqrt_up(inverse_variance)), n, m,
                                              "add_or_remove_one" if relation == "event" else relation)
    if kind == "RepeatAndSelectDpEvent":
        from ._dp_event_mechanisms import RepeatAndSelect

        mean = _exact_float("mean", _get(event, "mean"))
        shape_value = _get(event, "shape")
        if isinstance(shape_value, bool) or not isinstance(shape_value, (int, float, Fraction)) or math.isnan(float(shape_value)) or shape_value < 0:
            raise AccountingError("shape", shape_value, "a shape >= 0 (0 logarithmic, 1 geometric, inf Poisson)")
        if mean < 1:
            raise AccountingError("mean", float(mean), "a mean number of repetitions >= 1")
        inner = _translate(_get(event, "event"), relation)
        if inner is None or isinstance(inner, NonPrivate):
            return inner
        shape = math.inf if float(shape_value) == math.inf else Fraction(shape_value)
        return RepeatAndSelect(inner, mean, shape)
    if kind == "SelfComposedDpEvent":
        count = _integer(event, "count")
        if count < 0:
            raise AccountingError("count", count, "an integer >= 0 (dp_accounting's SelfComposedDpEvent count)")
        inner = _translate(_get(event, "event"), relation)
        if inner is None or count == 0:
            return None
        if isinstance(inner, NonPrivate):
            return inner
        return Composition(((inner, count),))
    if kind == "ComposedDpEvent":
        counts: dict[Any, int] = {}  # equal releases merged into one part with a count (order kept)
        for sub in _get(event, "events"):
            inner = _translate(sub, relation)
            if inner is None:
                continue
            if isinstance(inner, NonPrivate):
                return inner
            counts[inner] = counts.get(inner, 0) + 1
        if not counts:
            return None
        return Composition(tuple(counts.items()))
    raise AccountingError("event", kind, f"one of {sorted(_FIELDS)}")


def from_dp_event(event: Any, neighboring_relation: Any = None) -> Any:
    """The accounting mechanism of a dp_accounting ``DpEvent`` (object, named tuple, dict or JSON
    text) under ``neighboring_relation`` (dp_accounting's ``NeighboringRelation`` or its lower-case
    name; default None: each event under its own relation -- randomized response and sampling
    without replacement under REPLACE_ONE, the rest under ADD_OR_REMOVE_ONE). A tree with no
    privacy cost (only NoOpDpEvent) is refused with a ValueError."""
    if isinstance(event, (str, bytes)):
        event = event_from_json(event)
    out = _translate(event, "event" if neighboring_relation is None else _relation_name(neighboring_relation))
    if out is None:
        raise AccountingError("event", _class_name(event), "an event with a privacy cost (this one is a no-op)")
    return out


def event_from_json(text: str | bytes) -> Any:
    """Parse the JSON form of a dp_accounting event (dicts with ``class_name``, or the list form)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise AccountingError("event", str(text)[:60], f"JSON text of a dp_accounting event ({error})") from None


def event_to_dict(event: Any) -> Any:
    """A dp_accounting event (or named tuple) as nested dicts, the JSON form read above."""
    if hasattr(event, "to_named_tuple"):
        event = event.to_named_tuple()
    if hasattr(event, "_asdict"):
        return {k: event_to_dict(v) for k, v in event._asdict().items()}
    if isinstance(event, (list, tuple)):
        return [event_to_dict(v) for v in event]
    return event
