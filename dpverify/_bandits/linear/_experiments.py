"""Li, Zhou and Ji, Fig. 2 (a)-(c): sweeps over runs, algorithms and epsilon, through an Executor.

- (a) final cumulative regret R(T) against epsilon for CDP-DPE, LDP-DPE and SDP-DPE (delta = 0.25),
  DPE as the non-private reference line;
- (b) per-round regret R(t)/t against t at epsilon = 10, delta = 0.25 for DPE, CDP-DPE, LDP-DPE, SDP-DPE;
- (c) per-round regret of DPE against DPE-FixedU (same communication).

SDP-DPE is the shuffle model's bit-message protocol (``_shuffle.py``), exactly accounted; panel (a)
also records every protocol's bits per client (the largest over phases, mean over runs). Paper size: d = 20, k = 1000, sigma = 0.1,
population 1e5, alpha = 0.8, T = 1e6, 20 runs. ``quick=True``: T = 1e5, 4 runs, epsilon in {1, 10}.

Run r of every algorithm uses the streams ``linear_streams(seed, r)`` (the rule of
``dpverify run``; common random numbers across algorithms and epsilons); tasks are independent pure
functions of their arguments, so results do not depend on the executor or its number of
workers. Each task returns a compact summary (regret at checkpoints, communication, spend);
``keep_runs=True`` keeps every full result (with its ledger trail).
"""

from __future__ import annotations

import os
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any, Callable

import numpy as np

from accounting import AccountingError
from accounting.internal import check_positive_int

from ..._executed._noise import check_noise

from ._dpe import DPEConfig, run_linear
from ._instances import LinearInstance, mslr_linear_instance, synthetic_instance

__all__ = ["FIG2_EPSILONS", "INSTANCES", "li_fig2", "plot_li_fig2"]

INSTANCES: dict[str, Callable[[], LinearInstance]] = {"linear": synthetic_instance, "mslr-linear": mslr_linear_instance}
FIG2_EPSILONS = (1.0, 2.0, 5.0, 10.0, 20.0)
FIG2_DELTA = 0.25
FIG2_EPSILON_B = 10.0
PRIVATE_CURVES = ("cdp-dpe", "ldp-dpe", "sdp-dpe")


def _task(spec: tuple) -> list[dict]:
    """One run as a record; a "dpe" task also runs DPE-FixedU on U from that DPE run (panel (c)),
    so each DPE run is made once, not again as DPE-FixedU's reference."""
    instance_name, algorithm, seed, run_index, config_dict, keep = spec
    instance = INSTANCES[instance_name]()
    result = run_linear(algorithm, instance, seed, DPEConfig(**config_dict), run_index=run_index)
    records = [_record(result, config_dict, keep)]
    if algorithm == "dpe":
        fixed = run_linear("dpe-fixedu", instance, seed, DPEConfig(**config_dict), run_index=run_index, reference=result)
        records.append(_record(fixed, config_dict, keep))
    return records


def _record(result, config_dict: dict, keep: bool) -> dict:
    return {
        "algorithm": result.algorithm,
        "run_index": result.run_index,
        "epsilon": config_dict.get("epsilon"),
        "checkpoints": result.checkpoints,
        "regret": result.regret,
        "final_regret": result.final_regret,
        "communication": result.communication,
        "spent": result.privacy.get("spent"),
        "zcdp_rho": result.privacy.get("zcdp_rho"),
        "noise_multiplier": result.privacy.get("noise_multiplier"),
        "phases": len(result.phases),
        "clipped": result.clients["clipped_coordinates"],
        "full": result.as_dict() if keep else None,
    }


def _summary(values: list[float]) -> dict:
    array = np.asarray(values, dtype=np.float64)
    return {"mean": float(array.mean()), "sd": float(array.std(ddof=1)) if array.size > 1 else 0.0, "n": int(array.size)}


def _curve(records: list[dict]) -> dict:
    points = np.asarray(records[0]["checkpoints"], dtype=np.float64)
    per_round = np.asarray([r["regret"] for r in records]) / points
    return {
        "t": points.astype(np.int64).tolist(),
        "per_round_mean": per_round.mean(axis=0).tolist(),
        "per_round_sd": (per_round.std(axis=0, ddof=1) if len(records) > 1 else np.zeros(points.size)).tolist(),
        "final_regret": _summary([r["final_regret"] for r in records]),
    }


def li_fig2(
    *,
    instance: str = "linear",
    quick: bool = False,
    seed: int = 0,
    runs: int | None = None,
    horizon: int | None = None,
    epsilons: tuple[float, ...] | None = None,
    delta: float = FIG2_DELTA,
    alpha: float = 0.8,
    privacy_width: str = "paper",
    path: str = "per-user",
    executor: Executor | None = None,
    keep_runs: bool = False,
    noise: str = "float-safe",
) -> dict:
    """Reproduce Li et al. Fig. 2 (a)-(c) with the SDP-DPE curve; returns a JSON-ready dict."""
    if instance not in INSTANCES:
        raise AccountingError("instance", instance, f"one of {tuple(INSTANCES)}")
    runs = (4 if quick else 20) if runs is None else check_positive_int("runs", runs)
    horizon = (100_000 if quick else 1_000_000) if horizon is None else check_positive_int("horizon", horizon)
    epsilons = ((1.0, FIG2_EPSILON_B) if quick else FIG2_EPSILONS) if epsilons is None else tuple(float(e) for e in epsilons)
    if FIG2_EPSILON_B not in epsilons:
        epsilons = tuple(sorted(set(epsilons) | {FIG2_EPSILON_B}))
    # validate once, in the parent, before any work is submitted
    DPEConfig(horizon=horizon, alpha=alpha, epsilon=epsilons[0], delta=delta, privacy_width=privacy_width, path=path, noise=noise)
    base = {"horizon": horizon, "alpha": alpha, "privacy_width": privacy_width, "path": path, "noise": noise}
    specs: list[tuple] = []
    for r in range(runs):
        specs.append((instance, "dpe", seed, r, {"horizon": horizon, "alpha": alpha}, keep_runs))  # and DPE-FixedU
        for eps in epsilons:
            for algorithm in PRIVATE_CURVES:
                specs.append((instance, algorithm, seed, r, {**base, "epsilon": eps, "delta": delta}, keep_runs))
    own = executor is None
    if own:
        executor = ProcessPoolExecutor(max_workers=max(1, os.cpu_count() or 1))
    try:
        records = [record for task in executor.map(_task, specs) for record in task]
    finally:
        if own:
            executor.shutdown()

    def pick(algorithm: str, eps: float | None = None) -> list[dict]:
        return [r for r in records if r["algorithm"] == algorithm and (eps is None or r["epsilon"] == eps)]

    panel_a = {
        "epsilons": list(epsilons),
        "delta": delta,
        "dpe": _summary([r["final_regret"] for r in pick("dpe")]),
        **{alg: [_summary([r["final_regret"] for r in pick(alg, eps)]) for eps in epsilons] for alg in PRIVATE_CURVES},
        "spent": {alg: [max(r["spent"]["epsilon"] for r in pick(alg, eps)) for eps in epsilons] for alg in PRIVATE_CURVES},
        "zcdp_rho": {alg: [max(r["zcdp_rho"] for r in pick(alg, eps)) for eps in epsilons] for alg in ("cdp-dpe", "ldp-dpe")},
        "bits_per_client_max": {alg: [_summary([r["communication"]["bits_per_user_max"] for r in pick(alg, eps)]) for eps in epsilons] for alg in PRIVATE_CURVES},
        "noise_multiplier": [pick("cdp-dpe", eps)[0]["noise_multiplier"] for eps in epsilons],
    }
    panel_b = {
        "epsilon": FIG2_EPSILON_B,
        "delta": delta,
        "dpe": _curve(pick("dpe")),
        "cdp-dpe": _curve(pick("cdp-dpe", FIG2_EPSILON_B)),
        "ldp-dpe": _curve(pick("ldp-dpe", FIG2_EPSILON_B)),
        "sdp-dpe": _curve(pick("sdp-dpe", FIG2_EPSILON_B)),
    }
    fixed = pick("dpe-fixedu")
    dpe = pick("dpe")
    panel_c = {
        "dpe": {**_curve(dpe), "reals_total": _summary([r["communication"]["reals_total"] for r in dpe])},
        "dpe-fixedu": {
            **_curve(fixed),
            "reals_total": _summary([r["communication"]["reals_total"] for r in fixed]),
            "clients_per_phase": [r["communication"]["clients_per_phase"] for r in fixed],
        },
    }
    out = {
        "format": "dpverify-li-fig2/1",
        "figure": "li-fig2",
        "instance": INSTANCES[instance]().describe(),
        "seed": seed,
        "streams": "run r: SeedSequence(seed, spawn_key=(r,)).spawn(4) -> instance, environment, privatizer, learner",
        "runs": runs,
        "horizon": horizon,
        "alpha": alpha,
        "privacy_width": privacy_width,
        "path": path,
        "noise": noise if not check_noise(noise).idealised else "idealised: not DP in floating point (CDP-DPE and LDP-DPE with float Gaussian noise)",
        "quick": quick,
        "a": panel_a,
        "b": panel_b,
        "c": panel_c,
        "clipped_coordinates": int(sum(r["clipped"] for r in records)),
    }
    if keep_runs:
        out["runs_full"] = [r["full"] for r in records]
    return out


def plot_li_fig2(result: dict, path: str) -> None:
    """Draw panels (a)-(c) to ``path`` (matplotlib imported here, lazily)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    a = result["a"]
    eps = a["epsilons"]
    for alg, label in (("cdp-dpe", "CDP-DPE"), ("ldp-dpe", "LDP-DPE"), ("sdp-dpe", "SDP-DPE (shuffle)")):
        if alg not in a:  # a result written before SDP-DPE was added
            continue
        mean = np.array([s["mean"] for s in a[alg]])
        sd = np.array([s["sd"] for s in a[alg]])
        axes[0].plot(eps, mean, marker="o", label=label)
        axes[0].fill_between(eps, mean - sd, mean + sd, alpha=0.2)
    axes[0].axhline(a["dpe"]["mean"], color="k", ls="--", label="DPE (non-private)")
    axes[0].set(xlabel="epsilon", ylabel="R(T)", title=f"(a) final regret, delta={a['delta']}", xscale="log", yscale="log")
    for panel, ax, items in (
        ("b", axes[1], (("dpe", "DPE"), ("cdp-dpe", "CDP-DPE"), ("ldp-dpe", "LDP-DPE"), ("sdp-dpe", "SDP-DPE"))),
        ("c", axes[2], (("dpe", "DPE"), ("dpe-fixedu", "DPE-FixedU"))),
    ):
        for key, label in items:
            if key not in result[panel]:
                continue
            curve = result[panel][key]
            t = np.asarray(curve["t"])
            mean = np.asarray(curve["per_round_mean"])
            sd = np.asarray(curve["per_round_sd"])
            ax.plot(t, mean, label=label)
            ax.fill_between(t, np.maximum(mean - sd, 1e-12), mean + sd, alpha=0.2)
        ax.set(xlabel="t", ylabel="R(t)/t", xscale="log", yscale="log")
    axes[1].set_title(f"(b) eps={result['b']['epsilon']}, delta={result['b']['delta']}")
    axes[2].set_title("(c) DPE vs DPE-FixedU (same communication)")
    for ax in axes:
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle(f"Li et al. Fig. 2 on '{result['instance']['name']}', {result['runs']} runs, T={result['horizon']}, width={result['privacy_width']}")
    fig.tight_layout()
    from ..._presentation._output import atomic_path

    with atomic_path(path) as temporary:
        fig.savefig(temporary, dpi=110)
    plt.close(fig)


def make_li_fig2(
    outdir: Any,
    quick: bool = False,
    executor: Executor | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    seed: int = 0,
    path: str = "auto",
    runs: int | None = None,
    instance: str = "linear",
    privacy_width: str = "paper",
    noise: str = "float-safe",
    **options: Any,
) -> list:
    """The registry's ``make``: run :func:`li_fig2`, write ``li-fig2[-<instance>].json`` and ``.png`` in ``outdir``.

    ``path="auto"`` means per-user noise (each client's noise drawn separately); "aggregate"
    draws LDP-DPE's summed client noise as one Gaussian (idealised: the same law; float-safe: the
    same per-client discrete draws, summed). ``noise="idealised"`` runs CDP-DPE and LDP-DPE with
    the paper's float Gaussians (not DP in floating point; the files get an ``-idealised`` suffix).
    ``progress`` is accepted for the CLI's signature and ignored.
    """
    import json
    from pathlib import Path

    if path not in ("auto", "per-user", "aggregate"):
        raise AccountingError("path", path, "'auto', 'per-user' or 'aggregate'")
    path = "per-user" if path == "auto" else path
    unknown = set(options) - {"horizon", "epsilons", "delta", "alpha"}
    if unknown:
        raise AccountingError("options", sorted(unknown), "a subset of horizon, epsilons, delta, alpha")
    from ..._presentation._output import atomic_write, check_output_dir

    out = Path(outdir)
    check_output_dir("outdir", out)  # before the runs
    out.mkdir(parents=True, exist_ok=True)
    own = executor is None and workers != 1
    if executor is None and workers == 1:
        from concurrent.futures import ThreadPoolExecutor

        executor = ThreadPoolExecutor(max_workers=1)
        own = True
    elif executor is None:
        executor = ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    try:
        result = li_fig2(instance=instance, quick=quick, seed=seed, runs=runs, privacy_width=privacy_width, path=path, executor=executor, noise=noise, **options)
    finally:
        if own:
            executor.shutdown()
    stem = "li-fig2" if instance == "linear" else f"li-fig2-{instance}"
    if privacy_width != "paper":
        stem += f"-{privacy_width}"
    if check_noise(noise).idealised:
        stem += "-idealised"
    json_path = out / f"{stem}.json"
    png_path = out / f"{stem}.png"
    atomic_write(json_path, json.dumps(result, indent=1))
    plot_li_fig2(result, str(png_path))
    return [json_path, png_path]
