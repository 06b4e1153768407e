"""The estimators: lower confidence bounds on epsilon, on delta at a given epsilon, and on
Renyi divergences, from histograms of two disjoint samples per input.

Every estimator works on :class:`Counts`: for one view (a partition of the output space into
cells, see :mod:`._views`), the cell counts of a *selection* sample and of a *bound* sample under
P = M(D) and Q = M(D'). The selection sample chooses events (or a coarser partition); the bound
sample, drawn independently, is used for nothing but the final confidence statement. Conditional
on the selection sample the chosen events are fixed sets, so the exact binomial bounds computed
on the bound sample hold at their stated levels, and a union (Bonferroni) bound over the few
chosen events makes the maximum over them valid. The selection sample itself has two halves:
candidates are built and ranked on the *ranking* half and the shortlist re-scored on the
*validation* half, so that events which only looked good by chance (the winner's curse of
ranking thousands of candidates) are not the ones kept.

Events are subsets of the whole output space defined by the selection sample alone:

- singletons {x = k} for cells k seen in the selection sample;
- tails {x >= t}, {x <= t} for ordered views, t a selection-seen cell;
- likelihood-ratio events {x : r(x) >= r_j}, r the smoothed ranking-sample log-ratio
  log((p_k + 1/2)/(n_p + 1)) - log((q_k + 1/2)/(n_q + 1)) (cells never seen in the selection
  sample get the ratio of zero counts, a fixed value), r_j a selection-seen ratio. These are the
  Neyman-Pearson sets: the optimal events for epsilon and for delta(eps) are of this form.

**epsilon** (pure DP): for a chosen event E with bound-sample counts a of n (under P) and b of m
(under Q), log(CP_lower(a; n, l_i) / CP_upper(b; m, l_i)) for the i-th of K chosen events, ranked
best first on the selection sample, with l_i = w_i level / 2 and weights w_1 = EVENT_FOCUS, the
rest (1 - EVENT_FOCUS) / (K - 1) (a weighted Bonferroni split: the weights sum to one and depend
on the selection sample only): with probability >= 1 - level all 2K one-sided bounds hold and
then every log-ratio bound is below log(P(E)/Q(E)) <= epsilon. Putting most of the budget on the
event the selection sample prefers costs little when it is not the best (its share is still
EVENT_FOCUS) and narrows the bound of the one that usually is.

**delta** at epsilon: CP_lower(a; n, l) - e^epsilon CP_upper(b; m, l), same union bound; below
P(E) - e^eps Q(E) <= sup_E (P(E) - e^eps Q(E)) = delta(eps).

**Renyi**: the selection sample groups cells into B bins (a partition, by selection log-ratio
quantiles); by data processing D_alpha(P_B || Q_B) <= D_alpha(P || Q). Two-sided CP intervals on
the 2B bin probabilities at level/(2B) each form a box that contains the true binned laws with
probability >= 1 - level, simultaneously for every order alpha; the bound is the minimum of
D_alpha over the box intersected with the two probability simplices, bounded from below by a
dual certificate (see :func:`renyi_box_lower`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from scipy.stats import norm as _norm

from .._statistics._confidence import cp_lower, cp_upper
from ._views import Hist

__all__ = [
    "Counts",
    "EventBound",
    "EventChoice",
    "RenyiBound",
    "align",
    "bound_delta",
    "bound_epsilon",
    "choose_delta_events",
    "choose_epsilon_events",
    "event_levels",
    "nominal_event_level",
    "ranked_events",
    "renyi_box_lower",
    "renyi_lower",
]

#: Events chosen per (pair, direction) for the epsilon and delta estimators (the union bound is
#: over the events actually chosen, at most this many).
DEFAULT_EVENTS = 8
#: Share of a result's error budget given to its first-ranked event (the rest split evenly over
#: the others): a weighted Bonferroni split, chosen on the selection sample (see event_levels).
EVENT_FOCUS = 0.8
#: Candidate bin counts for the Renyi partition.
RENYI_BINS = (2, 3, 4, 6, 8, 12, 16, 24)


@dataclass(frozen=True)
class Counts:
    """Aligned cell counts of one view: ranking (``_a``), validation (``_b``) and bound (``_est``)
    samples under P and Q. Ranking and validation together form the selection sample."""

    view: Any
    keys: np.ndarray
    p_a: np.ndarray
    q_a: np.ndarray
    p_b: np.ndarray
    q_b: np.ndarray
    p_est: np.ndarray
    q_est: np.ndarray

    @property
    def n_a_p(self) -> int:
        return int(self.p_a.sum())

    @property
    def n_a_q(self) -> int:
        return int(self.q_a.sum())

    @property
    def n_b_p(self) -> int:
        return int(self.p_b.sum())

    @property
    def n_b_q(self) -> int:
        return int(self.q_b.sum())

    @property
    def n_est_p(self) -> int:
        return int(self.p_est.sum())

    @property
    def n_est_q(self) -> int:
        return int(self.q_est.sum())

    def swapped(self) -> "Counts":
        return Counts(self.view, self.keys, self.q_a, self.p_a, self.q_b, self.p_b, self.q_est, self.p_est)

    def log_ratio_rank(self) -> np.ndarray:
        """Smoothed ranking-sample log-ratio of every cell (a fixed value for unseen cells)."""
        return (np.log((self.p_a + 0.5) / (self.n_a_p + 1.0))
                - np.log((self.q_a + 0.5) / (self.n_a_q + 1.0)))


def align(view: Any, hists: Sequence[Hist]) -> Counts:
    """Put six histograms of one view (P_a, Q_a, P_b, Q_b, P_est, Q_est) on the union of keys."""
    keys = np.concatenate([h[0] for h in hists], axis=0)
    if keys.ndim == 2:
        union, inverse = np.unique(keys, axis=0, return_inverse=True)
    else:
        union, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(-1)
    out = []
    start = 0
    for h in hists:
        stop = start + len(h[1])
        c = np.zeros(len(union), dtype=np.int64)
        np.add.at(c, inverse[start:stop], h[1])
        out.append(c)
        start = stop
    return Counts(view, union, *out)


# ------------------------------------------------------------------------------------------
# Event selection


@dataclass(frozen=True)
class _Event:
    """An event of one view: its cells among the keys it was chosen on, and the rule that fixes
    it on the whole output space (so it can be found among keys first seen in the bound sample):
    ("key", k) one cell, ("upper", k) / ("lower", k) the cells >= k / <= k of an ordered view,
    ("ratio", t) the cells whose smoothed ranking-sample log-ratio is >= t (a fixed value for
    cells the ranking sample never saw). The rule is a function of the selection sample alone."""

    view_index: int
    mask: np.ndarray
    family: str
    rule: tuple[str, Any]

    def on(self, c: "Counts") -> "_Event":
        """The same event on ``c``, whose keys include the chosen-on keys (and maybe more)."""
        kind, value = self.rule
        if kind == "key":
            mask = np.all(c.keys == value, axis=1) if c.keys.ndim == 2 else c.keys == value
        elif kind == "upper":
            mask = c.keys >= value
        elif kind == "lower":
            mask = c.keys <= value
        elif kind == "ratio":
            mask = c.log_ratio_rank() >= value
        else:  # pragma: no cover - every candidate family names its rule
            raise ValueError(f"event rule {kind!r}")
        return _Event(self.view_index, mask, self.family, self.rule)


def _candidates(c: Counts) -> list[tuple[str, np.ndarray, np.ndarray, Callable[[int], np.ndarray]]]:
    """Families of events built on the ranking sample: (name, its counts under P, under Q, index -> mask)."""
    seen = np.flatnonzero((c.p_a + c.q_a) > 0)
    out: list[tuple[str, np.ndarray, np.ndarray, Callable[[int], np.ndarray]]] = []
    if seen.size == 0:
        return out
    out.append(("singleton", c.p_a[seen], c.q_a[seen], lambda i, s=seen: (_single(c, s[i]), ("key", c.keys[s[i]]))))
    if c.view.ordered:
        up_p = np.cumsum(c.p_a[::-1])[::-1]
        up_q = np.cumsum(c.q_a[::-1])[::-1]
        out.append(("upper tail", up_p[seen], up_q[seen],
                    lambda i, s=seen: (np.arange(len(c.keys)) >= s[i], ("upper", c.keys[s[i]]))))
        lo_p = np.cumsum(c.p_a)
        lo_q = np.cumsum(c.q_a)
        out.append(("lower tail", lo_p[seen], lo_q[seen],
                    lambda i, s=seen: (np.arange(len(c.keys)) <= s[i], ("lower", c.keys[s[i]]))))
    r = c.log_ratio_rank()
    order = np.argsort(-r, kind="stable")
    cp = np.cumsum(c.p_a[order])
    cq = np.cumsum(c.q_a[order])
    r_sorted = r[order]
    # cumulative counts up to the last cell of each tie group of ratio values (ranking-seen cells)
    thresholds = np.unique(r[seen])[::-1]
    ends = np.searchsorted(-r_sorted, -thresholds, side="right") - 1
    out.append(("likelihood-ratio", cp[ends], cq[ends], lambda i, t=thresholds: (r >= t[i], ("ratio", t[i]))))
    return out


def _single(c: Counts, index: int) -> np.ndarray:
    mask = np.zeros(len(c.keys), dtype=bool)
    mask[index] = True
    return mask


Score = Callable[[np.ndarray, np.ndarray, int, int], np.ndarray]


def ranked_events(counts: Sequence[Counts], score: Score, max_events: int) -> list[tuple[float, _Event]]:
    """Up to ``max_events`` distinct events, chosen on the selection sample only, best first.

    Candidates are built and ranked on the ranking half; a shortlist -- the best two of every
    family of every view, then the best of all by rank until ``4 * max_events`` more -- is
    re-scored on the validation half, and the best ``max_events`` by that score kept, in that
    order. ``score(a, b, n_p, n_q)`` is the bound an event with counts a of n_p (P) and b of n_q
    (Q) gets *at the size of the sample it is scored on* (not rescaled to the bound sample): an
    event with few counts must show a larger effect to be kept, which is what protects the
    choice from the winner's curse among many small, noisy candidate events. Every family gets
    its own places on the shortlist because one family's many near-copies of a noise-inflated
    event (the likelihood-ratio unions of a fine partition) would otherwise crowd out a better
    event of another (the single tail that carries the whole effect).
    """
    scored: list[tuple[float, int, int, int]] = []
    leaders: list[tuple[float, int, int, int]] = []
    families = []
    for vi, c in enumerate(counts):
        for fam in _candidates(c):
            fi = len(families)
            families.append(fam)
            s = score(fam[1].astype(np.float64), fam[2].astype(np.float64), c.n_a_p, c.n_a_q)
            s = np.where(np.isnan(s), -np.inf, s)
            top = np.argsort(-s, kind="stable")[: 4 * max_events]
            scored.extend((float(s[i]), fi, int(i), vi) for i in top)
            leaders.extend((float(s[i]), fi, int(i), vi) for i in top[:2])
    scored.sort(key=lambda t: (-t[0], t[1], t[2]))
    leaders.sort(key=lambda t: (-t[0], t[1], t[2]))
    shortlist: list[tuple[float, float, _Event]] = []
    seen_masks: set[tuple[int, bytes]] = set()
    cap = 4 * max_events + len(leaders)
    for s_rank, fi, i, vi in leaders + scored:
        if len(shortlist) >= cap or s_rank == -np.inf:
            continue
        name, _, _, make = families[fi]
        mask, rule = make(i)
        key = (vi, np.packbits(mask).tobytes())
        if key in seen_masks or not mask.any():
            continue
        seen_masks.add(key)
        c = counts[vi]
        a = np.array([float(c.p_b[mask].sum())])
        b = np.array([float(c.q_b[mask].sum())])
        s_valid = float(score(a, b, c.n_b_p, c.n_b_q)[0])
        shortlist.append((s_valid if not math.isnan(s_valid) else -math.inf, s_rank, _Event(vi, mask, name, rule)))
    shortlist.sort(key=lambda t: (-t[0], -t[1]))
    return [(s_valid, ev) for s_valid, _, ev in shortlist[:max_events]]


def event_levels(level: float, count: int, focus: float) -> list[float]:
    """Error budgets of ``count`` events ranked best first: ``focus`` of ``level`` on the first.

    A weighted Bonferroni split: the shares sum to ``level``, and since the ranking comes from
    the selection sample only, each event is a fixed set when its bound-sample statement is made.
    ``focus = 0`` (or one event) is the even split.
    """
    if count <= 1:
        return [level] * count
    if focus <= 0.0:
        return [level / count] * count
    rest = level * (1.0 - focus) / (count - 1)
    return [level * focus] + [rest] * (count - 1)


def _scaled(a: np.ndarray, n_sel: int, n_est: int) -> np.ndarray:
    """Selection counts rescaled to the bound sample's size (to *predict* its bound only)."""
    return a * (n_est / max(n_sel, 1))


# ------------------------------------------------------------------------------------------
# epsilon and delta


@dataclass(frozen=True)
class EventBound:
    """A bound witnessed by one event of the bound sample."""

    lower: float
    estimate: float
    event: str
    family: str
    counts: tuple[int, int, int, int]  # (a, n, b, m)
    events_tested: int
    share: float = 1.0  # the fraction of the result's error budget this event's two bounds had


def _event_counts(counts: Sequence[Counts], ev: _Event) -> tuple[int, int, int, int]:
    c = counts[ev.view_index]
    return int(c.p_est[ev.mask].sum()), c.n_est_p, int(c.q_est[ev.mask].sum()), c.n_est_q


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def event_epsilon_bound(a: int, n: int, b: int, m: int, each: float) -> float:
    """log CP_lower(a; n, each) - log CP_upper(b; m, each): the event's epsilon lower bound (may be < 0)."""
    return _log(float(cp_lower(a, n, each))) - _log(float(cp_upper(b, m, each)))


def event_delta_bound(a: int, n: int, b: int, m: int, each: float, factor: float) -> float:
    """CP_lower(a; n, each) - e^eps CP_upper(b; m, each), ``factor`` = e^eps: the event's delta lower bound."""
    return float(cp_lower(a, n, each)) - factor * float(cp_upper(b, m, each))


@dataclass(frozen=True)
class EventChoice:
    """Events chosen on the selection sample, best first, and the first one's validation score
    (the bound it would get at the validation sample's size: a prediction, never reported)."""

    events: tuple[_Event, ...]
    predicted: float

    @property
    def views(self) -> set[int]:
        """The views the events are cells of: the only ones the bound sample must count."""
        return {ev.view_index for ev in self.events}

    def on(self, counts: Sequence[Counts]) -> "EventChoice":
        """The same events on ``counts`` (the chosen-on keys and those first seen in the bound sample)."""
        return EventChoice(tuple(ev.on(counts[ev.view_index]) for ev in self.events), self.predicted)


def _wilson(k: np.ndarray, n: float, z: float, sign: float) -> np.ndarray:
    """Wilson's score bound (lower for sign = -1, upper for +1) of k successes in n trials."""
    k = np.asarray(k, dtype=np.float64)
    n = float(max(n, 1))
    z2 = z * z
    centre = (k + z2 / 2) / (n + z2)
    half = z * np.sqrt(np.maximum(k * (n - k) / n, 0.0) + z2 / 4) / (n + z2)
    return np.clip(centre + sign * half, 0.0, 1.0)


def _epsilon_score(nominal: float) -> Score:
    # Selection only ranks candidates, so any function of the selection sample will do: Wilson's
    # closed-form bounds stand in for Clopper-Pearson's beta quantiles (within a few per cent of
    # them, and thousands of times cheaper over thousands of candidates); reported bounds stay exact.
    z = float(_norm.isf(nominal))

    def score(a: np.ndarray, b: np.ndarray, n_p: int, n_q: int) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(_wilson(a, n_p, z, -1.0)) - np.log(_wilson(b, n_q, z, 1.0))
    return score


def _delta_score(nominal: float, factor: float) -> Score:
    z = float(_norm.isf(nominal))

    def score(a: np.ndarray, b: np.ndarray, n_p: int, n_q: int) -> np.ndarray:
        return _wilson(a, n_p, z, -1.0) - factor * _wilson(b, n_q, z, 1.0)
    return score


def _choice(ranked: list[tuple[float, _Event]]) -> EventChoice:
    return EventChoice(tuple(ev for _, ev in ranked), ranked[0][0] if ranked else -math.inf)


def _at_scale(score: Score, scale: float) -> Score:
    """``score`` of counts rescaled by ``scale``: a prediction of the bound at ``scale`` times the size."""
    if scale == 1.0:
        return score
    return lambda a, b, n_p, n_q: score(a * scale, b * scale, max(1, round(n_p * scale)), max(1, round(n_q * scale)))


def choose_epsilon_events(counts: Sequence[Counts], nominal: float, max_events: int = DEFAULT_EVENTS, scale: float = 1.0) -> EventChoice:
    """Events for the epsilon bound, scored with one-sided bounds at the ``nominal`` level
    (on counts rescaled by ``scale``: the pair search predicts the bound of a larger audit)."""
    return _choice(ranked_events(counts, _at_scale(_epsilon_score(nominal), scale), max_events))


def choose_delta_events(counts: Sequence[Counts], epsilon: float, nominal: float, max_events: int = DEFAULT_EVENTS,
                        scale: float = 1.0) -> EventChoice:
    """Events for the delta(epsilon) bound, scored with one-sided bounds at the ``nominal`` level."""
    return _choice(ranked_events(counts, _at_scale(_delta_score(nominal, math.exp(epsilon)), scale), max_events))


def _bound_events(counts: Sequence[Counts], choice: EventChoice, level: float, focus: float,
                  bound: Callable[[int, int, int, int, float], float], estimate: Callable[[int, int, int, int], float]) -> EventBound:
    if not choice.events:
        return EventBound(0.0, 0.0, "no event (empty selection sample)", "", (0, 0, 0, 0), 0)
    best: EventBound | None = None
    for ev, share in zip(choice.events, event_levels(level, len(choice.events), focus)):
        a, n, b, m = _event_counts(counts, ev)
        c = counts[ev.view_index]
        cand = EventBound(max(bound(a, n, b, m, share / 2), 0.0), estimate(a, n, b, m), c.view.describe(c.keys, ev.mask),
                          ev.family, (a, n, b, m), len(choice.events), share / level)
        if best is None or cand.lower > best.lower or (cand.lower == best.lower and cand.estimate > best.estimate):
            best = cand
    return best  # type: ignore[return-value]  (events is non-empty)


def _epsilon_estimate(a: int, n: int, b: int, m: int) -> float:
    return _log(a / n) - _log(b / m) if a > 0 else (-math.inf if b > 0 else 0.0)


def bound_epsilon(counts: Sequence[Counts], choice: EventChoice, level: float, focus: float = EVENT_FOCUS) -> EventBound:
    """Lower confidence bound (error <= ``level``) on sup_E log P(E)/Q(E) over the chosen events.

    Event i gets the error share ``event_levels(level, K, focus)[i]``, half to each one-sided
    bound: with probability >= 1 - level all 2K bounds hold, and then each log-ratio bound is
    below log(P(E)/Q(E)) <= epsilon.
    """
    return _bound_events(counts, choice, level, focus, event_epsilon_bound, _epsilon_estimate)


def bound_delta(counts: Sequence[Counts], choice: EventChoice, epsilon: float, level: float, focus: float = EVENT_FOCUS) -> EventBound:
    """Lower confidence bound (error <= ``level``) on delta(eps) = sup_E P(E) - e^eps Q(E) over the chosen events."""
    factor = math.exp(epsilon)
    return _bound_events(counts, choice, level, focus,
                         lambda a, n, b, m, each: event_delta_bound(a, n, b, m, each, factor),
                         lambda a, n, b, m: a / n - factor * b / m)


def nominal_event_level(level: float, max_events: int, focus: float = EVENT_FOCUS) -> float:
    """The one-sided level the first-ranked event will get: the level candidates are scored at."""
    return event_levels(level, max(max_events, 1), focus)[0] / 2


# ------------------------------------------------------------------------------------------
# Renyi


def _lp_min(cost: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[float, np.ndarray] | None:
    """min cost.x over lo <= x <= hi, sum x = 1 (exact greedy); None if infeasible."""
    x = lo.copy()
    remaining = 1.0 - float(lo.sum())
    if remaining < 0 or float(hi.sum()) < 1.0:
        return None
    for i in np.argsort(cost, kind="stable"):
        if remaining <= 0:
            break
        step = min(hi[i] - lo[i], remaining)
        x[i] += step
        remaining -= step
    return float(np.dot(cost, x)), x


def _certificate(a: float, log_r: np.ndarray, p_lo: np.ndarray, p_hi: np.ndarray, q_lo: np.ndarray,
                 q_hi: np.ndarray) -> tuple[float, np.ndarray, np.ndarray] | None:
    """The tangent-plane bound at ratios exp(log_r): (lower bound on D_a, LP minimisers p, q)."""
    log_A = math.log(a) + (a - 1.0) * log_r
    log_B = math.log(a - 1.0) + a * log_r
    shift = float(max(log_A.max(), log_B.max()))
    keep = (log_B - shift) > -700.0  # an underflowing tangent is replaced by the trivial (0, 0)
    A = np.where(keep, np.exp(log_A - shift), 0.0)
    B = np.where(keep, -np.exp(log_B - shift), 0.0)
    lp_p = _lp_min(A, p_lo, p_hi)
    lp_q = _lp_min(B, q_lo, q_hi)
    if lp_p is None or lp_q is None:
        return None
    value = lp_p[0] + lp_q[0]
    value -= 1e-9 * (float(np.dot(np.abs(A), lp_p[1])) + float(np.dot(np.abs(B), lp_q[1])))
    bound = (math.log(value) + shift) / (a - 1.0) if value > 0 else 0.0
    return bound, lp_p[1], lp_q[1]


def _primal_ratios(a: float, p_lo: np.ndarray, p_hi: np.ndarray, q_lo: np.ndarray, q_hi: np.ndarray,
                   p0: np.ndarray, q0: np.ndarray) -> np.ndarray | None:
    """Log-ratios of an approximate minimiser of D_a over the box (SLSQP; a heuristic only)."""
    from scipy.optimize import minimize

    bins = len(p_lo)
    lo = np.r_[np.maximum(p_lo, 1e-12), np.maximum(q_lo, 1e-12)]
    hi = np.maximum(np.r_[p_hi, q_hi], lo)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        lp, lq = np.log(x[:bins]), np.log(x[bins:])
        t = a * lp + (1.0 - a) * lq
        top = t.max()
        w = np.exp(t - top)
        total = w.sum()
        w /= total
        grad = np.r_[a * w / x[:bins], (1.0 - a) * w / x[bins:]] / (a - 1.0)
        return (top + math.log(total)) / (a - 1.0), grad

    x0 = np.clip(np.r_[p0, q0], lo, hi)
    cons = ({"type": "eq", "fun": lambda x: x[:bins].sum() - 1.0, "jac": lambda x: np.r_[np.ones(bins), np.zeros(bins)]},
            {"type": "eq", "fun": lambda x: x[bins:].sum() - 1.0, "jac": lambda x: np.r_[np.zeros(bins), np.ones(bins)]})
    try:
        res = minimize(objective, x0, jac=True, method="SLSQP", bounds=list(zip(lo, hi)), constraints=cons,
                       options={"maxiter": 200, "ftol": 1e-13})
    except (ValueError, FloatingPointError):
        return None
    x = np.clip(res.x, lo, hi)
    return np.log(x[:bins]) - np.log(x[bins:])


def renyi_box_lower(order: float, p_lo: np.ndarray, p_hi: np.ndarray, q_lo: np.ndarray, q_hi: np.ndarray,
                    start: np.ndarray, iterations: int = 30, polish: bool = True) -> tuple[float, np.ndarray]:
    """A certified lower bound on min D_order(p || q) over {p in box, q in box, both sum to 1}.

    g(p, q) = p^a q^(1-a) is convex and 1-homogeneous for a > 1, so every tangent plane through
    the origin lies below it: g(p, q) >= A p + B q with A = a r^(a-1), B = (1-a) r^a for any
    ratio r > 0 (and A = B = 0 is also valid). Hence for any choice of ratios r_i,
    sum_i g(p_i, q_i) >= min over the box of sum_i A_i p_i + min over the box of sum_i B_i q_i,
    two linear programs over {box, sum = 1} solved exactly by the greedy fill. *Every* choice of
    r gives a valid bound (weak duality), and the bound equals the true minimum when r is the
    minimiser's ratio (the tangent plane there supports the convex objective). We therefore try
    several r and keep the best certificate: the point estimate ``start``, damped fixed-point
    iterations r <- ratio of the LP minimisers, and (``polish``) the ratios of an SLSQP
    minimiser. The optimiser only proposes r; the reported number is always a certificate.
    Terms are scaled by a common factor against overflow; a relative margin of 1e-9 covers
    floating-point error in the sums.

    Returns (lower bound on D_order, ratios used); 0 if the box holds no pair of distributions
    (then the confidence event has failed and any answer is allowed) or the certificate is <= 0.
    """
    a = float(order)
    best = 0.0
    log_r = np.log(np.clip(start, 1e-300, 1e300))
    best_r = log_r
    last = None
    upper = math.inf  # the smallest objective value seen at a feasible point (duality gap check)
    for _ in range(iterations):
        cert = _certificate(a, log_r, p_lo, p_hi, q_lo, q_hi)
        if cert is None:
            return 0.0, np.exp(log_r)
        if cert[0] > best:
            best, best_r = cert[0], log_r
        last = cert
        upper = min(upper, _plugin_renyi(a, cert[1], cert[2]))
        if upper - best <= 1e-7 * (1.0 + abs(upper)):
            return max(best, 0.0), np.exp(best_r)
        new = np.log(np.clip(cert[1], 1e-300, None)) - np.log(np.clip(cert[2], 1e-300, None))
        log_r = 0.5 * log_r + 0.5 * np.clip(new, log_r - 5.0, log_r + 5.0)
    if polish and last is not None and upper - best > 1e-7 * (1.0 + abs(upper)):
        starts = [(last[1], last[2]), ((p_lo + p_hi) / 2, (q_lo + q_hi) / 2)]
        for p0, q0 in starts:
            guess = _primal_ratios(a, p_lo, p_hi, q_lo, q_hi, p0, q0)
            if guess is not None and np.all(np.isfinite(guess)):
                cert = _certificate(a, guess, p_lo, p_hi, q_lo, q_hi)
                if cert is not None and cert[0] > best:
                    best, best_r = cert[0], guess
    return max(best, 0.0), np.exp(best_r)


def _plugin_renyi(order: float, p: np.ndarray, q: np.ndarray) -> float:
    """D_order of the normalised vectors p, q (inf if p is not absolutely continuous wrt q)."""
    p = p / p.sum()
    q = q / q.sum()
    if np.any((p > 0) & (q == 0)):
        return math.inf
    m = p > 0
    terms = order * np.log(p[m]) + (1.0 - order) * np.log(q[m])
    top = terms.max()
    return float((top + math.log(np.exp(terms - top).sum())) / (order - 1.0))


def _box(p_counts: np.ndarray, n: int, q_counts: np.ndarray, m: int, level: float) -> tuple[np.ndarray, ...]:
    """Simultaneous CP box: 2B two-sided intervals at ``level / (2B)`` each."""
    bins = len(p_counts)
    tail = level / (4 * bins)
    return (cp_lower(p_counts, n, tail), cp_upper(p_counts, n, tail),
            cp_lower(q_counts, m, tail), cp_upper(q_counts, m, tail))


@dataclass(frozen=True)
class RenyiBound:
    """Lower bounds on D_alpha(P || Q) at each order, from one partition."""

    orders: tuple[float, ...]
    lower: tuple[float, ...]
    estimate: tuple[float, ...]
    partition: str
    bins: int
    #: bound-sample counts of the chosen bins under P and Q (empty when no partition was found),
    #: so that the bound can be recomputed at another level (see :mod:`._rescore`)
    p_counts: tuple[float, ...] = ()
    q_counts: tuple[float, ...] = ()


def _groupings(c: Counts) -> list[tuple[np.ndarray, int]]:
    """Partitions of the cells by selection log-ratio quantiles (weighted by pooled mass)."""
    r = c.log_ratio_rank()
    seen = (c.p_a + c.q_a) > 0
    if not seen.any():
        return []
    weights = (c.p_a / max(c.n_a_p, 1) + c.q_a / max(c.n_a_q, 1))[seen]
    rs = r[seen]
    order = np.argsort(rs, kind="stable")
    cum = np.cumsum(weights[order])
    cum /= cum[-1]
    out = []
    seen_parts: set[bytes] = set()
    for bins in RENYI_BINS:
        cuts = []
        for j in range(1, bins):
            idx = int(np.searchsorted(cum, j / bins, side="left"))
            idx = min(idx, len(order) - 1)
            cuts.append(rs[order][idx])
        thresholds = np.unique(np.asarray(cuts))
        labels = np.searchsorted(thresholds, r, side="right")
        key = labels.tobytes()
        if key in seen_parts:
            continue
        seen_parts.add(key)
        out.append((labels, len(thresholds) + 1))
    return out


def renyi_lower(counts: Sequence[Counts], orders: Sequence[float], claims: Sequence[float], level: float) -> RenyiBound:
    """Lower confidence bounds (simultaneous over ``orders``, error <= ``level``) on D_alpha(P||Q).

    Candidate partitions (view and binning) are built on the ranking half of the selection
    sample; the one whose bound, predicted on the validation half, comes closest to (or furthest
    above) the claims (max over orders of lower / claim) is evaluated on the bound sample.
    """
    best_key = -math.inf
    best: tuple[Counts, np.ndarray, int] | None = None
    for c in counts:
        for labels, bins in _groupings(c):
            ps = np.bincount(labels, weights=c.p_b, minlength=bins)
            qs = np.bincount(labels, weights=c.q_b, minlength=bins)
            pe = _scaled(ps, c.n_b_p, c.n_est_p)
            qe = _scaled(qs, c.n_b_q, c.n_est_q)
            box = _box(pe, c.n_est_p, qe, c.n_est_q, level)
            start = (ps + 0.5) / (qs + 0.5) * ((c.n_b_q + 1.0) / (c.n_b_p + 1.0))
            key = -math.inf
            for order, claim in zip(orders, claims):
                lb, _ = renyi_box_lower(order, *box, start=start, iterations=8, polish=False)
                key = max(key, lb / claim if claim > 0 else lb)
            if key > best_key:
                best_key, best = key, (c, labels, bins)
    if best is None:
        return RenyiBound(tuple(orders), tuple(0.0 for _ in orders), tuple(0.0 for _ in orders), "no partition", 0)
    c, labels, bins = best
    pe = np.bincount(labels, weights=c.p_est, minlength=bins)
    qe = np.bincount(labels, weights=c.q_est, minlength=bins)
    box = _box(pe, c.n_est_p, qe, c.n_est_q, level)
    start = (pe + 0.5) / (qe + 0.5) * ((c.n_est_q + 1.0) / (c.n_est_p + 1.0))
    lowers, estimates = [], []
    for order in orders:
        lb, _ = renyi_box_lower(order, *box, start=start)
        lowers.append(lb)
        estimates.append(_plugin_renyi(order, pe, qe))
    desc = f"{bins} bins of {c.view.name} by selection likelihood ratio"
    return RenyiBound(tuple(orders), tuple(lowers), tuple(estimates), desc, bins,
                      tuple(float(x) for x in pe), tuple(float(x) for x in qe))
