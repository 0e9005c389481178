"""What a ``connection.url`` may ask of the worker's host: a CDC source reads an existing database, so its URL never
makes the worker create a file, load code, or read a local file the database's driver would open for it.

- SQLite: ``sqlite:///path`` (``sqlite:////abs/path``) names a database file that must exist; the connector opens
  it read-write without creating it (SQLite's ``mode=rw``), so a missing file is an error, never a new file. The
  URL takes no query parameters: ``mode=rwc``, ``vfs``, ``uri=true`` and the like are refused, as are other SQLite
  drivers than the default one and an in-memory database.
- PostgreSQL and MariaDB/MySQL: a query parameter that makes the driver read a local file or load code
  (:data:`FILE_PARAMETERS`: libpq's ``sslkey`` or ``passfile``, the MySQL drivers' ``local_infile`` or
  ``read_default_file``, SQLAlchemy's ``plugin``) is refused. Whoever may write ``connection.url`` may write any
  connector key too, so no connector key allows them: the worker's administrator gives such files through the
  driver's environment (libpq's ``PGSSLCERT``, ``PGSSLKEY``, ``PGSSLROOTCERT``, ``PGPASSFILE``, ``PGSERVICEFILE``)
  or its default locations (``~/.postgresql/``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import URL, make_url
from sqlalchemy.exc import ArgumentError

from headwater.sdk import ConfigError

CONNECTION_URL = "connection.url"

FILE_PARAMETERS: dict[str, str] = {
    **dict.fromkeys(
        ("sslkey", "sslcert", "sslrootcert", "sslcrl", "sslcrldir", "passfile", "service", "servicefile"),
        "makes libpq read a local file",
    ),
    "sslkeylogfile": "makes libpq write a local file",
    **dict.fromkeys(
        ("read_default_file", "read_default_group", "default_file", "default_group"),
        "makes the MySQL driver read an option file",
    ),
    **dict.fromkeys(
        ("ssl_ca", "ssl_capath", "ssl_cert", "ssl_key", "ssl_crl", "ssl_crlpath", "ssl"),
        "makes the MySQL driver read a local file",
    ),
    "local_infile": "lets the database server read any local file of the worker's host (LOAD DATA LOCAL INFILE)",
    "plugin_dir": "makes the MySQL driver load code from a directory",
    "plugin": "makes SQLAlchemy load an engine plugin (code)",
}
"""Query parameters of a ``connection.url`` refused for every database, with what each would do."""

SQLITE_DRIVER = "pysqlite"


def parse_url(key: str, value: Any) -> URL:
    """``value`` as an SQLAlchemy URL; raises :class:`ConfigError` on ``key`` for one that is not."""
    if not value or "://" not in str(value):
        raise ConfigError(key, value, "Expected an SQLAlchemy URL such as postgresql+psycopg2://user@host/db")
    try:
        return make_url(str(value))
    except ArgumentError as error:
        raise ConfigError(key, value, f"Not an SQLAlchemy URL: {error}") from None


def check_url(key: str, value: Any) -> None:
    """The validator of ``connection.url``: refuses what :mod:`this module <.connection_url>` says it refuses
    (all but the existence of a SQLite file, which :func:`check_database_exists` checks)."""
    url = parse_url(key, value)
    refused = sorted(name for name in url.query if name.lower() in FILE_PARAMETERS)
    if refused:
        why = "; ".join(f"{name} {FILE_PARAMETERS[name.lower()]}" for name in refused)
        raise ConfigError(
            key,
            value,
            f"Query parameters that read local files or load code are refused: {why}. Give such files to the "
            "driver through the worker's environment (libpq's PGSSLCERT, PGSSLKEY, PGSSLROOTCERT, PGPASSFILE) or "
            "its default locations instead",
        )
    if url.get_backend_name() != "sqlite":
        return
    if url.get_driver_name() != SQLITE_DRIVER:
        raise ConfigError(key, value, f"Use the default SQLite driver (sqlite:///path), not {url.drivername}")
    if url.database in (None, "", ":memory:"):
        raise ConfigError(
            key, value, "SQLite needs a database file (sqlite:///path): the connector and its task share it"
        )
    if url.query:
        raise ConfigError(
            key,
            value,
            f"A SQLite URL takes no query parameters ({', '.join(sorted(url.query))} given): the connector opens "
            "the existing database file read-write and never creates one (no mode, vfs or uri)",
        )


def check_database_exists(key: str, value: Any) -> None:
    """Refuse a SQLite URL (valid for :func:`check_url`) whose database file does not exist; other URLs pass."""
    url = parse_url(key, value)
    if url.get_backend_name() == "sqlite" and not Path(str(url.database)).is_file():
        raise ConfigError(
            key,
            value,
            f"The SQLite database file {url.database} does not exist (relative paths are from the worker's "
            "directory): a CDC source reads an existing database and never creates one",
        )


def sqlite_connect(url: URL, timeout_s: float) -> Callable[[], sqlite3.Connection]:
    """A connect function for the SQLite database of ``url`` that opens the file read-write and fails, never
    creating it, when it is missing (SQLite's ``mode=rw``)."""
    target = f"file:{quote(str(url.database), safe='/')}?mode=rw"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(target, uri=True, timeout=timeout_s, check_same_thread=False)

    return connect
