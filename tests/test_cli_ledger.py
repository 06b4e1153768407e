"""`dpverify run --ledger`, `dpverify ledger show|verify|export|import`, `dpverify account charge`."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from click.testing import CliRunner

from accounting import ApproxDP, Ledger, PureDP
from dpverify.cli import main

RUN = ["run", "--algorithm", "dist-dp-se", "--instance", "easy", "--eps", "1", "--horizon", "20000", "--seeds", "1",
       "--population", "16384", "--max-returns", "2"]


def test_two_runs_over_one_population_share_its_budget_and_the_second_stops(tmp_path):
    """Run 1 (T = 20,000 pulls over 16,384 users who may each join B = 2 batches) fits; run 2 over
    the same population continues with its next users, charges the same ledger, and stops (exit 1)
    at the batch that would give some user a third batch, naming the worst user's spend and the
    budget; nothing past the budget is recorded and the ledger verifies. The wrong variant (the
    same two runs each with their own in-memory ledger) is accepted twice: the check has power."""
    url = f"sqlite:///{tmp_path}/runs.db"
    runner = CliRunner()
    first = runner.invoke(main, [*RUN, "--ledger", url, "--json", "-"])
    assert first.exit_code == 0, first.output
    after_first = Ledger.open(url, read_only=True)
    charges_first = len(after_first.charges)
    spent_first = after_first.spent()
    assert after_first.max_charges_per_user() == 2  # 20,000 pulls over 16,384 users: some return
    after_first.close()

    second = runner.invoke(main, [*RUN, "--ledger", url])
    assert second.exit_code == 1
    message = second.output
    assert "stopped" in message and "budget of (1, 1e-06)-DP" in message
    worst = re.search(r"worst user's spend is \(([0-9.]+), 1e-06\)-DP", message)
    assert worst is not None and float(worst.group(1)) == pytest.approx(spent_first.epsilon, rel=1e-5)  # printed to 6 digits
    ledger = Ledger.open(url, read_only=True)
    assert len(ledger.charges) > charges_first  # the second run spent budget before stopping
    assert ledger.spent().epsilon <= 1.0 and ledger.budget == ApproxDP(1.0, 1e-6)
    assert ledger.verify().ok
    assert ledger.summary()["population_cursor"] > 20000
    ledger.close()

    # without the durable ledger each run starts from an empty ledger: both are accepted
    for _ in range(2):
        assert runner.invoke(main, RUN).exit_code == 0


def test_ledger_show_verify_export_import_and_account_charge(tmp_path):
    url = f"sqlite:///{tmp_path}/l.db"
    runner = CliRunner()
    ok = runner.invoke(main, ["account", "charge", "--ledger", url, "--budget", "pure:1", "--pure", "0.6", "--users", "0:100", "--label", "a"])
    assert ok.exit_code == 0, ok.output
    ok = runner.invoke(main, ["account", "charge", "--ledger", url, "--pure", "0.3", "--users", "50:60", "--json"])
    assert json.loads(ok.output)["worst_user_spend"] == str(PureDP(0.6).compose(PureDP(0.3)))  # users 50..59
    refused = runner.invoke(main, ["account", "charge", "--ledger", url, "--pure", "0.2", "--users", "55:56"])
    assert refused.exit_code == 1 and "worst user's spend" in refused.output and "budget of 1-DP" in refused.output
    bad = runner.invoke(main, ["account", "charge", "--ledger", url, "--pure", "-1"])
    assert bad.exit_code == 2 and "epsilon" in bad.output

    shown = json.loads(runner.invoke(main, ["ledger", "show", url, "--json"]).output)
    assert shown["charges"] == 2 and shown["users_near_limit"] == 10 and shown["budget"]["epsilon"] == 1.0
    assert [h["label"] for h in shown["history"]] == ["a", ""]
    table = runner.invoke(main, ["ledger", "show", url])
    assert table.exit_code == 0 and "worst user's spend 0.9" in table.output

    verified = runner.invoke(main, ["ledger", "verify", url, "--json"])
    assert verified.exit_code == 0 and json.loads(verified.output)["ok"]

    trail = tmp_path / "trail.json"
    assert runner.invoke(main, ["ledger", "export", url, "--out", str(trail)]).exit_code == 0
    copy = f"sqlite:///{tmp_path}/copy.db"
    assert runner.invoke(main, ["ledger", "import", str(trail), copy]).exit_code == 0
    assert runner.invoke(main, ["ledger", "export", copy]).output.strip() == trail.read_text().strip()

    with sqlite3.connect(tmp_path / "l.db") as connection:  # tampering: verify must say so, exit 1
        connection.execute("DELETE FROM dpverify_charges WHERE label = 'a'")
    tampered = runner.invoke(main, ["ledger", "verify", url])
    assert tampered.exit_code == 1 and "DISAGREES" in tampered.output

    missing = runner.invoke(main, ["ledger", "show", f"sqlite:///{tmp_path}/none.db"])
    assert missing.exit_code == 2 and "url" in missing.output


def test_a_durable_ledger_changes_nothing_in_a_run_but_where_charges_are_kept(tmp_path):
    """One returning-users run (aggregate path) with the in-memory ledger and with a fresh SQLite
    ledger: identical regret curves and ledger summaries (spend, per-user guarantees, number of
    charges), and the durable ledger verifies: prepaying a round's charges in one transaction
    changes when they are synced, not what is charged."""
    from dpverify._bandits import RunConfig
    from dpverify._bandits._runner import run_seed

    base = dict(algorithm="dist-dp-se", instance="easy", horizon=20000, epsilon=1.0, seeds=1, path="aggregate", population=16384, max_returns=2)
    memory = run_seed(RunConfig(**base).validate(), 0)
    url = f"sqlite:///{tmp_path}/one.db"
    durable = run_seed(RunConfig(**base, ledger=url).validate(), 0)
    assert (memory.regret == durable.regret).all()
    assert memory.ledger["spent"] == durable.ledger["spent"] and memory.ledger["per_user"] == durable.ledger["per_user"]
    assert memory.ledger["charges"] == durable.ledger["charges"] > 0
    with Ledger.open(url, read_only=True) as stored:
        assert stored.verify().ok and stored.summary()["population_cursor"] == 20000
