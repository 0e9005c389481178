"""What the store tests share: the implementations a contract test runs against, stores started for a test and
stopped after it, raw records written as a Java worker writes them, and the checks every store makes alike.

A test module names its Kafka store in ``kafka_store(bootstrap, topic, **options)``, which :func:`kafka_stores`
calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

import pytest
from confluent_kafka import Producer

from headwater.harness.kafka_worker import RawRecords
from headwater.runtime.transport.memory import key_partition
from headwater.sdk.errors import ConnectError

KAFKA = pytest.param("kafka", marks=pytest.mark.kafka)
"""The Kafka implementation among a contract test's parameters: it needs the run's broker."""


class Store(Protocol):
    """What every store has: :meth:`start` and :meth:`stop`."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


StoreT = TypeVar("StoreT", bound=Store)
Started = Callable[[StoreT], StoreT]


def contract_store(request: pytest.FixtureRequest, **others: Callable[[], StoreT]) -> StoreT:
    """The implementation that ``request.param`` names, started and stopped after the test: for ``kafka`` one of
    :func:`kafka_stores` (asked for only then, so that the others need no broker), the others made by ``others``
    by name."""
    if request.param == "kafka":
        store: StoreT = request.getfixturevalue("kafka_stores")()
        return store
    started: Started[StoreT] = request.getfixturevalue("started")
    return started(others[request.param]())


@pytest.fixture
def started() -> Iterator[Started[Store]]:
    """Starts each store handed to it and returns it; stops them all after the test, in the order started."""
    stores: list[Store] = []

    def start(store: StoreT) -> StoreT:
        stores.append(store)
        store.start()
        return store

    yield start
    for store in stores:
        store.stop()


@pytest.fixture
def kafka_stores(
    request: pytest.FixtureRequest, kafka_bootstrap: str, unique_name: str, started: Started[Store]
) -> Callable[..., Store]:
    """Makes stores of the test module's ``kafka_store`` on the run's broker and this test's topic, each with the
    options it is given, started; all stopped after the test."""
    kafka_store = request.module.kafka_store

    def make(**options: Any) -> Store:
        return started(kafka_store(kafka_bootstrap, unique_name, **options))

    return make


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    """Write raw records to ``topic``, each to the partition a Java producer picks (murmur2 of the key)."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key, value in records:
        producer.produce(topic, value, key)
    assert producer.flush(10) == 0


def assert_on_java_partitions(
    raw_records: RawRecords, topic: str, records: list[tuple[bytes, bytes | None]], partitions: int = 3
) -> None:
    """``topic`` (``partitions`` of them) holds ``records``, each on the partition a Java producer picks (murmur2 of
    its key), in order within each, and they cover more than one partition."""
    expected = sorted(((key_partition(key, partitions), key, value) for key, value in records), key=lambda r: r[0])
    assert raw_records(topic) == expected
    assert len({partition for partition, _, _ in expected}) > 1, "the keys cover more than one partition"


def run_in_threads(target: Callable[[int], None], threads: int) -> None:
    """Run ``target(0)`` ... ``target(threads - 1)`` at once, each in its own thread, and wait until all end."""
    running = [threading.Thread(target=target, args=(thread,)) for thread in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in running)


def assert_start_times_out(store_class: Callable[..., StoreT], topic: str) -> StoreT:
    """Asserts that a ``store_class`` store of ``topic`` with ``timeout_ms=1_000``, on bootstrap servers where no
    broker listens, fails to start within that second, naming the cluster, the topic and the timeout; returns it."""
    store = store_class("127.0.0.1:1", topic, timeout_ms=1_000)
    started = time.monotonic()
    with pytest.raises(ConnectError, match=rf"127\.0\.0\.1:1 \(topic '{topic}'\) within 1000 ms"):
        store.start()
    assert time.monotonic() - started < 30  # the 1 s timeout is honoured, not the default 30 s one
    return store
