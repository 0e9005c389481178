"""A fresh database per test, on SQLite and (through the harness's session servers) PostgreSQL and MariaDB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.scratch import ScratchDatabase

SERVERS = [pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("mariadb", marks=pytest.mark.mariadb)]


@pytest.fixture(params=["sqlite", *SERVERS])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ScratchDatabase]:
    """An empty database of each kind: a SQLite file in WAL mode, or a new database on the session's server."""
    if request.param != "sqlite":
        yield request.getfixturevalue(f"{request.param}_database")
        return
    found = ScratchDatabase.sqlite(tmp_path / "cdc.db")
    yield found
    found.close()


@pytest.fixture(params=SERVERS)
def server_database(request: pytest.FixtureRequest) -> ScratchDatabase:
    """An empty database on each server kind (where transactions really run concurrently)."""
    found: ScratchDatabase = request.getfixturevalue(f"{request.param}_database")
    return found


@pytest.fixture
def sqlite_database(tmp_path: Path) -> Iterator[ScratchDatabase]:
    found = ScratchDatabase.sqlite(tmp_path / "cdc.db")
    yield found
    found.close()


@pytest.fixture
def prefix(unique_name: str) -> str:
    """The connector's topic prefix: unique, so tests on a shared broker never read each other's topics."""
    return unique_name
