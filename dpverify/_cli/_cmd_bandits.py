"""``dpverify run`` and ``dpverify reproduce``: click commands, registered by the lead on the main group.

    from ._cli_bandits import run_command, reproduce_command
    main.add_command(run_command)        # dpverify run ...
    main.add_command(reproduce_command)  # dpverify reproduce ...

Output: ``run`` prints a short table on stdout, or the full JSON with ``--json -`` (stdout) /
``--json FILE``; progress bars go to stderr and only when it is a terminal. Exit codes: 0 success,
2 a bad parameter (the message names it), 1 a refused privacy charge (BudgetExceeded).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ._paths import FilePath

__all__ = ["reproduce_command", "run_command"]


#: what ``--eps`` means for each private algorithm: the papers use one symbol for different notions
#: (issue 34 item 7: at --eps 1, Dist-RDP-SE records a per-user (5.22, 1e-6), not (1, delta))
EPS_MEANING = {
    "dist-dp-se": "pure eps-DP per user and batch (Theorem 1)",
    "cdp-se": "pure eps-DP per user and batch, central (Theorem 5)",
    "ldp-se": "pure eps-LDP per user and batch, local (Theorem 6)",
    "dp-se": "pure eps-DP per user, central Laplace",
    "ldp-ucb-b": "pure eps-LDP of each report", "ldp-ucb-bs": "pure eps-LDP of each report",
    "ldp-ucb-l": "pure eps-LDP of each report", "ldp-ucb-ls": "pure eps-LDP of each report",
    "dist-rdp-se": ("the RDP parameter of Theorem 2: per batch (alpha, alpha eps^2/2 + O(1/s))-RDP; NOT an (eps, delta) "
                    "guarantee: the (eps, delta) recorded at --delta is larger (about 5.2 at eps 1, delta 1e-6)"),
    "dist-cdp-se": ("the zCDP parameter of Theorem 4: per batch about (eps^2/2)-zCDP; NOT an (eps, delta) guarantee: the "
                    "(eps, delta) recorded at --delta is larger"),
    "cdp-dpe": "(eps, delta)-DP per client over the run, central, at --delta",
    "ldp-dpe": "(eps, delta)-LDP per client over the run, at --delta",
    "sdp-dpe": "(eps, delta)-DP per client through the shuffler, at --delta",
}
_RETURNING_MEANING = ("with --population/--max-returns: the (eps, delta) budget of each user over all her batches, at --delta; "
                      "the per-batch noise is calibrated so that --max-returns batches fit it")


def eps_meaning(algorithm: str | None, returning: bool) -> str | None:
    """What ``--eps`` meant for this run (None for a non-private algorithm)."""
    if returning and algorithm in EPS_MEANING:
        return _RETURNING_MEANING
    return EPS_MEANING.get(algorithm or "")


def _eps_help() -> str:
    groups: dict[str, list[str]] = {}
    for name, meaning in EPS_MEANING.items():
        groups.setdefault(meaning, []).append(name)
    return ("Privacy level eps. Its meaning depends on the algorithm: "
            + "; ".join(f"{', '.join(names)}: {meaning}" for meaning, names in groups.items())
            + f". {_RETURNING_MEANING[0].upper()}{_RETURNING_MEANING[1:]}. The result records it (epsilon_meaning) beside "
            "the per-user guarantee in every notion.")


def _fail_usage(error: Exception) -> None:
    click.echo(f"error: {error}", err=True)
    sys.exit(2)


@click.command("run")
@click.option("--algorithm", "-a", default=None, help="Algorithm name, e.g. dist-dp-se, dp-se, ucb1, ldp-ucb-b (see --list).")
@click.option("--instance", "-i", default=None, help="Instance: easy, hard, ren-bernoulli, ren-mixed, mslr, ... (see --list).")
@click.option("--eps", "epsilon", type=float, default=None, help=_eps_help())
@click.option("--horizon", "-T", type=int, default=None, help="Horizon T (total pulls).")
@click.option("--seeds", type=int, default=4, show_default=True, help="Number of runs (seed indices 0..seeds-1).")
@click.option("--seed", type=int, default=0, show_default=True, help="Root seed: one integer determines every run.")
@click.option("--s", "s", type=float, default=10.0, show_default=True, help="Scale s of Dist-RDP-SE / Dist-CDP-SE.")
@click.option("--p", "p", type=str, default="0.1", show_default=True, help="Confidence p in beta(b); '1/T' for the theorems' choice.")
@click.option("--tau-rule", type=click.Choice(["theorem", "simulation", "lemma2"]), default="theorem", show_default=True, help="tau from log(2T) (theorem), log(2/p) (simulation), or at Lemma 2's confidence p/(K B^2) (lemma2: dpverify's fix).")
@click.option("--batch-base", type=int, default=2, show_default=True, help="l(b) = base^b (2 in the paper; 4 reproduces the authors' released figures).")
@click.option("--reward-sd", type=float, default=0.1, show_default=True, help="Gaussian reward sd of the easy/hard instances (not stated in the paper).")
@click.option("--label-scale", type=float, default=4.0, show_default=True, help="MSLR rewards are label / label_scale.")
@click.option("--path", type=click.Choice(["per-user", "aggregate"]), default="per-user", show_default=True, help="Simulate every user, or draw the summed noise once.")
@click.option("--realised", is_flag=True, help="Report realised regret (T mu* - sum of rewards) instead of pseudo-regret.")
@click.option("--delta", type=float, default=1e-6, show_default=True, help="delta at which the (eps, delta) guarantee is reported.")
@click.option("--population", type=int, default=None,
              help="Returning users: a finite population of N users handed out round-robin, so users come back (give with "
                   "--max-returns B; needs N * B >= T and N >= the largest batch the run can release). --eps/--delta then "
                   "bound each user's loss over the whole run.")
@click.option("--max-returns", type=int, default=None,
              help="Returning users: B, the most batches a user may join; the per-batch noise is calibrated so that B "
                   "batches together meet (eps, delta).")
@click.option("--returning-calibration", type=click.Choice(["exact", "appendix-i"]), default="exact", show_default=True,
              help="Returning users: per-batch calibration. exact: the accountant's B-fold composition (exact RDP curves); "
                   "appendix-i: the ICLR paper's App. I advanced-composition split eps_i = eps / (2 sqrt(2B log(2/delta))), "
                   "delta_i = delta / (2B) (needs eps < 1), for comparison.")
@click.option("--ledger", "ledger_url", type=str, default=None,
              help="Returning users across runs: a durable ledger (sqlite:////absolute/path/ledger.db or postgresql://...) that every "
                   "run of this population charges; batches take the population's next users from it. A run whose whole horizon "
                   "may not fit the budget is refused (exit 1) before its first charge; seeds sharing the ledger run in seed "
                   "order. Needs --population/--max-returns.")
@click.option("--create", "ledger_create", is_flag=True,
              help="With --ledger: create the ledger if the database holds none (without it a missing ledger is refused, so a "
                   "mistyped path never starts a fresh budget).")
@click.option("--fixed-instance", is_flag=True, help="Every seed on the instance of seed 0 (default: a random instance per seed).")
@click.option("--workers", type=int, default=1, show_default=True, help="Processes (results do not depend on it).")
@click.option("--json", "json_out", type=str, default=None, help="Write the JSON result to FILE ('-' for stdout).")
@click.option("--radius", type=click.Choice(["lemma2", "authors"]), default="lemma2", show_default=True,
              help="Elimination radius: Lemma 2 with each protocol's constants (the paper), or the authors' released code's "
                   "(sigma = sqrt(2)/eps, h = 1/eps for Dist-DP-SE; 2/eps + sqrt(2)/(s eps), 1/(s eps) for Dist-RDP-SE).")
@click.option("--means", type=str, default=None, help="Your own instance: comma-separated arm means, e.g. 0.9,0.8,0.5 (instead of --instance).")
@click.option("--reward", type=click.Choice(["bernoulli", "gaussian"]), default="bernoulli", show_default=True,
              help="Reward law of the --means arms (gaussian: N(mean, sd^2) clipped to [0, 1]).")
@click.option("--sd", type=float, default=None, help="Reward sd of --means gaussian arms (default: --reward-sd).")
@click.option("--instance-file", type=str, default=None, help="Your own instance from a TOML file (means and reward law, or linear .npy arrays; see README).")
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Run even when the cost estimate exceeds --max-seconds.")
@click.option("--max-seconds", type=float, default=600.0, show_default=True,
              help="Refuse (exit 2) runs estimated longer than this many seconds, unless --yes.")
@click.option("--html", "html_out", type=FilePath(dir_okay=False), default=None,
              help="Write a self-contained HTML report (regret figure, ledger, seeds, versions) to FILE.")
@click.option("--noise", type=click.Choice(["float-safe", "idealised"]), default="float-safe", show_default=True,
              help="float-safe: every privatizer is DP as executed (the papers' continuous Laplace becomes randomised rounding to "
                   "the grid 1/2^16 plus exact discrete Laplace). idealised: the papers' float Laplace, to reproduce their "
                   "figures bit for bit; not DP in floating point, and every output says so.")
@click.option("--allow-idealised-charges", is_flag=True,
              help="With --noise idealised and --ledger: record the idealised run's charges in the durable ledger (refused otherwise).")
@click.option("--list", "list_only", is_flag=True, help="List algorithms and instances and exit.")
def run_command(algorithm, instance, epsilon, horizon, seeds, seed, s, p, tau_rule, batch_base, reward_sd, label_scale, path, realised, delta,
                population, max_returns, returning_calibration, ledger_url, ledger_create, fixed_instance, workers, json_out, html_out, radius, means, reward, sd, instance_file, assume_yes, max_seconds,
                noise, allow_idealised_charges, list_only):
    """Run one algorithm on one instance over many seeds; write pseudo-regret, pulls, ledger as JSON."""
    from .._presentation._output import atomic_write, check_output_file

    if not list_only:  # before the heavy imports (numba, the runners): a bad output path is answered at once
        try:
            check_output_file("--json", json_out)
            check_output_file("--html", html_out)
        except ValueError as error:
            _fail_usage(error)
    from accounting import BudgetExceeded

    from .._bandits import RunConfig, algorithms, instances, run

    if list_only:
        for name, spec in sorted(algorithms().items()):
            click.echo(f"algorithm {name:14s} {spec.family:12s} {spec.description}")
        for name, spec in sorted(instances().items()):
            click.echo(f"instance  {name:14s} {spec.family:12s} {spec.description}")
        return
    try:
        check_output_file("--json", json_out)  # before the work: a bad path must not cost the run
        check_output_file("--html", html_out)
        if algorithm is None:
            raise ValueError("algorithm=None is invalid: expected an algorithm name (see --list)")
        given = [flag for flag, value in (("--instance", instance), ("--means", means), ("--instance-file", instance_file)) if value is not None]
        if len(given) > 1:
            raise ValueError(f"instance={' and '.join(given)} is invalid: expected one of --instance, --means, --instance-file")
        if means is not None:
            from .._bandits import user_instance
            from .._bandits._user import parse_means

            instance = user_instance(parse_means(means), reward, reward_sd if sd is None else sd, name="means")
        elif instance_file is not None:
            from .._bandits import load_instance_file

            instance = load_instance_file(instance_file)
        elif instance is None:
            raise ValueError("instance=None is invalid: expected an instance name (see --list), --means or --instance-file")
        if horizon is None:
            raise ValueError("horizon=None is invalid: expected an integer T >= 1")
        try:
            p_value = None if p.strip().upper() == "1/T" else float(p)
        except ValueError:
            raise ValueError(f"p={p!r} is invalid: expected a probability in (0, 1) or '1/T'") from None
        config = RunConfig(
            algorithm=algorithm, instance=instance, horizon=horizon, epsilon=epsilon, seeds=seeds, seed=seed, s=s, p=p_value,
            tau_rule=tau_rule, batch_base=batch_base, reward_sd=reward_sd, label_scale=label_scale, path=path, realised=realised,
            delta=delta, population=population, max_returns=max_returns, returning_calibration=returning_calibration,
            fixed_instance=fixed_instance, ledger=ledger_url, ledger_create=ledger_create, radius=radius, noise=noise,
            allow_idealised_charges=allow_idealised_charges,
        ).validate()
        _check_cost(config, workers, assume_yes, max_seconds)
        result = run(config, workers=workers)
    except BudgetExceeded as error:  # the message says whether the run was refused up front or stopped at a batch
        click.echo(f"refused: {error}", err=True)
        sys.exit(1)
    except ValueError as error:
        _fail_usage(error)
        return
    data = result.to_dict()
    meaning = eps_meaning(data.get("algorithm"), population is not None)
    if meaning is not None:
        data["epsilon_meaning"] = meaning
    if html_out is not None:
        from ._html_report import run_report

        atomic_write(html_out, run_report(data, command="dpverify run " + " ".join(sys.argv[2:])))
    if json_out == "-":
        click.echo(json.dumps(data, default=float))
        return
    if json_out:
        atomic_write(json_out, json.dumps(data, indent=1, default=float))
    per_user = data["ledger"].get("per_user") or {}
    approx = per_user.get("approx") or {}
    click.echo(f"{data['algorithm']} on {data['instance']}, T={data['horizon']}, {data['seeds']} seeds, eps={data['epsilon']}"
               + (", radius of the authors' released code" if radius == "authors" else ""))
    lo, hi = data["final_regret_ci95"]
    click.echo(f"  mean final {data['regret_kind']} regret {data['mean_final_regret']:.6g}  (95% CI {lo:.6g} .. {hi:.6g})")
    click.echo(f"  Reg(T)/T {data['mean_final_regret'] / data['horizon']:.4g}")
    if data["ledger"].get("private"):
        if data["ledger"].get("noise") == "idealised":
            click.echo(f"  {data['ledger'].get('warning')}: the guarantee below is the real-arithmetic mechanism's (--noise idealised)")
        click.echo(f"  --eps {data['epsilon']}: {meaning}")
        click.echo(f"  per-user guarantee: pure {per_user.get('pure')}, zCDP {per_user.get('zcdp')}, (eps, delta) = ({approx.get('epsilon')}, {approx.get('delta')}); "
                   f"path {data['ledger'].get('path')}, bits/user {data['ledger'].get('bits_per_user')}")
        _returning_spend(data, max_returns)
        click.echo(f"  noise: {data['ledger'].get('noise')}; {data['ledger'].get('implementation')}")
    else:
        click.echo("  non-private baseline")


def _returning_spend(data: dict, max_returns: int | None) -> None:
    """Returning users: say how much of the budget the run spent, and why less than all of it."""
    ledger = data["ledger"]
    budget, spent, joined = ledger.get("budget") or {}, ledger.get("spent") or {}, ledger.get("max_releases_per_user")
    if max_returns is None or budget.get("epsilon") is None or spent.get("epsilon") is None:
        return
    share = spent["epsilon"] / budget["epsilon"]
    line = f"  spent eps {spent['epsilon']:.6g} of the budget's {budget['epsilon']:g} ({share:.0%}) for the worst user"
    if joined is not None and joined < max_returns:
        line += (f": the noise of every batch is calibrated for {max_returns} batches per user, and this run gave a user at "
                 f"most {joined} (horizon / population); the rest stays unspent for later runs on the same population")
    click.echo(line)


def _drivers(config) -> str:
    """The other parameters a run's cost grows with, named in a cost refusal (the scale s sets the bits per user)."""
    return f" (with seeds={config.seeds}" + (f", s={config.s:g}" if config.algorithm in ("dist-rdp-se", "dist-cdp-se") else "") + ")"


def _check_cost(config, workers, assume_yes: bool, max_seconds: float) -> None:
    """Print the run's cost estimate (stderr) and refuse what it predicts to be too long or too big."""
    import math

    from .._bandits._catalog import get_instance
    from .._bandits._cost import estimate_cost, machine_memory
    from .._bandits._runner import seed_streams

    if not (isinstance(max_seconds, (int, float)) and max_seconds > 0 and not math.isnan(max_seconds)):
        raise ValueError(f"max_seconds={max_seconds!r} is invalid: expected a number of seconds > 0")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers={workers!r} is invalid: expected an integer >= 1")
    arms = getattr(get_instance(config.instance).build(config, seed_streams(config.seed, 0)["instance"]), "k", None)
    if arms is None:
        return
    cost = estimate_cost(config.algorithm, config.horizon, config.seeds, arms=arms, path=config.path, epsilon=config.epsilon,
                         s=config.s, batch_base=config.batch_base, workers=workers)
    if cost is None:
        return
    click.echo(f"cost: {cost.describe()}", err=True)
    hint = " (--path aggregate draws each batch's sums from their exact law in O(sqrt(n)): the same law, far cheaper)" if cost.aggregate_available else ""
    memory = machine_memory()
    if cost.peak_bytes > 0.8 * memory:
        raise ValueError(
            f"horizon={config.horizon} is invalid{_drivers(config)}: expected a run that fits in memory (one run needs ~{cost.peak_bytes / 2**30:.3g} GiB, "
            f"this machine has {memory / 2**30:.3g} GiB){hint}"
        )
    if cost.wall_seconds > max_seconds and not assume_yes:
        raise ValueError(
            f"horizon={config.horizon} is invalid{_drivers(config)}: expected a run estimated under --max-seconds={max_seconds:g} s "
            f"({cost.describe()}); pass --yes to run it anyway, or lower --horizon/--seeds{hint}"
        )


@click.command("reproduce")
@click.argument("figure", required=False)
@click.option("--list", "list_only", is_flag=True, help="Name the figures this command can make.")
@click.option("--quick", is_flag=True, help="CI/README size: horizons / 100, at most 4 runs.")
@click.option("--out", "outdir", type=FilePath(file_okay=False), default="figures", show_default=True, help="Output directory (PNG, CSV, JSON).")
@click.option("--runs", type=int, default=None, help="Runs per curve (default: the paper's, 20 or 50).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--workers", type=int, default=None, help="Processes (default: all cores); results do not depend on it.")
@click.option("--dask", "dask_address", type=str, default=None, help="Run on a Dask cluster at this scheduler address.")
@click.option("--path", type=click.Choice(["auto", "per-user", "aggregate"]), default="auto", show_default=True,
              help="auto: the aggregate path where the protocol has one (same law), per-user otherwise.")
@click.option("--batch-base", type=int, default=2, show_default=True, help="2 (paper); 4 reproduces the authors' released figures.")
@click.option("--tau-rule", type=click.Choice(["theorem", "simulation", "lemma2"]), default="theorem", show_default=True)
@click.option("--radius", type=click.Choice(["lemma2", "authors"]), default="lemma2", show_default=True,
              help="Dist-DP-SE / Dist-RDP-SE elimination radius: Lemma 2 (the paper) or the authors' released code's constants.")
@click.option("--html", "html_out", type=FilePath(dir_okay=False), default=None,
              help="Also write a self-contained HTML report (the figure as SVG, every curve's numbers and ledger) to FILE.")
@click.option("--noise", type=click.Choice(["float-safe", "idealised"]), default="float-safe", show_default=True,
              help="float-safe: every privatizer is DP as executed (the papers' continuous Laplace becomes randomised rounding to "
                   "the grid 1/2^16 plus exact discrete Laplace). idealised: the papers' float Laplace, to reproduce their "
                   "figures bit for bit; not DP in floating point, and every output says so.")
def reproduce_command(figure, list_only, quick, outdir, runs, seed, workers, dask_address, path, batch_base, tau_rule, radius, html_out, noise):
    """Regenerate a figure of the papers as PNG plus the CSV behind it."""
    from .._bandits import figures
    from .._executed._noise import check_noise
    from .._presentation._output import check_output_dir, check_output_file

    table = figures()
    if list_only or figure is None:
        for name, spec in sorted(table.items()):
            click.echo(f"{name:14s} {spec.description}")
        if figure is None and not list_only:
            sys.exit(2)
        return
    if figure not in table:
        _fail_usage(ValueError(f"figure={figure!r} is invalid: expected one of {sorted(table)}"))
    for name, value, low in (("runs", runs, 1), ("workers", workers, 1), ("seed", seed, 0), ("batch_base", batch_base, 2)):
        if value is not None and value < low:  # refused at once, not after the output checks or inside the sweep
            _fail_usage(ValueError(f"{name}={value!r} is invalid: expected an integer >= {low}"))
    executor = None
    try:
        check_output_dir("--out", outdir)
        check_output_file("--html", html_out)
        if dask_address:  # before the work: a missing Dask or an unreachable scheduler must not cost the runs
            from ._optional import dask_client

            executor = dask_client(dask_address).get_executor()
    except ValueError as error:
        _fail_usage(error)
    kwargs = {"quick": quick, "executor": executor, "workers": workers, "seed": seed, "path": path, "batch_base": batch_base, "tau_rule": tau_rule}
    if radius != "lemma2":
        kwargs["radius"] = radius
    if check_noise(noise).idealised:
        kwargs["noise"] = noise
    if runs is not None:
        kwargs["runs"] = runs
    if table[figure].options.get("linear"):
        kwargs.pop("batch_base"), kwargs.pop("tau_rule")
        if kwargs.pop("radius", None) is not None:
            _fail_usage(ValueError(f"radius={radius!r} is invalid: expected 'lemma2' for the linear figure {figure!r}"))
    try:
        paths = table[figure].make(Path(outdir), **kwargs)
    except ValueError as error:
        _fail_usage(error)
        return
    if html_out is not None:
        from .._presentation._output import atomic_write
        from ._html_report import reproduce_report

        csv_path = next(p for p in paths if str(p).endswith(".csv"))
        json_path = next(p for p in paths if str(p).endswith(".json"))
        summary = json.loads(Path(json_path).read_text())
        atomic_write(html_out, reproduce_report(summary, csv_path, description=table[figure].description,
                                                command="dpverify reproduce " + " ".join(sys.argv[2:])))
        paths = [*paths, Path(html_out)]
    for p in paths:
        click.echo(str(p))
