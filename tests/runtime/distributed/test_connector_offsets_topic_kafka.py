"""A source connector's own offsets topic (``offsets.storage.topic``, KIP-618) on the real broker: a ``headwater
distributed`` worker with exactly-once support runs a sequence source whose offsets go to its own topic, is
SIGKILLed mid-stream and started again; a ``read_committed`` reader then finds every record exactly once, and the
connector's topic, which the worker created, holds the last offset."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from headwater.harness.kafka_worker import KafkaInspector
from support.distributed_process import DistributedCluster
from support.rest_worker import wait_until

pytestmark = pytest.mark.kafka

TOTAL = 20_000
KILL_AT = 6_000


def read_committed(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of every partition of ``topic``, read ``read_committed`` to its end."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "isolation.level": "read_committed"}
    )
    try:
        partitions = list(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        found: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            positions = consumer.position([TopicPartition(topic, p) for p in partitions])
            if all(tp.offset >= ends[tp.partition] or ends[tp.partition] == 0 for tp in positions):
                return found
            for message in consumer.consume(10_000, 0.5):
                if message.error() is None:
                    found.append((message.key(), message.value()))
                elif message.error().code() != -191:  # _PARTITION_EOF
                    raise AssertionError(message.error())
        raise AssertionError(f"{topic} not read to its end within 120 s")
    finally:
        consumer.close()


def end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-ends"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1])
    finally:
        consumer.close()


def committed_seq(cluster: DistributedCluster) -> Any:
    offsets = cluster.http().get("/connectors/seq/offsets").json().get("offsets", [])
    return offsets[0]["offset"]["seq"] if offsets else None


def test_a_sigkill_leaves_every_record_exactly_once_and_the_offsets_in_the_connector_topic(
    tmp_path: Path, kafka_bootstrap: str, unique_name: str
) -> None:
    data, own = f"{unique_name}-seq", f"{unique_name}-seq-offsets"
    KafkaInspector(kafka_bootstrap).create_topic(data, 1)
    props = {"session.timeout.ms": 1_500, "group.heartbeat.interval.ms": 300, "exactly.once.source.support": "enabled"}
    with DistributedCluster(tmp_path, kafka_bootstrap, unique_name, props) as cluster:
        worker = cluster.add_worker()
        config = {
            "connector.class": "sequence-source",
            "topic": data,
            "tasks.max": "1",
            "max.records": str(TOTAL),
            "batch.size": "200",
            "poll.interval.ms": "20",
            "record.bytes": "8",
            "key.converter": "bytes",
            "value.converter": "bytes",
            "offsets.storage.topic": own,
        }
        assert cluster.http().post("/connectors", json={"name": "seq", "config": config}).status_code == 201
        wait_until(lambda: end_offset(kafka_bootstrap, data) >= KILL_AT, f"record {KILL_AT} written", 300)
        assert worker.kill() == -9
        worker.start()
        worker.url()
        wait_until(lambda: committed_seq(cluster) == TOTAL - 1, "the source's last offset committed", 300)

    found = Counter(int(value or b"-1") for _, value in read_committed(kafka_bootstrap, data))
    missing = TOTAL - len(set(found) & set(range(TOTAL)))
    duplicates = sum(found.values()) - len(found)
    assert (missing, duplicates) == (0, 0)
    latest: dict[str, Any] = {}
    for key, value in read_committed(kafka_bootstrap, own):
        connector, partition = json.loads(key or b"null")
        latest[json.dumps([connector, partition], sort_keys=True)] = json.loads(value or b"null")
    assert [offset["seq"] for offset in latest.values()] == [TOTAL - 1], latest
