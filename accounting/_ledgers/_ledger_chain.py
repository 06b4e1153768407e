"""The durable ledger's tamper evidence: a hash chain over the charges, set digests of the derived
tables, an optional key, and a witness of the chain head kept outside the database.

**Chain.** Charge row i stores ``link_i = H(link_{i-1} || content_i)``, where the content is the
row's seq, charge id, label, guarantee (its canonical text, not its row id), participants, users,
``spent_after``, ``recorded_at`` and ``derived`` (below), each written with its type and length (so
no field can bleed into another). ``link_0`` (the *genesis*) is H over the ledger's identity: format,
ledger id, chain kind, budget and name, so an edited budget breaks the first link. ``H`` is
SHA-256, or HMAC-SHA-256 with the key in the environment variable :data:`KEY_VARIABLE`: without
the key nobody can recompute a link, so a rewrite is detected even when it is self-consistent.

**Derived tables.** The segments and profiles a charge reads are summarised by two *set digests*:
the sum modulo 2^256 of a hash of each row (BLAKE2b, keyed like the chain) over the rows (Bellare & Micciancio's AdHash, incremental: a
charge subtracts the rows it deletes and adds those it inserts, O(rows touched)). The state row
keeps both sums, and each charge row's ``derived`` field commits to them together with the worst
spend and the number of charges after that charge, so the chain head also vouches for the
derived tables. Opening a ledger recomputes the sums over the tables (hashes only, no
composition); :meth:`DurableLedger.verify` also recomputes every spend with the exact accountant.

**Witness.** Without a key anyone can recompute a consistent chain, and even with one a ledger
can be rolled back to an earlier copy. Each process therefore records the last head it wrote or
verified (charges, seq, link), with the ledger id and creation time, in a small file per database
location, outside the database (the directory in :data:`WITNESS_VARIABLE`, by default
``$XDG_STATE_HOME/dpverify/ledger-heads``; ``off`` disables it). Opening checks that the database
still holds that ledger, and that row with that link: a replaced, rewritten (under any ledger id)
or rolled-back history is then refused on every machine that has seen it. A damaged or unwritable
witness is an error, not a skipped check. A restore made on purpose (a backup, a copy that lost
its last commits in a power cut) is accepted explicitly, and logged, by
``dpverify ledger accept-restore`` (:meth:`DurableLedger.accept_restore`). A user can also keep a
head digest elsewhere and pin it (``expect_head``, ``--expect-head``): the ledger must hold it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from .._core._validation import AccountingError

__all__ = ["Chain", "KEY_VARIABLE", "WITNESS_VARIABLE", "Witness", "WitnessBroken", "acceptance_log", "encode", "set_hex", "set_of"]

#: the environment variable holding the ledger's key (absent: an unkeyed SHA-256 chain)
KEY_VARIABLE = "DPVERIFY_LEDGER_KEY"
#: the environment variable naming the witness directory ("off": no witness)
WITNESS_VARIABLE = "DPVERIFY_LEDGER_WITNESS"
#: shortest key accepted (bytes of its UTF-8 text)
MIN_KEY_BYTES = 16
_MODULUS = 1 << 256
EMPTY_SET = "0" * 64


def encode(fields: Sequence[Any]) -> bytes:
    """Fields as one unambiguous byte string: each as its type (n: None, i: int, f: float, s: str),
    its length and its text, so no field can bleed into the next whatever text it holds. Each
    field's bytes depend on that field alone, so a record's encoding is the concatenation of its
    parts' encodings: a charge encodes the fields it knows before taking the ledger's lock ahead,
    and only those known under the lock while holding it."""
    out = []
    append = out.append
    for value in fields:
        kind = type(value)  # exact types: a bool or a str subclass is refused, not encoded as its base
        if kind is str:
            append(f"s{len(value)}:{value}")
        elif kind is int or kind is float:
            text = repr(value)  # repr: exact for floats, the digits for ints
            append(f"{'i' if kind is int else 'f'}{len(text)}:{text}")
        elif value is None:
            append("n0:")
        else:
            raise TypeError(f"cannot chain a {kind.__name__}")
    return "".join(out).encode()


_KINDS = {str: "s", int: "i", float: "f"}


class Chain:
    """The hash (SHA-256) or MAC (HMAC-SHA-256) every link and digest of one ledger is made with."""

    def __init__(self, key: bytes | None) -> None:
        self._key = key
        self.kind = "sha256" if key is None else "hmac-sha256"
        # BLAKE2b takes keys of at most 64 bytes: a longer key enters through its SHA-256
        term_key = b"" if key is None else (key if len(key) <= 64 else hashlib.sha256(key).digest())
        # keyed once: each term copies this state instead of processing the key block again
        self._term_hash = hashlib.blake2b(key=term_key, digest_size=32)

    @classmethod
    def from_environment(cls) -> "Chain":
        text = os.environ.get(KEY_VARIABLE)
        if text is None or text == "":
            return cls(None)
        key = text.encode()
        if len(key) < MIN_KEY_BYTES:
            raise AccountingError(KEY_VARIABLE, "<hidden>", f"a key of at least {MIN_KEY_BYTES} bytes (a short key is guessable)")
        return cls(key)

    @property
    def keyed(self) -> bool:
        return self._key is not None

    def _digest(self, data: bytes) -> bytes:
        if self._key is None:
            return hashlib.sha256(data).digest()
        return hmac.new(self._key, data, hashlib.sha256).digest()

    def hex(self, fields: Sequence[Any]) -> str:
        return self._digest(encode(fields)).hex()

    def genesis(self, ledger_id: str, budget_spec: str, name: str, fmt: str) -> str:
        """link_0: the ledger's identity (an edited budget, name or id breaks the first link)."""
        return self.hex(["genesis", fmt, ledger_id, self.kind, budget_spec, name])

    def key_check(self, ledger_id: str) -> str:
        """Stored with a keyed ledger, so that a wrong key is told apart from tampering."""
        return self.hex(["key-check", ledger_id])

    def link(self, previous: str, content: Sequence[Any] | bytes) -> str:
        """``content``: the row's fields, or their :func:`encode` (assembled from parts)."""
        return self._digest(previous.encode() + (content if isinstance(content, bytes) else encode(content))).hex()

    def segment(self, start: int, stop: int, profile: int) -> int:
        """A segment row's term of the segments' set digest (integers only: no separator ambiguity).
        Terms are BLAKE2b, keyed with the ledger's key when there is one (a MAC by its design, and
        faster than HMAC for the ~20 terms a charge touches)."""
        return self.segments([(start, stop, profile)])[0]

    def segments(self, rows: Iterable[tuple[int, int, int]]) -> list[int]:
        """:meth:`segment` of each (start, stop, profile) row, in one loop (a charge hashes ~10)."""
        base, out = self._term_hash, []
        for row in rows:
            h = base.copy()
            h.update(b"s|%d|%d|%d" % row)
            out.append(int.from_bytes(h.digest(), "big"))
        return out

    def profile(self, pid: int, key: str, spend: float, releases: int) -> int:
        """A profile row's term of the profiles' set digest (a key holds digits, ':' and ',' only)."""
        return self._term(f"p|{pid}|{key}|{spend!r}|{releases}".encode())

    def _term(self, data: bytes) -> int:
        h = self._term_hash.copy()
        h.update(data)
        return int.from_bytes(h.digest(), "big")

    def derived(self, segments: str, profiles: str, worst: float | None, charges: int) -> str:
        """What a charge row commits to about the derived tables after it (fixed-format fields: two
        hex digests, a float's repr or None, an integer)."""
        return self._digest(f"derived|{segments}|{profiles}|{worst!r}|{charges}".encode()).hex()


def set_hex(total: int) -> str:
    """A set digest as stored: the sum of its terms modulo 2^256, 64 hex digits."""
    return format(total % _MODULUS, "064x")


def set_of(terms: Iterable[int]) -> str:
    return set_hex(sum(terms))


class WitnessBroken(AccountingError):
    """The witness file exists but cannot be read or written: the check it adds is refused, not skipped."""


class Witness:
    """The last chain head this machine saw in one database, in a file outside it.

    The file is named after the database's *location* (the SQLite file's real path, the
    PostgreSQL server and database), not after the ledger id the database claims: a forger who
    rewrites the history under a new id still meets the witness of that location, which records
    the ledger id and creation time first seen there. A copy of a ledger at another path has a
    witness of its own (charging the copy never makes the original look rolled back).

    Two fixed-size slots, each with its own checksum, rewritten alternately in place (``pwrite``
    on a descriptor kept open, never synced: a rename per charge cost more than the charge): a
    record torn by a crash leaves the other slot whole. A file with no whole slot, or one that
    cannot be read or written, is an error (:class:`WitnessBroken`), never a check silently
    skipped; :func:`accept` replaces it after an explicit, logged decision."""

    SIZE = 512

    def __init__(self, location: str) -> None:
        self.location = location
        directory = _witness_directory()
        name = hashlib.sha256(location.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        self.path = None if directory is None else directory / f"{name}.json"
        self._fd: int | None = None
        self._slot = 0

    def read(self) -> dict | None:
        """The newest whole record, None if there is no witness yet; WitnessBroken if the file is damaged."""
        if self.path is None:
            return None
        try:
            if self._fd is not None:
                data = os.pread(self._fd, 2 * self.SIZE, 0)
            else:
                with open(self.path, "rb") as handle:
                    data = handle.read(2 * self.SIZE)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise self._broken(f"it cannot be read: {error.strerror or error}") from None
        records = [r for r in (_parse(data[i * self.SIZE:(i + 1) * self.SIZE]) for i in (0, 1)) if r is not None]
        if not records:
            raise self._broken("it holds no whole record (damaged, truncated or not a witness)")
        return max(records, key=lambda r: (r["charges"], r["seq"]))

    def _broken(self, problem: str) -> WitnessBroken:
        return WitnessBroken(WITNESS_VARIABLE, str(self.path), f"a readable and writable witness file ({problem})",
                             f"it is what detects a rolled-back or rewritten ledger; once you have checked the ledger "
                             f"(`dpverify ledger verify`), `dpverify ledger accept-restore URL` writes a new witness, or set "
                             f"{WITNESS_VARIABLE}=off to run without one")

    def record(self, identity: dict, charges: int, seq: int, link: str, *, required: bool = True) -> None:
        """Record the head; an unwritable witness raises WitnessBroken (``required=False``: ignored)."""
        if self.path is None:
            return
        body = json.dumps({**identity, "location": self.location[:200], "charges": charges, "seq": seq, "link": link}, sort_keys=True)
        record = json.dumps({"record": body, "check": hashlib.sha256(body.encode()).hexdigest()}).encode()
        try:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if not self.path.exists():
                    _create(self.path, record.ljust(self.SIZE) * 2)
                self._fd = os.open(self.path, os.O_RDWR)
            self._slot ^= 1
            os.pwrite(self._fd, record.ljust(self.SIZE), self._slot * self.SIZE)
        except OSError as error:
            if required:
                raise self._broken(f"it cannot be written: {error.strerror or error}") from None

    def replace(self, identity: dict, charges: int, seq: int, link: str) -> None:
        """A new witness in place of the old one (atomically: the accepted state, whatever the file held)."""
        self.close()
        if self.path is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path)
        self.record(identity, charges, seq, link)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _create(path: Path, data: bytes) -> None:
    """A new witness file, whole or not at all (written aside, then renamed into place)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)


def _parse(data: bytes) -> dict | None:
    try:
        outer = json.loads(data)
        body = outer["record"]
        if hashlib.sha256(body.encode()).hexdigest() != outer["check"]:
            return None
        record = json.loads(body)
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict) or not all(isinstance(record.get(k), int) for k in ("charges", "seq")):
        return None
    if not all(isinstance(record.get(k), str) for k in ("link", "ledger_id", "created_at")):
        return None
    return record


def acceptance_log() -> Path | None:
    """Where accepted restores are logged (a line of JSON each), next to the witnesses."""
    directory = _witness_directory()
    return None if directory is None else directory / "accepted.log"


def _witness_directory() -> Path | None:
    value = os.environ.get(WITNESS_VARIABLE)
    if value is not None:
        if value.strip().lower() in ("off", "none", "0", ""):
            return None
        return Path(value)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    if base.startswith("~"):  # no home directory to expand
        return None
    return Path(base) / "dpverify" / "ledger-heads"
