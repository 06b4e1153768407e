"""Durable ledger throughput: charges per second on SQLite and PostgreSQL, 1 and 8 processes,
against the in-memory ledger in the same run; and what the ~130 charges of a Dist-DP-SE run cost.

Workload: each charge is PureDP(0.001) on a random range of 1-39 users of a 3,000-user population
(budget eps = 1e6, so nothing is refused and every charge is written), the shape of a returning
users' run. Durability on: SQLite in WAL mode with synchronous=FULL (each commit fsynced before
``charge`` returns; ``synchronous=normal`` shown for comparison: it survives a process crash but
may lose the last commits on power loss, which would be a charge lost *after* its release: a
leak, hence FULL by default); PostgreSQL with its defaults fsync=on, synchronous_commit=on.
Median of 5 runs each. 8 processes share one ledger (charges serialise on its lock); the in-memory
baseline is one process's own ledger (it cannot be shared).

    python benchmarks/bench_ledger.py [--runs 5] [--charges 200] [--out benchmarks/ledger.md]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _common import machine  # noqa: E402

import accounting as acc  # noqa: E402

POPULATION = 3000


def _charge_many(ledger, worker: int, charges: int) -> None:
    rng = np.random.default_rng(worker)
    g = acc.PureDP(0.001)
    for _ in range(charges):
        start = int(rng.integers(0, POPULATION - 40))
        ledger.charge(g, range(start, start + int(rng.integers(1, 40))))


def _worker(url: str, worker: int, charges: int, barrier) -> None:
    ledger = acc.Ledger.open(url)
    barrier.wait()
    _charge_many(ledger, worker, charges)
    ledger.close()


def charges_per_second(make_url, processes: int, charges: int) -> float:
    """Charges per second (all processes together) on a fresh ledger."""
    if make_url is None:  # in memory, one process
        ledger = acc.Ledger(acc.PureDP(1e6))
        t0 = time.perf_counter()
        _charge_many(ledger, 0, charges)
        return charges / (time.perf_counter() - t0)
    url = make_url()
    acc.Ledger.open(url, acc.PureDP(1e6)).close()
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(processes + 1)
    workers = [context.Process(target=_worker, args=(url, w, charges, barrier)) for w in range(processes)]
    for w in workers:
        w.start()
    barrier.wait()  # every process has connected: time the charges only
    t0 = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    return processes * charges / elapsed


def run_charges() -> list:
    """The charges of one Dist-DP-SE run, K = 10, T = 10^7, aggregate path (what its privatizers
    charge, in order: guarantee, participants, label)."""
    from dpverify._bandits import RunConfig
    from dpverify._bandits._elimination import Privatizer
    from dpverify._bandits._runner import run_seed

    charges = []
    original = Privatizer._charge

    def spy(self, guarantee, participants, n, label):
        charges.append((guarantee, participants, label))
        return original(self, guarantee, participants, n, label)

    Privatizer._charge = spy
    try:
        run_seed(RunConfig(algorithm="dist-dp-se", instance="easy", horizon=10**7, epsilon=1.0, seeds=1, path="aggregate").validate(), 0)
    finally:
        Privatizer._charge = original
    return charges


def replay_seconds(charges: list, make_ledger, by_round: bool = False) -> float:
    """Seconds to record ``charges`` in order: one transaction each, or (``by_round``) one per batch
    round, as the runner's ``prepare_round`` does (``Ledger.prepay``, then each charge finds its own)."""
    ledger = make_ledger()
    rounds: dict[str, list] = {}
    for item in charges:
        rounds.setdefault(item[2].split()[0], []).append(item)
    t0 = time.perf_counter()
    if by_round:
        for items in rounds.values():
            ledger.prepay(items)
            for guarantee, participants, label in items:
                ledger.charge(guarantee, participants, label=label)
    else:
        for guarantee, participants, label in charges:
            ledger.charge(guarantee, participants, label=label)
    elapsed = time.perf_counter() - t0
    if hasattr(ledger, "close"):
        ledger.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--charges", type=int, default=200, help="charges per process")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "ledger.md"))
    parser.add_argument("--replay-only", action="store_true", help="skip the charges/s table")
    args = parser.parse_args()
    from _postgres import PostgresServer

    directory = Path(tempfile.mkdtemp(prefix="dpverify-ledger-bench-"))
    counter = iter(range(10**6))
    server = PostgresServer()
    stores = {
        "in memory (baseline)": None,
        "SQLite, WAL, synchronous=FULL": lambda: f"sqlite:///{directory}/l{next(counter)}.db",
        "SQLite, WAL, synchronous=NORMAL": lambda: f"sqlite:///{directory}/l{next(counter)}.db?synchronous=normal",
        "PostgreSQL 15, synchronous_commit=on": server.url,
    }
    lines = [
        "# Durable ledger throughput (`benchmarks/bench_ledger.py`)",
        "",
        f"Machine: {machine()}.",
        f"Charges: PureDP(0.001) on 1-39 of {POPULATION} users each, never refused; {args.charges} per process; "
        f"median of {args.runs} runs; the in-memory ledger measured in the same run.",
        "",
        "| store | processes | charges/s (median) | ms per charge | runs (charges/s) | vs in memory |",
        "|---|---|---|---|---|---|",
    ]
    try:
        baseline = None
        for name, factory in stores.items() if not args.replay_only else ():
            for processes in (1, 8):
                if factory is None and processes == 8:
                    continue
                rates = [charges_per_second(factory, processes, args.charges) for _ in range(args.runs)]
                rate = statistics.median(rates)
                baseline = baseline or rate
                line = (f"| {name} | {processes} | {rate:,.0f} | {1e3 / rate:.3g} | {', '.join(f'{r:,.0f}' for r in rates)} | "
                        f"{rate / baseline:.3g}x |")
                print(line, flush=True)
                lines.append(line)
        charges = run_charges()
        budget = acc.PureDP(10.0)
        replays = {
            "in memory (baseline)": lambda: acc.Ledger(budget),
            "SQLite, synchronous=FULL": lambda: acc.Ledger.open(stores["SQLite, WAL, synchronous=FULL"](), budget),
            "SQLite, synchronous=NORMAL": lambda: acc.Ledger.open(stores["SQLite, WAL, synchronous=NORMAL"](), budget),
            "PostgreSQL, synchronous_commit=on": lambda: acc.Ledger.open(server.url(), budget),
        }
        lines += [
            "",
            f"The {len(charges)} charges of a Dist-DP-SE run (K = 10, T = 10^7, aggregate path, unique users), replayed "
            f"in order into each ledger; median of {args.runs} (each on a fresh ledger):",
            "",
            "| ledger | all charges (s) | per charge (ms) | runs (s) |",
            "|---|---|---|---|",
        ]
        for name, make in replays.items():
            for by_round in (False, True) if "memory" not in name else (False,):
                times = [replay_seconds(charges, make, by_round) for _ in range(args.runs)]
                median = statistics.median(times)
                how = ", one transaction per batch round (as `run --ledger`)" if by_round else ", one transaction per charge"
                lines.append(f"| {name}{how if 'memory' not in name else ''} | {median:.3f} | {median / len(charges) * 1e3:.2f} | "
                             f"{', '.join(f'{t:.3f}' for t in times)} |")
                print(lines[-1], flush=True)
    finally:
        server.stop()
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
