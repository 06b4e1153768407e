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
verified (charges, seq, link) in a small file per ledger, outside the database (the directory in
:data:`WITNESS_VARIABLE`, by default ``$XDG_STATE_HOME/dpverify/ledger-heads``; ``off`` disables
it). Opening checks that the ledger still holds that row with that link: a rewritten or rolled-back
history is then refused on every machine that has seen the ledger. Writing the witness is best
effort (an unwritable directory only loses this check, never budget).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from ._validation import AccountingError

__all__ = ["Chain", "KEY_VARIABLE", "WITNESS_VARIABLE", "Witness", "encode", "set_hex", "set_of"]

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
    for value in fields:
        kind = _KINDS.get(type(value))
        if kind is None:
            if value is None:
                out.append("n0:")
                continue
            raise TypeError(f"cannot chain a {type(value).__name__}")
        text = value if kind == "s" else repr(value)  # repr: exact for floats, the digits for ints
        out.append(f"{kind}{len(text)}:{text}")
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


class Witness:
    """The last chain head this machine saw for one ledger, in a file outside the database.

    One small file per ledger, rewritten in place (one ``pwrite`` of a fixed-size record on a
    descriptor kept open, never synced: a rename per charge cost more than the charge's own
    work). A record torn by a crash does not parse and counts as absent: the witness only ever
    adds a check, so losing it loses that check, never budget."""

    SIZE = 512

    def __init__(self, ledger_id: str) -> None:
        self.ledger_id = ledger_id
        directory = _witness_directory()
        self.path = None if directory is None else directory / f"{ledger_id}.json"
        self._fd: int | None = None

    def read(self) -> dict | None:
        if self.path is None:
            return None
        try:
            if self._fd is not None:
                text = os.pread(self._fd, self.SIZE, 0)
            else:
                with open(self.path, "rb") as handle:
                    text = handle.read(self.SIZE)
            data = json.loads(text)
        except (OSError, ValueError):
            return None  # absent or unreadable: as if absent (the witness only ever adds a check)
        if not isinstance(data, dict) or not all(isinstance(data.get(k), int) for k in ("charges", "seq")) or not isinstance(data.get("link"), str):
            return None
        return data

    def record(self, charges: int, seq: int, link: str, url: str) -> None:
        """Best effort (errors ignored)."""
        if self.path is None:
            return
        try:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
                self._url = json.dumps(url[:200])  # (ids, counts and hex links need no escaping)
            # no read first: a race between processes may leave an older head, which is still on the chain
            record = f'{{"ledger_id": "{self.ledger_id}", "charges": {charges}, "seq": {seq}, "link": "{link}", "url": {self._url}}}'
            os.pwrite(self._fd, record.encode().ljust(self.SIZE), 0)
        except OSError:
            pass

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


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
