"""A ``connection.url`` never makes the worker create a file, load code or read a local file for the driver
(issue 21): a missing SQLite file is an error and stays missing; SQLite URL parameters and the drivers' file
parameters are refused on ``connection.url``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import make_url

from headwater.reference_connectors.jdbc_cdc import CdcConfig, JdbcCdcSourceConnector
from headwater.reference_connectors.jdbc_cdc.connection_url import sqlite_connect
from headwater.reference_connectors.jdbc_cdc.database import make_engine
from headwater.sdk import ConfigError


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("sqlite:///x.db?mode=rwc", r"takes no query parameters \(mode given\)"),
        ("sqlite:///file:x.db?mode=rwc&uri=true", r"takes no query parameters \(mode, uri given\)"),
        ("sqlite:///x.db?vfs=unix-dotfile", r"takes no query parameters \(vfs given\)"),
        ("sqlite+pysqlcipher:///x.db", "default SQLite driver"),
        ("sqlite://", "SQLite needs a database file"),
        ("postgresql+psycopg2://u@h/db?sslkey=/home/u/.ssh/id_rsa", "sslkey makes libpq read a local file"),
        ("postgresql://u@h/db?sslrootcert=/etc/shadow", "sslrootcert makes libpq read a local file"),
        ("postgresql://u@h/db?passfile=/etc/shadow", "passfile makes libpq read a local file"),
        ("postgresql://u@h/db?service=evil", "service makes libpq read a local file"),
        ("postgresql://u@h/db?sslkeylogfile=/tmp/keys", "sslkeylogfile makes libpq write a local file"),
        ("mysql+pymysql://u@h/db?local_infile=1", "local_infile lets the database server read any local file"),
        ("mysql+pymysql://u@h/db?read_default_file=/etc/my.cnf", "read_default_file makes the MySQL driver read"),
        ("mariadb+mariadbconnector://u@h/db?plugin_dir=/tmp", "plugin_dir makes the MySQL driver load code"),
        ("postgresql://u@h/db?plugin=evil", "plugin makes SQLAlchemy load an engine plugin"),
        ("not a url", "SQLAlchemy URL"),
    ],
)
def test_a_url_that_would_touch_the_workers_files_is_refused_naming_the_key(url: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason) as refused:
        CdcConfig.parse({"connection.url": url})
    assert refused.value.key == "connection.url"


def test_ordinary_parameters_are_accepted() -> None:
    url = "postgresql+psycopg2://u@h/db?sslmode=verify-full&application_name=cdc&connect_timeout=5"
    assert CdcConfig.parse({"connection.url": url}).url == url


def test_a_missing_sqlite_file_is_refused_and_never_created(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    config = {"name": "c", "connector.class": "jdbc-cdc", "connection.url": f"sqlite:///{missing}"}
    with pytest.raises(ConfigError, match="does not exist") as refused:
        JdbcCdcSourceConnector().validate(config)
    assert refused.value.key == "connection.url"
    with pytest.raises(ConfigError, match="does not exist"):
        make_engine(f"sqlite:///{missing}")
    with pytest.raises(sqlite3.OperationalError):  # a file removed after the check is not created either
        sqlite_connect(make_url(f"sqlite:///{missing}"), 1.0)()
    assert not missing.exists()
    assert list(tmp_path.iterdir()) == []


def test_an_existing_sqlite_file_is_opened_read_write(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    sqlite3.connect(path).close()
    JdbcCdcSourceConnector().validate({"name": "c", "connection.url": f"sqlite:///{path}"})
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    engine.dispose()
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]


def test_a_reference_is_checked_once_resolved() -> None:
    JdbcCdcSourceConnector().validate({"name": "c", "connection.url": "${directory:/run/secrets:shop-db-url}"})
