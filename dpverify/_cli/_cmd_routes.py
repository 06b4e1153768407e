"""The route tables of ``dpverify account epsilon`` and ``account event``: every route the planner
considered, with its value and time, or why it did not run and the argument that runs it
(:mod:`accounting._core._planner`). A neutral module below both commands."""

from __future__ import annotations

__all__ = ["TIME_BUDGET_HELP", "print_route_table", "route_rows"]

TIME_BUDGET_HELP = "Seconds (on one core) the planner may spend on routes; it coarsens grids to fit and reports what it skipped."


def route_rows(report) -> list[dict]:
    """Every route of a planner report as JSON rows (value and time, or why not and how to run it)."""
    return [r.as_dict() for r in report.alternatives]


def print_route_table(title: str, report) -> None:
    """The routes of a planner report as a table: value, time, and for the routes not run why
    and the argument that runs them; the answer in bold green."""
    from rich.table import Table

    from .._presentation._console import console as make_console
    from .._presentation._console import print_table

    t = Table(title=title)
    for column, justify in (("route", "left"), ("status", "left"), ("epsilon", "right"), ("alpha", "right"), ("time s", "right"),
                            ("est. s", "right")):
        t.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]  (a narrow terminal folds a cell, never cuts it)
    t.add_column("how it was computed / why not, and how to run it", ratio=1, min_width=30)
    order = {"answer": 0, "run": 1, "failed": 2, "not run": 3, "not applicable": 4}
    for r in sorted(report.alternatives, key=lambda r: (order.get(getattr(r, "status", "run"), 5), r.epsilon)):
        status = getattr(r, "status", "run")
        ran = status in ("answer", "run")
        kind = " *" if getattr(r, "comparison", False) else ""
        if ran:
            text = r.detail
        else:
            text = getattr(r, "reason", "") or r.detail
            if getattr(r, "how", ""):
                text += f"; to run it: {r.how}"
        seconds = getattr(r, "seconds", None)
        estimate = getattr(r, "estimated_seconds", None)
        t.add_row(
            r.route + kind,
            status,
            f"{r.epsilon:.6g}" if ran else "-",
            "" if r.alpha is None else f"{r.alpha:.4g}",
            "" if seconds is None else f"{seconds:.3g}",
            "" if estimate is None else f"{estimate:.2g}",
            text,
            style="bold green" if status == "answer" else ("dim" if not ran else None),
        )
    console = make_console()
    print_table(t, console)
    console.print(f"best certified: epsilon = {report.epsilon:.6g} via {report.route}  (* = comparison route: a published closed form, never the answer)")
