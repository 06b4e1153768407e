"""The returning-users calibration of Dist-CDP-SE, before and after the pruned order scan and the
ruled-out parameters, in the same run.

Workload: ``calibrated_batch_epsilon`` as ``returning_users_plan`` calls it for
``RunConfig("dist-cdp-se", "easy", 2**15, epsilon=0.5, population=2**14, max_returns=4)`` (the
slow test ``test_dist_cdp_se_with_returning_users_runs_within_budget``): ``accounting.calibrate``
over the noise multiplier, each evaluation converting the 4-fold composition of the maximum of the
exact discrete-Gaussian-sum curves of every batch size (2 .. 2^14) to (eps, 1e-6).

"Before" is the ``accounting`` and ``dpverify`` packages of a baseline commit (default d494c32,
the last commit with the full 2,049-order float scan and every parameter evaluated), extracted
with ``git archive`` into a temporary directory that comes first on ``PYTHONPATH``; "after" is
this tree. Every run is a fresh interpreter, so neither side profits from
the other's memoised residue tables, and runs alternate (before, after, before, ...) so both see
the same machine load. Each run also reports its calibrated result; the script fails if the two
sides disagree in any field.

    python benchmarks/bench_returning_calibration.py [--runs-before 3] [--runs-after 5] [--baseline d494c32] [--out benchmarks/returning_calibration.md]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine

#: one calibration in a fresh interpreter; prints (wall s, CPU s, result) as JSON
_SNIPPET = """
import json, time
from dpverify._bandits._builtin import calibrated_batch_epsilon
from dpverify._bandits._runner import RunConfig
import accounting
config = RunConfig("dist-cdp-se", "easy", 2**15, epsilon=0.5, seeds=1, seed=2, population=2**14, max_returns=4)
args = (config.algorithm, float(config.epsilon), float(config.delta), int(config.max_returns), float(config.s), config.confidence,
        config.tau_p_for(10), int(config.horizon), int(config.batch_base), config.returning_calibration)
t0, c0 = time.perf_counter(), time.process_time()
result = calibrated_batch_epsilon(*args)
import dpverify
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "result": result, "accounting": accounting.__file__, "dpverify": dpverify.__file__}))
"""


def _baseline_dir(ref: str) -> Path:
    """A temporary directory holding the baseline commit's ``accounting`` and ``dpverify`` packages."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "accounting", "dpverify"], check=True, capture_output=True).stdout
    directory = Path(tempfile.mkdtemp(prefix="dpverify-calibration-baseline-"))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    return directory


def _run(first_on_path: Path | None, workdir: Path) -> dict:
    path = [str(first_on_path)] if first_on_path is not None else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, str(ROOT)]), NUMBA_CACHE_DIR=str(workdir / "numba-cache"))
    # cwd outside the repository: ``python -c`` puts the working directory first on sys.path,
    # which would shadow the baseline package with this tree's
    out = subprocess.run([sys.executable, "-c", _SNIPPET], env=env, check=True, capture_output=True, text=True, cwd=str(workdir))
    result = json.loads(out.stdout.strip().splitlines()[-1])
    expected = first_on_path if first_on_path is not None else ROOT
    for package in ("accounting", "dpverify"):
        if not Path(result[package]).resolve().is_relative_to(expected.resolve()):
            raise SystemExit(f"wrong {package} package imported: {result[package]} (expected under {expected})")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-before", type=int, default=3, help="fresh-interpreter runs of the baseline (each ~2 min)")
    parser.add_argument("--runs-after", type=int, default=5)
    parser.add_argument("--baseline", default="d494c32", help="the commit whose accounting package is 'before'")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "returning_calibration.md"))
    args = parser.parse_args()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    info = machine()
    baseline = _baseline_dir(args.baseline)
    workdir = Path(tempfile.mkdtemp(prefix="dpverify-calibration-run-"))
    before: list[dict] = []
    after: list[dict] = []
    for index in range(max(args.runs_before, args.runs_after)):
        if index < args.runs_before:
            before.append(_run(baseline, workdir))
            print(f"before run {index + 1}: {before[-1]['wall']:.1f} s", file=sys.stderr, flush=True)
        if index < args.runs_after:
            after.append(_run(None, workdir))
            print(f"after run {index + 1}: {after[-1]['wall']:.1f} s", file=sys.stderr, flush=True)
    # the baseline's fields (after also counts the parameters it ruled out, a field the baseline lacks)
    ruled_out = {r["result"]["calibration"].pop("ruled_out_evaluations", None) for r in after}
    # after also pays the samplers' total variation (n 2^-100 per batch): its curves are calibrated
    # at delta - (1 + e^eps) B t, recorded in fields the baseline lacks; that delta is compared apart
    for r in after:
        r["result"].pop("delta_for_the_curves", None)
        r["result"].pop("sampler_total_variation", None)
    for r in before + after:
        r["curves_delta"] = r["result"]["calibration"].pop("delta")
    results = {json.dumps(r["result"], sort_keys=True) for r in before + after}
    if len(results) != 1:
        raise SystemExit(f"the calibrated results differ between runs: {sorted(results)}")
    result = before[0]["result"]
    cal = result["calibration"]
    try:
        end_load = "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        end_load = "unknown"

    def med(runs: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    rows = []
    for key, label in (("wall", "wall-clock s"), ("cpu", "CPU s")):
        b, a = med(before, key), med(after, key)
        rows.append(
            f"| {label} | {b:.1f} | {a:.1f} | {b / a:.2f}x | {', '.join(f'{r[key]:.1f}' for r in before)} | {', '.join(f'{r[key]:.1f}' for r in after)} |"
        )
    text = "\n".join([
        "# Returning-users calibration of Dist-CDP-SE (`benchmarks/bench_returning_calibration.py`)",
        "",
        f"Machine: {info}; load average at the end {end_load}.",
        f"Before: the `accounting` and `dpverify` packages of commit {args.baseline} (full 2,049-order float scan of every batch's curve, every parameter evaluated); "
        f"after: this tree ({head}; the scan evaluates the costly batches only at orders the cheap ones leave in contention, "
        f"and parameters proven unable to meet the target are not evaluated). "
        f"Each run is a fresh interpreter (no memoised residue tables carried over); runs alternate before/after. "
        f"Median of {len(before)} runs before (each about two minutes, hence 3) and {len(after)} after.",
        "",
        "Workload: `calibrated_batch_epsilon` for `RunConfig(\"dist-cdp-se\", \"easy\", 2**15, epsilon=0.5, population=2**14, max_returns=4)` "
        "(the slow test), `accounting.calibrate` over the noise multiplier, "
        f"{cal['iterations']} bisection steps + 2 end points, each an (eps, 1e-6) conversion of the 4-fold composition of the maximum of "
        "the exact discrete-Gaussian-sum curves of every batch size.",
        "",
        "| time | before (median) | after (median) | before / after | runs before | runs after |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Every run, before and after, returned the same calibration, field for field: batch eps = {result['batch_epsilon']}, "
        f"noise multiplier = {cal['parameter']!r}, certified eps over {result['returns']} batches = {cal['achieved_epsilon']!r} "
        f"(target {cal['target_epsilon']}, curves at delta = {before[0]['curves_delta']!r} before, "
        f"{', '.join(repr(d) for d in sorted({r['curves_delta'] for r in after}))} after), route {cal['route']}. "
        f"After, {', '.join(str(v) for v in sorted(ruled_out, key=str))} of the {cal['iterations'] + 2} parameters were ruled out "
        "(`accounting.rdp_conversion_exceeds` on the 2-user batch's exact curve) instead of evaluated.",
        "",
    ])
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
