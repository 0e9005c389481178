"""The confluent-kafka producer on a real broker: acknowledgements, Java-compatible partitioning, a full
queue, batches of records, and a refused batch's errors (what both transports refuse is in
tests/runtime/transport/test_refusals.py)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.runtime.transport.base import NewTopic, QueueFullError
from headwater.runtime.transport.kafka import KafkaConsumer, KafkaTransport
from headwater.runtime.transport.memory import key_partition
from headwater.runtime.transport.refusals import INVALID_RECORD, invalid_batch, needs_key
from headwater.sdk.records import TopicPartition
from support.kafka_clients import poll_until, produce

pytestmark = pytest.mark.kafka


def test_delivery_callbacks_carry_where_each_record_landed(transport: KafkaTransport, topic: str) -> None:
    acks = produce(transport, topic, 5)
    assert [(m.topic, m.partition, m.offset) for m in acks] == [(topic, 0, i) for i in range(5)]


def test_keyed_records_land_where_the_java_partitioner_puts_them(transport: KafkaTransport, topic: str) -> None:
    acks = produce(transport, topic, 30, keyed=True)
    assert [m.partition for m in acks] == [key_partition(b"k%d" % i, 3) for i in range(30)]
    assert len({m.partition for m in acks}) == 3


def test_a_full_producer_queue_is_a_retriable_error(transport: KafkaTransport, topic: str) -> None:
    producer = transport.producer({"queue.buffering.max.messages": 1, "linger.ms": 1000})
    producer.produce(topic, b"first", None, 0)
    with pytest.raises(QueueFullError, match="queue is full"):
        producer.produce(topic, b"second", None, 0)
    producer.close()


def test_produce_all_queues_what_fits_and_says_where_it_stopped(
    transport: KafkaTransport, topic: str, consumers: list[KafkaConsumer]
) -> None:
    producer = transport.producer({"queue.buffering.max.messages": 3, "linger.ms": 5000})
    reports: list[tuple[object, int]] = []

    def ack(error: object, report: Any) -> None:
        reports.append((error, report.offset()))

    values = [b"v%d" % i for i in range(5)]
    assert producer.produce_all(topic, values, None, 1, [1_000 + i for i in range(5)], ack) == 3
    assert producer.flush(30_000) == 0
    assert producer.produce_all(topic, values, [b"k3", b"k4", b"k5", b"k6", b"k7"], 1, None, ack, start=3) == 5
    assert producer.flush(30_000) == 0
    producer.close()
    assert reports == [(None, i) for i in range(5)]
    consumer = transport.consumer(None, {})
    consumers.append(consumer)
    consumer.assign([TopicPartition(topic, 1)])
    got = poll_until(consumers, lambda got: len(got) >= 5)
    assert [(r.key, r.value) for r in got] == [(None, b"v0"), (None, b"v1"), (None, b"v2"), (b"k6", b"v3"),
                                               (b"k7", b"v4")]  # fmt: skip
    assert [r.timestamp for r in got[:3]] == [1_000, 1_001, 1_002]


def test_produce_all_sends_each_records_headers_as_they_are(
    transport: KafkaTransport, topic: str, consumers: list[KafkaConsumer]
) -> None:
    producer = transport.producer({})
    acks: list[object] = []
    shared = (("source", b"db"),)  # a tuple, which librdkafka does not take as it is
    headers = [[("trace", b"\x00\xff"), ("none", None)], None, shared, []]
    values = [b"v0", b"v1", b"v2", b"v3"]
    assert producer.produce_all(topic, values, None, 0, None, lambda error, report: acks.append(error), 0, headers) == 4
    assert producer.flush(30_000) == 0
    producer.close()
    assert acks == [None] * 4
    consumer = transport.consumer(None, {})
    consumers.append(consumer)
    consumer.assign([TopicPartition(topic, 0)])
    got = poll_until(consumers, lambda got: len(got) >= 4)
    assert [(r.value, list(r.headers)) for r in got] == [
        (b"v0", [("trace", b"\x00\xff"), ("none", None)]),
        (b"v1", []),
        (b"v2", [("source", b"db")]),
        (b"v3", []),
    ]


def test_records_refused_with_an_unkeyed_neighbour_on_a_compacted_topic_say_which_needs_a_key(
    transport: KafkaTransport, unique_name: str
) -> None:
    """Kafka refuses the whole batch holding a record without a key (the in-memory broker refuses that record only,
    see tests/runtime/transport/test_refusals.py): each error says what is wrong with the batch."""
    transport.admin().create_topics([NewTopic(unique_name, 1, 1, {"cleanup.policy": "compact"})])
    producer = transport.producer({"linger.ms": 5000})  # one batch: sent by the flush
    errors: dict[bytes | None, Exception | None] = {}
    for key in (b"a", None, b"b"):
        producer.produce(unique_name, b"v", key, on_delivery=lambda error, _, key=key: errors.update({key: error}))
    assert producer.flush(30_000) == 0
    producer.close()
    assert {key: str(error) for key, error in errors.items()} == {
        b"a": invalid_batch(INVALID_RECORD, unique_name),
        None: needs_key(INVALID_RECORD, unique_name),
        b"b": invalid_batch(INVALID_RECORD, unique_name),
    }
