"""Transcripts of whole runs (issue 24): they come from the run's own code path.

- :func:`release_views` with one repetition makes exactly the draws of the protocol's
  ``estimate_sum`` (same estimate, same generator state after): recording a run changes nothing.
- The lockstep engine, given the plain runner's per-arm streams, reproduces the plain runner's
  recorded transcript bit for bit (server and public view) and its ledger's charges, for every
  runner family, on tables that make arms eliminated, with unique and with returning users.
- With many runs per call (a shared stream) the engine draws the same law as the plain runner:
  a two-sample chi-square test on the public view, with a wrong variant the same test rejects.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpverify._bandits._builtin import dp_se_setup, se_setup
from dpverify._bandits._runner import RunConfig, seed_streams
from dpverify._bandits._transcripts import EliminationEngine, TableInstance, release_views
from dpverify._executed._protocols import DistributedProtocol, central_laplace_protocol

SE_ALGORITHMS = ("dist-dp-se", "dist-rdp-se", "dist-cdp-se", "cdp-se", "ldp-se")


def _engine(algorithm: str, table: np.ndarray, horizon: int, *, population: int | None = None, max_returns: int | None = None, epsilon: float = 1.0):
    instance = TableInstance.from_table(table, population)
    config = RunConfig(algorithm, instance, horizon, epsilon=epsilon, population=population, max_returns=max_returns)
    if algorithm == "dp-se":
        setup = dp_se_setup(config, instance)
        return EliminationEngine.from_setup(setup, dp_se_epsilon=epsilon), setup, epsilon
    setup, _ = se_setup(config, instance)
    return EliminationEngine.from_setup(setup), setup, None


def _gap_table(users: int, arms: int, rng: np.random.Generator, gap: float) -> np.ndarray:
    """Rewards uniform in a band of width 0.3; arm 0's band ``gap`` above the others' (arms get eliminated)."""
    table = 0.35 + 0.3 * rng.random((users, arms)) - gap / 2
    table[:, 0] += gap
    return np.clip(table, 0.0, 1.0)


@pytest.mark.parametrize("kind", ["dist-dp", "dist-rdp", "dist-cdp", "cdp", "ldp", "dp-se"])
def test_release_views_makes_the_draws_of_estimate_sum(kind: str) -> None:
    """Deterministic: for 20 reward vectors, one recorded release equals estimate_sum on a copy of
    the same generator (estimate and the generator's state after), so recording a run is the run."""
    protocol = central_laplace_protocol(1.0) if kind == "dp-se" else DistributedProtocol(kind, Fraction(1), 0.1, 10.0 if kind in ("dist-rdp", "dist-cdp") else 1.0, 1e-3)
    rng = np.random.default_rng(3)
    for trial in range(20):
        x = rng.random(int(rng.integers(1, 40)))
        a = np.random.default_rng(trial)
        b = np.random.default_rng(trial)
        views, estimates = release_views(protocol, x, a, 1)
        assert estimates.shape == (1,)
        assert estimates[0] == protocol.estimate_sum(x, b)
        assert a.bit_generator.state == b.bit_generator.state
        if kind == "ldp":
            assert views.shape == (1, x.size)  # every user's message: the local model's server view
        else:
            assert views.shape == (1,)


@pytest.mark.parametrize("algorithm", SE_ALGORITHMS + ("dp-se",))
def test_engine_reproduces_the_plain_runner(algorithm: str) -> None:
    """Deterministic: 12 seeds on a table where arms get eliminated; the engine with the plain
    runner's streams gives the plain runner's own recorded transcript, and its ledger the runner's charges."""
    # sizes where the radius falls below the gap: DP-SE's epochs are long, LDP-SE's radius wide
    horizon, arms, gap = {"dp-se": (9000, 3, 0.25), "ldp-se": (2100, 2, 0.9)}.get(algorithm, (1100, 3, 0.6))
    table = _gap_table(horizon, arms, np.random.default_rng(11), gap)
    engine, setup, eps = _engine(algorithm, table, horizon)
    eliminated = 0
    for r in range(12):
        seeds = seed_streams(5, r)
        record, transcript = engine.plain_run(setup, table, seeds, eps)
        want = engine.flatten(record, transcript)
        from accounting import Ledger

        ledger = Ledger(setup.budget)
        got = engine.run(table, engine.plain_streams(seeds), 1, ledger=ledger)
        np.testing.assert_array_equal(got["server"][0], want["server"])
        np.testing.assert_array_equal(got["public"][0], want["public"])
        plain = transcript.ledger.charges
        assert [(c.guarantee, c.label) for c in ledger.charges] == [(c.guarantee, c.label) for c in plain]
        assert all(list(a.participants) == list(b.participants) for a, b in zip(ledger.charges, plain))
        eliminated += int((want["public"] > 0).sum())
    assert eliminated >= 6  # the comparison covers the elimination rule, not only the releases


def test_engine_reproduces_returning_users() -> None:
    """Deterministic: a population of 512 users returning round-robin (rows t mod 512), 8 seeds."""
    horizon, population = 1000, 512
    table = _gap_table(population, 2, np.random.default_rng(2), 0.6)
    engine, setup, _ = _engine("dist-dp-se", table, horizon, population=population, max_returns=2)
    for r in range(8):
        seeds = seed_streams(9, r)
        record, transcript = engine.plain_run(setup, table, seeds)
        want = engine.flatten(record, transcript)
        got = engine.run(table, engine.plain_streams(seeds), 1)
        np.testing.assert_array_equal(got["server"][0], want["server"])
        np.testing.assert_array_equal(got["public"][0], want["public"])
    # a user takes part in several releases, and the runner's ledger says so
    assert transcript.ledger.max_charges_per_user() == 2


def _public_counts(rows: np.ndarray, categories: list[tuple[int, ...]]) -> np.ndarray:
    index = {c: i for i, c in enumerate(categories)}
    counts = np.zeros(len(categories), dtype=np.int64)
    for row in map(tuple, rows.tolist()):
        counts[index[row]] += 1
    return counts


def test_engine_draws_the_plain_runners_law() -> None:
    """Two-sample chi-square test (alpha = 1e-3) of the public view (each arm's elimination batch):
    400 plain runs against 20,000 engine runs from one shared stream, on a table whose decisions
    sit at their threshold (elimination probabilities strictly between 0 and 1). False-alarm rate
    about 1e-3 (the chi-square approximation, categories pooled to expected counts >= 5); the same
    test on the engine with its radius shrunk by 5% (a wrong elimination rule) must reject."""
    horizon = 1100
    base, setup, _ = _engine("dist-dp-se", np.zeros((horizon, 2)), horizon)
    placement = next(p for p in base.placements() if p.batch == 8 and p.arm == 0)
    table, _ = base.threshold_tables(placement, (0.0, 1.0))[0]
    engine, setup, _ = _engine("dist-dp-se", table, horizon)
    plain = np.array([engine.flatten(*engine.plain_run(setup, table, seed_streams(21, r)))["public"] for r in range(400)])
    batched = engine.run(table, engine.streams(np.random.default_rng(4)), 20_000)["public"]
    wrong_engine = EliminationEngine(engine.name, engine.protocol, engine.arms, engine.horizon, engine.schedule, engine.radius * 0.95)
    wrong = wrong_engine.run(table, wrong_engine.streams(np.random.default_rng(4)), 20_000)["public"]

    def p_value(sample: np.ndarray) -> float:
        categories = sorted(set(map(tuple, plain.tolist())) | set(map(tuple, sample.tolist())))
        a, b = _public_counts(plain, categories), _public_counts(sample, categories)
        expected = (a + b) * plain.shape[0] / (plain.shape[0] + sample.shape[0])
        keep = expected >= 5
        a = np.append(a[keep], a[~keep].sum())
        b = np.append(b[keep], b[~keep].sum())
        used = (a + b) > 0
        return float(stats.chi2_contingency(np.stack([a[used], b[used]]))[1])

    assert 0.05 < (plain > 0).any(axis=1).mean() < 0.95  # the decision is random: the test has something to see
    assert p_value(batched) > 1e-3
    assert p_value(wrong) < 1e-3


# ---- a run as an audit target --------------------------------------------------------------------

from accounting import PureDP  # noqa: E402
from dpverify._audit._runs import ChargeLog, RecordedGuarantee, audit_run, run_engine, run_pairs, run_target  # noqa: E402
from dpverify._audit._suite import _planted_runs  # noqa: E402,F401  (registers the planted run variants)
from dpverify._audit._suite._planted_runs import RawMeanElimination, ReturningCountedOnce  # noqa: E402


def test_recorded_claim_is_what_the_ledger_charges() -> None:
    """Deterministic: the claim is the worst user's composed charges: eps for unique users (the
    plain runner's ledger spends exactly that), 2 eps for users returning once, and eps again
    when the planted ledger charges a returning user once."""
    engine = run_engine("dist-dp-se", arms=2, horizon=1024, epsilon=1.0)
    table = np.full((1024, 2), 0.5)
    target = run_target(engine, "server", placements=[(8, 0)])
    claim = target.claim("pure")
    _, setup, _ = _engine("dist-dp-se", table, 1024)
    record, transcript = engine.plain_run(setup, table, seed_streams(0, 0))
    assert claim == transcript.ledger.spent() == PureDP(1.0)
    returning = EliminationEngine(engine.name, engine.protocol, 2, 1024, engine.schedule, engine.radius, population=512)
    log = ChargeLog()
    returning.run(np.full((512, 2), 0.5), returning.streams(np.random.default_rng(0)), 1, ledger=log)
    assert RecordedGuarantee([log.charges]).pure() == PureDP(2.0)
    counted_once = ReturningCountedOnce(engine.name, engine.protocol, 2, 1024, engine.schedule, engine.radius, population=512)
    log = ChargeLog()
    counted_once.run(np.full((512, 2), 0.5), counted_once.streams(np.random.default_rng(0)), 1, ledger=log)
    assert RecordedGuarantee([log.charges]).pure() == PureDP(1.0)
    rdp_engine = run_engine("dist-rdp-se", arms=2, horizon=256, epsilon=1.0)
    rdp = run_target(rdp_engine, "public", placements=[(4, 1)]).claim("rdp")
    released = [rdp_engine.protocol.mechanism(int(n)).rdp() for n in rdp_engine.schedule[1:, 2]]  # batches 2 .. 64, each user in one
    for order in (1.5, 4.0, 32.0):
        assert rdp(order) == pytest.approx(max(curve(order) for curve in released), rel=1e-12)


def test_candidate_pairs_differ_in_one_user_at_the_threshold() -> None:
    """Deterministic: every candidate changes exactly the placed user's row (0 on every arm in D,
    1 in D'), and on it the batch-mean gap of her batch lies within 1/l of 2 beta on either side."""
    engine = run_engine("dist-dp-se", arms=2, horizon=1024, epsilon=1.0)
    pairs = run_pairs(engine, "public", base="threshold")
    assert len(pairs) >= 6
    for pair in pairs:
        rows = np.flatnonzero(np.any(pair.d != pair.d_prime, axis=1))
        assert rows.size == 1 and np.all(pair.d[rows[0]] == 0.0) and np.all(pair.d_prime[rows[0]] == 1.0)
        place = next(p for p in engine.placements() if p.row == rows[0])
        n, beta = int(engine.schedule[place.batch, 2]), float(engine.radius[place.batch, 2])
        start = 2 * sum(int(engine.schedule[b, 2]) for b in range(1, place.batch))
        for table in (pair.d, pair.d_prime):
            means = [table[start + i * n:start + (i + 1) * n, i].mean() for i in range(2)]
            assert abs(abs(means[0] - means[1]) - 2 * beta) <= 1.0 / n + 1e-12


def test_event_descriptions_name_view_batch_and_arm() -> None:
    engine = run_engine("dist-dp-se", arms=2, horizon=1024, epsilon=1.0)
    server = run_target(engine, "server", placements=[(8, 0)])
    assert server.describe_event("output[13] >= 392 [upper tail]") == "output[13] (server view: batch 7 arm 1) >= 392 [upper tail]"
    public = run_target(engine, "public", placements=[(8, 0)])
    text = public.describe_event("output == (0, 7) [singleton]")
    assert "arm 1's elimination batch (0: never) = 7" in text and "arm 0's elimination batch (0: never) = 0" in text


def test_run_audit_holds_for_the_runner_and_catches_an_un_noised_elimination() -> None:
    """Statistical, seed 1, alpha = 1e-3 per audit: Dist-DP-SE's public view on the searched
    threshold tables holds its recorded 1-DP claim (a false alarm has probability <= 1e-3); the
    planted variant whose elimination reads the raw batch means is reported violated (its
    decision flips deterministically with the placed user: the bound is limited only by the sample)."""
    engine = run_engine("dist-dp-se", arms=2, horizon=1024, epsilon=1.0)
    report = audit_run(run_target(engine, "public", base="threshold"), samples=20_000, seed=1, alpha=1e-3, learned=False)
    assert report.passed
    assert 0.1 < report.worst().lower_bound <= 1.0  # it sees the decision move, within the claim
    planted = RawMeanElimination(engine.name, engine.protocol, 2, 1024, engine.schedule, engine.radius)
    report = audit_run(run_target(planted, "public", base="threshold"), samples=20_000, seed=1, alpha=1e-3, learned=False)
    worst = report.worst()
    assert worst.violated and worst.lower_bound > 5.0
    assert "public view" in worst.pair and "elimination batch" in worst.event


# ---- the UCB and DPE families ---------------------------------------------------------------------

from dpverify._bandits._builtin import ucb_setup  # noqa: E402
from dpverify._bandits._transcripts_ucb import UCBEngine  # noqa: E402
from dpverify._bandits.linear._transcripts import DPEEngine  # noqa: E402


@pytest.mark.parametrize("algorithm", ["ucb1", "ldp-ucb-b", "ldp-ucb-bs", "ldp-ucb-l", "ldp-ucb-ls"])
def test_ucb_engine_reproduces_the_plain_runner(algorithm: str) -> None:
    """Deterministic: 8 seeds of run_ucb (chunk = 1) on a 3-arm table; the engine with the plain
    streams gives every user's response and arm, ties broken by the same learner draws, and charges
    the ledger as the runner does."""
    horizon = 240
    table = _gap_table(horizon, 3, np.random.default_rng(8), 0.2)
    instance = TableInstance.from_table(table)
    setup = ucb_setup(RunConfig(algorithm, instance, horizon, epsilon=None if algorithm == "ucb1" else 1.0), instance)
    engine = UCBEngine.from_setup(setup)
    for r in range(8):
        seeds = seed_streams(13, r)
        record, transcript, arms = engine.plain_run(setup, table, seeds)
        want = engine.flatten(transcript, arms)
        log = ChargeLog()
        got = engine.run(table, engine.plain_streams(seeds), 1, ledger=log)
        np.testing.assert_array_equal(got["server"][0], want["server"])
        np.testing.assert_array_equal(got["public"][0], want["public"])
        plain = transcript.ledger.charges if transcript.ledger is not None else []
        assert [(c.guarantee, c.participants) for c in log.charges] == [(c.guarantee, c.participants) for c in plain]
    assert len(set(want["public"].tolist())) == 3


def test_dpe_engine_reproduces_the_plain_runner() -> None:
    """Deterministic: 6 seeds of CDP-DPE (run_linear with the table as its clients) on 3 actions:
    every phase's release, each action's elimination phase, the ledger's charges."""
    engine = DPEEngine.for_circle("cdp-dpe", arms=3, horizon=1100, epsilon=1.0)
    rng = np.random.default_rng(0)
    table = np.clip(np.tile(engine.instance.actions @ np.array([0.9, 0.0]), (engine.rows, 1)) + 0.1 * rng.standard_normal((engine.rows, 3)), -1, 1)
    eliminated = 0
    for r in range(6):
        result, transcript = engine.plain_run(table, 7, r)
        want = engine.flatten(result, transcript)
        log = ChargeLog()
        got = engine.run(table, engine.plain_streams(7, r), 1, ledger=log)
        np.testing.assert_array_equal(got["server"][0], want["server"])
        np.testing.assert_array_equal(got["public"][0], want["public"])
        assert [(c.guarantee, c.participants) for c in log.charges] == [(c.guarantee, c.participants) for c in transcript.ledger.charges]
        eliminated += int((want["public"] > 0).sum())
    assert eliminated >= 6


def _chi2_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample chi-square p-value of two integer samples, categories pooled to expected counts >= 5."""
    values = np.union1d(a, b)
    ca = np.array([(a == v).sum() for v in values])
    cb = np.array([(b == v).sum() for v in values])
    expected = (ca + cb) * min(a.size, b.size) / (a.size + b.size)
    keep = expected >= 5
    ca, cb = np.append(ca[keep], ca[~keep].sum()), np.append(cb[keep], cb[~keep].sum())
    used = (ca + cb) > 0
    return float(stats.chi2_contingency(np.stack([ca[used], cb[used]]))[1])


def test_local_messages_of_many_runs_have_the_law_of_one_run_each() -> None:
    """Two-sample chi-square (alpha = 1e-3 per user, Bonferroni over 3 users) between 20,000
    one-run draws of LDP-SE's messages and one 20,000-run draw (``messages(reps=...)``), per user
    (rewards 0, 0.3, 1). False-alarm rate <= 1e-3 (chi-square approximation); the same test
    rejects a mis-shaped batch (rows read in the wrong order, users' messages mixed up)."""
    protocol = DistributedProtocol("ldp", Fraction(1), 0.1, 1.0, 1e-3)
    x = np.array([0.0, 0.3, 1.0])
    one = np.stack([protocol.messages(x, np.random.default_rng(i)) for i in range(20_000)])
    many = protocol.messages(x, np.random.default_rng(1), reps=20_000)
    wrong = protocol.messages(x, np.random.default_rng(2), reps=20_000).reshape(-1).reshape(3, 20_000).T
    assert many.shape == (20_000, 3)
    assert min(_chi2_p(one[:, j], many[:, j]) for j in range(3)) > 1e-3 / 3
    assert min(_chi2_p(one[:, j], wrong[:, j]) for j in range(3)) < 1e-3 / 3


def test_public_names() -> None:
    import dpverify

    for name in ("RunTarget", "audit_run", "run_engine", "run_pairs", "run_target"):
        assert getattr(dpverify, name) is not None and name in dpverify.__all__


def test_run_audit_gives_the_same_numbers_on_a_process_pool() -> None:
    """Deterministic: the run mechanism pickles, and an audit drawn on a 2-process pool (as on a
    Dask cluster, through the same executor interface) gives the serial audit's numbers."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    engine = run_engine("dist-dp-se", arms=2, horizon=256, epsilon=1.0)
    target = run_target(engine, "server", placements=[(3, 0)])
    serial = audit_run(target, samples=2_000, search_samples=200, seed=3, learned=False, executor="serial")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        pooled = audit_run(target, samples=2_000, search_samples=200, seed=3, learned=False, executor=pool)
    assert [(r.lower_bound, r.event, r.pair) for r in serial.results] == [(r.lower_bound, r.event, r.pair) for r in pooled.results]


@pytest.mark.parametrize(
    "text, key",
    [
        ("target = 'run:no-such-algorithm'\n[parameters]\nhorizon = 64\nepsilon = 1.0\nview = 'server'\n[audit]\nsamples = 2000\n", "target"),
        ("target = 'run:dist-dp-se'\n[parameters]\nhorizon = 64\nepsilon = 1.0\nview = 'both'\n[audit]\nsamples = 2000\n", "parameters.view"),
        ("target = 'run:dist-dp-se'\n[parameters]\nhorizon = 64\nepsilon = 1.0\nview = 'server'\nepsilo = 1\n[audit]\nsamples = 2000\n", "parameters.epsilo"),
        ("target = 'run:dist-dp-se'\n[parameters]\nhorizon = 64\nepsilon = 1.0\nview = 'server'\n[neighbours]\nplacements = [[99, 0]]\n[audit]\nsamples = 2000\n",
         "neighbours.placements"),
    ],
)
def test_malformed_run_claims_exit_2_naming_file_and_key(tmp_path, text: str, key: str) -> None:
    """A run claim with an unknown algorithm, view, key or placement is a suite error (exit 2) naming the file and the key."""
    from click.testing import CliRunner

    from dpverify._cli._cmd_audit import audit_command

    bad = tmp_path / "broken.toml"
    bad.write_text(text)
    result = CliRunner().invoke(audit_command, [str(bad), "--executor", "serial"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "broken.toml" in result.output and key in result.output, result.output
