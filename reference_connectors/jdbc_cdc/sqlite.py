"""Trigger mode on SQLite: ``AFTER`` row triggers that write ``json_object`` images into an ``AUTOINCREMENT`` audit
table (ids are never reused, even after the rows are purged). SQLite runs one writer at a time, so ids become
visible in id order and no transaction is ever reported in flight. Use a database in WAL mode, so that a snapshot's
long read does not block writers.

SQLite keeps no exact decimals: a column declared NUMERIC or DECIMAL holds integers or REAL (or text that is no
number), so with ``decimal.handling.mode=string`` its image holds the text ``CAST(... AS TEXT)`` gives."""

from __future__ import annotations

import time

from sqlalchemy import Connection

from headwater.reference_connectors.jdbc_cdc.dialect import TriggerDialect, literal
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.reference_connectors.jdbc_cdc.watermark import Reading

NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
_ARGS_PER_OBJECT = 60
"""Columns per ``json_object`` call (SQLite caps a function's arguments at 127); wider rows are patched together."""


class SqliteDialect(TriggerDialect):
    def create_audit(self, connection: Connection) -> None:
        connection.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {self.audit_ref} (id INTEGER PRIMARY KEY AUTOINCREMENT, txid INTEGER, "
            'table_name TEXT NOT NULL, op TEXT NOT NULL, "before" TEXT, "after" TEXT, ts_ms INTEGER)'
        )

    def image(self, table: CapturedTable, row: str) -> str:
        prefix = f"{row}." if row else ""
        texts = self.text_columns(table)
        parts = []
        for start in range(0, len(table.columns), _ARGS_PER_OBJECT):
            chunk = table.columns[start : start + _ARGS_PER_OBJECT]
            pairs = (f"{literal(c)}, {self.value(prefix, c, texts)}" for c in chunk)
            parts.append("json_object(" + ", ".join(pairs) + ")")
        image = parts[0] if parts else "json_object()"
        for part in parts[1:]:
            image = f"json_patch({image}, {part})"
        return image

    def value(self, prefix: str, column: str, texts: list[str]) -> str:
        """The image's value of ``column``: ``CAST(... AS TEXT)`` for a column written as text. A BLOB, which SQLite
        lets any column hold and JSON cannot, is written as PostgreSQL writes a bytea in JSON: ``\\x`` and its
        bytes in lowercase hex (``json_object`` would raise, failing the snapshot and the application's own
        writes through the triggers)."""
        reference = f"{prefix}{self.q(column)}"
        written = f"CAST({reference} AS TEXT)" if column in texts else reference
        return f"CASE WHEN typeof({reference}) = 'blob' THEN '\\x' || lower(hex({reference})) ELSE {written} END"

    def install(self, connection: Connection, table: CapturedTable) -> None:
        """In one transaction, so no change falls between dropping a trigger and creating it again."""
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        for op, event, name, before, after in self.row_triggers(table):
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")
            connection.exec_driver_sql(
                f"CREATE TRIGGER {name} AFTER {event} ON {self.table_ref(table)} BEGIN "
                f'INSERT INTO {self.audit_ref} (txid, table_name, op, "before", "after", ts_ms) '
                f"VALUES (NULL, {literal(table.qualified)}, '{op}', {before}, {after}, {NOW_MS}); END"
            )
        connection.exec_driver_sql("COMMIT")

    def installed(self, connection: Connection) -> list[tuple[str, str]]:
        rows = connection.exec_driver_sql("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger'")
        prefix = self.audit + "_"
        return sorted((str(name), str(table)) for name, table in rows if str(name).startswith(prefix))

    def drop_trigger(self, connection: Connection, trigger: str, table: str) -> None:
        connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {self.q(trigger)}")

    def begin_read(self, connection: Connection, need_list: bool = False) -> Reading:
        started = time.monotonic()
        connection.exec_driver_sql("BEGIN")
        return Reading(frozenset(), started, started)
