"""Shared timing helpers for the benchmark scripts (one core, medians, same-run baselines)."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
REPORT = REPO / "benchmarks" / "samplers.md"


def median_seconds(fn, runs: int) -> tuple[float, float]:
    """(median wall-clock seconds, median CPU seconds of this process) over ``runs`` calls.

    CPU time is reported beside wall time because a shared machine steals wall time from a
    single-threaded kernel without changing the work it does."""
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def uniform_seconds(count: int, runs: int, seed: int = 0) -> tuple[float, float]:
    """Median (wall, CPU) time for the same kind of Generator (PCG64) to fill ``count`` raw uniforms."""
    rng = np.random.default_rng(seed)
    out = np.empty(count)
    rng.random(out=out)  # touch the pages once
    return median_seconds(lambda: rng.random(out=out), runs)


def machine() -> str:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = "load unknown"
    import numba

    return (
        f"{cpu}, {os.cpu_count()} logical CPUs ({load} at start), Python {platform.python_version()}, "
        f"numpy {np.__version__}, numba {numba.__version__}, {platform.system()} {platform.release()}"
    )


def compile_times(snippet: str) -> tuple[float, float]:
    """Seconds for ``snippet`` in a fresh interpreter with an empty numba cache (JIT compile), and
    again in a second fresh interpreter that loads the cache the first one wrote."""
    import tempfile

    results = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(REPO))
        code = f"import time, numpy as np\nt0 = time.perf_counter()\n{snippet}\nprint(time.perf_counter() - t0)"
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
            results.append(float(out.stdout.strip().splitlines()[-1]))
    return results[0], results[1]


def write_section(name: str, body: str) -> None:
    """Replace the section between this script's markers in benchmarks/samplers.md."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = REPORT.read_text() if REPORT.exists() else "# Sampler and protocol benchmarks\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    REPORT.write_text(text)
