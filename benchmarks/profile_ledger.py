"""Where a durable ledger's charge spends its time when several processes share the ledger.

For each store (SQLite FULL / NORMAL, PostgreSQL 15) ``--processes`` processes charge one fresh
ledger (the throughput workload of ``bench_ledger.py``: PureDP(0.001) on 1-39 of 3,000 users) and
report, per charge: the SQL statements the ledger sends through the store's ``_execute`` /
``_execute_many`` inside the write transaction and outside it; the reads it waits for inside the
transaction (``all``/``one``, a ``batch`` counted once: on PostgreSQL each is a round trip, while
writes are pipelined); how long the lock is held (from the first read's answer to the end of the
commit); and the CPU time of the charging processes. Statements a store issues on the connection
itself (SQLite's BEGIN IMMEDIATE, PRAGMA data_version, COMMIT) are not counted. ``--profile``
writes a cProfile of worker 0 (a ``pstats`` file per store) and prints its top entries.
``LEDGER_TREE=/dir`` profiles the ``accounting`` package in /dir instead (an older commit's, from
``git archive``), for before/after counts.

    PYTHONPATH=. python benchmarks/profile_ledger.py [--processes 8] [--charges 200] [--by-sql] [--profile ledger.prof]
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
# LEDGER_TREE=/dir: profile the accounting package found there instead (e.g. an older commit's, from git archive)
sys.path.insert(0, os.environ.get("LEDGER_TREE", str(ROOT)))
sys.path.insert(1, str(ROOT / "tests"))

import accounting  # noqa: E402

POPULATION = 3000


def _store_classes() -> list[type]:
    import importlib

    # the stores' module by era: today's floor folder, then the flat module, then inside _durable
    for module, sqlite, postgres in (("accounting._ledgers._ledger_store", "SQLiteStore", "PostgresStore"),
                                     ("accounting." + "_ledger_store", "SQLiteStore", "PostgresStore"),
                                     ("accounting." + "_durable", "_SQLiteStore", "_PostgresStore")):
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        return [getattr(found, sqlite), getattr(found, postgres)]
    raise ImportError("no ledger store module in this tree")


def _instrument(counts: dict) -> None:
    """Count, per store method call while a write transaction is open (the lock held but for the
    first read, which takes it on PostgreSQL): ``statements`` sent, ``awaited`` reads (all/one, a
    batch counted once: on PostgreSQL each is a round trip; writes are pipelined), and ``held``, the
    seconds from the first read's answer (the lock is held) to the end of the commit. Outside a
    write transaction: ``outside`` statements."""
    import contextlib

    state = {"in_write": False, "t0": None, "in_batch": False}
    for cls in _store_classes():
        execute, execute_many, write = cls._execute, cls._execute_many, cls.write

        def counted(original):
            def wrapper(self, sql, params):
                key = "statements" if state["in_write"] else "outside"
                counts[key] += 1
                if state["in_write"]:
                    counts["by_sql"][sql.split(" WHERE")[0][:70]] = counts["by_sql"].get(sql.split(" WHERE")[0][:70], 0) + 1
                return original(self, sql, params)
            return wrapper

        def timed(original):
            @contextlib.contextmanager
            def wrapper(self, durable=True, **kwargs):
                state["in_write"], state["t0"] = True, None
                try:
                    with original(self, durable, **kwargs) as value:
                        yield value
                finally:
                    if state["t0"] is not None:
                        counts["held"] += time.perf_counter() - state["t0"]
                    state["in_write"] = False
            return wrapper

        cls._execute, cls._execute_many, cls.write = counted(execute), counted(execute_many), timed(write)
    base = _store_classes()[0].__mro__[1]
    for name in ("all", "one", "batch"):
        original = getattr(base, name, None)
        if original is None:
            continue

        def awaited(original):
            def wrapper(self, *args, **kwargs):
                nested = state["in_batch"]
                state["in_batch"] = True
                try:
                    return original(self, *args, **kwargs)
                finally:
                    state["in_batch"] = nested
                    if state["in_write"] and not nested:
                        counts["awaited"] += 1
                        if state["t0"] is None:
                            state["t0"] = time.perf_counter()
            return wrapper

        setattr(base, name, awaited(original))
    for cls in _store_classes():  # PostgresStore's own batch
        if "batch" in cls.__dict__:
            setattr(cls, "batch", awaited(cls.__dict__["batch"]))


def _worker(url: str, worker: int, charges: int, barrier, queue, profile: str | None) -> None:
    counts = {"statements": 0, "outside": 0, "awaited": 0, "held": 0.0, "by_sql": {}}
    _instrument(counts)
    ledger = accounting.Ledger.open(url)
    counts.update(statements=0, outside=0, awaited=0, held=0.0, by_sql={})
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
    try:
        accounting.Ledger.open(url, accounting.PureDP(1e6), create=True).close()
    except TypeError:  # before create=
        accounting.Ledger.open(url, accounting.PureDP(1e6)).close()
    context = multiprocessing.get_context("fork")
    barrier, queue = context.Barrier(processes + 1), context.Queue()
    workers = [context.Process(target=_worker, args=(url, w, charges, barrier, queue, profile)) for w in range(processes)]
    for w in workers:
        w.start()
    barrier.wait()
    t0 = time.perf_counter()
    results = [queue.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    total = processes * charges
    by_sql: dict = {}
    for r in results:
        for sql, n in r["by_sql"].items():
            by_sql[sql] = by_sql.get(sql, 0) + n
    return {"ms per charge": 1e3 * wall / total,
            "statements in the transaction": sum(r["statements"] for r in results) / total,
            "reads awaited (batch = 1)": sum(r["awaited"] for r in results) / total,
            "statements outside": sum(r["outside"] for r in results) / total,
            "lock held, ms": 1e3 * sum(r["held"] for r in results) / total,
            "CPU ms (charging processes)": 1e3 * sum(r["cpu"] for r in results) / total,
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
