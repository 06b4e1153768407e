"""Labels that agree with fields, and a ``--eps`` that says what it means (issue 34, items 5 and 7)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dpverify.cli import main


@pytest.mark.parametrize("compose", [1, 10])
def test_shuffle_certified_field_follows_the_truth(compose):
    """Item 5: the shuffled-count route of binary randomized response at n = 10^4 scans only part
    of the configurations; its detail said "NOT certified" while its JSON field said
    ``"certified": true`` (the CLI marked everything but closed forms certified). The accountant
    now marks every comparison in the row's ``direction``; the field follows it, and the text
    follows the field."""
    argv = ["account", "shuffle", "--eps0", "1", "--n", "10000", "--delta", "1e-6", "--randomizer", "rr", "--compose", str(compose)]
    data = json.loads(CliRunner().invoke(main, [*argv, "--json"]).output)
    rows = data["routes"]
    assert any("NOT certified" in r["detail"] for r in rows)  # the case under test occurs
    for r in rows:
        assert r["certified"] == (r["direction"] == "upper bound"), r
        if "NOT certified" in r["detail"] or r["route"].startswith(("closed-form", "advanced:closed-form")):
            assert r["certified"] is False, r
    answer = next(r for r in rows if r["route"] == data["route"])
    assert answer["certified"] and data["epsilon"] == min(r["epsilon"] for r in rows if r["certified"])
    table = CliRunner().invoke(main, argv).output
    for r in rows:
        if not r["certified"]:
            line = next(line for line in table.splitlines() if f" {r['route']} " in line)
            assert "comparison" in line, line
