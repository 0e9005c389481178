"""Source offsets written through a transactional producer commit or abort with the records of its transaction: on
the in-memory broker and on a real one, the offsets store reads back only those of committed transactions."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from headwater.runtime.storage import KafkaOffsetStore
from headwater.runtime.transport.base import ProducerFencedError, TransactionalProducer, Transport
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.runtime.transport.memory import MemoryTransport

A = {"filename": "a.txt"}
B = {"filename": "b.txt"}
TIMEOUT_MS = 30_000


@pytest.fixture(params=["memory", pytest.param("kafka", marks=pytest.mark.kafka)])
def transport(request: pytest.FixtureRequest) -> Transport:
    if request.param == "memory":
        return MemoryTransport()
    return KafkaTransport(request.getfixturevalue("kafka_bootstrap"))


@pytest.fixture
def stores(transport: Transport, unique_name: str) -> Iterator[list[KafkaOffsetStore]]:
    """Two offset stores on this test's offsets topic (3 partitions), started."""
    made = [KafkaOffsetStore(transport, f"{unique_name}-offsets", partitions=3, timeout_ms=TIMEOUT_MS) for _ in "ab"]
    for store in made:
        store.start()
    yield made
    for store in made:
        store.stop()


@pytest.fixture
def producers(transport: Transport, unique_name: str) -> Iterator[list[TransactionalProducer]]:
    """Transactional producers with this test's transactional id, made as the test asks (``producers.append``)."""
    made: list[TransactionalProducer] = []
    yield made
    for producer in made:
        producer.close()


def new_producer(
    transport: Transport, transactional_id: str, made: list[TransactionalProducer]
) -> TransactionalProducer:
    producer = transport.transactional_producer(transactional_id, {})
    made.append(producer)
    producer.init_transactions(TIMEOUT_MS)
    return producer


def read_back(store: KafkaOffsetStore, expected: list[tuple[dict[str, str], dict[str, int] | None]]) -> None:
    """Refresh ``store`` until it holds ``expected`` for connector ``conn``: Kafka writes a transaction's commit
    markers after ``commit`` returns, and a ``read_committed`` reader sees its records only then."""
    partitions = [partition for partition, _ in expected]
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while True:
        store.refresh()
        got = store.get("conn", partitions)
        if got == expected or time.monotonic() > deadline:
            break
    assert got == expected


def test_offsets_of_an_aborted_transaction_are_never_read_back(
    transport: Transport, stores: list[KafkaOffsetStore], producers: list[TransactionalProducer], unique_name: str
) -> None:
    writer, reader = stores
    producer = new_producer(transport, f"{unique_name}-tx", producers)
    producer.begin()
    producer.produce(unique_name, b"record-1", b"key")
    writer.send_in(producer, "conn", [(A, {"position": 1}), (B, {"position": 1})])
    assert producer.flush(TIMEOUT_MS) == 0
    producer.abort(TIMEOUT_MS)

    producer.begin()
    producer.produce(unique_name, b"record-2", b"key")
    writer.send_in(producer, "conn", [(A, {"position": 2})])
    producer.commit(TIMEOUT_MS)

    for store in (writer, reader):
        read_back(store, [(A, {"position": 2}), (B, None)])
    late = KafkaOffsetStore(transport, writer.log.topic, partitions=3, timeout_ms=TIMEOUT_MS)
    late.start()
    try:
        assert late.get("conn", [A, B]) == [(A, {"position": 2}), (B, None)]
    finally:
        late.stop()


def test_offsets_of_a_fenced_producer_are_never_read_back(
    transport: Transport, stores: list[KafkaOffsetStore], producers: list[TransactionalProducer], unique_name: str
) -> None:
    writer, reader = stores
    older = new_producer(transport, f"{unique_name}-tx", producers)
    older.begin()
    writer.send_in(older, "conn", [(A, {"position": 1})])
    assert older.flush(TIMEOUT_MS) == 0

    newer = new_producer(transport, f"{unique_name}-tx", producers)
    with pytest.raises(ProducerFencedError):
        older.commit(TIMEOUT_MS)
    newer.begin()
    writer.send_in(newer, "conn", [(B, {"position": 7})])
    newer.commit(TIMEOUT_MS)

    read_back(reader, [(A, None), (B, {"position": 7})])
