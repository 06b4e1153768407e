"""Console output shared by the command modules: one JSON object or a rich table.

Below ``cli`` and every ``_cli_*`` module, so that a command module never imports the command
group it is registered into.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import click

__all__ = ["console", "emit"]


def emit(as_json: bool, payload: dict, table: Callable[[], None]) -> None:
    """Print ``payload`` as one JSON object (``--json``), or call ``table`` to print it for people."""
    if as_json:
        click.echo(json.dumps(payload, indent=2, default=_json_default))
    else:
        table()


def _json_default(value: Any) -> Any:
    # json calls this only for types it cannot serialise (floats never reach it)
    return str(value)


def console():
    """A rich console on standard output (rich imported on first use: ``account`` stays light)."""
    from rich.console import Console

    return Console()
