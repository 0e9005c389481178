"""Trigger mode on PostgreSQL: one PL/pgSQL trigger function per connector writes ``to_jsonb`` images and the
writing transaction's id into a ``bigserial`` audit table; each captured table gets one ``AFTER INSERT OR UPDATE
OR DELETE`` row trigger, whose arguments name the columns the function writes as text (the numerics, with
``decimal.handling.mode=string``). The watermark reads ``pg_current_snapshot()``, whose in-progress list is exactly
the transactions in flight when the reading snapshot was taken."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection

from headwater.reference_connectors.jdbc_cdc.dialect import SNAPSHOT_BATCH, TriggerDialect, literal, object_name
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.reference_connectors.jdbc_cdc.watermark import InFlight, Reading

_PAIRS_PER_OBJECT = 40
"""Columns per ``jsonb_build_object`` call (a function takes at most 100 arguments); more are joined with ``||``."""


def parse_snapshot(text: str) -> InFlight:
    """The in-progress transaction ids of a ``pg_snapshot`` text (``xmin:xmax:xip,...``)."""
    in_progress = text.split(":")[2]
    return frozenset(int(x) for x in in_progress.split(",") if x)


class PostgresDialect(TriggerDialect):
    @property
    def function(self) -> str:
        return object_name(self.audit, "capture")

    @property
    def trigger(self) -> str:
        return object_name(self.audit, "trigger")

    def create_audit(self, connection: Connection) -> None:
        audit = self.audit_ref
        connection.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {audit} (id bigserial PRIMARY KEY, txid bigint, table_name text NOT NULL, "
            "op char(1) NOT NULL, before jsonb, after jsonb, ts_ms bigint)"
        )
        connection.exec_driver_sql(
            f"CREATE OR REPLACE FUNCTION {self.q(self.function)}() RETURNS trigger LANGUAGE plpgsql AS $body$\n"
            "DECLARE\n"
            "  old_image jsonb;\n"
            "  new_image jsonb;\n"
            "BEGIN\n"
            "  IF TG_OP <> 'INSERT' THEN old_image := to_jsonb(OLD); END IF;\n"
            "  IF TG_OP <> 'DELETE' THEN new_image := to_jsonb(NEW); END IF;\n"
            "  FOR i IN 0 .. TG_NARGS - 1 LOOP  -- the columns written as their text\n"
            "    old_image := old_image || jsonb_build_object(TG_ARGV[i], old_image ->> TG_ARGV[i]);\n"
            "    new_image := new_image || jsonb_build_object(TG_ARGV[i], new_image ->> TG_ARGV[i]);\n"
            "  END LOOP;\n"
            f"  INSERT INTO {audit} (txid, table_name, op, before, after, ts_ms) VALUES (\n"
            "    pg_current_xact_id()::text::bigint, TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME,\n"
            "    CASE TG_OP WHEN 'INSERT' THEN 'c' WHEN 'UPDATE' THEN 'u' ELSE 'd' END,\n"
            "    old_image, new_image, (extract(epoch FROM clock_timestamp()) * 1000)::bigint);\n"
            "  RETURN NULL;\n"
            "END\n$body$"
        )

    def install(self, connection: Connection, table: CapturedTable) -> None:
        """Create or replace the trigger, with the columns to write as text as its arguments."""
        arguments = ", ".join(literal(c) for c in self.text_columns(table))
        connection.exec_driver_sql(
            f"CREATE OR REPLACE TRIGGER {self.q(self.trigger)} AFTER INSERT OR UPDATE OR DELETE ON "
            f"{self.table_ref(table)} FOR EACH ROW EXECUTE FUNCTION {self.q(self.function)}({arguments})"
        )

    def installed(self, connection: Connection) -> list[tuple[str, str]]:
        rows = connection.exec_driver_sql(
            "SELECT t.tgname, n.nspname || '.' || c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            f"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE t.tgname = '{self.trigger}'"
        )
        return sorted((str(name), str(table)) for name, table in rows)

    def drop_trigger(self, connection: Connection, trigger: str, table: str) -> None:
        schema, name = table.split(".", 1)
        connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {self.q(trigger)} ON {self.q(schema)}.{self.q(name)}")

    def drop_audit(self, connection: Connection) -> None:
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {self.audit_ref}")
        connection.exec_driver_sql(f"DROP FUNCTION IF EXISTS {self.q(self.function)}()")

    def begin_read(self, connection: Connection, need_list: bool = False) -> Reading:
        started = time.monotonic()
        connection.exec_driver_sql("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = str(connection.exec_driver_sql("SELECT pg_current_snapshot()::text").scalar())
        return Reading(parse_snapshot(snapshot), started, started)  # the list is the snapshot's own

    def stream_rows(self, connection: Connection, query: str) -> Iterator[Any]:
        """Through an SQL cursor of the open transaction (psycopg2's named cursors refuse autocommit mode)."""
        connection.exec_driver_sql(f"DECLARE headwater_snapshot NO SCROLL CURSOR FOR {query}")
        try:
            while rows := connection.exec_driver_sql(f"FETCH {SNAPSHOT_BATCH} FROM headwater_snapshot").fetchall():
                yield from rows
        finally:
            connection.exec_driver_sql("CLOSE headwater_snapshot")

    def row_json(self, table: CapturedTable) -> str:
        """``to_jsonb`` of the row, the columns to write as text replaced by their text, as the trigger does."""
        row = self.q(table.name)
        texts = self.text_columns(table)
        image = f"to_jsonb({row}.*)"
        for start in range(0, len(texts), _PAIRS_PER_OBJECT):
            pairs = (f"{literal(c)}, {row}.{self.q(c)}::text" for c in texts[start : start + _PAIRS_PER_OBJECT])
            image += f" || jsonb_build_object({', '.join(pairs)})"
        return image

    def permission_error(self, error: Exception) -> bool:
        return getattr(getattr(error, "orig", None), "pgcode", None) == "42501" or super().permission_error(error)
