"""Console output shared by the command modules: one JSON object or a rich table, and progress.

Below ``cli`` and every command module (``_cli._cmd_*``), so that a command module never imports the command
group it is registered into.

Widths. On a terminal rich fits a table to the window (numbers fold, never lose digits). In a
pipe or a CI log there is no window: rich would assume 80 columns and cut cells to "1.19…" or
drop the widest column. There :func:`console` starts at :data:`PIPE_WIDTH` columns and
:func:`print_table` widens it to whatever the table needs, so a log holds every cell in full
(what ``dpverify audit`` already did for its own table).

Progress. :func:`busy` shows a spinner on standard error while a command works, only when
standard error is a terminal: pipes and logs stay quiet.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any, Callable, Iterator

import click

__all__ = ["PIPE_WIDTH", "busy", "console", "emit", "print_table"]

#: the width of a console that writes to a pipe or a file (widened further by :func:`print_table`)
PIPE_WIDTH = 160


def emit(as_json: bool, payload: dict, table: Callable[[], None]) -> None:
    """Print ``payload`` as one JSON object (``--json``), or call ``table`` to print it for people."""
    if as_json:
        click.echo(json.dumps(payload, indent=2, default=_json_default))
    else:
        table()


def _json_default(value: Any) -> Any:
    # json calls this only for types it cannot serialise (floats never reach it)
    return str(value)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def console(*, stderr: bool = False, highlight: bool = True):
    """A rich console on standard output (or error): the window's width on a terminal, else
    :data:`PIPE_WIDTH` columns (rich imported on first use: ``account`` stays light)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if _is_terminal(stream):
        return Console(stderr=stderr, highlight=highlight)
    return Console(stderr=stderr, width=PIPE_WIDTH, highlight=highlight)


def print_table(renderable: Any, out: Any = None) -> None:
    """Print a table whole: in a pipe, the console is first widened to the table's minimum width."""
    from rich.measure import Measurement

    out = console() if out is None else out
    if not out.is_terminal:
        needed = Measurement.get(out, out.options.update_width(10**4), renderable).minimum
        if needed > out.width:
            out.width = needed
    out.print(renderable)


@contextlib.contextmanager
def busy(description: str) -> Iterator[None]:
    """A spinner with elapsed time on standard error while the block runs, when that is a terminal."""
    if not _is_terminal(sys.stderr):
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console(stderr=True), transient=True) as bar:
        bar.add_task(description, total=None)
        yield
