"""Private bandit runners and the papers' experiments (private package; re-exported by ``dpverify``).

Layout: ``_environments`` (arm laws, instances, per-arm reward streams), ``_elimination``
(Algorithm 1 and DP-SE: trusted feedback side + learner), ``_ucb`` (UCB1 and Ren et al.'s LDP
UCB family: local curators + numba learner kernel), ``_results`` (run records, aggregation,
ledger summary), ``_runner`` (``RunConfig``, seeds, sweeps over an Executor), ``_figures`` (the
papers' figures and their lookup), ``_registry`` (below), ``_builtin`` (registers the multi-armed
algorithms and instances), ``_catalog`` (algorithm and instance lookups: loads the built-in
families first).

Registry (for ``dpverify._bandits.linear`` and any other algorithm family)
--------------------------------------------------------------------------
The CLI (``dpverify run`` / ``reproduce``) looks names up in one registry. A package registers at
import time; ``_catalog`` imports ``dpverify._bandits._builtin`` and ``dpverify._bandits.linear``
the first time a lookup is made, and ``_figures`` (which registers the multi-armed figures) lists
the figures. Imports point one way: families -> ``_registry``; ``_catalog`` -> families.

    from dpverify._bandits import AlgorithmSpec, InstanceSpec, FigureSpec
    from dpverify._bandits import register_algorithm, register_instance, register_figure, register_instance_type

    register_instance(InstanceSpec("linear", "linear", build, "d=20, k=1000 synthetic", random=True))
    #   build(config: RunConfig, seed: SeedSequence) -> your instance object
    register_algorithm(AlgorithmSpec("dpe", "linear", run, "DP-DPE, non-private", private=False))
    #   run(config: RunConfig, instance, seeds: dict[str, SeedSequence], run_index: int) -> RunRecord
    #   seeds has "instance", "environment", "privatizer", "learner"; use them, no other randomness.
    #   RunRecord(run_index, times, regret, pulls, eliminations, ledger, instance, extra):
    #   times = _results.checkpoints(T, config.checkpoint_count), regret at those times,
    #   ledger = _results.ledger_summary(ledger, delta=config.delta, path=..., bits_per_user=..., protocol=...).
    register_figure(FigureSpec("li-fig2", "Li et al. Fig. 2 ...", make, "Li, Zhou, Ji", options={"linear": True}))
    #   make(outdir, quick=False, executor=None, workers=None, progress=None, seed=0, path="auto", runs=..., **options) -> [paths]
    #   (options={"linear": True}: the CLI does not pass batch_base/tau_rule to it)

A family is "multi-armed" or "linear"; ``RunConfig.validate`` refuses an algorithm on an instance
of another family. Names are lower case with dashes; registering a taken name raises unless
``replace=True``. ``RunConfig.extra`` (a dict) carries family-specific options.
"""

from ._elimination import BatchChannel, EliminationLearner, eliminate_in_batches, lemma2_radius
from ._environments import (
    ArmLaw,
    BanditInstance,
    easy_instance,
    hard_instance,
    mslr_instance,
    ren_bernoulli_instance,
    ren_mixed_instance,
)
from ._catalog import algorithms, instances
from ._figures import figures
from ._registry import (
    AlgorithmSpec,
    FigureSpec,
    InstanceSpec,
    register_algorithm,
    register_figure,
    register_instance,
    register_instance_type,
)
from ._results import RunRecord, RunResult, checkpoints, ledger_summary
from ._runner import RunConfig, run, run_seed, seed_streams, sweep
from ._ucb import LocalCurator, LocalPrivatizer
from ._user import load_instance_file, user_instance

__all__ = [
    "AlgorithmSpec",
    "ArmLaw",
    "BanditInstance",
    "BatchChannel",
    "EliminationLearner",
    "FigureSpec",
    "InstanceSpec",
    "LocalCurator",
    "LocalPrivatizer",
    "RunConfig",
    "RunRecord",
    "RunResult",
    "algorithms",
    "checkpoints",
    "easy_instance",
    "eliminate_in_batches",
    "figures",
    "hard_instance",
    "instances",
    "ledger_summary",
    "lemma2_radius",
    "load_instance_file",
    "mslr_instance",
    "register_algorithm",
    "register_figure",
    "register_instance",
    "register_instance_type",
    "ren_bernoulli_instance",
    "ren_mixed_instance",
    "run",
    "run_seed",
    "seed_streams",
    "sweep",
    "user_instance",
]
