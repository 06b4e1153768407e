"""Durable ledger cost per charge, before and after the hash chain, in the same run.

The "before" ledger is the ``accounting`` package of a baseline commit (default 7cdb19a, the last
commit without the chain), extracted with ``git archive`` into a temporary directory and imported
as ``accounting_before``; the "after" ledger is this tree's. Each measurement alternates before
and after (before, after, before, after, ...), median of ``--runs`` (5), so both see the same
machine load.

Workloads:

- *throughput*: PureDP(0.001) on a random range of 1-39 users of a 3,000-user population (budget
  eps = 1e6: nothing is refused, every charge is written), ``--charges`` per process, 1 and 8
  processes sharing one fresh ledger (8: charges serialise on its lock; after the chain each
  process also checks, under the lock, the rows the others appended). SQLite WAL with
  synchronous=FULL (the default) and NORMAL, PostgreSQL 15 with synchronous_commit=on;
- *run*: the 129 charges of a Dist-DP-SE run (K = 10, T = 10^7, aggregate path), replayed in order
  with one transaction per batch round (``prepay``, as ``run --ledger`` records them);
- *open*: opening a ledger of n charges for writing (after: the integrity check, the whole chain
  and the derived tables' digests; before: the header only), n = 200, 2,000, 20,000.

The witness of the chain head is written to a temporary directory (on, as by default).

    python benchmarks/bench_ledger.py [--runs 5] [--charges 200] [--baseline 7cdb19a] [--out benchmarks/ledger.md]
        [--parts throughput,run,open] [--processes 1,8] [--stores full,normal,postgresql]
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine  # noqa: E402

import accounting as after  # noqa: E402

POPULATION = 3000
before = None  # the baseline package, imported in main()


def _load_baseline(ref: str) -> object:
    """The baseline commit's accounting package, importable as accounting_before."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "accounting"], check=True, capture_output=True).stdout
    directory = Path(tempfile.mkdtemp(prefix="dpverify-ledger-baseline-"))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    (directory / "accounting").rename(directory / "accounting_before")
    sys.path.insert(0, str(directory))
    import accounting_before

    return accounting_before


def _open(impl, url: str, budget=None):
    if impl is after:
        return impl.Ledger.open(url, budget, create=budget is not None)
    return impl.Ledger.open(url, budget)


def _charge_many(impl, ledger, worker: int, charges: int) -> None:
    rng = np.random.default_rng(worker)
    g = impl.PureDP(0.001)
    for _ in range(charges):
        start = int(rng.integers(0, POPULATION - 40))
        ledger.charge(g, range(start, start + int(rng.integers(1, 40))))


def _worker(impl_name: str, url: str, worker: int, charges: int, barrier) -> None:
    impl = after if impl_name == "after" else before
    ledger = _open(impl, url)
    barrier.wait()
    _charge_many(impl, ledger, worker, charges)
    ledger.close()


def charges_per_second(impl, url: str, processes: int, charges: int) -> float:
    """Charges per second (all processes together) on the fresh ledger at ``url``."""
    _open(impl, url, impl.PureDP(1e6)).close()
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(processes + 1)
    name = "after" if impl is after else "before"
    workers = [context.Process(target=_worker, args=(name, url, w, charges, barrier)) for w in range(processes)]
    for w in workers:
        w.start()
    barrier.wait()  # every process has connected (and, after, checked the ledger): time the charges only
    t0 = time.perf_counter()
    for w in workers:
        w.join()
        if w.exitcode != 0:
            raise RuntimeError(f"worker exited with {w.exitcode}")
    return processes * charges / (time.perf_counter() - t0)


def run_charges() -> list:
    """The charges of one Dist-DP-SE run, K = 10, T = 10^7, aggregate path (guarantee, participants, label)."""
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


def _translate(impl, g):
    """A guarantee of this tree as the baseline package's object (same parameters)."""
    if impl is after:
        return g
    from accounting._ledgers._ledger_codec import guarantee_to_dict

    return impl._ledger._guarantee_from_dict(guarantee_to_dict(g))


def replay_seconds(impl, charges: list, url: str) -> float:
    """Seconds to record ``charges`` in order, one transaction per batch round (prepay)."""
    ledger = _open(impl, url, impl.PureDP(10.0))
    rounds: dict[str, list] = {}
    for guarantee, participants, label in charges:
        rounds.setdefault(label.split()[0], []).append((_translate(impl, guarantee), participants, label))
    t0 = time.perf_counter()
    for items in rounds.values():
        ledger.prepay(items)
        for guarantee, participants, label in items:
            ledger.charge(guarantee, participants, label=label)
    elapsed = time.perf_counter() - t0
    ledger.close()
    return elapsed


def open_seconds(impl, url: str) -> float:
    t0 = time.perf_counter()
    ledger = _open(impl, url)
    elapsed = time.perf_counter() - t0
    ledger.close()
    return elapsed


def _fill(impl, url: str, n: int) -> None:
    """A ledger of n charges (written fast: synchronous=normal, one transaction per 100)."""
    ledger = _open(impl, url, impl.PureDP(1e9))
    rng = np.random.default_rng(n)
    g = impl.PureDP(0.001)
    for block in range(0, n, 100):
        items = []
        for i in range(block, min(n, block + 100)):
            start = int(rng.integers(0, POPULATION - 40))
            items.append((g, range(start, start + int(rng.integers(1, 40))), f"c{i}"))
        ledger.charge_many(items)
    ledger.close()


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main() -> None:
    global before
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--charges", type=int, default=200, help="charges per process")
    parser.add_argument("--baseline", default="7cdb19a", help="the commit whose ledger is 'before'")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "ledger.md"))
    parser.add_argument("--parts", default="throughput,run,open", help="which tables to measure (comma-separated)")
    parser.add_argument("--processes", default="1,8", help="throughput: process counts (comma-separated)")
    parser.add_argument("--stores", default="full,normal,postgresql", help="which stores (comma-separated)")
    args = parser.parse_args()
    parts, counts = set(args.parts.split(",")), [int(p) for p in args.processes.split(",")]
    chosen = set(args.stores.split(","))
    before = _load_baseline(args.baseline)
    directory = Path(tempfile.mkdtemp(prefix="dpverify-ledger-bench-"))
    os.environ["DPVERIFY_LEDGER_WITNESS"] = str(directory / "witness")
    counter = iter(range(10**6))
    from _postgres import PostgresServer

    server = PostgresServer()
    stores = {
        "SQLite, WAL, synchronous=FULL": lambda: f"sqlite:///{directory}/l{next(counter)}.db",
        "SQLite, WAL, synchronous=NORMAL": lambda: f"sqlite:///{directory}/l{next(counter)}.db?synchronous=normal",
        "PostgreSQL 15, synchronous_commit=on": server.url,
    }
    stores = {name: make for (name, make), key in zip(stores.items(), ("full", "normal", "postgresql")) if key in chosen}
    lines = [
        "# Durable ledger: cost per charge before and after the hash chain (`benchmarks/bench_ledger.py`)",
        "",
        f"Machine: {machine()}.",
        f"Before: the ledger of commit {args.baseline} (no chain); after: this tree (chain, digests, witness, checks on open). "
        f"Every cell alternates before and after in the same run; median of {args.runs}.",
        "",
        f"Throughput: PureDP(0.001) on 1-39 of {POPULATION} users each, never refused, {args.charges} charges per process, "
        "processes sharing one fresh ledger.",
        "",
        "| store | processes | before: ms per charge (median) | after: ms per charge (median) | after / before | runs before (ms) | runs after (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    try:
        for name, make in stores.items() if "throughput" in parts else ():
            for processes in counts:
                times = {"before": [], "after": []}
                for _ in range(args.runs):
                    for label, impl in (("before", before), ("after", after)):
                        times[label].append(1e3 / charges_per_second(impl, make(), processes, args.charges))
                b, a = statistics.median(times["before"]), statistics.median(times["after"])
                lines.append(_row([name, processes, f"{b:.3g}", f"{a:.3g}", f"{a / b:.2f}x",
                                   ", ".join(f"{t:.3g}" for t in times["before"]), ", ".join(f"{t:.3g}" for t in times["after"])]))
                print(lines[-1], flush=True)
        charges = run_charges() if "run" in parts else []
        lines += [] if "run" not in parts else [
            "",
            f"A run's charges: the {len(charges)} charges of a Dist-DP-SE run (K = 10, T = 10^7, aggregate path), one transaction "
            "per batch round (as `run --ledger` records them), each replay on a fresh ledger:",
            "",
            "| store | before: s (median) | after: s (median) | after / before | runs before (s) | runs after (s) |",
            "|---|---|---|---|---|---|",
        ]
        for name, make in stores.items() if "run" in parts else ():
            times = {"before": [], "after": []}
            for _ in range(args.runs):
                for label, impl in (("before", before), ("after", after)):
                    times[label].append(replay_seconds(impl, charges, make()))
            b, a = statistics.median(times["before"]), statistics.median(times["after"])
            lines.append(_row([name, f"{b:.3f}", f"{a:.3f}", f"{a / b:.2f}x", ", ".join(f"{t:.3f}" for t in times["before"]),
                               ", ".join(f"{t:.3f}" for t in times["after"])]))
            print(lines[-1], flush=True)
        lines += [] if "open" not in parts else [
            "",
            "Opening a ledger of n charges for writing (after: SQLite quick_check, the whole chain and both set digests, the "
            "witness; before: the header):",
            "",
            "| store | charges | before: ms (median) | after: ms (median) | runs after (ms) |",
            "|---|---|---|---|---|",
        ]
        for name in [n for n in ("SQLite, WAL, synchronous=NORMAL", "PostgreSQL 15, synchronous_commit=on") if n in stores and "open" in parts]:
            for n in (200, 2000, 20000):
                urls = {}
                for label, impl in (("before", before), ("after", after)):
                    urls[label] = stores[name]()
                    _fill(impl, urls[label], n)
                times = {"before": [], "after": []}
                for _ in range(args.runs):
                    for label, impl in (("before", before), ("after", after)):
                        times[label].append(1e3 * open_seconds(impl, urls[label]))
                b, a = statistics.median(times["before"]), statistics.median(times["after"])
                lines.append(_row([name, f"{n:,}", f"{b:.3g}", f"{a:.3g}", ", ".join(f"{t:.3g}" for t in times["after"])]))
                print(lines[-1], flush=True)
    finally:
        server.stop()
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
