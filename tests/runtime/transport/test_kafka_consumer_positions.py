"""KafkaConsumer's start positions while a new partition's leader is being elected (no broker needed: librdkafka's
consumer is replaced by a stand-in that answers like a broker with a moving leader)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from headwater.runtime.transport.kafka import KafkaConsumer
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition

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
