"""The mirror connector in a ``headwater standalone`` process between two real brokers: the source is the second
cluster, the destination the worker's own. Records are compared byte for byte, offsets read from the worker's
offsets file and from the source cluster's group offsets."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from headwater.harness.kafka_worker import KafkaInspector
from headwater.reference_connectors.kafka_mirror import source_partition
from headwater.runtime.converters import load_converter
from headwater.runtime.transport.base import Message
from headwater.sdk import TopicPartition
from support.process import WorkerProcess
from support.schema_source import ORDER, order

pytestmark = pytest.mark.kafka

TIMEOUT_S = 60
Record = tuple[int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]
"""(source partition, key, value, headers, timestamp)."""

MakeWorker = Callable[..., WorkerProcess]


def produce(bootstrap: str, topic: str, records: Sequence[Record], transactional_id: str | None = None) -> None:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
    producer = Producer(config)
    if transactional_id is not None:
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
    for partition, key, value, headers, timestamp in records:
        producer.produce(topic, value, key, partition, timestamp=timestamp, headers=list(headers) or None)
    if transactional_id is not None:
        producer.commit_transaction(TIMEOUT_S)
    assert producer.flush(TIMEOUT_S) == 0


def records(count: int, partitions: int = 1, start: int = 0, tag: str = "r") -> list[Record]:
    """``count`` records with unique values, keys that each stay in one partition, headers on every third."""
    found: list[Record] = []
    for n in range(start, start + count):
        key = b"key-%d" % (n % 6)
        headers = (("trace", b"\x00\xff%d" % n), ("empty", None)) if n % 3 == 0 else ()
        found.append(((n % 6) % partitions, key, f"{tag}-{n:06d}".encode(), headers, 1_600_000_000_000 + n))
    return found


def last_offsets(topic: str, batch: Sequence[Record]) -> dict[TopicPartition, int]:
    """The last offset of each partition after ``batch`` was written to an empty ``topic``."""
    counts = Counter(partition for partition, *_ in batch)
    return {TopicPartition(topic, partition): count - 1 for partition, count in counts.items()}


def as_mirrored(message: Message) -> tuple[Any, ...]:
    return (message.key, message.value, tuple(message.headers), message.timestamp)


@pytest.fixture
def source(second_kafka_bootstrap: str) -> KafkaInspector:
    return KafkaInspector(second_kafka_bootstrap)


@pytest.fixture
def destination(kafka_bootstrap: str) -> KafkaInspector:
    return KafkaInspector(kafka_bootstrap)


@pytest.fixture
def make_worker_process(
    tmp_path: Path, kafka_bootstrap: str, second_kafka_bootstrap: str, unique_name: str
) -> Iterator[MakeWorker]:
    """``make(whitelist, **connector_props)``: a standalone worker on the destination running one mirror connector
    named ``unique_name`` from the source cluster, with the bytes converters."""
    made: list[WorkerProcess] = []

    def make(whitelist: str, **props: Any) -> WorkerProcess:
        worker = {
            "bootstrap.servers": kafka_bootstrap,
            "key.converter": "bytes",
            "value.converter": "bytes",
            "header.converter": "bytes",
            "offset.flush.interval.ms": 200,
        }
        connector = {
            "connector.class": "kafka-mirror",
            "source.bootstrap.servers": second_kafka_bootstrap,
            "source.topic.whitelist": whitelist,
            "source.group.id": f"{unique_name}-lag",
            "poll.loop.timeout.ms": 100,
            **{k.replace("_", "."): v for k, v in props.items()},
        }
        process = WorkerProcess(tmp_path / f"worker-{len(made)}", worker, {unique_name: connector})
        made.append(process)
        return process.start()

    yield make
    for process in made:
        process.close()


def wait_for_records(worker: WorkerProcess, destination: KafkaInspector, topic: str, count: int) -> list[Message]:
    found: list[Message] = []

    def enough() -> bool:
        nonlocal found
        found = destination.messages(topic)
        return len(found) >= count

    worker.wait_until(enough, TIMEOUT_S, f"{count} records in {topic}", interval=0.2)
    return found


def stored_offset(worker: WorkerProcess, name: str, topic: str, partition: int) -> int | None:
    found = worker.offset(name, source_partition(topic, partition))
    return None if found is None else int(found["offset"])


def test_matching_topics_are_mirrored_with_keys_values_headers_timestamps_under_the_prefix(
    make_worker_process: MakeWorker, source: KafkaInspector, destination: KafkaInspector, unique_name: str
) -> None:
    orders, payments, skipped = f"{unique_name}-orders", f"{unique_name}-payments-eu", f"{unique_name}-skipped"
    source.create_topic(orders, partitions=2)
    source.create_topic(payments)
    source.create_topic(skipped)
    sent = {orders: records(60, partitions=2, tag="o"), payments: records(30, tag="p"), skipped: records(5)}
    for topic, batch in sent.items():
        produce(source.bootstrap_servers, topic, batch)
    worker = make_worker_process(
        f"{orders}, {unique_name}-payments.*", destination_topics_prefix="mirror.", tasks_max=10
    )

    for topic in (orders, payments):
        mirrored = wait_for_records(worker, destination, f"mirror.{topic}", len(sent[topic]))
        expected = [(key, value, headers, stamp) for _, key, value, headers, stamp in sent[topic]]
        assert Counter(map(as_mirrored, mirrored)) == Counter(expected), topic
        for key in {r[1] for r in sent[topic]}:  # each key came from one source partition: its order is kept
            assert [m.value for m in mirrored if m.key == key] == [r[2] for r in sent[topic] if r[1] == key]
    assert f"mirror.{skipped}" not in destination.topics()

    log = worker.wait_for_log(f"task {unique_name}-2 started")  # 3 matching partitions, tasks.max=10: 3 tasks
    assert f"task {unique_name}-3 " not in log
    ends = {tp: last + 1 for topic in (orders, payments) for tp, last in last_offsets(topic, sent[topic]).items()}
    worker.wait_until(lambda: source.committed(f"{unique_name}-lag") == ends, TIMEOUT_S, "the source group at the end")
    assert worker.terminate() == 0


def test_a_topic_created_mid_run_is_mirrored_within_the_poll_interval(
    make_worker_process: MakeWorker, source: KafkaInspector, destination: KafkaInspector, unique_name: str
) -> None:
    first, late = f"{unique_name}-a", f"{unique_name}-b"
    source.create_topic(first)
    produce(source.bootstrap_servers, first, records(10, tag="a"))
    worker = make_worker_process(f"{unique_name}-.*", topic_list_poll_interval_ms=3000)
    wait_for_records(worker, destination, first, 10)

    source.create_topic(late, partitions=2)
    produce(source.bootstrap_servers, late, records(20, partitions=2, tag="b"))
    worker.wait_for_log("matching partitions changed (1 -> 3)", timeout=TIMEOUT_S)
    wait_for_records(worker, destination, late, 20)

    produce(source.bootstrap_servers, first, records(10, start=10, tag="a"))  # the reconfigured tasks resume
    values = [m.value for m in wait_for_records(worker, destination, first, 20)]
    assert values == [b"a-%06d" % n for n in range(20)]


def test_a_graceful_restart_resumes_with_no_loss_and_no_duplicate(
    make_worker_process: MakeWorker, source: KafkaInspector, destination: KafkaInspector, unique_name: str
) -> None:
    topic = f"{unique_name}-t"
    source.create_topic(topic, partitions=2)
    first, second = records(200, partitions=2), records(100, partitions=2, start=200)
    produce(source.bootstrap_servers, topic, first)
    worker = make_worker_process(topic)
    wait_for_records(worker, destination, topic, 200)
    assert worker.terminate() == 0  # a graceful stop commits everything sent
    stored = {TopicPartition(topic, p): stored_offset(worker, unique_name, topic, p) for p in (0, 1)}
    assert stored == last_offsets(topic, first)

    produce(source.bootstrap_servers, topic, second)
    worker.restart()
    ends = last_offsets(topic, [*first, *second])
    committed = lambda: {tp: stored_offset(worker, unique_name, topic, tp.partition) for tp in ends}  # noqa: E731
    worker.wait_until(lambda: committed() == ends, TIMEOUT_S, "the new offsets committed")
    counts = Counter(m.value for m in destination.messages(topic))
    assert sorted(counts) == sorted(r[2] for r in records(300, partitions=2))
    assert [value for value, count in counts.items() if count > 1] == []


def test_after_a_kill_mid_stream_committed_records_are_never_sent_again_and_none_is_lost(
    make_worker_process: MakeWorker, source: KafkaInspector, destination: KafkaInspector, unique_name: str
) -> None:
    topic = f"{unique_name}-t"
    source.create_topic(topic)
    produced = 0
    stop = threading.Event()

    def keep_producing() -> None:  # the source keeps growing while the worker is killed
        nonlocal produced
        while not stop.is_set():
            produce(source.bootstrap_servers, topic, records(1_000, start=produced))
            produced += 1_000

    producer = threading.Thread(target=keep_producing, daemon=True)
    producer.start()
    worker = make_worker_process(topic, source_max_poll_records=200, **{"offset.flush.interval.ms": 50})
    worker.wait_until(lambda: (stored_offset(worker, unique_name, topic, 0) or 0) >= 3_000, TIMEOUT_S, "3000 commits")
    worker.kill()
    committed = stored_offset(worker, unique_name, topic, 0)
    stop.set()
    producer.join(TIMEOUT_S)
    assert committed is not None and committed < produced - 1, "the kill should come before the end"

    worker.restart()
    last = produced - 1
    worker.wait_until(lambda: stored_offset(worker, unique_name, topic, 0) == last, TIMEOUT_S, "the end committed")
    counts = Counter(m.value for m in destination.messages(topic))
    assert sorted(counts) == [b"r-%06d" % n for n in range(produced)]  # nothing lost
    again = sorted(int(value[2:]) for value, count in counts.items() if value is not None and count > 1)
    assert [n for n in again if n <= committed] == [], f"committed up to {committed}, sent again: {again[:5]}"


def test_heartbeats_commit_an_idle_partition_past_its_transaction_marker(
    make_worker_process: MakeWorker, source: KafkaInspector, destination: KafkaInspector, unique_name: str
) -> None:
    topic = f"{unique_name}-t"
    source.create_topic(topic)
    produce(source.bootstrap_servers, topic, records(5), transactional_id=unique_name)  # offsets 0-4, marker at 5
    worker = make_worker_process(topic, **{"heartbeat.interval.ms": 100})
    assert [m.offset for m in wait_for_records(worker, destination, topic, 5)] == [0, 1, 2, 3, 4]
    worker.wait_until(lambda: stored_offset(worker, unique_name, topic, 0) == 5, TIMEOUT_S, "offset 5 committed")
    group = f"{unique_name}-lag"
    worker.wait_until(lambda: source.committed(group) == {TopicPartition(topic, 0): 6}, TIMEOUT_S, "no lag")
    beats = [
        m for m in destination.messages("connect-heartbeats") if m.key is not None and unique_name.encode() in m.key
    ]
    assert [m.value for m in beats] == [b'{"offset":5}']
    assert len(destination.messages(topic)) == 5  # the heartbeat went to the heartbeat topic, not the mirror


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_schema_registry_framed_records_are_copied_byte_for_byte_and_read_with_the_same_registry(
    make_worker_process: MakeWorker,
    source: KafkaInspector,
    destination: KafkaInspector,
    unique_name: str,
    schema_registry_url: str,
) -> None:
    """Avro in Confluent's framing passes through as it is: the schema ids are the registry's, so the copy reads
    with the same registry (docs/kafka-mirror.md says so)."""
    topic = f"{unique_name}-avro"
    avro = load_converter("avro", {"schema.registry.url": schema_registry_url}, is_key=False)
    try:
        framed = [avro.from_connect(topic, ORDER, order(n)) for n in range(8)]
        source.create_topic(topic)
        produce(
            source.bootstrap_servers,
            topic,
            [(0, None, value, (), 1_600_000_000_000 + n) for n, value in enumerate(framed)],
        )
        worker = make_worker_process(topic)
        copied = wait_for_records(worker, destination, topic, len(framed))
        assert [message.value for message in copied] == framed
        assert [avro.to_connect(topic, message.value) for message in copied] == [order(n) for n in range(8)]
    finally:
        avro.close()
