"""A run's cost before it starts: CPU time and memory from the measured per-pull rates.

``dpverify run`` prints this estimate and refuses (exit 2) above a limit unless ``--yes``; a run
whose memory would exceed the machine's is refused even with ``--yes`` (it could only end in a
MemoryError). The rates are BENCHMARKS.md's (benchmarks/bandits.md: one pinned core of the 2-core
dev VM, idle), so the estimate is of an idle core; a loaded machine is slower, which is why the
printed figure is called an estimate and the limit is generous.

Model, per seed:

- per-user path (and DP-SE, UCB): every pull is simulated, ``T x rate``: 12 ns per pull for
  Algorithm 1 (Dist-DP-SE, T = 1e7 in 0.119 s), 133 ns for the UCB family (the slowest of the five,
  LDP-UCB-LS, was T = 1e6 in 0.078 s with its float Laplace; its float-safe default, one exact
  discrete Laplace per report by inversion, takes 0.9-1.2x that in the same run: ``benchmarks/float_safe.md``); a batch of n users holds ~32 bytes per user (reward, rounding,
  noise share, message), the largest batch being the largest base^b < T;
- aggregate path: O(g) per release instead of O(n), g = ceil(s eps sqrt(n)) (s = 1 for the
  unscaled kinds): 35 us per release plus ~20 ns per histogram cell, releases <= K per batch, and
  the rounded-reward laws kept per (arm, g): 8 bytes per cell;
- linear family: no measured model (``None``: no estimate, no refusal).

Plus 2 s per configuration for the certified accounting of its first run (memoised afterwards).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from .._executed._noise import FLOAT_SAFE_GRID

__all__ = ["RunCost", "estimate_cost", "machine_memory"]

#: seconds per simulated pull (per-user path), by algorithm family
PER_PULL_SECONDS = {"elimination": 12e-9, "ucb": 133e-9}
#: aggregate path: seconds per release, per histogram cell; bytes per histogram cell kept
RELEASE_SECONDS = 35e-6
CELL_SECONDS = 20e-9
CELL_BYTES = 8
#: per-user path: bytes held per user of the batch in flight
USER_BYTES = 32
#: first-run certified accounting of a configuration
ACCOUNTING_SECONDS = 2.0
#: refuse runs estimated longer than this (wall seconds) unless --yes
DEFAULT_LIMIT_SECONDS = 600.0

_UCB = ("ucb1", "ldp-ucb-l", "ldp-ucb-b", "ldp-ucb-ls", "ldp-ucb-bs")
_ELIMINATION = ("se", "dist-dp-se", "dist-rdp-se", "dist-cdp-se", "cdp-se", "ldp-se", "dp-se")
#: the algorithms with an aggregate path (README; ``_figures._configs``'s "auto")
_AGGREGATE = ("dist-dp-se", "dist-rdp-se", "cdp-se", "dp-se")
_SCALED = ("dist-rdp-se", "dist-cdp-se")


@dataclass(frozen=True)
class RunCost:
    """The estimate: CPU seconds over all seeds, wall seconds with the workers, peak bytes of one run."""

    cpu_seconds: float
    wall_seconds: float
    peak_bytes: float
    model: str
    aggregate_available: bool

    def describe(self) -> str:
        return (
            f"estimated {_human_seconds(self.wall_seconds)} wall ({_human_seconds(self.cpu_seconds)} CPU) and "
            f"{_human_bytes(self.peak_bytes)} per run [{self.model}; rates of an idle core, BENCHMARKS.md]"
        )


def _human_seconds(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g} h"
    if seconds < 2 * 365 * 86400:
        return f"{seconds / 86400:.3g} days"
    return f"{seconds / (365 * 86400):.3g} years"


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PB"  # pragma: no cover


def machine_memory() -> float:
    """Physical memory of this machine in bytes (inf when the platform does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return math.inf


def _batch_sizes(horizon: int, base: int) -> list[int]:
    sizes, n = [], base
    while n < horizon:
        sizes.append(n)
        n *= base
    return sizes or [1]


def estimate_cost(algorithm: str, horizon: int, seeds: int, *, arms: int, path: str = "per-user", epsilon: float | None = None,
                  s: float = 1.0, batch_base: int = 2, workers: int = 1) -> RunCost | None:
    """The cost of ``seeds`` runs of ``algorithm`` for ``horizon`` pulls (module docstring), or None
    when there is no measured model for it (the linear family)."""
    if algorithm in _UCB:
        family = "ucb"
    elif algorithm in _ELIMINATION:
        family = "elimination"
    else:
        return None
    parallel = max(1, min(int(workers or 1), int(seeds)))
    aggregate_available = algorithm in _AGGREGATE
    if path == "aggregate" and algorithm in _AGGREGATE:
        eps = float(epsilon or 1.0)
        scale = float(s) if algorithm in _SCALED else 1.0
        sizes = _batch_sizes(horizon, batch_base)
        # DP-SE's float-safe release: the histogram of the epoch's roundings on the grid 1/2^16 (2^16 + 1 cells)
        cells = [FLOAT_SAFE_GRID + 1] * len(sizes) if algorithm == "dp-se" else [math.ceil(scale * eps * math.sqrt(n)) + 1 for n in sizes]
        per_seed = arms * (len(cells) * RELEASE_SECONDS + sum(cells) * CELL_SECONDS)
        peak = arms * sum(cells) * CELL_BYTES
        model = f"aggregate path: {len(cells)} batches x {arms} arms, O(g) per release"
    else:
        per_seed = horizon * PER_PULL_SECONDS[family]
        largest = _batch_sizes(horizon, batch_base)[-1] if family == "elimination" else 1
        peak = largest * USER_BYTES
        model = f"{path} path: {PER_PULL_SECONDS[family] * 1e9:.0f} ns per pull"
    cpu = seeds * per_seed + ACCOUNTING_SECONDS
    return RunCost(cpu, cpu / parallel, float(peak), model, aggregate_available and path != "aggregate")
