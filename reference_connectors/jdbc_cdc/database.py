"""Connecting to the captured database through SQLAlchemy and the database's native driver."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.pool import NullPool

from headwater.sdk import ConnectError

SQLITE_BUSY_TIMEOUT_S = 30


def make_engine(url: str) -> Engine:
    """An engine for ``url``; connections are not pooled (the connector and its task each hold a few for long)."""
    try:
        parsed = make_url(url)
    except ArgumentError as error:
        raise ConnectError(f"connection.url is not an SQLAlchemy URL: {error}") from None
    args: dict[str, object] = {}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            raise ConnectError("SQLite needs a database file (sqlite:///path): the connector and its task share it")
        args = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S}
    try:
        return create_engine(parsed, poolclass=NullPool, connect_args=args)
    except (NoSuchModuleError, ModuleNotFoundError) as error:
        raise ConnectError(
            f"no driver for {parsed.drivername}: {error}; install headwater[jdbc-cdc] "
            "(psycopg2-binary, pymysql) or the driver the URL names"
        ) from None


def database_name(engine: Engine) -> str | None:
    """The database named in the URL (a SQLite file's name)."""
    return engine.url.database
