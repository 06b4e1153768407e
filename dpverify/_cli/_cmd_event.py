"""``dpverify account event FILE.json``: certified (eps, delta) of a dp_accounting DpEvent.

FILE holds the JSON form of a dp_accounting event (nested dicts with ``class_name`` and the
event's fields, as ``accounting._events._dp_event.event_to_dict(event)`` writes it, or a JSON-dumped
``event.to_named_tuple()`` list); ``-`` reads stdin. Every route is printed, the smallest marked.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .._presentation._console import busy
from .._presentation._json import jsonable
from ._cmd_routes import TIME_BUDGET_HELP, print_route_table, route_rows
from ._cmd_tradeoff import check_tradeoff_options, tradeoff_options, tradeoff_report
from ._paths import FilePath

__all__ = ["event_command"]


@click.command("event")
@click.argument("file", type=FilePath(allow_dash=True))
@click.option("--delta", type=float, default=1e-5, show_default=True, help="Target delta in (0, 1).")
@click.option("--no-pld", is_flag=True, help="Skip the privacy-loss-distribution routes.")
@click.option("--time-budget", type=float, default=10.0, show_default=True, help=TIME_BUDGET_HELP)
@click.option("--all-routes", is_flag=True, help="Run every route that fits the budget, even after an exact route answered.")
@click.option("--bracket", is_flag=True, help="Also build the optimistic PLD: print [certified lower, certified upper] (about twice the PLD time).")
@tradeoff_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def event_command(file: str, delta: float, no_pld: bool, time_budget: float, all_routes: bool, bracket: bool, tradeoff: bool,
                  fprs: tuple[float, ...], points: int, plot_path: str | None, as_json: bool) -> None:
    """Every certified route for the dp_accounting event in FILE (JSON), and the smallest; with
    --tradeoff also the certified trade-off curve (TPR at each --fpr, the attack advantage)."""
    import accounting as acc

    fpr_list = check_tradeoff_options(tradeoff, fprs, points, plot_path)

    try:
        if file == "-":
            text = sys.stdin.read()
        else:
            with open(file, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as error:
        raise click.BadParameter(f"file={file!r} is invalid: expected a readable JSON file ({error.strerror})", param_hint="FILE") from None
    try:
        mech = acc.from_dp_event(text)
        with busy(f"accounting by every route (time budget {time_budget:g} s)"):
            report = acc.epsilon_routes(mech, delta, include_pld=not no_pld, time_budget=time_budget, exhaustive=all_routes)
            sandwich = None
            if bracket and not no_pld:
                from accounting.internal import pld_bracket

                sandwich = pld_bracket(mech, delta)
    except ValueError as error:
        if "NonPrivate" in str(error):  # dp_accounting's convention: noise_multiplier=0 is a non-private release
            raise click.BadParameter(f"{error}: the event holds a non-private release (a NonPrivateDpEvent, or a noise_multiplier of 0), "
                                     "whose epsilon is infinite") from None
        raise click.BadParameter(str(error)) from None
    payload: dict[str, Any] = {
        "event_file": file,
        "description": mech.describe(),
        "delta": delta,
        "epsilon": report.epsilon,
        "route": report.route,
        "routes": route_rows(report),
    }
    tradeoff_table = None
    if tradeoff:
        try:
            report_json, tradeoff_table = tradeoff_report(mech, 1, fpr_list, points, plot_path, mech.describe())
            payload["tradeoff"] = jsonable(report_json)
        except (ValueError, ArithmeticError, MemoryError) as error:
            raise click.BadParameter(str(error)) from None
    if sandwich is not None:
        payload["pld_bracket"] = {"epsilon_lower": sandwich.epsilon_lower, "epsilon": sandwich.epsilon, "discretisation": sandwich.discretisation}
    if as_json:
        click.echo(json.dumps(payload, indent=2, default=str))
        return
    print_route_table(f"(eps, {delta:g})-DP of {mech.describe()}", report)
    if sandwich is not None:
        click.echo(f"PLD bracket around the true epsilon: [{sandwich.epsilon_lower:.6g}, {sandwich.epsilon:.6g}] (both certified)")
    if tradeoff_table is not None:
        tradeoff_table()
