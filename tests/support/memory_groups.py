"""Helpers for tests of the in-memory broker's consumer groups: a listener that records rebalances, topics filled
with records, members joined and polled."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from headwater.runtime.transport.memory import MemoryBroker, MemoryConsumer, MemoryProducer, MemoryTransport
from headwater.sdk.records import TopicPartition


class Listener:
    """Records rebalance callbacks as (kind, partitions) events; can be told to raise."""

    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[TopicPartition]]] = []
        self.raise_on: str | None = None
        self.on_revoked_hook: Any = None

    def _record(self, kind: str, partitions: Collection[TopicPartition]) -> None:
        self.events.append((kind, frozenset(partitions)))
        if self.raise_on == kind:
            raise RuntimeError(f"{kind} failed")

    def on_partitions_revoked(self, partitions: Collection[TopicPartition]) -> None:
        if self.on_revoked_hook is not None:
            self.on_revoked_hook(partitions)
        self._record("revoked", partitions)

    def on_partitions_assigned(self, partitions: Collection[TopicPartition]) -> None:
        self._record("assigned", partitions)

    def on_partitions_lost(self, partitions: Collection[TopicPartition]) -> None:
        self._record("lost", partitions)

    def take(self) -> list[tuple[str, frozenset[TopicPartition]]]:
        events, self.events = self.events, []
        return events


def tps(topic: str, *partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for p in partitions)


def fill(broker: MemoryBroker, topic: str, partitions: int, per_partition: int) -> None:
    broker.create_topic(topic, partitions)
    producer = MemoryProducer(broker.state, {})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, f"{p}:{i}".encode(), partition=p)
    producer.flush(0)


def member(
    broker: MemoryBroker, topics: list[str], group: str = "g", config: Mapping[str, Any] | None = None
) -> tuple[MemoryConsumer, Listener]:
    consumer = MemoryTransport(broker).consumer(group, config or {})
    listener = Listener()
    consumer.subscribe(topics, listener)
    return consumer, listener


def settle(*consumers: MemoryConsumer, rounds: int = 3) -> None:
    for _ in range(rounds):
        for consumer in consumers:
            consumer.poll(0, 0)
