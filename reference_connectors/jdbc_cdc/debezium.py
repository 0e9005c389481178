"""The change events of Debezium's PostgreSQL connector (``envelope=debezium``): its envelope, ``source`` block,
schemas, tombstones and heartbeats, field for field, so consumers and ``ExtractNewRecordState`` written for
Debezium topics read this connector's topics unchanged.

What each part follows, in Debezium's own classes (as of :data:`DEBEZIUM_VERSION`):

- the envelope: ``io.debezium.data.Envelope`` and ``io.debezium.schema.SchemaFactory.datatypeEnvelopeSchema`` —
  a struct ``<topic.prefix>.<schema>.<table>.Envelope``, version 2, of ``before``, ``after`` (the row's optional
  ``...Value`` struct), ``source``, ``transaction`` (the optional ``event.block`` struct, null: no transaction
  metadata is provided), ``op`` (required), ``ts_ms``, ``ts_us``, ``ts_ns`` (when the connector read the change),
  in that order (``io.debezium.relational.TableSchemaBuilder`` adds the record, source and transaction schemas,
  ``build()`` the rest);
- the key: ``TableSchemaBuilder``'s ``<topic.prefix>.<schema>.<table>.Key`` of the primary key columns, none for a
  table without one; names as they are (``schema.name.adjustment.mode=none`` and ``field.name.adjustment.mode=none``,
  Debezium's defaults);
- ``source``: ``io.debezium.connector.postgresql.PostgresSourceInfoStructMaker`` on ``SchemaFactory
  .sourceInfoSchemaBuilder()``: the 16 fields of :data:`.debezium_schemas.SOURCE`
  (``io.debezium.connector.postgresql.SourceInfo`` gives ``sequence`` as the JSON text
  ``["<last commit LSN>","<LSN>"]``); ``snapshot`` is the
  ``io.debezium.data.Enum`` string of ``io.debezium.connector.SnapshotRecord``, its default ``false`` written for
  streamed events (Kafka's ``JsonConverter`` writes a null field's default, and a ``Struct`` reads it);
- tombstones: ``io.debezium.pipeline.EventDispatcher`` sends, after each delete with ``tombstones.on.delete=true``
  (the default), a record of the same topic, key and key schema with a null value and value schema;
- heartbeats: ``io.debezium.heartbeat.HeartbeatImpl``'s key ``io.debezium.connector.common.ServerNameKey``
  ``{serverName}`` and value ``io.debezium.connector.common.Heartbeat`` ``{ts_ms}``.

Where a field cannot hold what Debezium's does, ``docs/jdbc-cdc.md`` ("Debezium envelope") says which and why.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from headwater.reference_connectors.jdbc_cdc.debezium_schemas import (
    CONNECTOR,
    DEBEZIUM_VERSION,
    HEARTBEAT,
    HEARTBEAT_KEY,
)
from headwater.reference_connectors.jdbc_cdc.envelope import Change, change_key, topic_for
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.sdk import SourceOffset, SourcePartition, SourceRecord

if TYPE_CHECKING:
    from headwater.reference_connectors.jdbc_cdc.record_schemas import RecordSchemas


def sequence(previous_end: int | None, lsn: int | None) -> str:
    """``SourceInfo.sequence()``: the JSON text of the last commit's and this event's LSNs, each a decimal string."""
    return json.dumps([None if x is None else str(x) for x in (previous_end, lsn)], separators=(",", ":"))


class DebeziumEnvelope:
    """Builds the records of one connector as Debezium's PostgreSQL connector would send them: ``prefix`` is
    ``topic.prefix`` (Debezium's logical name), ``database`` the database's name; ``schemas`` give the rows' and keys'
    schemas and values (without name adjustment); ``tombstones``: a tombstone follows each delete."""

    def __init__(self, prefix: str, database: str | None, schemas: RecordSchemas, tombstones: bool) -> None:
        self.prefix = prefix
        self.database = database or ""
        self.schemas = schemas
        self.tombstones = tombstones
        self._topics: dict[str, str] = {}

    def topic(self, table: CapturedTable) -> str:
        found = self._topics.get(table.qualified)
        if found is None:
            found = self._topics[table.qualified] = topic_for(self.prefix, table)
        return found

    def source(self, change: Change, now_ms: int) -> dict[str, Any]:
        """The ``source`` block of ``change``: its commit time (the snapshot transaction's start for a snapshot
        row), the change's own WAL position, the transaction's id."""
        ts_us = change.ts_us if change.ts_us is not None else (change.ts_ms or now_ms) * 1000
        table = change.table
        return {
            "version": DEBEZIUM_VERSION,
            "connector": CONNECTOR,
            "name": self.prefix,
            "ts_ms": ts_us // 1000,
            "snapshot": (change.snapshot_record or "true") if change.snapshot else "false",
            "db": self.database,
            "sequence": sequence(change.previous_end, change.event_lsn),
            "ts_us": ts_us,
            "ts_ns": ts_us * 1000,
            "schema": table.schema or "",
            "table": table.name,
            "txId": change.txid,
            "lsn": change.event_lsn,
            "xmin": None,
            "origin": None,
            "origin_lsn": None,
        }

    def records(
        self, change: Change, partition: SourcePartition, offset: SourceOffset, now_ms: int
    ) -> list[SourceRecord]:
        """The record of ``change``, and the tombstone after it when it is a delete (with ``tombstones``); both carry
        ``offset``. The records' timestamps are left to the producer, as Debezium leaves them."""
        schemas = self.schemas.table(change.table)
        value = {
            "before": schemas.image(change.before),
            "after": schemas.image(change.after),
            "source": self.source(change, now_ms),
            "transaction": None,
            "op": change.op,
            "ts_ms": now_ms,
            "ts_us": now_ms * 1000,
            "ts_ns": now_ms * 1_000_000,
        }
        topic, key = self.topic(change.table), schemas.key_of(change_key(change))
        record = SourceRecord(
            partition, offset, topic, value, key, key_schema=schemas.key, value_schema=schemas.envelope
        )
        if change.op != "d" or not self.tombstones:
            return [record]
        return [record, SourceRecord(partition, offset, topic, None, key, key_schema=schemas.key)]

    def heartbeat(self, partition: SourcePartition, offset: SourceOffset, topic: str, now_ms: int) -> SourceRecord:
        """A heartbeat record as Debezium's: the server name key and the time."""
        return SourceRecord(
            partition,
            offset,
            topic,
            {"ts_ms": now_ms},
            {"serverName": self.prefix},
            key_schema=HEARTBEAT_KEY,
            value_schema=HEARTBEAT,
        )
