"""Running configurations over many seeds, serially or through a ``concurrent.futures.Executor``.

One integer ``seed`` determines everything: run r uses ``SeedSequence(seed, spawn_key=(r,))``,
spawned into the named streams "instance" (the random instance of run r, identical for every
algorithm), "environment" (per-arm reward streams: common random numbers), "privatizer" (the
privatizers' noise, one child per arm) and "learner" (tie-breaking). A task is (config, r): the
result depends only on the seed, never on the number or kind of workers. Runs that share a
durable ledger also share its users and budget, so they run as one chain in seed order (see
:func:`sweep`), and the whole chain is checked against the budget before its first charge.
"""

from __future__ import annotations

import math
import os
import sys
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from accounting import AccountingError, BudgetExceeded
from accounting.internal import check_positive, check_positive_int, check_probability

from .._executed._noise import DEFAULT_NOISE, IDEALISED_LABEL, check_noise
from ._builtin import batch_sizes, returning_users_plan
from ._catalog import get_algorithm, get_instance
from ._registry import instance_name
from ._results import RunRecord, RunResult, aggregate
from ._elimination import lemma2_tau_p

__all__ = ["RunConfig", "prepare_ledgers", "run", "run_chain", "run_seed", "seed_streams", "sweep"]

STREAMS = ("instance", "environment", "privatizer", "learner")
TAU_RULES = ("theorem", "simulation", "lemma2")
#: the privacy levels a run supports (see RunConfig.validate)
EPSILON_RANGE = (1e-4, 100.0)
PATHS = ("per-user", "aggregate")
#: Most runs (seeds) of one configuration: each is a task, and results are kept per seed.
MAX_SEEDS = 10**6
#: Longest horizon of the aggregate path (its int64 kernels; measured: 10^12 runs in ~1 s, 10^13 overflows).
MAX_AGGREGATE_HORIZON = 10**12


@dataclass(frozen=True)
class RunConfig:
    """One configuration: an algorithm on an instance, with every ambiguity as a named option.

    Defaults are the papers': batch_base 2 (l(b) = 2^b; 4 reproduces the authors' released
    figures), tau_rule "theorem" (tau from log(2T), i.e. the protocol's tau at p = 1/T; "simulation"
    uses the confidence p, 0.1 in the simulations, which with correct noise wraps the modular sum
    in a few percent of small batches; "lemma2" computes tau at the confidence p/(K B^2) at which
    Lemma 2 applies Assumption 1, B the last batch index — dpverify's fix, verified by
    ``dpverify tails``: with either paper rule Assumption 1 can fail at that confidence), p = 0.1 (the simulations' confidence in beta; the theorems
    use 1/T: pass p=None for 1/T), reward_sd 0.1 (not stated in the paper), label_scale 4 (MSLR
    rewards label/4), s = 10 (Dist-RDP/CDP scale).

    ``noise``: "float-safe" (the default: every privatizer is DP as executed; the papers' continuous
    Laplace becomes randomised rounding to the grid 1/2^16 plus exact discrete Laplace, see
    ``dpverify._executed._noise``) or "idealised" (the papers' float Laplace/Gaussian, to reproduce their
    figures bit for bit: not DP in floating point, and every output says so). Algorithms that draw
    no continuous noise run the same either way, and their outputs say "float-safe".
    ``allow_idealised_charges``: record an idealised privatizer's charges in a durable ``ledger``
    (refused otherwise).
    """

    algorithm: str
    instance: Any  # a registered name, or a BanditInstance / LinearInstance object (fixed for every seed)
    horizon: int
    epsilon: float | None = None
    seeds: int = 1
    seed: int = 0
    s: float = 10.0
    p: float | None = 0.1
    tau_rule: str = "theorem"
    batch_base: int = 2
    reward_sd: float = 0.1
    label_scale: float = 4.0
    path: str = "per-user"
    realised: bool = False
    delta: float = 1e-6
    population: int | None = None  # returning users: a finite population (None: unique users)
    max_returns: int | None = None  # returning users: B, batches a user may join
    returning_calibration: str = "exact"  # "exact" (accounting.calibrate) or "appendix-i"
    ledger: str | None = None  # returning users: a durable ledger URL shared across runs (None: in memory)
    ledger_create: bool = False  # create the durable ledger if the database holds none (else a missing one is refused)
    fixed_instance: bool = False  # True: every seed runs on the instance of seed index 0
    checkpoint_count: int = 60
    extra: dict = field(default_factory=dict)
    radius: str = "lemma2"  # "authors": the elimination radius of the authors' released code (Dist-DP-SE, Dist-RDP-SE)
    noise: str = DEFAULT_NOISE  # "float-safe" (DP as executed) or "idealised" (the papers' float noise)
    allow_idealised_charges: bool = False  # an idealised run may charge a durable ledger only with this

    def validate(self) -> "RunConfig":
        spec = get_algorithm(self.algorithm)
        inst = get_instance(self.instance)
        if spec.family != inst.family:
            raise AccountingError("instance", self.instance, f"a {spec.family} instance for algorithm {self.algorithm!r}")
        check_positive_int("horizon", self.horizon)
        check_positive_int("seeds", self.seeds)
        if self.seeds > MAX_SEEDS:  # a list of tasks per seed: 5.7e10 seeds exhausted memory (issue 15's fuzz harness)
            raise AccountingError("seeds", self.seeds, f"an integer number of runs in [1, {MAX_SEEDS:_}]")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise AccountingError("seed", self.seed, "an integer >= 0")
        if spec.private:
            if self.epsilon is None:
                raise AccountingError("epsilon", None, f"a privacy level eps > 0 for {self.algorithm!r}")
            check_positive("epsilon", self.epsilon)
            if not EPSILON_RANGE[0] <= self.epsilon <= EPSILON_RANGE[1]:
                # the protocols' exact parameters (g = ceil(eps sqrt(n)), the noise scale g/eps as a
                # ratio of int64s) exist only in a range: refuse outside it rather than fail inside
                raise AccountingError("epsilon", self.epsilon, f"a privacy level in the supported range [{EPSILON_RANGE[0]:g}, {EPSILON_RANGE[1]:g}]")
        if self.p is not None:
            check_probability("p", self.p)
        if self.tau_rule not in TAU_RULES:
            raise AccountingError("tau_rule", self.tau_rule, f"one of {TAU_RULES}")
        if self.path not in PATHS:
            raise AccountingError("path", self.path, f"one of {PATHS}")
        if self.path == "aggregate" and self.horizon > MAX_AGGREGATE_HORIZON:
            raise AccountingError("horizon", self.horizon, "at most 10^12 on the aggregate path (a batch's summed-noise modulus must fit "
                                  "in int64: T = 10^13 overflowed)")
        if isinstance(self.batch_base, bool) or not isinstance(self.batch_base, int) or self.batch_base < 2:
            raise AccountingError("batch_base", self.batch_base, "an integer >= 2")
        check_positive("reward_sd", self.reward_sd)
        check_probability("delta", self.delta)
        if not 1 <= self.s < math.inf:  # NaN fails too
            raise AccountingError("s", self.s, "a finite scale s >= 1")
        if (self.population is None) != (self.max_returns is None):
            raise AccountingError("max_returns", self.max_returns, "given together with population (returning users)")
        if self.population is not None:
            check_positive_int("population", self.population)
            check_positive_int("max_returns", self.max_returns)
            if self.max_returns > self.horizon:  # more batches than rounds: the per-batch eps underflowed to 0 (issue 15)
                raise AccountingError("max_returns", self.max_returns, f"an integer in [1, horizon = {self.horizon}]")
            if self.population * self.max_returns < self.horizon:
                raise AccountingError(
                    "population", self.population, f"population * max_returns >= horizon ({self.horizon}): users join at most B batches"
                )
        if self.ledger is not None:
            if not isinstance(self.ledger, str) or not self.ledger:
                raise AccountingError("ledger", self.ledger, "a ledger URL: sqlite:///path/ledger.db or postgresql://...")
            if self.population is None:
                raise AccountingError(
                    "ledger", self.ledger, "given with population and max_returns (a durable ledger accounts for a population of returning users)"
                )
        if self.radius not in ("lemma2", "authors"):
            raise AccountingError("radius", self.radius, "'lemma2' (the paper) or 'authors' (the released code)")
        if self.radius == "authors" and self.algorithm not in ("dist-dp-se", "dist-rdp-se"):
            raise AccountingError("radius", self.radius, f"'lemma2' for {self.algorithm!r} (the released code has constants for dist-dp-se and dist-rdp-se only)")
        if self.returning_calibration not in ("exact", "appendix-i"):
            raise AccountingError("returning_calibration", self.returning_calibration, "'exact' or 'appendix-i'")
        check_noise(self.noise)
        if not isinstance(self.allow_idealised_charges, bool):
            raise AccountingError("allow_idealised_charges", self.allow_idealised_charges, "True or False")
        if check_noise(self.noise).idealised and self.ledger is not None and not self.allow_idealised_charges:
            raise AccountingError(
                "noise", self.noise, "'float-safe' with a durable ledger",
                f"an idealised run ({IDEALISED_LABEL}) records no charges in a durable ledger unless allow_idealised_charges=True "
                "(--allow-idealised-charges)",
            )
        return self

    @property
    def confidence(self) -> float:
        """The p used in beta: the given p, or 1/T (the theorems) when p is None."""
        return self.p if self.p is not None else 1.0 / self.horizon

    @property
    def tau_p(self) -> float:
        """The p used in tau: 1/T ("theorem": log(2T)) or the confidence p ("simulation").

        For "lemma2" it depends on the number of arms: use :meth:`tau_p_for`."""
        if self.tau_rule == "lemma2":
            raise AccountingError("tau_rule", self.tau_rule, "'theorem' or 'simulation' here; use tau_p_for(arms) for 'lemma2'")
        return 1.0 / self.horizon if self.tau_rule == "theorem" else self.confidence

    def tau_p_for(self, arms: int) -> float:
        """The p used in tau for an instance with ``arms`` arms (every rule)."""
        if self.tau_rule == "lemma2":
            return lemma2_tau_p(self.confidence, arms, self.horizon, self.batch_base)
        return self.tau_p

    def options(self) -> dict:
        out = asdict(self) if isinstance(self.instance, str) else asdict(replace(self, instance=instance_name(self.instance)))
        if not isinstance(self.instance, str):
            describe = getattr(self.instance, "describe", None)
            out["instance_definition"] = describe() if callable(describe) else repr(self.instance)
        if self.ledger is not None:  # results never carry a database password
            from accounting.internal import redacted

            out["ledger"] = redacted(self.ledger)
        out["confidence_p"] = self.confidence
        out["tau_p"] = self.tau_p if self.tau_rule != "lemma2" else "p/(K B^2)"
        return out


def seed_streams(seed: int, run_index: int) -> dict[str, np.random.SeedSequence]:
    """The named streams of run ``run_index`` (see the module docstring)."""
    from ._environments import children

    root = np.random.SeedSequence(seed, spawn_key=(run_index,))
    return dict(zip(STREAMS, children(root, len(STREAMS))))


def seed_tree(config: RunConfig) -> dict:
    return {
        "root_entropy": config.seed,
        "run": "SeedSequence(seed, spawn_key=(run_index,))",
        "run_indices": [0, config.seeds - 1],
        "children": list(STREAMS),
        "instance_seed_index": "0 for every run" if config.fixed_instance else "run_index",
        "arms": "environment.spawn(K): one stream per arm; privatizer.spawn(K): one privatizer per arm",
    }


def run_seed(config: RunConfig, run_index: int) -> RunRecord:
    """One run (seed index ``run_index``) of ``config``. Picklable: the unit of work of a sweep."""
    config.validate()
    seeds = seed_streams(config.seed, run_index)
    inst_seed = seed_streams(config.seed, 0)["instance"] if config.fixed_instance else seeds["instance"]
    instance = get_instance(config.instance).build(config, inst_seed)
    return get_algorithm(config.algorithm).run(config, instance, seeds, run_index)


def prepare_ledgers(configs: Sequence[RunConfig]) -> None:
    """Before any seed runs: open (``ledger_create``: create) each durable ledger the configs charge,
    and refuse up front, with the numbers, a set of runs whose whole horizon may not fit its budget
    (``DurableLedger.check_run``: every seed of every config sharing the ledger, in run order,
    each taking ``horizon`` users of the population's round-robin). Nothing is charged here."""
    import accounting as acc

    groups: dict[str, list[RunConfig]] = {}
    for config in configs:
        if config.ledger is not None and get_algorithm(config.algorithm).private:
            groups.setdefault(config.ledger, []).append(config)
    for url, group in groups.items():
        legs, budget = [], None
        for config in group:
            arms = get_instance(config.instance).build(config, seed_streams(config.seed, 0)["instance"]).k
            protocol, budget_of_config, _ = returning_users_plan(config, arms)
            if budget is not None and budget_of_config != budget:
                raise AccountingError("epsilon", config.epsilon, f"the budget {budget} of the other runs sharing the ledger {url}")
            budget = budget_of_config
            legs.append(([protocol.mechanism(n) for n in batch_sizes(config.horizon, config.batch_base)], config.seeds * config.horizon))
        populations = {config.population for config in group}
        if len(populations) > 1:
            raise AccountingError("population", sorted(populations), f"one population for every run sharing the ledger {url}")
        with acc.Ledger.open(url, budget, name=group[0].algorithm, create=any(c.ledger_create for c in group)) as ledger:
            ledger.check_run(legs, group[0].population)


def _progress(total: int, description: str, enabled: bool | None):
    show = sys.stderr.isatty() if enabled is None else enabled
    from tqdm import tqdm

    return tqdm(total=total, desc=description, file=sys.stderr, disable=not show, leave=False)


def default_executor(workers: int | None = None) -> Executor:
    return ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1)


def run_chain(configs: Sequence[RunConfig], tasks: Sequence[tuple[int, int]]) -> list[tuple[int, RunRecord]]:
    """The tasks (config index, seed index) one after another, in order: the unit of work of the
    runs that share a durable ledger. Picklable (a pool or dask runs a chain as one task)."""
    out = []
    for i, r in tasks:
        try:
            out.append((i, run_seed(configs[i], r)))
        except BudgetExceeded as error:
            raise BudgetExceeded(
                f"stopped at seed {r}: {error}. The run fitted the ledger when it started, so another process charged these "
                "users since; the batches charged before this one stay recorded (budget spent, never leaked)"
            ) from None
    return out


def sweep(
    configs: Sequence[RunConfig],
    *,
    executor: Executor | None = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> list[RunResult]:
    """Run every config over its seeds; one task per (config, seed index).

    ``executor``: any ``concurrent.futures.Executor`` (a ``dask.distributed.Client``'s
    ``get_executor()`` works); by default a local process pool of ``workers`` processes, or the
    current process when ``workers == 1``. Results are the same whatever the executor.

    Runs that charge a durable ledger hand out its users and spend its budget in the order they
    charge, so their seeds run one after another in seed order (one chain per ledger, as one
    task of the pool): the users each seed gets, its charges, the ledger's rows and the exit code
    are then the same for any number of workers. Before any of them, :func:`prepare_ledgers`
    refuses a set of runs whose whole horizon may not fit the ledger's budget.
    """
    for c in configs:
        c.validate()
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise AccountingError("workers", workers, "an integer >= 1")
    prepare_ledgers(configs)
    chains: dict[str | None, list[tuple[int, int]]] = {}
    units: list[list[tuple[int, int]]] = []  # a task alone, or a ledger's chain of tasks
    for i, c in enumerate(configs):
        for r in range(c.seeds):
            if c.ledger is None:
                units.append([(i, r)])
            elif c.ledger in chains:
                chains[c.ledger].append((i, r))
            else:
                chains[c.ledger] = [(i, r)]
                units.append(chains[c.ledger])
    total = sum(c.seeds for c in configs)
    if workers is not None:  # a pool larger than the task list would only start idle processes
        workers = min(workers, max(1, len(units)))
    records: list[list[RunRecord]] = [[] for _ in configs]
    bar = _progress(total, "runs", progress)
    try:
        if executor is None and workers == 1:
            for unit in units:
                for i, record in run_chain(configs, unit):
                    records[i].append(record)
                    bar.update()
        else:
            own = executor is None
            pool = executor or default_executor(workers)
            try:
                futures = [pool.submit(run_chain, configs, unit) for unit in units]
                from concurrent.futures import as_completed

                for future in as_completed(futures):
                    for i, record in future.result():
                        records[i].append(record)
                        bar.update()
            finally:
                if own:
                    pool.shutdown()
    finally:
        bar.close()
    return [_aggregate(c, recs) for c, recs in zip(configs, records)]


def _aggregate(config: RunConfig, records: list[RunRecord]) -> RunResult:
    return aggregate(
        records,
        algorithm=config.algorithm,
        instance=instance_name(config.instance),
        horizon=config.horizon,
        seed=config.seed,
        epsilon=config.epsilon,
        options=config.options(),
        regret_kind="realised" if config.realised else "pseudo",
        seed_tree=seed_tree(config),
    )


def run(config: RunConfig, *, executor: Executor | None = None, workers: int | None = 1, progress: bool | None = None) -> RunResult:
    """All seeds of one configuration (serial by default)."""
    return sweep([config], executor=executor, workers=workers, progress=progress)[0]
