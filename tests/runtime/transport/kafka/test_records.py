"""Records consumed on the Kafka transport are sink records read from librdkafka's messages."""

from __future__ import annotations

import pytest

from headwater.runtime.transport.kafka import KafkaConsumer, KafkaTransport
from headwater.sdk.records import SinkRecord, TopicPartition
from support.kafka_clients import poll_until

pytestmark = pytest.mark.kafka


def test_consumed_records_are_sink_records_read_from_the_message(
    transport: KafkaTransport, topic: str, consumers: list[KafkaConsumer]
) -> None:
    producer = transport.producer({})
    producer.produce(topic, b"v0", b"k0", 2, 1_700_000_000_000, [("h", b"x"), ("n", None)])
    producer.produce(topic, None, None, 2, 1_700_000_000_001)
    assert producer.flush(30_000) == 0
    consumer = transport.consumer(None, {})
    consumers.append(consumer)
    consumer.assign([TopicPartition(topic, 2)])
    got = poll_until(consumers, lambda got: len(got) >= 2)
    first, second = got
    assert isinstance(first, SinkRecord)
    assert (first.topic, first.partition, first.offset, first.key, first.value) == (topic, 2, 0, b"k0", b"v0")
    assert (first.timestamp, list(first.headers)) == (1_700_000_000_000, [("h", b"x"), ("n", None)])
    assert (second.offset, second.key, second.value, second.headers) == (1, None, None, ())
    assert (first.key_schema, first.value_schema) == (None, None)  # what a sink may read of every record
    expected = SinkRecord(topic, 2, 0, b"k0", b"v0", 1_700_000_000_000, [("h", b"x"), ("n", None)])
    assert repr(first) == "KafkaRecord" + repr(expected).removeprefix("SinkRecord"), "repr reads the fields too"
