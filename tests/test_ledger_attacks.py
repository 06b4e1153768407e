"""The durable ledger under attack (issue 34, items 11-16): a forger who rewrites the history under a
new ledger id, a tamperer who edits segment rows under an open handle, a PostgreSQL connection that
goes silent, hostile labels on a terminal, legitimate restores and broken witnesses, and the rough
edges of user ranges, labels and the lock's time bounds.

Every test here is deterministic (no randomness: false-alarm rate 0) and names the wrong variant it
rejects (the behaviour before the fix)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import sqlite3

import numpy as np
import pytest
from click.testing import CliRunner

from accounting import AccountingError, BudgetExceeded, Ledger, PureDP
from dpverify.cli import main


@pytest.fixture(autouse=True)
def witness(tmp_path, monkeypatch):
    """Each test's own witness directory (the default is the user's state directory)."""
    directory = tmp_path / "witness"
    monkeypatch.setenv("DPVERIFY_LEDGER_WITNESS", str(directory))
    monkeypatch.delenv("DPVERIFY_LEDGER_KEY", raising=False)
    return directory


def _sqlite(path) -> contextlib.closing:
    return contextlib.closing(sqlite3.connect(str(path), isolation_level=None))


def _invoke(args: list[str], **env):
    return CliRunner().invoke(main, args, env=env or None)


# ---- item 14: labels reach `ledger show` escaped ---------------------------------------------------

HOSTILE_LABELS = {
    "closing tag": "[/]",
    "styled spoof": "[bold red]INTEGRITY[/]: forged",
    "ansi": "\x1b[2J\x1b[31mRED\x1b[0m",
    "newline": "ok\nINTEGRITY: a forged line",
    "carriage return": "innocent\rINTEGRITY",
    "bidi override": "abc\u202edcba",
}


def test_hostile_labels_are_shown_literally_by_ledger_show_and_verify(tmp_path):
    """Labels holding rich markup, ANSI escapes, line breaks and bidi overrides: `ledger show`
    (colour forced on, so styling would be visible as escape sequences) exits 0, prints each
    label's markup literally, and emits no escape sequence and no line beginning with INTEGRITY;
    `ledger verify` on a ledger whose problems quote such a label prints it escaped too. The wrong
    variant (the label printed through rich as markup, as before) crashes on `[/]` and styles the
    spoof: checked on the same labels below."""
    from rich.console import Console
    from rich.errors import MarkupError

    url = f"sqlite:///{tmp_path}/l.db"
    with Ledger.open(url, PureDP(10.0), create=True) as ledger:
        for i, label in enumerate(HOSTILE_LABELS.values()):
            ledger.charge(PureDP(0.1), range(i, i + 1), label=label)
    shown = _invoke(["ledger", "show", url], FORCE_COLOR="1", TERM="xterm-256color", COLUMNS="200")
    assert shown.exit_code == 0, shown.output
    assert "\x1b[2J" not in shown.output and "\x1b[31mRED" not in shown.output  # (the table's own header is styled)
    assert "\r" not in shown.output and "\u202e" not in shown.output
    assert re.search(r"\x1b\[[0-9;]*m\s*INTEGRITY", shown.output) is None
    assert "[bold red]INTEGRITY[/]: forged" in shown.output and "[/]" in shown.output
    assert not any(re.sub(r"\x1b\[[0-9;]*m|[│┃ ]", "", line).startswith("INTEGRITY") for line in shown.output.splitlines())
    assert "\\x1b[2J" in shown.output and "ok\\nINTEGRITY" in shown.output
    # verify quotes labels in its problems: edit the row so that its label is reported
    with _sqlite(tmp_path / "l.db") as connection:
        connection.execute("UPDATE dpverify_charges SET spent_after = 0.05 WHERE seq = 3")
    verified = _invoke(["ledger", "verify", url])
    assert verified.exit_code == 1 and "\x1b" not in verified.output and "\\x1b[2J" in verified.output
    shown = _invoke(["ledger", "show", url], FORCE_COLOR="1", TERM="xterm-256color", COLUMNS="200")
    assert shown.exit_code == 0 and "\\x1b[2J\\x1b[31mRED" in shown.output
    # the wrong variant: the raw label as rich markup
    console = Console(force_terminal=True, color_system="standard", file=io.StringIO(), record=True)
    with pytest.raises(MarkupError):
        console.print(HOSTILE_LABELS["closing tag"])
    console.print(HOSTILE_LABELS["styled spoof"])
    assert "[bold red]" not in console.export_text()


# ---- item 16: rough edges ------------------------------------------------------------------------


def _rows(path) -> list:
    with _sqlite(path) as connection:
        return [connection.execute(f"SELECT * FROM {t}").fetchall() for t in
                ("dpverify_meta", "dpverify_state", "dpverify_charges", "dpverify_segments", "dpverify_profiles")]


def test_huge_ranges_and_unencodable_labels_are_clear_errors_and_change_nothing(tmp_path):
    """User ranges past 2^62 (2^64: no Python length) and a label with a lone surrogate: a
    ValueError naming the parameter (API) and exit 2 (CLI; exit 1 means "refused for budget"),
    the ledger unchanged. The wrong variant raised OverflowError / UnicodeEncodeError (exit 1
    with a traceback); the control: the same charge with a sane range and label is accepted."""
    path = tmp_path / "l.db"
    url = f"sqlite:///{path}"
    with Ledger.open(url, PureDP(1.0), create=True) as ledger:
        ledger.charge(PureDP(0.1), range(0, 10), label="first")
        before = _rows(path)
        for participants in (range(0, 2**64), range(2**63, 2**63 + 5), range(0, 2**62 + 1)):
            with pytest.raises(AccountingError, match=r"participants=.*2\^62"):
                ledger.charge(PureDP(0.1), participants)
            with pytest.raises(AccountingError, match=r"participants="):
                ledger.can_afford(PureDP(0.1), participants)
        with pytest.raises(AccountingError, match=r"label=.*UTF-8"):
            ledger.charge(PureDP(0.1), range(0, 10), label="bad \ud800 label")
        assert _rows(path) == before
        ledger.charge(PureDP(0.1), range(0, 2**62), label="control")
    for users, label in (("0:99999999999999999999", "x"), ("0:10", "bad \udcff")):
        result = _invoke(["account", "charge", "--ledger", url, "--pure", "0.1", "--users", users, "--label", label])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert ("users=" if label == "x" else "label=") in result.output


def test_a_charge_holds_the_lock_no_longer_than_other_writers_wait(tmp_path):
    """A charge on 20,000 separate runs of ids (about 0.2 s of work under the lock) at
    lock_timeout=0.02 s: refused once it has held the lock that long (other writers would have
    given up meanwhile), naming both timeouts and how to split it, the ledger unchanged, well
    before statement_timeout=60 s. The wrong variant (the hold bounded by statement_timeout only)
    accepts it; the control: the same charge at the default lock_timeout is accepted."""
    path = tmp_path / "l.db"
    ids = np.arange(0, 40_000, 2, dtype=np.int64)
    with Ledger.open(f"sqlite:///{path}", PureDP(1.0), create=True) as ledger:
        ledger.charge(PureDP(0.1), ids[::3], label="first")
    before = _rows(path)
    with Ledger.open(f"sqlite:///{path}?lock_timeout=0.02&statement_timeout=60") as hasty:
        with pytest.raises(AccountingError, match=r"lock at most 0.02 s.*lock_timeout=0.02.*split the charge"):
            hasty.charge(PureDP(0.1), ids, label="big")
    assert _rows(path) == before
    with Ledger.open(f"sqlite:///{path}") as patient:
        patient.charge(PureDP(0.1), ids, label="big")
        assert len(patient.charges) == 2
