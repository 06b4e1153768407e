"""File arguments of the command line: ``click.Path`` that refuses a NUL in the name as a usage error.

``click.Path`` calls ``os.stat`` on the value, which raises ``ValueError: embedded null byte``
past click's own error handling (a traceback and exit 1, found by the CLI fuzz test). A file name
cannot hold a NUL on any system we run on, so it is refused before the stat, like any other bad
value: exit 2 with the option's name.
"""

from __future__ import annotations

import click


class FilePath(click.Path):
    """``click.Path`` with a NUL in the value refused as a usage error (exit 2) naming the option."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and "\x00" in value:
            self.fail(f"{value!r} is invalid: a file name cannot contain a NUL character", param, ctx)
        return super().convert(value, param, ctx)
