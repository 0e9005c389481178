"""The confluent-kafka transport on a real broker: acknowledgements, Java-compatible partitioning, rebalances wired
to the listener, seeks during assignment, pause, commits, the admin client, and a refused batch's errors (what both
transports refuse is in test_refusals.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from functools import partial
from typing import Any

import pytest

from headwater.runtime.transport.base import Message, NewTopic, QueueFullError, RecordMetadata
from headwater.runtime.transport.kafka import KafkaConsumer, KafkaTransport
from headwater.runtime.transport.memory import key_partition
from headwater.runtime.transport.refusals import INVALID_RECORD, invalid_batch, needs_key
from headwater.sdk.errors import ConfigError, ConnectError
from headwater.sdk.records import SinkRecord, TopicPartition

pytestmark = pytest.mark.kafka


@pytest.fixture
def transport(kafka_bootstrap: str) -> KafkaTransport:
    return KafkaTransport(kafka_bootstrap, {"topic.metadata.refresh.interval.ms": 1000})


@pytest.fixture
def topic(transport: KafkaTransport, unique_name: str) -> str:
    transport.admin().create_topics([NewTopic(unique_name, 3, 1)])
    return unique_name


class Listener:
    def __init__(self) -> None:
        self.events: list[tuple[str, list[TopicPartition]]] = []
        self.on_assign: Callable[[Collection[TopicPartition]], None] | None = None

    def on_partitions_assigned(self, partitions: Collection[TopicPartition]) -> None:
        self.events.append(("assigned", sorted(partitions)))
        if self.on_assign is not None:
            self.on_assign(partitions)

    def on_partitions_revoked(self, partitions: Collection[TopicPartition]) -> None:
        self.events.append(("revoked", sorted(partitions)))

    def on_partitions_lost(self, partitions: Collection[TopicPartition]) -> None:
        self.events.append(("lost", sorted(partitions)))


def produce(transport: KafkaTransport, topic: str, count: int, keyed: bool = False) -> list[RecordMetadata]:
    """``count`` records (to partition 0 unless ``keyed``); the metadata of each, in produce order."""
    producer = transport.producer({})
    acks: dict[int, RecordMetadata] = {}

    def ack(i: int, error: Exception | None, metadata: RecordMetadata | None) -> None:
        assert error is None and metadata is not None
        acks[i] = metadata

    for i in range(count):
        key, partition = (b"k%d" % i, None) if keyed else (None, 0)
        producer.produce(topic, b"v%d" % i, key, partition, None, None, partial(ack, i))
    assert producer.flush(30_000) == 0
    producer.close()
    return [acks[i] for i in range(count)]


def poll_until(
    consumers: list[KafkaConsumer], done: Callable[[list[Message]], bool], timeout_s: float = 30
) -> list[Message]:
    """Poll every consumer until ``done(messages so far)``; return the messages."""
    got: list[Message] = []
    deadline = time.monotonic() + timeout_s
    while not done(got):
        assert time.monotonic() < deadline, "timed out"
        for consumer in consumers:
            got += consumer.poll(500, 50)
    return got


@pytest.fixture
def consumers(transport: KafkaTransport) -> Iterator[list[KafkaConsumer]]:
    made: list[KafkaConsumer] = []
    yield made
    for consumer in made:
        consumer.close()


def test_delivery_callbacks_carry_where_each_record_landed(transport: KafkaTransport, topic: str) -> None:
    acks = produce(transport, topic, 5)
    assert [(m.topic, m.partition, m.offset) for m in acks] == [(topic, 0, i) for i in range(5)]


def test_keyed_records_land_where_the_java_partitioner_puts_them(transport: KafkaTransport, topic: str) -> None:
    acks = produce(transport, topic, 30, keyed=True)
    assert [m.partition for m in acks] == [key_partition(b"k%d" % i, 3) for i in range(30)]
    assert len({m.partition for m in acks}) == 3


def test_group_consumer_assigns_reads_and_commits(
    transport: KafkaTransport, topic: str, consumers: list[KafkaConsumer], unique_name: str
) -> None:
    produce(transport, topic, 6)
    listener = Listener()
    consumer = transport.consumer(unique_name, {})
    consumers.append(consumer)
    consumer.subscribe([topic], listener)
    got = poll_until(consumers, lambda got: len(got) >= 6)
    assert [m.value for m in got] == [b"v%d" % i for i in range(6)]
    assert listener.events[0] == ("assigned", [TopicPartition(topic, p) for p in range(3)])
    tp0 = TopicPartition(topic, 0)
    assert consumer.positions()[tp0] == 6
    done: list[tuple[Exception | None, dict[TopicPartition, int]]] = []
    consumer.commit({tp0: 4}, True, lambda error, offsets: done.append((error, dict(offsets))))
    poll_until(consumers, lambda _: bool(done))
    assert done == [(None, {tp0: 4})]
    assert consumer.committed([tp0]) == {tp0: 4}


def test_a_consumer_of_a_topic_not_created_yet_waits_for_it_instead_of_failing(
    kafka_bootstrap: str, unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    transport = KafkaTransport(kafka_bootstrap)  # the worker's settings: no faster metadata refresh
    consumer = transport.consumer(unique_name, {})
    try:
        consumer.subscribe([unique_name], Listener())
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # librdkafka reports the topic missing; that is no task failure
            assert list(consumer.poll(500, 100)) == []
        assert f"Subscribed topic not available: {unique_name}" in caplog.text
        assert caplog.text.count("Subscribed topic not available") == 1  # said once, not at every poll
        produce(transport, unique_name, 2)  # the broker creates it (auto.create.topics.enable, as by default)
        got = poll_until([consumer], lambda got: len(got) >= 2, timeout_s=60)
        assert [m.value for m in got] == [b"v0", b"v1"]
    finally:
        consumer.close()


def test_a_new_member_starts_from_the_committed_offset_and_a_seek_in_assign_wins(
    transport: KafkaTransport, topic: str, consumers: list[KafkaConsumer], unique_name: str
) -> None:
    produce(transport, topic, 6)
    tp0 = TopicPartition(topic, 0)
    first = transport.consumer(unique_name, {})
    first.assign([tp0])
    first.commit({tp0: 3}, False)
    first.close()
    listener = Listener()
    consumer = transport.consumer(unique_name, {})
    consumers.append(consumer)
    consumer.subscribe([topic], listener)
    got = poll_until(consumers, lambda got: len(got) >= 3)
    assert [m.offset for m in got] == [3, 4, 5]
    rewound = Listener()
    rewound.on_assign = lambda partitions: again.seek(tp0, 1)
    again = transport.consumer(f"{unique_name}-b", {})
    consumers.append(again)
    again.subscribe([topic], rewound)
    seen = poll_until([again], lambda got: len(got) >= 5)
    assert [m.offset for m in seen] == [1, 2, 3, 4, 5]


def test_partitions_being_assigned_are_in_the_assignment_while_the_listener_runs(
    transport: KafkaTransport, topic: str, consumers: list[KafkaConsumer], unique_name: str
) -> None:
    produce(transport, topic, 4)
    seen: list[frozenset[TopicPartition]] = []
    listener = Listener()
    listener.on_assign = lambda partitions: seen.append(consumer.assignment())
    consumer = transport.consumer(unique_name, {})
    consumers.append(consumer)
    consumer.subscribe([topic], listener)
    poll_until(consumers, lambda got: len(got) >= 4)
    assert seen == [frozenset(TopicPartition(topic, p) for p in range(3))]


def test_cooperative_rebalance_moves_some_partitions_and_revokes_only_those(
    transport: KafkaTransport, topic: str, consumers: list[KafkaConsumer], unique_name: str
) -> None:
    one, two = Listener(), Listener()
    first = transport.consumer(unique_name, {})
    consumers.append(first)
    first.subscribe([topic], one)
    poll_until(consumers, lambda _: len(first.assignment()) == 3)
    second = transport.consumer(unique_name, {})
    consumers.append(second)
    second.subscribe([topic], two)
    poll_until(consumers, lambda _: len(first.assignment() | second.assignment()) == 3 and bool(second.assignment()))
    revoked = [tps for kind, tps in one.events if kind == "revoked"]
    assert revoked and set(revoked[0]) == set(second.assignment()), "only what moved is revoked"
    assert not any(kind == "lost" for kind, _ in one.events)


def test_paused_partitions_are_not_fetched_until_resumed(
    transport: KafkaTransport, topic: str, consumers: list[KafkaConsumer], unique_name: str
) -> None:
    consumer = transport.consumer(unique_name, {})
    consumers.append(consumer)
    consumer.subscribe([topic], Listener())
    poll_until(consumers, lambda _: len(consumer.assignment()) == 3)
    consumer.pause(consumer.assignment())
    assert consumer.paused() == consumer.assignment()
    produce(transport, topic, 3)
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        assert list(consumer.poll(500, 50)) == []
    consumer.resume(consumer.assignment())
    assert len(poll_until(consumers, lambda got: len(got) >= 3)) == 3


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
    expected = SinkRecord(topic, 2, 0, b"k0", b"v0", 1_700_000_000_000, [("h", b"x"), ("n", None)])
    assert repr(first) == "KafkaRecord" + repr(expected).removeprefix("SinkRecord"), "repr reads the fields too"


def test_admin_creates_compacted_topics_and_lists_them(transport: KafkaTransport, unique_name: str) -> None:
    admin = transport.admin()
    admin.create_topics([NewTopic(unique_name, 2, 1, {"cleanup.policy": "compact"})])
    admin.create_topics([NewTopic(unique_name, 5, 1)])  # exists: left as it is
    assert admin.list_topics()[unique_name] == 2
    admin.delete_topics([unique_name])
    with pytest.raises(ConnectError, match=unique_name):
        admin.delete_topics([unique_name])


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


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(ConfigError, match=r"bootstrap\.servers"):
        KafkaTransport("")
