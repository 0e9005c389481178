"""Log mode on PostgreSQL: changes read from a logical replication slot with ``pgoutput``, through psycopg2's
replication connection.

The connector creates the publication (``FOR TABLE`` the captured tables) on start; the task creates the slot when
it is missing, exporting its snapshot so that the initial snapshot and the stream meet at the slot's consistent
point. Offsets (source partition ``{"server": <topic.prefix>}``): ``{"lsn": <commit end LSN>, "seq": <event in the
transaction>, "flush": <LSN the slot may confirm>}``; ``flush`` is the end of the last transaction whose every event
is at or before this one. The slot's confirmed flush position moves only from committed offsets; heartbeats carry
``{"lsn": l, "seq": -1, "flush": l}`` with the server's WAL position while the captured tables are idle. On restart
the stream starts at the committed ``flush``, and events at or before the committed ``(lsn, seq)`` are skipped.

psycopg2 (2.8.3 and later) confirms the server's keep-alive position by itself whenever everything it received has
been confirmed, which would move the slot without a committed offset. So the task keeps something unconfirmed in
flight: it writes a tiny logical decoding message (``pg_logical_emit_message``, prefix ``headwater-cdc``) into its
own stream when it starts and after each confirmation. Between a confirmation and that message's arrival (a few
milliseconds) psycopg2 may still confirm a keep-alive position, which never skips a change (everything received is
confirmed then), but is not a committed offset.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import psycopg2
import psycopg2.extras
from sqlalchemy import Connection, Engine

from headwater.reference_connectors.jdbc_cdc.column_types import from_relation
from headwater.reference_connectors.jdbc_cdc.columns import ChangeColumns, ColumnWriter
from headwater.reference_connectors.jdbc_cdc.config import CONNECT, DEBEZIUM, CdcConfig
from headwater.reference_connectors.jdbc_cdc.envelope import Change, JsonEnvelope
from headwater.reference_connectors.jdbc_cdc.pgoutput import (
    Begin,
    Commit,
    Decoder,
    Relation,
    RowChange,
    format_lsn,
    parse_lsn,
)
from headwater.reference_connectors.jdbc_cdc.postgres import PostgresDialect
from headwater.reference_connectors.jdbc_cdc.snapshot import Snapshot
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.reference_connectors.jdbc_cdc.trigger import INCOMPLETE, autocommit
from headwater.sdk import ConnectError, SourceOffset

log = logging.getLogger(__name__)

SLOT_RELEASE_TIMEOUT_S = 30.0
MARKER = "SELECT pg_logical_emit_message(true, 'headwater-cdc', '')"
_ROW_CHANGES = frozenset(b"IUD")
Offset = dict[str, Any]


def check_server(connection: Connection) -> None:
    """Raise a :class:`ConnectError` saying what to change when the server cannot serve log mode."""
    level = connection.exec_driver_sql("SHOW wal_level").scalar()
    if level != "logical":
        raise ConnectError(
            f"log mode needs wal_level=logical, the server has wal_level={level}: set it in postgresql.conf "
            "(or ALTER SYSTEM SET wal_level = logical) and restart PostgreSQL"
        )
    allowed = connection.exec_driver_sql(
        "SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user"
    ).scalar()
    if not allowed:
        user = connection.exec_driver_sql("SELECT current_user").scalar()
        raise ConnectError(
            f"missing privileges for log mode: role {user} needs the REPLICATION attribute "
            f"(ALTER ROLE {user} REPLICATION) to create and read a replication slot"
        )


class LogProvisioner:
    """Creates the publication (and REPLICA IDENTITY FULL when asked); drops slot and publication on delete."""

    def __init__(self, engine: Engine, cdc: CdcConfig) -> None:
        self.engine = engine
        self.cdc = cdc
        self.dialect = PostgresDialect(engine, cdc.audit_table)

    def provision(self, tables: Sequence[CapturedTable]) -> None:
        if self.engine.dialect.name != "postgresql":
            raise ConnectError(f"log mode reads PostgreSQL's logical replication, not {self.engine.dialect.name}")
        refs = ", ".join(self.dialect.table_ref(t) for t in tables)
        publication = self.dialect.q(self.cdc.publication)
        with autocommit(self.engine) as connection:
            check_server(connection)
            exists = connection.exec_driver_sql(
                f"SELECT 1 FROM pg_publication WHERE pubname = '{self.cdc.publication}'"
            ).scalar()
            try:
                if exists:
                    connection.exec_driver_sql(f"ALTER PUBLICATION {publication} SET TABLE {refs}")
                else:
                    connection.exec_driver_sql(f"CREATE PUBLICATION {publication} FOR TABLE {refs}")
                if self.cdc.replica_identity_full:
                    for table in tables:
                        connection.exec_driver_sql(f"ALTER TABLE {self.dialect.table_ref(table)} REPLICA IDENTITY FULL")
            except psycopg2.Error as error:
                self._fail(error, tables)
            except Exception as error:
                if self.dialect.permission_error(error):
                    self._fail(error, tables)
                raise
        log.info("log mode: publication %s of %d tables", self.cdc.publication, len(tables))

    def _fail(self, error: Exception, tables: Sequence[CapturedTable]) -> None:
        names = ", ".join(t.qualified for t in tables)
        raise ConnectError(
            f"missing privileges for log mode: {getattr(error, 'orig', error)}; the connector's user must own "
            f"{names} to publish them (or be a superuser)"
        ) from None

    def deprovision(self) -> None:
        """Drop the slot (once the task's replication connection has let it go) and the publication."""
        with autocommit(self.engine) as connection:
            deadline = time.monotonic() + SLOT_RELEASE_TIMEOUT_S
            while True:
                row = connection.exec_driver_sql(
                    f"SELECT active_pid FROM pg_replication_slots WHERE slot_name = '{self.cdc.slot}'"
                ).first()
                if row is None:
                    break
                if row[0] is None:
                    connection.exec_driver_sql(f"SELECT pg_drop_replication_slot('{self.cdc.slot}')")
                    break
                if time.monotonic() > deadline:
                    connection.exec_driver_sql(f"SELECT pg_terminate_backend({int(row[0])})")
                time.sleep(0.05)
            connection.exec_driver_sql(f"DROP PUBLICATION IF EXISTS {self.dialect.q(self.cdc.publication)}")
        log.info("dropped replication slot %s and publication %s", self.cdc.slot, self.cdc.publication)


def _connect_args(engine: Engine) -> dict[str, Any]:
    args = engine.url.translate_connect_args(username="user", database="dbname")
    return {key: value for key, value in args.items() if value is not None}


class LogStream:
    """Reads one slot: the exported snapshot first when there is no stored offset (and snapshots are on)."""

    def __init__(
        self, engine: Engine, cdc: CdcConfig, tables: Sequence[CapturedTable], stored: SourceOffset | None
    ) -> None:
        self.cdc = cdc
        self.dialect = PostgresDialect(engine, cdc.audit_table, cdc.decimal_handling)
        self.typed = cdc.record_schemas == CONNECT
        if self.typed:
            tables = self._catalog_types(engine, tables)
        self.tables = {t.qualified: t for t in tables}
        self.versions: dict[int, tuple[Relation, CapturedTable]] = {}
        """Per relation id, the table as its latest Relation message describes it (``record.schemas=connect``)."""
        self.decoder = Decoder(cdc.decimal_handling)
        self.writer: ColumnWriter | None = None
        self.snapshot: Snapshot | None = None
        with autocommit(engine) as connection:
            check_server(connection)
        self.replication = psycopg2.connect(
            connection_factory=psycopg2.extras.LogicalReplicationConnection, **_connect_args(engine)
        )
        self.cursor: Any = self.replication.cursor()
        resume = stored is not None and stored.get("snapshot") != INCOMPLETE
        self.skip_to: tuple[int, int] = (int(stored["lsn"]), int(stored["seq"])) if resume and stored else (0, -1)
        start = int(stored["flush"]) if resume and stored else 0
        exists = self._slot_exists(engine)
        if resume and not exists:
            log.warning("%s: slot %s is missing; creating it: changes since the offset are lost", cdc.name, cdc.slot)
        if not resume and exists and cdc.snapshot:
            log.info("%s: no complete offset for slot %s: creating it again to snapshot", cdc.name, cdc.slot)
            self.cursor.drop_replication_slot(cdc.slot)
            exists = False
        if not exists:
            export = "EXPORT_SNAPSHOT" if cdc.snapshot and not resume else "NOEXPORT_SNAPSHOT"
            self.cursor.execute(f"CREATE_REPLICATION_SLOT {cdc.slot} LOGICAL pgoutput {export}")
            _, consistent_point, snapshot_name, _ = self.cursor.fetchone()
            start = start or parse_lsn(consistent_point)
            if snapshot_name and export == "EXPORT_SNAPSHOT":
                self._start_snapshot(engine, tables, snapshot_name, start)
        self.flushed = start
        self.handed: int | None = start if resume else None
        self.transaction: list[tuple[RowChange, CapturedTable, int]] = []
        """The changes of the transaction being read, with their tables and WAL positions."""
        self.begin: Begin | None = None
        self.idle_lsn = start
        self.last_end = start
        options = {"proto_version": "1", "publication_names": cdc.publication, "messages": "true"}
        self.cursor.start_replication(slot_name=cdc.slot, decode=False, start_lsn=start, options=options)
        self.marks = autocommit(engine)
        self._mark()
        log.info("%s: streaming slot %s from %s", cdc.name, cdc.slot, format_lsn(start))

    def _mark(self) -> None:
        """Write a logical message into the stream, so psycopg2 never has everything it received confirmed."""
        try:
            self.marks.exec_driver_sql(MARKER)
        except Exception as error:
            log.warning("%s: writing the stream marker failed: %s", self.cdc.name, error)

    def _slot_exists(self, engine: Engine) -> bool:
        with autocommit(engine) as connection:
            sql = f"SELECT 1 FROM pg_replication_slots WHERE slot_name = '{self.cdc.slot}'"
            return connection.exec_driver_sql(sql).scalar() is not None

    def _start_snapshot(self, engine: Engine, tables: Sequence[CapturedTable], name: str, lsn: int) -> None:
        connection = autocommit(engine)
        connection.exec_driver_sql("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        connection.exec_driver_sql(f"SET TRANSACTION SNAPSHOT '{name}'")
        if self.cdc.envelope == DEBEZIUM:  # the snapshot transaction's id and start, as Debezium's source block has
            sql = "SELECT txid_current(), (extract(epoch FROM now()) * 1000000)::bigint"
            self.snapshot_txid, self.snapshot_us = connection.exec_driver_sql(sql).one()
        self.snapshot = Snapshot(connection, tables, self.dialect, self.cdc.name)
        self.snapshot_lsn = lsn

    def read(self, limit: int) -> list[tuple[Change, Offset]]:
        """The next complete transactions' changes (at least one transaction, even past ``limit``); none, at once,
        when the server has sent no complete transaction."""
        if self.snapshot is not None:
            return self._read_snapshot(limit)
        found: list[tuple[Change, Offset]] = []
        while len(found) < limit:
            message = self.cursor.read_message()
            if message is not None:
                self._take(self.decoder.decode(message.payload), found, message.data_start)
                continue
            if not self.transaction:  # everything the server sent is handed on: its WAL position is safe
                self.idle_lsn = max(self.idle_lsn, int(self.cursor.wal_end))
            break
        return found

    @property
    def snapshotting(self) -> bool:
        return self.snapshot is not None

    def read_columns(self, limit: int, envelope: JsonEnvelope, clock: Callable[[], int]) -> ChangeColumns:
        """:meth:`read` as columns of JSON bytes (the events ``envelope`` writes), once the snapshot is read;
        ``clock`` gives the events' ``ts_ms``, once per transaction."""
        assert self.snapshot is None, "the snapshot is read with read()"
        writer = self.writer
        if writer is None:
            writer = self.writer = ColumnWriter(self.decoder, self.tables, envelope)
        columns = ChangeColumns()
        read, decode, change, values = self.cursor.read_message, self.decoder.decode, writer.change, columns.values
        while len(values) < limit:
            message = read()
            if message is not None:
                payload = message.payload
                if payload[0] in _ROW_CHANGES:
                    change(payload)
                    continue
                decoded = decode(payload)
                if isinstance(decoded, Commit):
                    self._commit(decoded, writer, columns, clock)
                elif isinstance(decoded, Begin):
                    self.begin = decoded
                    writer.begin()
                elif isinstance(decoded, Relation):
                    writer.relation(decoded)
                continue
            if not writer.pending and not self.transaction:
                self.idle_lsn = max(self.idle_lsn, int(self.cursor.wal_end))
            break
        return columns

    def _commit(self, commit: Commit, writer: ColumnWriter, columns: ChangeColumns, clock: Callable[[], int]) -> None:
        end, (skip_lsn, skip_seq) = commit.end_lsn, self.skip_to
        first = 0 if end > skip_lsn else skip_seq + 1 if end == skip_lsn else sys.maxsize
        txid = self.begin.xid if self.begin is not None else None
        writer.commit(columns, end, self.last_end, first, txid, commit.commit_ms, clock)
        self.last_end = self.idle_lsn = max(end, self.last_end)
        if columns.offsets:
            self.handed = columns.offsets[-1]["lsn"]
        self.begin = None

    def _take(self, message: Any, found: list[tuple[Change, Offset]], at: int) -> None:
        """Take one decoded message; ``at`` is its WAL position (a change's own, a commit's end)."""
        if isinstance(message, RowChange):
            relation = message.relation
            table = self.tables.get(f"{relation.namespace}.{relation.name}")
            if table is not None:
                self.transaction.append((message, self._version(relation, table) if self.typed else table, at))
        elif isinstance(message, Begin):
            self.begin, self.transaction = message, []
        elif isinstance(message, Commit):
            end, previous, begin = message.end_lsn, self.last_end, self.begin
            last = len(self.transaction) - 1
            ts_ms, ts_us, xid = message.commit_ms, message.commit_us, begin.xid if begin is not None else None
            for seq, (change, table, lsn) in enumerate(self.transaction):
                if (end, seq) <= self.skip_to:
                    continue
                event = Change(table, change.op, change.old, change.new, ts_ms, lsn=end, txid=xid, ts_us=ts_us)
                event.event_lsn, event.previous_end = lsn, previous
                found.append((event, {"lsn": end, "seq": seq, "flush": end if seq == last else previous}))
            self.last_end = self.idle_lsn = max(end, self.last_end)
            if found:
                self.handed = found[-1][1]["lsn"]
            self.transaction, self.begin = [], None

    def _catalog_types(self, engine: Engine, tables: Sequence[CapturedTable]) -> list[CapturedTable]:
        """``tables`` with the column types pgoutput's Relation messages will give (the catalog's type OIDs and
        modifiers, a domain's own OID included), so the snapshot's schemas are the stream's."""
        found = []
        with autocommit(engine) as connection:
            for table in tables:
                rows = connection.exec_driver_sql(
                    "SELECT attname, atttypid::int, atttypmod FROM pg_attribute WHERE attrelid = %(table)s::regclass "
                    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                    {"table": self.dialect.table_ref(table)},
                ).fetchall()
                names = tuple(str(r[0]) for r in rows)
                types = from_relation(names, [int(r[1]) for r in rows], [int(r[2]) for r in rows], table.primary_key)
                found.append(replace(table, columns=names, types=types))
        return found

    def _version(self, relation: Relation, table: CapturedTable) -> CapturedTable:
        """``table`` with the columns of ``relation``, the latest Relation message of its id (PostgreSQL sends a new
        one before the first change after ``ALTER TABLE``)."""
        found = self.versions.get(relation.relid)
        if found is not None and found[0] is relation:
            return found[1]
        types = from_relation(relation.columns, relation.types, relation.typmods, table.primary_key)
        version = replace(table, columns=relation.columns, types=types)
        self.versions[relation.relid] = (relation, version)
        return version

    def _read_snapshot(self, limit: int) -> list[tuple[Change, Offset]]:
        assert self.snapshot is not None
        batch, last = self.snapshot.next_batch(limit)
        lsn = self.snapshot_lsn
        found: list[tuple[Change, Offset]] = [
            (change, {"lsn": lsn, "seq": -1, "flush": lsn, "snapshot": INCOMPLETE}) for change in batch
        ]
        if self.cdc.envelope == DEBEZIUM:
            for change in batch:
                change.event_lsn, change.txid = lsn, self.snapshot_txid
                change.ts_ms, change.ts_us = self.snapshot_us // 1000, self.snapshot_us
        if last:
            if found:
                found[-1] = (found[-1][0], {"lsn": lsn, "seq": -1, "flush": lsn})
                self.handed = lsn
            self.snapshot.close()
            self.snapshot = None
        return found

    def heartbeat_offset(self) -> Offset | None:
        """The server's WAL position, when every change before it has been handed on and it is past the last
        offset handed on (other tables or databases wrote WAL)."""
        pending = self.transaction or (self.writer is not None and self.writer.pending)
        if self.snapshot is not None or pending or (self.handed is not None and self.idle_lsn <= self.handed):
            return None
        self.handed = self.idle_lsn
        return {"lsn": self.idle_lsn, "seq": -1, "flush": self.idle_lsn}

    def committed(self, offset: Mapping[str, Any]) -> int:
        """Confirm the committed offset's ``flush`` position to the slot; returns 0 (nothing is purged)."""
        flush = offset.get("flush")
        if offset.get("snapshot") == INCOMPLETE or not isinstance(flush, int) or flush <= self.flushed:
            return 0
        self.flushed = flush
        self.cursor.send_feedback(flush_lsn=flush, force=True)
        self._mark()
        return 0

    def close(self) -> None:
        if self.snapshot is not None:
            self.snapshot.close()
            self.snapshot = None
        self.marks.close()
        self.replication.close()

    def __repr__(self) -> str:
        return (
            f"LogStream(slot={self.cdc.slot}, flushed={format_lsn(self.flushed)}, "
            f"idle={format_lsn(self.idle_lsn)}, snapshot={self.snapshot!r})"
        )
