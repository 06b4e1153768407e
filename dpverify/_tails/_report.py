"""The table on stdout (rich), the JSON document and the JUnit XML of a :class:`TailReport`."""

from __future__ import annotations

import json
import math
from typing import Any
from xml.etree import ElementTree as ET

from .._presentation._json import jsonable

from ._model import HOLDS, VIOLATED, TailReport, TailResult

__all__ = ["render_table", "to_json", "to_junit"]


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.3g}"


def _verdict_cell(r: TailResult) -> str:
    v = r.verdict
    if r.planted:
        return "[green]caught[/]" if v != HOLDS else "[bold red]MISSED[/]"
    if r.finding:
        extra = f" ({len(r.violations)}/{len(r.evaluations)})" if v == VIOLATED else ""
        return f"[magenta]paper finding: {v}{extra}[/]"
    colour = {"holds": "green", "violated": "bold red", "inconclusive": "yellow"}[v]
    extra = f" ({len(r.violations)}/{len(r.evaluations)})" if v == VIOLATED else ""
    return f"[{colour}]{v}{extra}[/]"


def _short_source(source: str) -> str:
    for prefix, short in (("Chowdhury & Zhou, ICLR 2023, ", "ICLR23 "), ("Ren, Zhou, Liu & Shroff 2020, ", "Ren20 "), ("Li, Zhou & Ji (DP-DPE), ", "DPDPE ")):
        if source.startswith(prefix):
            return short + source[len(prefix):]
    return source


def render_table(report: TailReport, console: Any = None, *, wide: bool = False) -> None:
    """The table; ``wide`` adds the bound column (the JSON always has source and bound in full)."""
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # pipes and CI logs: do not squeeze the table into 80 columns
            console = Console(width=170)
    table = Table(
        title="dpverify tails: the papers' concentration claims",
        caption=(
            "actual = certified probability of the bad event at the worst setting (exact/chernoff: proven; "
            f"monte-carlo: Clopper-Pearson, table false-alarm {report.false_alarm:g}); "
            "slack = how much smaller the radius could be (min over settings)"
        ),
        show_lines=False,
    )
    columns = [
        ("claim", {"no_wrap": True}),
        ("protocol", {"no_wrap": True}),
        ("source", {"no_wrap": True, "max_width": 34, "overflow": "ellipsis"}),
        ("claimed", {"justify": "right", "no_wrap": True}),
        ("actual [lower, upper]", {"justify": "right", "no_wrap": True}),
        ("method", {"no_wrap": True}),
        ("slack", {"justify": "right", "no_wrap": True}),
        ("verdict", {"no_wrap": True}),
    ]
    if wide:
        columns.insert(3, ("bound", {"max_width": 60}))
    for col, kw in columns:
        table.add_column(col, **kw)
    for r in report.results:
        w = r.worst
        cells = [
            r.claim,
            r.protocol,
            _short_source(r.source),
            _fmt(w.claimed_probability),
            f"[{_fmt(w.lower)}, {_fmt(w.upper)}]",
            w.method,
            "-" if r.slack is None else (_fmt(r.slack) if math.isinf(r.slack) else f"{100 * r.slack:.1f}%"),
            _verdict_cell(r),
        ]
        if wide:
            cells.insert(3, r.bound)
        table.add_row(*cells)
    console.print(table)
    for r in report.results:
        if r.verdict != HOLDS and not r.planted and not r.finding:
            w = r.worst
            console.print(f"[bold]{r.claim} / {r.protocol}[/]: {r.verdict} at {w.setting}" + (f" - {w.note}" if w.note else "") + (f" ({r.notes})" if r.notes else ""))
    console.print(f"{'all claims hold' if report.ok else 'some claims fail'} ({report.seconds:.1f} s)")


def to_json(report: TailReport, *, settings: bool = True) -> str:
    default = str  # json calls it only for types it cannot serialise


    return json.dumps(jsonable(report.to_dict(settings=settings)), indent=1, default=default)


def to_junit(report: TailReport) -> str:
    """One <testcase> per row; a violated (or inconclusive) claim is a <failure>, a missed planted bug too."""
    suite = ET.Element(
        "testsuite",
        name="dpverify.tails",
        tests=str(len(report.results)),
        failures=str(sum(1 for r in report.results if not r.finding and (r.verdict == HOLDS) == r.planted)),
        time=f"{report.seconds:.3f}",
    )
    for r in report.results:
        case = ET.SubElement(suite, "testcase", classname=f"tails.{r.protocol}", name=r.claim, time=f"{r.seconds:.3f}")
        w = r.worst
        text = f"{r.bound} | source: {r.source} | worst setting {w.setting}: claimed {w.claimed_probability:.6g}, actual in [{w.lower:.6g}, {w.upper:.6g}] ({w.method})"
        failed = False if r.finding else ((r.verdict == HOLDS) if r.planted else (r.verdict != HOLDS))
        if failed:
            node = ET.SubElement(case, "failure", message=("planted bug not caught" if r.planted else r.verdict))
            node.text = text
        else:
            ET.SubElement(case, "system-out").text = text
    return ET.tostring(suite, encoding="unicode")
