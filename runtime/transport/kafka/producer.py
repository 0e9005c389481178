"""The producer on a real Kafka cluster: confluent-kafka's, its delivery reports and refusals in the transport
interface's types.

Producers are idempotent and use the ``murmur2_random`` partitioner (the transport's defaults), so keyed records
land on the partition Java clients choose.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Producer as RdProducer

from headwater.runtime.transport.base import (
    Acknowledgement,
    DeliveryCallback,
    QueueFullError,
    RawHeaders,
    RecordMetadata,
)
from headwater.runtime.transport.kafka.errors import connect_error
from headwater.runtime.transport.refusals import (
    PRODUCER_MAX_MESSAGE_BYTES,
    producer_size,
    too_large_for_producer,
    unknown_topic,
)
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)

FULL_QUEUE_WAIT_S = 0.1
"""How long ``produce`` serves delivery reports, waiting for space, when the producer's queue is full."""


def _reporting(on_delivery: DeliveryCallback) -> Acknowledgement:
    """A librdkafka delivery callback that reports to ``on_delivery`` in the transport interface's types."""

    def callback(error: KafkaError | None, message: Any) -> None:
        if error is not None:
            on_delivery(connect_error(error, message), None)
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
        failure = connect_error(error)
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
        target = -1 if partition is None else partition
        for attempt in range(2):
            try:  # positional, as in produce_all: keywords cost about as much again as the rest of the call
                self._producer.produce(topic, value, key, target, callback, callback, timestamp or 0, headers)  # type: ignore[arg-type]
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
        return connect_error(error, report)

    def poll(self, timeout_ms: int = 0) -> int:
        return int(self._producer.poll(timeout_ms / 1000))

    def flush(self, timeout_ms: int) -> int:
        return int(self._producer.flush(timeout_ms / 1000))

    def close(self) -> None:
        remaining = self._producer.flush(5)
        if remaining:
            log.warning("producer closed with %d records undelivered", remaining)
