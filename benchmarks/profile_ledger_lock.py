"""Where the 8-process SQLite (synchronous=NORMAL) cost per charge goes, before and after the hash chain.

Profiles the throughput workload of ``bench_ledger.py`` (8 processes x ``--charges`` charges of
PureDP(0.001) on 1-39 of 3,000 users, one fresh ledger) for the ledger of a baseline commit (no
chain) and this tree's, alternating, ``--runs`` each. Every process times its own transactions
(the store's lock context: BEGIN IMMEDIATE returned, body done, COMMIT returned), so the table
reports per charge: wall time, CPU (all processes), the time the lock is held before COMMIT
(the body), COMMITs over 1 ms (WAL checkpoints, preemption), and how often the process that
just committed takes the lock again next (SQLite's waiters sleep 1, 2, 5, 10 ... ms between
tries, so that process usually wins).

``--spin US``: instead, the baseline ledger with US microseconds of CPU spin added under the lock
(in its row insert) or before it (before each charge), alternating with none: does work cost
more under the lock than outside it?

    python benchmarks/profile_ledger_lock.py [--runs 5] [--charges 200] [--baseline 7cdb19a] [--spin 100]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ledger as bench  # noqa: E402

PROCESSES = 8


def _lock_context(impl) -> tuple[type, str]:
    """The SQLite store class and the name of its lock context manager (the baseline's store lived in _durable)."""
    if impl is bench.after:
        from accounting._ledgers._ledger_store import SQLiteStore

        return SQLiteStore, "_locked"
    return sys.modules[impl.__name__ + "._durable"]._SQLiteStore, "creating"


def _timed_lock(impl, log: list) -> None:
    cls, name = _lock_context(impl)
    locked = getattr(cls, name)

    @contextlib.contextmanager
    def timed(self):
        t0 = time.monotonic()
        with locked(self):
            t1 = time.monotonic()
            yield
            t2 = time.monotonic()
        log.append((t0, t1, t2, time.monotonic(), os.getpid()))

    setattr(cls, name, timed)


def _worker(impl_name: str, url: str, worker: int, charges: int, barrier, queue) -> None:
    impl = bench.after if impl_name == "after" else bench.before
    ledger = bench._open(impl, url)
    log: list = []
    _timed_lock(impl, log)
    barrier.wait()
    cpu = time.process_time()
    bench._charge_many(impl, ledger, worker, charges)
    queue.put((log, time.process_time() - cpu))
    ledger.close()


def profile(impl, url: str, charges: int) -> dict:
    bench._open(impl, url, impl.PureDP(1e6)).close()
    context = multiprocessing.get_context("fork")
    barrier, queue = context.Barrier(PROCESSES + 1), context.Queue()
    name = "after" if impl is bench.after else "before"
    workers = [context.Process(target=_worker, args=(name, url, w, charges, barrier, queue)) for w in range(PROCESSES)]
    for w in workers:
        w.start()
    barrier.wait()
    t0 = time.monotonic()
    results = [queue.get() for _ in workers]
    wall = time.monotonic() - t0
    for w in workers:
        w.join()
    log = sorted((entry for entries, _ in results for entry in entries), key=lambda entry: entry[1])
    n = len(log)
    body = np.array([e[2] - e[1] for e in log])
    commit = np.array([e[3] - e[2] for e in log])
    return {
        "wall (ms)": 1e3 * wall / n,
        "CPU, all processes (ms)": 1e3 * sum(cpu for _, cpu in results) / n,
        "body median (ms)": 1e3 * float(np.median(body)),
        "body mean (ms)": 1e3 * float(np.mean(body)),
        f"commits > 1 ms (of {n:,})": int(np.sum(commit > 1e-3)),
        "same process next (%)": 100 * float(np.mean([a[4] == b[4] for a, b in itertools.pairwise(log)])),
    }


def spin_rows(runs: int, charges: int, spin: float, directory: Path) -> list[str]:
    durable = sys.modules[bench.before.__name__ + "._durable"].DurableLedger
    write_charge, charge_many = durable._write_charge, durable.charge_many
    mode = ["none"]

    def burn() -> None:
        end = time.process_time() + spin
        while time.process_time() < end:
            pass

    def spun_write_charge(self, *args, **kwargs):
        if mode[0] == "under the lock":
            burn()
        return write_charge(self, *args, **kwargs)

    def spun_charge_many(self, *args, **kwargs):
        if mode[0] == "before the lock":
            burn()
        return charge_many(self, *args, **kwargs)

    durable._write_charge, durable.charge_many = spun_write_charge, spun_charge_many
    times: dict[str, list[float]] = {"none": [], "under the lock": [], "before the lock": []}
    counter = 0
    for _ in range(runs):
        for label, measured in times.items():
            mode[0], counter = label, counter + 1
            url = f"sqlite:///{directory}/spin{counter}.db?synchronous=normal"
            measured.append(1e3 / bench.charges_per_second(bench.before, url, PROCESSES, charges))
    none = statistics.median(times["none"])
    return [f"| {label} | {statistics.median(t):.3f} | {statistics.median(t) - none:+.3f} | {', '.join(f'{x:.3f}' for x in t)} |"
            for label, t in times.items()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--charges", type=int, default=200, help="charges per process")
    parser.add_argument("--baseline", default="7cdb19a", help="the commit whose ledger is 'before'")
    parser.add_argument("--spin", type=float, default=None, metavar="US", help="the spin experiment instead, US microseconds")
    args = parser.parse_args()
    bench.before = bench._load_baseline(args.baseline)
    directory = Path(tempfile.mkdtemp(prefix="dpverify-ledger-profile-"))
    os.environ["DPVERIFY_LEDGER_WITNESS"] = str(directory / "witness")
    if args.spin is not None:
        print(f"| {args.spin:g} us of CPU spin in the baseline ledger, {PROCESSES} processes | ms per charge (median) | "
              "minus none | runs (ms) |\n|---|---|---|---|")
        print("\n".join(spin_rows(args.runs, args.charges, args.spin * 1e-6, directory)))
        return
    rows: dict[str, list[dict]] = {"before": [], "after": []}
    counter = 0
    for _ in range(args.runs):
        for label, impl in (("before", bench.before), ("after", bench.after)):
            counter += 1
            rows[label].append(profile(impl, f"sqlite:///{directory}/l{counter}.db?synchronous=normal", args.charges))
    keys = list(rows["before"][0])
    print(f"| ledger ({PROCESSES} processes, SQLite NORMAL, median of {args.runs}) | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for label, name in (("before", f"{args.baseline} (no chain)"), ("after", "this tree")):
        print(f"| {name} | " + " | ".join(f"{statistics.median(r[k] for r in rows[label]):.3g}" for k in keys) + " |")


if __name__ == "__main__":
    main()
