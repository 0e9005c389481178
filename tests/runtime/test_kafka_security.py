"""The worker's own ``security.protocol``, ``ssl.*`` and ``sasl.*`` settings reach every Kafka client it makes, in
both modes, against a broker whose clients' listener asks for TLS (a test CA) and SCRAM-SHA-512; ``producer.``,
``consumer.`` and ``admin.`` keys win for their client; a worker the broker refuses stops at start-up saying why.

One broker for the module (:mod:`support.secure_kafka`); its PLAINTEXT listener serves the tests' own checks."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient

from headwater.harness.maven import BrokerUnavailable
from headwater.harness.monitorable import RuntimeHandles
from headwater.runtime.commands.distributed import DistributedWorker
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import format_properties, read_properties
from support.connectors import ALLOWED_MODULES
from support.distributed_process import DistributedWorkerProcess, cluster_props
from support.process import WorkerProcess
from support.rest_worker import RestWorker, sink_config, source_config, wait_until
from support.secure_kafka import PASSWORD, SecureKafka, secure_kafka

pytestmark = pytest.mark.kafka

RECORDS = 5
DEADLINE_S = 60.0
"""Generous: a refused worker exits in about a second."""


@pytest.fixture(scope="module")
def kafka(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    try:
        with secure_kafka(tmp_path_factory.mktemp("sasl-ssl-kafka")) as found:
            yield found
            gc.collect()  # Kafka clients left in reference cycles go while the broker still answers
    except BrokerUnavailable as error:
        if pytestconfig.getoption("require_kafka"):
            pytest.fail(str(error), pytrace=False)
        pytest.skip(str(error))


@pytest.fixture
def start_worker(tmp_path: Path, runtime_handles: RuntimeHandles) -> Iterator[Any]:
    """``start_worker(kind, props)``: a standalone or distributed worker on a thread, stopped after the test."""
    made: list[RestWorker] = []

    def start(kind: type[StandaloneWorker | DistributedWorker], props: dict[str, Any]) -> RestWorker:
        path = tmp_path / f"worker-{len(made)}.properties"
        path.write_text(format_properties({**props, **ALLOWED_MODULES}), encoding="utf-8")
        file = read_properties(path)
        worker = RestWorker(StandaloneWorker(file, []) if kind is StandaloneWorker else DistributedWorker(file))
        made.append(worker)
        return worker

    yield start
    for worker in made:
        if worker.thread.is_alive():
            assert worker.stop() == 0


def end_offsets(kafka: SecureKafka, topic: str) -> int:
    """The sum of the end offsets of ``topic``'s partitions: how many records were ever written to it."""
    consumer = Consumer({"bootstrap.servers": kafka.plain_bootstrap_servers, "group.id": "headwater-test-ends"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return sum(consumer.get_watermark_offsets(RdTopicPartition(topic, p), timeout=10)[1] for p in partitions)
    finally:
        consumer.close()


def topic_exists(kafka: SecureKafka, topic: str) -> bool:
    admin = AdminClient({"bootstrap.servers": kafka.plain_bootstrap_servers})
    return topic in admin.list_topics(timeout=10).topics


PREFIXES_WIN = {
    "sasl.password": "not-the-password",
    "producer.sasl.password": PASSWORD,
    "consumer.sasl.password": PASSWORD,
    "admin.sasl.password": PASSWORD,
}
"""Top-level credentials every client would be refused with, and each client kind's own key that lets it in."""


@pytest.mark.parametrize("overrides", [{}, PREFIXES_WIN], ids=["top-level keys only", "prefixed keys win"])
def test_a_standalone_worker_runs_a_source_and_a_sink_through_sasl_ssl(
    kafka: SecureKafka, start_worker: Any, tmp_path: Path, unique_name: str, overrides: dict[str, Any]
) -> None:
    """Every client of a standalone worker: the broker check's and the cluster id's admin clients, the source's
    producer, the sink's consumer, the dead-letter queue's admin (creating its topic) and producer, and the
    offsets API's admin client (the sink's committed offsets)."""
    props = {
        **kafka.worker_props(**overrides),
        "listeners": "http://127.0.0.1:0",
        "offset.storage.file.filename": str(tmp_path / "offsets"),
        "offset.flush.interval.ms": 200,
    }
    worker = start_worker(StandaloneWorker, props)
    topic, dead_letters = unique_name, f"{unique_name}-dlq"
    source, sink = f"{unique_name}-source", f"{unique_name}-sink"  # the sink's group is connect-<name>
    worker.create(source, source_config(topic, max_messages=RECORDS))
    dlq = {"errors.deadletterqueue.topic.name": dead_letters, "errors.deadletterqueue.topic.replication.factor": 1}
    worker.create(sink, {**sink_config(topic, errors_tolerance="all"), **dlq})
    worker.wait_for_offsets(source, [{"partition": {"task.id": f"{source}-0"}, "offset": {"saved": RECORDS - 1}}])
    assert end_offsets(kafka, topic) == RECORDS
    committed = {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": RECORDS}}
    worker.wait_for_offsets(sink, [committed])
    assert topic_exists(kafka, dead_letters)
    assert worker.states(sink) == ("RUNNING", ["RUNNING"])


def test_a_distributed_worker_keeps_its_topics_and_its_group_through_sasl_ssl(
    kafka: SecureKafka, start_worker: Any, unique_name: str
) -> None:
    """The config, offset and status stores' clients, the group membership and the slots' admin client."""
    props = {**cluster_props(kafka.bootstrap_servers, unique_name), **kafka.worker_props()}
    worker = start_worker(DistributedWorker, props)
    source = f"{unique_name}-source"
    worker.create(source, source_config(unique_name, max_messages=RECORDS))
    wait_until(lambda: worker.http.get(f"/connectors/{source}/status").status_code == 200, f"a status for {source}")
    worker.wait_for_states(source, "RUNNING", ["RUNNING"])
    worker.wait_for_offsets(source, [{"partition": {"task.id": f"{source}-0"}, "offset": {"saved": RECORDS - 1}}])
    assert end_offsets(kafka, unique_name) == RECORDS
    for suffix in ("configs", "offsets", "status"):
        assert end_offsets(kafka, f"{unique_name}-{suffix}") > 0, f"nothing written to {unique_name}-{suffix}"


REFUSED = [
    ("standalone", {"sasl.password": "not-the-password"}, "SASL authentication error: Authentication failed"),
    ("standalone", {"ssl.ca.location": None}, "certificate verify failed"),
    ("standalone", {"admin.sasl.password": "not-the-password"}, "SASL authentication error: Authentication failed"),
    ("distributed", {"sasl.password": "not-the-password"}, "SASL authentication error: Authentication failed"),
]


@pytest.mark.parametrize(
    ("command", "overrides", "reason"),
    REFUSED,
    ids=["wrong password", "without the CA", "wrong admin. password", "distributed, wrong password"],
)
def test_a_worker_the_broker_refuses_exits_at_start_up_saying_why(
    kafka: SecureKafka, tmp_path: Path, unique_name: str, command: str, overrides: dict[str, Any], reason: str
) -> None:
    props = kafka.worker_props(**overrides)
    if command == "standalone":
        worker: WorkerProcess = WorkerProcess(tmp_path, props, {})
    else:
        worker = DistributedWorkerProcess(tmp_path, {**cluster_props(kafka.bootstrap_servers, unique_name), **props})
    with worker:
        worker.start()
        worker.assert_exited(1, timeout=DEADLINE_S)
    log = worker.log_text()
    assert f"headwater {command}: error: the Kafka cluster refused the worker's client: " in log, log
    assert reason in log
    assert "retrying" not in log, "a refusal is final: the worker does not wait for the broker to change its mind"
    if command == "distributed":
        assert not topic_exists(kafka, f"{unique_name}-configs"), "nothing was started"
