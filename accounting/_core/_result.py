"""The one result type of the accounting layer: a certified value with its route, grid, provenance and timing.

Every function that answers "what (eps, delta) does this give?" returns a :class:`Result`: the
route planner's report (:func:`accounting.epsilon_routes`, ``delta_routes``, ``shuffle_routes``),
each route's record inside it (``alternatives``), a conversion (:func:`accounting.rdp_to_epsilon`,
:func:`accounting.rdp_to_delta`, :func:`accounting.zcdp_to_epsilon`), a privacy-loss distribution's
evaluation (:func:`accounting.pld_epsilon`, :meth:`accounting.PrivacyLossDistribution.epsilon`) and
the optimal composition of pure DP (:func:`accounting.optimal_composition_epsilon`). Which fields
are set says what the value is:

- the value: ``epsilon`` and ``delta`` (one of them is the answer, a certified upper bound; the
  other is the query's), ``route``, ``alpha`` (the Renyi order a conversion used), ``detail`` (what
  the route did, in words) and ``direction`` (``"upper bound"``; ``"comparison (not certified)"``
  for a printed closed form kept beside the answer; for a PLD's own evaluation the worse of its
  pairs, ``"P||Q"``, ``"Q||P"`` or ``"P||Q = Q||P"``, whose upper bound it is);
- the planner's record of one route (``status`` is not empty): ``status`` (``"answer"``,
  ``"run"``, ``"not run"``, ``"not applicable"``, ``"failed"``), ``seconds`` (measured),
  ``estimated_seconds``, ``exact`` (the value is the true eps(delta), rounded up), ``comparison``,
  ``reason`` and ``how`` (why a route did not run and the argument that runs it), ``setting`` (what
  the plan chose), ``grid`` (the PLD grid h a value was computed on; None on an exact lattice or
  without a PLD) and, for the optimal composition of pure DP, ``outcomes`` (support points of the
  exact enumeration);
- a report (``alternatives`` not empty): every route's record, in route order, and ``answer``, the
  winning record itself (the same object as the one in ``alternatives``: it is built once, when
  its route ran, and handed on, never copied);
- a PLD's evaluation (``discretisation`` set: the grid h or ``"exact lattice"``): the certified
  lower bounds ``epsilon_lower`` / ``delta_lower`` of its optimistic twin, ``truncated_mass``,
  ``infinite_loss_mass``, ``compositions`` and ``truncation_negligible``.

The names the layer used before (``EpsilonResult``, ``DeltaResult``, ``PLDResult``,
``OptimalComposition``) are deprecated aliases of :class:`Result` (``accounting.__init__``).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields

__all__ = ["Result"]


@dataclass(frozen=True)
class Result:
    """A certified (eps, delta) value with how it was obtained (module docstring: which fields
    are set for a report, a route's record and a PLD's evaluation)."""

    epsilon: float
    delta: float
    route: str
    alpha: float | None = None
    detail: str = ""
    direction: str = "upper bound"
    #: a report's records of every route (module docstring)
    alternatives: tuple["Result", ...] = field(default=(), compare=False)
    #: a report's winning record (the same object as in ``alternatives``), else None
    answer: "Result | None" = field(default=None, compare=False, repr=False)
    # ---- the planner's record of one route ("" status: not a record)
    status: str = ""
    seconds: float | None = None
    estimated_seconds: float | None = None
    exact: bool | None = None
    comparison: bool = False
    reason: str = ""
    how: str = ""
    setting: str = ""
    grid: float | None = None
    outcomes: int | None = None
    # ---- a PLD's evaluation (discretisation set)
    discretisation: float | str | None = None
    truncated_mass: float | None = None
    compositions: int | None = None
    epsilon_lower: float | None = None
    delta_lower: float | None = None
    infinite_loss_mass: float | None = None
    truncation_negligible: bool | None = None

    def __repr__(self) -> str:
        """The fields that are set (a field at its default says nothing)."""
        shown = []
        for f in fields(self):
            if not f.repr:
                continue
            value = getattr(self, f.name)
            if f.default is MISSING or value != f.default:
                shown.append(f"{f.name}={value!r}")
        return f"Result({', '.join(shown)})"

    def as_dict(self) -> dict:
        """The fields a reader (the CLI's JSON) is given: a PLD's evaluation, or the value with
        ``routes`` (a report's records) and, for a route's record, the planner's fields."""
        if self.discretisation is not None:
            return {
                "epsilon": self.epsilon,
                "delta": self.delta,
                "route": self.route,
                "discretisation": self.discretisation,
                "direction": self.direction,
                "truncated_mass": self.truncated_mass,
                "compositions": self.compositions,
                "epsilon_lower": self.epsilon_lower,
                "delta_lower": self.delta_lower,
                "detail": self.detail,
                "infinite_loss_mass": self.infinite_loss_mass,
                "truncation_negligible": self.truncation_negligible,
            }
        out = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "route": self.route,
            "alpha": self.alpha,
            "detail": self.detail,
            "direction": self.direction,
        }
        if self.alternatives:
            out["routes"] = [a.as_dict() for a in self.alternatives]
        if self.status:
            out.update(
                status=self.status,
                seconds=self.seconds,
                estimated_seconds=self.estimated_seconds,
                exact=self.exact,
                comparison=self.comparison,
                reason=self.reason,
                how=self.how,
                setting=self.setting,
            )
        return out
