"""The in-memory broker's producer: Java's partitioner (:mod:`~headwater.runtime.transport.memory.partitioner`),
injected faults (:mod:`~headwater.runtime.transport.memory.faults`), and acks delivered from ``poll``.

It refuses what librdkafka's producer and a Kafka broker refuse, with the same errors (see
:mod:`~headwater.runtime.transport.refusals`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.runtime.transport.base import (
    Acknowledgement,
    DeliveryCallback,
    Message,
    RawHeaders,
    RecordMetadata,
)
from headwater.runtime.transport.memory.faults import ProducerFaults
from headwater.runtime.transport.memory.partitioner import key_partition
from headwater.runtime.transport.memory.state import BrokerState
from headwater.runtime.transport.refusals import (
    INVALID_RECORD,
    KNOWN_MISSING_TOPIC,
    PRODUCER_MAX_MESSAGE_BYTES,
    PRODUCER_RECORD_OVERHEAD,
    TOO_LARGE_FOR_BROKER,
    TOO_LARGE_FOR_PRODUCER,
    UNKNOWN_TOPIC,
    batch_size,
    needs_key,
    producer_size,
    too_large_for_producer,
    too_large_for_topic,
    unknown_topic,
)
from headwater.sdk.context import Clock
from headwater.sdk.errors import ConnectError

_new_metadata = RecordMetadata.__new__
_set_topic = RecordMetadata.__dict__["topic"].__set__
_set_partition = RecordMetadata.__dict__["partition"].__set__
_set_offset = RecordMetadata.__dict__["offset"].__set__


def _metadata(message: Message) -> RecordMetadata:
    """``RecordMetadata`` for a stored message, built through its slots: the frozen dataclass ``__init__`` sets each
    field with ``object.__setattr__`` and costs more than the rest of an ack together."""
    metadata = _new_metadata(RecordMetadata)
    _set_topic(metadata, message.topic)
    _set_partition(metadata, message.partition)
    _set_offset(metadata, message.offset)
    return metadata


_Pending = tuple[str, DeliveryCallback | None, Message | None, Exception | None]
"""A queued ack: topic, callback, the stored message on success, the error on failure."""

BATCH_SLACK = 80
"""The most bytes a record batch of one header-less record adds to its key and value: below its topic's limit by
this much, a record is not measured."""


def _refusal(
    topic: str,
    key: bytes | None,
    value: bytes | None,
    headers: RawHeaders | None,
    rules: tuple[bool, int],
) -> ConnectError | None:
    """Why a Kafka broker refuses this record, if it does: its batch is over the topic's ``max.message.bytes``
    (checked first, as the broker does), or it has no key and the topic is compacted."""
    compact, limit = rules
    if batch_size(key, value, headers) > limit:
        return ConnectError(too_large_for_topic(TOO_LARGE_FOR_BROKER, topic, batch_size(key, value)))
    if compact and key is None:
        return ConnectError(needs_key(INVALID_RECORD, topic))
    return None


class MemoryProducer:
    """Appends records to the broker at ``produce`` time and delivers their acks, in produce order, from
    :meth:`poll`/:meth:`flush`. ``sent`` counts stored records, ``acked``/``failed`` count delivered acks."""

    def __init__(self, state: BrokerState, config: Mapping[str, Any]) -> None:
        self.state = state
        self.faults = ProducerFaults()
        self.sent = 0
        self.acked = 0
        self.failed = 0
        self._clock: Clock | None = config.get("clock")
        self.message_max_bytes = int(config.get("message.max.bytes", PRODUCER_MAX_MESSAGE_BYTES))
        """The largest record this producer queues, as librdkafka counts it (its ``message.max.bytes``)."""
        self._unmeasured = self.message_max_bytes - PRODUCER_RECORD_OVERHEAD
        """Key plus value bytes up to which a record without headers is under :attr:`message_max_bytes`."""
        self._pending: list[_Pending] = []
        self._round_robin: dict[str, int] = {}
        self._missing: set[str] = set()
        """Topics a record failed to reach because they do not exist: ``produce`` refuses them until they do."""
        self._closed = False
        state.register_producer(self)

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
        """Store one record now and queue its ack; a record the broker refuses is not stored, and its ack carries
        the error. Raises, as librdkafka does, when the record is over the producer's ``message.max.bytes``."""
        if ack is not None:
            on_delivery = ack
        size = (0 if key is None else len(key)) + (0 if value is None else len(value))
        if size > self._unmeasured or headers:
            counted = producer_size(key, value, headers)
            if counted > self.message_max_bytes:
                limit = self.message_max_bytes
                raise ConnectError(too_large_for_producer(TOO_LARGE_FOR_PRODUCER, topic, counted, limit))
        state = self.state
        with state.lock:
            if self._closed:
                raise ConnectError("Producer is closed")
            faults, shared = self.faults, state.faults
            if faults.armed or shared.armed:
                send_error = faults.take_send_failure() or shared.take_send_failure()
                if send_error is not None:
                    raise send_error
            logs = state.logs.get(topic)
            if logs is None:
                if not state.auto_create_topics:
                    if topic in self._missing:
                        raise ConnectError(unknown_topic(KNOWN_MISSING_TOPIC, topic))
                    self._missing.add(topic)
                    self._pending.append((topic, on_delivery, None, ConnectError(unknown_topic(UNKNOWN_TOPIC, topic))))
                    return
                state.create_topic(topic, state.default_partitions)
                logs = state.logs[topic]
            rules = state.rules[topic]
            if (key is None and rules[0]) or size > rules[1] - BATCH_SLACK or headers:
                refusal_error = _refusal(topic, key, value, headers, rules)
                if refusal_error is not None:
                    self._pending.append((topic, on_delivery, None, refusal_error))
                    return
            if partition is None:
                if key is None:
                    turn = self._round_robin.get(topic, 0)
                    self._round_robin[topic] = turn + 1
                    partition = turn % len(logs)
                else:
                    partition = key_partition(key, len(logs))
            elif not 0 <= partition < len(logs):
                raise ConnectError(f"Invalid partition {partition} for topic {topic} with {len(logs)} partitions")
            if faults.armed or shared.armed:
                delivery_error = faults.take_delivery_failure() or shared.take_delivery_failure()
                if delivery_error is not None:
                    self._pending.append((topic, on_delivery, None, delivery_error))
                    return
            if timestamp is None and self._clock is not None:
                timestamp = self._clock.now_ms()
            log = logs[partition]
            message = Message(topic, partition, len(log), key, value, timestamp, () if headers is None else headers)
            log.append(message)
            self._pending.append((topic, on_delivery, message, None))
            self.sent += 1

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
        produce = self.produce
        for index in range(start, len(values)):
            key = None if keys is None else keys[index]
            timestamp = None if timestamps is None else timestamps[index]
            if headers is None:
                produce(topic, values[index], key, partition, timestamp, None, None, ack)
            else:  # a copy, as Kafka stores the headers apart from what the source may change later
                pairs = headers[index]
                produce(topic, values[index], key, partition, timestamp, list(pairs) if pairs else None, None, ack)
        return len(values)

    def delivery_error(self, error: Any, report: Any) -> ConnectError:
        """The error an ack was given, which is already a :class:`ConnectError` unless a test injected another."""
        return error if isinstance(error, ConnectError) else ConnectError(str(error))

    def poll(self, timeout_ms: int = 0) -> int:
        """Deliver every ack that is not held, in produce order; return how many were delivered."""
        with self.state.lock:
            if not self._pending:
                return 0
            faults, shared = self.faults, self.state.faults
            if faults.holding or shared.holding:
                ready: list[_Pending] = []
                held: list[_Pending] = []
                for entry in self._pending:
                    (held if faults.holds(entry[0]) or shared.holds(entry[0]) else ready).append(entry)
                self._pending = held
            else:
                ready, self._pending = self._pending, []
        return self._deliver(ready)

    def _deliver(self, ready: list[_Pending]) -> int:
        acked = failed = 0
        try:
            for _topic, callback, message, error in ready:
                if message is not None:
                    acked += 1
                    if callback is not None:
                        callback(None, _metadata(message))
                else:
                    failed += 1
                    if callback is not None:
                        callback(error, None)
        except BaseException:
            with self.state.lock:
                self._pending[:0] = ready[acked + failed :]
            raise
        finally:
            with self.state.lock:
                self.acked += acked
                self.failed += failed
        return acked + failed

    def flush(self, timeout_ms: int) -> int:
        """Deliver every ack that is not held; return how many are still outstanding (the held ones)."""
        self.poll(0)
        with self.state.lock:
            return len(self._pending)

    def close(self) -> None:
        """Refuse further records; acks still queued are not delivered."""
        with self.state.lock:
            self._closed = True
        self.state.unregister_producer(self)

    def hold_acks(self, topic: str | None = None) -> None:
        """Hold this producer's acks for ``topic`` (all topics when ``None``); see :class:`ProducerFaults`."""
        with self.state.lock:
            self.faults.hold_acks(topic)

    def release_acks(self, topic: str | None = None) -> None:
        with self.state.lock:
            self.faults.release_acks(topic)

    def held_acks(self) -> int:
        """How many queued acks this producer's or the broker's holds keep back."""
        with self.state.lock:
            faults, shared = self.faults, self.state.faults
            return sum(1 for entry in self._pending if faults.holds(entry[0]) or shared.holds(entry[0]))

    def fail_next_sends(self, n: int, retriable: bool = True) -> None:
        """The next ``n`` ``produce`` calls raise; see :meth:`ProducerFaults.fail_next_sends`."""
        with self.state.lock:
            self.faults.fail_next_sends(n, retriable)

    def fail_next_deliveries(self, n: int, error: Exception | None = None) -> None:
        """The next ``n`` records fail; see :meth:`ProducerFaults.fail_next_deliveries`."""
        with self.state.lock:
            self.faults.fail_next_deliveries(n, error)

    def __repr__(self) -> str:
        return (
            f"MemoryProducer(sent={self.sent}, acked={self.acked}, failed={self.failed}, queued={len(self._pending)})"
        )
