"""A privacy budget and the charges made against it, per user.

A :class:`Ledger` holds a budget (pure eps, rho-zCDP, or (eps, delta)) and a list of charges.
Each charge is a guarantee (or a mechanism, whose exact guarantee is used) together with the
users it touches: ``None`` (every user), a ``range`` of user ids, or an array of ids. The
privacy a user has lost is the composition of the charges that touch her; charges on disjoint
users compose in parallel (the ledger's spend is the worst user's). So a batch algorithm that
uses fresh users in every batch spends the per-batch guarantee once, and users who return to B
batches spend their own B-fold composition (the ICLR paper's App. I).

``charge`` computes the spend the ledger *would* have, and raises :class:`BudgetExceeded` before
recording anything if it is over budget: a refused charge leaves the ledger exactly as it was.

Per-user composition is computed by grouping users by the set of charges that touch them
(coordinate compression over range ends and ids, with a 128-bit signature per group), so the
cost grows with the number of distinct groups, not the number of users.

The trail (``to_json``/``from_json``) records the budget, every charge with its guarantee or
mechanism parameters and its participants, so an audit can reload and re-verify the spend.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Sequence

import numpy as np

from .._core._certified import exact, lower_float, working_precision
from .._core._guarantees import RDP, ZCDP, ApproxDP, PureDP, _sum_up
from ._ledger_codec import guarantee_from_dict as _guarantee_from_dict
from ._ledger_codec import guarantee_spec
from ._ledger_codec import guarantee_to_dict as _guarantee_to_dict
from ._ledger_codec import participants_from_json as _participants_from_json
from ._ledger_codec import participants_to_json as _participants_to_json
from .._core._mechanism_base import Mechanism
from .._routing._routes import ledger_epsilon, on_routes_changed
from .._core._total_variation import WithinTotalVariation, delta_before_total_variation, times_total_variation, total_variation_of
from .._core._validation import AccountingError, BudgetExceeded

__all__ = ["Charge", "Ledger"]

Budget = PureDP | ZCDP | ApproxDP
Participants = None | range | np.ndarray


@dataclass(frozen=True)
class Charge:
    """One release: its guarantee (per participating user), who took part, and a label."""

    guarantee: Any
    participants: Participants
    label: str = ""

    def participant_count(self) -> int | None:
        if self.participants is None:
            return None
        return len(self.participants)


def _normalise_participants(participants: Any) -> Participants:
    if participants is None:
        return None
    if isinstance(participants, range):
        if participants.step != 1:
            participants = np.asarray(participants, dtype=np.int64)
        else:
            if participants.start < 0:
                raise AccountingError("participants", participants, "user ids >= 0")
            return participants
    array = np.asarray(participants)
    # already strictly increasing (a run's users, millions of them): O(n) check instead of a sort
    if not (array.ndim == 1 and array.size and array.dtype.kind in "iu" and bool(np.all(array[1:] > array[:-1]))):
        array = np.unique(array)
    if array.size == 0:
        raise AccountingError("participants", participants, "a non-empty set of user ids")
    if array.dtype.kind not in "iu" or array[0] < 0:
        raise AccountingError("participants", participants, "integer user ids >= 0")
    return array.astype(np.int64)


def _guarantee_of(item: Any) -> Any:
    """The guarantee a charge spends: a guarantee as given, or a mechanism's exact one."""
    if isinstance(item, (PureDP, ZCDP, ApproxDP, RDP)):
        return item
    if isinstance(item, Mechanism):
        return item
    raise AccountingError("guarantee", item, "a PureDP, ZCDP, ApproxDP, RDP or an accounting mechanism")


class _Runs:
    """A set of user ids as sorted, merged [start, stop) runs, with a fast disjointness test."""

    __slots__ = ("starts", "stops")

    def __init__(self) -> None:
        self.starts = np.zeros(0, dtype=np.int64)
        self.stops = np.zeros(0, dtype=np.int64)

    @staticmethod
    def _runs_of(participants: range | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(participants, range):
            return np.array([participants.start], dtype=np.int64), np.array([participants.stop], dtype=np.int64)
        ids = participants  # sorted and unique (normalised)
        breaks = np.flatnonzero(np.diff(ids) != 1) + 1
        starts = ids[np.concatenate(([0], breaks))]
        stops = ids[np.concatenate((breaks - 1, [ids.size - 1]))] + 1
        return starts, stops

    def _after_all(self, participants: range | np.ndarray) -> bool:
        # the common case of a run with fresh users: ids handed out in increasing ranges
        return isinstance(participants, range) and (self.stops.size == 0 or participants.start >= self.stops[-1])

    def disjoint(self, participants: range | np.ndarray) -> bool:
        if self.starts.size == 0 or self._after_all(participants):
            return True
        starts, stops = self._runs_of(participants)
        # a new run [a, b) meets a stored run iff the last stored run starting before b ends after a
        index = np.searchsorted(self.starts, stops, side="left") - 1
        valid = index >= 0
        return not bool(np.any(self.stops[index[valid]] > starts[valid]))

    def add(self, participants: range | np.ndarray) -> None:
        if self._after_all(participants) and self.stops.size and len(participants):
            if participants.start == self.stops[-1]:  # extends the last run
                self.stops[-1] = participants.stop
            else:
                self.starts = np.append(self.starts, participants.start)
                self.stops = np.append(self.stops, participants.stop)
            return
        starts, stops = self._runs_of(participants)
        starts = np.concatenate((self.starts, starts))
        stops = np.concatenate((self.stops, stops))
        order = np.argsort(starts, kind="stable")
        starts, stops = starts[order], stops[order]
        reach = np.maximum.accumulate(stops)
        new_run = np.concatenate(([True], starts[1:] > reach[:-1]))
        first = np.flatnonzero(new_run)
        self.starts = starts[first]
        self.stops = np.maximum.reduceat(reach, first)


class Ledger:
    """A privacy budget with per-user accounting; refuses to overspend.

    >>> ledger = Ledger(PureDP(1.0))
    >>> ledger.charge(PureDP(0.5), range(0, 100))      # batch 1, users 0..99
    >>> ledger.charge(PureDP(0.5), range(100, 200))    # batch 2, fresh users: parallel
    >>> ledger.spent()
    PureDP(epsilon=0.5)
    """

    def __init__(self, budget: Budget, *, name: str = "") -> None:
        if not isinstance(budget, (PureDP, ZCDP, ApproxDP)):
            raise AccountingError("budget", budget, "a PureDP, ZCDP or ApproxDP budget")
        self._budget = budget
        self._charges: list[Charge] = []
        self.name = name
        # The worst spend so far, and the users charged so far as merged [start, stop) runs: a
        # charge on users disjoint from all of them (and no charge on everyone yet) only adds a
        # group of its own, so it is checked in O(log n) instead of regrouping every user.
        self._worst: float | None = None
        self._covered = _Runs()
        self._charged_everyone = False
        self._all_fresh = True  # every charge so far met fresh users (then each user has one charge)
        # guarantee objects already checked, with their spend alone once known: {id: (object, spend or None)}
        self._by_object: dict[int, tuple[Any, float | None]] = {}

    # ---- public API --------------------------------------------------------------------------

    @property
    def budget(self) -> Budget:
        return self._budget

    @property
    def charges(self) -> tuple[Charge, ...]:
        return tuple(self._charges)

    def charge(self, guarantee: Any, participants: Any = None, *, label: str = "") -> None:
        """Record a release touching ``participants``; raise BudgetExceeded (and record nothing) if over."""
        entry = Charge(_guarantee_of(guarantee), _normalise_participants(participants), label)
        self._check_known(entry.guarantee)
        fresh = self._is_fresh(entry)
        prospective = self._prospective(entry, fresh)
        if not self._within(prospective):
            raise BudgetExceeded(
                f"charge {label or entry.guarantee!s} would spend {prospective:.6g}{_no_epsilon(prospective, self._budget)} "
                f"against a budget of {_fmt(self._budget)}; the ledger is unchanged"
            )
        self._charges.append(entry)
        self._worst = prospective
        self._all_fresh = self._all_fresh and fresh
        if entry.participants is None:
            self._charged_everyone = True
        else:
            self._covered.add(entry.participants)

    def can_afford(self, guarantee: Any, participants: Any = None) -> bool:
        """Would this charge fit in the remaining budget? (Records nothing.)"""
        entry = Charge(_guarantee_of(guarantee), _normalise_participants(participants))
        self._check_known(entry.guarantee)
        return self._within(self._prospective(entry, self._is_fresh(entry)))

    def max_charges_per_user(self) -> int:
        """The most charges any single user is touched by (1 when every charge met fresh users)."""
        if not self._charges:
            return 0
        if self._all_fresh:
            return 1
        return max(sum(n for _, n in group) for group in _user_groups(self._charges))

    def spent(self) -> Budget | None:
        """The worst user's spend so far in the budget's notion (certified upper bound), or None."""
        return None if self._worst is None else self._wrap(self._worst)

    def _is_fresh(self, entry: Charge) -> bool:
        """Whether ``entry`` touches only users no earlier charge touched."""
        return entry.participants is not None and not self._charged_everyone and self._covered.disjoint(entry.participants)

    def _prospective(self, entry: Charge, fresh: bool) -> float:
        """The worst user's spend if ``entry`` were recorded (``fresh``: see :meth:`_is_fresh`)."""
        if fresh:
            g = entry.guarantee
            known = self._by_object.get(id(g))
            if known is not None and known[0] is g and known[1] is not None:
                alone = known[1]
            else:
                alone = self._compose([entry], ((0, 1),))
                self._by_object[id(g)] = (g, alone)
            return alone if self._worst is None else max(self._worst, alone)
        return self._spend(self._charges + [entry])

    def total_variation(self) -> float:
        """The worst user's summed sampler total variation (rounded up): how far the executed releases
        touching her may be from the analysed ones (charges made as ``WithinTotalVariation``; 0 if none).
        A zCDP spend is the analysed mechanisms'; an (eps, delta) read from it must add (1 + e^eps) times
        this (``accounting._core._total_variation``). An (eps, delta) budget pays it in every charge already."""
        charges = self.charges  # a durable ledger reads them from its store
        if not any(isinstance(c.guarantee, WithinTotalVariation) for c in charges):
            return 0.0
        worst = 0.0
        for multiset in _user_groups(charges):
            parts = [times_total_variation(total_variation_of(charges[i].guarantee), n) for i, n in multiset]
            worst = max(worst, _sum_up(*parts))
        return worst

    def remaining(self) -> float:
        """What is left of the budget's main parameter (eps for pure and approximate DP, rho for zCDP).

        Rounded down, so that spending all of it never exceeds the budget.
        """
        value = self._worst
        total = self._main_parameter(self._budget)
        if value is None:
            return total
        with working_precision(None):
            return max(lower_float(exact(total) - exact(value)), 0.0)

    # ---- JSON trail --------------------------------------------------------------------------

    def to_json(self) -> str:
        return _trail_json(self.name, self._budget, self._charges, self.spent())

    @classmethod
    def from_json(cls, text: str, *, url: str | None = None) -> "Ledger":
        """Reload a trail; every charge is re-checked against the budget as it is replayed.

        With ``url``, the charges are replayed into the durable ledger there (created with the
        trail's budget if the database is new, or an existing one with the same budget) in one
        transaction: all of them or, if one is refused, none (a retry after a fix records each once)."""
        data = json.loads(text)
        if data.get("format") != "dpverify-ledger/1":
            raise AccountingError("format", data.get("format"), "'dpverify-ledger/1'")
        budget = _guarantee_from_dict(data["budget"])
        items = [(_guarantee_from_dict(c["guarantee"]), _participants_from_json(c["participants"]), c.get("label", "")) for c in data["charges"]]
        if url is None:
            ledger = cls(budget, name=data.get("name", ""))
            for guarantee, participants, label in items:
                ledger.charge(guarantee, participants, label=label)
            return ledger
        ledger = cls.open(url, budget, name=data.get("name", ""), create=True)
        try:
            if items:
                ledger.charge_many(items)  # type: ignore[attr-defined]
        except BaseException:
            ledger.close()
            raise
        return ledger

    #: the subclass that keeps a ledger in a database (accounting._ledgers._durable.DurableLedger declares
    #: itself by setting ``stores_urls = True``): this module never imports it, so the import
    #: arrow runs one way, _durable -> _ledger
    _durable: ClassVar[type | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("stores_urls", False):
            Ledger._durable = cls

    @staticmethod
    def open(url: str, budget: Budget | None = None, *, name: str = "", read_only: bool = False, create: bool = False,
             expect_head: str | None = None) -> "Ledger":
        """The durable ledger at ``url``: ``sqlite:////absolute/path/ledger.db`` or ``postgresql://user@host/db``.

        ``create=True`` creates it with ``budget`` when the database is new (a missing SQLite file,
        an empty database); without it a missing ledger is refused, so a mistyped path never starts
        a fresh budget. An existing ledger's own budget is used; ``budget``, if given, must equal it.
        Same charges, guarantees and exact values as the in-memory ledger; every charge is one
        atomic check-and-charge, chained and checked (see :mod:`accounting._ledgers._durable`). ``expect_head``:
        a chain head kept elsewhere (64 hex digits) that the ledger must still hold."""
        if Ledger._durable is None:  # pragma: no cover - accounting/__init__ imports accounting._ledgers._durable
            raise AccountingError("url", url, "a ledger URL, once accounting._ledgers._durable is imported")
        return Ledger._durable.connect(url, budget, name=name, read_only=read_only, create=create, expect_head=expect_head)

    def __repr__(self) -> str:
        return f"Ledger(budget={self._budget!s}, charges={len(self._charges)}, spent={_fmt(self.spent())})"

    # ---- internals ---------------------------------------------------------------------------

    def _check_known(self, guarantee: Any) -> None:
        """:meth:`_check_compatible`, once per guarantee object: a run charges the same few objects
        over and over. Keyed by identity; the entry holds the object, so its id cannot be reused."""
        known = self._by_object.get(id(guarantee))
        if known is None or known[0] is not guarantee:
            self._check_compatible(guarantee)
            self._by_object[id(guarantee)] = (guarantee, None)

    def _check_compatible(self, guarantee: Any) -> None:
        if isinstance(self._budget, PureDP):
            if isinstance(guarantee, PureDP):
                return
            if not isinstance(guarantee, (ZCDP, ApproxDP, RDP)) and _mechanism_pure(guarantee) is not None:
                return
            raise AccountingError("guarantee", guarantee, "a pure-DP guarantee or mechanism (the budget is pure DP)")
        if isinstance(self._budget, ZCDP):
            if isinstance(guarantee, (PureDP, ZCDP)):
                return
            if not isinstance(guarantee, (ApproxDP, RDP)) and (_mechanism_zcdp(guarantee) is not None or _mechanism_pure(guarantee) is not None):
                return
            raise AccountingError("guarantee", guarantee, "a pure-DP or zCDP guarantee or mechanism (the budget is zCDP)")

    def _within(self, spent: float | None) -> bool:
        return spent is None or spent <= self._main_parameter(self._budget)

    @staticmethod
    def _main_parameter(g: Budget) -> float:
        return g.rho if isinstance(g, ZCDP) else g.epsilon

    def _spend(self, charges: Sequence[Charge]) -> float | None:
        """The worst user's spend in the budget's main parameter (eps, or rho), or None."""
        if not charges:
            return None
        worst = -math.inf
        for multiset in _user_groups(charges):
            worst = max(worst, self._compose(charges, multiset))
        return worst

    def _compose(self, charges: Sequence[Charge], multiset: tuple[tuple[int, int], ...]) -> float:
        """Compose the charges one group of users shares, given as ((charge index, count), ...)
        (canonical order, memoised by :func:`_compose_into`, across ledgers)."""
        return compose_canonical(self._budget, [(charges[i].guarantee, n) for i, n in multiset])

    def _wrap(self, value: float) -> Budget:
        if isinstance(self._budget, PureDP):
            return PureDP(value)
        if isinstance(self._budget, ZCDP):
            return ZCDP(value)
        return ApproxDP(value, self._budget.delta)


def _no_epsilon(spend: float, budget: Budget) -> str:
    """Why a spend is infinite, for a refusal's message."""
    if spend != math.inf or not isinstance(budget, ApproxDP):
        return ""
    return f" (no eps holds at delta = {budget.delta:g}: a user's approximate-DP charges and sampler slack use up that delta)"


def _trail_json(name: str, budget: Budget, charges: Sequence[Charge], spent: Budget | None) -> str:
    """The JSON trail: budget, every charge (guarantee or mechanism parameters, participants), spend."""
    return json.dumps(
        {
            "format": "dpverify-ledger/1",
            "name": name,
            "budget": _guarantee_to_dict(budget),
            "charges": [
                {"label": c.label, "guarantee": _guarantee_to_dict(c.guarantee), "participants": _participants_to_json(c.participants)}
                for c in charges
            ],
            "spent": _guarantee_to_dict(spent) if charges else None,
        },
        indent=2,
    )


def _fmt(g: Any) -> str:
    return "nothing" if g is None else str(g)


@functools.lru_cache(maxsize=4096)
def _memo_pure(mechanism: Any) -> PureDP | None:
    return mechanism.pure()


@functools.lru_cache(maxsize=4096)
def _memo_zcdp(mechanism: Any) -> ZCDP | None:
    return mechanism.zcdp()


def _mechanism_pure(mechanism: Any) -> PureDP | None:
    """``mechanism.pure()``, memoised: mechanisms are frozen values, and every release of a run
    charges one of a few (each pure() is a certified Arb evaluation)."""
    try:
        return _memo_pure(mechanism)
    except TypeError:  # an unhashable mechanism
        return mechanism.pure()


def _mechanism_zcdp(mechanism: Any) -> ZCDP | None:
    try:
        return _memo_zcdp(mechanism)
    except TypeError:
        return mechanism.zcdp()


def _compose_into(budget: Budget, guarantees: list[tuple[Any, int]]) -> float:
    """The composition of ``guarantees`` (each with a multiplicity) in the budget's main parameter.

    Memoised across ledgers (a sweep's runs charge the same few guarantees): budgets, guarantees
    and mechanisms are frozen values, so equal keys mean equal compositions."""
    try:
        return _compose_memo(budget, tuple(guarantees))
    except TypeError:  # an unhashable guarantee
        return _compose_uncached(budget, guarantees)


@functools.lru_cache(maxsize=4096)
def _compose_memo(budget: Budget, guarantees: tuple[tuple[Any, int], ...]) -> float:
    return _compose_uncached(budget, list(guarantees))


on_routes_changed(_compose_memo.cache_clear)  # a route added to the planner changes spends


def _compose_uncached(budget: Budget, guarantees: list[tuple[Any, int]]) -> float:
    if isinstance(budget, PureDP):
        parts = [(g if isinstance(g, PureDP) else _mechanism_pure(g)).times(n) for g, n in guarantees]
        return parts[0].compose(*parts[1:]).epsilon
    if isinstance(budget, ZCDP):
        parts = []
        for g, n in guarantees:
            if isinstance(g, ZCDP):
                z = g
            elif isinstance(g, PureDP):
                z = g.to_zcdp()
            else:
                z = _mechanism_zcdp(g) or _mechanism_pure(g).to_zcdp()
            parts.append(z.times(n))
        return parts[0].compose(*parts[1:]).rho
    # (eps, delta) budget. Charges executed within a total variation t of their analysed mechanism
    # (WithinTotalVariation) pay (1 + e^eps) sum t in delta, eps the budget's (every accepted spend
    # is below it), and are composed as their analysed mechanisms (accounting._core._total_variation).
    if any(isinstance(g, WithinTotalVariation) for g, _ in guarantees):
        total = _sum_up(*(times_total_variation(g.total_variation, n) for g, n in guarantees if isinstance(g, WithinTotalVariation)))
        try:
            left = delta_before_total_variation(budget.epsilon, budget.delta, total)
        except AccountingError:
            return math.inf  # the samplers' slack alone uses up delta
        return _compose_uncached(ApproxDP(budget.epsilon, left), [(g.mechanism if isinstance(g, WithinTotalVariation) else g, n) for g, n in guarantees])
    # (eps, delta) budget: the planner's "ledger" policy (accounting._routing._routes.ledger_epsilon): the
    # analytic Gaussian, the shuffle amplification routes for rounds of one shuffled protocol, the
    # RDP curves summed (approximate-DP charges by basic composition) and every registered route;
    # the smallest certified value. A run's budget is computed by the same policy.
    return ledger_epsilon(guarantees, budget.delta)


def _sort_key(g: Any) -> str:
    try:
        return _memo_spec(g)
    except TypeError:  # unhashable
        return _spec_or_repr(g)


def _spec_or_repr(g: Any) -> str:
    try:
        return guarantee_spec(g)
    except (AccountingError, TypeError):  # a free-form RDP curve: in-memory ledgers only
        return "~" + repr(g)


_memo_spec = functools.lru_cache(maxsize=4096)(_spec_or_repr)


def canonical_multiset(pairs: Sequence[tuple[Any, int]]) -> list[tuple[Any, int]]:
    """One user's charges as (guarantee, count) with equal guarantees merged and in a fixed order
    (by :func:`guarantee_spec`): composition is then a function of the multiset alone, whatever
    order the charges came in, so the in-memory and the durable ledgers compute identical values."""
    merged: list[list] = []
    for g, n in pairs:
        for item in merged:
            if item[0] is g or item[0] == g:
                item[1] += n
                break
        else:
            merged.append([g, n])
    if len(merged) > 1:
        merged.sort(key=lambda item: _sort_key(item[0]))
    return [(g, n) for g, n in merged]


def compose_canonical(budget: Budget, pairs: Sequence[tuple[Any, int]]) -> float:
    """The spend of one user touched by ``pairs`` (guarantee, count), in the budget's main parameter."""
    return _compose_into(budget, canonical_multiset(pairs))

def _user_groups(charges: Sequence[Charge]) -> Iterable[tuple[tuple[int, int], ...]]:
    """The distinct multisets of charges that some user is touched by, as ((index, count), ...)."""
    everyone = [i for i, c in enumerate(charges) if c.participants is None]
    scoped = [i for i, c in enumerate(charges) if c.participants is not None]
    if not scoped:
        yield tuple((i, 1) for i in everyone)
        return
    # Coordinate compression: elementary intervals between all range ends and ids.
    points = []
    for i in scoped:
        p = charges[i].participants
        if isinstance(p, range):
            points.extend((p.start, p.stop))
        else:
            points.append(p)
            points.append(p + 1)
    cuts = np.unique(np.concatenate([np.atleast_1d(np.asarray(x, dtype=np.int64)) for x in points]))
    n_intervals = len(cuts) - 1
    rng = np.random.default_rng(0x5EED)  # fixed: signatures only need to be distinct, not secret
    sig_a = np.zeros(n_intervals, dtype=np.uint64)
    sig_b = np.zeros(n_intervals, dtype=np.uint64)
    covered = np.zeros(n_intervals, dtype=bool)
    for i in scoped:
        p = charges[i].participants
        ha, hb = rng.integers(1, 2**63, size=2, dtype=np.uint64)
        if isinstance(p, range):
            lo = np.searchsorted(cuts, p.start)
            hi = np.searchsorted(cuts, p.stop)
            sig_a[lo:hi] += ha
            sig_b[lo:hi] += hb
            covered[lo:hi] = True
        else:
            idx = np.searchsorted(cuts, p)
            sig_a[idx] += ha
            sig_b[idx] += hb
            covered[idx] = True
    if not covered.all():
        # Users in gaps are touched only by the charges on everyone.
        if everyone:
            yield tuple((i, 1) for i in everyone)
    keys = sig_a[covered].astype(np.uint64), sig_b[covered].astype(np.uint64)
    starts = cuts[:-1][covered]
    combined = np.stack(keys, axis=1)
    _, first = np.unique(combined, axis=0, return_index=True)
    for position in first:
        user = starts[position]
        members = [i for i in scoped if _contains(charges[i].participants, user)]
        yield tuple((i, 1) for i in everyone + members)


def _contains(participants: Participants, user: int) -> bool:
    if isinstance(participants, range):
        return participants.start <= user < participants.stop
    index = np.searchsorted(participants, user)
    return bool(index < participants.size and participants[index] == user)
