"""Optional dependencies fail early and clearly (issue #23, item 9).

Each optional package is blocked in this process (``sys.modules[name] = None`` makes ``import``
raise ``ImportError``, as if it were not installed) and the command that needs it is run: it must
exit 2 with one line naming the extra to install, before any work (no output file, no charge),
never with a traceback. The wrong variant each test could catch is the old behaviour: ``reproduce
--dask`` without Dask computed nothing but died with ``ModuleNotFoundError`` (exit 1).
"""

from __future__ import annotations

import socket
import sys
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify._cli._optional import EXTRAS, dask_client, require
from dpverify.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _block(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_every_optional_module_has_an_extra_and_the_test_extra_installs_them_all():
    """The extras named in messages exist in pyproject.toml, and ``[test]`` installs every optional
    package (so no test skips); matplotlib is a base dependency (figures are a main job)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    names = lambda requirements: {r.split("[")[0].split(">")[0].split("=")[0].strip().lower() for r in requirements}  # noqa: E731
    for module, (extra, _purpose) in EXTRAS.items():
        assert extra in extras, f"{module}: extra {extra!r} is not in pyproject.toml"
        assert names(extras[extra]) <= names(extras["test"]), f"the test extra misses {extra}"
    assert "matplotlib" in names(project["dependencies"])


@pytest.mark.parametrize("module", sorted(EXTRAS))
def test_require_names_the_extra(monkeypatch, module):
    _block(monkeypatch, module)
    extra = EXTRAS[module][0]
    with pytest.raises(ValueError, match=rf"pip install 'dpverify\[{extra}\]'"):
        require(module)


def test_reproduce_with_dask_missing_exits_2_before_any_work(monkeypatch, tmp_path):
    _block(monkeypatch, "dask", "dask.distributed")
    out = tmp_path / "figures"
    started = time.perf_counter()
    result = CliRunner().invoke(main, ["reproduce", "iclr-fig4", "--quick", "--out", str(out), "--dask", "tcp://127.0.0.1:8786"])
    elapsed = time.perf_counter() - started
    assert result.exit_code == 2, result.output
    assert "pip install 'dpverify[dask]'" in result.output and "Traceback" not in result.output
    assert not out.exists() or not any(out.iterdir())  # nothing computed, nothing written
    assert elapsed < 20  # hang guard only: the quick figure alone takes ~24 s, the refusal milliseconds


def test_unreachable_dask_scheduler_is_a_clear_error(tmp_path):
    """A port on 127.0.0.1 that refuses connections: an error naming the address within the timeout."""
    with socket.socket() as probe:  # a free port, closed again: connecting to it is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ValueError, match=rf"tcp://127.0.0.1:{port}"):
        dask_client(f"tcp://127.0.0.1:{port}", timeout=2)


def test_postgres_ledger_without_psycopg_exits_2(monkeypatch):
    _block(monkeypatch, "psycopg")
    result = CliRunner().invoke(main, ["ledger", "show", "postgresql://dpverify@127.0.0.1:1/privacy"])
    assert result.exit_code == 2, result.output
    assert "postgres" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("flags", [["--dask", "tcp://127.0.0.1:8786"], ["--executor", "dask"], ["--executor", "tcp://127.0.0.1:8786"]])
def test_audit_with_dask_missing_exits_2_before_any_work(monkeypatch, tmp_path, flags):
    _block(monkeypatch, "dask", "dask.distributed")
    report = tmp_path / "audit.json"
    result = CliRunner().invoke(main, ["audit", str(ROOT / "audits" / "discrete_laplace_eps1.toml"), "--json", str(report), *flags])
    assert result.exit_code == 2, result.output
    assert "pip install 'dpverify[dask]'" in result.output and "Traceback" not in result.output
    assert not report.exists()


def test_audit_runs_on_a_local_dask_cluster(tmp_path):
    """``audit --dask ADDRESS`` runs the claims on that scheduler and gives the same bounds as serial
    (results do not depend on the executor); the cluster is an in-process one."""
    import json

    from dask.distributed import LocalCluster

    claim = str(ROOT / "audits" / "discrete_laplace_eps1.toml")
    serial = CliRunner().invoke(main, ["audit", claim, "--executor", "serial", "--samples-scale", "0.05", "--json", "-"])
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        on_dask = CliRunner().invoke(main, ["audit", claim, "--dask", cluster.scheduler_address, "--samples-scale", "0.05", "--json", "-"])
    assert serial.exit_code == 0 and on_dask.exit_code == 0, on_dask.output
    bounds = lambda text: [(c["name"], c.get("lower_bound")) for c in json.loads(text[text.index("{"):])["results"]]  # noqa: E731
    assert bounds(on_dask.output) == bounds(serial.output)
