"""The change event: one envelope for every mode and database, so consumers read trigger and log events alike.

Value::

    {"op": "c" | "u" | "d" | "r",          # create, update, delete, read (a snapshot row)
     "before": {column: value} | null,     # the row before the change (null for c and r)
     "after": {column: value} | null,      # the row after the change (null for d)
     "source": {"connector": "jdbc-cdc", "name": <topic.prefix>, "mode": "trigger" | "log",
                "db": <database>, "schema": <schema> | null, "table": <table>,
                "change_id": <audit id> | null, "lsn": <commit LSN> | null, "txid": <transaction> | null,
                "snapshot": true | false, "ts_ms": <when the database made the change>},
     "ts_ms": <when the connector read it>}

Key: ``{primary key column: value}`` from the after image (the before image for a delete); ``None`` for a table
without a primary key. Topic: ``<topic.prefix>.<schema>.<table>`` (``<topic.prefix>.<table>`` without a schema).

With ``record.schemas=connect`` the records carry the key and envelope schemas of :mod:`.record_schemas`, and the
images' and key's values are converted to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headwater.reference_connectors.jdbc_cdc.json_rows import to_json
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.sdk import SourceOffset, SourcePartition, SourceRecord

if TYPE_CHECKING:
    from headwater.reference_connectors.jdbc_cdc.record_schemas import RecordSchemas

CONNECTOR = "jdbc-cdc"
OPERATIONS = frozenset({"c", "u", "d", "r"})


@dataclass(slots=True)
class Change:
    """One row change read from the database, before it is wrapped in an envelope."""

    table: CapturedTable
    op: str
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    ts_ms: int | None
    change_id: int | None = None
    lsn: int | None = None
    txid: int | None = None
    snapshot: bool = False
    snapshot_record: str | None = None
    """A snapshot row's place in the snapshot as Debezium's ``SnapshotRecord`` names it (``first``, ``true``,
    ``last_in_data_collection``, ``last``...); set by :class:`~.snapshot.Snapshot`."""
    ts_us: int | None = None
    """The commit time in microseconds, where the database gives it (log mode)."""
    event_lsn: int | None = None
    """Log mode: the WAL position of the change itself (``lsn`` is its transaction's commit end)."""
    previous_end: int | None = None
    """Log mode: the commit end of the transaction read before this change's."""


def topic_for(prefix: str, table: CapturedTable) -> str:
    return f"{prefix}.{table.qualified}"


def change_key(change: Change) -> dict[str, Any] | None:
    """The primary key of the changed row, or ``None`` when the table has none."""
    image = change.after if change.after is not None else change.before
    if not change.table.primary_key or image is None:
        return None
    return {column: image.get(column) for column in change.table.primary_key}


class Envelope:
    """Builds the records of one connector: its topic prefix, mode and database name go into every event; with
    ``schemas`` (``record.schemas=connect``), typed values and their schemas."""

    def __init__(self, prefix: str, mode: str, database: str | None, schemas: RecordSchemas | None = None) -> None:
        self.prefix = prefix
        self.mode = mode
        self.database = database
        self.schemas = schemas
        self._topics: dict[str, str] = {}

    def value(self, change: Change, now_ms: int) -> dict[str, Any]:
        if change.op not in OPERATIONS:
            raise ValueError(f"unknown operation {change.op!r}")
        source = {
            "connector": CONNECTOR,
            "name": self.prefix,
            "mode": self.mode,
            "db": self.database,
            "schema": change.table.schema,
            "table": change.table.name,
            "change_id": change.change_id,
            "lsn": change.lsn,
            "txid": change.txid,
            "snapshot": change.snapshot,
            "ts_ms": change.ts_ms,
        }
        return {
            "op": change.op,
            "before": None if change.before is None else dict(change.before),
            "after": None if change.after is None else dict(change.after),
            "source": source,
            "ts_ms": now_ms,
        }

    def topic(self, table: CapturedTable) -> str:
        found = self._topics.get(table.qualified)
        if found is None:
            found = self._topics[table.qualified] = topic_for(self.prefix, table)
        return found

    def record(self, change: Change, partition: SourcePartition, offset: SourceOffset, now_ms: int) -> SourceRecord:
        """The source record of ``change``; its timestamp is the database's change time when known."""
        if self.schemas is not None:
            return self._typed(change, partition, offset, now_ms)
        return SourceRecord(
            partition,
            offset,
            self.topic(change.table),
            self.value(change, now_ms),
            change_key(change),
            timestamp=change.ts_ms if change.ts_ms is not None else now_ms,
        )

    def _typed(self, change: Change, partition: SourcePartition, offset: SourceOffset, now_ms: int) -> SourceRecord:
        assert self.schemas is not None
        schemas = self.schemas.table(change.table)
        value = self.value(change, now_ms)
        value["before"], value["after"] = schemas.image(change.before), schemas.image(change.after)
        return SourceRecord(
            partition,
            offset,
            self.topic(change.table),
            value,
            schemas.key_of(change_key(change)),
            timestamp=change.ts_ms if change.ts_ms is not None else now_ms,
            key_schema=schemas.key,
            value_schema=schemas.envelope,
        )


class JsonEnvelope:
    """The events of :class:`Envelope` as the JSON bytes the worker's JSON converter (``schemas.enable=false``)
    writes for them, put together from pieces made once per table: what a task sends with the ``bytes`` converters.

    A log-mode event is ``heads[op] + images + source(...)``: :attr:`heads` per operation, the before and after
    images as JSON (``before`` then ``,"after":`` for updates and deletes), and :meth:`source` per transaction."""

    def __init__(self, envelope: Envelope) -> None:
        self.envelope = envelope
        self.heads = {
            "c": b'{"op":"c","before":null,"after":',
            "u": b'{"op":"u","before":',
            "d": b'{"op":"d","before":',
        }
        self._sources: dict[str, bytes] = {}

    def source(self, table: CapturedTable, lsn: int, txid: int | None, ts_ms: int, now_ms: int) -> bytes:
        """``,"source":{...},"ts_ms":<now_ms>}``: the end of a log-mode event of ``table`` (not a snapshot)."""
        head = self._sources.get(table.qualified)
        if head is None:
            envelope = self.envelope
            fields = {
                "connector": CONNECTOR,
                "name": envelope.prefix,
                "mode": envelope.mode,
                "db": envelope.database,
                "schema": table.schema,
                "table": table.name,
                "change_id": None,
            }
            head = self._sources[table.qualified] = b',"source":' + to_json(fields)[:-1] + b',"lsn":'
        txid_json = b"null" if txid is None else b"%d" % txid
        return head + b'%d,"txid":%s,"snapshot":false,"ts_ms":%d},"ts_ms":%d}' % (lsn, txid_json, ts_ms, now_ms)

    def record(self, change: Change, partition: SourcePartition, offset: SourceOffset, now_ms: int) -> SourceRecord:
        """:meth:`Envelope.record` with its key and value as JSON bytes."""
        record = self.envelope.record(change, partition, offset, now_ms)
        record.value = to_json(record.value)
        record.key = None if record.key is None else to_json(record.key)
        return record
