"""What an audit report records about what was audited: the git commit and a hash of the claim files (issue 34, item 9).

``claim_files_sha256`` is the SHA-256 over the claim files in path order, each as its path
(relative to their common directory), a NUL, its bytes and a NUL, so a reviewer can tell that a
report and a checkout audited the same claims. ``git_commit`` is ``git rev-parse HEAD`` of the
repository holding the claim files (``None`` outside a git checkout or without git), with
``git_dirty`` true when the work tree differs from it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any, Sequence

__all__ = ["claim_files_hash", "provenance"]


def claim_files_hash(files: Sequence[str]) -> str:
    paths = sorted({str(Path(f).resolve()) for f in files})
    base = os.path.commonpath(paths) if len(paths) > 1 else str(Path(paths[0]).parent) if paths else ""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(os.path.relpath(path, base).replace(os.sep, "/").encode() + b"\0")
        try:
            digest.update(Path(path).read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
        digest.update(b"\0")
    return digest.hexdigest()


def _git(where: str, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", where, *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def provenance(files: Sequence[str]) -> dict[str, Any]:
    """{"claim_files": count, "claim_files_sha256": ..., "git_commit": ..., "git_dirty": ...}."""
    if not files:
        return {"claim_files": 0, "claim_files_sha256": None, "git_commit": None, "git_dirty": None}
    where = str(Path(sorted(files)[0]).resolve().parent)
    commit = _git(where, "rev-parse", "HEAD")
    dirty = None
    if commit is not None:
        status = _git(where, "status", "--porcelain", "--untracked-files=no")
        dirty = bool(status) if status is not None else None
    return {"claim_files": len(set(files)), "claim_files_sha256": claim_files_hash(files), "git_commit": commit, "git_dirty": dirty}
