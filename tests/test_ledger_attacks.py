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


#: every test of this module gets its own ledger witness directory (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("witness")


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
    assert shown.exit_code == 1 and "\\x1b[2J\\x1b[31mRED" in shown.output  # shown in full; exit 1: the edit
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


# ---- items 11 and 15: the witness bound to the database's location; pinned heads; restores -------


def _ledger_at(path, spend: float, charges: int = 8) -> str:
    url = f"sqlite:///{path}"
    with Ledger.open(url, PureDP(2.0), create=True) as ledger:
        for i in range(charges):
            ledger.charge(PureDP(spend), range(0, 100), label=f"batch {i}")
        return ledger.summary(last=0)["head"]


def _rewrite_under_a_new_id(path, tmp_path, monkeypatch) -> None:
    """The forger's rewrite: the same charges at a tenth of their eps, built by dpverify's own code
    as a new ledger (a new ledger id, a chain recomputed from its own genesis), moved over the
    original file. Every check inside the database passes."""
    with monkeypatch.context() as patch:
        patch.setenv("DPVERIFY_LEDGER_WITNESS", "off")
        _ledger_at(tmp_path / "forged.db", 0.025)
    os.replace(tmp_path / "forged.db", path)


def test_a_rewrite_under_a_new_ledger_id_is_caught_by_the_location_and_by_a_pinned_head(tmp_path, monkeypatch):
    """The history rewritten with a new ledger id and a recomputed chain (self-consistent: with the
    witness off it opens and verifies, and it would accept 72 more charges of 0.025 on users who
    already spent 2.0). This machine's witness of the location refuses it for charging (API and
    exit 2), `ledger verify` exits 1; on a machine that never saw it (witness off) the head pinned
    elsewhere refuses it (API, `ledger verify --expect-head` and `ledger show --expect-head` exit 1,
    `account charge --expect-head` exit 2) while the sound ledger passes the same pin. The wrong variant (the witness looked up
    by the ledger id the database claims) opened the forgery and charged it."""
    path = tmp_path / "l.db"
    url = f"sqlite:///{path}"
    head = _ledger_at(path, 0.25)
    with Ledger.open(url, expect_head=head) as sound:  # the control: the pin passes on the real ledger
        assert sound.integrity == ()
    shown = _invoke(["ledger", "show", url, "--expect-head", head])
    assert shown.exit_code == 0 and f"head {head}" in shown.output and "INTEGRITY" not in shown.output
    _rewrite_under_a_new_id(path, tmp_path, monkeypatch)
    with pytest.raises(AccountingError, match=r"it now holds ledger [0-9a-f]+ .*replaced or rewritten.*accept-restore"):
        Ledger.open(url)
    charged = _invoke(["account", "charge", "--ledger", url, "--pure", "0.025", "--users", "0:100"])
    assert charged.exit_code == 2 and "replaced or rewritten" in charged.output
    assert _invoke(["ledger", "verify", url]).exit_code == 1
    monkeypatch.setenv("DPVERIFY_LEDGER_WITNESS", "off")  # a machine that never saw it
    with Ledger.open(url) as forged:  # nothing inside the database tells the forgery apart ...
        assert forged.integrity == () and forged.verify().ok and forged.can_afford(PureDP(0.025), range(0, 100))
    with pytest.raises(AccountingError, match=r"pinned head .* not a link"):  # ... but the pinned head does
        Ledger.open(url, expect_head=head)
    assert _invoke(["ledger", "verify", url, "--expect-head", head]).exit_code == 1
    shown = _invoke(["ledger", "show", url, "--expect-head", head])  # shown in full, and exit 1
    assert shown.exit_code == 1 and "INTEGRITY" in shown.output and "budget" in shown.output
    charged = _invoke(["account", "charge", "--ledger", url, "--pure", "0.025", "--expect-head", head])
    assert charged.exit_code == 2 and "pinned head" in charged.output
    with pytest.raises(AccountingError, match="expect_head"):
        Ledger.open(url, expect_head="not hex")


def test_restores_made_on_purpose_are_accepted_explicitly_and_logged(tmp_path, witness):
    """A backup restored (as the refusal message suggested) is refused with a message naming
    `ledger accept-restore`; that command (exit 0) logs the decision and the ledger then opens and
    charges. A ledger that lost its last commits (a NORMAL-sync power cut: the witness ahead of
    the file) is the same case. A copy of a ledger at another path charged on its own leaves the
    original openable. A tampered ledger is not accepted (only the witness can be overruled).
    The wrong variant (the witness keyed by ledger id, with no acceptance step) refused the
    restored backup for ever and the original after its copy was charged."""
    import shutil

    path = tmp_path / "a.db"
    url = f"sqlite:///{path}"
    _ledger_at(path, 0.125, charges=4)
    shutil.copy(path, tmp_path / "backup.db")
    with Ledger.open(url) as ledger:
        ledger.charge(PureDP(0.125), range(0, 100), label="after the backup")
    # the copy: charged at its own path, the original still opens
    shutil.copy(path, tmp_path / "b.db")
    with Ledger.open(f"sqlite:///{tmp_path / 'b.db'}") as copy:
        copy.charge(PureDP(0.125), range(0, 100), label="only in the copy")
    with Ledger.open(url) as original:
        assert original.integrity == () and len(original.charges) == 5
    # the restore (or a power cut that lost the last commit)
    shutil.copy(tmp_path / "backup.db", path)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{path}{suffix}")
    with pytest.raises(AccountingError, match=r"saw 5 charges.*now holds 4.*accept-restore"):
        Ledger.open(url)
    accepted = _invoke(["ledger", "accept-restore", url])
    assert accepted.exit_code == 0 and "at 4 charges" in accepted.output and "at 5 charges" in accepted.output, accepted.output
    log = [line for line in (witness / "accepted.log").read_text().splitlines() if line]
    assert len(log) == 1 and '"charges": 5' in log[0] and '"charges": 4' in log[0]
    with Ledger.open(url) as restored:
        restored.charge(PureDP(0.125), range(0, 100), label="after the restore")
        assert len(restored.charges) == 5
    # only the witness can be overruled: a tampered ledger is not accepted
    with _sqlite(path) as connection:
        connection.execute("UPDATE dpverify_charges SET spent_after = 0.0 WHERE seq = 2")
    refused = _invoke(["ledger", "accept-restore", url])
    assert refused.exit_code == 2 and "does not match its link" in refused.output
    assert len((witness / "accepted.log").read_text().splitlines()) == 1


def test_a_damaged_or_unwritable_witness_is_an_error_not_a_skipped_check(tmp_path, monkeypatch, witness):
    """Garbage in the witness file: opening for writing is refused naming the file and the way out
    (accept-restore, or the witness turned off explicitly); `ledger show` reports it. A witness
    directory that cannot be created: refused too. A torn record in one slot (a crash mid-write)
    is not an error: the other slot holds the previous head. The wrong variant (an unreadable
    witness read as absent, an unwritable one ignored) opened and charged both times."""
    path = tmp_path / "l.db"
    url = f"sqlite:///{path}"
    _ledger_at(path, 0.125, charges=2)
    (file,) = [p for p in witness.iterdir() if p.suffix == ".json"]
    data = file.read_bytes()
    file.write_bytes(data[:512] + b"\x00" * 100)  # the second slot torn: the first still holds a head
    with Ledger.open(url) as ledger:
        ledger.charge(PureDP(0.125), range(0, 100))
    file.write_bytes(b"garbage")
    with pytest.raises(AccountingError, match=r"witness.*no whole record.*accept-restore"):
        Ledger.open(url)
    shown = _invoke(["ledger", "show", url])
    assert shown.exit_code == 1 and "witness" in shown.output and "INTEGRITY" in shown.output
    assert _invoke(["ledger", "accept-restore", url]).exit_code == 0
    with Ledger.open(url) as ledger:
        ledger.charge(PureDP(0.125), range(0, 100))
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("DPVERIFY_LEDGER_WITNESS", str(blocked / "witness"))
    with pytest.raises(AccountingError, match=r"witness.*cannot be (read|written).*DPVERIFY_LEDGER_WITNESS=off"):
        Ledger.open(url)
    with Ledger.open(url, read_only=True) as reader:  # reading needs no witness
        assert len(reader.charges) == 4


# ---- item 12: an open handle checks what it reads ------------------------------------------------


def _tamper(url: str, statement: str) -> None:
    if url.startswith("sqlite:"):
        with _sqlite(url[len("sqlite:///"):]) as connection:
            connection.execute(statement)
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(statement)


def _dump(url: str) -> list:
    tables = ("dpverify_state", "dpverify_charges ORDER BY seq", "dpverify_segments ORDER BY start", "dpverify_profiles ORDER BY id")
    if url.startswith("sqlite:"):
        with _sqlite(url[len("sqlite:///"):]) as connection:
            return [connection.execute(f"SELECT * FROM {t}").fetchall() for t in tables]
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        return [connection.execute(f"SELECT * FROM {t}").fetchall() for t in tables]


OPEN_HANDLE_EDITS = {
    "a segment deleted": "DELETE FROM dpverify_segments WHERE start = 0",
    "a segment re-pointed at the empty-ish profile": "UPDATE dpverify_segments SET profile = (SELECT MIN(id) FROM dpverify_profiles) WHERE start = 0",
    "a profile's spend lowered": "UPDATE dpverify_profiles SET spend = 0.0",
}


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
@pytest.mark.parametrize("edit", list(OPEN_HANDLE_EDITS))
@pytest.mark.parametrize("others", [False, True])
def test_an_open_handle_refuses_segments_edited_behind_its_back(store, edit, others, tmp_path, request):
    """A writer's handle is open on a ledger whose users 0..99 have spent 9.5 of 10 (19 charges
    of 0.5) and users 100..199 0.5; while it is open, a tamperer edits the segment or profile rows
    (and nothing else). The handle's next charge of 1.0 on users 0..199 would fit only for the
    edited rows: it is refused, the database unchanged, and the next open refuses the ledger.
    ``others``: another handle charged legitimately (users 300..309) before the edit, so the
    writer checks from its refreshed copy of the tables rather than a full read: a segment edit
    is then caught when the charge reads it, and a lowered profile spend is not used (the refusal
    is for budget, decided on the verified spend). The control: the same handle, unedited, refuses
    that charge for budget (and the other handle's charges are accepted, not taken for tampering).
    The wrong variant (the handle trusting the state row it left) accepted the charge (75-80 more
    in the issue's run)."""
    url = f"sqlite:///{tmp_path}/l.db" if store == "sqlite" else request.getfixturevalue("postgres").url()
    with Ledger.open(url, PureDP(10.0), create=True) as setup:
        for i in range(19):
            setup.charge(PureDP(0.5), range(0, 100), label=f"batch {i}")
        setup.charge(PureDP(0.5), range(100, 200), label="others")
    writer = Ledger.open(url)
    try:
        if others:
            with Ledger.open(url) as other:
                other.charge(PureDP(0.5), range(300, 310), label="another process")
        with pytest.raises(BudgetExceeded):  # the control: the sound ledger refuses it for budget
            writer.charge(PureDP(1.0), range(0, 200))
        if others:
            with Ledger.open(url) as other:
                other.charge(PureDP(0.5), range(305, 320), label="another process again")
        _tamper(url, OPEN_HANDLE_EDITS[edit])
        before = _dump(url)
        caught = r"integrity check.*((segments|profiles) differs from its digest|segments a charge on users \[0, 200\) reads differ)"
        with pytest.raises((AccountingError, BudgetExceeded)) as refused:
            writer.charge(PureDP(1.0), range(0, 200), label="over budget")
        mirrored = others or store == "postgresql"  # (PostgreSQL's first charge after open reads the tables whole)
        if not (mirrored and "profile" in edit):
            assert refused.type is AccountingError and re.search(caught, str(refused.value)), refused.value
        assert _dump(url) == before
    finally:
        writer.close()
    with pytest.raises(AccountingError, match="integrity check"):
        Ledger.open(url)


# ---- item 13: a silent PostgreSQL connection ---------------------------------------------------


@pytest.fixture
def silent_proxy(postgres):
    """A TCP proxy on 127.0.0.1 (and nowhere else) in front of the test server's Unix socket: it
    forwards both ways until ``stop()``, then goes silent (established connections stay open and
    unanswered; new ones are accepted and never answered), as a network that stops forwarding."""
    import select
    import socket
    import threading

    forwarding = threading.Event()
    forwarding.set()
    closing = threading.Event()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def pump(client: socket.socket, server: socket.socket) -> None:
        peers = {client: server, server: client}
        while not closing.is_set():
            if not forwarding.is_set():
                closing.wait(0.05)
                continue
            ready, _, _ = select.select(list(peers), [], [], 0.05)
            for source in ready:
                if not forwarding.is_set():
                    break
                data = source.recv(65536)
                if not data:
                    return
                peers[source].sendall(data)

    def accept() -> None:
        while True:
            try:
                client = listener.accept()[0]
            except OSError:
                return
            held.append(client)
            if not forwarding.is_set():
                continue
            server = socket.socket(socket.AF_UNIX)
            server.connect(str(postgres.directory / ".s.PGSQL.5432"))
            held.append(server)
            threading.Thread(target=pump, args=(client, server), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()

    class Proxy:
        port = listener.getsockname()[1]
        stop = forwarding.clear

    yield Proxy
    closing.set()
    listener.close()
    for connection in held:
        with contextlib.suppress(OSError):
            connection.close()


def test_a_charge_through_a_connection_gone_silent_fails_clearly_within_its_bounds(postgres, silent_proxy):
    """A ledger reached through the proxy (lock_timeout = statement_timeout = 0.5 s, connect and
    reconnect timeouts small): a charge works; the proxy stops forwarding; the next charge fails
    with an AccountingError naming the silence and the reconnect bound, within lock + statement +
    grace + reconnect (about 5 s; 20 s allowed), and is not recorded. The wrong variant (no
    client-side deadline: libpq waits on an established connection for ever) hung for 150 s in the
    issue's run (the test would hit its own 20 s bound through the timer's absence)."""
    import time
    from urllib.parse import urlsplit

    database = urlsplit(postgres.url()).path.lstrip("/")
    url = (f"postgresql://postgres@127.0.0.1:{silent_proxy.port}/{database}"
           "?connect_timeout=2&lock_timeout=0.5&statement_timeout=0.5&reconnect_timeout=1")
    ledger = Ledger.open(url, PureDP(1.0), create=True)
    try:
        ledger.charge(PureDP(0.1), range(0, 10), label="through the proxy")
        silent_proxy.stop()
        started = time.monotonic()
        with pytest.raises(AccountingError, match=r"reachable PostgreSQL server within reconnect_timeout=1 s.*no answer within 3 s"):
            ledger.charge(PureDP(0.1), range(0, 10), label="into the silence")
        assert time.monotonic() - started < 20
    finally:
        ledger.close()
    with Ledger.open(postgres.admin_url(database), read_only=True) as reader:
        assert [c.label for c in reader.charges] == ["through the proxy"]


@pytest.mark.parametrize("store,rule", [("sqlite", "same"), ("postgresql", "same"), ("sqlite", "other")])
def test_interleaved_handles_keep_copies_that_match_the_tables(store, rule, tmp_path, request, monkeypatch):
    """Three handles on one ledger take turns (seeded: 240 charges on SQLite, 120 on PostgreSQL,
    of ranges of 1-60 users and scattered ids over 400 users, budget eps 1.5, refusals included):
    after every charge (every 6th on PostgreSQL), the handle that charged, if it has a verified
    copy of the tables (see _Mirror), holds exactly the rows of the database, and no sound charge
    is ever refused as tampering. What it has power to detect: any segment a refresh misses (a merge at a range's end, a refusal undone the
    wrong way) shows up as a difference in the rows or a false integrity refusal. Deterministic
    given the seed (false-alarm rate 0); the wrong variant (refreshing only the segments
    overlapping each charge's range, not those adjoining it, which a merge rewrites) fails it.
    A handle brings its copy up to the others' charges by applying them as they were applied
    (``rule`` "same": that must reproduce the chain's digests every time, the ranges never read
    again; the wrong variant, a merge rule differing from the writer's, would need a read);
    ``rule`` "other" plays a handle whose rule differs from the writers' (it applies nothing):
    the digests then disagree, the touched ranges are read instead, and the copies still match."""
    from accounting._ledgers._durable import DurableLedger

    url = f"sqlite:///{tmp_path}/l.db" if store == "sqlite" else request.getfixturevalue("postgres").url()
    calls = {"applied": 0, "reread": 0}
    apply, reread = DurableLedger._apply_appended, DurableLedger._refresh_regions

    def applied(self, mirror, appended):
        calls["applied"] += 1
        return True if rule == "other" else apply(self, mirror, appended)

    def reread_counted(self, mirror, intervals):
        calls["reread"] += 1
        return reread(self, mirror, intervals)

    monkeypatch.setattr(DurableLedger, "_apply_appended", applied)
    monkeypatch.setattr(DurableLedger, "_refresh_regions", reread_counted)
    rng = np.random.default_rng(34)
    handles = [Ledger.open(url, PureDP(1.5), create=True)] + [Ledger.open(url) for _ in range(2)]
    refused = 0
    try:
        count, every = (240, 1) if store == "sqlite" else (120, 6)  # (a PostgreSQL round trip costs more)
        for i in range(count):
            handle = handles[int(rng.integers(3))]
            eps = [0.05, 0.1, 0.25][int(rng.integers(3))]
            if rng.random() < 0.75:
                start = int(rng.integers(0, 340))
                users = range(start, start + int(rng.integers(1, 60)))
            else:
                users = np.unique(rng.integers(0, 400, size=int(rng.integers(1, 12))))
            try:
                handle.charge(PureDP(eps), users, label=f"c{i}")
            except BudgetExceeded:
                refused += 1
            mirror = handle._mirror
            if mirror is not None and i % every == 0:
                _, _, table, profiles = _dump(url)
                assert [(s, *mirror.segments[s][:2]) for s in mirror.starts] == [tuple(r) for r in table]
                assert sorted((pid, *v[:3]) for pid, v in mirror.profiles.items()) == [tuple(r) for r in profiles]
        assert 0 < refused < count
        assert sum(h._mirror is not None for h in handles) >= 2  # the refresh path was exercised
        assert calls["applied"] > 10
        assert (calls["reread"] == 0) if rule == "same" else (calls["reread"] == calls["applied"])
    finally:
        for handle in handles:
            handle.close()
    with Ledger.open(url, read_only=True) as reader:
        assert reader.verify().ok


# ---- issue 22 after issue 34: the checks kept current cheaply, and sound on a retry ---------------


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
@pytest.mark.parametrize("others", [False, True])
def test_a_refused_charge_retried_on_the_same_handle_is_refused_again(store, others, tmp_path, request):
    """The open-handle case above (users 0..99 at 9.5 of 10, a segment of theirs deleted while a
    writer's handle is open; ``others``: another handle charged first, so the writer has a verified
    copy of the tables): the writer's charge of 1.0 on users 0..199 is refused as tampering, and so
    is every retry on the same handle, the database unchanged. Deterministic (false-alarm rate 0).
    The wrong variant (the handle forgetting its copy on a refusal and, seeing no further write,
    trusting the tables) accepted the second attempt: users 0..99 at 10.5 against 10."""
    url = f"sqlite:///{tmp_path}/l.db" if store == "sqlite" else request.getfixturevalue("postgres").url()
    with Ledger.open(url, PureDP(10.0), create=True) as setup:
        for i in range(19):
            setup.charge(PureDP(0.5), range(0, 100), label=f"batch {i}")
        setup.charge(PureDP(0.5), range(100, 200), label="others")
    with Ledger.open(url) as writer:
        if others:
            with Ledger.open(url) as other:
                other.charge(PureDP(0.5), range(300, 310), label="another process")
            with pytest.raises(BudgetExceeded):
                writer.charge(PureDP(1.0), range(0, 200))
        _tamper(url, OPEN_HANDLE_EDITS["a segment deleted"])
        before = _dump(url)
        for attempt in range(3):
            with pytest.raises(AccountingError, match="integrity check"):
                writer.charge(PureDP(1.0), range(0, 200), label=f"attempt {attempt}")
            assert _dump(url) == before


def test_postgres_change_check_sees_a_commit_by_a_transaction_that_began_after_the_charge(postgres):
    """PostgreSQL's "did anyone write since this connection's last look" (used while a handle has
    no verified copy of the tables): a charge's transaction takes the state row's lock (and its
    transaction id); then another transaction, whose id comes after the charge's, writes and
    commits before the charge asks. The check must say "changed". Deterministic. The wrong
    variant (ids in order and nothing in progress at the last look = unchanged) said unchanged:
    with 8 processes a writer whose id came after a charge's but who took the lock first went
    unseen, the handle's copy of the tables went stale, and a sound ledger was refused as
    tampered (2 of 3 runs of 1,600 charges)."""
    import psycopg

    url = postgres.url()
    with Ledger.open(url, PureDP(10.0), create=True) as ledger:
        ledger.charge(PureDP(0.5), range(0, 10))
        store = ledger._store
        with store.write():
            store.one("SELECT last_seq FROM dpverify_state WHERE id = 1 FOR UPDATE")
            store.changed_behind()  # the last look
        with store.write():
            store.one("SELECT last_seq FROM dpverify_state WHERE id = 1 FOR UPDATE")  # this transaction's id
            with psycopg.connect(url, autocommit=True) as other:
                other.execute("UPDATE dpverify_meta SET value = value WHERE key = 'name'")  # a later id, committed
            assert store.changed_behind()
