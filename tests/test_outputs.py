"""Outputs are never lost: bad paths refused before the work, files written atomically (issue 15, item 3)."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from dpverify._presentation._output import atomic_path, atomic_write, check_output_dir, check_output_file
from dpverify.cli import main


def _forbid(monkeypatch, module, name):
    """Make ``module.name`` fail the test if called: the refusal must come before the work."""

    def called(*args, **kwargs):
        raise AssertionError(f"{name} was called: the output path should have been refused first")

    monkeypatch.setattr(module, name, called)


def test_run_json_in_missing_directory_exits_2_before_computing(monkeypatch, tmp_path):
    """Issue 15's case 4: `dpverify run ... --json /missing/dir/out.json` computed the whole run, then died."""
    import dpverify._bandits as bandits

    _forbid(monkeypatch, bandits, "run")
    missing = tmp_path / "missing" / "dir" / "out.json"
    result = CliRunner().invoke(main, ["run", "--algorithm", "dist-dp-se", "--instance", "easy", "--eps", "1", "--horizon", "10000", "--json", str(missing)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "--json" in result.output and str(missing) in result.output and "does not" in result.output


def test_run_json_is_written_whole(tmp_path):
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["run", "--algorithm", "se", "--instance", "easy", "--horizon", "2000", "--seeds", "1", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["horizon"] == 2000
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary left behind


@pytest.mark.parametrize(
    "argv, option",
    [
        (["audit", "audits/", "--json", "{missing}"], "--json"),
        (["audit", "audits/", "--junit", "{missing}"], "--junit"),
        (["tails", "--quick", "--json", "{missing}"], "--json"),
        (["tails", "--quick", "--junit", "{missing}"], "--junit"),
    ],
)
def test_audit_and_tails_refuse_bad_outputs_before_work(monkeypatch, tmp_path, argv, option):
    import dpverify._audit._suite as suite
    import dpverify._tails as tails

    _forbid(monkeypatch, suite, "load_suite")
    _forbid(monkeypatch, tails, "run_tails")
    missing = str(tmp_path / "nowhere" / "report.out")
    result = CliRunner().invoke(main, [a.format(missing=missing) for a in argv])
    assert result.exit_code == 2, result.output
    assert option in result.output and "nowhere" in result.output


def test_reproduce_refuses_an_out_dir_under_a_file(monkeypatch, tmp_path):
    import dpverify._bandits._runner as runner

    _forbid(monkeypatch, runner, "sweep")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = CliRunner().invoke(main, ["reproduce", "iclr-fig4", "--quick", "--out", str(blocker / "figures")])
    assert result.exit_code == 2, result.output
    assert "--out" in result.output and "is a file" in result.output


def test_read_only_directory_is_refused(monkeypatch, tmp_path):
    """A directory the process may not write to (the probe file cannot be created; simulated, since tests may run as root)."""
    import dpverify._presentation._output as output

    locked = tmp_path / "locked"
    locked.mkdir()
    real_mkstemp = output.tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if os.fspath(dir) == os.fspath(locked):
            raise PermissionError(13, "Permission denied")
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(output.tempfile, "mkstemp", mkstemp)
    with pytest.raises(ValueError, match="--json.*not writable"):
        check_output_file("--json", locked / "x.json")
    with pytest.raises(ValueError, match="--out.*not writable"):
        check_output_dir("--out", locked / "new")
    check_output_file("--json", tmp_path / "x.json")  # the same check passes beside it


def test_checks_accept_what_can_be_written(tmp_path):
    check_output_file("--json", "-")
    check_output_file("--json", None)
    check_output_file("--json", tmp_path / "new.json")
    check_output_dir("--out", tmp_path / "a" / "b" / "c")  # created later, under a writable ancestor
    with pytest.raises(ValueError, match="not a directory"):
        check_output_file("--json", tmp_path)
    with pytest.raises(ValueError, match="--json=''"):
        check_output_file("--json", "")


def test_atomic_write_keeps_the_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "result.json"
    atomic_write(target, '{"old": 1}')
    with pytest.raises(RuntimeError):
        with atomic_path(target) as temporary:
            temporary.write_text('{"half')
            raise RuntimeError("interrupted")
    assert target.read_text() == '{"old": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
