"""`dpverify run --ledger`, `dpverify ledger show|verify|export|import`, `dpverify account charge`."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from click.testing import CliRunner

from accounting import ApproxDP, Ledger, PureDP
from dpverify.cli import main

#: every test of this module gets its own ledger witness directory (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("witness")


RUN = ["run", "--algorithm", "dist-dp-se", "--instance", "easy", "--eps", "1", "--horizon", "20000", "--seeds", "1",
       "--population", "16384", "--max-returns", "2"]


def test_two_runs_over_one_population_share_its_budget_and_the_second_is_refused_up_front(tmp_path):
    """Run 1 (T = 20,000 pulls over 16,384 users who may each join B = 2 batches) fits; run 2 over
    the same population would continue with its next users and give users 3,616.. a third batch:
    it is refused (exit 1) before its first charge, naming the users, their spend so far, the
    bound and the budget; the ledger is byte-for-byte unchanged (no charge, no cursor move) and
    verifies. The wrong variant (the same two runs each with their own in-memory ledger) is
    accepted twice: the check has power."""
    url = f"sqlite:///{tmp_path}/runs.db"
    runner = CliRunner()
    missing = runner.invoke(main, [*RUN, "--ledger", url])
    assert missing.exit_code == 2 and "--create" in missing.output  # no silent creation
    first = runner.invoke(main, [*RUN, "--ledger", url, "--create", "--json", "-"])
    assert first.exit_code == 0, first.output
    after_first = Ledger.open(url, read_only=True)
    charges_first = len(after_first.charges)
    assert after_first.max_charges_per_user() == 2  # 20,000 pulls over 16,384 users: some return
    after_first.close()
    before = _dump(tmp_path / "runs.db")

    second = runner.invoke(main, [*RUN, "--ledger", url])
    assert second.exit_code == 1
    message = second.output
    assert "refused" in message and "before its first charge" in message and "budget of (1, 1e-06)-DP" in message
    assert re.search(r"users 3,616\.\.[0-9,]+ \(spent so far 0\.49[0-9]*\) would join up to 2 more batches", message), message
    assert _dump(tmp_path / "runs.db") == before
    ledger = Ledger.open(url, read_only=True)
    assert len(ledger.charges) == charges_first and ledger.budget == ApproxDP(1.0, 1e-6)
    assert ledger.verify().ok and ledger.summary()["population_cursor"] == 20000
    ledger.close()

    # without the durable ledger each run starts from an empty ledger: both are accepted
    for _ in range(2):
        assert runner.invoke(main, RUN).exit_code == 0


def _dump(path) -> list[str]:
    import contextlib

    with contextlib.closing(sqlite3.connect(path)) as connection:
        return list(connection.iterdump())


def test_ledger_show_verify_export_import_and_account_charge(tmp_path):
    url = f"sqlite:///{tmp_path}/l.db"
    runner = CliRunner()
    ok = runner.invoke(main, ["account", "charge", "--ledger", url, "--create", "--budget", "pure:1", "--pure", "0.6", "--users", "0:100", "--label", "a"])
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
    assert missing.exit_code == 2 and "nothing at that path" in missing.output and "Traceback" not in missing.output


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
    Ledger.open(url, ApproxDP(1.0, 1e-6), create=True).close()
    durable = run_seed(RunConfig(**base, ledger=url).validate(), 0)
    assert (memory.regret == durable.regret).all()
    assert memory.ledger["spent"] == durable.ledger["spent"] and memory.ledger["per_user"] == durable.ledger["per_user"]
    assert memory.ledger["charges"] == durable.ledger["charges"] > 0
    with Ledger.open(url, read_only=True) as stored:
        assert stored.verify().ok and stored.summary()["population_cursor"] == 20000


#: columns that differ between any two runs, even two with --workers 1, and why they are left out
#: of the byte-for-byte comparison: recorded_at is each commit's wall-clock time (what an operator
#: needs to read); cid is a random id per charge attempt (what a retry after a lost connection looks
#: up, so it cannot be derived from the content); link and the state's head chain over both; the
#: meta rows ledger_id, created_at (and key_check) are the ledger's random identity and birth time.
NOT_COMPARED = {"dpverify_charges": ("cid", "recorded_at", "link"), "dpverify_state": ("head",)}
NOT_COMPARED_META = ("ledger_id", "created_at", "key_check")


def _comparable(path) -> dict:
    import contextlib

    out = {}
    with contextlib.closing(sqlite3.connect(path)) as connection:
        for table, order in (("dpverify_meta", "key"), ("dpverify_state", "id"), ("dpverify_guarantees", "id"),
                             ("dpverify_profiles", "id"), ("dpverify_charges", "seq"), ("dpverify_segments", "start")):
            cursor = connection.execute(f"SELECT * FROM {table} ORDER BY {order}")
            names = [d[0] for d in cursor.description]
            keep = [k for k, name in enumerate(names) if name not in NOT_COMPARED.get(table, ())]
            rows = [tuple(row[k] for k in keep) for row in cursor.fetchall()]
            if table == "dpverify_meta":
                rows = [row for row in rows if row[0] not in NOT_COMPARED_META]
            out[table] = ([names[k] for k in keep], rows)
    return out


def test_ledgered_runs_do_not_depend_on_the_number_of_workers(tmp_path):
    """Three seeds sharing one fresh ledger, run with --workers 1 and with --workers 2 at the same
    path (the first ledger moved away in between): the JSON results are byte-for-byte equal, the
    ledgers' rows are equal in every column but the wall-clock and random ones (NOT_COMPARED, with
    the reason), both exported trails are byte-for-byte equal, both verify, and exit codes agree,
    also for a run refused up front (five seeds do not fit). Before the fix, a pool handed each
    seed whatever users were next when it started: the users, charges and rows depended on which
    process came first. The check has power: a ledger from seeds run in another order (2, 0, 1 by
    hand) differs."""
    path = tmp_path / "runs.db"
    url = f"sqlite:///{path}"
    runs = [*RUN[:-4], "--population", "32768", "--max-returns", "2"]
    runs[runs.index("--seeds") + 1] = "3"
    runner = CliRunner()
    outcomes = []
    for workers in ("1", "2"):
        result = runner.invoke(main, [*runs, "--ledger", url, "--create", "--workers", workers, "--json", "-"])
        assert result.exit_code == 0, result.output
        refused = runner.invoke(main, [*runs, "--seeds", "5", "--ledger", url, "--workers", workers])
        moved = tmp_path / f"workers{workers}.db"
        path.rename(moved)
        outcomes.append((result.stdout, refused.exit_code, refused.stderr.splitlines()[-1], moved))
    (json1, code1, message1, db1), (json2, code2, message2, db2) = outcomes
    assert json1 == json2
    assert code1 == code2 == 1 and message1 == message2 and "before its first charge" in message1
    assert _comparable(db1) == _comparable(db2)
    trails = []
    for db in (db1, db2):
        with Ledger.open(f"sqlite:///{db}", read_only=True) as ledger:
            # the summary after each seed counts the whole ledger: the last seed's is the run's total
            assert ledger.verify().ok and len(ledger.charges) == json.loads(json1)["ledger"]["charges_per_run"][-1]
            trails.append(ledger.to_json())
    assert trails[0] == trails[1]
    # power: the same three seeds charged in another order give other rows
    from dpverify._bandits import RunConfig
    from dpverify._bandits._runner import prepare_ledgers, run_seed

    other = tmp_path / "other.db"
    config = RunConfig(algorithm="dist-dp-se", instance="easy", horizon=20000, epsilon=1.0, seeds=3, population=32768, max_returns=2,
                       ledger=f"sqlite:///{other}", ledger_create=True).validate()
    prepare_ledgers([config])
    for r in (2, 0, 1):
        run_seed(config, r)
    assert _comparable(other)["dpverify_charges"] != _comparable(db1)["dpverify_charges"]


def test_a_postgresql_restart_in_the_middle_of_a_run(tmp_path, monkeypatch, request):
    """`run --ledger postgresql://...` (two seeds) with the server restarted (fast shutdown: every
    connection terminated, as in a failover) just before the 5th charge transaction: the run
    reconnects, continues and exits 0; the ledger holds exactly the charges the run reports
    (count and labels) and they equal, charge for charge, those of the same run on a server that
    was not restarted; it verifies. The restart really happened (the server's start time moved)."""
    import psycopg

    from accounting._ledgers._durable import DurableLedger

    from _postgres import PostgresServer

    server = PostgresServer()
    request.addfinalizer(server.stop)
    original = DurableLedger._charge_transaction
    calls = []

    def restarting(self, entries):
        calls.append(len(entries))
        if len(calls) == 5:
            server.restart()
        return original(self, entries)

    def started() -> str:
        with psycopg.connect(server.admin_url(), autocommit=True) as connection:
            return str(connection.execute("SELECT pg_postmaster_start_time()").fetchone()[0])

    runs = [*RUN[:-4], "--population", "32768", "--max-returns", "2"]
    runs[runs.index("--seeds") + 1] = "2"
    results, ledgers = [], []
    for restart in (False, True):
        url = server.url()
        if restart:
            monkeypatch.setattr(DurableLedger, "_charge_transaction", restarting)
            before = started()
        result = CliRunner().invoke(main, [*runs, "--ledger", url, "--create", "--json", "-"])
        assert result.exit_code == 0, result.output
        results.append(json.loads(result.stdout))
        with Ledger.open(url, read_only=True) as ledger:
            assert ledger.verify().ok
            ledgers.append([(c.label, c.guarantee, c.participants if isinstance(c.participants, range) else tuple(c.participants))
                            for c in ledger.charges])
    assert started() != before and len(calls) > 5
    for result, charges in zip(results, ledgers):
        assert result["ledger"]["charges_per_run"][-1] == len(charges)  # the last seed's summary counts the whole ledger
    assert ledgers[0] == ledgers[1]
    assert results[0]["final_regrets"] == results[1]["final_regrets"]
