"""The mirror on ``headwater distributed`` workers with ``exactly.once.source.support=enabled``, on the real broker
(source and destination topics on the same cluster): a worker is SIGKILLed while it mirrors a source that keeps
growing in transactions, another takes the task over from the offsets of its last committed transaction, and a
``read_committed`` reader of the destination finds every committed source record exactly once and none of an
aborted source transaction."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer

from headwater.harness.kafka_worker import KafkaInspector
from support.distributed_process import DistributedCluster
from support.rest_worker import wait_until

from .test_mirror_kafka import TIMEOUT_S, produce, records

pytestmark = pytest.mark.kafka

BYTES = {"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"}


def test_a_killed_workers_mirror_task_resumes_from_its_last_transaction_with_no_duplicate(
    tmp_path: Path, kafka_bootstrap: str, unique_name: str
) -> None:
    inspector = KafkaInspector(kafka_bootstrap)
    topic = f"{unique_name}-src"
    inspector.create_topic(topic)
    produce(kafka_bootstrap, topic, records(50, tag="plain"))  # not transactional
    aborted = f"{unique_name}-aborted"
    produce_aborted(kafka_bootstrap, topic, aborted)
    produced = 50
    stop = threading.Event()

    def keep_producing() -> None:  # the source grows, one committed transaction at a time, while the worker dies
        nonlocal produced
        while not stop.is_set():
            produce(kafka_bootstrap, topic, records(500, start=produced), transactional_id=f"{unique_name}-writer")
            produced += 500

    worker_props = {**BYTES, "exactly.once.source.support": "enabled", "offset.flush.interval.ms": 200}
    with DistributedCluster(tmp_path, kafka_bootstrap, unique_name, worker_props) as cluster:
        first = cluster.add_worker()
        config = {
            "connector.class": "kafka-mirror",
            "source.bootstrap.servers": kafka_bootstrap,
            "source.topic.whitelist": topic,
            "source.group.id": f"{unique_name}-lag",
            "destination.topics.prefix": "mirror.",
            "source.max.poll.records": 100,
            "poll.loop.timeout.ms": 100,
            "transaction.boundary": "interval",
            "transaction.boundary.interval.ms": 500,
            "exactly.once.support": "required",
        }
        response = cluster.http(first).post("/connectors", json={"name": "mirror", "config": config})
        assert response.status_code == 201, response.text
        producer = threading.Thread(target=keep_producing, daemon=True)
        producer.start()
        destination = f"mirror.{topic}"
        wait_until(lambda: len(inspector.messages(destination)) >= 2_000, "2000 records mirrored", TIMEOUT_S)
        first.kill()
        stop.set()
        producer.join(TIMEOUT_S)
        cluster.add_worker()
        cluster.wait_for_running("mirror", 1, timeout=TIMEOUT_S)
        expected = Counter([b"plain-%06d" % n for n in range(50)] + [b"r-%06d" % n for n in range(50, produced)])

        def mirrored() -> Counter[bytes | None]:
            return Counter(m.value for m in inspector.messages(destination))

        wait_until(lambda: set(mirrored()) >= set(expected), "every committed source record mirrored", TIMEOUT_S)
        found = mirrored()
        assert [value for value, count in found.items() if count > 1] == []
        assert found == expected, "only the committed source records, each once"


def produce_aborted(bootstrap: str, topic: str, transactional_id: str) -> None:
    """50 records in a source transaction that is aborted: a read_committed mirror never copies them."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    for n in range(50):
        producer.produce(topic, b"aborted-%06d" % n, b"k")
    producer.flush(TIMEOUT_S)
    producer.abort_transaction(TIMEOUT_S)
