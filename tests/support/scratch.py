"""A scratch database for one test: a SQLite file, or a new database on a PostgreSQL or MariaDB server, with the
look-ups the CDC tests make (triggers, tables, slots, publications) and a ``close`` that removes it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

DROP_TIMEOUT_S = 30.0


class ScratchDatabase:
    """One database of ``kind`` (``sqlite``, ``postgres`` or ``mariadb``) at SQLAlchemy ``url``."""

    def __init__(self, kind: str, url: str, admin_url: str | None = None, name: str | None = None) -> None:
        from sqlalchemy import create_engine
        from sqlalchemy.pool import NullPool

        self.kind = kind
        self.url = url
        self.name = name
        self._admin_url = admin_url
        self.engine: Engine = create_engine(url, poolclass=NullPool)
        self.closed = False

    @classmethod
    def sqlite(cls, path: Path) -> ScratchDatabase:
        """A SQLite file in WAL mode (a long snapshot read then does not block writers)."""
        made = cls("sqlite", f"sqlite:///{path}")
        made.execute("PRAGMA journal_mode=WAL")
        return made

    @classmethod
    def on_server(cls, kind: str, server_url: str) -> ScratchDatabase:
        """A new, empty database on the server ``server_url`` answers at (a user that may create databases)."""
        from sqlalchemy import create_engine, make_url
        from sqlalchemy.pool import NullPool

        name = f"hw_{uuid.uuid4().hex[:12]}"
        admin = create_engine(server_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.exec_driver_sql(f"CREATE DATABASE {name}")
        admin.dispose()
        url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
        return cls(kind, url, server_url, name)

    def connect(self) -> Connection:
        """A connection of the test's own (for transactions it interleaves); close it."""
        return self.engine.connect()

    def execute(self, *statements: str) -> None:
        """Run ``statements`` in one transaction."""
        with self.engine.begin() as connection:
            for statement in statements:
                connection.exec_driver_sql(statement)

    def query(self, statement: str) -> list[tuple[Any, ...]]:
        with self.engine.connect() as connection:
            return [tuple(row) for row in connection.exec_driver_sql(statement)]

    def scalar(self, statement: str) -> Any:
        rows = self.query(statement)
        return rows[0][0] if rows else None

    def triggers(self) -> list[str]:
        """Every user trigger's name."""
        sql = {
            "sqlite": "SELECT name FROM sqlite_master WHERE type = 'trigger'",
            "postgres": "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal",
            "mariadb": "SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = DATABASE()",
        }[self.kind]
        return sorted(str(row[0]) for row in self.query(sql))

    def tables(self) -> list[str]:
        from sqlalchemy import inspect

        return sorted(inspect(self.engine).get_table_names())

    def slots(self) -> list[str]:
        """PostgreSQL: the replication slots of this database."""
        sql = f"SELECT slot_name FROM pg_replication_slots WHERE database = '{self.name}'"
        return sorted(str(row[0]) for row in self.query(sql))

    def publications(self) -> list[str]:
        return sorted(str(row[0]) for row in self.query("SELECT pubname FROM pg_publication"))

    def close(self) -> None:
        """Dispose of the engine and drop the database (its slots first, on PostgreSQL)."""
        if self.closed:
            return
        self.closed = True
        self.engine.dispose()
        if self._admin_url is None:
            return
        from sqlalchemy import create_engine
        from sqlalchemy.pool import NullPool

        admin = create_engine(self._admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            if self.kind == "postgres":
                self._drop_slots(connection)
                connection.exec_driver_sql(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")
            else:
                connection.exec_driver_sql(f"DROP DATABASE IF EXISTS {self.name}")
        admin.dispose()

    def _drop_slots(self, connection: Connection) -> None:
        """Drop this database's replication slots, ending the connections that hold them (which takes a moment)."""
        deadline = time.monotonic() + DROP_TIMEOUT_S
        while True:
            slots: Sequence[Any] = connection.exec_driver_sql(
                f"SELECT slot_name, active_pid FROM pg_replication_slots WHERE database = '{self.name}'"
            ).fetchall()
            if not slots:
                return
            for slot, pid in slots:
                if pid is None:
                    connection.exec_driver_sql(f"SELECT pg_drop_replication_slot('{slot}')")
                else:
                    connection.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})")
            if time.monotonic() > deadline:
                raise TimeoutError(f"replication slots {slots} of {self.name} still held after {DROP_TIMEOUT_S} s")
            time.sleep(0.05)

    def __repr__(self) -> str:
        return f"ScratchDatabase({self.kind}, {self.url})"
