"""The database servers the test suite installs and starts: the command line leaves one running and stops it, and a
missing program with installing forbidden names the package to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import support.databases as databases
from support.databases import DatabaseUnavailable, ensure_package
from support.scratch import ScratchDatabase


def test_a_missing_program_names_its_package_when_installing_is_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(databases.INSTALL_ENV, "0")
    monkeypatch.setattr(databases, "_find", lambda name, patterns=(): None)
    with pytest.raises(DatabaseUnavailable, match="apt-get install mariadb-server"):
        ensure_package("mariadbd", "mariadb-server")


@pytest.mark.postgres
def test_the_command_line_starts_a_postgres_server_and_stops_it(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    env = {**os.environ, "HEADWATER_CACHE": str(tmp_path)}
    command = [sys.executable, databases.__file__]
    started = subprocess.run([*command, "start", "postgres"], env=env, capture_output=True, text=True, timeout=300)
    if started.returncode != 0:
        message = f"no PostgreSQL server: {started.stderr[-500:]}"
        if pytestconfig.getoption("require_databases"):
            pytest.fail(message)
        pytest.skip(message)
    state = json.loads((tmp_path / "databases" / "postgres.json").read_text())
    try:
        url = started.stdout.strip().splitlines()[-1]
        assert url == state["url"]
        database = ScratchDatabase("postgres", url)
        assert database.scalar("SHOW wal_level") == "logical"
        database.close()
    finally:
        stopped = subprocess.run([*command, "stop", "postgres"], env=env, capture_output=True, text=True, timeout=300)
    assert stopped.returncode == 0, stopped.stderr
    assert not Path(state["directory"]).exists()
    assert not (tmp_path / "databases" / "postgres.json").exists()
