"""The CDC source task: wraps the changes of its stream (trigger or log mode) in the change-event envelope, sends
heartbeats that carry the stream's newest position while the captured tables are idle, and lets the database forget
what is committed (purge the audit table, or move the slot) only from the committed-offset hook. In log mode with
``transaction.boundary=connector`` (on a worker with exactly-once source support), it asks to commit the Kafka
transaction where a database transaction, or the snapshot, ends."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from headwater.reference_connectors.jdbc_cdc.config import BYTES_CONVERTERS, CONNECT, DEBEZIUM, LOG, CdcConfig
from headwater.reference_connectors.jdbc_cdc.database import database_name, make_engine
from headwater.reference_connectors.jdbc_cdc.debezium import DebeziumEnvelope
from headwater.reference_connectors.jdbc_cdc.envelope import CONNECTOR, Change, Envelope, JsonEnvelope
from headwater.reference_connectors.jdbc_cdc.json_rows import to_json
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable, discover
from headwater.reference_connectors.jdbc_cdc.trigger import TriggerStream
from headwater.sdk import SourceBatch, SourceOffset, SourcePartition, SourceRecord, SourceTask, hookimpl

if TYPE_CHECKING:
    from headwater.reference_connectors.jdbc_cdc.logical import LogStream
    from headwater.reference_connectors.jdbc_cdc.record_schemas import RecordSchemas

log = logging.getLogger(__name__)


class ChangeStream(Protocol):
    """What the task reads from: a trigger-mode or a log-mode stream."""

    def read(self, limit: int) -> list[tuple[Change, dict[str, Any]]]:
        """The next changes and their offsets; none, at once, when there are none."""
        ...

    def heartbeat_offset(self) -> dict[str, Any] | None: ...

    def committed(self, offset: Mapping[str, Any]) -> int: ...

    def close(self) -> None: ...


def source_partition(topic_prefix: str) -> dict[str, str]:
    """The one source partition of a connector."""
    return {"server": topic_prefix}


def ends_transaction(offset: Mapping[str, Any] | None) -> bool:
    """Whether a log-mode event with ``offset`` is the last of its database transaction (its ``flush`` is its own
    commit's end) or the snapshot's last row."""
    return offset is not None and "snapshot" not in offset and offset.get("flush") == offset.get("lsn")


def transaction_ends(records: Sequence[SourceRecord]) -> list[SourceRecord]:
    """The records of a poll after which a Kafka transaction commits (``transaction.boundary=connector``): those that
    end a database transaction, a delete's tombstone rather than the delete (both carry the delete's offset)."""
    last = len(records) - 1
    return [
        each
        for i, each in enumerate(records)
        if ends_transaction(each.source_offset)
        and (i == last or records[i + 1].source_offset is not each.source_offset)
    ]


def writes_bytes(config: Mapping[str, Any]) -> bool:
    """Whether the connector's config sets the pass-through converter for keys and values."""
    return config.get("key.converter") in BYTES_CONVERTERS and config.get("value.converter") in BYTES_CONVERTERS


def record_schemas(cdc: CdcConfig, tables: Sequence[CapturedTable]) -> RecordSchemas | None:
    """The record schemas of ``tables`` with ``record.schemas=connect`` (``None`` otherwise); raises
    :class:`~headwater.sdk.ConnectError` for a column no schema can hold."""
    if cdc.record_schemas != CONNECT:
        return None
    from headwater.reference_connectors.jdbc_cdc.record_schemas import RecordSchemas

    schemas = RecordSchemas(cdc.topic_prefix, cdc.decimal_handling, cdc.time_precision, cdc.envelope == DEBEZIUM)
    schemas.check(tables)
    return schemas


class JdbcCdcSourceTask(SourceTask):
    stream: ChangeStream | None = None
    log: LogStream | None = None
    """The stream again, in log mode."""

    def start(self, config: Mapping[str, str]) -> None:
        self.cdc = CdcConfig.parse(config)
        self.partition = source_partition(self.cdc.topic_prefix)
        self.engine = make_engine(self.cdc.url)
        tables = discover(self.engine, self.cdc.include, self.cdc.exclude, internal=[self.cdc.audit_table])
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.schemas = record_schemas(self.cdc, tables)
        database = database_name(self.engine)
        self.envelope = Envelope(self.cdc.topic_prefix, self.cdc.mode, database, self.schemas)
        self.json = JsonEnvelope(self.envelope) if writes_bytes(config) else None
        self.debezium: DebeziumEnvelope | None = None
        if self.cdc.envelope == DEBEZIUM:
            assert self.schemas is not None and self.json is None  # the config refuses the other combinations
            self.debezium = DebeziumEnvelope(self.cdc.topic_prefix, database, self.schemas, self.cdc.tombstones)
        self.batches: deque[SourceBatch] = deque()
        if self.cdc.mode == LOG:
            from headwater.reference_connectors.jdbc_cdc.logical import LogStream

            self.stream = self.log = LogStream(self.engine, self.cdc, tables, stored)
        else:
            cdc = self.cdc
            self.stream = TriggerStream(
                self.engine,
                cdc.audit_table,
                tables,
                stored,
                cdc.snapshot,
                cdc.name,
                cdc.decimal_handling,
                typed=self.schemas is not None,
            )
        self.purged = 0
        self.transactions = getattr(self.context, "transaction_context", None) if self.cdc.mode == LOG else None
        """Where the task commits its transactions, with ``transaction.boundary=connector``; ``None`` otherwise."""
        log.info(
            "%s: capturing %s (%s mode), stored offset %s", self, [t.qualified for t in tables], self.cdc.mode, stored
        )

    def poll(self) -> Sequence[SourceRecord] | None:
        """The next changes as records; with the ``bytes`` converters, keys and values are JSON bytes, and log mode
        returns them as a :class:`~headwater.sdk.SourceBatch` per run of one topic (after the snapshot). With no
        change to return, the task idles ``poll.interval.ms`` before it is polled again (as Debezium's streaming
        loops pause ``poll.interval.ms`` when no message is pending)."""
        if self.batches:
            return self._batch()
        stream = self.stream
        assert stream is not None
        limit = self.cdc.batch_max_rows
        if self.json is not None and self.log is not None and not self.log.snapshotting:
            columns = self.log.read_columns(limit, self.json, self.context.clock.now_ms)
            if not columns.values:
                self.context.idle(self.cdc.poll_interval_ms)
                return None
            self.batches.extend(columns.batches(self.partition))
            return self._batch()
        changes = stream.read(limit)
        if not changes:
            self.context.idle(self.cdc.poll_interval_ms)
            return None
        now, partition = self.context.clock.now_ms(), self.partition
        if self.debezium is not None:
            records = [r for change, offset in changes for r in self.debezium.records(change, partition, offset, now)]
        else:
            record = (self.envelope if self.json is None else self.json).record
            records = [record(change, partition, offset, now) for change, offset in changes]
        if self.transactions is not None:
            for each in transaction_ends(records):
                self.transactions.commit_transaction(each)
        return records

    def _batch(self) -> SourceBatch:
        """The next batch of the bytes path; its transaction commits after it when it ends a database transaction
        (a batch is one run of a topic: a transaction over several tables spans several)."""
        batch = self.batches.popleft()
        if self.transactions is not None and ends_transaction(batch.offsets[-1]):
            self.transactions.commit_transaction()
        return batch

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        """A record to ``topic`` carrying the stream's newest position when it moved past the last offset handed on
        without a change to send (log mode: WAL written by other tables or databases), so the committed offset, and
        with it the slot or the audit purge, keeps up while the captured tables are idle."""
        if self.stream is None or self.batches:  # events read but not handed on: the stream's position is ahead
            return []
        offset = self.stream.heartbeat_offset()
        if offset is None:
            return []
        if self.debezium is not None:
            return [self.debezium.heartbeat(self.partition, offset, topic, self.context.clock.now_ms())]
        key = {"connector": CONNECTOR, "name": self.cdc.name, **self.partition}
        value = {**key, **offset, "ts_ms": self.context.clock.now_ms()}
        if self.json is not None:
            return [SourceRecord(self.partition, offset, topic, to_json(value), to_json(key))]
        if self.schemas is not None:
            typed = SourceRecord(self.partition, offset, topic, value, key)
            typed.key_schema, typed.value_schema = self.schemas.heartbeat(offset)
            return [typed]
        return [SourceRecord(self.partition, offset, topic, value, key)]

    @hookimpl
    def offsets_committed(self, offsets: Sequence[tuple[SourcePartition | None, SourceOffset | None]]) -> None:
        """Let the database forget what is committed: purge audit rows, or confirm the slot's flush position."""
        if self.stream is None or (self.cdc.mode != LOG and not self.cdc.purge):
            return
        for partition, offset in offsets:
            if partition is not None and offset is not None and dict(partition) == self.partition:
                self.purged += self.stream.committed(offset)

    def stop(self) -> None:
        self.batches = deque()
        stream, self.stream, self.log = self.stream, None, None
        if stream is not None:
            stream.close()
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.dispose()

    def __repr__(self) -> str:
        cdc = getattr(self, "cdc", None)
        return f"JdbcCdcSourceTask({cdc.name if cdc else ''}, {self.stream!r})"
