"""A durable privacy ledger: :class:`Ledger`'s per-user accounting kept in SQLite or PostgreSQL.

``Ledger.open("sqlite:///path/ledger.db", budget)`` or ``Ledger.open("postgresql://...", budget)``
returns a :class:`DurableLedger`: the same charges, guarantees and exact values as the in-memory
ledger (both compose a user's charges through :func:`compose_canonical`), kept in a database so
that users who return across runs, processes and machines (the ICLR paper's App. I: a user's B
batches "can even span multiple learning processes") are charged against one budget.

How a user's spend is kept. The users form a *segment map*: disjoint [start, stop) id ranges,
each pointing at a *profile* (the multiset of guarantees that touched those users, with its
composed spend, computed once per distinct multiset). A charge on participants [a, b) reads only
the segments overlapping [a, b) (one indexed range query), splits the two at its ends, gives each
piece its profile plus the new guarantee, and checks every new profile's spend against the
budget: cost O(log S + pieces), independent of how many charges came before or how many users a
range holds. Users nobody charged have no segment (the empty profile). ``participants=None``
(every user) is the range [0, EVERYONE).

Atomic check-and-charge. Each charge is one transaction that first takes the ledger's write lock
(SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``SELECT ... FOR UPDATE`` on the single budget row), then
reads the affected segments, checks, and writes the charge row, the new segments and the worst
spend, and commits; a refusal rolls the transaction back, so it leaves no trace. Concurrent
charges are serialised by the lock (so two processes can never together overspend a user), and a
process killed mid-charge leaves either the whole charge or none of it (the database's atomic
commit). The privatizer charges before it releases, so a crash between the two wastes budget and
never leaks it. :meth:`DurableLedger.prepay` records several charges in one transaction (all or
none; a bandit run prepays each batch round's K arms before releasing any of them, so the round
costs one disk sync instead of K), and each later matching ``charge`` finds its own record.

Durability: SQLite in WAL mode with ``synchronous=FULL`` (every commit is fsynced before
``charge`` returns; ``?synchronous=normal`` in the URL trades the last commits on power loss, never
consistency, for speed); PostgreSQL with its default ``synchronous_commit=on``.

Schema version :data:`SCHEMA_VERSION` is stored in ``dpverify_meta``; opening a database written by
a newer schema is refused. :meth:`DurableLedger.verify` recomputes every user's spend from the raw
charges alone (a sweep over range ends, then the exact accountant on each distinct multiset) and
reports every disagreement with the stored segments, profiles and worst spend.
"""

from __future__ import annotations

import abc
import contextlib
import datetime as _dt
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np

from ._guarantees import ApproxDP, PureDP, ZCDP
from ._ledger import (
    Budget,
    Charge,
    Ledger,
    _compose_uncached,
    _fmt,
    _guarantee_from_dict,
    _guarantee_of,
    _trail_json,
    _normalise_participants,
    canonical_multiset,
    compose_canonical,
    guarantee_spec,
)
from ._validation import AccountingError, BudgetExceeded, check_positive_int

__all__ = ["DurableLedger", "EVERYONE", "SCHEMA_VERSION", "VerifyReport", "redacted"]

#: the schema this code writes and the newest it reads
SCHEMA_VERSION = 1
#: participants=None stands for the user ids [0, EVERYONE)
EVERYONE = 2**62
LEDGER_FORMAT = "dpverify-ledger/1"
_NO_TRANSACTION: dict = {}  # the pending-profile map outside a charge (never written to)

_TABLES = (
    "CREATE TABLE IF NOT EXISTS dpverify_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # the single row every charge locks; worst = the worst user's spend (NULL: nothing charged)
    "CREATE TABLE IF NOT EXISTS dpverify_state (id INTEGER PRIMARY KEY, worst DOUBLE PRECISION, "
    "charges BIGINT NOT NULL, cursor BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS dpverify_guarantees (id {serial} PRIMARY KEY, spec TEXT NOT NULL UNIQUE)",
    # key: "gid:count,gid:count" sorted by gid; spend: its composition in the budget's main parameter
    "CREATE TABLE IF NOT EXISTS dpverify_profiles (id {serial} PRIMARY KEY, key TEXT NOT NULL UNIQUE, "
    "spend DOUBLE PRECISION NOT NULL, releases BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS dpverify_charges (seq {serial} PRIMARY KEY, label TEXT NOT NULL, "
    "guarantee BIGINT NOT NULL, participants TEXT, users BIGINT, spent_after DOUBLE PRECISION NOT NULL, "
    "recorded_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS dpverify_segments (start BIGINT PRIMARY KEY, stop BIGINT NOT NULL, "
    "profile BIGINT NOT NULL)",
)


# ---- stores --------------------------------------------------------------------------------------


class _Store(abc.ABC):
    """A connection with the two transactions the ledger needs: write (exclusive) and read."""

    kind = "store"
    placeholder = "?"

    def __init__(self, url: str, read_only: bool) -> None:
        self.url = url
        self.read_only = read_only

    def _sql(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def all(self, sql: str, params: Sequence = ()) -> list[tuple]:
        return list(self._execute(self._sql(sql), params).fetchall())

    def one(self, sql: str, params: Sequence = ()) -> tuple | None:
        return self._execute(self._sql(sql), params).fetchone()

    def run(self, sql: str, params: Sequence = ()) -> None:
        self._execute(self._sql(sql), params)

    def run_many(self, sql: str, rows: Sequence[Sequence]) -> None:
        if rows:
            self._execute_many(self._sql(sql), rows)

    @abc.abstractmethod
    def table_exists(self, name: str) -> bool:
        """Whether the database has a table of this name (each engine asks its own catalogue)."""

    def close(self) -> None:
        self.connection.close()


class _SQLiteStore(_Store):
    kind = "sqlite"

    def __init__(self, url: str, path: str, read_only: bool, synchronous: str) -> None:
        import sqlite3

        super().__init__(url, read_only)
        if read_only and not os.path.exists(path):
            raise AccountingError("url", url, "an existing SQLite ledger (nothing at that path)")
        try:
            if read_only:
                self.connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=600)
            else:
                self.connection = sqlite3.connect(path, isolation_level=None, timeout=600)
        except sqlite3.Error as error:
            raise AccountingError("url", url, f"a SQLite file that can be opened ({error})") from None
        # concurrent writers wait for the lock (BEGIN IMMEDIATE) instead of failing
        self.connection.execute("PRAGMA busy_timeout = 600000")
        if not read_only:
            self.connection.execute("PRAGMA journal_mode = WAL")
        self.connection.execute(f"PRAGMA synchronous = {synchronous}")
        self.synchronous = synchronous

    def _execute(self, sql: str, params: Sequence):
        return self.connection.execute(sql, tuple(params))

    def _execute_many(self, sql: str, rows: Sequence[Sequence]) -> None:
        self.connection.executemany(sql, rows)

    @contextlib.contextmanager
    def creating(self) -> Iterator[None]:
        self.connection.execute("BEGIN IMMEDIATE")  # the write lock, before anything is read
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    @contextlib.contextmanager
    def write(self, durable: bool = True) -> Iterator[float | None]:
        """A write transaction holding the ledger's lock; yields the worst spend (None: none yet).
        ``durable=False``: commit without syncing (WAL: a later synced commit covers it)."""
        if not durable:
            self.connection.execute("PRAGMA synchronous = NORMAL")
        try:
            with self.creating():
                yield self.one("SELECT worst FROM dpverify_state WHERE id = 1")[0]
        finally:
            if not durable:
                self.connection.execute(f"PRAGMA synchronous = {self.synchronous}")

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        self.connection.execute("BEGIN")  # one snapshot for every read inside (WAL)
        try:
            yield
        finally:
            self.connection.execute("ROLLBACK")

    def table_exists(self, name: str) -> bool:
        return self.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)) is not None

    def create(self) -> None:
        for statement in _TABLES:
            self.run(statement.format(serial="INTEGER"))

    def describe(self) -> str:
        return f"SQLite, WAL, synchronous={self.synchronous}"


class _PostgresStore(_Store):
    kind = "postgresql"
    placeholder = "%s"

    def __init__(self, url: str, read_only: bool) -> None:
        try:
            import psycopg
        except ImportError as error:  # pragma: no cover - the extra is installed with [test]
            raise AccountingError("url", url, "a sqlite:/// URL, or install the 'postgres' extra (psycopg 3)") from error
        super().__init__(url, read_only)
        self._psycopg = psycopg
        try:
            self.connection = psycopg.connect(url, autocommit=True)
        except psycopg.Error as error:
            raise AccountingError("url", redacted(url), f"a reachable PostgreSQL server ({str(error).strip()})") from None
        if read_only:
            self.connection.execute("SET default_transaction_read_only = on")

    def _execute(self, sql: str, params: Sequence):
        return self.connection.execute(sql, tuple(params), prepare=True)

    def _execute_many(self, sql: str, rows: Sequence[Sequence]) -> None:
        with self.connection.cursor() as cursor:
            cursor.executemany(sql, [tuple(r) for r in rows])

    @contextlib.contextmanager
    def write(self, durable: bool = True) -> Iterator[float | None]:
        """A write transaction holding the ledger's lock; yields the worst spend (None: none yet).
        ``durable=False``: commit without waiting for the WAL flush (synchronous_commit off)."""
        # pipeline mode: writes are sent without waiting for each reply (reads still wait), so
        # the lock is held for fewer round trips
        with self.connection.pipeline(), self.connection.transaction():
            # the row lock on the budget serialises every charge (READ COMMITTED: each statement
            # after it sees every commit made before the lock was granted)
            worst = self.one("SELECT worst FROM dpverify_state WHERE id = 1 FOR UPDATE")[0]
            if not durable:
                self.run("SET LOCAL synchronous_commit = off")
            yield worst

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        self.connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            self.connection.execute("ROLLBACK")

    @contextlib.contextmanager
    def creating(self) -> Iterator[None]:
        with self.connection.transaction():
            self.run("SELECT pg_advisory_xact_lock(7466846)")  # two processes creating at once
            yield

    def table_exists(self, name: str) -> bool:
        return self.one("SELECT to_regclass(?)", (name,))[0] is not None

    def create(self) -> None:
        for statement in _TABLES:
            self.run(statement.format(serial="BIGINT GENERATED BY DEFAULT AS IDENTITY"))

    def describe(self) -> str:
        return "PostgreSQL, synchronous_commit=" + str(self.one("SHOW synchronous_commit")[0])


def redacted(url: str) -> str:
    """The URL with any password replaced by ***, for messages, summaries and JSON results."""
    try:
        parts = urlsplit(url)
    except (TypeError, ValueError):
        return str(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _connect(url: str, read_only: bool) -> _Store:
    if not isinstance(url, str):
        raise AccountingError("url", url, "a ledger URL: sqlite:///path/ledger.db or postgresql://...")
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        if parts.netloc not in ("", "localhost") or not path or path == "/":
            raise AccountingError("url", url, "sqlite:///relative/path.db or sqlite:////absolute/path.db")
        path = path[1:]  # sqlite:///a.db -> a.db (relative), sqlite:////abs/a.db -> /abs/a.db
        options = parse_qs(parts.query)
        synchronous = options.get("synchronous", ["full"])[0].upper()
        if synchronous not in ("FULL", "NORMAL", "EXTRA"):
            raise AccountingError("synchronous", synchronous.lower(), "'full' (default), 'extra' or 'normal'")
        return _SQLiteStore(url, path, read_only, synchronous)
    if parts.scheme in ("postgresql", "postgres"):
        return _PostgresStore(url, read_only)
    raise AccountingError("url", url, "a ledger URL: sqlite:///path/ledger.db or postgresql://user@host/dbname")


# ---- the ledger ----------------------------------------------------------------------------------


def _runs(participants: Any) -> list[tuple[int, int]]:
    """Normalised participants as sorted disjoint [start, stop) runs (None: every user)."""
    if participants is None:
        return [(0, EVERYONE)]
    if isinstance(participants, range):
        if participants.stop > EVERYONE:
            raise AccountingError("participants", participants, f"user ids below {EVERYONE}")
        return [(participants.start, participants.stop)] if len(participants) else []
    ids = participants
    if ids[-1] >= EVERYONE:
        raise AccountingError("participants", f"id {int(ids[-1])}", f"user ids below {EVERYONE}")
    breaks = np.flatnonzero(np.diff(ids) != 1) + 1
    starts = ids[np.concatenate(([0], breaks))]
    stops = ids[np.concatenate((breaks - 1, [ids.size - 1]))] + 1
    return list(zip(starts.tolist(), stops.tolist()))


def _stored_participants(participants: Any) -> Any:
    """Participants as stored: null (everyone), {"range": [a, b]}, or an id array as its runs
    {"runs": [[a, b], ...]} (a run's wrapped-around batch is two runs, not millions of ids)."""
    if participants is None:
        return None
    if isinstance(participants, range):
        return {"range": [participants.start, participants.stop]}
    return {"runs": [list(r) for r in _runs(participants)]}


def _runs_of_stored(stored: Any) -> list[tuple[int, int]]:
    if stored is None:
        return [(0, EVERYONE)]
    if "range" in stored:
        return [tuple(stored["range"])]
    return [tuple(r) for r in stored["runs"]]


def _participants_of(stored: Any) -> Any:
    """The participants a stored row describes (None, a range, or the sorted id array)."""
    if stored is None:
        return None
    if "range" in stored:
        return range(*stored["range"])
    return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in stored["runs"]])


def _same_participants(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, range) or isinstance(b, range):
        return isinstance(a, range) and isinstance(b, range) and a == b
    return a is b or (len(a) == len(b) and bool(np.array_equal(a, b)))


def _key_of(multiset: dict[int, int]) -> str:
    return ",".join(f"{g}:{n}" for g, n in sorted(multiset.items()))


def _multiset_of(key: str) -> dict[int, int]:
    if not key:
        return {}
    return {int(g): int(n) for g, n in (item.split(":") for item in key.split(","))}


def _main_parameter(budget: Budget) -> float:
    return budget.rho if isinstance(budget, ZCDP) else budget.epsilon


@dataclass(frozen=True)
class VerifyReport:
    """What :meth:`DurableLedger.verify` found: ``ok`` iff ``disagreements`` is empty."""

    url: str
    budget: Any
    charges: int
    segments: int
    profiles: int
    worst: float | None
    disagreements: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def as_dict(self) -> dict:
        return {
            "url": self.url,
            "ok": self.ok,
            "budget": json.loads(guarantee_spec(self.budget)),
            "charges": self.charges,
            "segments": self.segments,
            "profiles": self.profiles,
            "worst_recomputed": self.worst,
            "disagreements": list(self.disagreements),
        }


class DurableLedger(Ledger):
    """A :class:`Ledger` kept in a database; open it with :meth:`Ledger.open`.

    Every public method reads the database, so several processes (or machines, with PostgreSQL)
    sharing one ledger see each other's charges; :meth:`charge` is one atomic check-and-charge.
    """

    def __init__(self, store: _Store, budget: Budget, name: str) -> None:
        super().__init__(budget, name=name)
        self._store = store
        self.url = redacted(store.url)  # what messages and summaries show (never a password)
        self._limit = _main_parameter(budget)
        # committed rows never change, so these caches stay valid across other processes' charges
        self._gid_of_spec: dict[str, int] = {}
        self._guarantee_of_gid: dict[int, Any] = {}
        self._profile_of_pid: dict[int, tuple[str, float]] = {}
        self._pid_of_key: dict[str, tuple[int, float]] = {}
        self._spend_of_key: dict[str, float] = {}  # pure values: safe to keep from a refused charge
        # rows inserted by the transaction under way (never cached: a rollback frees their ids),
        # and profile keys found absent under the lock
        self._pending_gids: dict[int, tuple[str, Any]] = {}
        self._pending_pids: dict[int, tuple[str, float]] = {}
        self._pending_keys: dict[str, tuple[int, float]] = _NO_TRANSACTION
        self._absent_keys: set[str] = set()
        self._prepaid: list[tuple[Any, Any, str]] = []  # see prepay

    # ---- opening --------------------------------------------------------------------------------

    @classmethod
    def connect(cls, url: str, budget: Budget | None = None, *, name: str = "", read_only: bool = False) -> "DurableLedger":
        if budget is not None and not isinstance(budget, (PureDP, ZCDP, ApproxDP)):
            raise AccountingError("budget", budget, "a PureDP, ZCDP or ApproxDP budget")
        store = _connect(url, read_only)
        try:
            stored = cls._read_header(store)
            if stored is None:
                if read_only:
                    raise AccountingError("url", url, "an existing dpverify ledger (this database holds none)")
                if budget is None:
                    raise AccountingError("budget", None, f"a budget to create the new ledger at {url}")
                stored = cls._create(store, budget, name)
            version, stored_budget, stored_name = stored
            if version > SCHEMA_VERSION:
                raise AccountingError(
                    "schema_version", version, f"<= {SCHEMA_VERSION}",
                    "this ledger was written by a newer dpverify; upgrade dpverify to open it",
                )
            if budget is not None and budget != stored_budget:
                raise AccountingError("budget", budget, f"the ledger's own budget {stored_budget} (fixed when the ledger at {url} was created)")
            return cls(store, stored_budget, stored_name)
        except BaseException:
            store.close()
            raise

    @staticmethod
    def _read_header(store: _Store) -> tuple[int, Budget, str] | None:
        if not store.table_exists("dpverify_meta"):
            return None
        meta = dict(store.all("SELECT key, value FROM dpverify_meta"))
        if "schema_version" not in meta:
            return None
        version = int(meta["schema_version"])
        if version > SCHEMA_VERSION:
            return version, None, meta.get("name", "")  # refused by the caller before anything else is read
        return version, _guarantee_from_dict(json.loads(meta["budget"])), meta.get("name", "")

    @staticmethod
    def _create(store: _Store, budget: Budget, name: str) -> tuple[int, Budget, str]:
        with store.creating():
            store.create()
            meta = dict(store.all("SELECT key, value FROM dpverify_meta"))
            if "schema_version" not in meta:  # nobody created it while we waited for the lock
                store.run_many(
                    "INSERT INTO dpverify_meta (key, value) VALUES (?, ?)",
                    [("schema_version", str(SCHEMA_VERSION)), ("format", LEDGER_FORMAT), ("budget", guarantee_spec(budget)), ("name", name)],
                )
                store.run("INSERT INTO dpverify_state (id, worst, charges, cursor) VALUES (1, NULL, 0, 0)")
                meta = {"schema_version": str(SCHEMA_VERSION), "budget": guarantee_spec(budget), "name": name}
        return int(meta["schema_version"]), _guarantee_from_dict(json.loads(meta["budget"])), meta.get("name", "")

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> "DurableLedger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def store(self) -> str:
        """Which database and durability settings."""
        return self._store.describe()

    # ---- charging -------------------------------------------------------------------------------

    def charge(self, guarantee: Any, participants: Any = None, *, label: str = "") -> None:
        """Check every affected user's prospective spend and record the charge, in one transaction;
        raise BudgetExceeded (the database unchanged) if any user would go over the budget.

        A charge equal (guarantee, participants, label) to the next one :meth:`prepay` recorded is
        already in the database: it is taken off the prepaid list instead of being charged twice."""
        if self._prepaid:
            g, p, l = self._prepaid[0]
            if l == label and (g is guarantee or g == guarantee) and _same_participants(p, participants):
                self._prepaid.pop(0)
                return
        self.charge_many([(guarantee, participants, label)])

    def prepay(self, items: Sequence[tuple[Any, Any, str]]) -> None:
        """Charge ``items`` (guarantee, participants, label) now, all in one transaction, and let the
        matching :meth:`charge` calls that follow (in order) find them already recorded.

        What a batch round uses: the K arms' charges of one round are synced to disk once, before
        any of the round's releases (charge before release still holds: each release's charge is
        durable before it). Unused prepaid charges are budget spent, never budget leaked."""
        self.charge_many(items)
        self._prepaid.extend(items)

    def charge_many(self, items: Sequence[tuple[Any, Any, str]]) -> None:
        """Record every charge in ``items`` (guarantee, participants, label), in order, in one
        transaction, or none of them: BudgetExceeded if any would take a user over the budget."""
        self._check_writable()
        entries = []
        for guarantee, participants, label in items:
            entry = Charge(_guarantee_of(guarantee), _normalise_participants(participants), label)
            self._check_known(entry.guarantee)
            # guarantee_spec refuses a free-form RDP curve before any I/O
            entries.append((entry, guarantee_spec(entry.guarantee), _runs(entry.participants)))
        self._begin_pending()
        committed = False
        try:
            with self._store.write() as worst:
                for entry, spec, runs in entries:
                    gid = self._gid(spec)
                    prospective = -math.inf
                    # runs are disjoint: each is planned after the previous one is written (a write
                    # may merge segments the next run reads); a refusal rolls all of it back
                    for a, b in runs:
                        pieces, spends, rows = self._plan(a, b, gid)
                        prospective = max([prospective, *spends])
                        if prospective > self._limit:
                            break
                        self._write_pieces(pieces, rows)
                    if prospective > self._limit:
                        raise BudgetExceeded(
                            f"charge {entry.label or spec} would raise a user's spend to {prospective:.6g} against a budget of "
                            f"{_fmt(self._budget)}; the worst user's spend is {_fmt(None if worst is None else self._wrap(worst))}; "
                            "the ledger is unchanged"
                        )
                    worst = self._write_charge(entry, entry.label, gid, prospective, worst)
            committed = True
        finally:
            self._end_pending(committed)

    def _begin_pending(self) -> None:
        self._pending_gids, self._pending_pids, self._pending_keys, self._absent_keys = {}, {}, {}, set()

    def _end_pending(self, committed: bool) -> None:
        """After the transaction: a commit makes the new rows' ids everyone's (cache them); a
        rollback frees them (forget them)."""
        if committed:
            for gid, (spec, g) in self._pending_gids.items():
                self._gid_of_spec[spec] = gid
                self._guarantee_of_gid[gid] = g
            for key, (pid, spend) in self._pending_keys.items():
                self._pid_of_key[key] = (pid, spend)
                self._profile_of_pid[pid] = (key, spend)
        self._pending_gids, self._pending_pids, self._pending_keys = {}, {}, _NO_TRANSACTION
        self._absent_keys = set()

    def _write_charge(self, entry: Charge, label: str, gid: int, prospective: float, worst: float | None) -> float:
        """The charge row and the new worst spend (inside the charge's transaction)."""
        after = prospective if worst is None else max(worst, prospective)
        count = None if entry.participants is None else len(entry.participants)
        self._store.run(
            "INSERT INTO dpverify_charges (label, guarantee, participants, users, spent_after, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
            (label, gid, json.dumps(_stored_participants(entry.participants)), count, after, _now()),
        )
        self._store.run("UPDATE dpverify_state SET worst = ?, charges = charges + 1 WHERE id = 1", (after,))
        return after

    def can_afford(self, guarantee: Any, participants: Any = None) -> bool:
        """Would this charge fit now? (Records nothing; another process may charge in between.)"""
        entry = Charge(_guarantee_of(guarantee), _normalise_participants(participants))
        self._check_known(entry.guarantee)
        spec = guarantee_spec(entry.guarantee)
        with self._store.read():
            row = self._store.one("SELECT id FROM dpverify_guarantees WHERE spec = ?", (spec,))
            gid = row[0] if row is not None else -1  # an unseen guarantee: a temporary id
            if gid == -1:
                self._guarantee_of_gid[-1] = entry.guarantee
            try:
                spends = [s for a, b in _runs(entry.participants) for s in self._plan(a, b, gid)[1]]
            finally:
                self._guarantee_of_gid.pop(-1, None)
                for key in [k for k in self._spend_of_key if "-1:" in k]:
                    del self._spend_of_key[key]
        return not spends or max(spends) <= self._limit

    def advance_cursor(self, n: int, population: int) -> int:
        """Claim the next ``n`` places of a round-robin over ``population`` users; return the first.

        The position is stored in the ledger, so successive runs (and concurrent processes) sharing
        the ledger hand out users in one sequence and spread the budget evenly. It is committed
        without waiting for the disk (the next charge's sync covers it): losing it to a power cut
        only hands the same users out again, and their charges still guard their budget."""
        self._check_writable()
        check_positive_int("n", n)
        check_positive_int("population", population)
        with self._store.write(durable=False):
            row = self._store.one("SELECT value FROM dpverify_meta WHERE key = 'population'")
            if row is None:
                self._store.run("INSERT INTO dpverify_meta (key, value) VALUES ('population', ?)", (str(population),))
            elif int(row[0]) != population:
                raise AccountingError("population", population, f"the ledger's population {row[0]} (fixed by its first run)")
            start = self._store.one("SELECT cursor FROM dpverify_state WHERE id = 1")[0]
            self._store.run("UPDATE dpverify_state SET cursor = ? WHERE id = 1", (start + n,))
        return int(start)

    def _check_writable(self) -> None:
        if self._store.read_only:
            raise AccountingError("ledger", self.url, "a ledger opened for writing (this one was opened read-only)")

    # ---- the segment map ----------------------------------------------------------------------

    def _gid(self, spec: str) -> int:
        gid = self._gid_of_spec.get(spec)
        if gid is not None:
            return gid
        for pending, (pending_spec, _) in self._pending_gids.items():
            if pending_spec == spec:
                return pending
        row = self._store.one("SELECT id FROM dpverify_guarantees WHERE spec = ?", (spec,))
        if row is not None:
            self._gid_of_spec[spec] = row[0]
            return row[0]
        gid = self._store.one("INSERT INTO dpverify_guarantees (spec) VALUES (?) RETURNING id", (spec,))[0]
        # uncommitted: its id may be reused after a rollback, so it is cached only once committed
        self._pending_gids[gid] = (spec, _guarantee_from_dict(json.loads(spec)))
        return gid

    def _guarantee(self, gid: int) -> Any:
        g = self._guarantee_of_gid.get(gid)
        if g is None and gid in self._pending_gids:
            return self._pending_gids[gid][1]
        if g is None:
            spec = self._store.one("SELECT spec FROM dpverify_guarantees WHERE id = ?", (gid,))[0]
            g = self._guarantee_of_gid[gid] = _guarantee_from_dict(json.loads(spec))
        return g

    def _profile(self, pid: int) -> tuple[str, float]:
        known = self._profile_of_pid.get(pid) or self._pending_pids.get(pid)
        if known is None:
            key, spend = self._store.one("SELECT key, spend FROM dpverify_profiles WHERE id = ?", (pid,))
            known = self._profile_of_pid[pid] = (key, spend)
            self._pid_of_key[key] = (pid, spend)
        return known

    def _plan(self, a: int, b: int, gid: int) -> tuple[list[tuple[int, int, str, int | None]], list[float], list[tuple]]:
        """The pieces that replace the segments overlapping [a, b) once ``gid`` touches [a, b):
        (start, stop, profile key, old segment start or None); the new profiles' spends; and the
        segments read (those overlapping plus their neighbours, for merging)."""
        # one indexed query: the two segments starting at or before a (the one holding a and its
        # left neighbour), those starting in (a, b], and the first one after b
        rows = sorted(self._store.all(
            "SELECT start, stop, profile FROM (SELECT start, stop, profile FROM dpverify_segments WHERE start <= ? "
            "ORDER BY start DESC LIMIT 2) AS l UNION ALL SELECT start, stop, profile FROM dpverify_segments "
            "WHERE start > ? AND start <= ? UNION ALL SELECT start, stop, profile FROM (SELECT start, stop, profile "
            "FROM dpverify_segments WHERE start > ? ORDER BY start LIMIT 1) AS r",
            (a, a, b, b),
        ))
        pieces: list[tuple[int, int, str, int | None]] = []
        touched: list[str] = []

        def plus(key: str) -> str:
            multiset = _multiset_of(key)
            multiset[gid] = multiset.get(gid, 0) + 1
            new = _key_of(multiset)
            touched.append(new)
            return new

        position = a
        for start, stop, pid in rows:
            if stop <= a or start >= b:
                continue
            key = self._profile(pid)[0]
            if start < a:
                pieces.append((start, a, key, start))
            if start > position:
                pieces.append((position, start, plus(""), None))
            inner_stop = min(stop, b)
            pieces.append((max(start, a), inner_stop, plus(key), start))
            if stop > b:
                pieces.append((b, stop, key, start))
            position = inner_stop
        if position < b:
            pieces.append((position, b, plus(""), None))
        return pieces, [self._profile_spend(k) for k in dict.fromkeys(touched)], rows

    def _stored_profile(self, key: str) -> tuple[int, float] | None:
        """(id, spend) of a profile already in the database (committed, or written by this
        transaction), or None."""
        known = self._pid_of_key.get(key) or self._pending_keys.get(key)
        if known is not None or key in self._absent_keys:
            return known
        row = self._store.one("SELECT id, spend FROM dpverify_profiles WHERE key = ?", (key,))
        if row is None:
            if self._pending_keys is not _NO_TRANSACTION:  # under the lock nobody else can add it
                self._absent_keys.add(key)
            return None
        self._pid_of_key[key] = (row[0], row[1])  # not ours, so committed by someone
        self._profile_of_pid[row[0]] = (key, row[1])
        return row[0], row[1]

    def _profile_spend(self, key: str) -> float:
        """The composed spend of a profile key: the stored one if any process stored it, else computed."""
        stored = self._stored_profile(key)
        if stored is not None:
            return stored[1]
        spend = self._spend_of_key.get(key)
        if spend is None:
            spend = compose_canonical(self._budget, [(self._guarantee(g), n) for g, n in _multiset_of(key).items()])
            self._spend_of_key[key] = spend
        return spend

    def _pid(self, key: str) -> int:
        stored = self._stored_profile(key)
        if stored is not None:
            return stored[0]
        spend = self._profile_spend(key)
        releases = sum(_multiset_of(key).values())
        pid = self._store.one("INSERT INTO dpverify_profiles (key, spend, releases) VALUES (?, ?, ?) RETURNING id", (key, spend, releases))[0]
        self._pending_keys[key] = (pid, spend)
        self._pending_pids[pid] = (key, spend)
        self._absent_keys.discard(key)
        return pid

    def _write_pieces(self, pieces: list[tuple[int, int, str, int | None]], rows: list[tuple]) -> None:
        if not pieces:
            return
        old = sorted({p[3] for p in pieces if p[3] is not None})
        segments = [[start, stop, self._pid(key)] for start, stop, key, _ in pieces]
        # merge with the untouched neighbours when they carry the same profile (round-robin batches
        # of one guarantee then stay a handful of segments)
        lo, hi = segments[0][0], segments[-1][1]
        for start, stop, pid in rows:
            if stop == lo and pid == segments[0][2]:
                segments[0][0] = start
                old.append(start)
            elif start == hi and pid == segments[-1][2]:
                segments[-1][1] = stop
                old.append(start)
        merged: list[list[int]] = []
        for segment in segments:
            if merged and merged[-1][1] == segment[0] and merged[-1][2] == segment[2]:
                merged[-1][1] = segment[1]
            else:
                merged.append(segment)
        self._store.run_many("DELETE FROM dpverify_segments WHERE start = ?", [(s,) for s in old])
        self._store.run_many("INSERT INTO dpverify_segments (start, stop, profile) VALUES (?, ?, ?)", [tuple(m) for m in merged])

    # ---- reading --------------------------------------------------------------------------------

    def _state(self) -> tuple[float | None, int, int]:
        return self._store.one("SELECT worst, charges, cursor FROM dpverify_state WHERE id = 1")

    def spent(self) -> Budget | None:
        worst = self._state()[0]
        return None if worst is None else self._wrap(worst)

    def remaining(self) -> float:
        self._worst = self._state()[0]
        return super().remaining()

    @property
    def charges(self) -> tuple[Charge, ...]:
        return tuple(c for c, _ in self.history())

    def history(self, last: int | None = None) -> list[tuple[Charge, dict]]:
        """The charges in order (the last ``last`` of them), each with its row: seq, users, spent_after, recorded_at."""
        sql = "SELECT seq, label, guarantee, participants, users, spent_after, recorded_at FROM dpverify_charges"
        with self._store.read():
            if last is not None:
                rows = self._store.all(sql + " ORDER BY seq DESC LIMIT ?", (int(last),))[::-1]
            else:
                rows = self._store.all(sql + " ORDER BY seq")
            out = []
            for seq, label, gid, participants, users, after, at in rows:
                stored = json.loads(participants)
                charge = Charge(self._guarantee(gid), _participants_of(stored), label)
                out.append((charge, {"seq": seq, "users": users, "participants": stored, "spent_after": after, "recorded_at": at}))
        return out

    def max_charges_per_user(self) -> int:
        row = self._store.one("SELECT MAX(p.releases) FROM dpverify_segments s JOIN dpverify_profiles p ON p.id = s.profile")
        return int(row[0] or 0)

    def users_near_limit(self, fraction: float) -> int:
        """How many users have spent at least ``fraction`` of the budget (every user for a charge on everyone)."""
        row = self._store.one(
            "SELECT SUM(s.stop - s.start) FROM dpverify_segments s JOIN dpverify_profiles p ON p.id = s.profile WHERE p.spend >= ?",
            (fraction * self._limit,),
        )
        return int(row[0] or 0)

    def summary(self, *, near: float = 0.9, last: int | None = 20) -> dict:
        """Budget, worst user's spend, users near the limit, and the last charges (for ``dpverify ledger show``)."""
        worst, count, cursor = self._state()
        population = self._store.one("SELECT value FROM dpverify_meta WHERE key = 'population'")
        return {
            "url": self.url,
            "store": self.store,
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "budget": json.loads(guarantee_spec(self._budget)),
            "worst_user_spend": worst,
            "remaining": self.remaining(),
            "charges": count,
            "near_fraction": near,
            "users_near_limit": self.users_near_limit(near),
            "max_charges_per_user": self.max_charges_per_user(),
            "population": None if population is None else int(population[0]),
            "population_cursor": cursor,
            "history": [
                {**row, "label": c.label, "guarantee": json.loads(guarantee_spec(c.guarantee))}
                for c, row in self.history(last)
            ],
        }

    def to_json(self) -> str:
        """The JSON trail, byte for byte what the in-memory ledger with the same charges writes."""
        return _trail_json(self.name, self._budget, self.charges, self.spent())

    def __repr__(self) -> str:
        return f"DurableLedger({self.url!r}, budget={self._budget!s}, spent={_fmt(self.spent())})"

    # ---- verification -----------------------------------------------------------------------------

    def verify(self) -> VerifyReport:
        """Recompute every user's spend from the raw charges with the exact accountant (read-only).

        The charges' participants are swept as range ends into elementary id ranges, each with the
        multiset of guarantees covering it; every distinct multiset is composed afresh (not from
        the stored profiles); then the stored segment map, profiles, worst spend and charge count
        are compared with that. Each disagreement is reported as one line."""
        problems: list[str] = []
        with self._store.read():
            specs = dict(self._store.all("SELECT id, spec FROM dpverify_guarantees"))
            charges = self._store.all("SELECT seq, guarantee, participants FROM dpverify_charges ORDER BY seq")
            segments = self._store.all("SELECT start, stop, profile FROM dpverify_segments ORDER BY start")
            profiles = {pid: (key, spend) for pid, key, spend in self._store.all("SELECT id, key, spend FROM dpverify_profiles")}
            worst_stored, count_stored, _ = self._state()
        guarantees: dict[int, Any] = {}
        for gid, spec in specs.items():
            try:
                guarantees[gid] = _guarantee_from_dict(json.loads(spec))
                self._check_compatible(guarantees[gid])
            except (ValueError, KeyError, TypeError) as error:
                problems.append(f"guarantee {gid} ({spec}) unreadable or incompatible with the budget: {error}")
        # the sweep: +gid at each run's start, -gid at its stop
        events: dict[int, dict[int, int]] = {}
        for seq, gid, participants in charges:
            if gid not in guarantees:
                problems.append(f"charge {seq} names guarantee {gid}, which is missing or unreadable")
                continue
            for a, b in _runs_of_stored(json.loads(participants)):
                events.setdefault(a, {}).setdefault(gid, 0)
                events[a][gid] += 1
                events.setdefault(b, {}).setdefault(gid, 0)
                events[b][gid] -= 1
        expected: list[list] = []  # [start, stop, key]
        current: dict[int, int] = {}
        positions = sorted(events)
        for position, following in zip(positions, positions[1:] + [None]):
            for gid, change in events[position].items():
                current[gid] = current.get(gid, 0) + change
                if current[gid] == 0:
                    del current[gid]
            if following is None or not current:
                continue
            key = _key_of(current)
            if expected and expected[-1][1] == position and expected[-1][2] == key:
                expected[-1][1] = following
            else:
                expected.append([position, following, key])
        recomputed: dict[str, float] = {}
        for _, _, key in expected:
            if key not in recomputed:
                pairs = canonical_multiset([(guarantees[g], n) for g, n in _multiset_of(key).items()])
                recomputed[key] = _compose_uncached(self._budget, pairs)
        stored: list[list] = []
        for start, stop, pid in segments:
            if pid not in profiles:
                problems.append(f"segment [{start}, {stop}) points at missing profile {pid}")
                continue
            key = profiles[pid][0]
            if stored and stored[-1][1] > start:
                problems.append(f"segments overlap at user {start}")
            if stored and stored[-1][1] == start and stored[-1][2] == key:
                stored[-1][1] = stop
            else:
                stored.append([start, stop, key])
        if stored != expected:
            problems.extend(_first_differences(stored, expected))
        for pid, (key, spend) in profiles.items():
            if key in recomputed and recomputed[key] != spend:
                problems.append(f"profile {pid} ({key}) stores spend {spend!r}, the accountant gives {recomputed[key]!r}")
        worst = max(recomputed.values()) if recomputed else None
        if worst is not None and worst > self._limit:
            problems.append(f"a user's spend {worst!r} exceeds the budget {self._limit!r}")
        if worst != worst_stored:
            problems.append(f"stored worst spend {worst_stored!r}, recomputed {worst!r}")
        if count_stored != len(charges):
            problems.append(f"state counts {count_stored} charges, the table holds {len(charges)}")
        return VerifyReport(self.url, self._budget, len(charges), len(segments), len(profiles), worst, tuple(problems))


def _first_differences(stored: list[list], expected: list[list], limit: int = 10) -> list[str]:
    """Where the stored segment map and the recomputed one differ (first few user ranges)."""
    def at(segments: list[list], user: int) -> str:
        for start, stop, key in segments:
            if start <= user < stop:
                return key
        return ""

    cuts = sorted({x for s in stored + expected for x in (s[0], s[1])})
    out = []
    for lo, hi in zip(cuts, cuts[1:]):
        mine, theirs = at(stored, lo), at(expected, lo)
        if mine != theirs:
            out.append(f"users [{lo}, {hi}): stored charges {{{mine}}}, recomputed from the charges {{{theirs}}}")
            if len(out) >= limit:
                out.append("...")
                break
    return out


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")
