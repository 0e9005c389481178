"""Trigger mode on MariaDB (and MySQL): three ``AFTER`` row triggers per table write ``JSON_OBJECT`` images into
an ``AUTO_INCREMENT`` audit table (a DECIMAL column ``CAST(... AS CHAR)``, its exact text, with
``decimal.handling.mode=string``). InnoDB hands out auto-increment ids as rows are inserted, so concurrent
transactions commit out of id order; while a gap waits, the watermark reads the writing transactions in
flight from ``information_schema.INNODB_TRX`` (the ``PROCESS`` privilege) just after a snapshot."""

from __future__ import annotations

import math
import time

from sqlalchemy import Connection, Engine

from headwater.reference_connectors.jdbc_cdc.config import STRING
from headwater.reference_connectors.jdbc_cdc.dialect import TriggerDialect, literal
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.reference_connectors.jdbc_cdc.watermark import InFlight, Reading

NOW_MS = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
CACHE_IDLE_S = 0.1
"""InnoDB refills its cache of ``information_schema.INNODB_TRX`` only when it has not been read for this long."""
LIST_EVERY_S = 2.5 * CACHE_IDLE_S
IN_FLIGHT = "SELECT /* {token} */ trx_id, trx_rows_modified, trx_query FROM information_schema.INNODB_TRX"


def mariadb_literal(text: str) -> str:
    return literal(text, backslashes=True)


class MariadbDialect(TriggerDialect):
    def __init__(self, engine: Engine, audit: str, decimals: str = STRING) -> None:
        super().__init__(engine, audit, decimals)
        self._listed = -math.inf
        self._lists = 0

    def create_audit(self, connection: Connection) -> None:
        connection.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {self.audit_ref} (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
            "txid BIGINT NULL, table_name VARCHAR(200) NOT NULL, op CHAR(1) NOT NULL, `before` LONGTEXT NULL, "
            "`after` LONGTEXT NULL, ts_ms BIGINT NULL) ENGINE=InnoDB"
        )

    def image(self, table: CapturedTable, row: str) -> str:
        prefix = f"{row}." if row else ""
        texts = self.text_columns(table)
        values = [f"CAST({prefix}{self.q(c)} AS CHAR)" if c in texts else f"{prefix}{self.q(c)}" for c in table.columns]
        pairs = ", ".join(f"{mariadb_literal(c)}, {v}" for c, v in zip(table.columns, values, strict=True))
        return f"JSON_OBJECT({pairs})"

    def install(self, connection: Connection, table: CapturedTable) -> None:
        for op, event, name, before, after in self.row_triggers(table):
            connection.exec_driver_sql(
                f"CREATE OR REPLACE TRIGGER {name} AFTER {event} ON {self.table_ref(table)} FOR EACH ROW "
                f"INSERT INTO {self.audit_ref} (txid, table_name, op, `before`, `after`, ts_ms) "
                f"VALUES (NULL, {mariadb_literal(table.qualified)}, '{op}', {before}, {after}, {NOW_MS})"
            )

    def installed(self, connection: Connection) -> list[tuple[str, str]]:
        rows = connection.exec_driver_sql(
            "SELECT trigger_name, event_object_schema, event_object_table FROM information_schema.TRIGGERS "
            "WHERE trigger_schema = DATABASE()"
        )
        prefix = self.audit + "_"
        return sorted((str(name), f"{schema}.{table}") for name, schema, table in rows if str(name).startswith(prefix))

    def drop_trigger(self, connection: Connection, trigger: str, table: str) -> None:
        connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {self.q(trigger)}")

    def begin_read(self, connection: Connection, need_list: bool = False) -> Reading:
        """The in-flight list is read after the snapshot, at most every ``LIST_EVERY_S`` (InnoDB refreshes its cache
        only when it was not read for ``CACHE_IDLE_S``), and counts only when it shows this very query."""
        started = time.monotonic()
        connection.exec_driver_sql("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        in_flight: InFlight | None = None
        if need_list and started - self._listed >= LIST_EVERY_S:
            self._lists += 1
            token = f"headwater-cdc {id(self)} {self._lists}"
            rows = connection.exec_driver_sql(IN_FLIGHT.format(token=token)).fetchall()
            self._listed = time.monotonic()
            if any(token in str(query) for _, _, query in rows):
                in_flight = frozenset(str(trx) for trx, modified, query in rows if modified and token not in str(query))
        return Reading(in_flight, started, time.monotonic())

    def purge(self, connection: Connection, up_to: int) -> int:
        """In READ COMMITTED, so the range delete takes no next-key lock on a row an open transaction wrote."""
        connection.exec_driver_sql("SET SESSION innodb_lock_wait_timeout = 5")
        connection.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
        return super().purge(connection, up_to)

    def permission_error(self, error: Exception) -> bool:
        code = getattr(getattr(error, "orig", None), "args", (None,))[0]
        return code in (1044, 1142, 1227, 1419) or super().permission_error(error)
