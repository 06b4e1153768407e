"""Registration of the linear algorithms, instances and figure into ``dpverify._bandits._registry``.

The registry (``dpverify run`` / ``dpverify reproduce``) calls ``AlgorithmSpec.run(config,
instance, seeds, run_index)`` with its ``RunConfig``; the DP-DPE-specific options travel in
``config.extra``: ``alpha`` (0.8), ``privacy_width`` ("paper"), ``beta`` (1/(kT)),
``clients_per_phase`` (dpe-fixedu; default from the same-seed DPE run). ``config.delta`` is the
delta of (eps, delta) (the paper's Fig. 2 uses 0.25; the registry's default is 1e-6).
``config.noise`` ("float-safe", the default, or "idealised": the paper's float Gaussians, not DP
in floating point) selects CDP-DPE's and LDP-DPE's privatizers (read with a default, so a
``RunConfig`` without the field runs the float-safe ones).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting import AccountingError

from ..._executed._noise import check_noise

from .._registry import AlgorithmSpec, FigureSpec, InstanceSpec, register_algorithm, register_figure, register_instance, register_instance_type
from .._results import RunRecord, ledger_summary
from ._dpe import ALGORITHMS, DPEConfig, run_linear
from ._experiments import make_li_fig2
from ._instances import LinearInstance, mslr_linear_instance, synthetic_instance

__all__ = ["LINEAR_ALGORITHMS", "LINEAR_FIGURES", "register"]

_EXTRA = ("alpha", "privacy_width", "beta", "clients_per_phase")

LINEAR_ALGORITHMS = {
    "dpe": "DPE: DP-DPE without privacy (Li, Zhou & Ji, Algorithm 1 with sigma_n = 0)",
    "cdp-dpe": "CDP-DPE: central discrete Gaussian noise on the clients' grid-encoded sum, (eps, delta)-DP as executed (--noise idealised: the paper's float Gaussian)",
    "ldp-dpe": "LDP-DPE: each client adds discrete Gaussian noise to its grid-encoded report, (eps, delta)-LDP as executed (--noise idealised: float)",
    "dpe-fixedu": "DPE-FixedU: DPE with a fixed number of clients per phase, same communication",
    "sdp-dpe": "SDP-DPE: bit-message vector summation through a shuffler, (eps, delta)-SDP, exactly accounted",
}
LINEAR_FIGURES = {"li-fig2": "Li, Zhou & Ji Fig. 2 (a)-(c): regret vs eps, per-round regret at eps=10 (CDP/LDP/SDP-DPE), DPE vs DPE-FixedU"}


def run_for_registry(config: Any, instance: Any, seeds: dict, run_index: int) -> Any:
    """``AlgorithmSpec.run``: one DP-DPE run as a ``RunRecord`` of the colleague's runner."""
    algorithm = config.algorithm
    extra = dict(config.extra or {})
    unknown = set(extra) - set(_EXTRA)
    if unknown:
        raise AccountingError("extra", sorted(unknown), f"options among {_EXTRA}")
    if config.population is not None:
        raise AccountingError("population", config.population, "None (the linear instances carry their population)")
    private = algorithm in ("cdp-dpe", "ldp-dpe", "sdp-dpe")
    dpe_config = DPEConfig(
        horizon=config.horizon,
        alpha=extra.get("alpha", 0.8),
        epsilon=float(config.epsilon) if private else None,
        delta=float(config.delta) if private else None,
        beta=extra.get("beta"),
        clients_per_phase=extra.get("clients_per_phase"),
        privacy_width=extra.get("privacy_width", "paper"),
        path=config.path,
        checkpoints=config.checkpoint_count,
        noise=getattr(config, "noise", "float-safe"),
    )
    result = run_linear(algorithm, instance, config.seed, dpe_config, run_index=run_index, streams=seeds)
    ledger = ledger_summary(
        result.ledger,
        delta=float(config.delta),
        path=result.path,
        bits_per_user=result.communication["bits_per_user_max"],
        protocol=algorithm,
        notes=_ledger_note(algorithm, dpe_config.noise),
    )
    return RunRecord(
        run_index=run_index,
        times=np.asarray(result.checkpoints, dtype=np.int64),
        regret=np.asarray(result.regret, dtype=np.float64),
        pulls=np.asarray(result.pulls, dtype=np.int64),
        eliminations=[list(e) for e in result.eliminations],
        ledger=ledger,
        instance=result.instance,
        extra={"config": result.config, "communication": result.communication, "phases": result.phases, "privacy": {k: v for k, v in result.privacy.items() if k != "ledger"}, "clients": result.clients},
    )


def _ledger_note(algorithm: str, noise: str) -> str:
    if algorithm == "sdp-dpe":
        return "s-fold composition of Binomial(n k, 1/2) (sensitivity g) per phase, exact PLD; bit messages; fresh clients per phase"
    if check_noise(noise).idealised:
        return ("idealised: not DP in floating point (numpy float Gaussian noise); Gaussian mechanism on clipped report vectors "
                "(l2 sensitivity 2B sqrt(s)/n central, 2B sqrt(s) local); fresh clients per phase")
    return ("float-safe: report vectors encoded on the integer grid B/g (randomised rounding, box sensitivity 2g per coordinate), "
            "exact discrete Gaussian noise (central: on the sum; local: per client); each phase charged the certified (eps, delta) "
            "of DiscreteGaussianVector(sigma^2, 2g, s); fresh clients per phase")


def register() -> bool:
    """Register the linear algorithms, instances, instance type and figure; returns True."""
    for name in ALGORITHMS:
        register_algorithm(AlgorithmSpec(name, "linear", run_for_registry, LINEAR_ALGORITHMS[name], name in ("cdp-dpe", "ldp-dpe", "sdp-dpe"), "Li, Zhou & Ji 2022"), replace=True)
    register_instance(InstanceSpec("linear", "linear", lambda config, seed: synthetic_instance(), "d=20, k=1000 actions uniform in the unit ball, theta* on the sphere, sigma=0.1, population 1e5"), replace=True)
    register_instance(InstanceSpec("mslr-linear", "linear", lambda config, seed: mslr_linear_instance(), "MSLR-WEB10K linear instance (d=20, k=1000), theta rescaled to unit norm"), replace=True)
    register_figure(FigureSpec("li-fig2", LINEAR_FIGURES["li-fig2"], make_li_fig2, "Li, Zhou & Ji 2022", options={"linear": True}), replace=True)
    register_instance_type(LinearInstance, "linear")
    return True
