"""The confluent-kafka consumer: on a real broker, rebalances wired to the listener, seeks during assignment, pause
and commits; without one (librdkafka's consumer replaced by stand-ins), start positions while a new partition's
leader is being elected, and a failed position lookup in the assign callback."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from headwater.runtime.transport.kafka import KafkaConsumer, KafkaTransport
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition
from support.kafka_clients import Listener, poll_until, produce


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


TP = TopicPartition("t", 0)


class MovingLeader:
    """Answers ``failures`` watermark requests with ``code``, then (3, 9)."""

    def __init__(self, failures: int, code: int) -> None:
        self.failures, self.code, self.calls = failures, code, 0

    def get_watermark_offsets(self, partition: Any, timeout: float) -> tuple[int, int]:
        self.calls += 1
        if self.calls <= self.failures:
            raise KafkaException(KafkaError(self.code))
        return 3, 9


@pytest.fixture
def consumer() -> Any:
    made = KafkaConsumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "auto.offset.reset": "latest"})
    real = made._consumer
    yield made
    real.close()


def test_watermarks_are_asked_again_while_the_leader_is_elected(consumer: Any) -> None:
    consumer._consumer = stand_in = MovingLeader(2, KafkaError.NOT_LEADER_FOR_PARTITION)
    assert consumer._watermarks(TP) == (3, 9)
    assert stand_in.calls == 3


def test_other_watermark_errors_are_raised_at_once_as_connect_errors(consumer: Any) -> None:
    consumer._consumer = stand_in = MovingLeader(1, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(ConnectError, match="TOPIC_AUTHORIZATION_FAILED"):
        consumer._watermarks(TP)
    assert stand_in.calls == 1


class CommittedTimesOut:
    """A consumer whose committed-offsets lookup times out; records what it was told to assign."""

    def __init__(self) -> None:
        self.assigned: list[Any] = []

    def committed(self, partitions: Any, timeout: float) -> Any:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get committed offsets: Local: Timed out"))

    def incremental_assign(self, partitions: Any) -> None:
        self.assigned.extend(partitions)


def test_a_failed_position_lookup_in_the_assign_callback_is_raised_by_the_next_poll(consumer: Any) -> None:
    """It must not escape the callback: confluent-kafka hands such an exception back from consume() as a bare
    KafkaError, which no ``except Exception`` in a task loop catches."""
    stand_in = CommittedTimesOut()
    from confluent_kafka import TopicPartition as RdTopicPartition

    consumer._consumer = stand_in
    consumer._on_assign(stand_in, [RdTopicPartition("t", 0)])
    assert [(p.topic, p.partition, p.offset) for p in stand_in.assigned] == [("t", 0, RdTopicPartition("t", 0).offset)]
    consumer._consumer = type("NoRecords", (), {"consume": lambda self, n, timeout: []})()
    with pytest.raises(KafkaException, match="Failed to get committed offsets"):
        consumer.poll(10, 0)
