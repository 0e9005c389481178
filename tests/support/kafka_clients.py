"""Helpers for tests of the Kafka transport's clients on a real broker: a listener that records rebalances,
records produced and waited for, consumers polled until they have what a test needs."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from functools import partial

from headwater.runtime.transport.base import Message, RecordMetadata
from headwater.runtime.transport.kafka import KafkaConsumer, KafkaTransport
from headwater.sdk.records import TopicPartition


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
