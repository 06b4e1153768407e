"""``dpverify tails``: verify the papers' concentration claims; gate like ``dpverify audit``.

Register on the main group with ``main.add_command(tails)`` (dpverify/cli.py, the lead's file).

Exit codes: 0 every claim holds (and, with ``--planted``, every planted bug is caught);
1 a claim is violated or inconclusive (or a planted bug missed); 2 a usage error or a crash.
``--json FILE`` writes the JSON document (``-`` for stdout: then nothing else goes to stdout);
``--junit FILE`` writes JUnit XML for CI. A progress bar goes to stderr when it is a terminal.
"""

from __future__ import annotations

import sys

import click

from ._paths import FilePath

__all__ = ["tails"]


def _regret_comparison(seeds: int, horizon: int, out) -> None:
    """Paper vs exact-quantile radii: mean pseudo-regret and coverage misses (REPRODUCTION.md)."""
    import numpy as np

    from .._executed import _protocols as P
    from .._tails import coverage_and_regret
    from .._tails._runs import lemma2_tau_p

    # both radii run the same protocol, with tau at Lemma 2's confidence (lemma2_tau_p)
    tp = lemma2_tau_p(0.1, 10, horizon)
    K = P.ProtocolKind
    names = {"Dist-DP-SE": K.DIST_DP, "Dist-RDP-SE(s=10)": K.DIST_RDP, "Dist-CDP-SE(s=10)": K.DIST_CDP, "CDP-SE": K.CDP, "LDP-SE": K.LDP}
    out.write("| instance | eps | algorithm | regret (paper beta) | regret (exact beta*) | change | misses paper | misses exact |\n")
    out.write("|---|---|---|---|---|---|---|---|\n")
    for inst in ("easy", "hard"):
        for eps in (0.125, 0.5, 1.0):  # 0.125 for 0.1: dist-cdp per user refuses non-dyadic eps
            for name, kind in names.items():
                pr = P.DistributedProtocol(kind, eps, 0.1, 10.0 if kind.scaled else 1.0, tp)
                mp, rp, _ = coverage_and_regret(inst, pr, horizon, 0.1, seeds, 7, radius="paper")
                me, re_, _ = coverage_and_regret(inst, pr, horizon, 0.1, seeds, 7, radius="exact")
                a, b = float(np.mean(rp)), float(np.mean(re_))
                out.write(f"| {inst} | {eps:g} | {name} | {a:.0f} | {b:.0f} | {100 * (b - a) / a:+.1f}% | {mp}/{seeds} | {me}/{seeds} |\n")
                out.flush()


@click.command()
@click.option("--json", "json_file", type=FilePath(dir_okay=False, allow_dash=True), default=None, help="Write the JSON report to FILE ('-': stdout).")
@click.option("--junit", "junit_file", type=FilePath(dir_okay=False), default=None, help="Write JUnit XML to FILE.")
@click.option("--quick", is_flag=True, help="A small grid (seconds): the test suite's.")
@click.option("--wide", is_flag=True, help="Show each claim's bound in the table.")
@click.option("--planted", is_flag=True, help="Add the planted wrong constants; the gate then requires each to be caught.")
@click.option("--no-monte-carlo", is_flag=True, help="Exact rows only (no sampling, no runs).")
@click.option("--claim", "claims", multiple=True, help="Only rows whose claim id or protocol matches (repeatable).")
@click.option("--false-alarm", type=float, default=1e-3, show_default=True, help="Family-wise false-alarm rate of the Monte Carlo rows (Bonferroni).")
@click.option("--workers", type=int, default=None, help="Processes (default: all cores; 1 = in-process).")
@click.option("--compare-regret", is_flag=True, help="Instead of the table: regret with Lemma 2's beta vs the exact-quantile beta* (markdown).")
@click.option("--seeds", type=int, default=20, show_default=True, help="Runs per setting for --compare-regret.")
@click.option("--horizon", type=int, default=2**20, show_default=True, help="T for --compare-regret.")
def tails(json_file, junit_file, quick, wide, planted, no_monte_carlo, claims, false_alarm, workers, compare_regret, seeds, horizon) -> None:
    """Check the tail bounds behind the regret proofs, exactly where the law is known.

    Prints the table (claim, source, bound, claimed probability, actual probability or its
    certified/Clopper-Pearson upper limit, slack, verdict). Exit 0 iff every claim holds.
    """
    try:
        if compare_regret:
            # 30 settings x 2 radii x seeds runs of T = horizon (issue 15): bounded up front, each named
            if not 1 <= seeds <= 1000:
                raise click.BadParameter(f"seeds={seeds} is invalid: expected an integer in [1, 1000]", param_hint="--seeds")
            if not 2 <= horizon <= 2**26:
                raise click.BadParameter(f"horizon={horizon} is invalid: expected an integer in [2, 2^26]", param_hint="--horizon")
            if workers is not None and not 1 <= workers <= 1024:
                raise click.BadParameter(f"workers={workers!r} is invalid: expected an integer in [1, 1024]", param_hint="--workers")
            _regret_comparison(seeds, horizon, sys.stdout)
            return
        # every argument is checked before the heavy imports (numba, the catalogue: seconds under load)
        from .._presentation._output import check_output_file

        try:  # before the work: a bad output path must not cost the run
            check_output_file("--json", json_file)
            check_output_file("--junit", junit_file)
        except ValueError as error:  # one line, exit 2 (the message names the option, the path and why)
            click.echo(f"error: {error}", err=True)
            sys.exit(2)

        if not 0 < false_alarm < 1:
            raise click.BadParameter(f"false-alarm={false_alarm!r} is invalid: expected a probability in (0, 1)", param_hint="--false-alarm")
        if workers is not None and not 1 <= workers <= 1024:
            raise click.BadParameter(f"workers={workers!r} is invalid: expected an integer in [1, 1024]", param_hint="--workers")

        from concurrent.futures import ProcessPoolExecutor

        from .._presentation._output import atomic_write
        from .._tails import (
            Grid,
            all_claims,
            render_table,
            run_tails,
            to_json,
            to_junit,
        )

        grid = Grid.quick() if quick else Grid()
        only = None
        if claims:
            # a name that matches nothing used to select no row, and an empty table "holds" (exit 0)
            available = all_claims(monte_carlo=not no_monte_carlo, planted=planted)
            names = sorted({c.claim for c in available} | {c.protocol for c in available})
            unknown = [name for name in claims if name not in names]
            if unknown:
                click.echo(f"error: claim={unknown[0]!r} is invalid: expected a claim id or protocol of this table: "
                           + ", ".join(names), err=True)
                sys.exit(2)
            wanted = set(claims)
            only = lambda c: c.claim in wanted or c.protocol in wanted  # noqa: E731
        executor = "serial" if workers == 1 else ("process" if workers is None else ProcessPoolExecutor(max_workers=workers))
        to_stdout = json_file == "-"

        # a progress bar on a terminal; pipes and CI logs stay quiet (the table names every claim)
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from .._presentation._console import console as make_console

        selected = [c for c in all_claims(monte_carlo=not no_monte_carlo, planted=planted) if only is None or only(c)]
        err = make_console(stderr=True)
        bar = Progress(TextColumn("checking tails"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"),
                       console=err, transient=True, disable=not err.is_terminal)

        with bar:
            task = bar.add_task("", total=len(selected))

            def progress(result) -> None:
                bar.update(task, advance=1, description=f"{result.claim} {result.protocol}: {result.verdict}")

            report = run_tails(grid, monte_carlo=not no_monte_carlo, planted=planted, only=only, false_alarm=false_alarm, executor=executor,
                               progress=progress)
        if not isinstance(executor, str):
            executor.shutdown()
        if json_file:
            text = to_json(report)
            if to_stdout:
                click.echo(text)
            else:
                atomic_write(json_file, text)
        if junit_file:
            atomic_write(junit_file, to_junit(report))
        if not to_stdout:
            render_table(report, wide=wide)
    except click.ClickException:
        raise
    except Exception as error:  # never exit 0 (or 1) on a crash
        click.echo(f"dpverify tails: error: {type(error).__name__}: {error}", err=True)
        sys.exit(2)
    sys.exit(report.exit_code)


if __name__ == "__main__":  # pragma: no cover
    tails()
