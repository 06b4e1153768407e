"""A durable privacy ledger: :class:`Ledger`'s per-user accounting kept in SQLite or PostgreSQL.

``Ledger.open("sqlite:////abs/path/ledger.db", budget, create=True)`` or
``Ledger.open("postgresql://...", budget)`` returns a :class:`DurableLedger`: the same charges,
guarantees and exact values as the in-memory ledger (both compose a user's charges through
:func:`compose_canonical`), kept in a database so that users who return across runs, processes and
machines (the ICLR paper's App. I: a user's B batches "can even span multiple learning
processes") are charged against one budget. Connections, timeouts and error mapping:
:mod:`accounting._ledgers._ledger_store`; the hash chain and witness: :mod:`accounting._ledgers._ledger_chain`.

How a user's spend is kept. The users form a *segment map*: disjoint [start, stop) id ranges,
each pointing at a *profile* (the multiset of guarantees that touched those users, with its
composed spend, computed once per distinct multiset). A charge on participants [a, b) reads only
the segments overlapping [a, b) (one indexed range query), splits the two at its ends, gives each
piece its profile plus the new guarantee, and checks every new profile's spend against the
budget: cost O(log S + pieces), independent of how many charges came before or how many users a
range holds. Users nobody charged have no segment (the empty profile). ``participants=None``
(every user) is the range [0, EVERYONE).

Atomic check-and-charge. Each charge is one transaction that first takes the ledger's write lock
(SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``SELECT ... FOR UPDATE`` on the single state row), then
reads the affected segments, checks, and writes the charge row, the new segments and the worst
spend, and commits; a refusal rolls the transaction back, so it leaves no trace. Concurrent
charges are serialised by the lock (so two processes can never together overspend a user), and a
process killed mid-charge leaves either the whole charge or none of it (the database's atomic
commit). The privatizer charges before it releases, so a crash between the two wastes budget and
never leaks it. :meth:`DurableLedger.prepay` records several charges in one transaction (all or
none; a bandit run prepays each batch round's K arms before releasing any of them, so the round
costs one disk sync instead of K), and each later matching ``charge`` finds its own record.

Tamper evidence (:mod:`accounting._ledgers._ledger_chain`). Every charge row carries a link chained over the
previous row and its own content, and commits to set digests of the derived tables (segments,
profiles) and the worst spend. Opening a ledger checks the file (SQLite ``quick_check``), the whole
chain and both set digests (hashes only: linear in the rows, no composition), and the witness of
the head this machine saw last; a ledger that disagrees is refused for charging (read-only opens
report it: ``dpverify ledger verify``/``show``). A handle then checks only what changed
(incrementally): under the lock, that the state row is the one it left or moved forward, and the
rows other processes appended meanwhile (when a few; a longer stretch, from many writers queueing
for the lock, is checked before the handle's next charge, outside the lock); and the segments and
profiles the charge reads, against the digests the chain vouches for (:meth:`DurableLedger._check_derived`):
once another connection has written, the handle keeps a verified copy of those tables, brought up
to the other charges by applying them to it, compares every segment a charge reads with it and
takes profiles from it; a refusal makes the next charge check the tables whole. Every charge has an
id (``cid``), so that a charge interrupted by a lost PostgreSQL connection is looked up after
reconnecting and counted once, whatever the retry.

Durability: SQLite in WAL mode with ``synchronous=FULL`` (every commit is fsynced before
``charge`` returns; ``?synchronous=normal`` in the URL trades the last commits on power loss, never
consistency, for speed); PostgreSQL with its default ``synchronous_commit=on``.

Schema version :data:`SCHEMA_VERSION` is stored in ``dpverify_meta``; opening a database written by
a newer schema is refused, and a schema-1 ledger (before the chain) is upgraded only on request
(:meth:`DurableLedger.upgrade`, ``dpverify ledger upgrade``). :meth:`DurableLedger.verify`
recomputes every user's spend from the raw charges alone (a sweep over range ends, then the exact
accountant on each distinct multiset) and reports every disagreement with the stored segments,
profiles, worst spend and chain.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .._core._guarantees import RDP, ApproxDP, PureDP, ZCDP
from ._ledger import (
    Budget,
    Charge,
    Ledger,
    _compose_uncached,
    _fmt,
    _guarantee_of,
    _no_epsilon,
    _normalise_participants,
    _trail_json,
    canonical_multiset,
    compose_canonical,
)
from ._ledger_chain import EMPTY_SET, KEY_VARIABLE, WITNESS_VARIABLE, Chain, Witness, WitnessBroken, acceptance_log, encode, set_hex, set_of
from ._ledger_codec import guarantee_from_dict, guarantee_spec
from ._ledger_store import ConnectionLost, Store, connect, redacted
from .._core._validation import AccountingError, BudgetExceeded, check_positive_int

__all__ = ["DurableLedger", "EVERYONE", "SCHEMA_VERSION", "VerifyReport", "redacted"]

#: the schema this code writes and the newest it reads
SCHEMA_VERSION = 2
#: participants=None stands for the user ids [0, EVERYONE)
EVERYONE = 2**62
LEDGER_FORMAT = "dpverify-ledger/1"
_NO_TRANSACTION: dict = {}  # the pending-profile map outside a charge (never written to)
#: how many problems of one kind an integrity report lists before "..."
_REPORTED = 10
#: most entries a handle keeps in each of its memo tables (segment terms, profile keys, specs)
_KEPT_TERMS = 100_000
#: most rows other processes appended that a charge checks while it holds the lock (more wait for its next charge)
_CHECKED_UNDER_LOCK = 2
#: most charges by others a handle's mirror is refreshed over (more: it is read again whole)
_REFRESHED_CHARGES = 1000
#: most attempts of one charge across lost connections (each reconnect is bounded in time too)
_ATTEMPTS = 5
_CHARGE_COLUMNS = "seq, cid, label, guarantee, participants, users, spent_after, recorded_at, derived, link"
#: the segments a charge on [a, b) reads (parameters a, a, b, b), by the primary key: the two starting at or
#: before a (the one holding a and its left neighbour), those starting in (a, b], and the first one after b
_PLAN_SQL = ("SELECT start, stop, profile FROM (SELECT start, stop, profile FROM dpverify_segments WHERE start <= ? "
             "ORDER BY start DESC LIMIT 2) AS l UNION ALL SELECT start, stop, profile FROM dpverify_segments "
             "WHERE start > ? AND start <= ? UNION ALL SELECT start, stop, profile FROM (SELECT start, stop, profile "
             "FROM dpverify_segments WHERE start > ? ORDER BY start LIMIT 1) AS r")


@dataclass
class _Head:
    """What a handle last verified of the chain and state: where incremental checks start."""

    charges: int
    last_seq: int
    link: str
    segments: str
    profiles: str
    worst: float | None


@dataclass
class _Entry:
    """One charge of a transaction, with the fields of its row known before the lock is taken."""

    charge: Charge
    spec: str
    runs: list[tuple[int, int]]
    cid: str
    participants: str | None  # as stored (JSON)
    users: int | None
    content: bytes  # the link's fields between seq and spent_after, encoded (see _ledger_chain.encode)


class _Mirror:
    """The segments and profiles as a handle last verified them against the chain (under the lock).

    Built by one full read the first time another connection is found to have written; then kept
    up to date by the handle's own writes (undone if the transaction rolls back) and, after other
    processes' charges, by re-reading only the id ranges their runs touched (a charge on [a, b)
    changes only segments overlapping or adjoining [a, b)) and the profiles added since (profile
    rows are only ever inserted). Its two sums must equal the state row's digests; a charge then
    reads profiles from it and compares the segment rows the database returns with it, so a row
    edited anywhere, inside or outside the refreshed ranges, is either caught or not used."""

    def __init__(self, chain: Chain, seq: int) -> None:
        self.chain = chain
        self.seq = seq  # the last charge the mirror reflects
        self.segments: dict[int, tuple[int, int, int | None]] = {}  # start -> (stop, profile, term or None: not hashed yet)
        self.starts: list[int] = []
        self._segment_sum = 0  # the terms of the hashed segments only
        self._unhashed: set[int] = set()  # starts of segments whose term is not computed yet (see segment_sum)
        self.profiles: dict[int, tuple[str, float, int, int]] = {}  # id -> (key, spend, releases, term)
        self.pid_of_key: dict[str, int] = {}
        self.profile_sum = 0
        self.max_pid = 0
        self._undo: list[tuple] | None = None

    def begin(self) -> None:
        self._undo = []

    def end(self, committed: bool) -> None:
        undo, self._undo = self._undo, None
        if not committed and undo:
            for op in reversed(undo):
                if op[0] == "segment+":
                    self._remove_segment(op[1], log=False)
                elif op[0] == "segment-":
                    self._add_segments([op[1][:3]], log=False, terms=[op[1][3]])
                else:
                    pid = op[1]
                    key, _, _, term = self.profiles.pop(pid)
                    self.pid_of_key.pop(key, None)
                    self.profile_sum -= term
                    self.max_pid = op[2]

    @property
    def segment_sum(self) -> int:
        """The sum of every segment's term. A segment's term is computed only here, when the sum is
        asked for (each time it is compared with the state row's digest): segments added and removed
        again in between (other processes' charges applied in a batch rewrite the same ranges over
        and over) are never hashed. The sum is the same as hashing each row when it is added: the
        terms are a pure function of the rows, and a removed unhashed row had contributed nothing."""
        if self._unhashed:
            segments, chosen = self.segments, sorted(self._unhashed)
            rows = [(start, *segments[start][:2]) for start in chosen]
            for row, term in zip(rows, self.chain.segments(rows)):
                segments[row[0]] = (row[1], row[2], term)
                self._segment_sum += term
            self._unhashed.clear()
        return self._segment_sum

    def term_of(self, row: tuple[int, int, int]) -> int | None:
        """The term of segment ``row`` (start, stop, profile) if the copy holds that very row and has
        hashed it (a term is a pure function of the row: the same value hashing it again gives)."""
        held = self.segments.get(row[0])
        if held is None or held[0] != row[1] or held[1] != row[2]:
            return None
        return held[2]

    def _add_segments(self, rows: list[tuple[int, int, int]], log: bool = True, terms: Sequence[int | None] | None = None) -> None:
        for i, row in enumerate(rows):
            start = row[0]
            if start in self.segments:
                raise KeyError(start)
            term = None if terms is None else terms[i]
            self.segments[start] = (row[1], row[2], term)
            bisect.insort(self.starts, start)
            if term is None:
                self._unhashed.add(start)
            else:
                self._segment_sum += term
            if log and self._undo is not None:
                self._undo.append(("segment+", start))

    def add_segments(self, rows: Sequence[Sequence[int]], terms: Sequence[int | None] | None = None) -> None:
        """Add segment rows; ``terms``, when given, their terms as :meth:`Chain.segments` computes
        them (None for one not known: it is hashed when :attr:`segment_sum` is next asked for)."""
        self._add_segments([tuple(r) for r in rows], terms=terms)

    def _remove_segment(self, start: int, log: bool = True) -> None:
        stop, pid, term = self.segments.pop(start)
        del self.starts[bisect.bisect_left(self.starts, start)]
        if term is None:
            self._unhashed.discard(start)
        else:
            self._segment_sum -= term
        if log and self._undo is not None:
            self._undo.append(("segment-", (start, stop, pid, term)))

    def remove_segment(self, start: int) -> None:
        if start in self.segments:
            self._remove_segment(start)

    def replace(self, old: Sequence[int], rows: Sequence[Sequence[int]], terms: Sequence[int | None] | None = None) -> None:
        """:meth:`remove_segment` of each start in ``old`` then :meth:`add_segments` of ``rows``, in
        one loop (a charge applied to the copy rewrites ~7 segments; the calls cost more than the work)."""
        segments, starts, unhashed, undo = self.segments, self.starts, self._unhashed, self._undo
        for start in old:
            held = segments.pop(start, None)
            if held is None:
                continue
            del starts[bisect.bisect_left(starts, start)]
            if held[2] is None:
                unhashed.discard(start)
            else:
                self._segment_sum -= held[2]
            if undo is not None:
                undo.append(("segment-", (start, *held)))
        for i, (start, stop, pid) in enumerate(rows):
            if start in segments:
                raise KeyError(start)
            term = None if terms is None else terms[i]
            segments[start] = (stop, pid, term)
            bisect.insort(starts, start)
            if term is None:
                unhashed.add(start)
            else:
                self._segment_sum += term
            if undo is not None:
                undo.append(("segment+", start))

    def near(self, a: int, b: int, adjoining: bool) -> list[tuple[int, int, int]]:
        """The segments overlapping [a, b) (and, if ``adjoining``, those ending at a or starting at b)."""
        i = bisect.bisect_left(self.starts, a)
        if i > 0:
            stop = self.segments[self.starts[i - 1]][0]
            if stop > a or (adjoining and stop == a):
                i -= 1
        j = (bisect.bisect_right if adjoining else bisect.bisect_left)(self.starts, b)
        return [(start, *self.segments[start][:2]) for start in self.starts[i:j]]

    def add_profiles(self, rows: Sequence[Sequence[Any]]) -> None:
        for pid, key, spend, releases in rows:
            if pid in self.profiles:
                raise KeyError(pid)
            term = self.chain.profile(pid, key, spend, releases)
            self.profiles[pid] = (key, spend, releases, term)
            self.pid_of_key[key] = pid
            self.profile_sum += term
            if self._undo is not None:
                self._undo.append(("profile", pid, self.max_pid))
            self.max_pid = max(self.max_pid, pid)

    def rows_for(self, a: int, b: int) -> list[tuple[int, int, int]]:
        """The rows _plan's query returns for [a, b): the two segments starting at or before a,
        those starting in (a, b], and the first one starting after b."""
        i = bisect.bisect_right(self.starts, a)
        j = bisect.bisect_right(self.starts, b)
        chosen = self.starts[max(0, i - 2):i] + self.starts[i:j] + self.starts[j:j + 1]
        return [(start, *self.segments[start][:2]) for start in chosen]

    def digests(self) -> tuple[str, str]:
        return set_hex(self.segment_sum), set_hex(self.profile_sum)


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


def _bounded(participants: Any) -> Any:
    """A range of user ids refused unless it lies in [0, EVERYONE) (a range past 2^63 has no
    length in Python: it raised OverflowError, not the ValueError naming it)."""
    if isinstance(participants, range) and not (0 <= participants.start <= EVERYONE and 0 <= participants.stop <= EVERYONE):
        raise AccountingError("participants", f"range({participants.start}, {participants.stop})", f"user ids in [0, 2^62 = {EVERYONE})")
    return participants


def _checked_label(label: Any) -> str:
    """A charge's label: text that UTF-8 can store (a lone surrogate, e.g. from an undecodable
    command line, raised a raw UnicodeEncodeError from the driver)."""
    if not isinstance(label, str):
        raise AccountingError("label", label, "a string")
    try:
        label.encode("utf-8")
    except UnicodeEncodeError as error:
        raise AccountingError("label", label.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")[:80],
                              f"text UTF-8 can encode ({error.reason} at position {error.start})") from None
    return label


def _stored_participants(participants: Any) -> Any:
    """Participants as stored: null (everyone), {"range": [a, b]}, or an id array as its runs
    {"runs": [[a, b], ...]} (a run's wrapped-around batch is two runs, not millions of ids)."""
    if participants is None:
        return None
    if isinstance(participants, range):
        return {"range": [participants.start, participants.stop]}
    return {"runs": [list(r) for r in _runs(participants)]}


def _stored_text(participants: Any) -> str:
    """:func:`_stored_participants` as its JSON text (a range written directly: the common case,
    and json.dumps costs more than the rest of a charge's encoding)."""
    if isinstance(participants, range):
        return f'{{"range": [{participants.start}, {participants.stop}]}}'
    return json.dumps(_stored_participants(participants))


def _runs_of_stored(stored: Any) -> list[tuple[int, int]]:
    if stored is None:
        return [(0, EVERYONE)]
    if "range" in stored:
        return [tuple(stored["range"])]
    return [tuple(r) for r in stored["runs"]]


def _runs_of_text(text: str) -> list[tuple[int, int]]:
    """:func:`_runs_of_stored` of a stored participants text: a range as :func:`_stored_text` writes
    it is read directly (json.loads costs more than applying the charge), anything else by JSON."""
    if text.startswith('{"range": [') and text.endswith("]}"):
        a, _, b = text[11:-2].partition(", ")
        if a.isascii() and b.isascii() and a.isdigit() and b.isdigit():  # ASCII digits only: int() also takes "+1", " 1", "1_0", "٣"
            return [(int(a), int(b))]
    return _runs_of_stored(json.loads(text))


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


def _merged(pieces: list[tuple[int, int, str, int | None]], segments: list[list[int]],
            rows: Sequence[tuple[int, int, int]]) -> tuple[list[int], list[list[int]]]:
    """How a charge's pieces (with ``segments``: their [start, stop, profile id]) replace the
    ``rows`` it read: (the starts of the rows deleted, the rows inserted). Pieces are merged with
    each other and with the untouched neighbours when they carry the same profile (round-robin
    batches of one guarantee then stay a handful of segments). Shared by the charge that writes
    the tables and by the handles that apply it to their copies (:meth:`DurableLedger._apply_appended`)."""
    old = sorted({p[3] for p in pieces if p[3] is not None})
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
    return sorted(set(old)), merged


def _key_of(multiset: dict[int, int]) -> str:
    return ",".join(f"{g}:{n}" for g, n in sorted(multiset.items()))


def _multiset_of(key: str) -> dict[int, int]:
    if not key:
        return {}
    return {int(g): int(n) for g, n in (item.split(":") for item in key.split(","))}


def _worst_of(budget: Budget, guarantees: Sequence[Any]) -> Any:
    """One guarantee at least as costly as each of ``guarantees`` in the budget's notion (so that k
    charges of any of them compose to at most k of it): the guarantee itself when there is one,
    else the largest pure eps, the largest rho, or the pointwise maximum of the RDP curves."""
    distinct = list(dict.fromkeys(guarantees))
    if not distinct:
        raise AccountingError("guarantees", guarantees, "at least one guarantee a batch may be charged")
    if len(distinct) == 1:
        return distinct[0]
    if isinstance(budget, PureDP):
        return PureDP(max(compose_canonical(budget, [(g, 1)]) for g in distinct))
    if isinstance(budget, ZCDP):
        return ZCDP(max(compose_canonical(budget, [(g, 1)]) for g in distinct))
    if any(isinstance(g, ApproxDP) for g in distinct):
        raise AccountingError("guarantees", distinct, "guarantees with RDP curves (approximate-DP charges have no worst curve)")
    curves = [g.to_rdp() if isinstance(g, (PureDP, ZCDP)) else g if isinstance(g, RDP) else g.rdp() for g in distinct]
    return curves[0].parallel(*curves[1:])


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
    head: str = ""
    chain: str = ""

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
            "chain": self.chain,
            "head": self.head,
            "disagreements": list(self.disagreements),
        }


def _checked_head(head: Any) -> str | None:
    """A pinned head digest: 64 hex digits (a chain link, as `ledger show` prints it), or None."""
    if head is None:
        return None
    if not isinstance(head, str) or len(head.strip()) != 64 or any(c not in "0123456789abcdef" for c in head.strip().lower()):
        raise AccountingError("expect_head", head, "a chain link: 64 hex digits, as `dpverify ledger show` prints the head")
    return head.strip().lower()


def _tampered_hint(url: str) -> str:
    return (f"nothing was charged; inspect it with `dpverify ledger verify {url}` and `dpverify ledger show {url}`, "
            "and restore it from a backup you trust")


def _reconnecting(method: Callable) -> Callable:
    """A read of a PostgreSQL ledger survives a lost connection: reconnect (bounded) and read again."""

    @functools.wraps(method)
    def wrapper(self: "DurableLedger", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except ConnectionLost:
            self._store.reconnect()
            return method(self, *args, **kwargs)

    return wrapper


class DurableLedger(Ledger):
    """A :class:`Ledger` kept in a database; open it with :meth:`Ledger.open`.

    Every public method reads the database, so several processes (or machines, with PostgreSQL)
    sharing one ledger see each other's charges; :meth:`charge` is one atomic check-and-charge.
    ``integrity`` lists what the checks on open found (empty for a sound ledger; a ledger opened
    for writing is refused unless it is empty).
    """

    stores_urls = True  # Ledger.open dispatches here (see Ledger.__init_subclass__)

    def __init__(self, store: Store, budget: Budget, name: str, meta: dict, chain: Chain) -> None:
        super().__init__(budget, name=name)
        self._store = store
        self.url = store.shown  # what messages and summaries show (never a password)
        self._limit = _main_parameter(budget)
        self._chain = chain
        self.ledger_id = meta["ledger_id"]
        self._genesis = chain.genesis(self.ledger_id, meta["budget"], meta.get("name", ""), meta.get("format", LEDGER_FORMAT))
        self._witness = Witness(store.identity())
        # the creation record the witness binds to the database's location
        self._identity = {"ledger_id": self.ledger_id, "created_at": str(meta.get("created_at", meta.get("upgraded_at", "")))}
        self._expect_head: str | None = None
        self._known: _Head | None = None
        self._appended: list[tuple[_Head, _Head]] = []  # stretches of the chain other processes wrote, to check
        self.integrity: tuple[str, ...] = ()
        # committed rows never change, so these caches stay valid across other processes' charges
        self._gid_of_spec: dict[str, int] = {}
        self._spec_of_gid: dict[int, str] = {}
        self._guarantee_of_gid: dict[int, Any] = {}
        self._profile_of_pid: dict[int, tuple[str, float]] = {}
        self._pid_of_key: dict[str, tuple[int, float]] = {}
        self._spend_of_key: dict[str, float] = {}  # by profile key (see _end_pending: a refused charge's new ids)
        self._plus_of: dict[tuple[str, int], str] = {}  # see _plus
        self._spec_by_object: dict[int, tuple[Any, str]] = {}  # see _spec_of_object
        # rows inserted by the transaction under way (never cached: a rollback frees their ids),
        # and profile keys found absent under the lock
        self._pending_gids: dict[int, tuple[str, Any]] = {}
        self._pending_pids: dict[int, tuple[str, float]] = {}
        self._pending_keys: dict[str, tuple[int, float]] = _NO_TRANSACTION
        self._absent_keys: set[str] = set()
        self._sums: list[int] = [0, 0]  # the segments' and profiles' set digests, as integers, inside a charge
        self._terms: dict[tuple[int, int, int], int] = {}  # see _segments_delta
        self._added_terms: list[int] = []  # the terms of the rows _segments_delta last added (for the mirror)
        self._mirror: _Mirror | None = None  # see _Mirror and _check_derived
        self._recheck = False  # after a refusal: the next charge reads and checks the tables whole
        # inside a charge: reads sent with the state row (see _locked_state), each used once
        self._charges_ahead: tuple[int, list[tuple]] | None = None
        self._plan_ahead: tuple[tuple[int, int], list[tuple]] | None = None
        self._checked_runs: dict[int, tuple[int, str]] = {}  # (guarantee, participants) of rows _check_appended verified, by seq
        self._in_charge = False
        self._prepaid: list[tuple[Any, Any, str, str]] = []  # see prepay

    # ---- opening --------------------------------------------------------------------------------

    @classmethod
    def connect(cls, url: str, budget: Budget | None = None, *, name: str = "", read_only: bool = False,
                create: bool = False, expect_head: str | None = None) -> "DurableLedger":
        expect_head = _checked_head(expect_head)
        if budget is not None and not isinstance(budget, (PureDP, ZCDP, ApproxDP)):
            raise AccountingError("budget", budget, "a PureDP, ZCDP or ApproxDP budget")
        chain = Chain.from_environment()
        store = connect(url, read_only=read_only, create=create)
        try:
            meta, created = cls._read_meta(store), False
            if meta is None:
                meta = cls._create_in(store, url, budget, name, chain, read_only=read_only, create=create)
                created = meta.pop("_created", False)
            stored_budget = cls._check_meta(store, meta, chain)
            if budget is not None and budget != stored_budget:
                raise AccountingError("budget", budget, f"the ledger's own budget {stored_budget} (fixed when the ledger at {store.shown} was created)")
            if not read_only:
                store.became_ledger()
            ledger = cls(store, stored_budget, meta.get("name", ""), meta, chain)
            ledger._expect_head = expect_head
            if created:
                ledger._witness_created()
            ledger.integrity = tuple(ledger._check_on_open())
            if ledger.integrity and not read_only:
                raise AccountingError("ledger", store.shown, "a ledger that passes its integrity check (found: "
                                      + "; ".join(ledger.integrity[:3]) + ("; ..." if len(ledger.integrity) > 3 else "") + ")",
                                      _tampered_hint(store.shown))
            return ledger
        except BaseException:
            store.close()
            raise

    @staticmethod
    def _read_meta(store: Store) -> dict | None:
        """The ledger's header, or None when the database holds no ledger (read only: no writes)."""
        if "dpverify_meta" not in store.tables():
            return None
        with store.guard("reading the ledger's header (table dpverify_meta)"):
            meta = dict(store.all("SELECT key, value FROM dpverify_meta"))
        if "schema_version" not in meta:
            raise store.error("a dpverify ledger (table dpverify_meta has no field schema_version)",
                              "the header is damaged or the table belongs to something else: nothing was written")
        return meta

    @classmethod
    def _create_in(cls, store: Store, url: str, budget: Budget | None, name: str, chain: Chain, *, read_only: bool, create: bool) -> dict:
        if read_only:
            raise store.error("an existing dpverify ledger (this database holds none)", "check the URL")
        others = sorted(store.tables())
        if others and not store.fresh:
            raise store.error(f"a database that holds a dpverify ledger or nothing (it holds other tables: {', '.join(others[:5])})",
                              "nothing was written; give the ledger a database (or SQLite file) of its own")
        if not create:
            raise store.error("an existing dpverify ledger (the database is empty)",
                              "to start a new ledger there, pass create=True (CLI: --create)")
        if budget is None:
            raise AccountingError("budget", None, f"a budget to create the new ledger at {store.shown}")
        with store.creating():
            tables = store.tables()
            if "dpverify_meta" in tables:  # another process created it while we waited for the lock
                return dict(store.all("SELECT key, value FROM dpverify_meta"))
            if tables:
                raise store.error(f"a database that holds a dpverify ledger or nothing (it holds {', '.join(sorted(tables)[:5])})",
                                  "nothing was written; give the ledger a database of its own")
            store.create()
            ledger_id = uuid.uuid4().hex
            spec = guarantee_spec(budget)
            meta = {"schema_version": str(SCHEMA_VERSION), "format": LEDGER_FORMAT, "budget": spec, "name": name,
                    "ledger_id": ledger_id, "chain": chain.kind, "created_at": _now()}
            if chain.keyed:
                meta["key_check"] = chain.key_check(ledger_id)
            store.run_many("INSERT INTO dpverify_meta (key, value) VALUES (?, ?)", list(meta.items()))
            genesis = chain.genesis(ledger_id, spec, name, LEDGER_FORMAT)
            store.run("INSERT INTO dpverify_state (id, worst, charges, cursor, head, segments, profiles, last_seq) "
                      "VALUES (1, NULL, 0, 0, ?, ?, ?, 0)", (genesis, EMPTY_SET, EMPTY_SET))
        return {**meta, "_created": True}

    @staticmethod
    def _check_meta(store: Store, meta: dict, chain: Chain) -> Budget:
        """The stored budget, once the schema, the header's fields and the key are known good."""
        try:
            version = int(meta["schema_version"])
        except ValueError:
            raise store.error(f"a dpverify ledger (table dpverify_meta, field schema_version holds {meta['schema_version'][:40]!r})",
                              "the header is damaged: restore the ledger from a backup") from None
        if version > SCHEMA_VERSION:
            raise AccountingError("schema_version", version, f"<= {SCHEMA_VERSION}",
                                  "this ledger was written by a newer dpverify; upgrade dpverify to open it")
        if version < SCHEMA_VERSION:
            raise AccountingError("schema_version", version, f"{SCHEMA_VERSION} (a ledger with a hash chain)",
                                  f"upgrade it once with `dpverify ledger upgrade {store.shown}` (it verifies the ledger first)")
        for key in ("ledger_id", "chain"):
            if key not in meta:
                raise store.error(f"a dpverify ledger (table dpverify_meta has no field {key})",
                                  "the header is damaged: restore the ledger from a backup; nothing was written")
        budget = DurableLedger._budget_of(store, meta)
        kind = meta["chain"]
        if kind == "hmac-sha256" and not chain.keyed:
            raise store.error(f"the key of this keyed ledger in the environment variable {KEY_VARIABLE}",
                              "its chain is an HMAC: without the key it cannot be checked, so it is not opened")
        if kind == "sha256" and chain.keyed:
            raise store.error(f"a keyed ledger, since {KEY_VARIABLE} is set (this ledger's chain has no key)",
                              f"unset {KEY_VARIABLE} to use it, or replay it into a new keyed ledger with `dpverify ledger export` "
                              "and `import`; a keyed ledger never silently becomes an unkeyed one")
        if kind not in ("sha256", "hmac-sha256"):
            raise store.error(f"a known chain kind (table dpverify_meta, field chain holds {kind[:40]!r})",
                              "the header is damaged: restore the ledger from a backup")
        if chain.keyed and meta.get("key_check") != chain.key_check(meta["ledger_id"]):
            raise store.error(f"the key this ledger was created with (the key in {KEY_VARIABLE} does not match)",
                              "set the ledger's own key; nothing was read or written")
        return budget

    @staticmethod
    def _budget_of(store: Store, meta: dict) -> Budget:
        if "budget" not in meta:
            raise store.error("a dpverify ledger (table dpverify_meta has no field budget)",
                              "the header is damaged: restore the ledger from a backup; nothing was written")
        try:
            budget = guarantee_from_dict(json.loads(meta["budget"]))
        except (ValueError, KeyError, TypeError) as error:
            raise store.error(f"a readable budget (table dpverify_meta, field budget holds {meta['budget'][:60]!r}: {error})",
                              "the header is damaged: restore the ledger from a backup; nothing was written") from None
        if not isinstance(budget, (PureDP, ZCDP, ApproxDP)):
            raise store.error(f"a PureDP, ZCDP or ApproxDP budget (table dpverify_meta, field budget holds {meta['budget'][:60]!r})",
                              "the header is damaged: restore the ledger from a backup; nothing was written")
        return budget

    @classmethod
    def upgrade(cls, url: str) -> "DurableLedger":
        """Upgrade a schema-1 ledger (before the chain) in place to schema 2, once it verifies.

        The accountant's replay (the half of :meth:`verify` that schema 1 allows) must agree with
        the stored segments, profiles and worst spend, or nothing is written. Then, in one
        transaction under the ledger's lock: each charge gets an id and a link chained from the
        genesis (keyed if :data:`KEY_VARIABLE` is set), the last one commits to the derived
        tables' digests, and the header gets a ledger id and the chain's kind. The chain vouches
        for the ledger from the upgrade on; earlier rows carry ``derived = "schema-1"`` (what
        happened before, without a chain, cannot be told apart). Returns the ledger, opened for
        writing; a ledger already at schema 2 is just opened."""
        chain = Chain.from_environment()
        store = connect(url, read_only=False, create=False)
        try:
            meta = cls._read_meta(store)
            if meta is None:
                raise store.error("an existing dpverify ledger (this database holds none)", "check the URL")
            if meta["schema_version"] == str(SCHEMA_VERSION):
                store.close()
                return cls.connect(url)
            if meta["schema_version"] != "1":
                raise AccountingError("schema_version", meta["schema_version"], "1 (the schema this upgrade reads)")
            budget = cls._budget_of(store, meta)
            identity = {"ledger_id": uuid.uuid4().hex, "chain": chain.kind, "format": meta.get("format", LEDGER_FORMAT)}
            ledger = cls(store, budget, meta.get("name", ""), {**meta, **identity}, chain)
            problems, _ = ledger._replay()
            if problems:
                raise store.error(f"a schema-1 ledger that verifies before it is upgraded (found: {'; '.join(problems[:3])})",
                                  "nothing was written; `dpverify ledger verify` lists every disagreement")
            with store.creating():
                ledger._add_chain(identity)
        finally:
            store.close()
        return cls.connect(url)

    def _add_chain(self, identity: dict) -> None:
        store, chain = self._store, self._chain
        worst, count, _ = store.one("SELECT worst, charges, cursor FROM dpverify_state WHERE id = 1" + store.lock_suffix)
        for statement in ("ALTER TABLE dpverify_charges ADD COLUMN cid TEXT NOT NULL DEFAULT ''",
                          "ALTER TABLE dpverify_charges ADD COLUMN derived TEXT NOT NULL DEFAULT ''",
                          "ALTER TABLE dpverify_charges ADD COLUMN link TEXT NOT NULL DEFAULT ''",
                          "ALTER TABLE dpverify_state ADD COLUMN head TEXT NOT NULL DEFAULT ''",
                          f"ALTER TABLE dpverify_state ADD COLUMN segments TEXT NOT NULL DEFAULT '{EMPTY_SET}'",
                          f"ALTER TABLE dpverify_state ADD COLUMN profiles TEXT NOT NULL DEFAULT '{EMPTY_SET}'",
                          "ALTER TABLE dpverify_state ADD COLUMN last_seq BIGINT NOT NULL DEFAULT 0"):
            store.run(statement)
        segments = set_of(chain.segments(store.all("SELECT start, stop, profile FROM dpverify_segments")))
        profiles = set_of([chain.profile(*row) for row in store.all("SELECT id, key, spend, releases FROM dpverify_profiles")])
        specs = dict(store.all("SELECT id, spec FROM dpverify_guarantees"))
        rows = store.all("SELECT seq, label, guarantee, participants, users, spent_after, recorded_at FROM dpverify_charges ORDER BY seq")
        link, seq = self._genesis, 0
        for position, (seq, label, gid, participants, users, after, at) in enumerate(rows, 1):
            cid = uuid.uuid4().hex
            derived = chain.derived(segments, profiles, worst, count) if position == len(rows) else "schema-1"
            link = chain.link(link, [seq, cid, label, specs[gid], participants, users, after, at, derived])
            store.run("UPDATE dpverify_charges SET cid = ?, derived = ?, link = ? WHERE seq = ?", (cid, derived, link, seq))
        store.run("UPDATE dpverify_state SET head = ?, segments = ?, profiles = ?, last_seq = ? WHERE id = 1", (link, segments, profiles, seq))
        store.run("UPDATE dpverify_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
        extra = {**identity, "upgraded_at": _now()}
        if chain.keyed:
            extra["key_check"] = chain.key_check(identity["ledger_id"])
        store.run_many("INSERT INTO dpverify_meta (key, value) VALUES (?, ?)", [(k, v) for k, v in extra.items() if k != "format"])
        if "format" not in dict(store.all("SELECT key, value FROM dpverify_meta")):
            store.run("INSERT INTO dpverify_meta (key, value) VALUES ('format', ?)", (identity["format"],))

    @classmethod
    def accept_restore(cls, url: str, *, expect_head: str | None = None) -> dict:
        """Accept the ledger at ``url`` as it is now, after a restore made on purpose (a backup, a
        copy that lost its last commits in a power cut, a ledger replaced at this location): the
        witness of this location is replaced by the current head, and the decision is logged (one
        JSON line in ``accepted.log`` next to the witnesses, and the returned record).

        Only the witness is overruled: the ledger must pass every other check (the file, the
        whole chain, the derived tables' digests, the key of a keyed ledger, and ``expect_head``
        when given), or nothing is accepted. Charges recorded after the restored head are gone
        from the ledger; accepting says that their users' budget is no longer counted."""
        expect_head = _checked_head(expect_head)
        ledger = cls.connect(url, read_only=True)
        try:
            ledger._expect_head = expect_head
            problems, head = ledger._scan(use_witness=False)
            if problems:
                raise AccountingError("ledger", ledger.url, "a ledger that passes every check but the witness before its restore is "
                                      f"accepted (found: {'; '.join(problems[:3])})", _tampered_hint(ledger.url))
            try:
                before = ledger._witness.read()
            except WitnessBroken as error:
                before = {"broken": str(error)}
            if ledger._witness.path is None:
                raise AccountingError(WITNESS_VARIABLE, "off", "a witness directory to accept a restore into",
                                      "with the witness off there is nothing to accept: the ledger opens as it is")
            ledger._witness.replace(ledger._identity, head.charges, head.last_seq, head.link)
            record = {"accepted_at": _now(), "url": ledger.url, "location": ledger._witness.location, "witness": str(ledger._witness.path),
                      "before": before, "after": {**ledger._identity, "charges": head.charges, "seq": head.last_seq, "link": head.link}}
            record["log"] = ledger._log_acceptance(record)
            return record
        finally:
            ledger.close()

    def _witness_created(self) -> None:
        """This process has just created the ledger (``create=True`` on an empty database): the
        witness of the location starts from its genesis. A ledger this machine saw there before
        (moved or deleted since) is named in the acceptance log, so a fresh budget started where
        an old one vanished leaves a trace."""
        try:
            before = self._witness.read()
        except WitnessBroken as error:
            before = {"broken": str(error)}
        self._witness.replace(self._identity, 0, 0, self._genesis)
        if before is not None:
            self._log_acceptance({"created_at": _now(), "url": self.url, "location": self._witness.location, "witness": str(self._witness.path),
                                  "before": before, "after": {**self._identity, "charges": 0, "seq": 0, "link": self._genesis},
                                  "reason": "a new ledger created where this machine had seen another"})

    @staticmethod
    def _log_acceptance(record: dict) -> str:
        log = acceptance_log()
        try:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, sort_keys=True) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as error:
            raise WitnessBroken(WITNESS_VARIABLE, str(log), f"a writable acceptance log ({error.strerror or error})",
                                "the witness was replaced but the decision could not be logged") from None
        return str(log)

    def close(self) -> None:
        self._store.close()
        self._witness.close()

    def __enter__(self) -> "DurableLedger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def store(self) -> str:
        """Which database and durability settings."""
        return self._store.describe()

    # ---- integrity ------------------------------------------------------------------------------

    def _check_on_open(self) -> list[str]:
        """The storage engine's check, the whole chain and the derived tables' set digests, and the
        witness; sets the head later charges check incrementally from."""
        problems = self._store.integrity_problems()
        if problems:
            raise self._store.error(f"an undamaged SQLite ledger ({problems[0]})",
                                    "the file is damaged: nothing was charged; restore it from a backup, and "
                                    "inspect the damaged copy with the sqlite3 shell's .recover")
        problems, head = self._scan(baseline=True)
        self._known = head
        if not problems and head is not None:
            self._witness.record(self._identity, head.charges, head.last_seq, head.link, required=not self._store.read_only)
        return problems

    def _scan(self, use_witness: bool = True, baseline: bool = False) -> tuple[list[str], _Head | None]:
        """Recompute the chain over every charge row and the set digests of segments and profiles
        (hashes only), and compare them with the state row, the witness (``use_witness``) and the
        pinned head (``expect_head``)."""
        chain, problems = self._chain, []
        witness, way_out = None, (f"if you restored or replaced it on purpose, accept it with "
                                  f"`dpverify ledger accept-restore {self.url}` (logged)")
        if use_witness:
            try:
                witness = self._witness.read()
            except WitnessBroken as error:
                problems.append(f"the witness of this ledger's head is broken: {error}")
        if witness is not None and (witness["ledger_id"], witness["created_at"]) != (self._identity["ledger_id"], self._identity["created_at"]):
            problems.append(f"this machine saw ledger {witness['ledger_id']} (created {witness['created_at'] or 'before schema 2'}) at "
                            f"this location (witness {self._witness.path}); it now holds ledger {self.ledger_id} (created "
                            f"{self._identity['created_at'] or 'before schema 2'}): it was replaced or rewritten; {way_out}")
            witness = None
        pinned, pinned_seen = self._expect_head, self._expect_head is not None and self._expect_head == self._genesis
        with self._store.guard("checking the ledger's chain"), self._store.read():
            if baseline:
                self._store.baseline()  # what this scan reads is what later charges compare with
            state = self._store.one("SELECT worst, charges, head, segments, profiles, last_seq FROM dpverify_state WHERE id = 1")
            if state is None:
                return ["table dpverify_state has lost its row"], None
            worst, count, head, segments, profiles, last_seq = state
            specs = dict(self._store.all("SELECT id, spec FROM dpverify_guarantees"))
            link, seen, derived, position, witnessed = self._genesis, 0, None, 0, None
            for seq, cid, label, gid, participants, users, after, at, derived, stored in self._store.rows(
                    f"SELECT {_CHARGE_COLUMNS} FROM dpverify_charges ORDER BY seq"):
                seen += 1
                expected = chain.link(link, [seq, cid, label, specs.get(gid), participants, users, after, at, derived])
                if expected != stored and len(problems) < _REPORTED:
                    problems.append(f"charge {seq} ({label or 'unlabelled'}) does not match its link: its row, its guarantee "
                                    f"{gid} or the charge before it was changed" + ("" if gid in specs else " (guarantee missing)"))
                link, position = stored, seq
                if witness is not None and seq == witness["seq"]:
                    witnessed = stored
                if stored == pinned and expected == stored:
                    pinned_seen = True
            seg_sum = set_of(chain.segments(map(tuple, self._store.rows("SELECT start, stop, profile FROM dpverify_segments"))))
            prof_sum = set_of(chain.profile(*row) for row in self._store.rows("SELECT id, key, spend, releases FROM dpverify_profiles"))
        if seen != count or position != last_seq:
            problems.append(f"table dpverify_state counts {count} charges up to seq {last_seq}, table dpverify_charges holds {seen} up to seq {position}")
        if link != head:
            problems.append("the chain's last link differs from the head in dpverify_state (charges were removed or rewritten)")
        if seg_sum != segments:
            problems.append("table dpverify_segments differs from its digest in dpverify_state (a segment was edited, added or deleted)")
        if prof_sum != profiles:
            problems.append("table dpverify_profiles differs from its digest in dpverify_state (a profile's spend or key was edited)")
        commitment = chain.derived(segments, profiles, worst, count) if count else None
        if count and derived != commitment:
            problems.append("the state row (worst spend, digests) differs from what the last charge committed to")
        if not count and (worst is not None or segments != EMPTY_SET or profiles != EMPTY_SET):
            problems.append("the state row records spend or segments, but the ledger holds no charge")
        if witness is not None:
            if witness["charges"] > seen:
                problems.append(f"this machine saw {witness['charges']} charges in this ledger (witness {self._witness.path}); "
                                f"it now holds {seen}: it was rolled back or rewritten; {way_out}")
            elif witnessed != witness["link"] and witness["charges"] > 0:
                problems.append(f"charge {witness['seq']} differs from the one this machine saw (witness {self._witness.path}): "
                                f"the history was rewritten; {way_out}")
        if pinned is not None and not pinned_seen:
            problems.append(f"the pinned head {pinned} (expect_head) is not a link of this ledger's chain: its history was rewritten, "
                            "replaced or rolled back to before that head")
        return problems, _Head(count, last_seq, head, segments, profiles, worst)

    def _catch_up(self, state: tuple) -> bool:
        """Under the lock, the incremental check: the state row either is the one this handle last
        saw (False), or has moved forward by the rows other processes appended (True). Up to
        :data:`_CHECKED_UNDER_LOCK` of them are checked at once (two writers: an edited row is
        refused before this charge); a longer stretch (many writers queueing for the lock) is
        queued for :meth:`_check_appended`, which runs before this handle's next charge, outside
        the lock, so contention does not lengthen the time the lock is held. Anything else (fewer
        charges, a state row changed without a charge) is refused."""
        worst, count, head, segments, profiles, last_seq = state
        known = self._known
        if (count, head, last_seq) == (known.charges, known.link, known.last_seq):
            if (segments, profiles, worst) != (known.segments, known.profiles, known.worst):
                self._refuse("the state row (worst spend, digests) changed without a charge")
            return False
        if count <= known.charges or last_seq <= known.last_seq:
            self._refuse(f"it held {known.charges} charges up to seq {known.last_seq} and now holds {count} up to seq {last_seq}: "
                         "charges were removed or the state row was edited")
        current = _Head(count, last_seq, head, segments, profiles, worst)
        self._appended.append((known, current))
        self._known = current
        if count - known.charges <= _CHECKED_UNDER_LOCK:
            self._check_appended()
        return True

    def _check_derived(self, state: tuple) -> None:
        """Under the lock, when other charges were recorded since this handle's last look (or,
        while it has no verified copy of the tables, when another connection wrote anything:
        SQLite's data version, PostgreSQL's transaction ids): the segments and profiles this charge
        will read must be the ones the chain vouches for. The rows appended meanwhile are checked
        now (their links up to the state row's head, whose digests the last of them commits to);
        then the handle's :class:`_Mirror` is brought up to the state row and its sums compared
        with the state row's digests. The first time it is built by one full read; then the other
        charges are applied to it as they were applied to the tables (:meth:`_apply_appended`: no
        read but of the profiles they added, and only when the profiles' digest moved), and if
        that does not reproduce the digests (another version's merge rule, a forged row) the
        ranges they touched are read again (:meth:`_refresh_regions`). An edit made while this
        handle was open (a segment deleted or re-pointed, a profile's spend lowered) is refused
        here, or, outside the refreshed ranges, when a charge reads it (:meth:`_plan`); the
        mirror, not the edited row, is used."""
        self._check_appended()
        last_seq, mirror = state[5], self._mirror
        self._mirror = None  # until it checks out
        if mirror is not None:
            mirror._undo = None  # others' committed rows stay whatever becomes of this transaction
        with self._store.guard("checking the ledger's segments and profiles"):
            if mirror is None or last_seq - mirror.seq > _REFRESHED_CHARGES:
                mirror = _Mirror(self._chain, last_seq)
                mirror.add_segments(self._store.all("SELECT start, stop, profile FROM dpverify_segments"))
                mirror.add_profiles(self._store.all("SELECT id, key, spend, releases FROM dpverify_profiles"))
            elif last_seq > mirror.seq:
                known = self._checked_runs
                if all(seq in known for seq in range(mirror.seq + 1, last_seq + 1)):  # seqs have no gaps
                    appended = [known[seq] for seq in range(mirror.seq + 1, last_seq + 1)]
                else:
                    appended = [tuple(r) for r in self._store.all("SELECT guarantee, participants FROM dpverify_charges "
                                                                  "WHERE seq > ? AND seq <= ? ORDER BY seq", (mirror.seq, last_seq))]
                if set_hex(mirror.profile_sum) != state[4]:  # profile rows are only ever added
                    mirror.add_profiles(self._store.all("SELECT id, key, spend, releases FROM dpverify_profiles WHERE id > ?",
                                                        (mirror.max_pid,)))
                mirror.begin()
                if self._apply_appended(mirror, appended) and set_hex(mirror.segment_sum) == state[3]:
                    mirror._undo = None
                else:
                    mirror.end(committed=False)
                    ranges = sorted(r for _, stored in appended for r in _runs_of_stored(json.loads(stored)))
                    merged: list[list[int]] = []
                    for a, b in ranges:
                        if merged and a <= merged[-1][1]:
                            merged[-1][1] = max(merged[-1][1], b)
                        else:
                            merged.append([a, b])
                    self._refresh_regions(mirror, [tuple(m) for m in merged])
            mirror.seq = last_seq
        self._checked_runs = {}
        segments, profiles = mirror.digests()
        if segments != state[3]:
            self._refuse("table dpverify_segments differs from its digest in dpverify_state (a segment was edited, added or "
                         "deleted while this ledger was open)")
        if profiles != state[4]:
            self._refuse("table dpverify_profiles differs from its digest in dpverify_state (a profile was edited while this "
                         "ledger was open)")
        mirror._undo = [] if self._in_charge else None  # this transaction's own writes can be undone
        self._mirror, self._recheck = mirror, False
        # what the handle remembered of profiles may have come from edited rows: the mirror answers from now on
        self._profile_of_pid, self._pid_of_key = {}, {}

    def _apply_appended(self, mirror: _Mirror, appended: list[tuple[int, str]]) -> bool:
        """Apply other processes' charges ((guarantee id, participants as stored), in order) to the
        mirror as :meth:`_plan` and :meth:`_write_pieces` applied them to the tables: each run
        reads the rows the writer read (:meth:`_Mirror.rows_for`), splits them and merges them
        alike. False when a charge meets something the mirror cannot answer (a profile it lacks,
        unreadable participants, overlapping segments); the caller then reads the ranges instead.
        Whatever it computes is only believed once the mirror's sums equal the state row's digests."""
        profiles, pid_of_key = mirror.profiles, mirror.pid_of_key

        def key_of(pid: int) -> str:
            return profiles[pid][0]

        try:
            for gid, stored in appended:
                for a, b in _runs_of_text(stored):
                    rows = mirror.rows_for(a, b)
                    pieces, _ = self._pieces(rows, a, b, gid, key_of)
                    if not pieces:
                        continue
                    old, merged = _merged(pieces, [[start, stop, pid_of_key[key]] for start, stop, key, _ in pieces], rows)
                    mirror.replace(old, merged)
        except (KeyError, TypeError, ValueError):
            return False
        return True

    def _refresh_regions(self, mirror: _Mirror, intervals: list[tuple[int, int]]) -> None:
        """Replace the mirror's segments around each of ``intervals`` (disjoint, sorted), which
        other charges may have rewritten, by the database's. A charge on [a, b) rewrites only the
        segments overlapping or adjoining it, so each region starts as the hull of those (in both
        copies); when a segment of either copy reaches past that hull (charges one after another
        can move its ends) the regions grow and are read again, until no segment straddles an end.
        Outside the regions the copies agree unless someone edited a row, which the digests or a
        later read then catch. One query for all regions on PostgreSQL (usually once)."""
        found = self._segments_near(intervals, adjoining=True)
        hulls, theirs, covered = [], [], True
        for (a, b), rows in zip(intervals, found):
            lo, hi = min([a, *(r[0] for r in rows)]), max([b, *(r[1] for r in rows)])
            mine = mirror.near(a, b, adjoining=True) + mirror.near(lo, hi, adjoining=False)
            if any(r[0] < lo or r[1] > hi for r in mine):
                covered = False  # the mirror reaches past what was read: read the grown region
            hulls.append([min([lo, *(r[0] for r in mine)]), max([hi, *(r[1] for r in mine)])])
            theirs.append(rows)
        if covered and all(left[1] < right[0] for left, right in zip(hulls, hulls[1:])):
            # rows overlapping [lo, hi) are exactly the ones read: none can start inside a read row
            regions = list(zip(hulls, theirs))
        else:
            while True:
                merged: list[list[int]] = []
                for lo, hi in sorted(hulls):
                    if merged and lo <= merged[-1][1]:
                        merged[-1][1] = max(merged[-1][1], hi)
                    else:
                        merged.append([lo, hi])
                theirs = self._segments_near([tuple(h) for h in merged], adjoining=False)
                grown = False
                for hull, rows in zip(merged, theirs):
                    mine = mirror.near(hull[0], hull[1], adjoining=False)
                    lo = min([hull[0], *(r[0] for r in rows), *(r[0] for r in mine)])
                    hi = max([hull[1], *(r[1] for r in rows), *(r[1] for r in mine)])
                    if (lo, hi) != (hull[0], hull[1]):
                        hull[0], hull[1], grown = lo, hi, True
                hulls = merged
                if not grown:
                    break
            regions = list(zip(merged, theirs))
        for (lo, hi), rows in regions:
            for start, _, _ in mirror.near(lo, hi, adjoining=False):
                mirror.remove_segment(start)
        for _, rows in regions:
            mirror.add_segments([r for r in rows if r[0] not in mirror.segments])

    def _segments_near(self, intervals: list[tuple[int, int]], adjoining: bool) -> list[list[tuple]]:
        """For each [a, b) of ``intervals``, the segment rows overlapping it (and, if ``adjoining``,
        those ending at a or starting at b): the last one starting before a, if it reaches a, and
        those starting in [a, b) (or [a, b]), by the primary key (a condition on stop would scan
        the table). PostgreSQL: one query for all of them (a round trip each cost more)."""
        op = "<=" if adjoining else "<"
        before = "SELECT start, stop, profile FROM dpverify_segments WHERE start < {a} ORDER BY start DESC LIMIT 1"
        inside = "SELECT start, stop, profile FROM dpverify_segments WHERE start >= {a} AND start " + op + " {b}"
        if self._store.kind == "postgresql":
            out: list[list[tuple]] = [[] for _ in intervals]
            for i, start, stop, profile in self._store.all(
                    "SELECT r.i, s.start, s.stop, s.profile FROM unnest(?::bigint[], ?::bigint[]) WITH ORDINALITY AS r(a, b, i) "
                    f"CROSS JOIN LATERAL (({before.format(a='r.a')}) UNION ALL ({inside.format(a='r.a', b='r.b')})) AS s",
                    ([a for a, _ in intervals], [b for _, b in intervals])):
                out[i - 1].append((start, stop, profile))
        else:
            out = [[tuple(r) for r in self._store.all(f"SELECT * FROM ({before.format(a='?')}) AS l UNION ALL {inside.format(a='?', b='?')}",
                                                       (a, a, b))] for a, b in intervals]
        return [[r for r in rows if r[0] >= a or r[1] > a or (adjoining and r[1] == a)] for (a, _), rows in zip(intervals, out)]

    def _check_appended(self) -> None:
        """The queued stretches of rows other processes appended: each row must link to the one
        before, the last to the head the state row showed, and its derived digest to that state
        (one indexed read per stretch, hashes only)."""
        while self._appended:
            start, end = self._appended[0]
            ahead, self._charges_ahead = self._charges_ahead, None
            if ahead is not None and ahead[0] == start.last_seq:  # read with the state row (see _locked_state)
                rows = [r for r in ahead[1] if r[0] <= end.last_seq]
            else:
                with self._store.guard("checking the charges other processes appended"):
                    rows = self._store.all(f"SELECT {_CHARGE_COLUMNS} FROM dpverify_charges WHERE seq > ? AND seq <= ? ORDER BY seq",
                                           (start.last_seq, end.last_seq))
            link, derived = start.link, None
            for seq, cid, label, gid, participants, users, after, at, derived, stored in rows:
                if self._chain.link(link, [seq, cid, label, self._spec(gid), participants, users, after, at, derived]) != stored:
                    self._refuse(f"charge {seq} does not match its link")
                link = stored
                if self._mirror is not None and len(self._checked_runs) < _REFRESHED_CHARGES:
                    self._checked_runs[seq] = (gid, participants)  # (verified: the mirror's refresh uses them)
            if start.charges + len(rows) != end.charges or link != end.link:
                self._refuse("the charges appended since this process last looked do not lead to the head it saw")
            if derived != self._chain.derived(end.segments, end.profiles, end.worst, end.charges):
                self._refuse("the state row differed from what the last charge committed to")
            self._appended.pop(0)

    def _refuse(self, problem: str) -> None:
        # whatever this handle remembered may be what was edited: the next charge starts from a full
        # read checked against the digests (a retry of a refused charge was accepted on the edited
        # rows when the database showed no further write)
        self._mirror, self._recheck = None, True
        raise AccountingError("ledger", self.url, f"a ledger that passes its integrity check ({problem})", _tampered_hint(self.url))

    def _spec(self, gid: int) -> str | None:
        spec = self._spec_of_gid.get(gid)
        if spec is None:
            row = self._store.one("SELECT spec FROM dpverify_guarantees WHERE id = ?", (gid,))
            if row is None:
                return None
            spec = self._spec_of_gid[gid] = row[0]
        return spec

    # ---- charging -------------------------------------------------------------------------------

    def charge(self, guarantee: Any, participants: Any = None, *, label: str = "") -> None:
        """Check every affected user's prospective spend and record the charge, in one transaction;
        raise BudgetExceeded (the database unchanged) if any user would go over the budget.

        A charge equal (guarantee, participants, label) to the next one :meth:`prepay` recorded is
        already in the database: it is taken off the prepaid list instead of being charged twice."""
        if self._prepaid:
            g, p, l, _ = self._prepaid[0]
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
        cids = self.charge_many(items)
        self._prepaid.extend((g, p, l, cid) for (g, p, l), cid in zip(items, cids))

    def charge_many(self, items: Sequence[tuple[Any, Any, str]]) -> list[str]:
        """Record every charge in ``items`` (guarantee, participants, label), in order, in one
        transaction, or none of them: BudgetExceeded if any would take a user over the budget.
        Returns the charges' ids. A lost PostgreSQL connection is re-established (bounded by the
        URL's ``reconnect_timeout``) and the charge looked up by its id before it is retried, so it
        is recorded once."""
        self._check_writable()
        entries = []
        for guarantee, participants, label in items:
            entry = Charge(_guarantee_of(guarantee), _normalise_participants(_bounded(participants)), _checked_label(label))
            self._check_known(entry.guarantee)
            # guarantee_spec refuses a free-form RDP curve before any I/O
            spec, cid = self._spec_of_object(entry.guarantee), _charge_id()
            stored = _stored_text(entry.participants)
            users = None if entry.participants is None else len(entry.participants)
            entries.append(_Entry(entry, spec, _runs(entry.participants), cid, stored, users, encode([cid, entry.label, spec, stored, users])))
        if not entries:
            return []
        floor = self._known.last_seq  # this charge's rows, if committed, come after it
        for attempt in range(_ATTEMPTS):
            try:
                self._charge_transaction(entries)
                break
            except ConnectionLost:
                if attempt == _ATTEMPTS - 1:
                    raise
                self._store.reconnect()
                if self._recorded(entries[0].cid, floor):  # the commit went through before the connection broke
                    break
        return [e.cid for e in entries]

    def _recorded(self, cid: str, floor: int) -> bool:
        """Whether the charge with this id committed: it can only be among the rows after ``floor``,
        the last seq this handle knew before the charge (a range of the primary key)."""
        with self._store.guard("looking up an interrupted charge"):
            return self._store.one("SELECT seq FROM dpverify_charges WHERE seq > ? AND cid = ?", (floor, cid)) is not None

    def _charge_transaction(self, entries: list[_Entry]) -> None:
        self._check_appended()  # rows other processes appended, queued at this handle's last charge
        self._begin_pending()
        committed = False
        try:
            with self._store.write():
                state = self._locked_state(entries[0].runs[0])
                moved = self._catch_up(state)
                # with a verified mirror, only other charges (which move the state row) change what
                # it must hold: every row a charge reads is compared with it or served from it; without
                # one, anything another connection wrote must be checked (and after a refusal, always)
                if self._mirror is not None and not self._recheck:
                    if moved:
                        self._check_derived(state)
                elif self._recheck or self._store.changed_behind() or moved:
                    self._check_derived(state)
                worst, count, link, seq = state[0], state[1], state[2], state[5]
                self._sums = [int(state[3], 16), int(state[4], 16)]
                for entry in entries:
                    gid = self._gid(entry.spec)
                    prospective = -math.inf
                    # runs are disjoint: each is planned after the previous one is written (a write
                    # may merge segments the next run reads); a refusal rolls all of it back
                    for a, b in entry.runs:
                        pieces, spends, rows = self._plan(a, b, gid)
                        prospective = max([prospective, *spends])
                        if prospective > self._limit:
                            break
                        self._write_pieces(pieces, rows)
                    if prospective > self._limit:
                        raise BudgetExceeded(
                            f"charge {entry.charge.label or entry.spec} would raise a user's spend to {prospective:.6g}{_no_epsilon(prospective, self._budget)} against a "
                            f"budget of {_fmt(self._budget)}; the worst user's spend is "
                            f"{_fmt(None if worst is None else self._wrap(worst))}; the ledger is unchanged"
                        )
                    worst = prospective if worst is None else max(worst, prospective)
                    count, seq = count + 1, seq + 1
                    link, sums = self._write_charge(entry, gid, seq, worst, count, link)
                self._store.run("UPDATE dpverify_state SET worst = ?, charges = ?, head = ?, segments = ?, profiles = ?, last_seq = ? "
                                "WHERE id = 1", (worst, count, link, *sums, seq))
            committed = True
            self._known = _Head(count, seq, link, *sums, worst)
            if self._mirror is not None:
                self._mirror.seq = seq
        finally:
            self._end_pending(committed)
        try:
            self._witness.record(self._identity, count, seq, link)
        except WitnessBroken as error:
            raise WitnessBroken(error.name, error.value, error.allowed,
                                f"the charge was recorded (seq {seq}); {error.hint}") from None

    def _locked_state(self, first_run: tuple[int, int]) -> tuple:
        """The state row, read under its lock. With a verified mirror, the reads a charge makes
        next are sent with it (PostgreSQL: in one round trip, executed in order once the lock is
        held, so they see what the locked state row sees): the charge rows appended after this
        handle's head, and the segments the charge's first run reads. :meth:`_check_appended`
        and :meth:`_plan` take their answers from there instead of asking again."""
        reads = [("SELECT worst, charges, head, segments, profiles, last_seq FROM dpverify_state WHERE id = 1" + self._store.lock_suffix, ())]
        ahead = self._mirror is not None and not self._recheck and self._store.pipelined
        if ahead:
            reads.append((f"SELECT {_CHARGE_COLUMNS} FROM dpverify_charges WHERE seq > ? ORDER BY seq", (self._known.last_seq,)))
            a, b = first_run
            reads.append((_PLAN_SQL, (a, a, b, b)))
        answers = self._store.batch(reads)
        if not answers[0]:
            raise self._store.error("a dpverify ledger (table dpverify_state has lost its row)", _tampered_hint(self.url))
        if ahead:
            self._charges_ahead = (self._known.last_seq, answers[1])
            self._plan_ahead = (first_run, answers[2])
        return answers[0][0]

    def _begin_pending(self) -> None:
        self._pending_gids, self._pending_pids, self._pending_keys, self._absent_keys = {}, {}, {}, set()
        self._in_charge = True
        if self._mirror is not None:
            self._mirror.begin()

    def _end_pending(self, committed: bool) -> None:
        """After the transaction: a commit makes the new rows' ids everyone's (cache them); a
        rollback frees them (forget them)."""
        self._in_charge = False
        self._charges_ahead = self._plan_ahead = None
        if self._mirror is not None:
            self._mirror.end(committed)
        if committed:
            for gid, (spec, g) in self._pending_gids.items():
                self._gid_of_spec[spec] = gid
                self._spec_of_gid[gid] = spec
                self._guarantee_of_gid[gid] = g
            for key, (pid, spend) in self._pending_keys.items():
                self._pid_of_key[key] = (pid, spend)
                self._profile_of_pid[pid] = (key, spend)
        elif self._pending_gids:
            # a spend is a pure function of its key only while the key's guarantee ids mean the
            # same guarantees: a rolled-back id is given to the next new guarantee (this handle's
            # or another process's), so spends of keys naming one are forgotten with it
            gone = set(self._pending_gids)
            self._spend_of_key = {k: v for k, v in self._spend_of_key.items() if gone.isdisjoint(_multiset_of(k))}
        self._pending_gids, self._pending_pids, self._pending_keys = {}, {}, _NO_TRANSACTION
        self._absent_keys = set()

    def _write_charge(self, entry: _Entry, gid: int, seq: int, after: float, count: int, previous: str) -> tuple[str, tuple[str, str]]:
        """The charge row, chained to ``previous`` (inside the charge's transaction); its link and
        the set digests it commits to. Only the fields known under the lock are encoded here."""
        at = _now()
        sums = (set_hex(self._sums[0]), set_hex(self._sums[1]))
        derived = self._chain.derived(*sums, after, count)
        link = self._chain.link(previous, encode([seq]) + entry.content + encode([after, at, derived]))
        self._store.run(f"INSERT INTO dpverify_charges ({_CHARGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (seq, entry.cid, entry.charge.label, gid, entry.participants, entry.users, after, at, derived, link))
        return link, sums

    @_reconnecting
    def can_afford(self, guarantee: Any, participants: Any = None) -> bool:
        """Would this charge fit now? (Records nothing; another process may charge in between.)"""
        entry = Charge(_guarantee_of(guarantee), _normalise_participants(_bounded(participants)))
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
        for attempt in range(_ATTEMPTS):
            try:
                return self._advance(n, population)
            except ConnectionLost:
                if attempt == _ATTEMPTS - 1:
                    raise
                self._store.reconnect()  # at worst the lost commit skips n users: never a spend
        raise AssertionError("unreachable")  # pragma: no cover

    def _advance(self, n: int, population: int) -> int:
        with self._store.write(durable=False):
            start = self._store.one("SELECT cursor FROM dpverify_state WHERE id = 1" + self._store.lock_suffix)[0]
            row = self._store.one("SELECT value FROM dpverify_meta WHERE key = 'population'")
            if row is None:
                self._store.run("INSERT INTO dpverify_meta (key, value) VALUES ('population', ?)", (str(population),))
            elif int(row[0]) != population:
                raise AccountingError("population", population, f"the ledger's population {row[0]} (fixed by its first run)")
            self._store.run("UPDATE dpverify_state SET cursor = ? WHERE id = 1", (start + n,))
        return int(start)

    def check_run(self, legs: Sequence[tuple[Sequence[Any], int]], population: int) -> None:
        """Refuse up front (BudgetExceeded, nothing recorded) a run that may not fit the budget.

        ``legs``, in the order they will run: (the guarantees one batch of the leg may be charged,
        places handed out), each leg taking its places of the round-robin over ``population``
        users from the stored cursor on (as :meth:`advance_cursor` will). A user handed out k times
        is charged at most k batches, each at most the leg's worst per-batch guarantee (for an
        (eps, delta) budget the pointwise maximum of the guarantees' RDP curves, whose k-fold
        composition bounds any k of them); her prospective spend is her profile so far plus that,
        composed exactly as a charge would be. Fitting here means every charge of the run fits
        unless another process charges the same users meanwhile (then the run stops at that
        batch, as before). Cost: one composition per distinct (profile, counts), not per user."""
        check_positive_int("population", population)
        worst = [(_worst_of(self._budget, guarantees), int(places)) for guarantees, places in legs]
        stored_population, cursor = self.population()
        if stored_population is not None and stored_population != population:
            raise AccountingError("population", population, f"the ledger's population {stored_population} (fixed by its first run)")
        # each leg's users as runs of [start, stop) with how many places each user gets
        cuts, position, counts = {0, population}, cursor, []
        for _, places in worst:
            full, rest = divmod(places, population)
            lo = position % population
            extra = [(lo, min(lo + rest, population))] + ([(0, lo + rest - population)] if lo + rest > population else [])
            counts.append((full, [r for r in extra if r[0] < r[1]]))
            cuts.update(x for r in extra for x in r)
            position += places
        with self._store.guard("checking the run against the budget"), self._store.read():
            segments = self._store.all("SELECT start, stop, profile FROM dpverify_segments WHERE stop > 0 AND start < ? ORDER BY start",
                                       (population,))
            cuts.update(x for start, stop, _ in segments for x in (max(start, 0), min(stop, population)))
            points = sorted(cuts)
            spends: dict[tuple, float] = {}
            found: tuple[float, int, int, tuple, float] | None = None
            s = 0
            for lo, hi in zip(points, points[1:]):
                while s < len(segments) and segments[s][1] <= lo:
                    s += 1
                pid = segments[s][2] if s < len(segments) and segments[s][0] <= lo else None
                key = "" if pid is None else self._profile(pid)[0]
                ks = tuple(full + any(a <= lo < b for a, b in runs) for full, runs in counts)
                if not any(ks):
                    continue
                if (key, ks) not in spends:
                    pairs = [(self._guarantee(g), n) for g, n in _multiset_of(key).items()]
                    pairs += [(g, k) for (g, _), k in zip(worst, ks) if k]
                    spends[(key, ks)] = compose_canonical(self._budget, pairs)
                spend = spends[(key, ks)]
                if found is None or spend > found[0]:
                    before = 0.0 if pid is None else self._profile(pid)[1]
                    found = (spend, lo, hi, ks, before)
                elif spend == found[0] and lo == found[2]:  # the same worst case continues: one range
                    found = (spend, found[1], hi, found[3], found[4])
        if found is not None and found[0] > self._limit:
            spend, lo, hi, ks, before = found
            places = sum(p for _, p in worst)
            raise BudgetExceeded(
                f"the run would hand out {places:,} places of the population of {population:,} from position {cursor:,}, so users "
                f"{lo:,}..{hi - 1:,} (spent so far {before:.6g}) would join up to {sum(ks)} more batches: up to {spend:.6g} against a "
                f"budget of {_fmt(self._budget)} (left for them: {max(self._limit - before, 0.0):.6g}); refused before its first "
                "charge, the ledger is unchanged"
            )

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
            self._spec_of_gid[row[0]] = spec
            return row[0]
        gid = self._store.one("INSERT INTO dpverify_guarantees (spec) VALUES (?) RETURNING id", (spec,))[0]
        # uncommitted: its id may be reused after a rollback, so it is cached only once committed
        self._pending_gids[gid] = (spec, guarantee_from_dict(json.loads(spec)))
        return gid

    def _guarantee(self, gid: int) -> Any:
        g = self._guarantee_of_gid.get(gid)
        if g is None and gid in self._pending_gids:
            return self._pending_gids[gid][1]
        if g is None:
            spec = self._spec(gid)
            if spec is None:
                self._refuse(f"guarantee {gid}, named by a charge or profile, is missing from dpverify_guarantees")
            g = self._guarantee_of_gid[gid] = guarantee_from_dict(json.loads(spec))
        return g

    def _profile(self, pid: int) -> tuple[str, float]:
        mirror = self._mirror
        if mirror is not None:
            found = mirror.profiles.get(pid)
            if found is not None:
                return found[0], found[1]
            if self._in_charge:  # the mirror is the whole table here
                self._refuse(f"profile {pid}, named by a segment, is missing from dpverify_profiles")
            # outside a charge the mirror may lag behind other processes: read it
        known = self._profile_of_pid.get(pid) or self._pending_pids.get(pid)
        if known is None:
            row = self._store.one("SELECT key, spend FROM dpverify_profiles WHERE id = ?", (pid,))
            if row is None:
                self._refuse(f"profile {pid}, named by a segment, is missing from dpverify_profiles")
            key, spend = row
            known = self._profile_of_pid[pid] = (key, spend)
            self._pid_of_key[key] = (pid, spend)
        return known

    def _plan(self, a: int, b: int, gid: int) -> tuple[list[tuple[int, int, str, int | None]], list[float], list[tuple]]:
        """The pieces that replace the segments overlapping [a, b) once ``gid`` touches [a, b):
        (start, stop, profile key, old segment start or None); the new profiles' spends; and the
        segments read (those overlapping plus their neighbours, for merging)."""
        # one indexed query: the two segments starting at or before a (the one holding a and its
        # left neighbour), those starting in (a, b], and the first one after b
        ahead, self._plan_ahead = self._plan_ahead, None
        if ahead is not None and ahead[0] == (a, b):  # read with the state row, before any write (see _locked_state)
            rows = sorted(ahead[1])
        else:
            rows = sorted(self._store.all(_PLAN_SQL, (a, a, b, b)))
        mirror = self._mirror
        if mirror is not None and self._in_charge and rows != mirror.rows_for(a, b):
            self._refuse(f"the segments a charge on users [{a}, {b}) reads differ from the ones the chain vouches for "
                         "(table dpverify_segments was edited while this ledger was open)")
        pieces, touched = self._pieces(rows, a, b, gid, lambda pid: self._profile(pid)[0])
        return pieces, [self._profile_spend(k) for k in dict.fromkeys(touched)], rows

    def _pieces(self, rows: list[tuple[int, int, int]], a: int, b: int, gid: int,
                key_of: Callable[[int], str]) -> tuple[list[tuple[int, int, str, int | None]], list[str]]:
        """The pieces that replace the ``rows`` overlapping [a, b) once ``gid`` touches [a, b)
        (start, stop, profile key, old segment start or None), and the new keys, in order
        (``key_of``: a profile id's key)."""
        pieces: list[tuple[int, int, str, int | None]] = []
        touched: list[str] = []
        plus = self._plus
        position = a
        for start, stop, pid in rows:
            if stop <= a or start >= b:
                continue
            key = key_of(pid)
            if start < a:
                pieces.append((start, a, key, start))
            if start > position:
                new = plus("", gid)
                touched.append(new)
                pieces.append((position, start, new, None))
            inner_stop = min(stop, b)
            new = plus(key, gid)
            touched.append(new)
            pieces.append((max(start, a), inner_stop, new, start))
            if stop > b:
                pieces.append((b, stop, key, start))
            position = inner_stop
        if position < b:
            new = plus("", gid)
            touched.append(new)
            pieces.append((position, b, new, None))
        return pieces, touched

    def _plus(self, key: str, gid: int) -> str:
        """The profile key of ``key``'s multiset with one more ``gid`` (a pure function of its
        arguments, remembered: a run's charges meet the same few profiles again and again)."""
        new = self._plus_of.get((key, gid))
        if new is None:
            multiset = _multiset_of(key)
            multiset[gid] = multiset.get(gid, 0) + 1
            new = _key_of(multiset)
            if len(self._plus_of) < _KEPT_TERMS:
                self._plus_of[(key, gid)] = new
        return new

    def _spec_of_object(self, guarantee: Any) -> str:
        """:func:`guarantee_spec`, once per guarantee object (guarantees are immutable; keyed by
        identity, holding the object so that its id cannot be reused)."""
        known = self._spec_by_object.get(id(guarantee))
        if known is None or known[0] is not guarantee:
            known = (guarantee, guarantee_spec(guarantee))
            if len(self._spec_by_object) < _KEPT_TERMS:
                self._spec_by_object[id(guarantee)] = known
        return known[1]

    def _segments_delta(self, removed: list[tuple[int, int, int]], added: list[tuple[int, int, int]]) -> int:
        """How the segments' set digest moves when ``removed`` rows are deleted and ``added`` ones
        inserted. The terms of the segments this handle wrote are kept (each is deleted by a later
        charge, and its term subtracted then: one hash per segment, not two). A term is a pure
        function of the row, so a kept one is never stale."""
        kept, mirror = self._terms, self._mirror
        delta, unknown = 0, []
        for row in removed:
            term = kept.pop(row, None)
            if term is None and mirror is not None:
                term = mirror.term_of(row)  # another process's row, hashed when the copy's sum was compared
            if term is None:
                unknown.append(row)
            else:
                delta -= term
        delta -= sum(self._chain.segments(unknown))
        terms = self._chain.segments(added)
        if len(kept) < _KEPT_TERMS:
            kept.update(zip(added, terms))
        self._added_terms = terms
        return delta + sum(terms)

    def _stored_profile(self, key: str) -> tuple[int, float] | None:
        """(id, spend) of a profile already in the database (committed, or written by this
        transaction), or None."""
        mirror = self._mirror
        if mirror is not None:
            pid = mirror.pid_of_key.get(key)
            if pid is not None or self._in_charge:
                return None if pid is None else (pid, mirror.profiles[pid][1])
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
        self._sums[1] += self._chain.profile(pid, key, spend, releases)
        self._pending_keys[key] = (pid, spend)
        self._pending_pids[pid] = (key, spend)
        if self._mirror is not None:
            self._mirror.add_profiles([(pid, key, spend, releases)])
        self._absent_keys.discard(key)
        return pid

    def _write_pieces(self, pieces: list[tuple[int, int, str, int | None]], rows: list[tuple]) -> None:
        if not pieces:
            return
        old, merged = _merged(pieces, [[start, stop, self._pid(key)] for start, stop, key, _ in pieces], rows)
        by_start = {row[0]: row for row in rows}
        self._sums[0] += self._segments_delta([tuple(by_start[start]) for start in old], [tuple(m) for m in merged])
        self._store.run_many("DELETE FROM dpverify_segments WHERE start = ?", [(s,) for s in old])
        self._store.run_many("INSERT INTO dpverify_segments (start, stop, profile) VALUES (?, ?, ?)", [tuple(m) for m in merged])
        mirror = self._mirror
        if mirror is not None:
            mirror.replace(old, merged, self._added_terms)

    # ---- reading --------------------------------------------------------------------------------

    def _state(self) -> tuple[float | None, int, int]:
        with self._store.guard("reading the ledger's state"):
            row = self._store.one("SELECT worst, charges, cursor FROM dpverify_state WHERE id = 1")
        if row is None:
            raise self._store.error("a dpverify ledger (table dpverify_state has lost its row)", _tampered_hint(self.url))
        return row

    @_reconnecting
    def spent(self) -> Budget | None:
        worst = self._state()[0]
        return None if worst is None else self._wrap(worst)

    @_reconnecting
    def remaining(self) -> float:
        self._worst = self._state()[0]
        return super().remaining()

    @property
    def charges(self) -> tuple[Charge, ...]:
        return tuple(c for c, _ in self.history())

    @_reconnecting
    def history(self, last: int | None = None) -> list[tuple[Charge, dict]]:
        """The charges in order (the last ``last`` of them), each with its row: seq, cid, users,
        participants, spent_after, recorded_at, link."""
        sql = "SELECT seq, cid, label, guarantee, participants, users, spent_after, recorded_at, link FROM dpverify_charges"
        with self._store.read():
            if last is not None:
                rows = self._store.all(sql + " ORDER BY seq DESC LIMIT ?", (int(last),))[::-1]
            else:
                rows = self._store.all(sql + " ORDER BY seq")
            out = []
            for seq, cid, label, gid, participants, users, after, at, link in rows:
                try:
                    stored = json.loads(participants)
                except (TypeError, ValueError):
                    raise self._store.error(f"a readable charge (table dpverify_charges, seq {seq}, field participants "
                                            f"holds {str(participants)[:40]!r})", _tampered_hint(self.url)) from None
                charge = Charge(self._guarantee(gid), _participants_of(stored), label)
                out.append((charge, {"seq": seq, "cid": cid, "users": users, "participants": stored, "spent_after": after,
                                     "recorded_at": at, "link": link}))
        return out

    @_reconnecting
    def max_charges_per_user(self) -> int:
        with self._store.guard("reading the ledger's profiles"):
            row = self._store.one("SELECT MAX(p.releases) FROM dpverify_segments s JOIN dpverify_profiles p ON p.id = s.profile")
        return int(row[0] or 0)

    @_reconnecting
    def users_near_limit(self, fraction: float) -> int:
        """How many users have spent at least ``fraction`` of the budget (every user for a charge on everyone)."""
        with self._store.guard("reading the ledger's segments"):
            row = self._store.one(
                "SELECT SUM(s.stop - s.start) FROM dpverify_segments s JOIN dpverify_profiles p ON p.id = s.profile WHERE p.spend >= ?",
                (fraction * self._limit,),
            )
        return int(row[0] or 0)

    @_reconnecting
    def population(self) -> tuple[int | None, int]:
        """(the population fixed by the first run, or None; the round-robin's position)."""
        with self._store.guard("reading the ledger's population"):
            row = self._store.one("SELECT value FROM dpverify_meta WHERE key = 'population'")
        return (None if row is None else int(row[0])), int(self._state()[2])

    @_reconnecting
    def summary(self, *, near: float = 0.9, last: int | None = 20) -> dict:
        """Budget, worst user's spend, users near the limit, the chain and the last charges (for
        ``dpverify ledger show``); ``integrity``: what the checks on open found (empty: sound)."""
        worst, count, cursor = self._state()
        population, _ = self.population()
        return {
            "url": self.url,
            "store": self.store,
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "ledger_id": self.ledger_id,
            "chain": self._chain.kind,
            "head": None if self._known is None else self._known.link,
            "integrity": list(self.integrity),
            "budget": json.loads(guarantee_spec(self._budget)),
            "worst_user_spend": worst,
            "remaining": self.remaining(),
            "charges": count,
            "near_fraction": near,
            "users_near_limit": self.users_near_limit(near),
            "max_charges_per_user": self.max_charges_per_user(),
            "population": population,
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

    @_reconnecting
    def verify(self) -> VerifyReport:
        """Recompute every user's spend from the raw charges with the exact accountant (read-only).

        The charges' participants are swept as range ends into elementary id ranges, each with the
        multiset of guarantees covering it; every distinct multiset is composed afresh (not from
        the stored profiles); then the stored segment map, profiles, worst spend and charge count
        are compared with that, and the chain, the set digests and the witness are checked as on
        open. Each disagreement is reported as one line."""
        problems, head = self._scan()
        replayed, counts = self._replay()
        return VerifyReport(self.url, self._budget, *counts, tuple(problems + replayed), head="" if head is None else head.link,
                            chain=self._chain.kind)

    def _replay(self) -> tuple[list[str], tuple[int, int, int, float | None]]:
        """The accountant's half of :meth:`verify` (it reads only the columns of schema 1 too):
        the disagreements, and (charges, segments, profiles, recomputed worst spend)."""
        problems: list[str] = []
        with self._store.read():
            specs = dict(self._store.all("SELECT id, spec FROM dpverify_guarantees"))
            charges = self._store.all("SELECT seq, guarantee, participants FROM dpverify_charges ORDER BY seq")
            segments = self._store.all("SELECT start, stop, profile FROM dpverify_segments ORDER BY start")
            profiles = {pid: (key, spend) for pid, key, spend in self._store.all("SELECT id, key, spend FROM dpverify_profiles")}
            worst_stored, count_stored, _ = self._store.one("SELECT worst, charges, cursor FROM dpverify_state WHERE id = 1")
        guarantees: dict[int, Any] = {}
        for gid, spec in specs.items():
            try:
                guarantees[gid] = guarantee_from_dict(json.loads(spec))
                self._check_compatible(guarantees[gid])
            except (ValueError, KeyError, TypeError) as error:
                problems.append(f"guarantee {gid} ({spec}) unreadable or incompatible with the budget: {error}")
        # the sweep: +gid at each run's start, -gid at its stop
        events: dict[int, dict[int, int]] = {}
        for seq, gid, participants in charges:
            if gid not in guarantees:
                problems.append(f"charge {seq} names guarantee {gid}, which is missing or unreadable")
                continue
            try:
                runs = _runs_of_stored(json.loads(participants))
            except (TypeError, ValueError, KeyError):
                problems.append(f"charge {seq}: participants {str(participants)[:40]!r} unreadable")
                continue
            for a, b in runs:
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
        return problems, (len(charges), len(segments), len(profiles), worst)



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


def _charge_id() -> str:
    """A charge's id: the time in ns, then 64 random bits (32 hex digits): unique with or without
    the clock."""
    return f"{time.time_ns():016x}{os.urandom(8).hex()}"


_MINUTE: tuple[int, str] = (-1, "")  # the current UTC minute and its "YYYY-MM-DDTHH:MM:" text


def _now() -> str:
    """The UTC time as ``datetime.isoformat(timespec="microseconds")`` writes it, the date, hour
    and minute formatted once a minute (every charge row records one; formatting a datetime cost
    more than hashing the row). The cache is one tuple, replaced whole, so threads agree."""
    global _MINUTE
    minute, rest = divmod(time.time_ns() // 1000, 60_000_000)
    cached = _MINUTE
    if cached[0] != minute:
        cached = _MINUTE = (minute, time.strftime("%Y-%m-%dT%H:%M:", time.gmtime(minute * 60)))
    return f"{cached[1]}{rest // 1_000_000:02d}.{rest % 1_000_000:06d}+00:00"
