"""The mirror task over a stand-in consumer: where it resumes, what it hands on, its heartbeats and its commits to
the source group; then the connector and task inside the simulated worker, on its virtual clock."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, KafkaError
from confluent_kafka import TopicPartition as RdTopicPartition

import headwater.reference_connectors.kafka_mirror.connector as connector_module
import headwater.reference_connectors.kafka_mirror.task as task_module
from headwater.harness import SimulatedWorker
from headwater.reference_connectors.kafka_mirror import (
    TASK_PARTITIONS,
    KafkaMirrorSourceConnector,
    KafkaMirrorSourceTask,
    LeaderTopicPartition,
    source_partition,
)
from headwater.runtime.clock import VirtualClock
from headwater.sdk import (
    ConnectError,
    OffsetStorageReader,
    SourceOffset,
    SourcePartition,
    SourceTaskContext,
)

CONFIG = {
    "name": "mirror",
    "source.bootstrap.servers": "source:9092",
    "source.topic.whitelist": "orders.*",
    "source.group.id": "lag",
}


class Message:
    """What ``Consumer.consume`` returns, for one record or one error."""

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        value: bytes | None = b"v",
        key: bytes | None = None,
        timestamp: tuple[int, int] = (1, 1_700_000_000_000),
        headers: list[tuple[str, bytes | None]] | None = None,
        error: KafkaError | None = None,
    ) -> None:
        self._fields = (topic, partition, offset, value, key, timestamp, headers, error)

    def topic(self) -> str:
        return self._fields[0]  # type: ignore[return-value]

    def partition(self) -> int:
        return self._fields[1]  # type: ignore[return-value]

    def offset(self) -> int:
        return self._fields[2]  # type: ignore[return-value]

    def value(self) -> Any:
        return self._fields[3]

    def key(self) -> Any:
        return self._fields[4]

    def timestamp(self) -> Any:
        return self._fields[5]

    def headers(self) -> Any:
        return self._fields[6]

    def error(self) -> Any:
        return self._fields[7]


class FakeConsumer:
    """Consumes from ``queue``; positions are set by the test (librdkafka's are past skipped offsets too)."""

    made: ClassVar[list[FakeConsumer]] = []

    def __init__(self) -> None:
        self.assigned: list[tuple[str, int, int]] = []
        self.queue: list[Message] = []
        self.positions: dict[tuple[str, int], int] = {}
        self.commits: list[tuple[list[tuple[str, int, int]], bool]] = []
        self.closed = False
        FakeConsumer.made.append(self)

    def assign(self, partitions: list[RdTopicPartition]) -> None:
        self.assigned = [(p.topic, p.partition, p.offset) for p in partitions]

    def consume(self, count: int, timeout: float) -> list[Message]:
        taken, self.queue = self.queue[:count], self.queue[count:]
        return taken

    def position(self, partitions: list[RdTopicPartition]) -> list[RdTopicPartition]:
        return [
            RdTopicPartition(p.topic, p.partition, self.positions.get((p.topic, p.partition), OFFSET_INVALID))
            for p in partitions
        ]

    def commit(self, offsets: list[RdTopicPartition], asynchronous: bool) -> None:
        self.commits.append(([(p.topic, p.partition, p.offset) for p in offsets], asynchronous))

    def close(self) -> None:
        self.closed = True


class Reader(OffsetStorageReader):
    def __init__(self, stored: Mapping[tuple[str, int], int]) -> None:
        self.stored = {json.dumps(source_partition(*k)): {"offset": v} for k, v in stored.items()}

    def offsets(self, partitions: Sequence[SourcePartition]) -> list[tuple[SourcePartition, SourceOffset | None]]:
        return [(p, self.stored.get(json.dumps(dict(p)))) for p in partitions]


class Context(SourceTaskContext):
    def __init__(self, config: Mapping[str, str], reader: OffsetStorageReader) -> None:
        self.config, self.clock, self.offset_storage_reader = config, VirtualClock(), reader


@pytest.fixture(autouse=True)
def fake_consumer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    FakeConsumer.made = []
    monkeypatch.setattr(task_module, "make_consumer", lambda config: FakeConsumer())
    yield


def start_task(
    partitions: str = "1:orders:0,1:orders:1", stored: Mapping[tuple[str, int], int] | None = None, **extra: str
) -> tuple[KafkaMirrorSourceTask, FakeConsumer]:
    config = {**CONFIG, TASK_PARTITIONS: partitions, **{k.replace("_", "."): v for k, v in extra.items()}}
    task = KafkaMirrorSourceTask()
    task.initialize(Context(config, Reader(stored or {})))
    task.start(config)
    return task, FakeConsumer.made[-1]


def test_stored_partitions_resume_after_their_offset_and_others_follow_the_reset_policy() -> None:
    _, consumer = start_task(stored={("orders", 1): 41})
    assert consumer.assigned == [("orders", 0, OFFSET_BEGINNING), ("orders", 1, 42)]
    _, consumer = start_task(stored={("orders", 1): 41}, source_auto_offset_reset="latest")
    assert consumer.assigned == [("orders", 0, OFFSET_END), ("orders", 1, 42)]


def test_reset_none_fails_the_start_only_when_a_partition_has_no_stored_offset() -> None:
    with pytest.raises(ConnectError, match=r"orders-0 .*source.auto.offset.reset=none"):
        start_task(stored={("orders", 1): 41}, source_auto_offset_reset="none")
    _, consumer = start_task(stored={("orders", 0): 0, ("orders", 1): 5}, source_auto_offset_reset="none")
    assert [offset for _, _, offset in consumer.assigned] == [1, 6]


def test_a_malformed_stored_offset_fails_the_start() -> None:
    task = KafkaMirrorSourceTask()
    reader = Reader({})
    reader.stored[json.dumps(source_partition("orders", 0))] = {"offset": "12"}  # type: ignore[dict-item]
    task.initialize(Context(CONFIG, reader))
    with pytest.raises(ConnectError, match="is not"):
        task.start({**CONFIG, TASK_PARTITIONS: "1:orders:0"})


def test_records_keep_key_value_headers_and_timestamp_under_the_prefixed_topic() -> None:
    task, consumer = start_task(destination_topics_prefix="copy.")
    headers = [("trace", b"\x00\xff"), ("trace", None), ("k", b"")]
    consumer.queue = [
        Message("orders", 0, 7, b"\x01value", b"\x02key", (1, 1234), headers),
        Message("orders", 1, 3, None, None, (0, -1)),  # a tombstone with no timestamp
    ]
    first, second = task.poll() or []
    assert (first.topic, first.key, first.value, first.timestamp) == ("copy.orders", b"\x02key", b"\x01value", 1234)
    assert list(first.headers) == headers and first.partition is None  # the destination's partitioner chooses
    assert (first.source_partition, first.source_offset) == ({"topic": "orders", "partition": 0}, {"offset": 7})
    assert (second.value, second.key, second.timestamp, list(second.headers)) == (None, None, None, [])
    assert task.poll() is None


def test_headers_are_left_out_when_include_message_headers_is_false() -> None:
    task, consumer = start_task(include_message_headers="false")
    consumer.queue = [Message("orders", 0, 0, headers=[("h", b"1")])]
    (record,) = task.poll() or []
    assert list(record.headers) == []


def test_poll_returns_at_most_max_poll_records_and_deserializes_when_asked() -> None:
    task, consumer = start_task(source_max_poll_records="2", source_value_deserializer="string")
    consumer.queue = [Message("orders", 0, n, b"caf\xc3\xa9") for n in range(3)]
    assert [r.value for r in task.poll() or []] == ["café", "café"]
    assert [r.source_offset for r in task.poll() or []] == [{"offset": 2}]


def test_end_of_partition_and_retriable_errors_are_skipped_and_others_fail_the_task() -> None:
    task, consumer = start_task()
    consumer.queue = [
        Message("orders", 0, 0, error=KafkaError(KafkaError._PARTITION_EOF)),
        Message("orders", 0, 0, error=KafkaError(KafkaError._TRANSPORT, "down", retriable=True)),
        Message("orders", 0, 5),
    ]
    assert [r.source_offset for r in task.poll() or []] == [{"offset": 5}]
    consumer.queue = [Message("orders", 0, 0, error=KafkaError(KafkaError._AUTO_OFFSET_RESET, "out of range"))]
    with pytest.raises(ConnectError, match="out of range"):
        task.poll()


def test_heartbeats_move_an_idle_partition_to_the_consumers_position() -> None:
    task, consumer = start_task(stored={("orders", 0): 7, ("orders", 1): 3})
    consumer.positions = {("orders", 0): 10, ("orders", 1): 4}  # orders-0 passed 8 and 9: markers, say
    (beat,) = task.produce_heartbeat_records(topic="beats")
    assert (beat.topic, beat.source_partition, beat.source_offset) == (
        "beats",
        source_partition("orders", 0),
        {"offset": 9},
    )
    assert json.loads(beat.key) == {"connector": "mirror", "topic": "orders", "partition": 0}
    assert json.loads(beat.value) == {"offset": 9} and isinstance(beat.value, bytes)  # bytes converters pass it
    assert task.produce_heartbeat_records(topic="beats") == []  # nothing newer since
    consumer.queue = [Message("orders", 0, 10)]
    task.poll()
    consumer.positions[("orders", 0)] = 11
    assert task.produce_heartbeat_records(topic="beats") == []  # the record itself carried offset 10


def test_no_heartbeat_before_the_consumer_has_a_position_or_passed_anything() -> None:
    task, consumer = start_task()
    assert task.produce_heartbeat_records(topic="beats") == []
    consumer.positions = {("orders", 0): 0, ("orders", 1): 6}
    (beat,) = task.produce_heartbeat_records(topic="beats")
    assert beat.source_offset == {"offset": 5}


def test_committed_offsets_go_to_the_source_group_plus_one_and_only_for_own_partitions() -> None:
    task, consumer = start_task()
    task.offsets_committed(
        offsets=[
            (source_partition("orders", 0), {"offset": 9}),
            (source_partition("other", 0), {"offset": 1}),
            (source_partition("orders", 1), None),
        ]
    )
    assert consumer.commits == [([("orders", 0, 10)], True)]
    task.stop()
    assert consumer.commits[-1] == ([("orders", 0, 10)], False) and consumer.closed  # final commit waits


def test_nothing_is_committed_to_the_source_when_disabled() -> None:
    task, consumer = start_task(source_enable_auto_commit="false")
    task.offsets_committed(offsets=[(source_partition("orders", 0), {"offset": 9})])
    task.stop()
    assert consumer.commits == [] and consumer.closed


# ---- in the simulated worker -----------------------------------------------------------------------------------


class FakeSource:
    """The source cluster's matching partitions, as the connector's partition monitor sees them."""

    def __init__(self, *partitions: LeaderTopicPartition) -> None:
        self.partitions = frozenset(partitions)


@pytest.fixture
def source(monkeypatch: pytest.MonkeyPatch) -> FakeSource:
    found = FakeSource(LeaderTopicPartition(1, "orders", 0))
    monkeypatch.setattr(connector_module, "make_admin", lambda config: None)
    monkeypatch.setattr(connector_module, "fetch_partitions", lambda admin, whitelist, timeout: found.partitions)
    return found


def mirror_worker(worker: SimulatedWorker, **extra: Any) -> KafkaMirrorSourceConnector:
    worker.add_connector("mirror", KafkaMirrorSourceConnector, {**CONFIG, **extra})
    instance = worker.worker.connectors["mirror"].instance
    assert isinstance(instance, KafkaMirrorSourceConnector)
    return instance


def test_records_and_heartbeats_commit_through_the_worker(source: FakeSource, make_simulated_worker: Any) -> None:
    worker = make_simulated_worker({"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"})
    mirror_worker(worker, **{"heartbeat.interval.ms": 500, "destination.topics.prefix": "copy."})
    (consumer,) = FakeConsumer.made
    consumer.queue = [Message("orders", 0, n, b"v%d" % n, b"k", headers=[("h", b"\xff")]) for n in range(3)]
    consumer.positions = {("orders", 0): 5}  # offsets 3 and 4 hold transaction markers
    worker.advance(1_000)
    assert [(m.key, m.value, list(m.headers)) for m in worker.messages("copy.orders")] == [
        (b"k", b"v%d" % n, [("h", b"\xff")]) for n in range(3)
    ]
    worker.advance(60_000)  # the worker's offset flush interval
    worker.assert_source_offset("mirror", source_partition("orders", 0), {"offset": 4})
    assert ([("orders", 0, 5)], True) in consumer.commits  # the source group's lag reaches 0


def test_a_partition_change_reconfigures_into_min_of_tasks_max_and_partitions_tasks(
    source: FakeSource, make_simulated_worker: Any
) -> None:
    worker = make_simulated_worker()
    connector = mirror_worker(worker, **{"tasks.max": 3})
    assert connector.monitor is not None and len(worker.worker.tasks) == 1
    source.partitions = frozenset(LeaderTopicPartition(p % 2, "orders", p) for p in range(5))
    assert connector.monitor.check() is True
    worker.step()  # the herder serves the request
    assert len(worker.worker.tasks) == 3
    configs = [task.config[TASK_PARTITIONS] for task in worker.worker.tasks.values()]
    assert configs == ["0:orders:0,0:orders:2", "0:orders:4,1:orders:1", "1:orders:3"]
    assert [len(c.assigned) for c in FakeConsumer.made[1:]] == [2, 2, 1]
    assert FakeConsumer.made[0].closed  # the first task's consumer was closed when it was replaced
