"""The simulated worker's loops, stepped on its virtual clock, against a real Kafka broker.

Everything a :class:`~headwater.harness.simulated.SimulatedWorker` test reads (topics, committed group offsets)
is read back from the broker, so the same test code checks the same guarantee on both transports. Two things
differ from memory, both on purpose: after each pass of the task loops the source producers are flushed, so a
record's acknowledgement is in before the next pass (as the in-memory broker delivers it at the next pass), and a
sink's consumer waits at most ``poll_cap_ms`` of real time per poll whatever the virtual timeout. Records reach a
sink after real network time, so tests on sinks wait with ``run_until`` rather than a fixed ``advance``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from headwater.harness.simulated import SimulatedWorker
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transport.base import Message, NewTopic, RebalanceListener
from headwater.runtime.transport.kafka import KafkaAdmin, KafkaConsumer, KafkaProducer, KafkaTransport
from headwater.sdk.records import TopicPartition

TIMEOUT_S = 30

RawRecords = Callable[[str], list[tuple[int, bytes | None, bytes | None]]]
"""``raw_records(topic)``: every record of a topic as (partition, key, value), partition by partition."""


class KafkaInspector:
    """Reads a real cluster the way tests look at the in-memory broker: whole topics, committed group offsets."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.admin = AdminClient({"bootstrap.servers": bootstrap_servers})

    def topics(self) -> dict[str, int]:
        """Every topic but the broker's own, with its number of partitions."""
        found = self.admin.list_topics(timeout=TIMEOUT_S).topics
        return {name: len(t.partitions) for name, t in found.items() if not name.startswith("__")}

    def topic_config(self, topic: str) -> dict[str, str]:
        resource = ConfigResource(ResourceType.TOPIC, topic)
        entries = self.admin.describe_configs([resource])[resource].result(timeout=TIMEOUT_S)
        return {name: entry.value for name, entry in entries.items() if entry.value is not None}

    def partitions(self, topic: str) -> list[int]:
        # not list_topics(topic): a metadata request naming a missing topic creates it on brokers that auto-create
        found = self.admin.list_topics(timeout=TIMEOUT_S).topics.get(topic)
        return [] if found is None or found.error is not None else sorted(found.partitions)

    def messages(self, topic: str) -> list[Message]:
        """Every record of ``topic`` as of now, partition by partition, each in offset order, as a ``read_committed``
        consumer reads them (records of open or aborted transactions left out)."""
        partitions = self.partitions(topic)
        if not partitions:
            return []
        consumer = RdConsumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"headwater-inspector-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                # a fetch position the broker rejects starts over at the first record, not after the last
                "auto.offset.reset": "earliest",
            }
        )
        try:
            ends, starts = {}, {}
            for partition in partitions:
                low, high = consumer.get_watermark_offsets(RdTopicPartition(topic, partition), timeout=TIMEOUT_S)
                if high > low:  # read from offset 0: an offset before the log start resets to it (earliest)
                    ends[partition], starts[partition] = high, 0
            consumer.assign([RdTopicPartition(topic, p, starts[p]) for p in ends])
            errors: list[str] = []
            found: dict[int, list[Message]] = {p: [] for p in partitions}
            remaining = dict(ends)
            deadline = time.monotonic() + TIMEOUT_S
            while remaining:
                if time.monotonic() > deadline:
                    read = sum(len(found[p]) for p in partitions)
                    total = sum(ends[p] - starts[p] for p in ends)
                    seen = f"; errors: {errors[-3:]}" if errors else ""
                    raise TimeoutError(f"read {read} of the {total} records of {topic} in {TIMEOUT_S} s{seen}")
                batch = consumer.consume(500, 1.0)
                if not batch:  # a partition may end with markers of transactions: its position passes them
                    at = consumer.position([RdTopicPartition(topic, p) for p in remaining])
                    for position in at:
                        if position.offset >= remaining[position.partition]:
                            remaining.pop(position.partition)
                    continue
                for item in batch:
                    if item.error() is not None:
                        errors.append(str(item.error()))
                        continue
                    partition, offset = cast(int, item.partition()), cast(int, item.offset())
                    _kind, stamp = item.timestamp()
                    headers = cast("list[tuple[str, bytes | None]] | None", item.headers())
                    found[partition].append(
                        Message(topic, partition, offset, item.key(), item.value(), stamp, headers or ())
                    )
                    if offset + 1 >= remaining.get(partition, 0):
                        remaining.pop(partition, None)
            return [m for p in partitions for m in found[p]]
        finally:
            consumer.close()

    def committed(self, group: str) -> dict[TopicPartition, int]:
        """The offsets ``group`` has committed, for every partition it committed one."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        futures = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
        result = futures[group].result(timeout=TIMEOUT_S)
        return {
            TopicPartition(p.topic, p.partition): int(p.offset)
            for p in result.topic_partitions
            if p.error is None and p.offset >= 0
        }

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        KafkaAdmin({"bootstrap.servers": self.bootstrap_servers}).create_topics(
            [NewTopic(name, partitions, 1, dict(config or {}))]
        )


class _CappedConsumer:
    """A Kafka consumer whose polls wait at most ``cap_ms`` of real time."""

    def __init__(self, consumer: KafkaConsumer, cap_ms: int) -> None:
        self._consumer = consumer
        self._cap_ms = cap_ms

    def poll(self, max_records: int, timeout_ms: int) -> Sequence[Message]:
        return self._consumer.poll(max_records, min(timeout_ms, self._cap_ms))

    def subscribe(self, topics: Sequence[str], listener: RebalanceListener) -> None:
        self._consumer.subscribe(topics, listener)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)


class _SteppedKafkaTransport(KafkaTransport):
    """Kafka clients for a stepped worker: capped consumer polls, and every producer remembered for flushing."""

    def __init__(self, bootstrap_servers: str, cap_ms: int) -> None:
        super().__init__(bootstrap_servers, {"topic.metadata.refresh.interval.ms": 1000})
        self.cap_ms = cap_ms

    def consumer(self, group_id: str | None, config: Mapping[str, Any]) -> KafkaConsumer:
        capped: Any = _CappedConsumer(super().consumer(group_id, {"session.timeout.ms": 10_000, **config}), self.cap_ms)
        return capped  # type: ignore[no-any-return]  # duck-typed: the loops need only the Consumer protocol


class KafkaSteppedWorker(SimulatedWorker):
    """A :class:`SimulatedWorker` whose transport is a real Kafka cluster (see the module docstring)."""

    def __init__(
        self,
        bootstrap_servers: str,
        config: Mapping[str, Any] | None = None,
        *,
        tick_ms: int = 10,
        partitions: int = 1,
        plugins: Sequence[object] = (),
        poll_cap_ms: int = 20,
    ) -> None:
        self.inspector = KafkaInspector(bootstrap_servers)
        super().__init__(
            config,
            tick_ms=tick_ms,
            partitions=partitions,
            plugins=plugins,
            transport=_SteppedKafkaTransport(bootstrap_servers, poll_cap_ms),
            broker=self.inspector,
        )

    def step(self) -> bool:
        progressed = super().step()
        for task in list(self.worker.tasks.values()):
            if not isinstance(task, WorkerSourceTask):
                continue
            producer = getattr(task.producer, "inner", task.producer)  # under HeartbeatsFirst: its producer
            if isinstance(producer, KafkaProducer):
                producer.flush(TIMEOUT_S * 1000)
        return progressed

    def __repr__(self) -> str:
        """The simulated worker's state without its topics: the broker is shared by every test of a session, and
        counting the records of all its topics (hundreds) takes minutes, which a failing assertion's report would."""
        tasks = ", ".join(repr(t) for t in self.worker.tasks.values()) or "no tasks"
        return (
            f"KafkaSteppedWorker(now_ms={self.clock.now_ms()}, bootstrap={self.inspector.bootstrap_servers}, "
            f"connectors={self.herder.connectors()}, tasks=[{tasks}])"
        )
