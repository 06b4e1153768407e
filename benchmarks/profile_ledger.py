"""Where a durable ledger's charge spends its time when several processes share the ledger.

For each store (SQLite FULL / NORMAL, PostgreSQL 15) ``--processes`` processes charge one fresh
ledger (the throughput workload of ``bench_ledger.py``: PureDP(0.001) on 1-39 of 3,000 users) and
report, per charge: the SQL statements the ledger sends (through the store's ``all``/``one``/``run``/
``run_many``), split into those sent while the charge holds the write lock and those sent outside
it; the time the lock is held (from the lock's acquisition to the commit); and the CPU time of the
charging process. ``--profile`` writes a cProfile of worker 0 (``pstats`` file) and prints its top
entries. Statements the store issues itself (SQLite's BEGIN IMMEDIATE / PRAGMA data_version / COMMIT,
PostgreSQL's pipeline sync) are not counted: they are the same before and after.

    PYTHONPATH=. python benchmarks/profile_ledger.py [--processes 8] [--charges 200] [--profile /tmp/ledger.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import accounting  # noqa: E402
from accounting import _ledger_store  # noqa: E402

POPULATION = 3000


def _instrument(counts: dict) -> None:
    """Count the statements a store sends, under the lock (a finite hold deadline) or not, and
    time the lock's holds (SQLite: _locked; PostgreSQL: write)."""
    original_execute = {cls: cls._execute for cls in (_ledger_store.SQLiteStore, _ledger_store.PostgresStore)}
    original_many = {cls: cls._execute_many for cls in (_ledger_store.SQLiteStore, _ledger_store.PostgresStore)}

    def counted(cls):
        def execute(self, sql, params):
            counts["locked" if self._hold_deadline != float("inf") else "free"] += 1
            counts.setdefault("by_sql", {}).setdefault(sql.split(" WHERE")[0][:70], [0])[0] += 1
            return original_execute[cls](self, sql, params)

        def many(self, sql, rows):
            counts["locked" if self._hold_deadline != float("inf") else "free"] += 1
            counts.setdefault("by_sql", {}).setdefault(sql.split(" WHERE")[0][:70], [0])[0] += 1
            return original_many[cls](self, sql, rows)

        cls._execute, cls._execute_many = execute, many

    for cls in original_execute:
        counted(cls)

    import contextlib

    original_write = {cls: cls.write for cls in (_ledger_store.SQLiteStore, _ledger_store.PostgresStore)}

    def timed(cls):
        @contextlib.contextmanager
        def write(self, durable=True):
            with original_write[cls](self, durable):
                t0 = time.perf_counter()
                yield
                counts["held"] += time.perf_counter() - t0  # (to the commit's start; the commit itself is outside)

        cls.write = write

    for cls in original_write:
        timed(cls)


def _worker(url: str, worker: int, charges: int, barrier, queue, profile: str | None) -> None:
    counts = {"locked": 0, "free": 0, "held": 0.0}
    _instrument(counts)
    ledger = accounting.Ledger.open(url)
    counts["locked"] = counts["free"] = 0
    counts["by_sql"] = {}
    barrier.wait()
    rng = np.random.default_rng(worker)
    g = accounting.PureDP(0.001)
    profiler = cProfile.Profile() if profile and worker == 0 else None
    c0 = time.process_time()
    if profiler:
        profiler.enable()
    for _ in range(charges):
        start = int(rng.integers(0, POPULATION - 40))
        ledger.charge(g, range(start, start + int(rng.integers(1, 40))))
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile)
    counts["cpu"] = time.process_time() - c0
    ledger.close()
    queue.put(counts)


def measure(url: str, processes: int, charges: int, profile: str | None) -> dict:
    accounting.Ledger.open(url, accounting.PureDP(1e6), create=True).close()
    context = multiprocessing.get_context("fork")
    barrier, queue = context.Barrier(processes + 1), context.Queue()
    workers = [context.Process(target=_worker, args=(url, w, charges, barrier, queue, profile)) for w in range(processes)]
    for w in workers:
        w.start()
    barrier.wait()
    t0 = time.perf_counter()
    results = [queue.get() for _ in workers]
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    total = processes * charges
    by_sql: dict = {}
    for r in results:
        for sql, (n,) in r["by_sql"].items():
            by_sql[sql] = by_sql.get(sql, 0) + n
    return {"ms per charge": 1e3 * wall / total,
            "statements under the lock": sum(r["locked"] for r in results) / total,
            "statements outside": sum(r["free"] for r in results) / total,
            "lock held, ms per charge": 1e3 * sum(r["held"] for r in results) / total,
            "CPU ms per charge (ledger processes)": 1e3 * sum(r["cpu"] for r in results) / total,
            "by_sql": {k: v / total for k, v in sorted(by_sql.items(), key=lambda kv: -kv[1])}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--charges", type=int, default=200)
    parser.add_argument("--stores", default="full,normal,postgresql")
    parser.add_argument("--profile", default=None, help="a pstats file for worker 0 (one per store: suffixed)")
    parser.add_argument("--by-sql", action="store_true", help="also list statements per charge by their text")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="dpverify-ledger-profile-"))
    os.environ["DPVERIFY_LEDGER_WITNESS"] = str(directory / "witness")
    print(f"load average {os.getloadavg()}", flush=True)
    server = None
    try:
        for store in args.stores.split(","):
            if store == "postgresql":
                from _postgres import PostgresServer

                server = PostgresServer()
                url = server.url()
            else:
                url = f"sqlite:///{directory}/{store}.db" + ("?synchronous=normal" if store == "normal" else "")
            profile = f"{args.profile}.{store}" if args.profile else None
            result = measure(url, args.processes, args.charges, profile)
            by_sql = result.pop("by_sql")
            print(store, ", ".join(f"{k}: {v:.3g}" for k, v in result.items()), flush=True)
            if args.by_sql:
                for sql, n in by_sql.items():
                    print(f"    {n:6.2f}  {sql}")
            if profile:
                pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
