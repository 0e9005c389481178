"""A normal start of a worker on a real broker is quiet: librdkafka's lines come through Python logging as
``headwater.librdkafka`` in the worker's format (never librdkafka's own ``%4|...|GETPID|...`` lines on stderr), none
of them at WARNING or above, and those of a task's clients carry the task's logging context."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from support.process import WorkerProcess

RECORDS = 200
RAW_LIBRDKAFKA = re.compile(r"%\d\|\d+\.\d+\|")
"""The start of a line librdkafka prints itself (``%4|1700000000.123|GETPID|rdkafka#producer-1| ...``)."""
LOUD = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) ")


def sink_committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [found] = consumer.committed([RdTopicPartition(topic, 0)], timeout=10)
        return int(found.offset)
    finally:
        consumer.close()


@pytest.mark.kafka
def test_a_normal_start_logs_librdkafka_through_python_and_nothing_at_warning(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    topic, source, sink = unique_name, f"{unique_name}-source", f"{unique_name}-sink"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    props = {
        "bootstrap.servers": kafka_bootstrap,
        "key.converter": "bytes",
        "value.converter": "bytes",
        "offset.flush.interval.ms": 500,
        "producer.debug": "eos",  # the idempotent producer's debug lines: some librdkafka lines for sure
    }
    connectors = {
        source: {"connector.class": "sequence-source", "topic": topic, "max.records": RECORDS, "record.bytes": 8},
        sink: {"connector.class": "discard-sink", "topics": topic},
    }
    with WorkerProcess(tmp_path, props, connectors, log_level="DEBUG") as worker:
        worker.start()
        worker.wait_until(
            lambda: sink_committed(kafka_bootstrap, f"connect-{sink}", topic) >= RECORDS,
            message=f"the sink's group committed {RECORDS} records",
            interval=0.2,
        )
        assert worker.terminate() == 0
    lines = worker.log_text().splitlines()
    assert [line for line in lines if RAW_LIBRDKAFKA.search(line)] == []
    librdkafka = [line for line in lines if " headwater.librdkafka: " in line]
    assert any(f" DEBUG [{source}|task-0] headwater.librdkafka: " in line for line in librdkafka), "\n".join(
        librdkafka[:20] or lines[-40:]
    )
    assert [line for line in librdkafka if LOUD.match(line)] == []
    assert [line for line in lines if LOUD.match(line) and "rdkafka" in line] == []
