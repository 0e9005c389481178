"""A standalone worker SIGKILLed after its dead-letter writes and before its offset commit loses no record: on a real
broker, with a worker process."""

from __future__ import annotations

import json
from pathlib import Path

from confluent_kafka import Producer

from headwater.harness.kafka_worker import KafkaInspector
from headwater.sdk import TopicPartition
from support.connectors import ALLOWED_MODULES
from support.process import WorkerProcess

RECORDS = 40
TIMEOUT_S = 120.0


def value(n: int) -> bytes:
    if n % 4 == 1:
        return b"{not json %d" % n  # fails conversion
    return json.dumps({"n": n, "reject": n % 5 == 2}).encode()  # n % 5 == 2: reported by the task


BAD = [n for n in range(RECORDS) if n % 4 == 1 or n % 5 == 2]
GOOD = [n for n in range(RECORDS) if n not in BAD]


def test_sigkill_between_dead_letter_writes_and_the_commit_loses_nothing(
    tmp_path: Path, kafka_bootstrap: str, unique_name: str
) -> None:
    topic, dlq, name = f"{unique_name}-in", f"{unique_name}-dlq", f"{unique_name}-sink"
    inspector = KafkaInspector(kafka_bootstrap)
    inspector.create_topic(topic, 1)
    raw = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(RECORDS):
        raw.produce(topic, value(n), partition=0)
    assert raw.flush(30) == 0
    written = tmp_path / "written.jsonl"
    connector = {
        "connector.class": "support.errant_sink:ErrantSinkConnector",
        "topics": topic,
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
        "written.file": str(written),
    }
    props = {
        "bootstrap.servers": kafka_bootstrap,
        "offset.flush.interval.ms": "600000",
        # the killed worker's consumer leaves the group when the broker stops hearing from it: after 6 s, not
        # librdkafka's default 45 s, so that the restarted worker's consumer gets the partition sooner
        "consumer.session.timeout.ms": "6000",
        **ALLOWED_MODULES,
    }
    group = f"connect-{name}"
    tp = TopicPartition(topic, 0)

    def lines() -> list[int]:
        text = written.read_text(encoding="utf-8") if written.exists() else ""
        return [json.loads(line)["n"] for line in text.splitlines()]

    def dead_offsets() -> list[int]:
        found = []
        for message in inspector.messages(dlq) if dlq in inspector.topics() else []:
            headers = dict(message.headers or ())
            found.append(int((headers.get("__connect.errors.offset") or b"-1").decode()))
        return found

    with WorkerProcess(tmp_path / "worker", props, {name: connector}) as worker:
        worker.start()
        worker.wait_until(lambda: sorted(set(dead_offsets())) == BAD, TIMEOUT_S, "every bad record dead-lettered")
        worker.wait_until(lambda: sorted(set(lines())) == GOOD, TIMEOUT_S, "every good record written")
        assert inspector.committed(group).get(tp) is None, "no commit yet: the kill comes before it"
        assert worker.kill() == -9
        worker.worker_props["offset.flush.interval.ms"] = "500"
        worker.write_files()
        worker.start()
        worker.wait_until(lambda: inspector.committed(group).get(tp) == RECORDS, TIMEOUT_S, "every offset committed")
        assert worker.terminate(timeout=TIMEOUT_S) == 0
    assert sorted(set(dead_offsets())) == BAD, "each bad record is in the dead-letter topic at least once"
    assert sorted(set(lines())) == GOOD, "each good record is written at least once"
    assert len(dead_offsets()) >= len(BAD) and len(lines()) >= len(GOOD)
