"""The durable ledger (SQLite and PostgreSQL): same values as in memory, atomic check-and-charge
under 8 concurrent processes, whole charges only after SIGKILL, schema versioning, verification."""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import os
import signal
import sqlite3
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import accounting as acc
from accounting import ZCDP, AccountingError, ApproxDP, BudgetExceeded, Ledger, PureDP
from accounting._ledgers._durable import DurableLedger
from accounting._ledgers._ledger_store import ConnectionLost


STORES = ("sqlite", "postgresql")


#: every test of this module gets its own ledger witness directory (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("witness")


@pytest.fixture(params=STORES)
def new_url(request, tmp_path):
    """A function returning the URL of a fresh, empty database of the parametrised kind."""
    counter = iter(range(10**6))
    if request.param == "sqlite":
        return lambda query="": f"sqlite:///{tmp_path}/ledger{next(counter)}.db{query}"
    server = request.getfixturevalue("postgres")
    return lambda query="": server.url()


def _random_charges(seed: int, count: int, population: int, guarantees: list) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        kind = rng.random()
        if kind < 0.6:
            start = int(rng.integers(0, population))
            users = range(start, start + int(rng.integers(1, 80)))
        elif kind < 0.95:
            users = np.unique(rng.integers(0, population, size=int(rng.integers(1, 20))))
        else:
            users = None
        out.append((guarantees[int(rng.integers(len(guarantees)))], users, f"c{i}"))
    return out


@pytest.mark.parametrize(
    "budget, guarantees, count",
    [
        (PureDP(1.0), [PureDP(0.05), PureDP(0.1), PureDP(0.3), acc.DiscreteLaplace(scale=Fraction(32, 3), sensitivity=1)], 70),
        (ZCDP(0.5), [ZCDP(0.01), PureDP(0.2), ZCDP(0.07)], 70),
        # each distinct multiset is an exact RDP conversion (~0.1 s): fewer charges
        (ApproxDP(1.0, 1e-6), [acc.Skellam(variance=100, l1_sensitivity=1, l2_sensitivity=1), ZCDP(0.02), ApproxDP(0.1, 1e-8)], 30),
    ],
    ids=["pure", "zcdp", "approx"],
)
def test_same_decisions_values_and_trail_as_the_in_memory_ledger(new_url, budget, guarantees, count):
    """Random charges (ranges, id arrays, everyone) until the budget binds: the durable ledger
    accepts and refuses exactly the charges the in-memory one does, reports the identical spend
    after every charge, writes a byte-identical JSON trail, and verifies."""
    durable = Ledger.open(new_url(), budget, name="same", create=True)
    memory = Ledger(budget, name="same")
    decisions = []
    for g, users, label in _random_charges(5, count, 150, guarantees):
        outcome = []
        for ledger in (durable, memory):
            try:
                ledger.charge(g, users, label=label)
                outcome.append(True)
            except BudgetExceeded:
                outcome.append(False)
        assert outcome[0] == outcome[1], label
        assert durable.spent() == memory.spent(), label
        decisions.append(outcome[0])
    assert any(decisions) and not all(decisions)  # the budget did bind
    assert durable.max_charges_per_user() == memory.max_charges_per_user()
    assert durable.to_json() == memory.to_json()
    assert durable.verify().ok
    assert durable.can_afford(guarantees[0], range(10**6, 10**6 + 5)) == memory.can_afford(guarantees[0], range(10**6, 10**6 + 5))
    assert durable.can_afford(guarantees[0], None) == memory.can_afford(guarantees[0], None)
    durable.close()


def test_json_trail_imports_and_exports_losslessly(new_url):
    memory = Ledger(ApproxDP(1.0, 1e-5), name="demo")
    memory.charge(ZCDP(0.01), range(0, 1000), label="batch 1")
    memory.charge(PureDP(0.1), np.array([1, 2, 3, 7]), label="batch 2")
    memory.charge(ApproxDP(0.05, 1e-7), range(500, 600), label="batch 3")
    memory.charge(acc.DiscreteLaplace(scale=Fraction(32, 3), sensitivity=4), None, label="everyone")
    trail = memory.to_json()
    url = new_url()
    durable = Ledger.from_json(trail, url=url)
    assert durable.to_json() == trail
    durable.close()
    reopened = Ledger.open(url)  # the budget is read from the database
    assert reopened.to_json() == trail
    assert Ledger.from_json(reopened.to_json()).to_json() == trail
    assert reopened.charges[3].guarantee == acc.DiscreteLaplace(scale=Fraction(32, 3), sensitivity=4)
    reopened.close()


def test_json_trail_import_is_all_or_nothing(new_url):
    """A trail whose last charge the budget refuses (edited to a larger epsilon) is imported as
    one transaction: nothing is recorded, so importing the fixed trail records each charge once."""
    memory = Ledger(PureDP(1.0))
    for i in range(3):
        memory.charge(PureDP(0.3), range(10), label=f"c{i}")
    good = memory.to_json()
    data = json.loads(good)
    data["charges"][2]["guarantee"]["epsilon"] = 0.5  # 0.3 + 0.3 + 0.5 > 1
    url = new_url()
    with pytest.raises(BudgetExceeded):
        Ledger.from_json(json.dumps(data), url=url)
    empty = Ledger.open(url)
    assert len(empty.charges) == 0
    empty.close()
    imported = Ledger.from_json(good, url=url)
    assert imported.to_json() == good
    imported.close()


def _dump(path) -> list[str]:
    with _sqlite(path) as connection:
        return list(connection.iterdump())


def test_a_refused_charge_leaves_no_trace(tmp_path):
    """Byte-for-byte the same database (every table) after a refusal, even when the refused
    charge brought a guarantee the ledger had never seen; and the error names the worst user's
    spend and the budget."""
    path = tmp_path / "l.db"
    ledger = Ledger.open(f"sqlite:///{path}", PureDP(1.0), create=True)
    ledger.charge(PureDP(0.6), range(0, 10), label="first")
    before = _dump(path)
    with pytest.raises(BudgetExceeded, match=r"worst user's spend is 0\.6-DP.*unchanged") as error:
        ledger.charge(PureDP(0.45), np.array([3, 4, 99]), label="too much")
    assert "budget of 1-DP" in str(error.value)
    assert _dump(path) == before
    ledger.charge(PureDP(0.45), np.array([99, 100]))  # the same users elsewhere still fit
    assert ledger.spent() == PureDP(0.6)
    assert ledger.verify().ok
    ledger.close()



def test_a_refused_charges_guarantee_id_reused_by_another_guarantee_gets_its_own_spend(tmp_path):
    """A refused charge rolls back the guarantee row it added, and SQLite gives that id to the next
    new guarantee. The handle used to keep the spends it had computed for profile keys naming the
    rolled-back id ("2:1" = 0.5), so PureDP(1.5) on fresh users, given id 2, was charged as 0.5 and
    accepted against a budget of 1: an overspend that only verify() caught. Refused now."""
    ledger = Ledger.open(f"sqlite:///{tmp_path}/l.db", PureDP(1.0), create=True)
    ledger.charge(PureDP(0.9), range(0, 10))
    with pytest.raises(BudgetExceeded):
        ledger.charge(PureDP(0.5), range(0, 20))  # users 10..19 fresh: "2:1" = 0.5 computed, then refused
    with pytest.raises(BudgetExceeded):
        ledger.charge(PureDP(1.5), range(30, 40))
    assert ledger.spent() == PureDP(0.9)
    assert ledger.verify().ok
    ledger.close()


def test_a_guarantee_id_another_handle_reuses_gets_its_own_spend(tmp_path):
    """The same through two handles: A's refused charge computed "1:1,2:1" = 0.9 + 0.5 for users
    0..9; B then gives id 2 to PureDP(0.05), charged to users 20..29; A's PureDP(0.05) on users
    0..9 spends 0.95 <= 1 and must be accepted (A's stale 1.4 refused it)."""
    url = f"sqlite:///{tmp_path}/l.db"
    a = Ledger.open(url, PureDP(1.0), create=True)
    b = Ledger.open(url)
    a.charge(PureDP(0.9), range(0, 10))
    with pytest.raises(BudgetExceeded):
        a.charge(PureDP(0.5), range(0, 20))
    b.charge(PureDP(0.05), range(20, 30))
    a.charge(PureDP(0.05), range(0, 10))
    assert a.spent() == PureDP(0.9).compose(PureDP(0.05))
    assert a.verify().ok
    a.close()
    b.close()


def test_newer_schema_is_refused_and_budgets_are_checked(tmp_path):
    url = f"sqlite:///{tmp_path}/l.db"
    Ledger.open(url, PureDP(1.0), create=True).close()
    with pytest.raises(ValueError, match="budget"):
        Ledger.open(url, PureDP(2.0))
    with pytest.raises(ValueError, match="create=True"):
        Ledger.open(f"sqlite:///{tmp_path}/new.db", PureDP(1.0))  # nothing there, and no create=True
    with pytest.raises(ValueError, match="budget"):
        Ledger.open(f"sqlite:///{tmp_path}/new.db", create=True)  # nothing there and no budget to create it
    assert not (tmp_path / "new.db").exists()  # a refused creation leaves no file behind
    with pytest.raises(ValueError, match="url"):
        Ledger.open(f"mysql://{tmp_path}/l.db", PureDP(1.0))
    with _sqlite(tmp_path / "l.db") as connection:
        connection.execute("UPDATE dpverify_meta SET value = '3' WHERE key = 'schema_version'")
    with pytest.raises(ValueError, match=r"schema_version=3 .*newer dpverify"):
        Ledger.open(url)


def test_read_only_ledger_refuses_to_charge(new_url):
    url = new_url()
    Ledger.open(url, PureDP(1.0), create=True).close()
    reader = Ledger.open(url, read_only=True)
    with pytest.raises(ValueError, match="read-only"):
        reader.charge(PureDP(0.1), range(0, 3))
    assert reader.verify().ok
    reader.close()


# ---- tampering -----------------------------------------------------------------------------------

TAMPERING = {
    "an epsilon edited in the guarantees table": "UPDATE dpverify_guarantees SET spec = replace(spec, '0.125', '0.0125')",
    "a segment row deleted": "DELETE FROM dpverify_segments WHERE start = (SELECT MIN(start) FROM dpverify_segments)",
    "a segment shortened": "UPDATE dpverify_segments SET stop = stop - 1 WHERE start = (SELECT MAX(start) FROM dpverify_segments)",
    "a profile's spend lowered": "UPDATE dpverify_profiles SET spend = spend / 2",
    "the worst spend lowered": "UPDATE dpverify_state SET worst = worst / 2",
    "a charge's spent_after edited": "UPDATE dpverify_charges SET spent_after = spent_after / 2 WHERE seq = 3",
    "a charge's label edited": "UPDATE dpverify_charges SET label = 'edited' WHERE seq = 3",
    "a charge's recorded_at edited": "UPDATE dpverify_charges SET recorded_at = '2000-01-01T00:00:00.000000+00:00' WHERE seq = 3",
    "a charge row deleted": "DELETE FROM dpverify_charges WHERE seq = 3",
    "the budget raised": "UPDATE dpverify_meta SET value = replace(value, '2.0', '20.0') WHERE key = 'budget'",
}


def _sqlite(url_or_path) -> sqlite3.Connection:
    """A connection that is closed (not only committed) at the end of a with block."""
    path = str(url_or_path)
    path = path[len("sqlite:///"):].split("?")[0] if path.startswith("sqlite:") else path
    connection = sqlite3.connect(path, isolation_level=None)
    return contextlib.closing(connection)


def _execute(url: str, statement: str) -> None:
    """Run SQL on the ledger's database behind dpverify's back (as a tamperer would)."""
    if url.startswith("sqlite:"):
        with _sqlite(url) as connection:
            connection.execute(statement)
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(statement)


def _contents(url: str) -> list:
    """Every row of every dpverify table, in order (to show that a refusal wrote nothing)."""
    tables = {"dpverify_meta": "key", "dpverify_state": "id", "dpverify_guarantees": "id", "dpverify_profiles": "id",
              "dpverify_charges": "seq", "dpverify_segments": "start"}
    if url.startswith("sqlite:"):
        with _sqlite(url) as connection:
            return [connection.execute(f"SELECT * FROM {t} ORDER BY {k}").fetchall() for t, k in tables.items()]
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        return [connection.execute(f"SELECT * FROM {t} ORDER BY {k}").fetchall() for t, k in tables.items()]


def _charged_ledger(url: str) -> None:
    """Budget eps = 2: eight charges of 0.125 on users 0..99, one of 0.5 on 50..149, one on ids."""
    with Ledger.open(url, PureDP(2.0), create=True) as ledger:
        for i in range(8):
            ledger.charge(PureDP(0.125), range(0, 100), label=f"batch {i}")
        ledger.charge(PureDP(0.5), range(50, 150), label="overlap")
        ledger.charge(PureDP(0.25), np.array([3, 77, 400]), label="ids")


@pytest.mark.parametrize("case", list(TAMPERING))
def test_every_tampering_is_detected_and_no_further_charge_is_accepted(case, new_url, monkeypatch):
    """Each edit an operator (or an attacker with SQL access) could make, on SQLite and PostgreSQL,
    without a key and with the witness off (so the chain and the derived tables' digests alone must
    catch it): opening the ledger for writing is refused with exit-2 error naming how to inspect it,
    nothing is written, and the read-only verify reports it. The wrong variant is the same ledger
    unedited: it opens and charges (the checks do not refuse sound ledgers)."""
    monkeypatch.setenv("DPVERIFY_LEDGER_WITNESS", "off")
    url = new_url()
    _charged_ledger(url)
    with Ledger.open(url) as sound:  # the control: unedited, it opens and verifies
        assert sound.integrity == () and sound.verify().ok
    _execute(url, TAMPERING[case])
    before = _contents(url)
    with pytest.raises(AccountingError, match=r"integrity check.*ledger verify") as error:
        Ledger.open(url)
    assert "Traceback" not in str(error.value)
    assert _contents(url) == before
    with Ledger.open(url, read_only=True) as reader:
        assert reader.integrity, case
        report = reader.verify()
        assert not report.ok, case
    assert _contents(url) == before


def test_a_tampered_ledger_is_refused_by_the_cli_with_exit_2(tmp_path, monkeypatch):
    """`account charge` on an edited ledger: exit 2, one line naming `ledger verify`, no traceback,
    nothing written; `ledger verify` exits 1 and lists the problem; `ledger show` still shows it (and exits 1)."""
    from click.testing import CliRunner

    from dpverify.cli import main

    url = f"sqlite:///{tmp_path}/l.db"
    _charged_ledger(url)
    _execute(url, TAMPERING["an epsilon edited in the guarantees table"])
    before = _contents(url)
    runner = CliRunner()
    charged = runner.invoke(main, ["account", "charge", "--ledger", url, "--pure", "0.01", "--users", "0:10"])
    assert charged.exit_code == 2 and "ledger verify" in charged.output and "Traceback" not in charged.output
    assert _contents(url) == before
    verified = runner.invoke(main, ["ledger", "verify", url])
    assert verified.exit_code == 1 and "does not match its link" in verified.output
    shown = runner.invoke(main, ["ledger", "show", url])
    assert shown.exit_code == 1 and "INTEGRITY" in shown.output


def _forge(url: str, key: str | None, keep_key_check: str | None, monkeypatch, tmp_path) -> None:
    """A self-consistent rewrite, as someone holding ``key`` (None: no key) would make it with
    dpverify's own code: the same history with eps 0.0125 where 0.125 was charged, built as a
    new ledger, then given the original's identity (ledger id, key check) and relinked from the
    original's genesis, so that every link, digest and count agrees."""
    from accounting._ledgers._ledger_chain import Chain

    path = url[len("sqlite:///"):]
    with _sqlite(path) as connection:
        meta = dict(connection.execute("SELECT key, value FROM dpverify_meta").fetchall())
    forged_url = f"sqlite:///{tmp_path}/forged.db"
    with monkeypatch.context() as patch:
        patch.setenv("DPVERIFY_LEDGER_WITNESS", "off")
        if key is None:
            patch.delenv("DPVERIFY_LEDGER_KEY", raising=False)
        else:
            patch.setenv("DPVERIFY_LEDGER_KEY", key)
        with Ledger.open(forged_url, PureDP(2.0), create=True) as forged:
            for i in range(8):
                forged.charge(PureDP(0.0125), range(0, 100), label=f"batch {i}")
            forged.charge(PureDP(0.5), range(50, 150), label="overlap")
            forged.charge(PureDP(0.25), np.array([3, 77, 400]), label="ids")
    chain = Chain(None if key is None else key.encode())
    forged_path = f"{tmp_path}/forged.db"
    with _sqlite(forged_path) as connection:
        connection.execute("UPDATE dpverify_meta SET value = ? WHERE key = 'ledger_id'", (meta["ledger_id"],))
        connection.execute("UPDATE dpverify_meta SET value = ? WHERE key = 'chain'", (meta["chain"],))
        if keep_key_check is not None:
            connection.execute("INSERT OR REPLACE INTO dpverify_meta (key, value) VALUES ('key_check', ?)", (keep_key_check,))
        specs = dict(connection.execute("SELECT id, spec FROM dpverify_guarantees").fetchall())
        link = chain.genesis(meta["ledger_id"], meta["budget"], meta["name"], meta["format"])
        rows = connection.execute("SELECT seq, cid, label, guarantee, participants, users, spent_after, recorded_at, derived "
                                  "FROM dpverify_charges ORDER BY seq").fetchall()
        for seq, cid, label, gid, participants, users, after, at, derived in rows:
            link = chain.link(link, [seq, cid, label, specs[gid], participants, users, after, at, derived])
            connection.execute("UPDATE dpverify_charges SET link = ? WHERE seq = ?", (link, seq))
        connection.execute("UPDATE dpverify_state SET head = ?", (link,))
    os.replace(forged_path, path)


@pytest.mark.parametrize("ledger_key, forger_key, caught_by", [
    ("k" * 32, None, "key"),            # a keyed ledger rewritten without its key (plain SHA-256 links)
    ("k" * 32, "x" * 32, "key"),        # ... or with another key
    ("k" * 32, "k" * 32, "witness"),    # an insider holding the key: only the witness outside the database sees it
    (None, None, "witness"),            # an unkeyed ledger rewritten consistently
])
def test_a_self_consistent_rewrite_is_detected(ledger_key, forger_key, caught_by, tmp_path, monkeypatch, witness):
    """The rewrite passes every check inside the database when its links are made with the
    ledger's own chain (the control: with the witness off it opens, verify included, so the
    forgery really is self-consistent); it is refused for charging by the MAC when the forger
    lacks the ledger's key, and by the witness of the chain head this machine saw otherwise."""
    if ledger_key is None:
        monkeypatch.delenv("DPVERIFY_LEDGER_KEY", raising=False)
    else:
        monkeypatch.setenv("DPVERIFY_LEDGER_KEY", ledger_key)
    url = f"sqlite:///{tmp_path}/l.db"
    _charged_ledger(url)  # the witness records its head
    with _sqlite(f"{tmp_path}/l.db") as connection:
        key_check = dict(connection.execute("SELECT key, value FROM dpverify_meta").fetchall()).get("key_check")
    _forge(url, forger_key, key_check, monkeypatch, tmp_path)
    with pytest.raises(AccountingError, match="integrity check"):
        Ledger.open(url)
    with Ledger.open(url, read_only=True) as reader:
        assert not reader.verify().ok
    monkeypatch.setenv("DPVERIFY_LEDGER_WITNESS", "off")
    if caught_by == "key":
        with pytest.raises(AccountingError, match="does not match its link"):
            Ledger.open(url)
    else:  # without the witness nothing inside the database tells the forgery apart
        with Ledger.open(url) as forged:
            assert forged.integrity == () and forged.verify().ok
            assert forged.charges[0].guarantee == PureDP(0.0125)


def test_each_charge_checks_the_rows_other_processes_appended(tmp_path):
    """Incremental checking: handle A verifies, under the lock, the rows B appended since A's
    last look (their links, the head and the state's commitment); a row B wrote that was edited
    before A looked is refused. The control: B's unedited rows pass."""
    url = f"sqlite:///{tmp_path}/l.db"
    a = Ledger.open(url, PureDP(2.0), create=True)
    b = Ledger.open(url)
    b.charge(PureDP(0.1), range(0, 10), label="b1")
    a.charge(PureDP(0.1), range(0, 10), label="a1")  # catches up with b1: fine
    b.charge(PureDP(0.1), range(20, 30), label="b2")
    _execute(url, "UPDATE dpverify_charges SET label = 'edited' WHERE label = 'b2'")
    before = _contents(url)
    with pytest.raises(AccountingError, match="does not match its link"):
        a.charge(PureDP(0.1), range(40, 50), label="a2")
    assert _contents(url) == before
    a.close()
    b.close()


def test_a_link_encoded_in_parts_is_the_link_of_the_whole_row():
    """A charge encodes the fields of its row it knows before the lock ahead and the rest under
    it; the on-disk format is unchanged: the link is the one the check on open recomputes from
    the whole row (every field kind, keyed and unkeyed)."""
    from accounting._ledgers._ledger_chain import Chain, encode

    row = [7, "c1d", "label with | and : in it", '{"epsilon":0.5,"type":"pure"}', '{"range": [0, 10]}', None, 0.1 + 0.2,
           "2026-01-01T00:00:00.000000+00:00", "d" * 64]
    for chain in (Chain(None), Chain(b"k" * 32)):
        assert chain.link("p" * 64, encode(row[:1]) + encode(row[1:6]) + encode(row[6:])) == chain.link("p" * 64, row)



@pytest.mark.parametrize("ns", [0, 1_764_000_000_123_456_789, 1_764_000_059_999_999_999, 1_764_000_060_000_000_000, 4_102_444_799_999_999_000])
def test_a_rows_time_is_the_text_datetime_writes_across_minutes(ns, monkeypatch):
    """recorded_at is formatted from a per-minute cache; its text must be what
    datetime.isoformat(timespec="microseconds") writes for the same instant, including the
    instants either side of a minute's end (the cache's refresh). The wrong variant, a cache
    kept across a minute, is rejected: the first call after a minute must not reuse the old
    prefix."""
    import datetime as dt

    from accounting._ledgers import _durable

    expected = (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=ns // 1000)).isoformat(timespec="microseconds")
    monkeypatch.setattr(_durable.time, "time_ns", lambda: ns)
    assert _durable._now() == expected
    monkeypatch.setattr(_durable.time, "time_ns", lambda: ns + 60 * 10**9)  # one minute later
    later = (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=ns // 1000 + 60 * 10**6)).isoformat(timespec="microseconds")
    assert _durable._now() == later != expected


@pytest.mark.parametrize("participants", [None, range(3, 17), range(0, 1), range(5, 5), np.array([1, 2, 3, 7, 8], dtype=np.int64)])
def test_participants_text_is_json_dumps_of_the_stored_form(participants):
    """A range's stored JSON is written directly (faster than json.dumps); its text must be
    exactly json.dumps's, which the check on open and earlier ledgers' rows use."""
    from accounting._ledgers._durable import _stored_participants, _stored_text

    assert _stored_text(participants) == json.dumps(_stored_participants(participants))


def test_remembered_specs_and_profile_keys_follow_the_object_and_the_key(tmp_path):
    """The handle remembers each guarantee object's spec (by identity) and each (profile, guarantee)
    successor key; equal but distinct objects, and a different guarantee, must still get their
    own rows and spends: the ledger's spends equal the in-memory ledger's for the same charges."""
    url = f"sqlite:///{tmp_path}/l.db"
    durable, memory = Ledger.open(url, PureDP(10.0), create=True), Ledger(PureDP(10.0))
    a, b = PureDP(0.25), PureDP(0.5)
    for g, users in [(a, range(0, 10)), (PureDP(0.25), range(5, 15)), (b, range(0, 3)), (a, range(2, 12)), (b, range(9, 20))]:
        durable.charge(g, users)
        memory.charge(g, users)
    assert durable.spent() == memory.spent() == PureDP(1.25)
    assert durable.verify().ok
    durable.close()


# ---- concurrency ----------------------------------------------------------------------------------

STRESS_EPS = (0.05, 0.1, 0.25)


class _CheckThenCharge(DurableLedger):
    """The wrong variant: checks in one transaction, charges in another (with a pause between,
    as a busy process would have), so concurrent processes can both pass the check."""

    def charge(self, guarantee, participants=None, *, label=""):
        if not self.can_afford(guarantee, participants):
            raise BudgetExceeded("refused by the separate check")
        time.sleep(0.002)
        limit, self._limit = self._limit, math.inf
        try:
            super().charge(guarantee, participants, label=label)
        finally:
            self._limit = limit


def _stress_plan(seed: int, worker: int, charges: int, population: int) -> list[tuple]:
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(worker,)))
    plan = []
    for i in range(charges):
        eps = STRESS_EPS[int(rng.integers(len(STRESS_EPS)))]
        if rng.random() < 0.8:
            start = int(rng.integers(0, population - 40))
            users = range(start, start + int(rng.integers(1, 40)))
        else:
            users = np.unique(rng.integers(0, population, size=int(rng.integers(1, 8))))
        plan.append((f"w{worker}-{i}", eps, users))
    return plan


def _stress_worker(url: str, seed: int, worker: int, charges: int, population: int, racy: bool, out: str) -> None:
    ledger = (_CheckThenCharge.connect if racy else DurableLedger.connect)(url)
    accepted = []
    for label, eps, users in _stress_plan(seed, worker, charges, population):
        try:
            ledger.charge(PureDP(eps), users, label=label)
            accepted.append(label)
        except BudgetExceeded:
            pass
    ledger.close()
    with open(out, "w") as handle:
        json.dump(accepted, handle)


def _run_stress(url: str, tmp_path, *, processes: int, charges: int, population: int, racy: bool, seed: int) -> tuple[set, list, np.ndarray]:
    """Run the workers; return (accepted labels, every planned charge, each user's exact spend)."""
    Ledger.open(url, PureDP(1.0), create=True).close()
    context = multiprocessing.get_context("fork")
    outs = [str(tmp_path / f"accepted{w}.json") for w in range(processes)]
    workers = [context.Process(target=_stress_worker, args=(url, seed, w, charges, population, racy, outs[w])) for w in range(processes)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
        assert w.exitcode == 0
    accepted = set()
    for out in outs:
        with open(out) as handle:
            accepted |= set(json.load(handle))
    plan = [item for w in range(processes) for item in _stress_plan(seed, w, charges, population)]
    # each user's exact spend: the rational sum of the eps of the accepted charges touching her
    counts = np.zeros((len(STRESS_EPS), population), dtype=np.int64)
    for label, eps, users in plan:
        if label in accepted:
            index = STRESS_EPS.index(eps)
            if isinstance(users, range):
                counts[index, users.start:users.stop] += 1
            else:
                counts[index, users] += 1
    spend = sum(Fraction(eps) * counts[i].astype(object) for i, eps in enumerate(STRESS_EPS))
    return accepted, plan, spend


def _check_stress(url: str, accepted: set, plan: list, spend: np.ndarray) -> None:
    assert max(spend) <= 1, "some user's exact spend exceeds the budget"
    ledger = Ledger.open(url, read_only=True)
    stored = [c.label for c in ledger.charges]
    assert len(stored) == len(set(stored))
    assert set(stored) == accepted  # every accepted charge present, every refused one absent
    for label, eps, users in plan:
        if label not in accepted:  # spends only grow: a refusal is still justified at the end
            ids = np.arange(users.start, users.stop) if isinstance(users, range) else users
            assert max(spend[ids]) + Fraction(eps) > 1, f"{label} was refused although it fits"
    report = ledger.verify()
    assert report.ok, report.disagreements
    assert report.worst == float(max(spend)) or report.worst >= float(max(spend))
    ledger.close()


@pytest.mark.slow
@pytest.mark.parametrize("store", STORES)
def test_eight_processes_never_overspend(store, tmp_path, request):
    """8 processes x 2,000 charges on overlapping users of one ledger (PureDP eps in {0.05, 0.1,
    0.25} on ranges of 1-39 users or scattered ids, population 3,000, budget eps = 1): no user's
    exact (rational) spend exceeds 1, the stored charges are exactly the accepted ones, every
    refused charge is still over budget at the end, and verify agrees. Deterministic checks (the
    interleaving is random, the invariants must hold for every one). SQLite runs with
    synchronous=normal here (the lock and the atomic commit are the same; full durability costs
    one fsync per charge, measured in BENCHMARKS.md); PostgreSQL with synchronous_commit=off."""
    if store == "sqlite":
        url = f"sqlite:///{tmp_path}/stress.db?synchronous=normal"
    else:
        url = request.getfixturevalue("postgres").url() + "&options=-c%20synchronous_commit%3Doff"
    started = time.perf_counter()
    accepted, plan, spend = _run_stress(url, tmp_path, processes=8, charges=2000, population=3000, racy=False, seed=11)
    elapsed = time.perf_counter() - started
    assert 0 < len(accepted) < len(plan)
    _check_stress(url, accepted, plan, spend)
    print(f"{store}: {len(plan)} charges ({len(accepted)} accepted) by 8 processes in {elapsed:.1f} s")


def test_stress_check_rejects_a_check_then_charge_ledger(tmp_path):
    """The same harness finds the overspending of the wrong variant (check and charge in separate
    transactions): 8 processes x 150 charges on 200 users, 2 ms between check and charge. Power:
    with ~1,200 charges racing for ~10 charges' worth of budget per user, two processes passing
    the check for one user before either charges is all but certain (it happened in every trial)."""
    url = f"sqlite:///{tmp_path}/racy.db?synchronous=normal"
    accepted, plan, spend = _run_stress(url, tmp_path, processes=8, charges=150, population=200, racy=True, seed=12)
    assert max(spend) > 1


# ---- crashes --------------------------------------------------------------------------------------


def _crash_child(url: str, log: str, seed: int, ready: int) -> None:
    """Charge until killed; log 'A label' after each commit, 'R label' after each refusal."""
    rng = np.random.default_rng(seed)
    ledger = DurableLedger.connect(url)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(ready, b"r")  # connected: the kill will land among charges
    i = 0
    while True:
        label = f"s{seed}-{i}"
        start = int(rng.integers(0, 80))
        users = range(start, start + int(rng.integers(1, 20))) if rng.random() < 0.7 else np.unique(rng.integers(0, 100, size=5))
        try:
            ledger.charge(PureDP(STRESS_EPS[int(rng.integers(3))]), users, label=label)
            os.write(fd, f"A {label}\n".encode())
        except BudgetExceeded:
            os.write(fd, f"R {label}\n".encode())
        i += 1


@pytest.mark.parametrize("store, kills, window", [("sqlite", 240, 0.04), ("postgresql", 40, 0.15)])
def test_sigkill_at_random_points_leaves_whole_charges(store, kills, window, tmp_path, request):
    """Rounds of 4 forked processes charging one ledger (100 users), all killed with SIGKILL a
    random 0-40 ms (seeded; 0-150 ms on PostgreSQL, whose charges are slower) after every one has
    connected, 240 kills on SQLite (synchronous=full) and 40 on PostgreSQL. After every
    round the ledger opens, verifies (the stored segments equal those recomputed from the charge
    rows, so a half-applied charge would show), holds every charge a process logged as committed
    and none it logged as refused, and nothing but attempted charges; the budget bounds every
    user. The wrong variants verify rejects are in test_verify_finds_tampering."""
    url = f"sqlite:///{tmp_path}/crash.db" if store == "sqlite" else request.getfixturevalue("postgres").url()
    Ledger.open(url, PureDP(1.0), create=True).close()
    rng = np.random.default_rng(2024)
    log = tmp_path / "log.txt"
    killed, seed = 0, 0
    while killed < kills:
        children = []
        ready_read, ready_write = os.pipe()
        for _ in range(4):
            seed += 1
            pid = os.fork()
            if pid == 0:  # the child: charge until killed
                try:
                    os.close(ready_read)
                    _crash_child(url, str(log), seed, ready_write)
                finally:
                    os._exit(1)
            children.append(pid)
        os.close(ready_write)
        for _ in range(4):  # every child has connected (or died: then read returns b"")
            os.read(ready_read, 1)
        os.close(ready_read)
        time.sleep(float(rng.uniform(0.0, window)))
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        for pid in children:
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            killed += 1
        ledger = Ledger.open(url)
        report = ledger.verify()
        assert report.ok, report.disagreements
        stored = {c.label for c in ledger.charges}
        ledger.close()
        entries = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
        assert {label for kind, label in entries if kind == "A"} <= stored
        assert not {label for kind, label in entries if kind == "R"} & stored
        assert all(label.startswith("s") and int(label[1:].split("-")[0]) <= seed for label in stored)
    assert killed >= kills
    # the children did charge between kills (so kills landed among charges)
    assert len(stored) >= kills // 4
    print(f"{store}: {killed} kills, {len(stored)} charges stored, {len(entries)} logged outcomes")


def test_population_cursor_is_shared_and_fixed(new_url):
    """Two handles on one ledger hand out one round-robin sequence; another population is refused."""
    url = new_url()
    first, second = Ledger.open(url, PureDP(1.0), create=True), Ledger.open(url)
    assert [first.advance_cursor(10, 100), second.advance_cursor(5, 100), first.advance_cursor(1, 100)] == [0, 10, 15]
    with pytest.raises(ValueError, match="population"):
        second.advance_cursor(1, 200)
    assert first.summary()["population_cursor"] == 16 and first.spent() is None
    first.close()
    second.close()


def test_prepay_is_all_or_nothing_and_each_prepaid_charge_is_taken_once(tmp_path):
    """A round's charges in one transaction: a refusal of the last leaves the database byte-identical
    (the first two are not recorded either); accepted, each later matching charge finds its own
    record (no second charge); a charge that matches nothing prepaid is charged normally."""
    path = tmp_path / "l.db"
    ledger = Ledger.open(f"sqlite:///{path}", PureDP(1.0), create=True)
    ledger.charge(PureDP(0.5), range(0, 10), label="before")
    before = _dump(path)
    round_ = [(PureDP(0.3), range(20, 30), "b=1 arm=0"), (PureDP(0.3), range(30, 40), "b=1 arm=1"), (PureDP(0.6), range(5, 6), "b=1 arm=2")]
    with pytest.raises(BudgetExceeded, match="b=1 arm=2"):
        ledger.prepay(round_)
    assert _dump(path) == before and ledger._prepaid == []
    ledger.prepay(round_[:2])
    assert len(ledger.charges) == 3
    for g, users, label in round_[:2]:
        ledger.charge(g, users, label=label)
    assert len(ledger.charges) == 3 and ledger._prepaid == []
    ledger.charge(PureDP(0.3), range(20, 30), label="b=1 arm=0")  # not prepaid any more: a real charge
    assert len(ledger.charges) == 4 and ledger.spent() == PureDP(0.6)
    assert ledger.verify().ok
    ledger.close()


# ---- the edges: damaged, read-only and foreign files, bounded waits, lost connections ---------------


def _cli(args: list[str]):
    from click.testing import CliRunner

    from dpverify.cli import main

    started = time.monotonic()
    result = CliRunner().invoke(main, args)
    return result, time.monotonic() - started


def _file_bytes(path) -> bytes:
    return Path(path).read_bytes()


def test_a_damaged_page_is_refused_with_exit_2_and_nothing_appended(tmp_path):
    """1,000 random bytes (seeded) over an interior page of a cleanly closed ledger: `account
    charge`, `ledger verify` and `ledger show` each exit 2 with one line naming the damage and
    what to do, no traceback, and the file is byte-for-byte unchanged. The control: the same
    ledger before the damage charges fine."""
    path = tmp_path / "l.db"
    url = f"sqlite:///{path}"
    with Ledger.open(url, PureDP(100.0), create=True) as ledger:
        for i in range(300):  # enough segments and profiles for several interior pages
            ledger.charge(PureDP(0.01 * (1 + i % 7)), range(10 * i, 10 * i + 15), label=f"c{i}")
    ok, _ = _cli(["account", "charge", "--ledger", url, "--pure", "0.01", "--users", "0:5"])
    assert ok.exit_code == 0, ok.output
    pages = os.path.getsize(path) // 4096
    assert pages >= 6
    with open(path, "r+b") as handle:
        handle.seek(4096 * (pages // 2) + 512)
        handle.write(np.random.default_rng(22).bytes(1000))
    before = _file_bytes(path)
    for args in (["account", "charge", "--ledger", url, "--pure", "0.01", "--users", "0:5"], ["ledger", "verify", url], ["ledger", "show", url]):
        result, _ = _cli(args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output and "damaged" in result.output and "backup" in result.output, result.output
        assert _file_bytes(path) == before and not os.path.exists(f"{path}-wal") or os.path.getsize(f"{path}-wal") == 0


def test_a_bad_budget_field_is_refused_naming_the_table_and_field(new_url):
    """The header's budget replaced by text that is not JSON: exit 2 naming dpverify_meta and
    budget (not "Expecting value: line 1 column 1"), nothing written."""
    url = new_url()
    _charged_ledger(url)
    _execute(url, "UPDATE dpverify_meta SET value = 'not json' WHERE key = 'budget'")
    before = _contents(url)
    for args in (["account", "charge", "--ledger", url, "--pure", "0.01"], ["ledger", "show", url]):
        result, _ = _cli(args)
        assert result.exit_code == 2 and "table dpverify_meta, field budget" in result.output, result.output
        assert "Traceback" not in result.output and "Expecting value" not in result.output.split("(")[0]
    assert _contents(url) == before


def _as_nobody(function):
    """Run ``function`` in a forked child with uid/gid 65534 when we are root (root ignores file
    modes, so a read-only file is only read-only to another user); its return value comes back
    through a pipe. Not root: call it here."""
    if os.geteuid() != 0:
        return function()
    import pickle

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            os.environ["DPVERIFY_LEDGER_WITNESS"] = "off"
            payload = pickle.dumps(("ok", function()))
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            payload = pickle.dumps(("error", repr(error)))
        finally:
            with os.fdopen(write, "wb") as handle:
                handle.write(payload)
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        status, value = pickle.loads(handle.read())
    os.waitpid(pid, 0)
    assert status == "ok", value
    return value


def _read_only_media(tmp_path):
    """A cleanly closed ledger in a directory and file nobody may write (as on read-only media)."""
    import tempfile

    directory = tempfile.mkdtemp(prefix="dpverify-ro-")
    path = os.path.join(directory, "l.db")
    url = f"sqlite:///{path}"
    _charged_ledger(url)
    os.chmod(path, 0o444)
    os.chmod(directory, 0o555)
    return directory, path, url


def test_read_only_file_and_media_can_be_read_and_refuse_charges_with_exit_2(tmp_path):
    """A ledger whose file and directory are read-only to the user: `ledger show`, `verify` and
    `export` work (SQLite's immutable mode: mode=ro alone cannot create the WAL index there), and
    `account charge` exits 2 saying the file is read-only (not a traceback with exit 1, which a
    script would read as "no budget"); the file is unchanged."""
    directory, path, url = _read_only_media(tmp_path)
    try:
        before = _file_bytes(path)

        def attempt():
            results = {}
            for name, args in {"charge": ["account", "charge", "--ledger", url, "--pure", "0.01", "--users", "0:5"],
                               "show": ["ledger", "show", url, "--json"], "verify": ["ledger", "verify", url],
                               "export": ["ledger", "export", url]}.items():
                result, _ = _cli(args)
                results[name] = (result.exit_code, result.output)
            return results

        results = _as_nobody(attempt)
        code, output = results["charge"]
        assert code == 2 and "read-only" in output and "Traceback" not in output, output
        assert results["show"][0] == 0 and json.loads(results["show"][1])["charges"] == 10
        assert results["verify"][0] == 0 and "agrees" in results["verify"][1]
        assert results["export"][0] == 0 and len(json.loads(results["export"][1])["charges"]) == 10
        assert _file_bytes(path) == before and sorted(os.listdir(directory)) == ["l.db"]
    finally:
        os.chmod(directory, 0o755)


def test_nothing_is_written_to_a_database_that_is_not_a_ledger(tmp_path):
    """An application's SQLite database (rollback journal, one table) given to `account charge
    --create --budget`: refused with exit 2 naming its tables; the file is byte-for-byte the same,
    still in rollback-journal mode, with no dpverify table. A text file: refused, unchanged.
    The control: an empty new path is created."""
    app = tmp_path / "app.db"
    with _sqlite(app) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
        connection.execute("INSERT INTO orders (total) VALUES (9.5)")
    before = _file_bytes(app)
    result, _ = _cli(["account", "charge", "--ledger", f"sqlite:///{app}", "--create", "--budget", "pure:1", "--pure", "0.1"])
    assert result.exit_code == 2 and "orders" in result.output and "Traceback" not in result.output, result.output
    assert _file_bytes(app) == before
    with _sqlite(app) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["orders"]
    text = tmp_path / "notes.txt"
    text.write_text("not a database, " * 100)
    before = _file_bytes(text)
    result, _ = _cli(["account", "charge", "--ledger", f"sqlite:///{text}", "--create", "--budget", "pure:1", "--pure", "0.1"])
    assert result.exit_code == 2 and "Traceback" not in result.output and _file_bytes(text) == before, result.output
    result, _ = _cli(["account", "charge", "--ledger", f"sqlite:///{tmp_path}/new.db", "--create", "--budget", "pure:1", "--pure", "0.1"])
    assert result.exit_code == 0, result.output


def test_nothing_is_written_to_a_postgresql_database_with_other_tables(postgres):
    import psycopg

    url = postgres.url()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE TABLE orders (id SERIAL PRIMARY KEY)")
    with pytest.raises(AccountingError, match="orders"):
        Ledger.open(url, PureDP(1.0), create=True)
    with psycopg.connect(url, autocommit=True) as connection:
        tables = [r[0] for r in connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    assert tables == ["orders"]


def test_relative_and_one_slash_urls_are_refused_and_nothing_is_created(tmp_path, monkeypatch):
    """sqlite:///rel.db (relative: another directory, another ledger) and sqlite:/abs.db (was
    read as relative) are refused with exit 2 naming the absolute form; no file appears."""
    monkeypatch.chdir(tmp_path)
    for url in ("sqlite:///rel.db", f"sqlite:{tmp_path}/one.db", f"sqlite://{tmp_path}/two.db", "sqlite://localhost/x.db"):
        result, _ = _cli(["account", "charge", "--ledger", url, "--create", "--budget", "pure:1", "--pure", "0.1"])
        assert result.exit_code == 2 and "sqlite:////absolute/path/ledger.db" in result.output, (url, result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["witness"] or not any(p.suffix == ".db" for p in tmp_path.iterdir())


def test_a_held_sqlite_lock_gives_exit_2_within_the_lock_timeout(tmp_path):
    """Another connection holds the write lock (BEGIN IMMEDIATE, never committing): a charge with
    ?lock_timeout=1 exits 2 naming the lock and the option, nothing appended; hang guard 10 s.
    The control: once the lock is released the same charge goes through."""
    path = tmp_path / "l.db"
    _charged_ledger(f"sqlite:///{path}")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        before = _contents(f"sqlite:///{path}")
        result, elapsed = _cli(["account", "charge", "--ledger", f"sqlite:///{path}?lock_timeout=1", "--pure", "0.01", "--users", "0:5"])
        assert result.exit_code == 2 and "lock_timeout=1" in result.output and "Traceback" not in result.output, result.output
        assert 1 <= elapsed < 10
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _contents(f"sqlite:///{path}") == before
    result, _ = _cli(["account", "charge", "--ledger", f"sqlite:///{path}?lock_timeout=1", "--pure", "0.01", "--users", "0:5"])
    assert result.exit_code == 0, result.output


def test_a_held_postgresql_lock_gives_exit_2_within_the_lock_timeout(postgres):
    """A session holding the ledger's lock (the state row, FOR UPDATE, in an open transaction):
    a charge with lock_timeout=1 exits 2 naming the lock; nothing appended; hang guard 10 s."""
    import psycopg

    url = postgres.url()
    _charged_ledger(url)
    holder = psycopg.connect(url)
    holder.execute("SELECT * FROM dpverify_state WHERE id = 1 FOR UPDATE")
    try:
        before = _contents(url)
        result, elapsed = _cli(["account", "charge", "--ledger", url + "&lock_timeout=1", "--pure", "0.01", "--users", "0:5"])
        assert result.exit_code == 2 and "lock_timeout=1" in result.output and "Traceback" not in result.output, result.output
        assert 1 <= elapsed < 10
    finally:
        holder.rollback()
        holder.close()
    assert _contents(url) == before


@pytest.fixture
def black_hole():
    """A TCP listener on 127.0.0.1 that accepts connections and never answers."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held = []

    def accept():
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for connection in held:
        connection.close()


def test_a_black_hole_postgresql_host_gives_exit_2_within_the_connect_timeout(black_hole, tmp_path):
    """`ledger show`, `account charge` and `run --ledger` against a host that accepts TCP and never
    answers: exit 2 naming connect_timeout, no traceback, each within 10x the configured 2 s."""
    url = f"postgresql://dpverify@127.0.0.1:{black_hole}/ledger?connect_timeout=2"
    commands = [["ledger", "show", url], ["account", "charge", "--ledger", url, "--pure", "0.1"],
                ["run", "--algorithm", "dist-dp-se", "--instance", "easy", "--eps", "1", "--horizon", "2000", "--seeds", "1",
                 "--population", "2048", "--max-returns", "2", "--ledger", url]]
    for args in commands:
        result, elapsed = _cli(args)
        assert result.exit_code == 2 and "connect_timeout=2" in result.output and "Traceback" not in result.output, (args, result.output)
        assert elapsed < 20, (args, elapsed)


def test_a_charge_is_recorded_once_whatever_the_retry(postgres, monkeypatch):
    """The connection breaks (the server terminates the backend) (a) after the commit went through
    and (b) before it: both times the ledger reconnects, looks the charge up by its id, and ends
    with it recorded exactly once, and no error. The wrong variant (a retry without the lookup)
    records (a) twice: the same harness sees it."""
    import psycopg

    url = postgres.url()
    Ledger.open(url, PureDP(10.0), create=True).close()
    ledger = Ledger.open(url)
    original = DurableLedger._charge_transaction

    def kill(ledger):
        with psycopg.connect(postgres.admin_url(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (ledger._store.connection.info.backend_pid,))

    def after_commit(self, entries):
        original(self, entries)
        kill(self)
        raise ConnectionLost("ledger", self.url, "an open connection (lost in the test, after the commit)")

    def before_commit(self, entries):
        kill(self)
        original(self, entries)

    for name, broken in (("after", after_commit), ("before", before_commit)):
        calls = iter([broken])
        monkeypatch.setattr(DurableLedger, "_charge_transaction", lambda self, e: next(calls, original)(self, e))
        ledger.charge(PureDP(0.1), range(0, 10), label=name)
        assert [c.label for c in ledger.charges].count(name) == 1, name
    assert ledger.verify().ok
    # the wrong variant: no lookup by charge id before the retry records the charge twice
    calls = iter([after_commit])
    monkeypatch.setattr(DurableLedger, "_charge_transaction", lambda self, e: next(calls, original)(self, e))
    monkeypatch.setattr(DurableLedger, "_recorded", lambda self, cid, floor: False)
    ledger.charge(PureDP(0.1), range(0, 10), label="twice")
    assert [c.label for c in ledger.charges].count("twice") == 2
    ledger.close()


#: schema 1 (before the chain), as dpverify wrote it
SCHEMA_1 = """
CREATE TABLE dpverify_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE dpverify_state (id INTEGER PRIMARY KEY, worst DOUBLE PRECISION, charges BIGINT NOT NULL, cursor BIGINT NOT NULL);
CREATE TABLE dpverify_guarantees (id INTEGER PRIMARY KEY, spec TEXT NOT NULL UNIQUE);
CREATE TABLE dpverify_profiles (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, spend DOUBLE PRECISION NOT NULL, releases BIGINT NOT NULL);
CREATE TABLE dpverify_charges (seq INTEGER PRIMARY KEY, label TEXT NOT NULL, guarantee BIGINT NOT NULL, participants TEXT, users BIGINT,
    spent_after DOUBLE PRECISION NOT NULL, recorded_at TEXT NOT NULL);
CREATE TABLE dpverify_segments (start BIGINT PRIMARY KEY, stop BIGINT NOT NULL, profile BIGINT NOT NULL);
"""


def _schema_1_copy(source, target) -> None:
    """The schema-1 ledger with the same charges, segments and profiles as ``source``."""
    with _sqlite(target) as connection:
        connection.executescript(SCHEMA_1)
        connection.execute("ATTACH DATABASE ? AS v2", (str(source),))
        connection.execute("INSERT INTO dpverify_meta SELECT key, value FROM v2.dpverify_meta WHERE key IN ('format', 'budget', 'name')")
        connection.execute("INSERT INTO dpverify_meta VALUES ('schema_version', '1')")
        connection.execute("INSERT INTO dpverify_state SELECT id, worst, charges, cursor FROM v2.dpverify_state")
        for table in ("dpverify_guarantees", "dpverify_profiles", "dpverify_segments"):
            connection.execute(f"INSERT INTO {table} SELECT * FROM v2.{table}")
        connection.execute("INSERT INTO dpverify_charges SELECT seq, label, guarantee, participants, users, spent_after, recorded_at "
                           "FROM v2.dpverify_charges")
        connection.execute("DETACH DATABASE v2")


def test_a_schema_1_ledger_is_upgraded_on_request_once_it_verifies(tmp_path):
    """A schema-1 ledger is refused by every open (no silent write), naming `ledger upgrade`;
    the upgrade adds the chain, after which it opens with no integrity problem, verifies, holds
    the same charges and takes new ones. A schema-1 ledger that does not verify (a profile's
    spend halved) is not upgraded: exit 2, the file unchanged."""
    _charged_ledger(f"sqlite:///{tmp_path}/v2.db")
    with Ledger.open(f"sqlite:///{tmp_path}/v2.db", read_only=True) as original:
        trail = original.to_json()
    _schema_1_copy(tmp_path / "v2.db", tmp_path / "v1.db")
    url = f"sqlite:///{tmp_path}/v1.db"
    before = _file_bytes(tmp_path / "v1.db")
    for read_only in (False, True):
        with pytest.raises(AccountingError, match="dpverify ledger upgrade"):
            Ledger.open(url, read_only=read_only)
    assert _file_bytes(tmp_path / "v1.db") == before
    shutil_copy = tmp_path / "v1-bad.db"
    shutil_copy.write_bytes(before)
    _execute(f"sqlite:///{shutil_copy}", "UPDATE dpverify_profiles SET spend = spend / 2")
    bad_before = _file_bytes(shutil_copy)
    refused, _ = _cli(["ledger", "upgrade", f"sqlite:///{shutil_copy}"])
    assert refused.exit_code == 2 and "verifies before it is upgraded" in refused.output, refused.output
    assert _file_bytes(shutil_copy) == bad_before
    upgraded, _ = _cli(["ledger", "upgrade", url])
    assert upgraded.exit_code == 0 and "schema 2" in upgraded.output, upgraded.output
    with Ledger.open(url) as ledger:
        assert ledger.integrity == () and ledger.verify().ok and ledger.to_json() == trail
        ledger.charge(PureDP(0.1), range(500, 510), label="after the upgrade")
    with Ledger.open(url, read_only=True) as ledger:
        assert ledger.verify().ok and len(ledger.charges) == 11


def test_the_statement_timeout_bounds_the_check_on_open(tmp_path):
    """A statement timeout far too short for the integrity check of a 3,000-charge ledger: `ledger
    verify` exits 2 naming statement_timeout and how to raise it (not a hang, not a traceback);
    the control with the default timeout verifies."""
    url = f"sqlite:///{tmp_path}/l.db?synchronous=normal"
    with Ledger.open(url, PureDP(100.0), create=True) as ledger:
        for block in range(30):
            ledger.charge_many([(PureDP(0.01), range(10 * i, 10 * i + 15), f"c{i}") for i in range(100 * block, 100 * block + 100)])
    result, elapsed = _cli(["ledger", "verify", url + "&statement_timeout=0.000001"])
    assert result.exit_code == 2 and "statement_timeout=1e-06" in result.output and "Traceback" not in result.output, result.output
    assert elapsed < 10
    assert _cli(["ledger", "verify", url])[0].exit_code == 0


def test_mirror_hashes_segments_lazily_with_the_eager_sum():
    """The verified copy (``_Mirror``) hashes a segment only when its sum is asked for; the sum
    must still be that of every held row, through adds, removes, rows added with known terms and
    a rolled-back transaction. Deterministic (seed 22: no false alarms). It rejects a copy that
    subtracts an unhashed row's term on removal, one that forgets rows added unhashed, and one
    whose rollback loses a hashed row's term (each makes some compared sum differ)."""
    from accounting._ledgers._durable import _Mirror
    from accounting._ledgers._ledger_chain import Chain

    chain = Chain(None)
    mirror = _Mirror(chain, 0)
    rng = np.random.default_rng(22)

    def eager() -> int:
        return sum(chain.segments([(s, *mirror.segments[s][:2]) for s in mirror.starts]))

    mirror.add_segments([(10 * i, 10 * i + 10, i % 3) for i in range(20)])
    assert mirror._unhashed and mirror.segment_sum == eager() and not mirror._unhashed
    for step in range(60):
        held = list(mirror.starts)
        old = sorted(rng.choice(held, size=min(3, len(held)), replace=False).tolist())
        new = [(int(s) + 1, int(s) + 5, step % 4) for s in old]
        terms = chain.segments(new) if step % 3 == 0 else None  # a writer passes the terms it computed
        rolled = step % 5 == 0
        if rolled:
            mirror.begin()
            before = sorted((s, *mirror.segments[s][:2]) for s in mirror.starts)
        mirror.replace(old, new, terms)
        if step % 2:
            assert mirror.segment_sum == eager()
        if rolled:
            mirror.end(committed=False)
            assert sorted((s, *mirror.segments[s][:2]) for s in mirror.starts) == before
            assert mirror.segment_sum == eager()
    assert mirror.segment_sum == eager()
    assert mirror.term_of((mirror.starts[0], *mirror.segments[mirror.starts[0]][:2])) == chain.segments(
        [(mirror.starts[0], *mirror.segments[mirror.starts[0]][:2])])[0]
    assert mirror.term_of((mirror.starts[0], -1, 0)) is None  # not the held row: no term
