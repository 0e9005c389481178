"""The 20-SIGKILL test (issue 24): two ``headwater distributed`` workers on the real broker run a sequence source of
200,000 records and a mirror of its topic, while one worker after the other is SIGKILLed at 20 seeded points and
started again. With exactly-once source support, a ``read_committed`` reader of both topics finds every sequence
number exactly once; without it, the same kills leave duplicates (the records sent after the last offset commit
before each kill are sent again). Both counts are printed, for the record."""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from headwater.harness.kafka_worker import KafkaInspector
from support.distributed_process import DistributedCluster
from support.rest_worker import wait_until

pytestmark = pytest.mark.kafka

TOTAL = 200_000
KILLS = 20
SEED = 24
FAST_GROUP = {"session.timeout.ms": 1_500, "group.heartbeat.interval.ms": 300, "offset.flush.interval.ms": 500}
"""A killed worker's slots move after 1.5 s (the test broker allows sessions from 1 s)."""


def read_committed(bootstrap: str, topic: str) -> Counter[int]:
    """How many times each sequence number is in ``topic`` (partition 0), read ``read_committed`` to its end."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "isolation.level": "read_committed"}
    )
    try:
        end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
        consumer.assign([TopicPartition(topic, 0, 0)])
        found: Counter[int] = Counter()
        position = 0
        deadline = time.monotonic() + 120
        while position < end and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.5):
                if message.error() is None:
                    found[int(message.value())] += 1
                    position = message.offset() + 1
                elif message.error().code() != -191:  # _PARTITION_EOF
                    raise AssertionError(message.error())
            if consumer.position([TopicPartition(topic, 0)])[0].offset >= end:
                break
        return found
    finally:
        consumer.close()


def committed_seq(http: httpx.Client) -> int | None:
    """The sequence source's committed offset, as ``GET /connectors/seq/offsets`` answers it."""
    offsets = http.get("/connectors/seq/offsets").json().get("offsets", [])
    return offsets[0]["offset"]["seq"] if offsets else None


def end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-ends"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1])
    finally:
        consumer.close()


def kill_twenty_times(tmp_path: Path, bootstrap: str, name: str, support: str) -> tuple[Counter[int], Counter[int]]:
    """Run the two connectors under 20 seeded SIGKILLs; return the sequence numbers read back from the source's
    topic and from the mirror's."""
    source_topic, mirrored = f"{name}-seq", f"mirrored.{name}-seq"
    inspector = KafkaInspector(bootstrap)
    inspector.create_topic(source_topic, 1)
    inspector.create_topic(mirrored, 1)
    props = {**FAST_GROUP, "exactly.once.source.support": support}
    with DistributedCluster(tmp_path / support, bootstrap, name, props) as cluster:
        workers = [cluster.add_worker() for _ in range(2)]
        sequence = {
            "connector.class": "sequence-source",
            "topic": source_topic,
            "tasks.max": "1",
            "max.records": str(TOTAL),
            "batch.size": "200",
            "poll.interval.ms": "20",
            "record.bytes": "8",
            "key.converter": "bytes",
            "value.converter": "bytes",
        }
        mirror = {
            "connector.class": "kafka-mirror",
            "tasks.max": "1",
            "source.bootstrap.servers": bootstrap,
            "source.topic.whitelist": source_topic,
            "source.group.id": f"{name}-lag",
            "destination.topics.prefix": "mirrored.",
            "poll.loop.timeout.ms": "100",
            "key.converter": "bytes",
            "value.converter": "bytes",
        }
        for connector, config in (("seq", sequence), ("mirror", mirror)):
            assert cluster.http().post("/connectors", json={"name": connector, "config": config}).status_code == 201
        points = sorted(random.Random(SEED).sample(range(2_000, TOTAL - 2_000), KILLS))
        for kill, point in enumerate(points):
            wait_until(lambda p=point: end_offset(bootstrap, source_topic) >= p, f"record {point} written", 300)
            victim = workers[kill % 2]
            assert victim.kill() == -9
            victim.start()
            victim.url()
        wait_until(lambda: committed_seq(cluster.http()) == TOTAL - 1, "the source's last offset committed", 300)
        wait_until(
            lambda: set(read_committed(bootstrap, mirrored)) == set(read_committed(bootstrap, source_topic)),
            "the mirror caught up",
            300,
        )
    return read_committed(bootstrap, source_topic), read_committed(bootstrap, mirrored)


def summary(found: Counter[int]) -> tuple[int, int]:
    """(missing, duplicates) of a read-back."""
    missing = TOTAL - len(set(found) & set(range(TOTAL)))
    return missing, sum(found.values()) - len(found)


@pytest.mark.slow(seconds=185)
def test_twenty_sigkills_leave_every_record_exactly_once_with_the_support_and_duplicates_without(
    tmp_path: Path, kafka_bootstrap: str, unique_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exact = kill_twenty_times(tmp_path, kafka_bootstrap, f"{unique_name}-eos", "enabled")
    at_least_once = kill_twenty_times(tmp_path, kafka_bootstrap, f"{unique_name}-alo", "disabled")
    with capsys.disabled():
        for label, (source, mirror) in (("exactly once", exact), ("at least once", at_least_once)):
            print(f"\n{label}: source (missing, duplicates) {summary(source)}; mirror {summary(mirror)}")
    assert summary(exact[0]) == (0, 0), "the source's topic holds every record exactly once"
    assert summary(exact[1]) == (0, 0), "the mirror's topic holds every record exactly once"
    assert summary(at_least_once[0])[0] == 0 and summary(at_least_once[1])[0] == 0, "nothing lost either way"
    assert summary(at_least_once[0])[1] > 0, "without the support the kills leave duplicates"
