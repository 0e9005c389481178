"""The initial snapshot: every row of every captured table as a read (``op`` ``r``) event, read inside one
consistent transaction that the caller has begun, a batch per poll, with progress in the log."""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Sequence

from sqlalchemy import Connection

from headwater.reference_connectors.jdbc_cdc.dialect import TriggerDialect
from headwater.reference_connectors.jdbc_cdc.envelope import Change
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 5.0
FIRST_IN_TABLE, IN_TABLE = "first_in_data_collection", "true"


class Snapshot:
    """Reads the tables in order, rows as the ``dialect``'s JSON images; :meth:`next_batch` says which change is
    the snapshot's last."""

    def __init__(
        self, connection: Connection, tables: Sequence[CapturedTable], dialect: TriggerDialect, name: str
    ) -> None:
        self.connection = connection
        self.tables = list(tables)
        self.name = name
        self.dialect = dialect
        self.totals = {
            t: int(connection.exec_driver_sql(f"SELECT count(*) FROM {dialect.table_ref(t)}").scalar() or 0)
            for t in tables
        }
        self.read = dict.fromkeys(self.tables, 0)
        self.rows = 0
        self._rows = self._all_rows()
        self._ahead: Change | None = next(self._rows, None)
        self._started = time.monotonic()
        self._logged = self._started
        total = sum(self.totals.values())
        log.info("%s: snapshot of %d rows in %d tables started", name, total, len(self.tables))

    def _all_rows(self) -> Generator[Change, None, None]:
        for table in self.tables:
            query = f"SELECT {self.dialect.row_json(table)} FROM {self.dialect.table_ref(table)}"
            for (image,) in self.dialect.stream_rows(self.connection, query):
                self.read[table] += 1
                first = FIRST_IN_TABLE if self.read[table] == 1 else IN_TABLE
                row = self.dialect.parse(table, image)
                yield Change(table, "r", None, row, None, snapshot=True, snapshot_record=first)

    def _place(self, change: Change, ahead: Change | None) -> str:
        """Where ``change`` stands in the snapshot, as Debezium's ``SnapshotRecord`` says it (its
        ``RelationalSnapshotChangeEventSource.SnapshotMarkerResolver``, and ``EventDispatcher``'s buffering receiver,
        which marks the snapshot's very last event ``last`` even when a later table is empty)."""
        if ahead is None:
            return "last"
        first_in_table = change.snapshot_record == FIRST_IN_TABLE
        if first_in_table and change.table is self.tables[0]:
            return "first"
        if ahead.table is not change.table:
            return "last_in_data_collection"
        return FIRST_IN_TABLE if first_in_table else IN_TABLE

    @property
    def done(self) -> bool:
        return self._ahead is None

    def next_batch(self, limit: int) -> tuple[list[Change], bool]:
        """Up to ``limit`` rows, and whether the last of them is the snapshot's last row."""
        batch: list[Change] = []
        while self._ahead is not None and len(batch) < limit:
            change = self._ahead
            batch.append(change)
            self._ahead = ahead = next(self._rows, None)
            change.snapshot_record = self._place(change, ahead)
        self.rows += len(batch)
        self._progress()
        return batch, self._ahead is None

    def _progress(self) -> None:
        now = time.monotonic()
        if self._ahead is None:
            log.info(
                "%s: snapshot done: %d rows of %d tables in %.1f s",
                self.name,
                self.rows,
                len(self.tables),
                now - self._started,
            )
        elif now - self._logged >= PROGRESS_EVERY_S:
            self._logged = now
            table = self._ahead.table
            position = self.tables.index(table) + 1
            log.info(
                "%s: snapshot of %s: %d of %d rows (table %d of %d, %d rows in all so far)",
                self.name,
                table.qualified,
                self.read[table],
                self.totals[table],
                position,
                len(self.tables),
                self.rows,
            )

    def close(self) -> None:
        """End the snapshot's transaction and close its connection (early, when the task stops mid-snapshot)."""
        try:
            self._rows.close()
            self.connection.exec_driver_sql("COMMIT")
        except Exception as error:  # the connection may be gone already
            log.debug("%s: ending the snapshot transaction: %s", self.name, error)
        finally:
            self.connection.close()

    def __repr__(self) -> str:
        return f"Snapshot({self.name}, rows={self.rows} of {sum(self.totals.values())}, done={self.done})"
