"""The auditor's hot paths against the code they replaced, same inputs, same run (#11 speed).

Each row times the old computation (the baseline, measured in the same run) and the new one on
the same table, median of ``--runs`` calls, wall and CPU seconds (the machine is shared: CPU time
is the steadier figure), and checks that both give the same result bit for bit. The old
computations are the references of ``tests/test_audit_speed.py`` (the code as it was).

    python benchmarks/bench_audit_hotpaths.py [--rows 1000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from _common import machine, median_seconds  # noqa: E402
from dpverify._audit import statdp_pairs  # noqa: E402
from dpverify._audit._learned import _log_odds, fit_learned_views  # noqa: E402
from dpverify._audit._views import distinct_rows, fit_views, unique_rows  # noqa: E402
import statdp_mechanisms as sm  # noqa: E402
from test_audit_speed import _numpy_svt3, _reference_features  # noqa: E402


def _sklearn_log_odds(model, feats):
    """The learned score through scikit-learn (BLAS), as before."""
    if hasattr(model, "decision_function"):
        return model.decision_function(feats)
    p = np.clip(model.predict_proba(feats)[:, 1], 1e-15, 1 - 1e-15)
    return np.log(p) - np.log1p(-p)


def _blas_gaussian(view, table):
    _, mu_p, prec_p, logdet_p, mu_q, prec_q, logdet_q = view.statistic
    x = np.nan_to_num(table.astype(np.float64), nan=0.0, posinf=1e300, neginf=-1e300)
    dp, dq = x - mu_p, x - mu_q
    score = 0.5 * (((dq @ prec_q) * dq).sum(axis=1) - ((dp @ prec_p) * dp).sum(axis=1)) + 0.5 * (logdet_q - logdet_p)
    return np.nan_to_num(score, nan=0.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "audit_hotpaths.md"))
    args = ap.parse_args()
    n, runs = args.rows, args.runs
    rng = np.random.default_rng(1)
    pair = list(statdp_pairs(10))[0]
    svt1 = sm.svt1(pair.d, rng, n)
    svt3 = sm.svt3(pair.d, rng, n)
    pilot = [sm.svt3(d, rng, 16_384) for d in (pair.d, pair.d_prime)]
    gaussian = [v for v in fit_views(*pilot) if getattr(v, "statistic", ("",))[0] == "gaussian-lr"][0]
    learned, _ = fit_learned_views(sm.svt3(pair.d, rng, 8192), sm.svt3(pair.d_prime, rng, 8192), seed=2, float_bits=False)
    learned1, _ = fit_learned_views(sm.svt1(pair.d, rng, 8192), sm.svt1(pair.d_prime, rng, 8192), seed=2)
    feats3 = learned[0].features(svt3)

    def uniq_ref():
        return np.unique(svt1, axis=0, return_inverse=True, return_counts=True)

    def learned_svt1_all_rows():
        return [v.count(svt1) for v in learned1]

    def learned_svt1_distinct():
        uniq, _, weights = distinct_rows(svt1)
        return [v.count(uniq, weights) for v in learned1]

    cases = [
        ("distinct rows of SVT1 answers (10 columns): np.unique(axis=0) -> unique_rows",
         uniq_ref, lambda: unique_rows(svt1),
         lambda a, b: all(np.array_equal(np.asarray(x).reshape(-1), np.asarray(y).reshape(-1)) for x, y in zip(a, b))),
        ("learned views on SVT1 answers: every row scored -> each distinct row once, weighted",
         learned_svt1_all_rows, learned_svt1_distinct,
         lambda a, b: all(np.array_equal(x[1], y[1]) for x, y in zip(a, b))),
        ("Gaussian LR score of SVT3 outputs: BLAS -> row-wise numba kernel",
         lambda: _blas_gaussian(gaussian, svt3), lambda: gaussian.values(svt3),
         lambda a, b: np.allclose(a, b, rtol=1e-12, atol=1e-9)),
        ("MLP + logistic scores of SVT3 features: scikit-learn -> row-wise numba kernels",
         lambda: [_sklearn_log_odds(v.model, feats3) for v in learned], lambda: [_log_odds(v.model, feats3) for v in learned],
         lambda a, b: all(np.allclose(x, y, rtol=1e-9, atol=1e-12) for x, y in zip(a, b))),
        ("feature map of 200,000 SVT3 outputs: concatenated blocks -> one preallocated matrix",
         lambda: _reference_features(learned[0].features, svt3[:200_000]), lambda: learned[0].features(svt3[:200_000]),
         np.array_equal),
        ("SVT3 mechanism: numpy scan -> numba scan (same noise draws)",
         lambda: _numpy_svt3(np.asarray(pair.d, dtype=np.float64), np.random.default_rng(3), n),
         lambda: sm.svt3(pair.d, np.random.default_rng(3), n), np.array_equal),
    ]
    lines = [f"# Auditor hot paths: old vs new, same run\n\n`python benchmarks/bench_audit_hotpaths.py --rows {n} "
             f"--runs {runs}`; median of {runs} calls each; machine: {machine()}.\n",
             "| hot path | old wall s | new wall s | old CPU s | new CPU s | CPU ratio old/new | same result |",
             "|---|---|---|---|---|---|---|"]
    for name, old, new, same in cases:
        ok = bool(same(old(), new()))  # also warms both up (numba caches, page faults)
        ow, oc = median_seconds(old, runs)
        nw, nc = median_seconds(new, runs)
        lines.append(f"| {name} | {ow:.3f} | {nw:.3f} | {oc:.3f} | {nc:.3f} | {oc / max(nc, 1e-9):.1f} | {'yes' if ok else 'NO'} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
