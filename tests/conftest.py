"""Shared pytest configuration: hypothesis profiles chosen by the HYPOTHESIS_PROFILE variable.

``ci`` (the default under CI=true) is derandomised, so CI is deterministic; ``dev`` explores.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=60)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def postgres():
    """One throwaway PostgreSQL server for the session (tests/_postgres.py; started on first use,
    stopped at the end), shared by every durable-ledger test module."""
    from _postgres import PostgresServer

    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def witness(tmp_path, monkeypatch):
    """Each test's own ledger witness directory (the default is the user's state directory), and no
    ledger key from the environment: used by every durable-ledger test module."""
    directory = tmp_path / "witness"
    monkeypatch.setenv("DPVERIFY_LEDGER_WITNESS", str(directory))
    monkeypatch.delenv("DPVERIFY_LEDGER_KEY", raising=False)
    return directory
