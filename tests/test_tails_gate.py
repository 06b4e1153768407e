"""CI runs the full default `dpverify tails` gate (about 2 minutes on 2 idle cores).

Its Monte Carlo rows share a false-alarm budget of 1e-3 (Bonferroni over the table, fixed seed, so
CI is deterministic); exact and Chernoff rows are proofs. The gate's ability to fail is tested in
tests/test_tails.py (planted wrong constants caught; a violated claim of ours exits 1).
"""

import json

import pytest
from click.testing import CliRunner

from dpverify._cli._cmd_tails import tails


@pytest.mark.slow
def test_default_tails_gate_passes(tmp_path):
    out = tmp_path / "tails.json"
    result = CliRunner().invoke(tails, ["--json", str(out), "--workers", "2"])
    assert result.exit_code == 0, result.output[-3000:]
    data = json.loads(out.read_text())
    assert data["ok"]
    gated = [r for r in data["results"] if not r["paper_finding"] and not r["planted"]]
    assert gated and all(r["verdict"] == "holds" for r in gated)
