"""Privacy guarantees as immutable, validated value types.

- :class:`PureDP` — eps-DP.
- :class:`ApproxDP` — (eps, delta)-DP.
- :class:`ZCDP` — rho-zCDP (Bun & Steinke 2016): D_alpha(M(D) || M(D')) <= rho * alpha for all alpha > 1.
- :class:`RDP` — a Renyi-DP curve alpha -> eps(alpha) (Mironov 2017), evaluable at any real
  alpha > 1, built from certified leaves (a mechanism's exact curve, a closed form) by
  composition (sum), k-fold composition, parallel composition (max over disjoint users) and the
  returning-users rule (at each alpha, the sum of the B largest per-batch curves).

Every float stored or returned is an *upper* bound of the true privacy parameter: sums and
products are formed exactly in Arb and rounded up (see :mod:`accounting._core._certified`).

An RDP curve is a tree of nodes; each node maps an exact Arb ball alpha to an Arb ball whose
upper endpoint bounds eps(alpha) from above. Composition adds balls (the upper endpoint of a
sum bounds the sum of upper endpoints), parallel composition takes maxima, and returning users
sort the per-curve upper endpoints, so no operation can lower a bound.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Iterable, Sequence

import numpy as np
from flint import arb

from ._certified import check_precision, exact, upper_float, working_precision
from ._renamed import renamed_keywords
from ._validation import (
    AccountingError,
    check_alpha,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
)

__all__ = ["ApproxDP", "PureDP", "RDP", "ZCDP", "Guarantee"]


def _float_up(value: float | int | Fraction) -> float:
    """A float >= value (exact for floats; ints and Fractions are rounded up)."""
    if isinstance(value, float):
        return value
    with working_precision(None):
        return upper_float(exact(value))


def _sum_up(*values: float) -> float:
    with working_precision(None):
        total = arb(0)
        for value in values:
            total += exact(value)
        return upper_float(total)


def _times_up(value: float, k: int) -> float:
    with working_precision(None):
        return upper_float(exact(value) * k)


@dataclass(frozen=True)
class PureDP:
    """eps-differential privacy: P[M(D) in E] <= e^eps P[M(D') in E] for all neighbours and events."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _float_up(check_positive("epsilon", self.epsilon)))

    def compose(self, *others: "PureDP") -> "PureDP":
        """Sequential composition: epsilons add."""
        for index, other in enumerate(others):
            if not isinstance(other, PureDP):
                raise AccountingError(f"others[{index}]", other, "a PureDP guarantee")
        return PureDP(_sum_up(self.epsilon, *(o.epsilon for o in others)))

    def __add__(self, other: "PureDP") -> "PureDP":
        if not isinstance(other, PureDP):
            return NotImplemented
        return self.compose(other)

    @renamed_keywords(k="compose")
    def times(self, compose: int) -> "PureDP":
        """``compose``-fold sequential composition of this guarantee (``k=``: former name, deprecated)."""
        check_positive_int("compose", compose)
        return PureDP(_times_up(self.epsilon, compose))

    def parallel(self, *others: "PureDP") -> "PureDP":
        """Parallel composition over disjoint users: the worst user's guarantee."""
        return PureDP(max([self.epsilon, *(o.epsilon for o in others)]))

    def __le__(self, other: "PureDP") -> bool:
        if not isinstance(other, PureDP):
            return NotImplemented
        return self.epsilon <= other.epsilon

    def __lt__(self, other: "PureDP") -> bool:
        if not isinstance(other, PureDP):
            return NotImplemented
        return self.epsilon < other.epsilon

    def to_rdp(self) -> "RDP":
        """The tight RDP curve implied by eps-DP (Renyi divergence of binary randomized response)."""
        return RDP.pure(self.epsilon)

    def to_zcdp(self) -> "ZCDP":
        """The tight zCDP implied by eps-DP: rho = eps tanh(eps/2) (sup_alpha D_alpha/alpha of binary RR)."""
        with working_precision(None):
            eps = exact(self.epsilon)
            return ZCDP(upper_float(eps * (eps / 2).tanh()))

    def __str__(self) -> str:
        return f"{self.epsilon:.6g}-DP"


@dataclass(frozen=True)
class ApproxDP:
    """(eps, delta)-differential privacy: P[M(D) in E] <= e^eps P[M(D') in E] + delta.

    ``epsilon`` is a finite real >= 0 (eps = 0 is a valid guarantee: the two output laws are
    within delta in total variation); ``delta`` a probability in (0, 1) (delta = 0 is
    :class:`PureDP`, delta = 1 says nothing)."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        # + 0.0: a -0.0 is stored as 0.0 (one zero, one str, one JSON value)
        object.__setattr__(self, "epsilon", _float_up(check_nonnegative("epsilon", self.epsilon)) + 0.0)
        object.__setattr__(self, "delta", _float_up(check_probability("delta", self.delta)))

    def compose(self, *others: "ApproxDP") -> "ApproxDP":
        """Basic sequential composition: epsilons add, deltas add."""
        for index, other in enumerate(others):
            if not isinstance(other, ApproxDP):
                raise AccountingError(f"others[{index}]", other, "an ApproxDP guarantee")
        delta = _sum_up(self.delta, *(o.delta for o in others))
        if delta >= 1:
            raise AccountingError("delta", delta, "a composed delta < 1", "basic composition of these deltas is vacuous")
        return ApproxDP(_sum_up(self.epsilon, *(o.epsilon for o in others)), delta)

    def __add__(self, other: "ApproxDP") -> "ApproxDP":
        if not isinstance(other, ApproxDP):
            return NotImplemented
        return self.compose(other)

    @renamed_keywords(k="compose")
    def times(self, compose: int) -> "ApproxDP":
        """``compose``-fold sequential composition (``k=``: former name, deprecated)."""
        check_positive_int("compose", compose)
        return ApproxDP(_times_up(self.epsilon, compose), _times_up(self.delta, compose))

    def parallel(self, *others: "ApproxDP") -> "ApproxDP":
        return ApproxDP(
            max([self.epsilon, *(o.epsilon for o in others)]),
            max([self.delta, *(o.delta for o in others)]),
        )

    def __le__(self, other: "ApproxDP") -> bool:
        """At least as private as ``other``: both parameters no larger (a partial order)."""
        if not isinstance(other, ApproxDP):
            return NotImplemented
        return self.epsilon <= other.epsilon and self.delta <= other.delta

    def __str__(self) -> str:
        return f"({self.epsilon:.6g}, {self.delta:.3g})-DP"


@dataclass(frozen=True)
class ZCDP:
    """rho-zero-concentrated DP: D_alpha <= rho * alpha for every alpha > 1."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _float_up(check_positive("rho", self.rho)))

    def compose(self, *others: "ZCDP") -> "ZCDP":
        for index, other in enumerate(others):
            if not isinstance(other, ZCDP):
                raise AccountingError(f"others[{index}]", other, "a ZCDP guarantee")
        return ZCDP(_sum_up(self.rho, *(o.rho for o in others)))

    def __add__(self, other: "ZCDP") -> "ZCDP":
        if not isinstance(other, ZCDP):
            return NotImplemented
        return self.compose(other)

    @renamed_keywords(k="compose")
    def times(self, compose: int) -> "ZCDP":
        """``compose``-fold sequential composition (``k=``: former name, deprecated)."""
        check_positive_int("compose", compose)
        return ZCDP(_times_up(self.rho, compose))

    def parallel(self, *others: "ZCDP") -> "ZCDP":
        return ZCDP(max([self.rho, *(o.rho for o in others)]))

    def __le__(self, other: "ZCDP") -> bool:
        if not isinstance(other, ZCDP):
            return NotImplemented
        return self.rho <= other.rho

    def __lt__(self, other: "ZCDP") -> bool:
        if not isinstance(other, ZCDP):
            return NotImplemented
        return self.rho < other.rho

    def to_rdp(self) -> "RDP":
        return RDP.zcdp(self.rho)

    def __str__(self) -> str:
        return f"{self.rho:.6g}-zCDP"


# --------------------------------------------------------------------------------------------
# RDP curves


_Leaf = Callable[[arb], arb]


class _Node(ABC):
    """A node of an RDP curve: maps an exact alpha ball to a ball bounding eps(alpha) above.

    ``approx(alphas)`` optionally returns float64 approximations at an array of orders (or None
    when a leaf has none). It only steers searches over alpha; every reported number comes from
    ``ball``.

    ``approx_lower(alphas)`` is a cheaper float array that is *exactly* (in float64, not just
    mathematically) <= ``approx(alphas)`` wherever the latter is not NaN: parallel composition
    leaves out its costliest parts (a maximum over a subset is <= the maximum over all, with no
    rounding), and sums, counts and top-B sums are monotone under IEEE round-to-nearest. A
    search uses it to rule out orders without evaluating every part there
    (:func:`accounting._core._conversions._float_search`); it finds the same order as a full scan.
    ``approx_cost()`` and ``approx_lower_cost()`` are relative costs per order (a leaf's hint,
    1 for a closed form) that decide whether that is worth it.
    """

    __slots__ = ()

    def approx_cost(self) -> float:
        return 1.0

    def approx_lower(self, alphas: np.ndarray) -> np.ndarray | None:
        return self.approx(alphas)

    def approx_lower_cost(self) -> float:
        return self.approx_cost()

    @abstractmethod
    def ball(self, alpha: arb) -> arb:
        """A ball whose upper endpoint bounds eps(alpha) from above."""

    @abstractmethod
    def approx(self, alphas: np.ndarray) -> np.ndarray | None:
        """Float approximations at many orders, or None (search only)."""

    @abstractmethod
    def describe(self) -> str:
        """A human description of the curve."""


class _LeafNode(_Node):
    """A certified leaf; ``family`` and ``parameter`` let sums evaluate many leaves of one
    closed-form family as a single array operation (search only)."""

    __slots__ = ("fn", "name", "approx_fn", "family", "parameter", "cost")

    def __init__(
        self,
        fn: _Leaf,
        name: str,
        approx_fn: Callable[[np.ndarray], np.ndarray] | None = None,
        family: str | None = None,
        parameter: float | None = None,
        cost: float = 1.0,
    ) -> None:
        self.fn = fn
        self.name = name
        self.approx_fn = approx_fn
        self.family = family
        self.parameter = parameter
        self.cost = cost

    def approx_cost(self) -> float:
        return self.cost

    def ball(self, alpha: arb) -> arb:
        return self.fn(alpha)

    def approx(self, alphas: np.ndarray) -> np.ndarray | None:
        return None if self.approx_fn is None else np.asarray(self.approx_fn(alphas), dtype=np.float64)

    def describe(self) -> str:
        return self.name


class _SumNode(_Node):
    """Sequential composition: sum_i count_i * eps_i(alpha)."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[tuple[_Node, int], ...]) -> None:
        self.terms = terms

    def ball(self, alpha: arb) -> arb:
        total = arb(0)
        for node, count in self.terms:
            total += node.ball(alpha).upper() * count
        return total

    def approx(self, alphas: np.ndarray) -> np.ndarray | None:
        return self._approx(alphas, lower=False)

    def approx_lower(self, alphas: np.ndarray) -> np.ndarray | None:
        # the same additions in the same order with each term replaced by its lower approximation:
        # round-to-nearest addition and multiplication by a positive count are monotone
        return self._approx(alphas, lower=True)

    def approx_cost(self) -> float:
        return sum(node.approx_cost() for node, _ in self.terms)

    def approx_lower_cost(self) -> float:
        return sum(node.approx_lower_cost() for node, _ in self.terms)

    def _approx(self, alphas: np.ndarray, lower: bool) -> np.ndarray | None:
        total = np.zeros_like(alphas, dtype=np.float64)
        batches: dict[str, tuple[list[float], list[int]]] = {}
        for node, count in self.terms:
            if isinstance(node, _LeafNode) and node.family in _BATCH_APPROX:
                params, counts = batches.setdefault(node.family, ([], []))
                params.append(node.parameter)
                counts.append(count)
                continue
            values = node.approx_lower(alphas) if lower else node.approx(alphas)
            if values is None:
                return None
            total += count * values
        for family, (params, counts) in batches.items():
            total += _BATCH_APPROX[family](np.asarray(params), np.asarray(counts, dtype=np.float64), alphas)
        return total

    def describe(self) -> str:
        parts = [node.describe() if count == 1 else f"{count} x {node.describe()}" for node, count in self.terms]
        return " + ".join(parts)


class _MaxNode(_Node):
    """Parallel composition over disjoint users: max_i eps_i(alpha)."""

    __slots__ = ("nodes",)

    def __init__(self, nodes: tuple[_Node, ...]) -> None:
        self.nodes = nodes

    def ball(self, alpha: arb) -> arb:
        uppers = [node.ball(alpha).upper() for node in self.nodes]
        best = uppers[0]
        for value in uppers[1:]:
            if value > best:
                best = value
        return best

    def approx(self, alphas: np.ndarray) -> np.ndarray | None:
        values = [node.approx(alphas) for node in self.nodes]
        if any(v is None for v in values):
            return None
        return np.max(np.stack(values), axis=0)

    #: the share of the full cost a lower approximation may spend on its cheapest parts
    _LOWER_SHARE = 1 / 8

    def _cheap_parts(self) -> tuple[_Node, ...]:
        """The cheapest parts whose lower costs add up to at most 1/8 of the whole (at least one).

        Batches of different sizes differ little in privacy but a lot in cost (the exact curve of
        a sum of n discrete Gaussians costs ~n per order), so the cheap parts already bound the
        maximum closely from below."""
        ranked = sorted(self.nodes, key=lambda node: node.approx_lower_cost())
        allowed = self.approx_cost() * self._LOWER_SHARE
        chosen, spent = [ranked[0]], ranked[0].approx_lower_cost()
        for node in ranked[1:]:
            spent += node.approx_lower_cost()
            if spent > allowed:
                break
            chosen.append(node)
        return tuple(chosen)

    def approx_cost(self) -> float:
        return sum(node.approx_cost() for node in self.nodes)

    def approx_lower(self, alphas: np.ndarray) -> np.ndarray | None:
        values = [node.approx_lower(alphas) for node in self._cheap_parts()]
        if any(v is None for v in values):
            return None
        return np.max(np.stack(values), axis=0)

    def approx_lower_cost(self) -> float:
        return sum(node.approx_lower_cost() for node in self._cheap_parts())

    def describe(self) -> str:
        return "max(" + ", ".join(n.describe() for n in self.nodes) + ")"


class _TopBNode(_Node):
    """Returning users: a user joins at most B of the batches; at each alpha, the B largest."""

    __slots__ = ("nodes", "returns")

    def __init__(self, nodes: tuple[_Node, ...], returns: int) -> None:
        self.nodes = nodes
        self.returns = returns

    def ball(self, alpha: arb) -> arb:
        uppers = [node.ball(alpha).upper() for node in self.nodes]
        # Exact endpoints compare exactly, so the sort is exact.
        uppers.sort(key=lambda a: a.mid(), reverse=True)
        total = arb(0)
        for value in uppers[: self.returns]:
            total += value
        return total

    def approx(self, alphas: np.ndarray) -> np.ndarray | None:
        values = [node.approx(alphas) for node in self.nodes]
        if any(v is None for v in values):
            return None
        stacked = np.sort(np.stack(values), axis=0)[::-1]
        return stacked[: self.returns].sum(axis=0)

    def approx_cost(self) -> float:
        return sum(node.approx_cost() for node in self.nodes)

    def approx_lower(self, alphas: np.ndarray) -> np.ndarray | None:
        # the k-th largest entry is monotone in every entry, and the B sorted rows are summed in
        # the same order as in ``approx``
        values = [node.approx_lower(alphas) for node in self.nodes]
        if any(v is None for v in values):
            return None
        stacked = np.sort(np.stack(values), axis=0)[::-1]
        return stacked[: self.returns].sum(axis=0)

    def approx_lower_cost(self) -> float:
        return sum(node.approx_lower_cost() for node in self.nodes)

    def describe(self) -> str:
        return f"top-{self.returns}(" + ", ".join(n.describe() for n in self.nodes) + ")"


def _pure_tight_approx(epsilon: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    # log((e^{a eps} + e^{-(a-1) eps}) / (1 + e^eps)) / (a - 1), rewritten as
    # eps + log1p(e^{-eps} expm1(-(2a-1) eps + eps) / (1 + e^{-eps})) / (a - 1), which keeps its
    # digits as a -> 1 (the plain form cancels catastrophically at small eps).
    am1 = alphas - 1
    q = np.exp(-epsilon)
    with np.errstate(all="ignore"):
        value = epsilon + np.log1p(q * np.expm1(-2 * am1 * epsilon) / (1 + q)) / am1
        plain = (np.logaddexp(alphas * epsilon, -am1 * epsilon) - np.logaddexp(0.0, epsilon)) / am1
    return np.where(np.isfinite(value), value, plain)


def _batch_zcdp(rhos: np.ndarray, counts: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    return float(np.dot(rhos, counts)) * alphas


def _batch_pure(epsilons: np.ndarray, counts: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    total = np.zeros_like(alphas)
    for start in range(0, epsilons.size, 512):  # bounded memory: 512 x len(alphas) at a time
        e = epsilons[start : start + 512, None]
        total += counts[start : start + 512] @ _pure_tight_approx(e, alphas[None, :])
    return total


#: Closed-form leaf families whose float approximations a sum evaluates as one array operation.
_BATCH_APPROX = {"zcdp": _batch_zcdp, "pure-tight": _batch_pure}


def _as_alpha_ball(alpha: int | float | Fraction | str | arb) -> arb:
    if isinstance(alpha, arb):
        return alpha
    if isinstance(alpha, str):
        alpha = Fraction(alpha)
    check_alpha("alpha", alpha)
    return exact(alpha)


class RDP:
    """A Renyi-DP guarantee: (alpha, eps(alpha))-RDP for every real alpha > 1.

    ``curve(alpha)`` returns a float that is never below the true eps(alpha). Build curves from a
    mechanism (``accounting.Skellam(...).rdp()``), from :meth:`zcdp`, :meth:`pure`,
    :meth:`from_function`, and combine them with :meth:`compose`, ``+``, :meth:`times`,
    :meth:`parallel` and :meth:`returning`.
    """

    __slots__ = ("_node", "_cache")

    def __init__(self, node: _Node) -> None:
        if not isinstance(node, _Node):
            raise AccountingError("node", node, "an internal RDP node (use the RDP.* constructors)")
        self._node = node
        self._cache: dict[tuple[str, int], float] = {}

    # ---- constructors ------------------------------------------------------------------------

    @classmethod
    def from_function(cls, fn: _Leaf, name: str, approx: Callable[[np.ndarray], np.ndarray] | None = None, *,
                      approx_cost: float = 1.0) -> "RDP":
        """A leaf curve from ``fn(alpha_ball) -> ball`` whose upper endpoint bounds eps(alpha).

        ``fn`` is called inside the caller's working precision with an exact Arb ball.
        ``approx(alphas)``, optional, maps a float64 array of orders to float approximations; it
        only speeds up searches over alpha (conversions certify the order they pick with ``fn``).
        ``approx_cost`` is its cost per order relative to a closed form (1): a search over a
        parallel composition evaluates the costly parts only where the cheap ones leave an order
        in contention (:meth:`approx_lower`).
        """
        if not callable(fn):
            raise AccountingError("fn", fn, "a callable alpha_ball -> arb")
        if approx is not None and not callable(approx):
            raise AccountingError("approx", approx, "a callable float array -> float array, or None")
        check_positive("approx_cost", approx_cost)
        return cls(_LeafNode(fn, name, approx, cost=float(approx_cost)))

    @classmethod
    def zcdp(cls, rho: float) -> "RDP":
        """rho-zCDP as a curve: eps(alpha) = rho * alpha."""
        check_positive("rho", rho)
        rho_ball = exact(rho)

        def approx(alphas: np.ndarray, r: float = float(rho)) -> np.ndarray:
            with np.errstate(over="ignore"):  # a float estimate: rho = 1e300 at large alpha is +inf
                return r * alphas

        return cls(_LeafNode(lambda alpha: rho_ball * alpha, f"{float(rho):.6g}-zCDP", approx, "zcdp", float(rho)))

    @classmethod
    def pure(cls, epsilon: float) -> "RDP":
        """The tight RDP curve of eps-DP: the Renyi divergence of binary randomized response,

        eps(alpha) = log((e^{alpha eps} + e^{-(alpha-1) eps}) / (1 + e^eps)) / (alpha - 1)

        (Mironov 2017 Prop. 3 / Bun & Steinke 2016), which is below both eps and alpha eps^2 / 2.
        """
        check_positive("epsilon", epsilon)
        eps_ball = exact(epsilon)

        def curve(alpha: arb) -> arb:
            # log-sum-exp form avoids overflow-free but wide balls at large alpha * eps
            a = alpha * eps_ball
            b = -(alpha - 1) * eps_ball
            top = a + ((b - a).exp().log1p())
            return (top - eps_ball.exp().log1p()) / (alpha - 1)

        return cls(
            _LeafNode(curve, f"{epsilon:.6g}-DP (tight)", lambda a: _pure_tight_approx(float(epsilon), a), "pure-tight", float(epsilon))
        )

    # ---- evaluation --------------------------------------------------------------------------

    def ball(self, alpha: int | float | Fraction | str | arb) -> arb:
        """The Arb ball at ``alpha`` (current working precision); its upper endpoint is certified."""
        return self._node.ball(_as_alpha_ball(alpha))

    def __call__(self, alpha: int | float | Fraction | str, *, precision: int | None = None) -> float:
        """eps(alpha), rounded up to a float. ``alpha`` is read exactly (floats are dyadic)."""
        if isinstance(alpha, str):
            try:
                alpha = Fraction(alpha)
            except ValueError:
                raise AccountingError("alpha", alpha, "a real order > 1 (a number or a decimal string)") from None
        check_alpha("alpha", alpha)
        check_precision(precision)
        key = (repr(alpha), precision or 0)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        with working_precision(precision):
            value = upper_float(self._node.ball(_as_alpha_ball(alpha)))
        self._cache[key] = value
        return value

    def evaluate(self, alphas: Iterable[int | float | Fraction | str], *, precision: int | None = None) -> list[float]:
        """eps(alpha) for each alpha, each rounded up."""
        return [self(alpha, precision=precision) for alpha in alphas]

    # ---- composition -------------------------------------------------------------------------

    def compose(self, *others: "RDP") -> "RDP":
        """Sequential composition: curves add at every alpha."""
        for index, other in enumerate(others):
            if not isinstance(other, RDP):
                raise AccountingError(f"others[{index}]", other, "an RDP curve")
        return RDP(_SumNode(tuple((c._node, 1) for c in (self, *others))))

    def __add__(self, other: "RDP") -> "RDP":
        if not isinstance(other, RDP):
            return NotImplemented
        return self.compose(other)

    @renamed_keywords(k="compose")
    def times(self, compose: int) -> "RDP":
        """``compose``-fold composition in one node: identical to that many separate compositions,
        evaluated once (``k=``: former name, deprecated)."""
        check_positive_int("compose", compose)
        return RDP(_SumNode(((self._node, compose),)))

    @staticmethod
    @renamed_keywords(counts="compose")
    def sequence(curves: Sequence["RDP"], compose: Sequence[int] | None = None) -> "RDP":
        """A heterogeneous sequential composition: sum_i compose[i] * curves[i] (curve i composed
        ``compose[i]``-fold; default once each). ``counts=``: former name, deprecated."""
        if len(curves) == 0:
            raise AccountingError("curves", curves, "a non-empty sequence of RDP curves")
        counts = [1] * len(curves) if compose is None else list(compose)
        if len(counts) != len(curves):
            raise AccountingError("compose", counts, f"a sequence of {len(curves)} positive integers")
        terms = []
        for index, (curve, count) in enumerate(zip(curves, counts)):
            if not isinstance(curve, RDP):
                raise AccountingError(f"curves[{index}]", curve, "an RDP curve")
            check_positive_int(f"compose[{index}]", count)
            terms.append((curve._node, int(count)))
        return RDP(_SumNode(tuple(terms)))

    def parallel(self, *others: "RDP") -> "RDP":
        """Parallel composition over disjoint sets of users: the pointwise maximum."""
        for index, other in enumerate(others):
            if not isinstance(other, RDP):
                raise AccountingError(f"others[{index}]", other, "an RDP curve")
        if not others:
            return self
        return RDP(_MaxNode(tuple(c._node for c in (self, *others))))

    @staticmethod
    def returning(curves: Sequence["RDP"], returns: int) -> "RDP":
        """Users who return: each user takes part in at most ``returns`` (B) of these batches.

        The guarantee is the worst user's composition; at each alpha that is the sum of the B
        largest per-batch values (for equal curves, B-fold composition).
        """
        check_positive_int("returns", returns)
        if len(curves) == 0:
            raise AccountingError("curves", curves, "a non-empty sequence of RDP curves")
        for index, curve in enumerate(curves):
            if not isinstance(curve, RDP):
                raise AccountingError(f"curves[{index}]", curve, "an RDP curve")
        if returns >= len(curves):
            return RDP.sequence(list(curves))
        if all(c._node is curves[0]._node for c in curves):
            return curves[0].times(returns)
        return RDP(_TopBNode(tuple(c._node for c in curves), int(returns)))

    def dominated_by(self, other: "RDP", alphas: Iterable[float]) -> bool:
        """True if this curve is <= ``other`` at every alpha given (certified values compared)."""
        return all(self(a) <= other(a) for a in alphas)

    def approx(self, alphas: np.ndarray) -> np.ndarray | None:
        """Float approximations at an array of orders, or None if some leaf has none (search only)."""
        return self._node.approx(np.asarray(alphas, dtype=np.float64))

    def approx_lower(self, alphas: np.ndarray) -> np.ndarray | None:
        """A cheaper float array, in float64 <= :meth:`approx` wherever that is not NaN (search
        only: it rules orders out, see ``_Node``); None if some part it evaluates has no approx."""
        return self._node.approx_lower(np.asarray(alphas, dtype=np.float64))

    def approx_costs(self) -> tuple[float, float]:
        """Relative costs per order of (:meth:`approx`, :meth:`approx_lower`)."""
        return self._node.approx_cost(), self._node.approx_lower_cost()

    def describe(self) -> str:
        return self._node.describe()

    def __repr__(self) -> str:
        return f"RDP({self.describe()})"


Guarantee = PureDP | ApproxDP | ZCDP | RDP

