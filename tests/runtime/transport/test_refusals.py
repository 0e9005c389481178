"""What a Kafka broker and librdkafka's producer refuse where a connector can get it wrong, shown by each test twice:
on the in-memory broker and on a real one, with the same error (code, librdkafka's words, and what it means).

An unkeyed record on a compacted topic, a record over its topic's ``max.message.bytes`` or over the producer's
``message.max.bytes``, and a record to a topic that does not exist while topics are not created on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from headwater.harness.kafka_worker import KafkaInspector
from headwater.runtime.transport.base import Message, NewTopic, Producer, RecordMetadata, Transport
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.transport.refusals import (
    BROKER_MAX_MESSAGE_BYTES,
    INVALID_RECORD,
    KNOWN_MISSING_TOPIC,
    PRODUCER_MAX_MESSAGE_BYTES,
    TOO_LARGE_FOR_BROKER,
    TOO_LARGE_FOR_PRODUCER,
    UNKNOWN_TOPIC,
    batch_size,
    needs_key,
    too_large_for_producer,
    too_large_for_topic,
    unknown_topic,
)
from headwater.sdk.errors import ConnectError, RetriableError

FLUSH_MS = 30_000


@dataclass
class Cluster:
    """One backend: its transport, and how to read a topic back."""

    transport: Transport
    read: Callable[[str], list[Message]]
    topics: Callable[[], Mapping[str, int]]
    no_create: dict[str, Any]
    """Producer settings under which sending to a missing topic does not create it."""
    producers: list[Producer] = field(default_factory=list)

    def producer(self, config: Mapping[str, Any] | None = None, create_topics: bool = True) -> Producer:
        made = self.transport.producer({**({} if create_topics else self.no_create), **(config or {})})
        self.producers.append(made)
        return made

    def create_topic(self, name: str, config: Mapping[str, str] | None = None) -> str:
        self.transport.admin().create_topics([NewTopic(name, 1, 1, dict(config or {}))])
        return name


@pytest.fixture(params=["memory", pytest.param("kafka", marks=pytest.mark.kafka)])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The in-memory broker (which creates no topic on first use here: every test creates its topics), or a real
    broker."""
    if request.param == "memory":
        broker = MemoryBroker(auto_create_topics=False)
        made = Cluster(MemoryTransport(broker), broker.messages, broker.topics, {})
    else:
        bootstrap = request.getfixturevalue("kafka_bootstrap")
        inspector = KafkaInspector(bootstrap)
        # A broker that creates topics on first use answers a producer that does not ask it to as one that does
        # not (its metadata request says allow_auto_topic_creation=false). librdkafka fails the record once the
        # topic has not appeared for topic.metadata.propagation.max.ms (30 s by default).
        no_create = {"allow.auto.create.topics": False, "topic.metadata.propagation.max.ms": 1000}
        transport = KafkaTransport(bootstrap, {"topic.metadata.refresh.interval.ms": 1000})
        made = Cluster(transport, inspector.messages, inspector.topics, no_create)
    yield made
    for producer in made.producers:
        producer.close()


class Deliveries:
    """Delivery reports through both callbacks a producer offers: ``on_delivery`` (the transport's errors) and
    ``ack`` (the transport's own objects, turned into errors by the producer's ``delivery_error``)."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.reports: list[tuple[Exception | None, RecordMetadata | None]] = []
        self.acks: list[ConnectError | None] = []

    def on_delivery(self, error: Exception | None, metadata: RecordMetadata | None) -> None:
        self.reports.append((error, metadata))

    def ack(self, error: Any, report: Any) -> None:
        self.acks.append(None if error is None else self.producer.delivery_error(error, report))

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, **options: Any) -> Exception | None:
        """Send one record through each callback, each in a batch of its own (a real producer batches records sent
        together, and a broker measures the batch); return the error both report (``None`` when both stored it)."""
        self.producer.produce(topic, value, key, on_delivery=self.on_delivery, **options)
        assert self.producer.flush(FLUSH_MS) == 0
        self.producer.produce(topic, value, key, ack=self.ack, **options)
        assert self.producer.flush(FLUSH_MS) == 0
        (error, metadata), acked = self.reports[-1], self.acks[-1]
        assert (error is None) == (metadata is not None) == (acked is None)
        assert type(error) is type(acked) and str(error) == str(acked), "both callbacks report the same error"
        return error


def refused(error: Exception | None, expected: str) -> None:
    assert isinstance(error, ConnectError) and not isinstance(error, RetriableError), error
    assert str(error) == expected


def test_an_unkeyed_record_on_a_compacted_topic_is_refused_saying_it_needs_a_key(
    cluster: Cluster, unique_name: str
) -> None:
    topic = cluster.create_topic(unique_name, {"cleanup.policy": "compact"})
    deliveries = Deliveries(cluster.producer())
    error = deliveries.send(topic, b"beat")
    refused(error, needs_key(INVALID_RECORD, topic))
    assert f"record to topic {topic!r} needs a key: the topic is compacted" in str(error)
    refused(deliveries.send(topic, None), needs_key(INVALID_RECORD, topic))  # a tombstone needs one too
    assert deliveries.send(topic, b"beat", b"k") is None, "the producer goes on after a refusal"
    assert deliveries.send(topic, None, b"k") is None
    assert [(m.key, m.value) for m in cluster.read(topic)] == [(b"k", b"beat")] * 2 + [(b"k", None)] * 2


def test_a_record_over_its_topics_max_message_bytes_is_refused_by_the_broker(
    cluster: Cluster, unique_name: str
) -> None:
    topic = cluster.create_topic(unique_name, {"max.message.bytes": "200"})
    deliveries = Deliveries(cluster.producer())
    assert batch_size(None, b"x" * 130) == 200
    assert deliveries.send(topic, b"x" * 130) is None, "a batch of exactly max.message.bytes is taken"
    refused(deliveries.send(topic, b"x" * 131), too_large_for_topic(TOO_LARGE_FOR_BROKER, topic, 201))
    key, headers = b"k" * 10, [("trace", b"abc"), ("none", None)]
    value = next(n for n in range(200) if batch_size(key, b"v" * (n + 1), headers) > 200)
    assert batch_size(key, b"v" * value, headers) == 200
    assert deliveries.send(topic, b"v" * value, key, headers=headers) is None
    without_headers = batch_size(key, b"v" * (value + 1))  # a delivery report carries no headers to count
    refused(
        deliveries.send(topic, b"v" * (value + 1), key, headers=headers),
        too_large_for_topic(TOO_LARGE_FOR_BROKER, topic, without_headers),
    )
    assert [len(m.value or b"") for m in cluster.read(topic)] == [130, 130, value, value]


def test_a_topic_without_max_message_bytes_takes_the_brokers_default(cluster: Cluster, unique_name: str) -> None:
    topic = cluster.create_topic(unique_name)
    deliveries = Deliveries(cluster.producer({"message.max.bytes": 2 * PRODUCER_MAX_MESSAGE_BYTES}))
    near = range(BROKER_MAX_MESSAGE_BYTES - 100, BROKER_MAX_MESSAGE_BYTES)
    largest = next(n for n in near if batch_size(None, b"x" * (n + 1)) > BROKER_MAX_MESSAGE_BYTES)
    assert batch_size(None, b"x" * largest) == BROKER_MAX_MESSAGE_BYTES
    assert deliveries.send(topic, b"x" * largest) is None
    too_large = batch_size(None, b"x" * (largest + 1))
    refused(deliveries.send(topic, b"x" * (largest + 1)), too_large_for_topic(TOO_LARGE_FOR_BROKER, topic, too_large))


def test_a_record_over_the_producers_message_max_bytes_is_refused_when_produced(
    cluster: Cluster, unique_name: str
) -> None:
    topic = cluster.create_topic(unique_name)
    small = cluster.producer({"message.max.bytes": 1000})
    small.produce(topic, b"x" * 964)  # 36 bytes of librdkafka's largest record overhead, then the value
    with pytest.raises(ConnectError) as caught:
        small.produce(topic, b"x" * 965)
    refused(caught.value, too_large_for_producer(TOO_LARGE_FOR_PRODUCER, topic, 1001, 1000))
    headers = [("ab", b"cde")]  # 1 + 2 + 1 + 3 bytes
    small.produce(topic, b"x" * 947, b"k" * 10, headers=headers)
    with pytest.raises(ConnectError) as caught:
        small.produce(topic, b"x" * 948, b"k" * 10, headers=headers)
    refused(caught.value, too_large_for_producer(TOO_LARGE_FOR_PRODUCER, topic, 1001, 1000))
    with pytest.raises(ConnectError) as caught:
        small.produce_all(topic, [b"a", b"x" * 965], None, None, None, lambda error, report: None)
    refused(caught.value, too_large_for_producer(TOO_LARGE_FOR_PRODUCER, topic, 1001, 1000))
    assert small.flush(FLUSH_MS) == 0

    default = cluster.producer()
    default.produce(topic, b"x" * (PRODUCER_MAX_MESSAGE_BYTES - 36))
    with pytest.raises(ConnectError, match=r"over the producer's message\.max\.bytes"):
        default.produce(topic, b"x" * (PRODUCER_MAX_MESSAGE_BYTES - 35))
    assert default.flush(FLUSH_MS) == 0
    assert [len(m.value or b"") for m in cluster.read(topic)] == [964, 947, 1, PRODUCER_MAX_MESSAGE_BYTES - 36]


def test_a_record_to_a_missing_topic_is_refused_while_topics_are_not_created_on_first_use(
    cluster: Cluster, unique_name: str
) -> None:
    producer = cluster.producer(create_topics=False)
    deliveries = Deliveries(producer)
    producer.produce(unique_name, b"v", on_delivery=deliveries.on_delivery)
    assert producer.flush(FLUSH_MS) == 0
    [(error, _)] = deliveries.reports
    refused(error, unknown_topic(UNKNOWN_TOPIC, unique_name))
    assert "topic" in str(error) and "create it first" in str(error)
    with pytest.raises(ConnectError) as caught:  # librdkafka knows it is missing now: refused at once
        producer.produce(unique_name, b"v", ack=deliveries.ack)
    refused(caught.value, unknown_topic(KNOWN_MISSING_TOPIC, unique_name))
    assert unique_name not in cluster.topics()


@pytest.mark.parametrize(
    ("partitions", "config", "reason"),
    [
        (0, {}, "Number of partitions was set to an invalid non-positive value."),
        (1, {"no.such.config": "x"}, "Unknown topic config name: no.such.config"),
        (1, {"cleanup.policy": "keep"}, "Invalid value keep for configuration cleanup.policy: String must be one of"),
    ],
)
def test_a_topic_the_controller_will_not_create_is_refused_in_its_words(
    cluster: Cluster, unique_name: str, partitions: int, config: dict[str, str], reason: str
) -> None:
    admin = cluster.transport.admin()
    with pytest.raises(ConnectError) as refused:
        admin.create_topics([NewTopic(unique_name, partitions, 1, config)])
    assert str(refused.value).startswith(f"cannot create topic {unique_name}: {reason}")
    assert admin.describe_topics([unique_name]) == {}
    admin.create_topics([NewTopic(unique_name, -1, -1)])  # the broker's defaults
    assert admin.describe_topics([unique_name, f"{unique_name}-missing"]) == {unique_name: 1}
