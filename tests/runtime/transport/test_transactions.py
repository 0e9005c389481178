"""Transactions, shown by each test twice: on the in-memory broker and on a real one. What a transaction writes
reaches ``read_committed`` consumers when it commits, never when it aborts or its producer is fenced; a
``read_uncommitted`` consumer reads it at once; the markers ending transactions leave gaps in the offsets."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from headwater.runtime.transport.base import (
    ISOLATION_LEVEL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    Consumer,
    Message,
    NewTopic,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionalProducer,
    Transport,
)
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.runtime.transport.kafka.transactions import TRANSACTION_GAP_S
from headwater.runtime.transport.memory import MemoryTransport
from headwater.sdk.errors import RetriableError
from headwater.sdk.records import TopicPartition

TIMEOUT_MS = 30_000
QUIET_POLLS = 5
"""Polls (of up to 200 ms each on Kafka) a ``read_committed`` consumer makes to show it reads nothing more."""


@dataclass
class Cluster:
    transport: Transport
    topic: str
    producers: list[TransactionalProducer] = field(default_factory=list)
    consumers: list[Consumer] = field(default_factory=list)

    def producer(self, transactional_id: str) -> TransactionalProducer:
        made = self.transport.transactional_producer(transactional_id, {})
        self.producers.append(made)
        made.init_transactions(TIMEOUT_MS)
        return made

    def consumer(self, isolation: str) -> Consumer:
        made = self.transport.consumer(None, {ISOLATION_LEVEL: isolation})
        self.consumers.append(made)
        made.assign([TopicPartition(self.topic, 0)])
        return made


@pytest.fixture(params=["memory", pytest.param("kafka", marks=pytest.mark.kafka)])
def cluster(request: pytest.FixtureRequest, unique_name: str) -> Iterator[Cluster]:
    transport: Transport = (
        MemoryTransport()
        if request.param == "memory"
        else KafkaTransport(request.getfixturevalue("kafka_bootstrap"), {"topic.metadata.refresh.interval.ms": 1000})
    )
    transport.admin().create_topics([NewTopic(unique_name, 1, 1)])
    made = Cluster(transport, unique_name)
    yield made
    for consumer in made.consumers:
        consumer.close()
    for producer in made.producers:
        producer.close()


def send(producer: TransactionalProducer, topic: str, *values: bytes) -> None:
    for value in values:
        producer.produce(topic, value, b"key", partition=0)


def poll_until(consumer: Consumer, done: Callable[[list[Message]], bool]) -> list[Message]:
    """Poll ``consumer`` until ``done(messages so far)``; return the messages."""
    got: list[Message] = []
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not done(got):
        assert time.monotonic() < deadline, f"timed out with {[m.value for m in got]}"
        got += consumer.poll(100, 200)
    return got


def quiet(consumer: Consumer) -> list[Message]:
    """What ``consumer`` reads in :data:`QUIET_POLLS` polls."""
    return [message for _ in range(QUIET_POLLS) for message in consumer.poll(100, 200)]


def values(messages: list[Message]) -> list[bytes | None]:
    return [message.value for message in messages]


def test_committed_records_reach_read_committed_consumers_at_commit(cluster: Cluster) -> None:
    producer = cluster.producer(f"{cluster.topic}-tx")
    committed = cluster.consumer(READ_COMMITTED)
    uncommitted = cluster.consumer(READ_UNCOMMITTED)
    producer.begin()
    send(producer, cluster.topic, b"a", b"b")
    assert producer.flush(TIMEOUT_MS) == 0

    assert values(poll_until(uncommitted, lambda got: len(got) >= 2)) == [b"a", b"b"]
    assert quiet(committed) == []

    producer.commit(TIMEOUT_MS)
    assert values(poll_until(committed, lambda got: len(got) >= 2)) == [b"a", b"b"]


def test_aborted_records_never_reach_read_committed_consumers_and_leave_gaps(cluster: Cluster) -> None:
    producer = cluster.producer(f"{cluster.topic}-tx")
    uncommitted = cluster.consumer(READ_UNCOMMITTED)
    producer.begin()
    send(producer, cluster.topic, b"aborted-1", b"aborted-2")
    assert producer.flush(TIMEOUT_MS) == 0  # stored: librdkafka's abort drops records it has not sent yet
    producer.abort(TIMEOUT_MS)
    producer.begin()
    send(producer, cluster.topic, b"committed")
    producer.commit(TIMEOUT_MS)

    got = poll_until(cluster.consumer(READ_COMMITTED), lambda got: len(got) >= 1)
    assert values(got) == [b"committed"]
    # two aborted records and the abort marker come first; a read_uncommitted consumer still reads the aborted ones
    assert got[0].offset == 3
    seen = poll_until(uncommitted, lambda got: len(got) >= 3)
    assert [(m.offset, m.value) for m in seen] == [(0, b"aborted-1"), (1, b"aborted-2"), (3, b"committed")]
    assert quiet(uncommitted) == []


def test_a_newer_producer_with_the_same_id_fences_the_older_one(cluster: Cluster) -> None:
    older = cluster.producer(f"{cluster.topic}-tx")
    older.begin()
    send(older, cluster.topic, b"from-older")
    assert older.flush(TIMEOUT_MS) == 0

    newer = cluster.producer(f"{cluster.topic}-tx")
    with pytest.raises(ProducerFencedError):
        older.commit(TIMEOUT_MS)
    with pytest.raises(ProducerFencedError):
        older.begin()

    newer.begin()
    send(newer, cluster.topic, b"from-newer")
    newer.commit(TIMEOUT_MS)
    got = poll_until(cluster.consumer(READ_COMMITTED), lambda got: len(got) >= 1)
    assert values(got) == [b"from-newer"]


def test_a_transaction_with_a_refused_record_must_be_aborted(cluster: Cluster) -> None:
    small = f"{cluster.topic}-small"
    cluster.transport.admin().create_topics([NewTopic(small, 1, 1, {"max.message.bytes": "1000"})])
    producer = cluster.producer(f"{cluster.topic}-tx")
    producer.begin()
    send(producer, cluster.topic, b"fits")
    producer.produce(small, b"x" * 2000, b"key", partition=0)
    producer.flush(TIMEOUT_MS)
    with pytest.raises(TransactionAbortableError):
        producer.commit(TIMEOUT_MS)
    producer.abort(TIMEOUT_MS)

    producer.begin()
    send(producer, cluster.topic, b"after")
    producer.commit(TIMEOUT_MS)
    assert values(poll_until(cluster.consumer(READ_COMMITTED), lambda got: len(got) >= 1)) == [b"after"]


@pytest.mark.kafka
def test_on_kafka_a_transaction_begins_no_sooner_than_the_gap_after_the_last_ended(
    kafka_bootstrap: str, unique_name: str
) -> None:
    """librdkafka retries an ``AddPartitionsToTxn`` refused with ``CONCURRENT_TRANSACTIONS`` (the last commit's
    markers not written yet) only after 20 ms: the Kafka producer paces transactions instead."""
    producer = KafkaTransport(kafka_bootstrap).transactional_producer(unique_name, {})
    try:
        producer.init_transactions(TIMEOUT_MS)
        for end in (producer.commit, producer.abort):
            producer.begin()
            end(TIMEOUT_MS)
            ended = time.monotonic()
            producer.begin()
            assert time.monotonic() - ended >= TRANSACTION_GAP_S, f"began too soon after {end.__name__}"
            producer.abort(TIMEOUT_MS)
    finally:
        producer.close()


def test_a_log_read_to_its_end_waits_for_a_transaction_open_below_a_committed_record(cluster: Cluster) -> None:
    """A log reads to the end the topic has (its high watermark), not to its last stable offset: a record another
    producer committed after a transaction that is still open must be read, else a starting exactly-once task
    reads its own committed offsets stale whenever a sibling task has a transaction open on the same offsets
    partition (Kafka Connect's ``KafkaBasedLog`` lists the end offsets ``read_uncommitted``, KIP-618). Until the
    open transaction ends the read fails, naming it; it never returns short. A log started meanwhile reads to the
    last stable offset only: a transaction a dead worker left open must not keep a worker from starting."""
    applied: list[tuple[bytes | None, bytes | None]] = []
    late: list[tuple[bytes | None, bytes | None]] = []
    log = cluster.transport.topic_log(cluster.topic, lambda key, value: applied.append((key, value)), timeout_ms=500)
    log.start()
    started_late = cluster.transport.topic_log(cluster.topic, lambda key, value: late.append((key, value)))
    try:
        sibling = cluster.producer(f"{cluster.topic}-sibling")
        sibling.begin()
        sibling.produce(cluster.topic, b"sibling's", b"sibling", partition=0)
        assert sibling.flush(TIMEOUT_MS) == 0
        task = cluster.producer(f"{cluster.topic}-task")
        task.begin()
        task.produce(cluster.topic, b"task's", b"task", partition=0)
        task.commit(TIMEOUT_MS)

        with pytest.raises(RetriableError, match=r"partition 0 .*open transaction"):  # a starting task tries again
            log.read_to_end(500)
        assert applied == []
        started_late.start()
        assert late == []

        sibling.commit(TIMEOUT_MS)
        log.read_to_end(TIMEOUT_MS)
        started_late.read_to_end(TIMEOUT_MS)
        assert applied == late == [(b"sibling", b"sibling's"), (b"task", b"task's")]
    finally:
        log.stop()
        started_late.stop()
