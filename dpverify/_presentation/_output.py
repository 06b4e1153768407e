"""Output files that are never lost: checked before the work starts, written atomically.

Every command that writes a file (``--json``, ``--junit``, ``--out``, the figures' PNG, CSV and
JSON) goes through this module:

- :func:`check_output_file` / :func:`check_output_dir` run *before* any computation, so a
  missing or read-only directory is refused in milliseconds (:class:`OutputPathError`, a
  ``ValueError`` naming the option and the path; the CLI turns it into exit 2) instead of after an hour of work. They
  create (``O_EXCL``, an unused name) and remove a probe file in the directory: permission bits
  (``os.access``) say yes to root, on read-only mounts and under ACLs where a write then fails;
- :func:`atomic_write` (text or bytes) and :func:`atomic_path` (for writers that want a path,
  such as ``matplotlib.savefig`` or ``ElementTree.write``) write to a temporary file in the
  *same* directory and then ``os.replace`` it onto the target: the rename is atomic on POSIX and
  Windows, so a reader (or an interrupted run) sees either the old file or the complete new one,
  never half a file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

__all__ = ["OutputPathError", "atomic_path", "atomic_write", "check_output_dir", "check_output_file"]


class OutputPathError(ValueError):
    """A refused output path: a ``ValueError`` whose message names the option, the path and what is
    expected (the form of ``accounting.AccountingError``, with its ``name``, ``value`` and ``allowed``).

    Its own class, not ``AccountingError``: the checks run before a command's heavy imports, and
    importing ``accounting`` (scipy, python-flint) would cost seconds under load on exactly the path
    that should answer at once (issue 34 items 1 and 6).
    """

    def __init__(self, name: str, value: object, allowed: str) -> None:
        self.name, self.value, self.allowed = name, value, allowed
        super().__init__(f"{name}={value!r} is invalid: expected {allowed}")

    def __reduce__(self):
        return (type(self), (self.name, self.value, self.allowed))



def _writable_dir(option: str, path: object, directory: Path) -> None:
    if not directory.is_dir():
        raise OutputPathError(option, str(path), f"a path whose directory exists ({str(directory)!r} does not)")
    # ``os.access`` answers for the permission bits only: it says yes to root in a read-only
    # directory of /sys, on a read-only or full mount, under an ACL or a network file system's
    # own rules. The only faithful test is to create a file: an unused name (O_EXCL, so nothing of
    # the user's is touched), removed at once.
    try:
        handle, name = tempfile.mkstemp(prefix=".dpverify-probe-", suffix=".tmp", dir=directory)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise OutputPathError(option, str(path), f"a path in a writable directory ({str(directory)!r} is not writable: {reason})") from None
    os.close(handle)
    with contextlib.suppress(OSError):
        os.unlink(name)


def _can_open_for_writing(target: Path) -> bool:
    """Whether an existing file can be opened for writing (without truncating or changing it)."""
    try:
        with open(target, "r+b"):
            return True
    except OSError:
        return False


def check_output_file(option: str, path: str | os.PathLike | None) -> None:
    """Refuse an output file that cannot be written: its directory missing or read-only, or it is a directory.

    ``None`` and ``"-"`` (stdout) pass. ``option`` names the option in the error (``"--json"``).
    """
    if path is None or str(path) == "-":
        return
    if str(path) == "":
        raise OutputPathError(option, "", "a file path (or '-' for stdout)")
    target = Path(path)
    if target.is_dir():
        raise OutputPathError(option, str(path), "a file path, not a directory")
    if target.is_file() and not _can_open_for_writing(target):
        raise OutputPathError(option, str(path), "a writable file (it exists and is read-only)")
    _writable_dir(option, path, target.parent if str(target.parent) else Path("."))


def check_output_dir(option: str, path: str | os.PathLike) -> None:
    """Refuse an output directory that cannot be created or written.

    The directory may not exist yet (it is created when the results are written): then its
    nearest existing ancestor must be a writable directory.
    """
    if str(path) == "":
        raise OutputPathError(option, "", "a directory path")
    target = Path(path)
    if target.exists():
        if not target.is_dir():
            raise OutputPathError(option, str(path), "a directory (a file of that name exists)")
        _writable_dir(option, path, target)
        return
    ancestor = target.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputPathError(option, str(path), f"a directory that can be created ({str(ancestor)!r} is a file)")
    _writable_dir(option, path, ancestor)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it onto ``path``, on failure remove it.

    The temporary name keeps ``path``'s suffix, so writers that choose a format by extension
    (``savefig``) still do.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=directory)
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        # mkstemp creates the file 0600; give the result the permissions a plain open() would
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def atomic_write(path: str | os.PathLike, data: str | bytes, *, encoding: str = "utf-8") -> Path:
    """Write ``data`` (text or bytes) to ``path`` atomically (see :func:`atomic_path`); returns the path."""
    with atomic_path(path) as temporary:
        if isinstance(data, bytes):
            temporary.write_bytes(data)
        else:
            with open(temporary, "w", encoding=encoding, newline="") as handle:
                handle.write(data)
    return Path(path)
