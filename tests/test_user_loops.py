"""Run audits of a user's own bandit loop (issue 32): the extension point, the neighbours, the defaults.

Most tests are deterministic (the recorded transcript is what the privatizer released, the claim
is what the loop's ledger was charged, the generated candidates change one user on the named
bases and batches, claim files resolve "run:pkg.mod:loop" and "base"). The one statistical test
runs the README's example as written, seed 1: the correct loop holds its recorded 1-DP claim
(false alarm <= alpha = 1e-3, the suite's level) and the same loop with its planted mistake (a
decision on a raw all-zero batch) is reported violated: the mistake flips the public view
deterministically on the all-zero base, which a flat or threshold table alone never shows.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import dpverify
from accounting import PureDP
from dpverify._audit._loops import LoopEngine, loop_engine
from dpverify._audit._runs import SUITE_ALPHA, SUITE_LEARNED, audit_run, run_pairs, run_target
from dpverify._audit._suite import SuiteError, load_claim
from dpverify._audit._suite._build import build
from dpverify._audit._suite._gate import DEFAULT_ALPHA
from dpverify._audit._suite import _user_loops

ROOT = Path(__file__).resolve().parents[1]


def echo_loop(run, epsilon=1.0):
    """Two batches per arm through DP-SE's curator; publishes every estimate it was handed."""
    private = run.privatizer(dpverify.central_laplace_protocol(epsilon))
    seen = []
    for b, n in ((1, 2), (2, 4)):
        for arm in range(run.arms):
            rewards, users = run.pull(arm, n)
            seen.append(private.release_sum(rewards, users, label=f"b={b} arm={arm}").estimate)
    return seen


def unlabelled_loop(run):
    private = run.privatizer(dpverify.central_laplace_protocol(1.0))
    rewards, users = run.pull(0, 2)
    return [private.release_sum(rewards, users, label="first batch").estimate]


def test_readme_user_loop_example() -> None:
    """Statistical (module docstring): the README's loop holds, its planted mistake is caught."""
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- user-loop-example -->\s*```python\n(.*?)```", text, re.S)
    assert match, "README.md must hold the user-loop example after <!-- user-loop-example -->"
    code = match.group(1)
    lines = [l for l in code.splitlines() if l.strip() and not l.startswith(("import ", "from "))]
    assert len(lines) <= 20, f"the README example has {len(lines)} lines of user code besides imports"
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["verdicts"] == ["holds", "violated"]


def test_the_transcript_is_what_the_privatizer_released() -> None:
    """Deterministic: the server view's slots hold exactly the estimates the loop was handed (a
    central release: the server holds the estimate), in (batch, arm) order; the claim is the
    ledger's charge per user (each user in one batch: 1-DP); a wrong label is refused, naming it."""
    engine = loop_engine(echo_loop, arms=2, horizon=12)
    out = engine.run(np.full((12, 2), 0.5), engine.streams(np.random.default_rng(3)), 5)
    assert engine.columns("server") == ["batch 1 arm 0", "batch 1 arm 1", "batch 2 arm 0", "batch 2 arm 1"]
    assert np.array_equal(out["server"], out["public"])
    assert len({tuple(r) for r in out["server"].tolist()}) == 5  # five independent runs
    target = run_target(echo_loop, "server", arms=2, horizon=12)
    assert target.claim("pure") == PureDP(1.0)
    assert target.guarantee.max_charges_per_user == 1
    with pytest.raises(ValueError, match="label"):
        loop_engine(unlabelled_loop, arms=2, horizon=4)


def test_generated_neighbours_cover_the_data_conditions() -> None:
    """Deterministic: by default the changed user (0 in D, 1 in D' on every arm) sits in the first,
    a middle and the last batch of the all-active run, on the all-zero, all-one and mixed 0/1
    tables; ``base`` picks bases (a table of the user's too) and a wrong one is refused."""
    engine = loop_engine(_user_loops.elimination, arms=2, horizon=32)
    pairs = run_pairs(engine, "transcript")
    assert {p.batch for p in engine.placements()} == {1, 2, 3}
    rows = {0, 4, 12}  # the first user of batches 1, 2, 3 (2, 4, 8 users per arm)
    seen = set()
    for pair in pairs:
        changed = np.flatnonzero(np.any(pair.d != pair.d_prime, axis=1))
        assert changed.size == 1 and changed[0] in rows
        assert np.all(pair.d[changed[0]] == 0.0) and np.all(pair.d_prime[changed[0]] == 1.0)
        kind = re.search(r"\((zeros|ones|mixed)\)$", pair.label).group(1)
        others = np.delete(pair.d, changed[0], axis=0)
        parity = np.delete(np.arange(32) % 2, changed[0])
        expected = {"zeros": np.zeros(31), "ones": np.ones(31), "mixed": parity.astype(float)}[kind]
        assert np.array_equal(others, np.tile(expected[:, None], (1, 2)))
        seen.add((kind, int(changed[0])))
    assert seen == {(k, r) for k in ("zeros", "ones", "mixed") for r in rows}
    only = run_pairs(engine, "server", base="zeros", placements=[(2, 1)])
    assert len(only) == 1 and np.count_nonzero(only[0].d_prime) == 2 and only[0].d_prime[8].tolist() == [1.0, 1.0]
    mine = np.full((32, 2), 0.25)
    assert np.array_equal(run_pairs(engine, "server", base=mine, placements=[(1, 0)])[0].d[1:], mine[1:])
    with pytest.raises(ValueError, match="base"):
        run_pairs(engine, "server", base="constant")
    with pytest.raises(ValueError, match="base"):
        run_pairs(engine, "server", base=np.full((8, 2), 0.5))


def test_audit_run_defaults_are_the_suites() -> None:
    """Deterministic: one set of defaults (alpha, views) for audit_run and the gate."""
    defaults = inspect.signature(audit_run).parameters
    assert defaults["alpha"].default == SUITE_ALPHA == DEFAULT_ALPHA
    assert defaults["learned"].default is SUITE_LEARNED is False


def _claim_file(tmp_path: Path, neighbours: str) -> Path:
    path = tmp_path / "loop.toml"
    path.write_text(f'''target = "run:dpverify._audit._suite._user_loops:elimination"
[parameters]
arms = 2
horizon = 32
epsilon = 0.5
[neighbours]
{neighbours}
[audit]
samples = 1000
''')
    return path


def test_claim_files_name_a_user_loop_and_its_base(tmp_path: Path) -> None:
    """Deterministic: "run:pkg.mod:loop" resolves to the user's loop (its keyword arguments from
    [parameters], the claim from its ledger: 0.5-DP), ``base`` takes a name or a table file, and a
    wrong base is a suite error naming ``neighbours.base``."""
    np.save(tmp_path / "table.npy", np.full((32, 2), 0.75))
    built = build(load_claim(_claim_file(tmp_path, 'base = ["zeros", "table.npy"]\nplacements = [[3, 0]]'), tmp_path))
    assert built.claim == PureDP(0.5) and built.form == "pure"
    assert [p.label.rsplit("base: ", 1)[1] for p in built.pairs] == ["every reward 0 (zeros)", "the given base table"]
    assert built.pairs[1].d[13].tolist() == [0.75, 0.75] and built.pairs[1].d[12].tolist() == [0.0, 0.0]
    assert isinstance(built.mechanism.engine, LoopEngine) and built.mechanism.engine.parameters == {"epsilon": 0.5}
    with pytest.raises(SuiteError, match="neighbours.base"):
        build(load_claim(_claim_file(tmp_path, 'base = "constant"'), tmp_path))


def test_a_batched_mode_draws_many_runs_per_call() -> None:
    """Deterministic: a loop offering ``batched(table, rng, reps)`` is drawn through it (one call for
    ``reps`` runs); the probe and ledger runs stay plain, so the claim is still the ledger's."""
    calls = []

    def batched(table, rng, reps):
        calls.append(reps)
        server = np.stack([table[0:2, 0].sum() + rng.laplace(size=reps), table[2:4, 1].sum() + rng.laplace(size=reps)], axis=1)
        return {"server": server, "public": np.zeros((reps, 1))}

    def loop(run):
        private = run.privatizer(dpverify.central_laplace_protocol(1.0))
        for arm in range(2):
            rewards, users = run.pull(arm, 2)
            private.release_sum(rewards, users, label=f"b=1 arm={arm}")
        return [0]

    loop.batched = batched
    target = run_target(loop, "server", arms=2, horizon=4)
    assert target.claim("pure") == PureDP(1.0) and calls == []
    out = target.mechanism(target.pairs[0].d, np.random.default_rng(0), 7)
    assert calls == [7] and out.shape == (7, 2)


def test_every_user_loop_has_its_claim_file() -> None:
    """Deterministic: each loop of ``_user_loops`` is audited by the suite, the planted ones as
    planted files expecting a violation, the correct ones as ordinary claims, all with the default
    neighbours (no ``base`` or ``placements`` key)."""
    from dpverify._audit._suite import load_suite

    specs = {s.target.rsplit(":", 1)[1]: s for s in load_suite(ROOT / "audits") if "._user_loops:" in s.target}
    assert set(specs) == set(_user_loops.__all__)
    correct = {"elimination", "clipped_estimates", "rr_biased"}
    for name, spec in specs.items():
        assert spec.planted == (name not in correct) and (name in correct or spec.expect == "violated"), name
        assert "base" not in spec.neighbours and "placements" not in spec.neighbours


def test_run_engine_takes_a_loop() -> None:
    """Deterministic: ``run_engine`` makes a loop's engine as ``run_target`` does; a bad name is refused."""
    assert {"LoopRun", "loop_engine", "run_target", "run_engine", "audit_run"} <= set(dpverify.__all__)
    assert dpverify.LoopRun.__name__ == "LoopRun"
    engine = dpverify.run_engine(echo_loop, arms=2, horizon=12, epsilon=0.5)
    assert isinstance(engine, LoopEngine) and run_target(engine, "public").claim("pure") == PureDP(0.5)
    with pytest.raises(ValueError, match="algorithm"):
        dpverify.run_engine("my-own-loop", arms=2, horizon=12, epsilon=1.0)
