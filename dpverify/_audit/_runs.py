"""A whole accounted run as an audit target: audit the algorithm, not only its mechanism (issue 24).

The data is a reward table (one row per user; ``dpverify._bandits._transcripts``); two tables
are neighbours when they differ in one user's row, the papers' notion. The mechanism is a run of
the algorithm on the table -- its server view or its public view, drawn by a transcript engine
that reproduces the plain runner (tested) -- and the claim defaults to the per-user guarantee the
run's ledger records: the charges the run makes, composed per user (every user's multiset of
charges, as the ledger groups them) in the claimed form, the worst user's (pure: the largest
eps; zCDP: the largest rho; RDP: the pointwise maximum of the users' composed curves), over
reference runs on every candidate table.

Neighbours are generated, then searched (:func:`run_pairs`): the changed user is placed in a
chosen batch and arm of the run in which every arm is still active (``placements``), her row
moves between extremal rewards (all 0 in D, all 1 in D' by default), and the other users' rows
come from base tables on which the run's decision at that batch sits at its threshold
(``TranscriptEngine.threshold_tables``: the gap between arms at 2 beta(b), half a user either
side): where a leak in the algorithm around the mechanism -- a shared noise draw, a decision on
an un-noised mean -- turns a one-user change into a different decision. The auditor's pair
search (``audit(pair_search="pilot")``) ranks the candidates on samples of its own and audits the
best at full size, so no error budget is spent on the search.

Reports name the view and, through :meth:`RunTarget.describe_event`, the batch and arm of every
coordinate a witness event uses ("output[3] (server view: batch 2 arm 1)").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

import accounting as acc
from accounting import gdp_mu, Charge, AccountingError
from accounting.internal import normalise_participants as _normalise_participants, user_groups as _user_groups

from .._bandits._builtin import dp_se_setup, se_setup, ucb_setup
from .._bandits._runner import RunConfig
from .._bandits._transcripts import NOT_RELEASED, VIEWS, EliminationEngine, TableInstance, TranscriptEngine
from .._bandits._transcripts_ucb import UCBEngine
from .._bandits.linear._transcripts import DPEEngine
from ._audit import audit
from ._neighbours import NeighbourPair
from ._results import AuditReport

__all__ = [
    "RUN_ALGORITHMS",
    "ChargeLog",
    "RecordedGuarantee",
    "RunAlgorithm",
    "RunMechanism",
    "RunTarget",
    "audit_run",
    "run_engine",
    "register_run_algorithm",
    "run_pairs",
    "run_target",
    "spread_placements",
]


# ---- the claim: what the run's ledger records ----------------------------------------------------


class ChargeLog:
    """A ledger's charge interface without a budget: records every charge (the engine charges it
    exactly as the runner charges its ledger; tested against the runner's ledger)."""

    def __init__(self) -> None:
        self.charges: list[Charge] = []

    def charge(self, guarantee: Any, participants: Any = None, *, label: str = "") -> None:
        self.charges.append(Charge(guarantee, _normalise_participants(participants), label))


class RecordedGuarantee(acc.Mechanism):
    """The per-user guarantee a run's ledger records: every user's charges composed, the worst user's.

    ``runs`` are the charge lists of reference runs; the claim covers every user of every one of
    them. Offers ``pure()``, ``zcdp()``, ``rdp()`` like an ``accounting`` mechanism (``None``
    where a charge has no guarantee of that form), so a suite claim is read off it as off any target.
    """

    def __init__(self, runs: Sequence[Sequence[Charge]], name: str = "the run's ledger") -> None:
        self._groups: list[list[Any]] = []
        for charges in runs:
            if not charges:
                continue
            charges = list(charges)
            for multiset in _user_groups(charges):
                self._groups.append([charges[i].guarantee for i, count in multiset for _ in range(count)])
        if not self._groups:
            raise AccountingError("runs", "no charges", "reference runs that release something")
        self._name = name

    @property
    def max_charges_per_user(self) -> int:
        return max(len(g) for g in self._groups)

    def describe(self) -> str:
        return f"the per-user guarantee {self._name} records (worst user, at most {self.max_charges_per_user} charge(s) per user)"

    def pure(self) -> acc.PureDP | None:
        worst = None
        for group in self._groups:
            parts = [g.pure() if isinstance(g, acc.Mechanism) else g for g in group]
            if any(not isinstance(p, acc.PureDP) for p in parts):
                return None
            total = parts[0].compose(*parts[1:])
            worst = total if worst is None or worst.epsilon < total.epsilon else worst
        return worst

    def zcdp(self) -> acc.ZCDP | None:
        worst = None
        for group in self._groups:
            parts = []
            for g in group:
                z = g.zcdp() if isinstance(g, acc.Mechanism) else (g if isinstance(g, acc.ZCDP) else None)
                if z is None and isinstance(g, acc.Mechanism) and isinstance(g.pure(), acc.PureDP):
                    z = g.pure().to_zcdp()
                if not isinstance(z, acc.ZCDP):
                    return None
                parts.append(z)
            total = parts[0].compose(*parts[1:])
            worst = total if worst is None or worst.rho < total.rho else worst
        return worst

    def approx_dp(self, epsilon: float) -> acc.ApproxDP:
        """(epsilon, delta(epsilon)) of the worst user: for users charged Gaussian mechanisms only, the
        exact profile of their composition (one Gaussian of mu = sqrt(sum (Delta/sigma)^2), certified);
        for users charged (eps_i, delta_i) pairs only (what the float-safe DP-DPE privatizers record),
        their basic composition, which answers only for epsilon >= sum eps_i; otherwise the RDP
        curve's conversion."""
        deltas = []
        for group in self._groups:
            if all(isinstance(g, acc.ApproxDP) for g in group):
                total = group[0].compose(*group[1:]) if len(group) > 1 else group[0]
                if epsilon < total.epsilon:
                    raise AccountingError("epsilon", epsilon, f">= {total.epsilon!r}, the composed epsilon of the (eps, delta) charges the ledger records")
                deltas.append(total.delta)
            elif all(isinstance(g, acc.Gaussian) for g in group):
                deltas.append(acc.gdp_delta(gdp_mu((g.sensitivity, g.sigma, 1) for g in group), epsilon))
            else:
                curve = group[0].rdp() if len(group) == 1 else group[0].rdp().compose(*(g.rdp() for g in group[1:]))
                deltas.append(acc.rdp_to_delta(curve, epsilon).delta)
        return acc.ApproxDP(float(epsilon), max(deltas))

    def rdp(self) -> acc.RDP | None:
        curves = []
        for group in self._groups:
            parts = [g.rdp() if isinstance(g, acc.Mechanism) else g.to_rdp() for g in group]
            curves.append(parts[0].compose(*parts[1:]) if len(parts) > 1 else parts[0])
        return curves[0].parallel(*curves[1:]) if len(curves) > 1 else curves[0]


def recorded_guarantee(engine: TranscriptEngine, tables: Sequence[np.ndarray], seed: int = 0) -> RecordedGuarantee:
    """The guarantee the run's ledger records over one reference run on each of ``tables``."""
    runs = []
    for i, table in enumerate(tables):
        log = ChargeLog()
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,)))
        engine.run(np.asarray(table, dtype=np.float64), engine.streams(rng), 1, ledger=log)
        runs.append(log.charges)
    return RecordedGuarantee(runs, f"{engine.name}'s ledger")


# ---- the mechanism and its neighbours -------------------------------------------------------------


@dataclass(frozen=True)
class RunMechanism:
    """``mechanism(table, rng, size)``: ``size`` runs' ``view`` (picklable: audits can draw it on any executor)."""

    engine: TranscriptEngine
    view: str

    def __call__(self, table: Any, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.engine.sample(table, rng, size, self.view)


def _changed(base: np.ndarray, row: int, value: float) -> np.ndarray:
    table = np.array(base, dtype=np.float64, copy=True)
    table[row, :] = value
    return table


#: the base tables :func:`run_pairs` generates by default: today's threshold tables, and tables
#: whose data meets the conditions data-dependent bugs need (issue 32)
DEFAULT_BASES = ("threshold", "zeros", "ones", "mixed")
#: every named base: the threshold tables, every reward low ("zeros"), every reward high ("ones"),
#: rows alternating low / high by user ("mixed": exact 0s and 1s in every batch), every reward halfway ("flat")
BASES = ("threshold", "zeros", "ones", "mixed", "flat")


def _data_base(kind: str, rows: int, arms: int, lo: float, hi: float) -> tuple[np.ndarray, str]:
    if kind == "zeros":
        return np.full((rows, arms), lo), f"every reward {lo:g} (zeros)"
    if kind == "ones":
        return np.full((rows, arms), hi), f"every reward {hi:g} (ones)"
    if kind == "mixed":
        column = np.where(np.arange(rows) % 2 == 1, hi, lo)
        return np.tile(column[:, None], (1, arms)), f"user u's rewards {hi:g} for odd u, {lo:g} for even u (mixed)"
    return np.full((rows, arms), (lo + hi) / 2), f"every reward {(lo + hi) / 2:g} (flat)"


def spread_placements(placements: Sequence[Any]) -> list[Any]:
    """The first arm's user in the first, a middle and the last batch of the all-active run."""
    batches = sorted({p.batch for p in placements})
    if not batches:
        return []
    chosen = sorted({batches[0], batches[len(batches) // 2], batches[-1]})
    first = {}
    for p in placements:
        if p.batch in chosen and (p.batch not in first or p.arm < first[p.batch].arm):
            first[p.batch] = p
    return [first[b] for b in chosen]


def run_pairs(
    engine: TranscriptEngine,
    view: str,
    *,
    placements: Sequence[tuple[int, int]] | None = None,
    extremes: tuple[float, float] | None = None,
    base: Any = None,
) -> list[NeighbourPair]:
    """Candidate neighbouring tables: one user's row moved between ``extremes`` (default: the reward
    range's ends) on each base table at each placement.

    ``base``: one base or a list of them, each a name of :data:`BASES` or a reward table (an
    array); default :data:`DEFAULT_BASES`. "threshold": tables that put the decision at the
    placement's batch at its threshold (``engine.threshold_tables``; engines that know no
    decision rule, such as a user's loop, have none); "zeros" / "ones": every reward at the low /
    high extreme (all-zero batches, all-one batches: what a leak on a zero-sum batch or a raw
    count of ones needs); "mixed": users alternating low and high (exact 0s and 1s in every
    batch); "flat": every reward halfway.

    ``placements``: (batch, arm) pairs of the all-active run. Default: for "threshold", every
    placement with a threshold table (if none has one: nothing when other bases are tried, else
    every placement on the flat table); for the other bases, the first arm's user in the first, a
    middle and the last batch (:func:`spread_placements`). Given, every base is tried at every
    one (a placement without a threshold table then gets the flat table if nothing else is
    tried there). Labels name the view, the user, her batch and arm, and the base table.
    """
    if view not in VIEWS:
        raise AccountingError("view", view, f"one of {VIEWS}")
    lo, hi = extremes if extremes is not None else (engine.low, engine.high)
    if not (engine.low <= lo <= engine.high and engine.low <= hi <= engine.high) or lo == hi:
        raise AccountingError("extremes", extremes, f"two different rewards in [{engine.low:g}, {engine.high:g}]")
    if base is None:
        bases: list[Any] = list(DEFAULT_BASES)
    elif isinstance(base, (str, np.ndarray)):
        bases = [base]
    else:
        bases = list(base)
    if not bases:
        raise AccountingError("base", base, f"at least one base: a name of {BASES} or a reward table")
    for b in bases:
        if isinstance(b, str):
            if b not in BASES:
                raise AccountingError("base", b, f"one of {BASES}, or a reward table")
        else:
            array = np.asarray(b, dtype=np.float64)
            if array.ndim != 2 or array.shape[1] != engine.arms_in_table or array.shape[0] < engine.rows:
                raise AccountingError("base", f"a table of shape {array.shape}", f"a ({engine.rows} users, {engine.arms_in_table} arms) reward table")
            if not np.all((array >= engine.low) & (array <= engine.high)):
                raise AccountingError("base", "a table with rewards outside the range", f"rewards in [{engine.low:g}, {engine.high:g}]")
    all_places = engine.placements()
    known = {(p.batch, p.arm): p for p in all_places}
    if placements is None:
        given = None
    else:
        given = []
        for where in placements:
            key = (int(where[0]), int(where[1]))
            if key not in known:
                raise AccountingError("placements", list(where), f"a ({engine.unit}, arm) of the all-active run, one of {sorted(known)}")
            given.append(known[key])
    candidates: list[tuple[Any, list[tuple[np.ndarray, str]]]] = []
    for b in bases:
        if isinstance(b, str) and b == "threshold":
            places = given if given is not None else all_places
            found = [(p, engine.threshold_tables(p, (lo, hi))) for p in places]
            if given is None and any(t for _, t in found):
                found = [(p, t) for p, t in found if t]  # the threshold placements
            elif given is None and len(bases) > 1:
                found = []  # no decision sits at a threshold table: the other bases stand in
            candidates.extend(found)  # (threshold alone, none with a table: every placement, on the flat table)
        else:
            table = (np.asarray(b, dtype=np.float64), "the given base table") if not isinstance(b, str) else _data_base(b, engine.rows, engine.arms_in_table, lo, hi)
            places = given if given is not None else (spread_placements(all_places) if isinstance(b, str) else all_places)
            candidates.extend((p, [table]) for p in places)
    tried = {p for p, tables in candidates if tables}
    pairs = []
    for place, tables in candidates:
        if not tables:
            if place in tried:
                continue
            tried.add(place)  # no decision of this batch can sit at its threshold: the flat table instead
            tables = [_data_base("flat", engine.rows, engine.arms_in_table, lo, hi)]
        for table, text in tables:
            d, d_prime = _changed(table, place.row, lo), _changed(table, place.row, hi)
            pairs.append(NeighbourPair(d, d_prime, f"{view} view; {place.text}: rewards {lo:g} -> {hi:g} on every arm; base: {text}"))
    if not pairs:
        raise AccountingError("placements", placements, "placements of the all-active run (the engine offers none)")
    return pairs


_OUTPUT = re.compile(r"output\[(\d+)\]")
_ROW = re.compile(r"output == \(([-\d., ]+)\)")
_COLUMNS_ROW = re.compile(r"output\[\[([\d, ]+)\]\] == \(([-\d., ]+)\)")


@dataclass(frozen=True)
class RunTarget:
    """Everything a run audit needs: the mechanism, candidate pairs, the recorded claim, the column labels."""

    engine: TranscriptEngine
    view: str
    pairs: tuple[NeighbourPair, ...]
    guarantee: RecordedGuarantee
    mechanism: RunMechanism = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mechanism", RunMechanism(self.engine, self.view))

    def claim(self, form: str | tuple[str, float]) -> Any:
        """The recorded guarantee in ``form``: "pure", "rdp", "zcdp", or ("approx", epsilon)."""
        if isinstance(form, tuple) and form[0] == "approx":
            return self.guarantee.approx_dp(form[1])
        value = {"pure": self.guarantee.pure, "rdp": self.guarantee.rdp, "zcdp": self.guarantee.zcdp}[form]()
        if value is None:
            raise AccountingError("form", form, "a form every charge of the run has (pure, rdp or zcdp)")
        return value

    def describe_event(self, text: str) -> str:
        """Every ``output[j]`` of an event description followed by what column j is (view, batch,
        arm); a whole output ``(v0, v1, ...)`` of few columns spelled out column by column."""
        labels = self.engine.labels(self.view)

        def name(match: re.Match) -> str:
            j = int(match.group(1))
            return f"{match.group(0)} ({labels[j]})" if j < len(labels) else match.group(0)

        def spell(match: re.Match) -> str:
            values = [v.strip() for v in match.group(1).split(",")]
            if len(values) != len(labels):
                return match.group(0)
            return f"{match.group(0)} ({'; '.join(f'{l} = {v}' for l, v in zip(labels, values))})"

        def spell_columns(match: re.Match) -> str:
            columns = [int(c) for c in match.group(1).split(",")]
            values = [v.strip() for v in match.group(2).split(",")]
            if len(values) != len(columns) or max(columns) >= len(labels):
                return match.group(0)
            return f"{match.group(0)} ({'; '.join(f'{labels[c]} = {v}' for c, v in zip(columns, values))})"

        named = _COLUMNS_ROW.sub(spell_columns, text)
        named = _OUTPUT.sub(name, named)
        if len(labels) <= 8:
            named = _ROW.sub(spell, named)
        if self.view != "public" and re.search(r"(?<![\d.])-1(?![\d.])", named):
            named += f" ({NOT_RELEASED} = nothing released)"
        return named


#: the suite's defaults, which :func:`audit_run` shares: family-wise false-alarm rate, the views
#: (no learned views: the run's own coordinates, histograms and thresholds), draws per candidate
SUITE_ALPHA = 1e-3
SUITE_LEARNED = False
SUITE_SEARCH_SAMPLES = 2000


#: what an engine offers (``TranscriptEngine``'s interface; an object that has all of it is taken as one)
_ENGINE_METHODS = ("run", "columns", "placements", "threshold_tables", "streams", "sample", "labels")


def _is_engine(engine: Any) -> bool:
    return isinstance(engine, TranscriptEngine) or all(callable(getattr(engine, m, None)) for m in _ENGINE_METHODS)


def run_target(engine: Any, view: str = "transcript", *, arms: int | None = None, horizon: int | None = None,
               parameters: dict[str, Any] | None = None, slots: Sequence[tuple[int, int]] | None = None,
               **pair_options: Any) -> RunTarget:
    """A whole run as an audit target on ``view`` ("server", "public" or "transcript"), with
    generated candidate pairs (:func:`run_pairs`: ``placements``, ``extremes``, ``base``) and the
    claim its ledger records on them.

    ``engine``: a transcript engine (:func:`run_engine` for the built-in algorithms), or a user's
    loop ``loop(run, **parameters)`` written against the public pieces (``dpverify._audit._loops``:
    ``run.pull``, ``run.privatizer``, ``run.ledger``; it returns its public outputs), with
    ``arms`` and ``horizon`` (and optional ``slots``, the (batch, arm) releases it may make
    beyond those its probe runs show)."""
    if not _is_engine(engine):
        if not callable(engine):
            raise AccountingError("engine", engine, "a TranscriptEngine (run_engine(...)) or a loop(run, **parameters)")
        if arms is None or horizon is None:
            raise AccountingError("arms" if arms is None else "horizon", None, "an integer: a user's loop needs arms= and horizon=")
        from ._loops import loop_engine

        engine = loop_engine(engine, arms=arms, horizon=horizon, slots=slots, **(parameters or {}))
    elif arms is not None or horizon is not None or parameters is not None or slots is not None:
        raise AccountingError("engine", engine.describe(), "a user's loop for arms=, horizon=, parameters=, slots= (an engine has its own)")
    pairs = tuple(run_pairs(engine, view, **pair_options))
    tables = [t for p in pairs for t in (p.d, p.d_prime)]
    return RunTarget(engine, view, pairs, recorded_guarantee(engine, tables))


def audit_run(
    target: RunTarget,
    *,
    form: str = "pure",
    claim: Any = None,
    samples: int = 100_000,
    keep_pairs: int = 1,
    search_samples: int | None = SUITE_SEARCH_SAMPLES,
    alpha: float = SUITE_ALPHA,
    learned: bool | str = SUITE_LEARNED,
    **audit_options: Any,
) -> AuditReport:
    """Audit a run target: the auditor's pair search picks ``keep_pairs`` of the candidates on samples
    of its own (``search_samples`` draws per table each, a separate stream: no error budget spent),
    then audits them at ``samples`` draws per table; events name view, batch and arm.

    The defaults are the audit suite's (``dpverify audit``): ``alpha = 1e-3`` and the run's own
    views (histograms and thresholds of its coordinates, no learned classifiers). False alarms:
    the probability that a run whose ledger's claim is true is reported "violated" is at most
    ``alpha`` (exact binomial bounds, Bonferroni over the results). Power: a violation is found
    when one of the candidate pairs (:func:`run_pairs`: a changed user on the threshold tables,
    all-zero, all-one and mixed tables, in the first, a middle and the last batch) makes some
    event of one coordinate of the view (or of a short row) more likely by a factor well above
    e^claim at the sample size: e.g. an un-noised release (a zero-sum batch released exactly,
    a raw count published) is found at a few thousand runs, a factor e^(2 eps) against a claim
    of eps at tens of thousands; a leak that only a combination of many coordinates shows, or on
    data none of the candidates has, is not seen (a "holds" is not a proof). ``executor="process"``
    draws the runs on a local process pool; a user's loop reports its plain runs per second per
    process in ``target.engine.describe()`` (measured on its probe runs).
    """
    chosen = claim if claim is not None else target.claim(form)
    report = audit(target.mechanism, list(target.pairs), chosen, samples=samples, pair_search="pilot", alpha=alpha, learned=learned,
                   search_budget=len(target.pairs), keep_pairs=keep_pairs, search_samples=search_samples, **audit_options)
    results = tuple(replace(r, event=target.describe_event(r.event)) for r in report.results)
    return replace(report, results=results)


# ---- which runs: the runners' algorithms and their engines ----------------------------------------


@dataclass(frozen=True)
class RunAlgorithm:
    """A run-audit algorithm: ``build(arms, horizon, options) -> engine`` and its default claim form."""

    name: str
    summary: str
    build: Callable[..., TranscriptEngine]
    form: str
    planted: bool = False


RUN_ALGORITHMS: dict[str, RunAlgorithm] = {}


def register_run_algorithm(spec: RunAlgorithm) -> None:
    RUN_ALGORITHMS[spec.name] = spec


def run_engine(algorithm: Any, **options: Any) -> TranscriptEngine:
    """The transcript engine of a registered algorithm (``RUN_ALGORITHMS``: ``arms``, ``horizon``,
    ``epsilon`` and its runner's options), or of a user's loop ``loop(run, **parameters)``
    (``dpverify._audit._loops``: ``arms``, ``horizon``, optional ``slots``, the loop's keyword
    arguments)."""
    if callable(algorithm) and not isinstance(algorithm, str):
        from ._loops import loop_engine

        return loop_engine(algorithm, **options)
    if algorithm not in RUN_ALGORITHMS:
        raise AccountingError("algorithm", algorithm, f"one of {sorted(RUN_ALGORITHMS)}")
    return RUN_ALGORITHMS[algorithm].build(**options)


def elimination_engine(algorithm: str, *, arms: int, horizon: int, epsilon: float, population: int | None = None,
                       max_returns: int | None = None, **config: Any) -> EliminationEngine:
    """The engine of ``dpverify run --algorithm ALGORITHM`` (Algorithm 1 variants, DP-SE) on a reward
    table of ``arms`` arms: the setup is the registry's own (``se_setup`` / ``dp_se_setup``)."""
    instance = TableInstance.from_table(np.zeros((1, arms)), population)
    run_config = RunConfig(algorithm, instance, horizon, epsilon=epsilon, population=population, max_returns=max_returns, **config).validate()
    if algorithm == "dp-se":
        return EliminationEngine.from_setup(dp_se_setup(run_config, instance), dp_se_epsilon=float(epsilon), name=algorithm)
    setup, _ = se_setup(run_config, instance)
    return EliminationEngine.from_setup(setup, name=algorithm)


_SE = {
    "dist-dp-se": ("Algorithm 1 with Theorem 1's protocol (Polya noise per user, SecAgg)", "pure"),
    "dist-rdp-se": ("Algorithm 1 with Theorem 2's protocol (Skellam noise per user, SecAgg)", "rdp"),
    "dist-cdp-se": ("Algorithm 1 with Theorem 4's protocol (discrete Gaussian per user, SecAgg)", "rdp"),
    "cdp-se": ("Algorithm 1, central discrete Laplace (App. H.1)", "pure"),
    "ldp-se": ("Algorithm 1, local discrete Laplace (App. H.2): the server sees every message", "pure"),
    "dp-se": ("DP-SE (Sajed & Sheffet): per arm and epoch, the sum on a 1/g grid plus exact discrete Laplace", "pure"),
}
for _name, (_summary, _form) in _SE.items():
    register_run_algorithm(RunAlgorithm(_name, _summary, lambda _n=_name, **o: elimination_engine(_n, **o), _form))


def ucb_engine(algorithm: str, *, arms: int, horizon: int, epsilon: float, **config: Any) -> UCBEngine:
    """The engine of ``dpverify run --algorithm ALGORITHM`` for the LDP UCB family (its ``ucb_setup``)."""
    instance = TableInstance.from_table(np.zeros((1, arms)))
    run_config = RunConfig(algorithm, instance, horizon, epsilon=epsilon, **config).validate()
    return UCBEngine.from_setup(ucb_setup(run_config, instance), name=algorithm)


for _name, _summary in (
    ("ldp-ucb-b", "LDP-UCB-B (Ren et al.): every user's CTB bit, UCB1 index"),
    ("ldp-ucb-bs", "LDP-UCB-BS (Ren et al.): sigmoid + CTB"),
    ("ldp-ucb-l", "LDP-UCB-L (Ren et al.): CTL curator (grid + exact discrete Laplace), Laplace index"),
    ("ldp-ucb-ls", "LDP-UCB-LS (Ren et al.): sigmoid + CTL (grid + exact discrete Laplace)"),
):
    register_run_algorithm(RunAlgorithm(_name, _summary, lambda _n=_name, **o: ucb_engine(_n, **o), "pure"))


def dpe_engine(algorithm: str, *, arms: int, horizon: int, epsilon: float, delta: float = 1e-5, reward_bound: float = 1.0,
               privacy_width: str = "exact", alpha: float = 0.8) -> DPEEngine:
    """DP-DPE (``run_linear``) on ``arms`` actions evenly spaced on the unit circle, reports in [-B, B]."""
    return DPEEngine.for_circle(algorithm, arms=arms, horizon=horizon, epsilon=epsilon, delta=delta, reward_bound=reward_bound,
                                privacy_width=privacy_width, alpha=alpha)


register_run_algorithm(RunAlgorithm("cdp-dpe", "CDP-DPE (Li, Zhou, Ji): central discrete Gaussian on a grid, every phase's average report",
                                    lambda **o: dpe_engine("cdp-dpe", **o), "zcdp"))
