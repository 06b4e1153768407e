"""``dpverify account shuffle``: amplification by shuffling, every route and the smallest.

Registered on the ``account`` group in dpverify/cli.py (``account.add_command(shuffle)``). The
numbers come from :func:`accounting.shuffle_routes` (see :mod:`accounting._amplification._shuffling` for each
route's paper and method). Exit codes: 0 success, 2 a bad parameter (the message names it).
"""

from __future__ import annotations

import click

from .._presentation._console import busy, console, emit, print_table
from ._cmd_tradeoff import check_tradeoff_options, tradeoff_options, tradeoff_report

__all__ = ["shuffle"]


@click.command()
@click.option("--eps0", type=float, required=True, help="Local privacy parameter eps0 of each user's randomizer.")
@click.option("--n", "n", type=int, required=True, help="Number of users whose reports are shuffled.")
@click.option("--delta", type=float, required=True, help="Target delta in (0, 1).")
@click.option("--compose", type=int, default=1, show_default=True, help="Shuffled rounds a user takes part in (k-fold composition).")
@click.option(
    "--randomizer",
    type=click.Choice(["ldp", "rr"]),
    default="ldp",
    show_default=True,
    help="ldp: any eps0-LDP randomizer; rr: binary randomized response (the analyzer sees the count of 1s).",
)
@click.option("--stronger-clone", is_flag=True, help="Declare that the ldp randomizer admits FMT23's decomposition (enables that route).")
@tradeoff_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def shuffle(eps0: float, n: int, delta: float, compose: int, randomizer: str, stronger_clone: bool, tradeoff: bool, fprs: tuple[float, ...],
            points: int, plot_path: str | None, as_json: bool) -> None:
    """Certified (eps, DELTA) of N shuffled EPS0-LDP reports, after COMPOSE rounds, by every route;
    with --tradeoff also the certified trade-off curve (from the clone pair's PLD)."""
    import accounting as acc

    fpr_list = check_tradeoff_options(tradeoff, fprs, points, plot_path)

    try:
        if randomizer == "rr":
            if stronger_clone:
                raise acc.AccountingError("stronger_clone", True, "unset with --randomizer rr (binary RR always has the FMT23 route)")
            subject = acc.ShuffledRandomizedResponse(eps0, n)
        else:
            subject = acc.ShuffledLDP(eps0, n, stronger_clone=stronger_clone)
        with busy("accounting the shuffle by every route"):
            report = acc.shuffle_routes(subject, delta, compose=compose)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    # the field is the truth: the accountant marks every comparison in its direction (a closed form,
    # an exact-count value whose scan was partial, a composition built on one); the text follows it
    certified = [r for r in report.alternatives if r.direction == "upper bound"]
    payload = {
        "randomizer": randomizer,
        "description": subject.describe(),
        "epsilon0": eps0,
        "n": n,
        "delta": delta,
        "compose": compose,
        "epsilon": report.epsilon,
        "route": report.route,
        "routes": [dict(r.as_dict(), certified=r in certified) for r in report.alternatives],
    }
    tradeoff_table = None
    if tradeoff:
        try:
            payload["tradeoff"], tradeoff_table = tradeoff_report(subject, compose, fpr_list, points, plot_path, f"{compose} x {subject.describe()}")
        except (ValueError, ArithmeticError, MemoryError) as error:
            raise click.BadParameter(str(error)) from None

    def table() -> None:
        from rich.table import Table

        t = Table(
            title=f"(eps, {delta:g})-DP after {compose} round(s) of {subject.describe()}",
            caption="every value is an upper bound; 'comparison' rows rest on the papers' closed forms",
        )
        t.add_column("route")
        t.add_column("epsilon", justify="right")
        t.add_column("kind")
        t.add_column("how")
        for r in sorted(report.alternatives, key=lambda r: r.epsilon):
            style = "bold green" if r.route == report.route else None
            t.add_row(r.route, f"{r.epsilon:.6g}", "certified" if r in certified else "comparison", r.detail, style=style)
        out = console()
        print_table(t, out)
        out.print(f"smallest certified: epsilon = {report.epsilon:.6g} via {report.route}")
        if tradeoff_table is not None:
            tradeoff_table()

    emit(as_json, payload, table)
