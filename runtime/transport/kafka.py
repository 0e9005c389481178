"""The transport on a real Kafka cluster, through confluent-kafka (librdkafka).

Producers are idempotent and use the ``murmur2_random`` partitioner, so keyed records land on the partition Java
clients choose. Consumers use cooperative-sticky assignment with auto-commit off; the sink loop commits. Rebalance
callbacks reach the loop's listener from inside ``poll``; ``seek`` calls made while partitions are being assigned
become the offsets they are assigned at (librdkafka cannot seek a partition it is not fetching yet).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from confluent_kafka import OFFSET_INVALID, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicCollection
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import Producer as RdProducer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic as RdNewTopic

from headwater.runtime.transport.base import (
    DEFAULT_METADATA_MAX_AGE_MS,
    METADATA_MAX_AGE,
    Acknowledgement,
    CommitCallback,
    DeliveryCallback,
    LogApply,
    Message,
    NewTopic,
    QueueFullError,
    RawHeaders,
    RebalanceListener,
    RecordMetadata,
    matching,
)
from headwater.runtime.transport.kafka_log import KafkaBasedLog
from headwater.runtime.transport.kafka_membership import KafkaGroupMember
from headwater.runtime.transport.kafka_records import KafkaRecords
from headwater.runtime.transport.librdkafka_logger import with_logger
from headwater.runtime.transport.refusals import (
    PRODUCER_MAX_MESSAGE_BYTES,
    batch_size,
    invalid_batch,
    needs_key,
    producer_size,
    too_large_for_producer,
    too_large_for_topic,
    unknown_topic,
)
from headwater.sdk.errors import ConfigError, ConnectError, RetriableError
from headwater.sdk.records import TopicPartition

if TYPE_CHECKING:
    from headwater.runtime.transport.kafka_transactions import KafkaTransactionalProducer

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")

JAVA_ONLY = frozenset(
    {"clock", "max.poll.records", "key.serializer", "value.serializer", "key.deserializer", "value.deserializer"}
)
"""Keys a Kafka Connect config may carry that librdkafka does not know; dropped before a client is made."""

WATERMARK_RETRY_S = 30.0
"""How long a newly assigned partition's watermarks are asked for again while the broker answers a retriable error."""

LEADER_MOVING = frozenset(
    {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART}
)
"""Errors a partition answers while its leader is being elected (librdkafka does not flag them retriable here)."""
TOPIC_MISSING = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})
"""Consumer errors for a subscribed topic that does not exist yet (librdkafka: "Subscribed topic not available");
not retriable to librdkafka, yet its group consumer picks the topic up once it is created."""

FULL_QUEUE_WAIT_S = 0.1
"""How long ``produce`` serves delivery reports, waiting for space, when the producer's queue is full."""

_ADMIN_TIMEOUT_S = 30.0

_COORDINATOR_MOVING = (
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
)


def _coordinator_moving(error: KafkaError) -> bool:
    """Whether ``error`` says the group's coordinator is loading or moving (retriable: ask again)."""
    return error.code() in _COORDINATOR_MOVING or "Coordinator load in progress" in error.str()


"""How long an admin request about consumer groups may take."""

PRODUCER_DEFAULTS = {"enable.idempotence": True, "partitioner": "murmur2_random", "linger.ms": 5}
CONSUMER_DEFAULTS = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "earliest",
    "partition.assignment.strategy": "cooperative-sticky",
    # librdkafka's default, given explicitly: a sink task never sees the records of open or aborted transactions
    # (an exactly-once source's, say). A worker's consumer.isolation.level or a sink's
    # consumer.override.isolation.level may still ask for read_uncommitted.
    "isolation.level": "read_committed",
    # librdkafka waits this long before fetching again once its local queue is over its limits (1000 ms by
    # default), which leaves a sink that drains the queue in bulk idle for most of each second.
    "fetch.queue.backoff.ms": 100,
}


def _error(error: KafkaError | KafkaException | Exception, report: Any = None) -> ConnectError:
    """A librdkafka error as the SDK's error type, retriable when librdkafka says so. For a failed delivery
    (``report`` is librdkafka's message), a refusal a connector can cause also says what it means
    (:mod:`~headwater.runtime.transport.refusals`)."""
    kafka_error = error.args[0] if isinstance(error, KafkaException) and error.args else error
    if isinstance(kafka_error, KafkaError):
        cls = RetriableError if kafka_error.retriable() else ConnectError
        text = f"{kafka_error.name()}: {kafka_error.str()}"
        return cls(text if report is None else _refusal(kafka_error.code(), text, report))
    return ConnectError(str(error))


def _refusal(code: int, text: str, report: Any) -> str:
    """``text``, librdkafka's words for a failed delivery of ``report``, with what the broker's refusal means."""
    topic = str(report.topic())
    if code == KafkaError.INVALID_RECORD:  # the one record check a broker makes on the key: a compacted topic
        return needs_key(text, topic) if report.key() is None else invalid_batch(text, topic)
    if code == KafkaError.MSG_SIZE_TOO_LARGE:
        return too_large_for_topic(text, topic, batch_size(report.key(), report.value()))
    if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return unknown_topic(text, topic)
    return text


def _rd(partitions: Collection[TopicPartition]) -> list[RdTopicPartition]:
    return [RdTopicPartition(tp.topic, tp.partition) for tp in partitions]


def _ours(partitions: Sequence[RdTopicPartition]) -> list[TopicPartition]:
    return [TopicPartition(p.topic, p.partition) for p in partitions]


class KafkaTransport:
    """Makes confluent-kafka clients for one cluster. ``config`` holds librdkafka settings shared by all clients
    (``bootstrap.servers``, security); ``admin_config`` holds settings of the admin clients only, which win (a
    worker's ``admin.`` keys); producer and consumer settings come with each call and win."""

    def __init__(
        self,
        bootstrap_servers: str,
        config: Mapping[str, Any] | None = None,
        admin_config: Mapping[str, Any] | None = None,
    ) -> None:
        if not bootstrap_servers:
            raise ConfigError("bootstrap.servers", bootstrap_servers, "Kafka bootstrap servers are required")
        self.config = {**(config or {}), "bootstrap.servers": bootstrap_servers}
        self.admin_config = {**self.config, **(admin_config or {}), "bootstrap.servers": bootstrap_servers}

    def _merged(self, defaults: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        merged = {**defaults, **self.config, **config}
        return with_logger({k: v for k, v in merged.items() if k not in JAVA_ONLY})

    def producer(self, config: Mapping[str, Any]) -> KafkaProducer:
        return KafkaProducer(self._merged(PRODUCER_DEFAULTS, config))

    def transactional_producer(self, transactional_id: str, config: Mapping[str, Any]) -> KafkaTransactionalProducer:
        """See :meth:`Transport.transactional_producer`."""
        from headwater.runtime.transport.kafka_transactions import KafkaTransactionalProducer  # it builds on ours

        return KafkaTransactionalProducer(
            self._merged(PRODUCER_DEFAULTS, {**config, "transactional.id": transactional_id, "acks": "all"})
        )

    def consumer(self, group_id: str | None, config: Mapping[str, Any]) -> KafkaConsumer:
        merged = self._merged(CONSUMER_DEFAULTS, config)
        merged["group.id"] = group_id or merged.get("group.id") or "headwater-unassigned"
        return KafkaConsumer(merged)

    def admin(self) -> KafkaAdmin:
        return KafkaAdmin(with_logger({k: v for k, v in self.admin_config.items() if k not in JAVA_ONLY}))

    def topic_log(self, topic: str, apply: LogApply, **options: Any) -> KafkaBasedLog:
        """See :meth:`Transport.topic_log`."""
        client_config = {k: v for k, v in self.config.items() if k not in JAVA_ONLY and k != "bootstrap.servers"}
        return KafkaBasedLog(self.config["bootstrap.servers"], topic, apply, client_config=client_config, **options)

    def group_member(self, group_id: str, config: Mapping[str, Any], listener: RebalanceListener) -> KafkaGroupMember:
        return KafkaGroupMember(group_id, self._merged({}, config), listener)


def _reporting(on_delivery: DeliveryCallback) -> Acknowledgement:
    """A librdkafka delivery callback that reports to ``on_delivery`` in the transport interface's types."""

    def callback(error: KafkaError | None, message: Any) -> None:
        if error is not None:
            on_delivery(_error(error, message), None)
        else:
            on_delivery(None, RecordMetadata(message.topic(), message.partition(), message.offset()))

    return callback


class KafkaProducer:
    def __init__(self, config: Mapping[str, Any]) -> None:
        self._producer = RdProducer(dict(config))
        self._message_max_bytes = int(config.get("message.max.bytes", PRODUCER_MAX_MESSAGE_BYTES))

    def _refused(
        self, error: KafkaException, topic: str, key: bytes | None, value: bytes | None, headers: RawHeaders | None
    ) -> ConnectError:
        """The error for a record librdkafka would not queue, saying what a refusal a connector can cause means."""
        failure = _error(error)
        kafka_error = error.args[0] if error.args else None
        code = kafka_error.code() if isinstance(kafka_error, KafkaError) else None
        if code == KafkaError.MSG_SIZE_TOO_LARGE:
            size = producer_size(key, value, headers)
            return type(failure)(too_large_for_producer(str(failure), topic, size, self._message_max_bytes))
        if code == KafkaError._UNKNOWN_TOPIC:
            return type(failure)(unknown_topic(str(failure), topic))
        return failure

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: RawHeaders | None = None,
        on_delivery: DeliveryCallback | None = None,
        ack: Acknowledgement | None = None,
    ) -> None:
        callback: Acknowledgement | None = ack
        if callback is None and on_delivery is not None:
            callback = _reporting(on_delivery)
        for attempt in range(2):
            try:
                self._producer.produce(
                    topic,
                    value,
                    key,
                    -1 if partition is None else partition,
                    on_delivery=callback,
                    timestamp=timestamp or 0,
                    headers=headers,  # type: ignore[arg-type]  # bytes | None values are accepted
                )
                return
            except BufferError as error:
                # the queue is full: serve delivery reports until some space is free, once
                self._producer.poll(FULL_QUEUE_WAIT_S if attempt == 0 else 0)
                if attempt == 1:
                    raise QueueFullError(f"the producer queue is full: {error}") from None
            except KafkaException as error:
                raise self._refused(error, topic, key, value, headers) from None

    def produce_all(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        timestamps: Sequence[int | None] | None,
        ack: Acknowledgement,
        start: int = 0,
        headers: Sequence[Sequence[tuple[str, bytes | None]] | None] | None = None,
    ) -> int:
        produce = self._producer.produce
        target = -1 if partition is None else partition
        index, end, waited = start, len(values), False
        # Positional arguments: parsing keywords costs about as much again as the rest of the call. The fifth and
        # sixth are on_delivery and its alias callback (stubs and C code list them in opposite orders), then
        # timestamp and headers (which librdkafka takes as a list only).
        while index < end:
            i = index
            try:
                if headers is not None:
                    for i in range(index, end):
                        key = None if keys is None else keys[i]
                        timestamp = (None if timestamps is None else timestamps[i]) or 0
                        pairs = headers[i]
                        if pairs and type(pairs) is not list:
                            pairs = list(pairs)
                        produce(topic, values[i], key, target, ack, ack, timestamp, pairs or None)  # type: ignore[arg-type]
                elif keys is None and timestamps is None:
                    for i in range(index, end):
                        produce(topic, values[i], None, target, ack, ack)
                else:
                    for i in range(index, end):
                        key = None if keys is None else keys[i]
                        timestamp = (None if timestamps is None else timestamps[i]) or 0
                        produce(topic, values[i], key, target, ack, ack, timestamp)
                return end
            except BufferError:
                index = i
                if waited:
                    return index
                self._producer.poll(FULL_QUEUE_WAIT_S)
                waited = True
            except KafkaException as error:
                key = None if keys is None else keys[i]
                pairs = None if headers is None else headers[i]
                raise self._refused(error, topic, key, values[i], list(pairs) if pairs else None) from None
        return end

    def delivery_error(self, error: Any, report: Any) -> ConnectError:
        return _error(error, report)

    def poll(self, timeout_ms: int = 0) -> int:
        return int(self._producer.poll(timeout_ms / 1000))

    def flush(self, timeout_ms: int) -> int:
        return int(self._producer.flush(timeout_ms / 1000))

    def close(self) -> None:
        remaining = self._producer.flush(5)
        if remaining:
            log.warning("producer closed with %d records undelivered", remaining)


class KafkaConsumer:
    def __init__(self, config: Mapping[str, Any]) -> None:
        self._reset = str(config.get("auto.offset.reset", "earliest"))
        self._commits: deque[tuple[dict[TopicPartition, int], CommitCallback | None]] = deque()
        self._consumer = RdConsumer({**config, "on_commit": self._on_commit})
        self._missing_said: set[str] = set()
        self._listener: RebalanceListener | None = None
        self._assigning: dict[TopicPartition, int] | None = None
        self._overrides: dict[TopicPartition, int] = {}
        """Positions set by an assignment or a seek, until the partition returns a record (librdkafka's own
        position is not updated before then)."""
        self._paused: set[TopicPartition] = set()
        self._callback_error: BaseException | None = None
        self._closing = False
        self._pattern: re.Pattern[str] | None = None
        self._pattern_topics: list[str] | None = None
        """The topics matching :attr:`_pattern` this consumer subscribed to (``None``: not yet)."""
        self._pattern_refresh_s = int(config.get(METADATA_MAX_AGE) or DEFAULT_METADATA_MAX_AGE_MS) / 1000
        self._next_pattern_refresh = 0.0
        self._closing_lock = threading.Lock()
        """Held while :meth:`high_watermarks` reads the client from another thread, and while :meth:`close` marks
        it closing."""

    # ---- membership ------------------------------------------------------------------------------------------

    def subscribe(self, topics: Sequence[str], listener: RebalanceListener) -> None:
        self._listener = listener
        self._pattern = None
        self._consumer.subscribe(
            list(topics), on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )

    def subscribe_pattern(self, pattern: re.Pattern[str], listener: RebalanceListener) -> None:
        """See :meth:`Consumer.subscribe_pattern`. The pattern is matched here, not by librdkafka (whose regular
        expressions are POSIX ones, not Python's): this consumer subscribes to the matching topics by name and
        subscribes again when the set changes."""
        self._listener = listener
        self._pattern = pattern
        self._pattern_topics = None
        self._follow_pattern()

    def _follow_pattern(self) -> None:
        """Subscribe to the topics matching the pattern now, when they changed; look again after
        ``metadata.max.age.ms``. A cluster that does not answer is asked again at the next poll after that."""
        assert self._pattern is not None
        self._next_pattern_refresh = time.monotonic() + self._pattern_refresh_s
        try:
            metadata = self._consumer.list_topics(timeout=_ADMIN_TIMEOUT_S)
        except KafkaException as error:
            if self._pattern_topics is None:
                raise _error(error) from None
            log.warning("cannot list the topics matching %s, asking again later: %s", self._pattern.pattern, error)
            return
        found = matching(self._pattern, [name for name, topic in metadata.topics.items() if topic.error is None])
        if found == self._pattern_topics:
            return
        log.info("topics matching %s: %s", self._pattern.pattern, found or "none")
        self._pattern_topics = found
        if found:
            self._consumer.subscribe(found, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)
        else:
            self._consumer.unsubscribe()

    def assign(self, partitions: Collection[TopicPartition]) -> None:
        starts = [RdTopicPartition(tp.topic, tp.partition, self._initial_position(tp)) for tp in partitions]
        self._consumer.assign(starts)

    def _on_assign(self, consumer: RdConsumer, partitions: list[RdTopicPartition]) -> None:
        assigned = _ours(partitions)
        self._assigning = {}
        if self._closing:  # an assignment that lands while close() leaves the group: consumed by no one
            consumer.incremental_assign(partitions)
            return
        try:
            # Inside the try: an exception escaping a rebalance callback comes back out of confluent-kafka's
            # consume() as a bare KafkaError, which no ``except Exception`` catches (it killed a task thread).
            self._assigning = self._initial_positions(assigned)
            if self._listener is not None and assigned:
                self._listener.on_partitions_assigned(assigned)
        except BaseException as error:  # surfaced after poll returns, like Java's consumer
            self._callback_error = error
        finally:
            positions = self._assigning or {}
            self._assigning = None
            starts = [  # without a position (its lookup failed): librdkafka's committed offset or reset policy
                RdTopicPartition(tp.topic, tp.partition, positions[tp])
                if tp in positions
                else RdTopicPartition(tp.topic, tp.partition)
                for tp in assigned
            ]
            self._overrides.update(positions)
            consumer.incremental_assign(starts)

    def _on_revoke(self, consumer: RdConsumer, partitions: list[RdTopicPartition]) -> None:
        revoked = _ours(partitions)
        try:
            if self._listener is not None and revoked:
                self._listener.on_partitions_revoked(revoked)
        except BaseException as error:
            self._callback_error = error
        finally:
            for tp in revoked:
                self._overrides.pop(tp, None)
                self._paused.discard(tp)
            consumer.incremental_unassign(partitions)

    def _on_lost(self, consumer: RdConsumer, partitions: list[RdTopicPartition]) -> None:
        lost = _ours(partitions)
        try:
            if self._listener is not None and lost:
                self._listener.on_partitions_lost(lost)
        except BaseException as error:
            self._callback_error = error
        finally:
            for tp in lost:
                self._overrides.pop(tp, None)
                self._paused.discard(tp)
            consumer.incremental_unassign(partitions)

    def _initial_positions(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """Where consumption of newly assigned partitions starts: the committed offset, else the reset policy."""
        if not partitions:
            return {}
        found: dict[TopicPartition, int] = {}
        for committed in self._consumer.committed(_rd(partitions), timeout=30):
            tp = TopicPartition(committed.topic, committed.partition)
            if committed.error is None and committed.offset >= 0:
                found[tp] = int(committed.offset)
                continue
            low, high = self._watermarks(tp)
            if self._reset not in ("earliest", "latest"):
                raise ConnectError(f"no committed offset for {tp} and auto.offset.reset={self._reset}")
            found[tp] = int(high if self._reset == "latest" else low)
        return found

    def _initial_position(self, tp: TopicPartition) -> int:
        return self._initial_positions([tp])[tp]

    def _watermarks(self, tp: TopicPartition) -> tuple[int, int]:
        """The partition's low and high watermarks, asking again while its leader is moving (a topic created a
        moment ago answers NOT_LEADER_FOR_PARTITION until its leader is elected)."""
        deadline = time.monotonic() + WATERMARK_RETRY_S
        while True:
            try:
                low, high = self._consumer.get_watermark_offsets(RdTopicPartition(tp.topic, tp.partition), timeout=30)
                return int(low), int(high)
            except KafkaException as error:
                code = error.args[0].code()
                if code not in LEADER_MOVING or time.monotonic() >= deadline:
                    raise _error(error) from None
                time.sleep(0.1)

    # ---- fetching --------------------------------------------------------------------------------------------

    def poll(self, max_records: int, timeout_ms: int) -> Sequence[Message]:
        if self._pattern is not None and time.monotonic() >= self._next_pattern_refresh:
            self._follow_pattern()
        raw: list[Any] = self._consumer.consume(max_records, timeout_ms / 1000)
        if self._callback_error is not None:
            error, self._callback_error = self._callback_error, None
            raise error
        if not raw:
            return ()
        failed = [item for item in raw if item.error() is not None]
        if failed:
            for item in failed:
                failure = item.error()
                if failure.code() == KafkaError._PARTITION_EOF:
                    continue
                if failure.code() in TOPIC_MISSING:
                    self._warn_missing(failure)
                    continue
                if failure.fatal() or not failure.retriable():
                    raise _error(failure)
                log.warning("consumer error, continuing: %s", failure)
            raw = [item for item in raw if item.error() is None]
        if self._overrides:
            # librdkafka's own positions are right again for every partition that returned a record
            for tp in {TopicPartition(item.topic(), item.partition()) for item in raw}:
                self._overrides.pop(tp, None)
        return KafkaRecords(raw)

    def _warn_missing(self, failure: KafkaError) -> None:
        """A subscribed topic the broker does not know (yet): the consumer waits for it, as Java's does, rather than
        fail the task; said once per message librdkafka gives."""
        text = failure.str()
        if text not in self._missing_said:
            self._missing_said.add(text)
            log.warning("%s; waiting for it to be created", text)

    def assignment(self) -> frozenset[TopicPartition]:
        """The assigned partitions, including those being assigned while the listener runs (as with Java's
        consumer, which has them assigned before ``onPartitionsAssigned``), so a sink task may rewind them there."""
        found = frozenset(_ours(self._consumer.assignment()))
        return found | frozenset(self._assigning) if self._assigning else found

    def position(self, partition: TopicPartition) -> int:
        if self._assigning is not None and partition in self._assigning:
            return self._assigning[partition]
        return self._read_positions([partition])[partition]

    def positions(self) -> dict[TopicPartition, int]:
        """Every assigned partition's position, read from librdkafka in one call."""
        return self._read_positions(self._consumer.assignment())

    def _read_positions(self, partitions: Sequence[TopicPartition | RdTopicPartition]) -> dict[TopicPartition, int]:
        """Where an assignment or seek put each partition until it returns a record, then librdkafka's position
        (the offset after the last record it returned)."""
        if not partitions:
            return {}
        found: dict[TopicPartition, int] = {}
        overrides = self._overrides
        asked = [p if isinstance(p, RdTopicPartition) else RdTopicPartition(p.topic, p.partition) for p in partitions]
        for rd in self._consumer.position(asked):
            tp = TopicPartition(rd.topic, rd.partition)
            override = overrides.get(tp)
            if override is not None:
                found[tp] = override
            elif rd.offset == OFFSET_INVALID or rd.offset < 0:
                found[tp] = overrides[tp] = self._initial_position(tp)
            else:
                found[tp] = int(rd.offset)
        return found

    def high_watermarks(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """librdkafka's cached high watermarks, updated by every fetch response; taken under :attr:`_closing_lock`
        without waiting, so that no call reaches a client :meth:`close` is destroying (``{}`` meanwhile)."""
        if not self._closing_lock.acquire(blocking=False):
            return {}
        try:
            if self._closing:
                return {}
            found: dict[TopicPartition, int] = {}
            for tp in partitions:
                try:
                    _, high = self._consumer.get_watermark_offsets(
                        RdTopicPartition(tp.topic, tp.partition), cached=True
                    )
                except KafkaException as error:  # not assigned any more, say: no lag to tell for it
                    log.debug("no cached high watermark for %s: %s", tp, error)
                    continue
                if high is not None and high >= 0:
                    found[tp] = int(high)
            return found
        finally:
            self._closing_lock.release()

    def seek(self, partition: TopicPartition, offset: int) -> None:
        if self._assigning is not None and partition in self._assigning:
            self._assigning[partition] = offset
            return
        if partition not in self.assignment():
            raise ConnectError(f"cannot seek {partition}: it is not assigned")
        target = RdTopicPartition(partition.topic, partition.partition, offset)
        try:
            self._consumer.seek(target)
        except KafkaException:
            # not fetching yet: restart the partition's assignment at the offset (local, no rebalance)
            self._consumer.incremental_unassign([RdTopicPartition(partition.topic, partition.partition)])
            self._consumer.incremental_assign([target])
        self._overrides[partition] = offset

    def pause(self, partitions: Collection[TopicPartition]) -> None:
        if partitions:
            self._consumer.pause(_rd(partitions))
            self._paused.update(partitions)

    def resume(self, partitions: Collection[TopicPartition]) -> None:
        if partitions:
            self._consumer.resume(_rd(partitions))
            self._paused.difference_update(partitions)

    def paused(self) -> frozenset[TopicPartition]:
        return frozenset(self._paused)

    # ---- commits ---------------------------------------------------------------------------------------------

    def commit(
        self,
        offsets: Mapping[TopicPartition, int],
        asynchronous: bool,
        on_complete: CommitCallback | None = None,
    ) -> None:
        targets = [RdTopicPartition(tp.topic, tp.partition, offset) for tp, offset in offsets.items()]
        if not asynchronous:
            try:
                results = self._consumer.commit(offsets=targets, asynchronous=False)
            except KafkaException as error:
                raise _error(error) from None
            for result in results or ():
                if result.error is not None:
                    raise _error(result.error)
            return
        self._commits.append((dict(offsets), on_complete))
        try:
            self._consumer.commit(offsets=targets, asynchronous=True)
        except KafkaException as error:
            self._commits.pop()
            raise _error(error) from None

    def _on_commit(self, error: KafkaError | None, partitions: list[RdTopicPartition]) -> None:
        if not self._commits:
            return
        offsets, callback = self._commits.popleft()
        failure = error or next((p.error for p in partitions if p.error is not None), None)
        if callback is not None:
            callback(None if failure is None else _error(failure), offsets)

    def committed(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int | None]:
        found = self._consumer.committed(_rd(partitions), timeout=30)
        return {TopicPartition(p.topic, p.partition): (p.offset if p.offset >= 0 else None) for p in found}

    def close(self) -> None:
        self._listener = None
        with self._closing_lock:
            self._closing = True  # looking up committed offsets from inside close() waits out its whole timeout
        self._consumer.close()


def _serving_logs(method: Callable[Concatenate[KafkaAdmin, _P], _R]) -> Callable[Concatenate[KafkaAdmin, _P], _R]:
    """After the admin request, hand over the client's librdkafka log lines (confluent-kafka queues them for
    ``poll`` once a ``logger`` is set), however it ended."""

    def serving(self: KafkaAdmin, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        finally:
            self._admin.poll(0)

    return serving


class KafkaAdmin:
    """Admin requests; each hands over the client's librdkafka log lines when it returns."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._admin = AdminClient(dict(config))

    @_serving_logs
    def create_topics(self, topics: Sequence[NewTopic]) -> None:
        if not topics:
            return
        requests = [RdNewTopic(t.name, t.partitions, t.replication_factor, config=dict(t.config)) for t in topics]
        for name, future in self._admin.create_topics(requests, operation_timeout=30).items():
            try:
                future.result(timeout=60)
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise ConnectError(f"cannot create topic {name}: {error.args[0].str()}") from None
            except TimeoutError:
                raise RetriableError(f"cannot create topic {name}: no answer from the cluster in 60 s") from None

    @_serving_logs
    def list_topics(self) -> dict[str, int]:
        metadata = self._admin.list_topics(timeout=30)
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()}

    @_serving_logs
    def describe_topics(self, names: Sequence[str]) -> dict[str, int]:
        """See :meth:`Admin.describe_topics`: Kafka's DescribeTopics (a metadata request naming the topics would
        create them on a broker that creates topics on first use)."""
        if not names:
            return {}
        found: dict[str, int] = {}
        try:
            futures = self._admin.describe_topics(TopicCollection(list(names)), request_timeout=_ADMIN_TIMEOUT_S)
        except KafkaException as error:
            failure = _error(error)
            raise type(failure)(f"cannot describe topics {list(names)}: {failure}") from None
        for name, future in futures.items():
            try:
                found[name] = len(future.result(timeout=_ADMIN_TIMEOUT_S).partitions)
            except KafkaException as error:
                code = error.args[0].code()
                if code in TOPIC_MISSING:
                    continue
                failure = _error(error)
                raise type(failure)(f"cannot describe topic {name}: {failure}") from None
            except TimeoutError:
                raise RetriableError(
                    f"cannot describe topic {name}: no answer from the cluster in {_ADMIN_TIMEOUT_S:.0f} s"
                ) from None
        return found

    @_serving_logs
    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        request = [ConsumerGroupTopicPartitions(group_id)]
        deadline = time.monotonic() + _ADMIN_TIMEOUT_S
        backoff = 0.1
        while True:
            try:
                future = self._admin.list_consumer_group_offsets(request, request_timeout=_ADMIN_TIMEOUT_S)[group_id]
                found = future.result(timeout=_ADMIN_TIMEOUT_S)
                break
            except KafkaException as error:
                # a broker that has just started (or moved the group's coordinator) answers "Coordinator load in
                # progress" for a while: Kafka's own admin client retries that, and so does this
                if not _coordinator_moving(error.args[0]) or time.monotonic() + backoff > deadline:
                    raise ConnectError(error.args[0].str()) from None
                time.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
            except TimeoutError:
                raise ConnectError(f"no answer from the cluster in {_ADMIN_TIMEOUT_S:.0f} s") from None
        return {
            TopicPartition(tp.topic, tp.partition): tp.offset for tp in found.topic_partitions or [] if tp.offset >= 0
        }

    @_serving_logs
    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        partitions = [RdTopicPartition(tp.topic, tp.partition, offset) for tp, offset in offsets.items()]
        request = [ConsumerGroupTopicPartitions(group_id, partitions)]
        try:
            future = self._admin.alter_consumer_group_offsets(request, request_timeout=_ADMIN_TIMEOUT_S)[group_id]
            future.result(_ADMIN_TIMEOUT_S)
        except KafkaException as error:
            raise ConnectError(error.args[0].str()) from None
        except TimeoutError:
            raise ConnectError(f"no answer from the cluster in {_ADMIN_TIMEOUT_S:.0f} s") from None

    @_serving_logs
    def delete_group(self, group_id: str) -> None:
        try:
            self._admin.delete_consumer_groups([group_id], request_timeout=_ADMIN_TIMEOUT_S)[group_id].result(
                _ADMIN_TIMEOUT_S
            )
        except KafkaException as error:
            if error.args[0].code() != KafkaError.GROUP_ID_NOT_FOUND:
                raise ConnectError(error.args[0].str()) from None
        except TimeoutError:
            raise ConnectError(f"no answer from the cluster in {_ADMIN_TIMEOUT_S:.0f} s") from None

    @_serving_logs
    def delete_topics(self, names: Sequence[str], wait: bool = True) -> None:
        if not names:
            return
        futures = self._admin.delete_topics(list(names), operation_timeout=30)
        if not wait:
            for name, future in futures.items():
                future.add_done_callback(functools.partial(_log_deletion, name))
            return
        for name, future in futures.items():
            try:
                future.result(timeout=60)
            except KafkaException as error:
                raise ConnectError(f"cannot delete topic {name}: {error.args[0].str()}") from None
            except TimeoutError:
                raise RetriableError(f"cannot delete topic {name}: no answer from the cluster in 60 s") from None


def _log_deletion(topic: str, future: Any) -> None:
    error = future.exception()
    if error is not None:
        log.info("topic %s was not deleted: %s", topic, error)
    else:
        log.info("deleted topic %s", topic)
