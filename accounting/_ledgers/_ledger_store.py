"""Where a durable ledger's rows live: URLs, connections with bounded waits, driver errors mapped.

A ledger URL is ``sqlite:////absolute/path/ledger.db`` (SQLite, standard library) or a libpq URL
``postgresql://user@host/dbname`` (psycopg 3). Relative SQLite paths are refused, and so are the
one- and two-slash forms (``sqlite:/x.db`` was read as the relative ``x.db``): a run started from
another directory would otherwise open, or create, another ledger with a fresh budget.

Every wait is bounded, with defaults a pipeline can live with, each overridable in the URL's query
(seconds): ``lock_timeout`` (30: waiting for another writer's lock), ``statement_timeout`` (60:
one transaction's work once the lock is held, including the integrity check on open),
``connect_timeout`` (10, PostgreSQL: a host that accepts TCP and never answers) and
``reconnect_timeout`` (30, PostgreSQL: how long a lost connection is retried). A charge holds the
write lock no longer than the smaller of ``lock_timeout`` and ``statement_timeout`` (a longer one
is refused, nothing charged), so one big charge never outlasts the other writers' patience. SQLite enforces the
statement timeout with a progress handler, PostgreSQL with its own ``statement_timeout``,
``lock_timeout`` and ``idle_in_transaction_session_timeout`` (a dpverify writer stalled while holding
the lock is rolled back by the server, so it cannot block everyone else for ever).

Every driver error leaves this module as an :class:`AccountingError` that names the ledger, the
table or field when the driver says which, and what to do; a lost PostgreSQL connection is
:class:`ConnectionLost` (an ``AccountingError`` too), which the ledger answers by reconnecting and
checking, by charge id, whether the interrupted charge committed before retrying it.

Nothing is written to a database until it is known to hold a dpverify ledger of a supported schema
or to be new and empty: opening reads first (SQLite's WAL mode is switched on only for a ledger
this code created or already uses), and a database holding other tables is refused, never given
``dpverify_*`` tables. Read-only opens of SQLite use ``mode=ro``, and ``immutable=1`` on read-only
media (where ``mode=ro`` cannot create the WAL index), so a cleanly closed ledger on a read-only
disk can be shown, verified and exported.
"""

from __future__ import annotations

import abc
import contextlib
import math
import os
import time
from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from .._core._validation import AccountingError

__all__ = ["ConnectionLost", "StoreOptions", "connect", "redacted"]

URL_FORMS = "sqlite:////absolute/path/ledger.db or postgresql://user@host/dbname"


@dataclass(frozen=True)
class StoreOptions:
    """The bounded waits (seconds) and SQLite's durability, as read from the URL's query."""

    lock_timeout: float = 30.0
    statement_timeout: float = 60.0
    connect_timeout: float = 10.0
    reconnect_timeout: float = 30.0
    synchronous: str = "FULL"

    @property
    def hold_limit(self) -> float:
        """How long one charge may hold the ledger's write lock: no longer than another writer
        waits for it (``lock_timeout``), nor than ``statement_timeout``; a charge too big for
        that is refused (nothing charged) rather than making every other writer give up."""
        return min(self.statement_timeout, self.lock_timeout)


_TIMEOUTS = ("lock_timeout", "statement_timeout", "connect_timeout", "reconnect_timeout")
_SQLITE_KEYS = ("synchronous", "lock_timeout", "statement_timeout")
_POSTGRES_KEYS = ("lock_timeout", "statement_timeout", "reconnect_timeout")  # ours; connect_timeout is libpq's too


#: libpq's TCP keepalive settings used unless the URL gives its own (seconds; ignored on Unix sockets)
_KEEPALIVES = (("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"))
#: how long past its own bounds (lock wait + statement) the client waits for a silent server
_GRACE = 2.0


class ConnectionLost(AccountingError):
    """The connection to a PostgreSQL ledger broke (server restart, failover, network)."""


def redacted(url: str) -> str:
    """The URL with any password (in the authority or the query) replaced by ***."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except (TypeError, ValueError, AttributeError):
        return str(url)
    out = parts
    if password is not None:
        out = out._replace(netloc=parts.netloc.replace(f":{password}@", ":***@", 1))
    if "password=" in parts.query:
        query = [(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
        out = out._replace(query=urlencode(query, safe="/*:", quote_via=quote))
    return out.geturl() if out is not parts else url


def _seconds(name: str, text: str, url: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value < 1e7):
        raise AccountingError(name, text, "a number of seconds > 0 (in the ledger URL's query)", f"ledger {redacted(url)}")
    return value


def parse(url: Any) -> tuple[str, str, StoreOptions]:
    """(kind, target, options): the SQLite path or the libpq URL without dpverify's own options."""
    if not isinstance(url, str) or not url:
        raise AccountingError("url", url, f"a ledger URL: {URL_FORMS}")
    scheme = url.split(":", 1)[0].lower()
    if scheme == "sqlite":
        rest = url[len("sqlite:"):]
        if not rest.startswith("///"):
            raise AccountingError("url", url, "sqlite:////absolute/path/ledger.db (three slashes, then an absolute path)",
                                  "sqlite:/ and sqlite:// forms are refused: they were read as relative paths")
        location, _, query = rest[3:].partition("?")
        path = unquote(location)
        if not os.path.isabs(path) or len(path) < 2 or path.startswith("//"):
            raise AccountingError("url", url, "sqlite:////absolute/path/ledger.db (an absolute path: four slashes in all)",
                                  f"relative paths are refused: run from another directory, {path!r} would name another "
                                  "ledger and start a fresh budget" if not path.startswith("/") else "")
        path = os.path.normpath(path)
        options = StoreOptions()
        for key, value in parse_qsl(query, keep_blank_values=True):
            if key == "synchronous":
                if value.upper() not in ("FULL", "NORMAL", "EXTRA"):
                    raise AccountingError("synchronous", value, "'full' (default), 'extra' or 'normal'", f"ledger {url}")
                options = replace(options, synchronous=value.upper())
            elif key in _SQLITE_KEYS:
                options = replace(options, **{key: _seconds(key, value, url)})
            else:
                raise AccountingError("url", url, f"a SQLite ledger URL whose query holds only {', '.join(_SQLITE_KEYS)}", f"unknown option {key!r}")
        return "sqlite", path, options
    if scheme in ("postgresql", "postgres"):
        parts = urlsplit(url)
        options = StoreOptions()
        passed = []
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key in _POSTGRES_KEYS or key == "connect_timeout":
                options = replace(options, **{key: _seconds(key, value, url)})
            if key not in _POSTGRES_KEYS:
                passed.append((key, value))
        if not any(key == "connect_timeout" for key, _ in passed):
            passed.append(("connect_timeout", str(max(1, round(options.connect_timeout)))))
        # TCP keepalives (libpq's defaults leave them to the kernel: hours): a peer that vanished
        # is noticed within about a minute even with no statement under way
        for key, value in _KEEPALIVES:
            if not any(k == key for k, _ in passed):
                passed.append((key, value))
        return "postgresql", parts._replace(query=urlencode(passed, safe="/:", quote_via=quote)).geturl(), options
    raise AccountingError("url", redacted(url), f"a ledger URL: {URL_FORMS}")


def connect(url: str, *, read_only: bool, create: bool) -> "Store":
    kind, target, options = parse(url)
    if kind == "sqlite":
        return SQLiteStore(url, target, options, read_only=read_only, create=create)
    return PostgresStore(url, target, options, read_only=read_only)


# ---- the tables ----------------------------------------------------------------------------------

#: schema 2: schema 1 plus the chain (charge ids, links, derived digests, state head and sums)
TABLES = (
    "CREATE TABLE dpverify_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # the single row every charge locks; worst = the worst user's spend (NULL: nothing charged);
    # head = the last charge's link (the genesis before any), segments/profiles = set digests
    "CREATE TABLE dpverify_state (id INTEGER PRIMARY KEY, worst DOUBLE PRECISION, charges BIGINT NOT NULL, "
    "cursor BIGINT NOT NULL, head TEXT NOT NULL, segments TEXT NOT NULL, profiles TEXT NOT NULL, last_seq BIGINT NOT NULL)",
    "CREATE TABLE dpverify_guarantees (id {serial} PRIMARY KEY, spec TEXT NOT NULL UNIQUE)",
    # key: "gid:count,gid:count" sorted by gid; spend: its composition in the budget's main parameter
    "CREATE TABLE dpverify_profiles (id {serial} PRIMARY KEY, key TEXT NOT NULL UNIQUE, "
    "spend DOUBLE PRECISION NOT NULL, releases BIGINT NOT NULL)",
    # cid: the charge's id, looked up (among the rows after a handle's last head) when a lost connection
    # leaves a commit in doubt; no index of its own, which would cost every charge a page write
    "CREATE TABLE dpverify_charges (seq {serial} PRIMARY KEY, cid TEXT NOT NULL, label TEXT NOT NULL, "
    "guarantee BIGINT NOT NULL, participants TEXT, users BIGINT, spent_after DOUBLE PRECISION NOT NULL, "
    "recorded_at TEXT NOT NULL, derived TEXT NOT NULL, link TEXT NOT NULL)",
    "CREATE TABLE dpverify_segments (start BIGINT PRIMARY KEY, stop BIGINT NOT NULL, profile BIGINT NOT NULL)",
)
TABLE_NAMES = ("dpverify_meta", "dpverify_state", "dpverify_guarantees", "dpverify_profiles", "dpverify_charges", "dpverify_segments")


# ---- stores --------------------------------------------------------------------------------------


class Store(abc.ABC):
    """A connection with the transactions the ledger needs: write (under the lock) and read."""

    kind = "store"
    placeholder = "?"
    #: whether :meth:`batch` saves round trips (worth reading ahead what a charge will need)
    pipelined = False

    def __init__(self, url: str, options: StoreOptions, read_only: bool) -> None:
        self.url = url
        self.shown = redacted(url)
        self.options = options
        self.read_only = read_only
        self.connection: Any = None
        self._hold_deadline = math.inf  # while a write transaction holds the lock: when it must give up

    def _sql(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def _check_hold(self) -> None:
        if time.monotonic() > self._hold_deadline:
            raise self.held_too_long()

    def held_too_long(self) -> AccountingError:
        return self.error(f"a charge that holds the ledger's lock at most {self.options.hold_limit:g} s (the smaller of "
                          f"lock_timeout={self.options.lock_timeout:g} s, how long other writers wait for it, and "
                          f"statement_timeout={self.options.statement_timeout:g} s)",
                          "nothing was charged; split the charge (fewer runs of user ids per charge), or raise ?lock_timeout= "
                          "for every writer of this ledger")

    def all(self, sql: str, params: Sequence = ()) -> list[tuple]:
        self._check_hold()
        return list(self._execute(self._sql(sql), params).fetchall())

    def one(self, sql: str, params: Sequence = ()) -> tuple | None:
        self._check_hold()
        return self._execute(self._sql(sql), params).fetchone()

    def run(self, sql: str, params: Sequence = ()) -> None:
        self._check_hold()
        self._execute(self._sql(sql), params)

    def run_many(self, sql: str, rows: Sequence[Sequence]) -> None:
        if rows:
            self._check_hold()
            self._execute_many(self._sql(sql), rows)

    def batch(self, queries: Sequence[tuple[str, Sequence]]) -> list[list[tuple]]:
        """The rows of several queries, executed in order (PostgreSQL, inside :meth:`write`: sent
        together and answered in one round trip)."""
        return [self.all(sql, params) for sql, params in queries]

    def rows(self, sql: str, params: Sequence = ()) -> Iterator[tuple]:
        """The rows of a query, fetched a block at a time (a scan of every charge stays small in memory)."""
        yield from self._execute(self._sql(sql), params)

    def error(self, what: str, hint: str) -> AccountingError:
        return AccountingError("ledger", self.shown, what, hint)

    # the mapped driver errors both engines share
    def _lock_held(self, action: str) -> AccountingError:
        return self.error(f"a ledger whose lock is free within lock_timeout={self.options.lock_timeout:g} s while {action}",
                          "another process holds the write lock; nothing was charged: retry later, or raise ?lock_timeout= in the URL")

    def _too_slow(self, action: str, detail: str = "") -> AccountingError:
        return self.error(f"{action} to finish within statement_timeout={self.options.statement_timeout:g} s{detail}",
                          "nothing was charged; raise ?statement_timeout= in the URL if the ledger is very large")

    def _unreadable(self, text: str, action: str) -> AccountingError:
        table = next((name for name in TABLE_NAMES if name in text), None)
        where = f" in table {table}" if table else ""
        return self.error(f"a readable dpverify ledger ({text}{where} while {action})",
                          "nothing was charged; `dpverify ledger verify` and `dpverify ledger show` inspect it")

    @abc.abstractmethod
    def _execute(self, sql: str, params: Sequence) -> Any: ...

    @abc.abstractmethod
    def _execute_many(self, sql: str, rows: Sequence[Sequence]) -> None: ...

    @abc.abstractmethod
    def guard(self, action: str) -> contextlib.AbstractContextManager: ...

    @abc.abstractmethod
    def tables(self) -> set[str]:
        """The names of the tables in the database (in PostgreSQL: in the current schema)."""

    @abc.abstractmethod
    def integrity_problems(self) -> list[str]:
        """The storage engine's own check of its pages (bounded by the statement timeout)."""

    def changed_behind(self) -> bool:
        """Under the write lock: whether another connection may have written to the database since
        this one last asked or since :meth:`baseline` (True when the engine cannot tell: the caller
        then checks everything)."""
        return True

    def baseline(self) -> None:
        """Inside the read of the check on open: what later :meth:`changed_behind` calls compare with."""

    def reconnect(self) -> None:  # pragma: no cover - SQLite never loses its connection
        raise self.error("a reachable ledger", "the connection was lost")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()


def _sqlite_problem(error: Exception) -> str:
    return str(error).strip() or type(error).__name__


class SQLiteStore(Store):
    kind = "sqlite"
    lock_suffix = ""  # BEGIN IMMEDIATE is the lock

    def __init__(self, url: str, path: str, options: StoreOptions, *, read_only: bool, create: bool) -> None:
        import sqlite3

        super().__init__(url, options, read_only)
        self._sqlite3 = sqlite3
        self.path = path
        self.synchronous = options.synchronous
        self._deadline = float("inf")
        self.fresh = False  # a new empty file: the ledger may be created in it
        if not os.path.exists(path):
            if read_only or not create:
                raise self.error("an existing ledger (nothing at that path)",
                                 "check the path; to start a new ledger there, pass create=True (CLI: --create)")
            directory = os.path.dirname(path)
            if not os.path.isdir(directory):
                raise self.error(f"a path in an existing directory ({directory} does not exist)", "create the directory first")
            self.fresh = True
        elif os.path.isdir(path):
            raise self.error("a SQLite file (this path is a directory)", "give the path of the ledger file")
        elif os.path.getsize(path) == 0:
            self.fresh = not read_only
        if not read_only and not self.fresh and not os.access(path, os.W_OK):
            raise self.error("a writable ledger file (the file is read-only)",
                             "charging needs write access; `dpverify ledger show`/`verify` read it as it is")
        self.immutable = False
        self._data_version = None  # see changed_behind
        self._made_file = self.fresh and not os.path.exists(path)  # removed again if nothing is written to it
        self.connection = self._open(path, read_only)
        self.connection.set_progress_handler(self._past_deadline, 20_000)  # every ~0.2-1 ms of VM work: a timeout in seconds, at little cost per charge
        self._pragma(f"PRAGMA busy_timeout = {int(options.lock_timeout * 1000)}")

    def _open(self, path: str, read_only: bool):
        sqlite3 = self._sqlite3
        try:
            if not read_only:
                return sqlite3.connect(path, isolation_level=None, timeout=self.options.lock_timeout, check_same_thread=False)
            connection = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, isolation_level=None, timeout=self.options.lock_timeout,
                                         check_same_thread=False)
            try:
                connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
                return connection
            except sqlite3.OperationalError:
                # read-only media: mode=ro cannot create the WAL index next to the file; nobody can
                # write there either, so reading it as immutable is safe
                connection.close()
                if os.access(path, os.W_OK) and os.access(os.path.dirname(path), os.W_OK):
                    raise
                self.immutable = True
                return sqlite3.connect(f"file:{quote(path)}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:
            raise self.error(f"a SQLite file that can be opened ({_sqlite_problem(error)})",
                             "check the path and its permissions") from None

    def changed_behind(self) -> bool:
        """``PRAGMA data_version`` moved: another connection committed since this one last asked
        (its own commits never move it). Asked under the write lock, nobody else can commit
        between two answers unseen."""
        version = self.connection.execute("PRAGMA data_version").fetchone()[0]
        changed, self._data_version = version != self._data_version, version
        return changed

    def baseline(self) -> None:
        self._data_version = self.connection.execute("PRAGMA data_version").fetchone()[0]

    def _pragma(self, sql: str) -> None:
        with self.guard("configuring the connection"):
            self.connection.execute(sql)

    def _past_deadline(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def _execute(self, sql: str, params: Sequence):
        return self.connection.execute(sql, tuple(params))

    def _execute_many(self, sql: str, rows: Sequence[Sequence]) -> None:
        self.connection.executemany(sql, rows)

    @contextlib.contextmanager
    def guard(self, action: str) -> Iterator[None]:
        """Bound the work inside by the statement timeout and map the driver's errors."""
        sqlite3 = self._sqlite3
        outer = self._deadline == float("inf")
        if outer:
            self._deadline = time.monotonic() + self.options.statement_timeout
        try:
            yield
        except sqlite3.Error as error:
            raise self._mapped(error, action) from None
        finally:
            if outer:
                self._deadline = float("inf")

    def _mapped(self, error: Exception, action: str) -> AccountingError:
        text = _sqlite_problem(error)
        lower = text.lower()
        if "locked" in lower or "busy" in lower:
            return self._lock_held(action)
        if "interrupted" in lower:
            return self._too_slow(action)
        if "readonly" in lower or "read-only" in lower or "read only" in lower:
            return self.error(f"a writable ledger ({text} while {action})",
                              "charging needs write access to the file and its directory; `dpverify ledger show` reads it as it is")
        if isinstance(error, self._sqlite3.DatabaseError) and ("malformed" in lower or "not a database" in lower or "corrupt" in lower):
            return self.error(f"an undamaged SQLite ledger ({text} while {action})",
                              "the file is damaged: nothing was charged; restore it from a backup (`dpverify ledger verify` "
                              "on the restored copy), and inspect the damaged one with the sqlite3 shell's .recover")
        return self._unreadable(text, action)

    @contextlib.contextmanager
    def _locked(self, limit: float | None = None) -> Iterator[None]:
        """BEGIN IMMEDIATE (the write lock, before anything is read) ... COMMIT, or ROLLBACK."""
        self.connection.execute("BEGIN IMMEDIATE")
        # the lock wait is bounded apart; once held, no longer than other writers wait for it
        self._deadline = self._hold_deadline = time.monotonic() + (self.options.hold_limit if limit is None else limit)
        try:
            yield
        except BaseException as error:
            self._hold_deadline = math.inf
            self.connection.execute("ROLLBACK")
            if isinstance(error, self._sqlite3.OperationalError) and "interrupted" in str(error).lower() and time.monotonic() > self._deadline:
                raise self.held_too_long() from None
            raise
        self._hold_deadline = math.inf
        self.connection.execute("COMMIT")

    @contextlib.contextmanager
    def creating(self) -> Iterator[None]:
        with self.guard("creating the ledger"), self._locked(self.options.statement_timeout):
            yield

    def became_ledger(self) -> None:
        """The file holds a ledger of this schema: WAL from now on (the first write this code makes
        to a file it did not create)."""
        with self.guard("switching the ledger to WAL"):
            if self.connection.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                self.connection.execute("PRAGMA journal_mode = WAL")
            self.connection.execute(f"PRAGMA synchronous = {self.synchronous}")

    @contextlib.contextmanager
    def write(self, durable: bool = True) -> Iterator[None]:
        """A write transaction holding the ledger's lock. ``durable=False``: commit without
        syncing (WAL: a later synced commit covers it)."""
        with self.guard("charging"):
            if not durable:
                self.connection.execute("PRAGMA synchronous = NORMAL")
            try:
                with self._locked():
                    yield
            finally:
                if not durable:
                    self.connection.execute(f"PRAGMA synchronous = {self.synchronous}")

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self.guard("reading the ledger"):
            self.connection.execute("BEGIN")  # one snapshot for every read inside (WAL)
            try:
                yield
            finally:
                self.connection.execute("ROLLBACK")

    def tables(self) -> set[str]:
        with self.guard("reading the database's tables"):
            return {row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def create(self) -> None:
        for statement in TABLES:
            self.run(statement.format(serial="INTEGER"))

    def integrity_problems(self) -> list[str]:
        import threading

        with self.guard("checking the file's integrity (PRAGMA quick_check)"):
            # quick_check is one VM instruction (the progress handler never runs inside it), but it
            # honours sqlite3_interrupt: a timer interrupts it at the deadline
            timer = threading.Timer(max(0.0, self._deadline - time.monotonic()), self.connection.interrupt)
            timer.daemon = True
            timer.start()
            try:
                rows = [row[0] for row in self.connection.execute("PRAGMA quick_check(20)")]
            finally:
                timer.cancel()
        return [] if rows == ["ok"] else [f"SQLite quick_check: {row}" for row in rows]

    def identity(self) -> str:
        """Where the database lives (what its witness is named after): the file's real path."""
        return "sqlite:" + os.path.realpath(self.path)

    def close(self) -> None:
        super().close()
        if self._made_file:  # a refused creation leaves no empty file behind
            with contextlib.suppress(OSError):
                if os.path.getsize(self.path) == 0:
                    os.remove(self.path)

    def describe(self) -> str:
        return f"SQLite, WAL, synchronous={self.synchronous}" + (", read-only media (immutable)" if self.immutable else "")


class PostgresStore(Store):
    kind = "postgresql"
    placeholder = "%s"
    pipelined = True
    lock_suffix = " FOR UPDATE"  # the state row's lock serialises every charge

    def __init__(self, url: str, target: str, options: StoreOptions, *, read_only: bool) -> None:
        try:
            import psycopg
        except ImportError:  # pragma: no cover - the extra is installed with [test]
            raise AccountingError("url", redacted(url), "a sqlite://// URL, or install the 'postgres' extra (psycopg 3)") from None
        super().__init__(url, options, read_only)
        self._psycopg = psycopg
        self._target = target
        self.fresh = False
        self._depth = 0  # nested guards: the outermost one arms the deadline
        self.lost_because = ""  # why the connection was last lost (named when reconnecting fails)
        self._last_xid: int | None = None  # see changed_behind
        self._others = True
        self._silenced: float | None = None  # the deadline (s) after which the client closed a silent connection
        self._connect()

    def _connect(self) -> None:
        psycopg = self._psycopg
        try:
            self.connection = psycopg.connect(self._target, autocommit=True)
        except psycopg.Error as error:
            raise self.error(f"a PostgreSQL server that answers within connect_timeout={self.options.connect_timeout:g} s "
                             f"({str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__})",
                             "check the host, port, database and credentials; raise ?connect_timeout= for a slow network") from None
        ms = lambda seconds: max(1, math.ceil(seconds * 1000))  # noqa: E731  (0 would mean "no limit" to the server)
        settings = (f"SET statement_timeout = {ms(self.options.statement_timeout)}; SET lock_timeout = {ms(self.options.lock_timeout)}; "
                    f"SET idle_in_transaction_session_timeout = {ms(self.options.statement_timeout)}")
        if self.read_only:
            settings += "; SET default_transaction_read_only = on"
        with self.guard("configuring the session"):
            self.connection.execute(settings)

    def reconnect(self) -> None:
        """Reconnect with bounded retries (``reconnect_timeout``), backing off from 0.1 s to 2 s."""
        deadline = time.monotonic() + self.options.reconnect_timeout
        pause = 0.1
        while True:
            self.close()
            self._depth = 0
            self.baseline()
            try:
                self._connect()
                return
            except AccountingError as error:
                if time.monotonic() + pause > deadline:
                    raise self.error(f"a reachable PostgreSQL server within reconnect_timeout={self.options.reconnect_timeout:g} s "
                                     f"after the connection was lost ({self.lost_because or 'lost'}; reconnecting: {error.allowed})",
                                     "the interrupted charge was not recorded twice; charges committed before are kept; "
                                     "retry when the server is back") from None
            time.sleep(pause)
            pause = min(2 * pause, 2.0)

    def _execute(self, sql: str, params: Sequence):
        return self.connection.execute(sql, tuple(params), prepare=True)

    def _execute_many(self, sql: str, rows: Sequence[Sequence]) -> None:
        with self.connection.cursor() as cursor:
            cursor.executemany(sql, [tuple(r) for r in rows])

    def batch(self, queries: Sequence[tuple[str, Sequence]]) -> list[list[tuple]]:
        # in pipeline mode (write()) every query is sent before the first answer is awaited
        self._check_hold()
        cursors = [self._execute(self._sql(sql), params) for sql, params in queries]
        return [list(cursor.fetchall()) for cursor in cursors]

    def rows(self, sql: str, params: Sequence = ()) -> Iterator[tuple]:
        # a server-side cursor (inside the read transaction): blocks of 10,000 rows, not the whole table
        with self.connection.cursor(name="dpverify_scan") as cursor:
            cursor.itersize = 10_000
            cursor.execute(self._sql(sql), tuple(params))
            yield from cursor

    def _lost(self, error: Exception) -> bool:
        connection = self.connection
        return isinstance(error, self._psycopg.OperationalError) and (connection is None or connection.closed or connection.broken)

    @property
    def client_deadline(self) -> float:
        """The client's own bound on one guarded exchange (s): the server's lock wait and statement
        bounds plus a grace. The server enforces those itself and answers; a connection still
        silent after this long (a network that stopped forwarding, a frozen host) is closed by the
        client, and the exchange fails as a lost connection instead of hanging."""
        return self.options.lock_timeout + self.options.statement_timeout + _GRACE

    def _silence(self, connection: Any) -> None:
        """The deadline passed with the exchange still waiting: shut the socket down, so that the
        blocked read returns at once (the descriptor stays the driver's to close)."""
        import socket

        if connection is not self.connection or connection.closed:
            return
        self._silenced = self.client_deadline
        with contextlib.suppress(OSError, ValueError):
            duplicate = socket.socket(fileno=os.dup(connection.fileno()))
            try:
                duplicate.shutdown(socket.SHUT_RDWR)
            finally:
                duplicate.close()

    @contextlib.contextmanager
    def guard(self, action: str) -> Iterator[None]:
        psycopg = self._psycopg
        timer = None
        if self._depth == 0 and self.connection is not None:
            import threading

            self._silenced = None
            timer = threading.Timer(self.client_deadline, self._silence, (self.connection,))
            timer.daemon = True
            timer.start()
        self._depth += 1
        try:
            yield
        except psycopg.Error as error:
            raise self._mapped(error, action) from None
        finally:
            self._depth -= 1
            if timer is not None:
                timer.cancel()

    def _mapped(self, error: Exception, action: str) -> AccountingError:
        errors = self._psycopg.errors
        text = (str(error).strip().splitlines() or [type(error).__name__])[0]
        if self._silenced is not None:
            self.lost_because = f"no answer within {self._silenced:g} s: the connection went silent and dpverify closed it"
            return ConnectionLost("ledger", self.shown, f"a server that answers while {action} (no answer within "
                                  f"{self._silenced:g} s = lock_timeout + statement_timeout + {_GRACE:g} s: the connection went "
                                  "silent, and dpverify closed it)",
                                  "dpverify reconnects and checks the charge id before retrying")
        if self._lost(error):
            self.lost_because = text
            return ConnectionLost("ledger", self.shown, f"an open connection while {action} (lost: {text})",
                                  "dpverify reconnects and checks the charge id before retrying")
        if isinstance(error, errors.LockNotAvailable):
            return self._lock_held(action)
        if isinstance(error, (errors.QueryCanceled, errors.IdleInTransactionSessionTimeout)):
            return self._too_slow(action, f" ({text})")
        if isinstance(error, (errors.ReadOnlySqlTransaction, errors.InsufficientPrivilege)):
            return self.error(f"a ledger this role may write ({text} while {action})",
                              "grant the role INSERT/UPDATE/DELETE on the dpverify_* tables, or read it with `dpverify ledger show`")
        return self._unreadable(text, action)

    @contextlib.contextmanager
    def write(self, durable: bool = True) -> Iterator[None]:
        """A write transaction; the lock is the state row's (``SELECT ... FOR UPDATE``, taken by
        the ledger's first statement). ``durable=False``: commit without waiting for the WAL flush."""
        with self.guard("charging"):
            # pipeline mode: writes are sent without waiting for each reply (reads still wait),
            # so the lock is held for fewer round trips
            with self.connection.pipeline(), self.connection.transaction():
                self._hold_deadline = time.monotonic() + self.options.hold_limit
                try:
                    if not durable:
                        self.run("SET LOCAL synchronous_commit = off")
                    yield
                finally:
                    self._hold_deadline = math.inf

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self.guard("reading the ledger"):
            self.connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield
            finally:
                if not self.connection.broken:
                    self.connection.execute("ROLLBACK")

    @contextlib.contextmanager
    def creating(self) -> Iterator[None]:
        with self.guard("creating the ledger"), self.connection.transaction():
            self.run("SELECT pg_advisory_xact_lock(7466846)")  # two processes creating at once
            yield

    def became_ledger(self) -> None:
        pass

    def tables(self) -> set[str]:
        with self.guard("reading the database's tables"):
            rows = self.connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
        return {row[0] for row in rows}

    def create(self) -> None:
        for statement in TABLES:
            self.run(statement.format(serial="BIGINT GENERATED BY DEFAULT AS IDENTITY"))

    def integrity_problems(self) -> list[str]:
        return []  # the server checks its own pages (data checksums, WAL); nothing a client can add cheaply

    def changed_behind(self) -> bool:
        """Inside a charge, after the state row's lock: whether any transaction may have written
        since this connection's last look. Transaction ids are handed out in order, but not in the
        order transactions take the lock (an id may be given before the wait for it), so none
        wrote only if: no other transaction was in progress at the last look, this transaction's
        id follows the last one's (none began in between), and every id handed out after this
        one is still in progress (none that began after this one has finished: a writer that
        took the lock ahead of this charge, or anything else that committed meanwhile).
        Conservative: any write anywhere on the server counts. The wrong variant (the first two
        conditions only) missed a charge by a writer that got its id after this one's but the
        lock before it, and left the handle's copy of the tables stale (8 processes sharing a
        ledger; a false integrity refusal followed)."""
        xid, xmax, others, later = self.one(
            "SELECT x::text, pg_snapshot_xmax(s)::text, (SELECT count(*) FROM pg_snapshot_xip(s) AS i WHERE i <> x), "
            "(SELECT count(*) FROM pg_snapshot_xip(s) AS i WHERE i > x) "
            "FROM (SELECT pg_current_xact_id() AS x, pg_current_snapshot() AS s) AS t")
        xid = int(xid)
        finished_after = int(xmax) - xid - 1 - later  # ids handed out after this one that are no longer running
        changed = self._last_xid is None or self._others or xid != self._last_xid + 1 or finished_after > 0
        self._last_xid, self._others = xid, bool(others)
        return changed

    def baseline(self) -> None:
        self._last_xid, self._others = None, True  # the first charge checks everything

    def identity(self) -> str:
        """Where the database lives: the server (host or socket directory, port) and the database."""
        info = self.connection.info
        return f"postgresql://{info.host}:{info.port}/{info.dbname}"

    def describe(self) -> str:
        with self.guard("reading settings"):
            return "PostgreSQL, synchronous_commit=" + str(self.one("SHOW synchronous_commit")[0])

