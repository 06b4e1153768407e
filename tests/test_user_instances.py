"""The user's own instances (issue 15, item 4): --means, --instance-file, a BanditInstance in RunConfig."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import dpverify
from dpverify.cli import main


def test_python_run_accepts_a_bandit_instance_object():
    inst = dpverify.user_instance([0.9, 0.8, 0.5], reward="bernoulli", name="mine")
    result = dpverify.run(dpverify.RunConfig(algorithm="dist-dp-se", instance=inst, horizon=20_000, epsilon=1.0, seeds=2))
    data = result.to_dict()
    assert data["instance"] == "mine"
    assert data["options"]["instance_definition"]["means"] == [0.9, 0.8, 0.5]
    # the run is on this instance: every run's recorded instance has these means, and the
    # regret is at most T * (largest gap), and positive (the 0.5 arm is pulled in batch 1)
    assert all(r["instance"]["means"] == [0.9, 0.8, 0.5] for r in data["per_run"])
    assert 0 < data["mean_final_regret"] <= 20_000 * 0.4


def test_gaussian_means_are_the_clipped_laws_means():
    inst = dpverify.user_instance([1.0, 0.5], reward="gaussian", sd=0.1)
    assert inst.means[1] == pytest.approx(0.5)
    assert inst.means[0] < 1.0  # N(1, 0.01) clipped to [0, 1] has mean 1 - 0.1 phi(0) ~ 0.96
    assert inst.means[0] == pytest.approx(1 - 0.1 / np.sqrt(2 * np.pi), abs=1e-9)


def test_cli_means_and_instance_file_give_the_same_run(tmp_path):
    file = tmp_path / "mine.toml"
    file.write_text('name = "means"\nreward = "gaussian"\nmeans = [0.9, 0.8, 0.5]\nsd = 0.1\n')
    common = ["run", "--algorithm", "dist-dp-se", "--eps", "1", "--horizon", "20000", "--seeds", "2", "--json", "-"]
    a = CliRunner().invoke(main, common + ["--means", "0.9,0.8,0.5", "--reward", "gaussian", "--sd", "0.1"])
    b = CliRunner().invoke(main, common + ["--instance-file", str(file)])
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    assert da["instance"] == db["instance"] == "means"
    assert da["mean_final_regret"] == db["mean_final_regret"]
    assert da["per_run"][0]["instance"]["laws"] == ["clipped-gaussian"] * 3


def test_linear_instance_file(tmp_path):
    rng = np.random.default_rng(0)
    actions = rng.normal(size=(30, 4))
    actions /= np.linalg.norm(actions, axis=1, keepdims=True)
    theta = np.array([0.6, 0.0, 0.0, 0.0])
    np.save(tmp_path / "a.npy", actions)
    np.save(tmp_path / "t.npy", theta)
    (tmp_path / "lin.toml").write_text('name = "lin"\nactions = "a.npy"\ntheta = "t.npy"\nsigma = 0.1\n')
    inst = dpverify.load_instance_file(tmp_path / "lin.toml")
    assert isinstance(inst, dpverify.LinearInstance)
    assert inst.k == 30 and np.allclose(inst.theta, theta)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--means", "0.9"], "means="),
        (["--means", "0.9,1.5"], "means="),
        (["--means", "0.9,nan"], "means="),
        (["--means", "a,b"], "means="),
        (["--means", ""], "means="),
        (["--means", "0.9,0.5", "--reward", "gaussian", "--sd", "-1"], "sd="),
        (["--means", "0.9,0.5", "--instance", "easy"], "instance="),
        (["--instance-file", "/nonexistent.toml"], "instance_file="),
    ],
)
def test_bad_user_instances_exit_2_naming_the_parameter(argv, needle):
    result = CliRunner().invoke(main, ["run", "--algorithm", "se", "--horizon", "1000"] + argv)
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output
