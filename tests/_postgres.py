"""A throwaway PostgreSQL server for the durable-ledger tests (Debian's ``postgresql`` package).

The server runs from ``initdb``/``pg_ctl`` (found on PATH or in /usr/lib/postgresql/*/bin) in a
temporary directory, listening only on a Unix socket there (no TCP port, nothing to clash with);
``initdb`` refuses to run as root, so as root the server runs as the ``postgres`` user (the
package creates it) through ``runuser``. ``.ci/run`` installs the package when ``initdb`` is
missing; a missing binary is an error here, never a skip.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if not candidates:
        raise RuntimeError(f"{name} not found: install Debian's 'postgresql' package (.ci/run does) to run the PostgreSQL ledger tests")
    return candidates[-1]


class PostgresServer:
    """initdb + pg_ctl start in a fresh directory; :meth:`url` hands out a fresh database."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="dpverify-pg-"))
        self.data = self.directory / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            import pwd

            entry = pwd.getpwnam("postgres")
            os.chown(self.directory, entry.pw_uid, entry.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        os.chmod(self.directory, 0o755)
        self._run(_binary("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        options = f"-k {self.directory} -c listen_addresses='' -c max_connections=100"
        self._run(_binary("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.directory / "server.log"), "-w", "start")

    def _run(self, *command: str) -> None:
        subprocess.run([*self.as_user, *command], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.directory)

    def admin_url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.directory}"

    def url(self) -> str:
        """A new, empty database on the server."""
        import psycopg

        name = "ledger_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.admin_url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.admin_url(name)

    def restart(self) -> None:
        """Stop (fast: every connection is terminated, as in a failover) and start again, with the
        same options; returns once the server accepts connections."""
        self._run(_binary("pg_ctl"), "-D", str(self.data), "-l", str(self.directory / "server.log"), "-m", "fast", "-w", "restart")

    def stop(self) -> None:
        try:
            self._run(_binary("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
