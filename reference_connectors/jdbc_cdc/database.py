"""Connecting to the captured database through SQLAlchemy and the database's native driver."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, make_url
from sqlalchemy.exc import NoSuchModuleError
from sqlalchemy.pool import NullPool

from headwater.reference_connectors.jdbc_cdc.connection_url import (
    CONNECTION_URL,
    check_database_exists,
    check_url,
    sqlite_connect,
)
from headwater.sdk import ConnectError

SQLITE_BUSY_TIMEOUT_S = 30


def make_engine(url: str) -> Engine:
    """An engine for ``url``; connections are not pooled (the connector and its task each hold a few for long).
    Raises :class:`~headwater.sdk.ConfigError` for a URL :mod:`.connection_url` refuses (a missing SQLite file)."""
    check_url(CONNECTION_URL, url)
    check_database_exists(CONNECTION_URL, url)
    parsed = make_url(url)
    args: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        args = {"creator": sqlite_connect(parsed, SQLITE_BUSY_TIMEOUT_S)}
    try:
        return create_engine(parsed, poolclass=NullPool, **args)
    except (NoSuchModuleError, ModuleNotFoundError) as error:
        raise ConnectError(
            f"no driver for {parsed.drivername}: {error}; install headwater[jdbc-cdc] "
            "(psycopg2-binary, pymysql) or the driver the URL names"
        ) from None


def database_name(engine: Engine) -> str | None:
    """The database named in the URL (a SQLite file's name)."""
    return engine.url.database
