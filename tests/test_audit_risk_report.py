"""Attack-risk figures of audit results and the audit HTML page (issue 33 item 3; issue 34 item 9)."""

from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest

from dpverify._audit._risk import attack_risk, claim_curve, curve_tpr
from dpverify._audit._results import AuditResult
from dpverify._audit._suite._provenance import claim_files_hash, provenance
from dpverify._cli._html_report import audit_report


def _rr(x, rng, size, eps=1.0):
    keep = rng.random(size) < math.e**eps / (1 + math.e**eps)
    return np.where(keep, x, 1 - x)


def test_attack_risk_of_a_randomized_response_audit_stays_under_its_claim():
    """A real audit of randomized response at eps = 1 (seed 3, 200,000 draws, alpha 0.01): its witness,
    read as an attack, lies under the claim's trade-off curve (TPR_lo <= the largest TPR an eps-DP test
    can have at FPR_hi) and its mu-GDP lower bound is below RR's exact mu (2 Phi^-1(e/(1+e)) = 1.232):
    the figures are simultaneous confidence bounds, false alarm <= 0.01. The wrong variant that reads the
    point estimates a/n, b/m instead of the confidence bounds exceeds the exact mu at this seed (1.236 >
    1.232; it does in 5 of seeds 0..5), so the test rejects it."""
    from scipy.stats import norm

    import accounting as acc
    from dpverify import NeighbourPair, audit

    report = audit(_rr, [NeighbourPair(0, 1, "0 -> 1")], acc.PureDP(1.0), samples=200_000, alpha=0.01, seed=3, estimators=("epsilon",),
                   executor="serial")
    worst = max(report.results, key=lambda r: r.lower_bound)
    risk = attack_risk(worst)
    assert risk is not None and risk["kind"] == "event attack"
    assert risk["tpr_lower"] <= float(curve_tpr(1.0, 0.0, risk["fpr_upper"])) + 1e-12
    exact_mu = 2 * norm.ppf(math.e / (1 + math.e))
    assert 0 < risk["mu_gdp_lower"] <= exact_mu
    a, n, b, m = worst.details["counts"]
    assert norm.ppf(a / n) - norm.ppf(b / m) > exact_mu  # the point-estimate variant
    assert risk["tpr_at_fpr_lower"] <= float(curve_tpr(1.0, 0.0, 0.01))
    assert risk["advantage_lower"] <= (math.e - 1) / (math.e + 1)
    assert claim_curve("1-DP", worst) == {"epsilon": 1.0, "delta": 0.0}


def _payload(tmp_path):
    files = []
    for name in ("a.toml", "b.toml"):
        (tmp_path / name).write_text(f'target = "{name}"\n')
        files.append(str(tmp_path / name))
    rows = [
        {"name": "tight", "verdict": "holds", "claimed": 1.0, "lower_bound": 0.97, "planted": False, "estimator": "epsilon",
         "risk": {"kind": "event attack", "tpr_lower": 0.72, "fpr_upper": 0.27, "fpr": 0.01, "tpr_at_fpr_lower": 0.026,
                  "advantage_lower": 0.45, "mu_gdp_lower": 1.2, "confidence": 0.999},
         "tradeoff_claim": {"epsilon": 1.0, "delta": 0.0}},
        {"name": "powerless", "verdict": "holds", "claimed": 1.0, "lower_bound": 0.0, "planted": False, "estimator": "epsilon"},
        {"name": "planted/impossible-output", "verdict": "caught", "claimed": 1.0, "lower_bound": "inf", "planted": True,
         "estimator": "epsilon"},
    ]
    return {"alpha": 1e-3, "correction": "holm", "seed": 0, "samples_scale": 1.0, "seconds": 1.0, "exit_code": 0,
            "counts": {"holds": 2, "caught": 1}, "results": rows, **provenance(files)}


def test_audit_page_shows_infinite_bounds_no_power_commit_and_curves(tmp_path):
    """The page (rendered from a JSON payload, as ``--html`` does): an infinite lower bound ("inf" in
    the JSON) is drawn at the right edge and labelled; a "holds" claim with lower bound 0 wears the
    "no power" badge and is counted; the claim files' hash and the commit field are recorded; the
    trade-off section draws a panel for the claim with a witness. Deterministic. Today's page (before
    issue 34 item 9) fails each: it dropped "inf" rows from the chart and badged powerless claims green."""
    pytest.importorskip("matplotlib")
    payload = _payload(tmp_path)
    page = audit_report(payload)
    assert ">no power<" in page and page.count('class="badge nopower"') == 1
    assert "holds with no power (lower bound 0)" in page
    chart = page.split("Lower bounds against the claims")[1].split("Trade-off curves")[0]
    assert 'id="infinite-bound-2"' in chart  # row 2, the "inf" one, labelled at the right edge
    assert payload["claim_files_sha256"] in page
    assert "git_commit" in page
    assert "Trade-off curves" in page and page.split("Trade-off curves")[1].count("<svg") == 1


def test_claim_files_hash_and_commit(tmp_path):
    """The hash changes when a claim file changes and not when the order of the list does; the commit is
    git's HEAD inside a repository and None outside one. Deterministic."""
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    first = claim_files_hash([str(a), str(b)])
    assert first == claim_files_hash([str(b), str(a)])
    b.write_text("y = 3\n")
    assert claim_files_hash([str(a), str(b)]) != first
    assert provenance([str(a)])["git_commit"] is None
    try:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, capture_output=True)
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t", "add", "."], check=True, capture_output=True)
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git not available")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    recorded = provenance([str(a), str(b)])
    assert recorded["git_commit"] == head and recorded["git_dirty"] is False


def test_one_run_result_risk_is_its_accuracy():
    result = AuditResult(1.0, 0.9, 1.0, 0.95, "holds", 1, 0.0, "e", "m", estimator="one-run",
                         details={"canaries": 10, "guesses": 5, "correct": 4, "delta": 0.0})
    risk = attack_risk(result)
    assert risk["accuracy_lower"] == pytest.approx(1 / (1 + math.exp(-0.9)))
    assert risk["advantage_lower"] == pytest.approx(2 * risk["accuracy_lower"] - 1)


def test_audit_page_table_cells_wrap_instead_of_overflowing(tmp_path):
    """Issue 34 item 9: the claims table overflowed a 1400 px window (its long finding and event
    cells had no break opportunity). The page's stylesheet now lets a cell's text break anywhere
    (numbers excepted), so the table's width is bounded by the window; measured in headless
    Chromium at 1400 px on a 17-claim report: scrollWidth = clientWidth = 1353. The page before the
    change has no such rule and fails this check. Deterministic."""
    pytest.importorskip("matplotlib")
    page = audit_report(_payload(tmp_path))
    style = page.split("<style>")[1].split("</style>")[0]
    assert "td{overflow-wrap:anywhere}" in style and "td.num{overflow-wrap:normal}" in style


def test_server_one_run_claim_draws_the_profile_its_f_dp_test_used():
    """Deterministic. A server-view one-run result carries the certified (eps, delta(eps)) profile its
    f-DP test used: the page's curve is that profile's (at FPR 0.01 below the single (eps, delta) pair's
    curve, which the page drew before: the wrong variant, far looser for an (5.2, 1e-6) claim)."""
    from accounting import TradeOffCurve

    from dpverify._cli._html_report import _wrap_name

    eps, deltas = (0.0, 1.0, 2.0, 5.2), (0.38, 0.07, 0.004, 1e-6)
    result = AuditResult(5.2, 1.9, 2.9, 0.95, "holds", 1, 0.0, "e", "m", estimator="one-run",
                         details={"canaries": 10, "guesses": 5, "correct": 4, "delta": 1e-6,
                                  "fdp_epsilons": list(eps), "fdp_deltas": list(deltas)})
    curve = claim_curve(None, result)
    assert curve == {"epsilons": list(eps), "deltas": list(deltas)}
    profile_tpr = float(TradeOffCurve(eps, deltas).tpr(0.01))
    assert profile_tpr < float(curve_tpr(5.2, 1e-6, 0.01))  # the single pair's curve is the looser one
    assert profile_tpr == pytest.approx(min(1.0, min(math.exp(e) * 0.01 + d for e, d in zip(eps, deltas))), rel=1e-9)
    assert _wrap_name("planted/one_run_server_dist_dp_se_wrong_scale").replace("\n", "") == "planted/one_run_server_dist_dp_se_wrong_scale"
    assert max(len(line) for line in _wrap_name("planted/one_run_server_dist_dp_se_wrong_scale").splitlines()) <= 30
