"""The mirror source task: reads its share of the source partitions with a manually assigned consumer and hands
every record on unchanged.

Each source topic partition is a source partition ``{"topic": t, "partition": p}`` whose offset is
``{"offset": o}``, the offset of the last record mirrored. A task resumes every partition at its stored offset + 1
(the worker's offset store decides, never the source group), or where ``source.auto.offset.reset`` says when none
is stored. After each offset commit of the worker, the committed offsets + 1 are committed to ``source.group.id`` on
the source cluster, so the usual consumer-lag tools see how far the mirror is; the connector never reads them back.
On a worker with exactly-once source support, the offsets are committed in the transaction of their records, and
the ``offsets_committed`` hook (so the source group's commit) comes only after that transaction committed: the
resume position is always the last committed transaction's.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition

from headwater.reference_connectors.kafka_mirror.clients import make_consumer
from headwater.reference_connectors.kafka_mirror.config import MirrorConfig
from headwater.reference_connectors.kafka_mirror.partitions import assigned_partitions
from headwater.sdk import ConnectError, SourceOffset, SourcePartition, SourceRecord, SourceTask, hookimpl

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]


def source_partition(topic: str, partition: int) -> dict[str, Any]:
    """The source partition of a source topic partition."""
    return {"topic": topic, "partition": partition}


class KafkaMirrorSourceTask(SourceTask):
    consumer: Consumer | None = None

    def start(self, config: Mapping[str, str]) -> None:
        self.mirror = MirrorConfig.parse(config)
        self.name = str(config.get("name", ""))
        try:
            assigned = assigned_partitions(config)
        except ValueError as error:
            raise ConnectError(f"kafka-mirror task config: {error}") from None
        self.partitions: dict[PartitionKey, dict[str, Any]] = {tp: source_partition(*tp) for tp in assigned}
        self.last: dict[PartitionKey, int] = self._stored_offsets()
        """The newest offset handed to the worker per partition: a stored one, a record's or a heartbeat's."""
        self.committing: list[RdTopicPartition] = []
        """The latest offsets committed to the source group (next offset to read)."""
        self._timeout_s = self.mirror.poll_loop_timeout_ms / 1000
        self._prefix = self.mirror.topics_prefix
        starts = [RdTopicPartition(t, p, self._start_offset((t, p))) for t, p in self.partitions]
        if not self.mirror.reads_committed:
            log.warning(
                "%s: the source consumer reads isolation.level=read_uncommitted: records of open and aborted "
                "transactions on the source cluster are mirrored too, so the mirror cannot deliver exactly once",
                self,
            )
        self.consumer = make_consumer(self.mirror)
        self.consumer.assign(starts)
        log.info("%s: mirroring %d partitions, %d resumed from stored offsets", self, len(starts), len(self.last))

    def _stored_offsets(self) -> dict[PartitionKey, int]:
        reader = self.context.offset_storage_reader
        found: dict[PartitionKey, int] = {}
        for partition, offset in reader.offsets(list(self.partitions.values())):
            if offset is None:
                continue
            value = offset.get("offset")
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConnectError(f"stored offset {dict(offset)!r} of {dict(partition)!r} is not {{'offset': <int>}}")
            found[(partition["topic"], partition["partition"])] = value
        return found

    def _start_offset(self, key: PartitionKey) -> int:
        stored = self.last.get(key)
        if stored is not None:
            return stored + 1
        reset = self.mirror.auto_offset_reset
        if reset == "none":
            raise ConnectError(f"no stored offset for {key[0]}-{key[1]} and source.auto.offset.reset=none")
        return OFFSET_BEGINNING if reset == "earliest" else OFFSET_END

    def poll(self) -> Sequence[SourceRecord] | None:
        assert self.consumer is not None
        messages: list[Any] = self.consumer.consume(self.mirror.max_poll_records, self._timeout_s)
        if not messages:
            return None
        records: list[SourceRecord] = []
        append = records.append
        partitions, last, prefix = self.partitions, self.last, self._prefix
        headers_wanted = self.mirror.include_headers
        run: PartitionKey | None = None  # consume() returns runs of one partition: look each run up once
        source: dict[str, Any] = {}
        destination = ""
        offset = -1
        for message in messages:
            if message.error() is not None:
                self._consumer_error(message.error())
                continue
            topic, partition = message.topic(), message.partition()
            if run is None or partition != run[1] or topic != run[0]:
                if run is not None:
                    last[run] = offset
                run = (topic, partition)
                source, destination = partitions[run], prefix + topic
            offset = message.offset()
            kind, timestamp = message.timestamp()
            headers = (message.headers() or ()) if headers_wanted else ()
            value, key = message.value(), message.key()
            append(
                SourceRecord(
                    source, {"offset": offset}, destination, value, key, None, timestamp if kind else None, headers
                )
            )
        if run is not None:
            last[run] = offset
        if self.mirror.key_deserializer is not None or self.mirror.value_deserializer is not None:
            self._deserialize(records, len(prefix))
        return records

    def _deserialize(self, records: list[SourceRecord], prefix_length: int) -> None:
        decode_key, decode_value = self.mirror.key_deserializer, self.mirror.value_deserializer
        for record in records:
            topic = record.topic[prefix_length:]
            if decode_key is not None:
                record.key = decode_key(topic, record.key)
            if decode_value is not None:
                record.value = decode_value(topic, record.value)

    def _consumer_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._PARTITION_EOF:
            return
        if error.fatal() or not error.retriable():
            raise ConnectError(f"consuming from the source cluster failed: {error.str()}")
        log.warning("%s: source consumer error, continuing: %s", self, error.str())

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        """Records to ``topic`` that move each partition's offset to the consumer's position - 1 when the consumer
        has passed offsets that carried no record (transaction markers, compacted or expired records), so an idle
        mirrored partition still commits up to the source's end and its lag on the source cluster reaches 0.

        The runtime calls this only when every polled record has been handed over, so every offset below the
        position is either handed over or has no record."""
        assert self.consumer is not None
        records: list[SourceRecord] = []
        positions = self.consumer.position([RdTopicPartition(t, p) for t, p in self.partitions])
        for found in positions:
            key = (found.topic, found.partition)
            passed = found.offset - 1
            if found.offset < 1 or self.last.get(key, -1) >= passed:
                continue
            self.last[key] = passed
            partition = self.partitions[key]
            heartbeat_key = json.dumps({"connector": self.name, **partition}, separators=(",", ":")).encode()
            heartbeat_value = json.dumps({"offset": passed}, separators=(",", ":")).encode()
            records.append(SourceRecord(partition, {"offset": passed}, topic, heartbeat_value, heartbeat_key))
        return records

    @hookimpl
    def offsets_committed(self, offsets: Sequence[tuple[SourcePartition | None, SourceOffset | None]]) -> None:
        """Commit what the worker committed to ``source.group.id`` on the source cluster (lag monitoring only)."""
        if not self.mirror.enable_auto_commit or self.consumer is None:
            return
        commits = []
        for partition, offset in offsets:
            if partition is None or offset is None:
                continue
            key = (partition.get("topic"), partition.get("partition"))
            if key in self.partitions:
                commits.append(RdTopicPartition(key[0], key[1], int(offset["offset"]) + 1))
        if commits:
            self.committing = commits
            self.consumer.commit(offsets=commits, asynchronous=True)

    def stop(self) -> None:
        """Commit the latest offsets to the source group and close the consumer, waiting at most
        ``max.shutdown.wait.ms``."""
        consumer, self.consumer = self.consumer, None
        if consumer is None:
            return
        commits = self.committing if self.mirror.enable_auto_commit else []

        def close() -> None:
            try:
                if commits:
                    consumer.commit(offsets=commits, asynchronous=False)
            except KafkaException as error:
                log.warning("%s: final commit to the source cluster failed: %s", self, error)
            finally:
                consumer.close()

        closing = threading.Thread(target=close, name=f"{self}-close", daemon=True)
        closing.start()
        closing.join(self.mirror.max_shutdown_wait_ms / 1000)
        if closing.is_alive():
            log.warning("%s: the source consumer did not close within max.shutdown.wait.ms", self)

    def __repr__(self) -> str:
        count = len(getattr(self, "partitions", {}))
        return f"KafkaMirrorSourceTask({getattr(self, 'name', '')}, partitions={count})"
