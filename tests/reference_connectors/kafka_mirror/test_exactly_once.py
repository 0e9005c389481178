"""The mirror under exactly-once source support (KIP-618): its answers (as Kafka's ``MirrorSourceConnector`` gives
them: supported only when the source consumer reads ``read_committed``, no connector-defined boundaries), the
consumer's isolation level, and a crash on the simulated cluster: the tasks resume from the offsets of their last
committed transaction, so a ``read_committed`` reader of the destination sees every source record exactly once,
while without the support the same crash leaves duplicates."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING
from confluent_kafka import TopicPartition as RdTopicPartition

import headwater.reference_connectors.kafka_mirror.connector as connector_module
import headwater.reference_connectors.kafka_mirror.task as task_module
from headwater.harness import SimulatedCluster
from headwater.reference_connectors.kafka_mirror import (
    TASK_PARTITIONS,
    KafkaMirrorSourceConnector,
    KafkaMirrorSourceTask,
    LeaderTopicPartition,
    MirrorConfig,
    source_partition,
)
from headwater.runtime.clock import VirtualClock
from headwater.runtime.herder.validation import DEFAULT_WORKER_CONFIG, validate_connector_config
from headwater.runtime.tasks.base import TaskId
from headwater.runtime.tasks.exactly_once_source import ExactlyOnceWorkerSourceTask
from headwater.sdk import ConfigError, ConnectorTransactionBoundaries, ExactlyOnceSupport

ENABLED_WORKER = {**DEFAULT_WORKER_CONFIG, "exactly.once.source.support": "enabled"}
CONFIG = {
    "name": "mirror",
    "source.bootstrap.servers": "source:9092",
    "source.topic.whitelist": "orders",
    "source.group.id": "lag",
}


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, ExactlyOnceSupport.SUPPORTED),
        ({"source.isolation.level": "read_committed"}, ExactlyOnceSupport.SUPPORTED),
        ({"source.isolation.level": "READ_COMMITTED"}, ExactlyOnceSupport.SUPPORTED),
        ({"source.isolation.level": "read_uncommitted"}, ExactlyOnceSupport.UNSUPPORTED),
        ({"connector.consumer.isolation.level": "read_uncommitted"}, ExactlyOnceSupport.UNSUPPORTED),
        (
            {"source.isolation.level": "read_uncommitted", "connector.consumer.isolation.level": "read_committed"},
            ExactlyOnceSupport.SUPPORTED,
        ),
    ],
)
def test_exactly_once_is_supported_only_when_the_source_consumer_reads_committed(
    settings: dict[str, str], expected: ExactlyOnceSupport
) -> None:
    connector = KafkaMirrorSourceConnector()
    assert connector.exactly_once_support({**CONFIG, **settings}) is expected
    assert MirrorConfig.parse({**CONFIG, **settings}).reads_committed is (expected is ExactlyOnceSupport.SUPPORTED)


def test_the_tasks_never_define_their_own_transactions() -> None:
    answer = KafkaMirrorSourceConnector().can_define_transaction_boundaries(CONFIG)
    assert answer is ConnectorTransactionBoundaries.UNSUPPORTED


def test_the_source_consumer_reads_committed_unless_told_otherwise() -> None:
    assert MirrorConfig.parse(CONFIG).consumer_config["isolation.level"] == "read_committed"
    told = MirrorConfig.parse({**CONFIG, "source.isolation.level": "read_uncommitted"})
    assert told.consumer_config["isolation.level"] == "read_uncommitted"
    assert "isolation.level" not in told.admin_config  # a consumer setting: the admin client would warn about it


def test_required_exactly_once_with_read_uncommitted_is_refused_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connector_module, "check_client_settings", lambda config: None)
    props = {**CONFIG, "exactly.once.support": "required", "source.isolation.level": "read_uncommitted"}
    with pytest.raises(ConfigError, match="read_committed") as raised:
        KafkaMirrorSourceConnector().validate(props)
    assert raised.value.key == "exactly.once.support"
    KafkaMirrorSourceConnector().validate({**props, "exactly.once.support": "requested"})  # not required: allowed

    infos = validate_connector_config({"connector.class": "kafka-mirror", **props}, ENABLED_WORKER)
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"] if c["value"]["errors"]}
    assert list(errors) == ["exactly.once.support"]
    (message,) = errors["exactly.once.support"]  # the mirror's reason, not the runtime's generic refusal
    assert "records of open transactions on the source cluster" in message
    committed = {**props, "source.isolation.level": "read_committed"}
    assert (
        validate_connector_config({"connector.class": "kafka-mirror", **committed}, ENABLED_WORKER)["error_count"] == 0
    )


def test_a_task_reading_uncommitted_warns_that_it_cannot_deliver_exactly_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(task_module, "make_consumer", lambda config: SourceConsumer(SourceLog({0: 0})))
    for level, warned in (("read_committed", False), ("read_uncommitted", True)):
        caplog.clear()
        config = {**CONFIG, TASK_PARTITIONS: "1:orders:0", "source.isolation.level": level}
        task = KafkaMirrorSourceTask()
        task.initialize(Context(config))
        with caplog.at_level(logging.WARNING, logger=task_module.__name__):
            task.start(config)
        task.stop()
        assert ("cannot deliver exactly once" in caplog.text) is warned, level


# ---- a crash on the simulated cluster -------------------------------------------------------------------------


class Message:
    """What ``Consumer.consume`` returns for one record."""

    def __init__(self, topic: str, partition: int, offset: int, value: bytes) -> None:
        self._topic, self._partition, self._offset, self._value = topic, partition, offset, value

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value

    def key(self) -> bytes:
        return b"k%d" % self._partition

    def timestamp(self) -> tuple[int, int]:
        return 1, 1_700_000_000_000

    def headers(self) -> None:
        return None

    def error(self) -> None:
        return None


class SourceLog:
    """Topic ``orders`` of the source cluster: ``counts`` records per partition, read by :class:`SourceConsumer`."""

    def __init__(self, counts: dict[int, int]) -> None:
        self.records = {p: [b"p%d-%06d" % (p, n) for n in range(count)] for p, count in counts.items()}
        self.consumers: list[SourceConsumer] = []

    @property
    def values(self) -> list[bytes]:
        return sorted(value for records in self.records.values() for value in records)


class SourceConsumer:
    """A manually assigned consumer of a :class:`SourceLog`; ``commits`` are its commits to the source group."""

    def __init__(self, log: SourceLog) -> None:
        self.log = log
        self.positions: dict[tuple[str, int], int] = {}
        self.commits: list[tuple[str, int, int]] = []
        self.closed = False
        log.consumers.append(self)

    def assign(self, partitions: list[RdTopicPartition]) -> None:
        for p in partitions:
            self.positions[(p.topic, p.partition)] = 0 if p.offset == OFFSET_BEGINNING else p.offset

    def consume(self, count: int, timeout: float) -> list[Message]:
        found: list[Message] = []
        for (topic, partition), position in sorted(self.positions.items()):
            taken = self.log.records[partition][position : position + count - len(found)]
            found.extend(Message(topic, partition, position + n, value) for n, value in enumerate(taken))
            self.positions[(topic, partition)] = position + len(taken)
        return found

    def position(self, partitions: list[RdTopicPartition]) -> list[RdTopicPartition]:
        return [RdTopicPartition(p.topic, p.partition, self.positions[(p.topic, p.partition)]) for p in partitions]

    def commit(self, offsets: list[RdTopicPartition], asynchronous: bool) -> None:
        self.commits.extend((p.topic, p.partition, p.offset) for p in offsets)

    def close(self) -> None:
        self.closed = True


class NoOffsets:
    def offsets(self, partitions: Any) -> list[tuple[Any, None]]:
        return [(p, None) for p in partitions]


class Context:
    def __init__(self, config: dict[str, str]) -> None:
        self.config, self.clock, self.offset_storage_reader = config, VirtualClock(), NoOffsets()


@pytest.fixture
def source(monkeypatch: pytest.MonkeyPatch) -> Iterator[SourceLog]:
    """Two partitions of 400 records each, the connector's partition monitor and task consumers reading them."""
    log = SourceLog({0: 400, 1: 400})
    partitions = frozenset(LeaderTopicPartition(1, "orders", p) for p in log.records)
    monkeypatch.setattr(connector_module, "make_admin", lambda config: None)
    monkeypatch.setattr(connector_module, "fetch_partitions", lambda admin, whitelist, timeout: partitions)
    monkeypatch.setattr(task_module, "make_consumer", lambda config: SourceConsumer(log))
    yield log


BYTES = {"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"}
TASK = TaskId("mirror", 0)


def running_on(cluster: SimulatedCluster) -> Any:
    """The live worker running the mirror's task, if one does."""
    return next((worker for worker in cluster.live if TASK in worker.tasks()), None)


def crash_mid_transaction(source: SourceLog, exactly_once: bool) -> tuple[Counter[bytes], Counter[bytes]]:
    """Two workers commit every 300 ms (with the support: a transaction per 300 ms); the worker running the task
    crashes 150 ms after a commit, while 5 records a step are sent; the other takes the task over. Returns how
    often each source value is in the destination as ``read_committed`` and as ``read_uncommitted`` readers see
    it."""
    support = "enabled" if exactly_once else "disabled"
    config = {**BYTES, "exactly.once.source.support": support, "offset.flush.interval.ms": "300"}
    cluster = SimulatedCluster(2, config, session_timeout_ms=3_000)
    boundary = {"transaction.boundary": "interval"} if exactly_once else {}
    props = {"connector.class": "kafka-mirror", **CONFIG, "source.max.poll.records": "5", **boundary}
    cluster.live[0].herder.put_connector_config("mirror", props)
    cluster.run_until(lambda: running_on(cluster) is not None, what="the task running")
    first = running_on(cluster)
    task = first.worker.tasks[TASK]
    assert isinstance(task, ExactlyOnceWorkerSourceTask) is exactly_once
    cluster.advance(450)
    consumer = source.consumers[-1]
    assert 0 < sum(consumer.positions.values()) < len(source.values), "the crash must come mid-stream"
    first.offset_store.refresh()
    stored = {
        p: offset["offset"] + 1
        for (partition, offset) in first.offset_store.get("mirror", [source_partition("orders", p) for p in (0, 1)])
        if offset is not None
        for p in [partition["partition"]]
    }
    ahead = [(p, at) for _, p, at in consumer.commits if at > stored.get(p, 0)]
    assert ahead == [], f"the source group ran ahead of the committed offsets {stored}"
    cluster.crash(first)

    def mirrored() -> bool:
        values = {m.value for m in cluster.broker.messages("orders", committed_only=True)}
        return len(values) == len(source.values)

    cluster.run_until(mirrored, timeout_ms=30_000, what="every source record mirrored")
    assert running_on(cluster) is not first
    for worker in cluster.live:
        worker.herder.stop()
    committed = Counter(m.value for m in cluster.broker.messages("orders", committed_only=True))
    uncommitted = Counter(m.value for m in cluster.broker.messages("orders"))
    return committed, uncommitted


def test_after_a_crash_a_read_committed_reader_sees_every_record_exactly_once_and_duplicates_without_support(
    source: SourceLog,
) -> None:
    committed, uncommitted = crash_mid_transaction(source, exactly_once=True)
    assert sorted(committed) == source.values
    assert [value for value, count in committed.items() if count > 1] == []
    assert any(count > 1 for count in uncommitted.values()), "the crashed transaction's records were sent again"

    source.consumers.clear()
    at_least_once, _ = crash_mid_transaction(source, exactly_once=False)
    assert sorted(at_least_once) == source.values
    assert any(count > 1 for count in at_least_once.values()), "without the support the crash leaves duplicates"
