"""Monotone-loss pairs of two mixtures of shifted Gaussians, for the PLD route (certified in Arb).

P = sum_i p_i N(a_i, sigma^2) and Q = sum_j r_j N(b_j, sigma^2) on the real line, with a privacy
loss L(x) = log dP/dQ(x) that is nondecreasing in x (the caller's construction guarantees it; the
two users below say why). Two dp_accounting events need such pairs:

- ``MixtureOfGaussiansDpEvent(sigma, c_i, p_i)`` (ADD_OR_REMOVE_ONE): P = sum_i p_i N(c_i), Q = N(0);
  with all c_i >= 0, L(x) = log sum_i p_i e^{(2 c_i x - c_i^2)/(2 sigma^2)} is a sum of
  nondecreasing exponentials inside a log (shifts all <= 0 are mirrored by x -> -x first);
- ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))`` under REPLACE_ONE (the replaced record keeps
  its coin): P = (1-q) N(0) + q N(1), Q = (1-q) N(0) + q N(-1); L(x) = log((1-q) + q e^{(2x-1)/(2s^2)})
  - log((1-q) + q e^{(-2x-1)/(2s^2)}) is increasing (first term up, second down); the pair is
  symmetric (x -> -x exchanges P and Q), as dp_accounting's REPLACE adjacency pair (which dominates
  every REPLACE_ONE pair of datasets: the proof is in :mod:`accounting._events._dp_event_mechanisms`).

For a loss level t, L > t exactly when x > x_t with L(x_t) = t (L continuous, nondecreasing), so
P(L > t) = sum_i p_i Phi((a_i - x_t)/sigma), Q(L > t) likewise, and the hockey-stick
delta(t) = P(L > t) - e^t Q(L > t) = max_y [P(x > y) - e^t Q(x > y)] (the maximiser is x_t).
x_t is found in floats (vectorised bisection), then *bracketed*: floats lo < hi with
L(lo) < t < L(hi) checked in Arb, so lo < x_t < hi; the survival functions decrease in y, so their
values at x_t lie between those at the exact floats hi and lo (the union of the two balls). When no bracket exists within 60 sigma of the shifts (t beyond the range L takes there), the
mass beyond is bounded directly: the ball spans the values at the far end and the limit.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from flint import arb

from .._core._certified import exact
from .._privacy_loss._pld_continuous import MonotoneLossPair, _phi
from .._core._validation import AccountingError

__all__ = ["GaussianMixtureLoss"]


#: the cost hint's constants (:meth:`GaussianMixtureLoss.point_cost`): seconds per grid point, and per shift
_POINT_SECONDS = 4.0e-6
_SHIFT_SECONDS = 7.5e-6


def _log_sum(consts, x: arb) -> arb:
    """log sum_i w_i e^{slope_i x - c_i} for consts ((log w_i, slope_i, c_i), ...), in Arb."""
    if len(consts) == 1:
        lw, slope, c = consts[0]
        return lw + slope * x - c
    terms = [lw + slope * x - c for lw, slope, c in consts]
    top = terms[0]
    for term in terms[1:]:
        top = top.max(term)
    total = (terms[0] - top).exp()
    for term in terms[1:]:
        total += (term - top).exp()
    return top + total.log()


def _loss_at(x: arb, cp, cq) -> arb:
    """The privacy loss log dP/dQ at x from the two laws' constants (:meth:`GaussianMixtureLoss._constants`)."""
    return _log_sum(cp, x) - _log_sum(cq, x)


class GaussianMixtureLoss(MonotoneLossPair):
    """(P, Q) = (sum_i p_i N(a_i, sigma^2), sum_j r_j N(b_j, sigma^2)) with L = log dP/dQ
    nondecreasing in x (module docstring). Weights are exact (normalised here); ``symmetric``
    declares that x -> -x exchanges P and Q."""

    def __init__(self, sigma, p_shifts, p_weights, q_shifts, q_weights, *, symmetric: bool = False, label: str = "") -> None:
        self.sigma = Fraction(sigma)
        if self.sigma <= 0:
            raise AccountingError("sigma", float(self.sigma), "a real number > 0")
        self.p = self._law("p", p_shifts, p_weights)
        self.q = self._law("q", q_shifts, q_weights)
        self.symmetric = symmetric
        self.label = label
        self._reverse: GaussianMixtureLoss | None = None  # reversed_pair(), built on first use
        s = float(self.sigma)
        self._pa = np.array([float(a) for a, _ in self.p])
        self._pw = np.log(np.array([float(w) for _, w in self.p]))
        self._qa = np.array([float(b) for b, _ in self.q])
        self._qw = np.log(np.array([float(w) for _, w in self.q]))
        shifts = [float(a) for a, _ in self.p + self.q]
        self._x_lo = min(shifts) - 60 * s
        self._x_hi = max(shifts) + 60 * s

    @staticmethod
    def _law(name, shifts, weights):
        pairs = [(Fraction(a), Fraction(w)) for a, w in zip(shifts, weights) if Fraction(w) != 0]
        if not pairs or len(list(shifts)) != len(list(weights)) or any(w < 0 for _, w in pairs):
            raise AccountingError(f"{name}_weights", weights, "non-negative weights, one per shift, not all 0")
        total = sum(w for _, w in pairs)
        return tuple((a, w / total) for a, w in pairs)

    # ---- the loss ------------------------------------------------------------------------------
    def _log_density_float(self, law_a, law_w, x: np.ndarray) -> np.ndarray:
        s2 = 2 * float(self.sigma) ** 2
        terms = law_w[None, :] + (2 * np.outer(x, law_a) - law_a[None, :] ** 2) / s2
        top = terms.max(axis=1)
        return top + np.log(np.exp(terms - top[:, None]).sum(axis=1))

    def _loss_float(self, x: np.ndarray) -> np.ndarray:
        return self._log_density_float(self._pa, self._pw, x) - self._log_density_float(self._qa, self._qw, x)

    def _constants(self) -> dict:
        """Arb constants at the current precision (built once per precision)."""
        from flint import ctx

        cache = self.__dict__.setdefault("_const_cache", {})
        if ctx.prec not in cache:
            s = exact(self.sigma)
            inv_var = 1 / (s * s)

            def law_consts(law):
                return [(exact(w).log(), exact(a) * inv_var, exact(a) * exact(a) * inv_var / 2) for a, w in law]

            cache[ctx.prec] = {
                "p": law_consts(self.p),
                "q": law_consts(self.q),
                "inv_sigma": 1 / s,
                "shifts": [exact(a) for a, _ in self.p] + [exact(b) for b, _ in self.q],
                "pw": [exact(w) for _, w in self.p],
                "qw": [exact(w) for _, w in self.q],
            }
        return cache[ctx.prec]

    def _log_density(self, law, x: arb) -> arb:
        consts = self._constants()["p" if law is self.p else "q"]
        terms = [lw + slope * x - c for lw, slope, c in consts]
        top = terms[0]
        for term in terms[1:]:
            top = top.max(term)
        return top + sum(((term - top).exp() for term in terms), arb(0)).log()

    def _loss(self, x: arb) -> arb:
        return self._log_density(self.p, x) - self._log_density(self.q, x)

    def _roots_float(self, ts: np.ndarray) -> np.ndarray:
        lo = np.full(ts.shape, self._x_lo)
        hi = np.full(ts.shape, self._x_hi)
        for _ in range(64):
            mid = (lo + hi) / 2
            above = self._loss_float(mid) > ts
            hi = np.where(above, mid, hi)
            lo = np.where(above, lo, mid)
        return (lo + hi) / 2

    def _ends(self) -> tuple[arb, arb]:
        from flint import ctx

        key = ctx.prec
        cache = self.__dict__.setdefault("_ends_cache", {})
        if key not in cache:
            cache[key] = (self._loss(exact(self._x_lo)), self._loss(exact(self._x_hi)))
        return cache[key]

    def _bracket(self, t: arb, guess: float) -> tuple[tuple[float, float] | None, str]:
        """Floats (lo, hi) with L(lo) < t < L(hi) checked in Arb, so lo < x_t < hi ("in"); or None
        with "below" (x_t < x_lo: t at or under the loss's range there) / "above" (x_t > x_hi)."""
        loss_lo, loss_hi = self._ends()
        if not bool(loss_lo < t):
            return None, "below"
        if not bool(loss_hi > t):
            return None, "above"
        consts = self._constants()
        cp, cq = consts["p"], consts["q"]
        width = max(abs(guess), 1.0) * 2.0 ** -50
        for _ in range(60):
            lo = max(self._x_lo, guess - width)
            hi = min(self._x_hi, guess + width)
            if bool(_loss_at(arb(lo), cp, cq) < t) and bool(_loss_at(arb(hi), cp, cq) > t):  # arb(float) is exact
                return (lo, hi), "in"
            width *= 16
        return (self._x_lo, self._x_hi), "in"

    def _survival(self, law, y: arb) -> arb:
        s = exact(self.sigma)
        return sum((exact(w) * _phi((exact(a) - y) / s) for a, w in law), arb(0))

    def _brackets(self, ts: list[arb]) -> tuple[list[tuple[float, float]], list[str], np.ndarray]:
        """Per t: the bracket (lo, hi) of x_t (for "below" / "above": the far end twice), where
        it is, and the float root guesses."""
        guesses = self._roots_float(np.array([float(t.mid()) for t in ts]))
        ends, flags = [], []
        for t, guess in zip(ts, guesses):
            bracket, where = self._bracket(t, float(guess))
            if where == "below":  # x_t < x_lo: P(x > x_t) in [P(x > x_lo), 1]
                bracket = (self._x_lo, self._x_lo)
            elif where == "above":  # x_t > x_hi: P(x > x_t) in [0, P(x > x_hi)]
                bracket = (self._x_hi, self._x_hi)
            ends.append(bracket)
            flags.append(where)
        return ends, flags, guesses

    def _at(self, ts: list[arb]) -> list[tuple[arb, arb]]:
        """(P(L > t), Q(L > t)) as balls for each t: x_t bracketed in (lo, hi) per point; since
        y -> P(x > y) decreases, P(x > x_t) lies between its values at hi and lo, each Phi at an
        exact point, all points at once (:func:`_phi_many`)."""
        from .._privacy_loss._pld_continuous import _phi_many

        ends, flags, _ = self._brackets(ts)
        consts = self._constants()
        inv_s, shifts, pw, qw = consts["inv_sigma"], consts["shifts"], consts["pw"], consts["qw"]
        # both ends of each bracket (equal for the far cases): the values at x_t lie between
        # (a bound by the largest density instead would swamp the tails, where delta is tiny)
        args = [(a - exact(y)) * inv_s for lo, hi in ends for y in (lo, hi) for a in shifts]
        phis = _phi_many(args)
        k = len(shifts)
        np_ = len(self.p)
        out = []
        for i, where in enumerate(flags):
            at_lo = phis[2 * i * k:(2 * i + 1) * k]
            at_hi = phis[(2 * i + 1) * k:(2 * i + 2) * k]
            sp = sum((w * v for w, v in zip(pw, at_lo[:np_])), arb(0)).union(sum((w * v for w, v in zip(pw, at_hi[:np_])), arb(0)))
            sq = sum((w * v for w, v in zip(qw, at_lo[np_:])), arb(0)).union(sum((w * v for w, v in zip(qw, at_hi[np_:])), arb(0)))
            if where == "below":
                sp, sq = sp.union(arb(1)), sq.union(arb(1))
            elif where == "above":
                sp, sq = sp.union(arb(0)), sq.union(arb(0))
            out.append((sp, sq))
        return out

    # ---- MonotoneLossPair ----------------------------------------------------------------------
    def hockey_stick_many(self, ts: list[arb]) -> list[arb]:
        """delta(t) = max_y g_t(y), g_t(y) = P(x > y) - e^t Q(x > y), attained at x_t. Where x_t is
        bracketed in (lo, hi) the enclosure is second order in the bracket's width w: for any
        exact y0 in [lo, hi], g_t(y0) <= delta(t) <= g_t(y0) + w sup_[lo, hi] |g_t'|, and
        g_t' = -p + e^t q vanishes at x_t, so Arb's enclosure of g_t' on the ball [lo, hi] is
        itself O(w): the radius is ~w^2 times the local density (~1e-30), where the union of
        the survival functions at lo and hi (first order: w times the density, ~1e-15 relative)
        made every connect-the-dots mass ~1e-11 too heavy -- 2e-6 of excess mass per release,
        which the composition carried into delta (issue 31: the mixture-of-Gaussians test of
        dp_accounting, 4.4e-12 over its 1e-12 tolerance at delta 1e-6). Outside the bracket
        range the first-order enclosure of :meth:`_at` is kept."""
        from .._privacy_loss._pld_continuous import _phi_many

        ends, flags, guesses = self._brackets(ts)
        consts = self._constants()
        inv_s, shifts, pw, qw = consts["inv_sigma"], consts["shifts"], consts["pw"], consts["qw"]
        k = len(shifts)
        np_ = len(self.p)
        inside = [i for i, where in enumerate(flags) if where == "in"]
        points = []
        for i in inside:
            lo, hi = ends[i]
            points.append(min(max(float(guesses[i]), lo), hi))
        # (arb(float) is exact: the points and the bracket ends are exact balls)
        phis = _phi_many([(a - arb(y)) * inv_s for y in points for a in shifts]) if inside else []
        norm = inv_s / (2 * arb.pi()).sqrt()
        out: list[arb | None] = [None] * len(ts)
        for n, i in enumerate(inside):
            t = ts[i]
            lo, hi = ends[i]
            et = t.exp()
            vals = phis[n * k:(n + 1) * k]
            g0 = arb(0)
            for w, v in zip(pw, vals[:np_]):
                g0 += w * v
            for w, v in zip(qw, vals[np_:]):
                g0 -= et * w * v
            a_lo, a_hi = arb(lo), arb(hi)
            ball = a_lo.union(a_hi)
            slope = arb(0)
            for j, a in enumerate(shifts):
                z = (ball - a) * inv_s
                d = norm * (-(z * z) / 2).exp()
                slope += et * qw[j - np_] * d if j >= np_ else -pw[j] * d
            out[i] = g0.lower().union(g0.upper() + slope.abs_upper() * (a_hi - a_lo))
        rest = [i for i in range(len(ts)) if out[i] is None]
        if rest:
            first_order = [sp - ts[i].exp() * sq for i, (sp, sq) in zip(rest, self._at([ts[i] for i in rest]))]
            for i, v in zip(rest, first_order):
                out[i] = v
        return [v.max(arb(0)) if bool(v.upper() >= 0) else v for v in out]  # type: ignore[union-attr]

    def hockey_stick(self, t: arb) -> arb:
        return self.hockey_stick_many([t])[0]

    def hockey_stick_reverse(self, t: arb) -> arb:
        if self.symmetric:
            return self.hockey_stick(t)
        return self.reversed_pair().hockey_stick(t)

    def hockey_stick_reverse_many(self, ts: list[arb]) -> list[arb]:
        if self.symmetric:
            return self.hockey_stick_many(ts)
        return self.reversed_pair().hockey_stick_many(ts)

    def reversed_pair(self) -> "GaussianMixtureLoss":
        """(Q, P) mirrored by x -> -x, so that its loss is again nondecreasing in x."""
        cached = self._reverse
        if cached is None:
            cached = GaussianMixtureLoss(self.sigma, [-a for a, _ in self.q], [w for _, w in self.q], [-a for a, _ in self.p],
                                         [w for _, w in self.p], symmetric=self.symmetric, label=f"reversed {self.label}")
            self._reverse = cached
        return cached

    def survival_p(self, t: arb) -> arb:
        return self._at([t])[0][0]

    def survival_q(self, t: arb) -> arb:
        return self._at([t])[0][1]

    def survival_p_many(self, ts: list[arb]) -> list[arb]:
        return [sp for sp, _ in self._at(ts)]

    def survival_q_many(self, ts: list[arb]) -> list[arb]:
        return [sq for _, sq in self._at(ts)]

    def loss_window(self, tail: float) -> tuple[float, float]:
        z = math.sqrt(2 * math.log(1 / tail)) + 0.5
        s = float(self.sigma)
        shifts = [float(a) for a, _ in self.p + self.q]
        xs = np.array([min(shifts) - z * s, max(shifts) + z * s])
        lo, hi = self._loss_float(xs)
        return float(lo), float(hi)

    def point_cost(self) -> float:
        """Seconds per grid point of a point-by-point build (the planner's cost hint): each point
        brackets its root and evaluates Phi and the Gaussian density at every shift of both laws,
        so the cost grows with the number of shifts. Measured (issue 30, 2-core machine under
        load ~2, a full build of one direction, 8,000 points): 2 shifts 13-15 us, 3: 24 us,
        4: 30-35 us (dp_accounting's REPLACE_ONE pair), 6: 40 us, 10: 68-71 us; the planner's
        default (20 us) had the REPLACE_ONE pair 1.7x under."""
        return _POINT_SECONDS + _SHIFT_SECONDS * (len(self.p) + len(self.q))

    def describe(self) -> str:
        return self.label or f"Gaussian mixtures (sigma={float(self.sigma):.6g})"
