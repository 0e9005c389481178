"""Trigger mode: the connector provisions an audit table and row triggers; the task snapshots, then streams the
audit rows through the transaction watermark, and purges them up to the committed offset.

Offsets (source partition ``{"server": <topic.prefix>}``): ``{"change_id": n}``, every change up to audit id ``n``
handed on. Snapshot rows carry ``{"change_id": w, "snapshot": "incomplete"}`` but the last, ``{"change_id": w}``,
where ``w`` is the watermark of the snapshot's own read; a task that restarts with an incomplete snapshot offset
snapshots again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from headwater.reference_connectors.jdbc_cdc.config import STRING
from headwater.reference_connectors.jdbc_cdc.dialect import TriggerDialect
from headwater.reference_connectors.jdbc_cdc.envelope import Change
from headwater.reference_connectors.jdbc_cdc.snapshot import Snapshot
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable, inspect_again
from headwater.reference_connectors.jdbc_cdc.watermark import Watermark
from headwater.sdk import ConnectError, SourceOffset

log = logging.getLogger(__name__)

INCOMPLETE = "incomplete"


def autocommit(engine: Engine) -> Connection:
    """A connection that leaves every transaction to explicit statements."""
    return engine.connect().execution_options(isolation_level="AUTOCOMMIT")


def trigger_dialect(engine: Engine, audit: str, decimals: str = STRING) -> TriggerDialect:
    """The trigger-mode SQL of the engine's database, writing decimals as ``decimals`` says."""
    name = engine.dialect.name
    if name == "sqlite":
        from headwater.reference_connectors.jdbc_cdc.sqlite import SqliteDialect

        return SqliteDialect(engine, audit, decimals)
    if name == "postgresql":
        from headwater.reference_connectors.jdbc_cdc.postgres import PostgresDialect

        return PostgresDialect(engine, audit, decimals)
    if name in ("mysql", "mariadb"):
        from headwater.reference_connectors.jdbc_cdc.mariadb import MariadbDialect

        return MariadbDialect(engine, audit, decimals)
    raise ConnectError(f"trigger mode supports SQLite, PostgreSQL and MariaDB/MySQL, not {name}")


class TriggerProvisioner:
    """Creates and drops what trigger mode needs in the database (the connector's side); the triggers write
    decimals as ``decimals`` (the ``decimal.handling.mode``) says."""

    def __init__(self, engine: Engine, audit: str, decimals: str = STRING) -> None:
        self.engine = engine
        self.dialect = trigger_dialect(engine, audit, decimals)

    def provision(self, tables: Sequence[CapturedTable]) -> None:
        """Create the audit table and (again) every captured table's triggers, so they follow the current columns and
        ``decimal.handling.mode``; drop this connector's triggers on tables it no longer captures."""
        wanted = {t.qualified for t in tables}
        with autocommit(self.engine) as connection:
            try:
                self.dialect.create_audit(connection)
                for trigger, owner in self.dialect.installed(connection):
                    if owner not in wanted and owner.split(".")[-1] not in wanted:
                        log.info("dropping trigger %s of %s, a table no longer captured", trigger, owner)
                        self.dialect.drop_trigger(connection, trigger, owner)
                for table in tables:
                    self.dialect.install(connection, table)
            except DBAPIError as error:
                if self.dialect.permission_error(error):
                    raise ConnectError(
                        f"missing privileges for trigger mode: {error.orig}; the connector's user needs to create "
                        f"tables, and triggers on {', '.join(sorted(wanted))} (PostgreSQL: owner or TRIGGER; "
                        "MariaDB: CREATE, TRIGGER, and PROCESS for the watermark)"
                    ) from None
                raise
        log.info("trigger mode: audit table %s, triggers on %d tables", self.dialect.audit, len(tables))

    def deprovision(self) -> list[str]:
        """Drop every trigger of this connector, then the audit table; returns the triggers dropped."""
        with autocommit(self.engine) as connection:
            found = self.dialect.installed(connection)
            for trigger, table in found:
                self.dialect.drop_trigger(connection, trigger, table)
            self.dialect.drop_audit(connection)
        log.info("dropped %d triggers and the audit table %s", len(found), self.dialect.audit)
        return [trigger for trigger, _ in found]


class TriggerStream:
    """Reads changes for one task: the snapshot first when there is no complete stored offset (and snapshots are
    on), then the audit table; ``decimals`` is the ``decimal.handling.mode``. ``typed`` (``record.schemas=connect``)
    on PostgreSQL: an image whose columns are not the table's (``to_jsonb`` follows ``ALTER TABLE`` at once) makes
    the stream inspect the table again, so the changes carry its new version."""

    def __init__(
        self,
        engine: Engine,
        audit: str,
        tables: Sequence[CapturedTable],
        stored: SourceOffset | None,
        snapshot: bool,
        name: str,
        decimals: str = STRING,
        typed: bool = False,
    ) -> None:
        self.dialect: TriggerDialect = trigger_dialect(engine, audit, decimals)
        self.engine = engine
        self.tables = {t.qualified: t for t in tables}
        self.follows_columns = typed and engine.dialect.name == "postgresql"
        self.checked: dict[str, set[frozenset[str]]] = {}
        """Per table, the image column sets it was inspected again for."""
        self.connection = autocommit(engine)
        self.snapshot: Snapshot | None = None
        self.skipped = 0
        position = 0
        if stored is not None and stored.get("snapshot") != INCOMPLETE:
            position = int(stored["change_id"])
        elif snapshot:
            if stored is not None:
                log.info("%s: the previous snapshot did not complete; snapshotting again", name)
            position = self._start_snapshot(engine, tables, name)
        self.watermark = Watermark(position)
        self.handed = position if stored is not None and self.snapshot is None else None
        """The change id of the newest offset handed on (for heartbeats), ``None`` before the first."""

    def _start_snapshot(self, engine: Engine, tables: Sequence[CapturedTable], name: str) -> int:
        connection = autocommit(engine)
        reading = self.dialect.begin_read(connection)
        start = Watermark(0)
        start.accept(self.dialect.change_ids(connection, 0), reading)
        self.snapshot = Snapshot(connection, tables, self.dialect, name)
        self.snapshot_position = start.position
        return start.position

    def read(self, limit: int) -> list[tuple[Change, dict[str, Any]]]:
        """The next changes with their offsets, in change-id order; none, at once, when there are none."""
        if self.snapshot is not None:
            return self._read_snapshot(limit)
        return self._read(limit)

    def _read(self, limit: int) -> list[tuple[Change, dict[str, Any]]]:
        connection, dialect = self.connection, self.dialect
        reading = dialect.begin_read(connection, self.watermark.needs_list)
        try:
            rows = dialect.changes(connection, self.watermark.position, limit)
        finally:
            dialect.end_read(connection)
        count = self.watermark.accept([int(row[0]) for row in rows], reading)
        found: list[tuple[Change, dict[str, Any]]] = []
        for change_id, txid, table_name, op, before_image, after_image, ts_ms in rows[:count]:
            table = self.tables.get(table_name)
            if table is None:
                self.skipped += 1
                continue
            before, after = dialect.parse(table, before_image), dialect.parse(table, after_image)
            if self.follows_columns:
                table = self._version(table, after if after is not None else before)
            change = Change(table, op, before, after, ts_ms, change_id=change_id, txid=txid)
            found.append((change, {"change_id": int(change_id)}))
        if found:
            self.handed = found[-1][1]["change_id"]
        return found

    def _version(self, table: CapturedTable, image: Mapping[str, Any] | None) -> CapturedTable:
        """``table`` as the database describes it now when ``image`` holds other columns than it (once per set of
        columns seen)."""
        if image is None or (len(image) == len(table.columns) and all(c in image for c in table.columns)):
            return table
        columns = frozenset(image)
        checked = self.checked.setdefault(table.qualified, set())
        if columns in checked:
            return table
        checked.add(columns)
        fresh = inspect_again(self.engine, table)
        log.info("%s: columns changed to %s; following them", table.qualified, ", ".join(fresh.columns))
        self.tables[table.qualified] = fresh
        return fresh

    def _read_snapshot(self, limit: int) -> list[tuple[Change, dict[str, Any]]]:
        assert self.snapshot is not None
        batch, last = self.snapshot.next_batch(limit)
        position = self.snapshot_position
        found: list[tuple[Change, dict[str, Any]]] = [
            (change, {"change_id": position, "snapshot": INCOMPLETE}) for change in batch
        ]
        if last:
            if found:
                found[-1] = (found[-1][0], {"change_id": position})
                self.handed = position
            self.snapshot.close()
            self.snapshot = None
        return found

    def heartbeat_offset(self) -> dict[str, Any] | None:
        """An offset past the newest handed on, when the watermark has moved without a record (changes of tables
        no longer captured, or an empty snapshot); else ``None``."""
        if self.snapshot is not None or self.watermark.position == self.handed:
            return None
        self.handed = self.watermark.position
        return {"change_id": self.watermark.position}

    def committed(self, offset: Mapping[str, Any]) -> int:
        """Purge the audit rows up to a committed offset; returns how many were deleted."""
        change_id = offset.get("change_id")
        if not isinstance(change_id, int) or change_id <= 0:
            return 0
        try:
            return self.dialect.purge(self.connection, change_id)
        except DBAPIError as error:
            log.warning(
                "purging the audit table up to %d failed, trying again at the next commit: %s", change_id, error
            )
            return 0

    def close(self) -> None:
        if self.snapshot is not None:
            self.snapshot.close()
            self.snapshot = None
        self.connection.close()

    def __repr__(self) -> str:
        return f"TriggerStream({self.watermark!r}, snapshot={self.snapshot!r}, skipped={self.skipped})"
