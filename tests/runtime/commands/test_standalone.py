"""``headwater standalone``: validation before anything connects, waiting for the broker, and, in a subprocess
against a real broker, SIGKILL mid-stream, SIGTERM's final commit and a sink committing to the end."""

from __future__ import annotations

import gc
import itertools
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from headwater.harness.broker import free_ports
from headwater.harness.cluster import docker_answers
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.commands.standalone import main as standalone_main
from headwater.runtime.commands.startup import GC_THRESHOLDS, wait_for_broker
from headwater.runtime.config.properties import PropertiesError
from headwater.runtime.config.worker import STANDALONE_CONFIG
from headwater.runtime.storage.offsets import FileOffsetStore
from support.connectors import ALLOWED_MODULES
from support.container import ContainerWorker, _exit_code, container_worker_skip_reason
from support.process import WorkerProcess

PARTITION = {"task": 0}
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ERROR .*cannot reach Kafka", re.MULTILINE)


def worker_props(bootstrap: str, **extra: Any) -> dict[str, Any]:
    props = {
        "bootstrap.servers": bootstrap,
        "key.converter": "bytes",
        "value.converter": "bytes",
        "offset.flush.interval.ms": 500,
    }
    props.update({key.replace("_", "."): value for key, value in extra.items()})
    return props


def sequence_source(topic: str, max_records: int, **extra: Any) -> dict[str, Any]:
    config = {"connector.class": "sequence-source", "topic": topic, "max.records": max_records, "record.bytes": 8}
    config.update({key.replace("_", "."): value for key, value in extra.items()})
    return config


def committed_seq(worker: WorkerProcess, name: str) -> int | None:
    offset = worker.offset(name, PARTITION)
    return None if offset is None else int(offset["seq"])


# ---- without a broker ----------------------------------------------------------------------------------------------


class RecordingStop(threading.Event):
    """A stop event whose waits return at once, recording how long they would have been."""

    def __init__(self, stop_after: int | None = None) -> None:
        super().__init__()
        self.waits: list[float] = []
        self.stop_after = stop_after

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0))
        if self.stop_after is not None and len(self.waits) >= self.stop_after:
            self.set()
        return self.is_set()


def test_waiting_for_the_broker_doubles_the_backoff_up_to_the_cap(caplog: pytest.LogCaptureFixture) -> None:
    answers = iter(["refused"] * 6 + [None])
    stop = RecordingStop()
    with caplog.at_level(logging.INFO, "headwater.runtime.commands.startup"):
        assert wait_for_broker(lambda: next(answers), "h:1 (bootstrap.servers in w.properties)", 100, 500, stop)
    assert stop.waits == [0.1, 0.2, 0.4, 0.5, 0.5, 0.5]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors[0] == (
        "cannot reach Kafka at h:1 (bootstrap.servers in w.properties): refused; check 1 failed, retrying in 0.1 s"
    )
    assert len(errors) == 6
    assert caplog.records[-1].getMessage() == "Kafka at h:1 (bootstrap.servers in w.properties) answered at check 7"


def test_waiting_for_the_broker_ends_when_stopped() -> None:
    calls = []
    stop = RecordingStop(stop_after=2)
    assert not wait_for_broker(lambda: calls.append(1) or "refused", "h:1", 100, 1000, stop)
    assert (len(calls), stop.waits) == (2, [0.1, 0.2])


def test_standalone_config_defaults_like_connect_standalone() -> None:
    parsed = STANDALONE_CONFIG.parse({})
    assert parsed["bootstrap.servers"] == ["localhost:9092"]
    assert parsed["offset.storage.file.filename"] is None  # connect.offsets in the state directory, not in /tmp
    assert (parsed["broker.check.backoff.ms"], parsed["broker.check.backoff.max.ms"]) == (1000, 30000)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


GOOD_WORKER = "bootstrap.servers=127.0.0.1:1\noffset.flush.interval.ms=500\n"
GOOD_SOURCE = "name=src\nconnector.class=sequence-source\ntopic=t\n"


@pytest.mark.parametrize(
    ("worker", "connector", "message"),
    [
        (
            "bootstrap.servers=127.0.0.1:1\noffset.flush.interval.ms=abc\n",
            GOOD_SOURCE,
            "worker.properties:2: offset.flush.interval.ms: invalid value 'abc': Expected value to be an integer",
        ),
        (
            "bootstrap.servers=\n",
            GOOD_SOURCE,
            "worker.properties:1: bootstrap.servers: invalid value '': List must name at least one item",
        ),
        (
            "broker.check.backoff.ms=0\n",
            GOOD_SOURCE,
            "worker.properties:1: broker.check.backoff.ms: invalid value '0': Value must be at least 1",
        ),
        (
            GOOD_WORKER,
            "name=src\nconnector.class=no-such-connector\ntopic=t\n",
            "c.properties:2: connector.class: invalid value 'no-such-connector': Unknown connector; installed",
        ),
        (
            GOOD_WORKER,
            "name=src\nconnector.class=sequence-source\ntopic=t\ntasks.max=zero\n",
            "c.properties:4: tasks.max: invalid value 'zero': Expected value to be an integer",
        ),
        (
            GOOD_WORKER,
            "name=src\nconnector.class=sequence-source\n",
            "c.properties: topic: Missing required configuration with no default value",
        ),
        (
            GOOD_WORKER,
            "name=snk\nconnector.class=discard-sink\n",
            "c.properties: topics: Must configure one of topics or topics.regex",
        ),
        (
            GOOD_WORKER,
            "connector.class=sequence-source\ntopic=t\n",
            "c.properties: name: Missing required configuration with no default value",
        ),
        (
            GOOD_WORKER,
            "name=src\nconnector.class=sequence-source\ntopic=t\nrecord.bytes=0\n",
            "c.properties:4: record.bytes: invalid value '0': Value must be at least 1",
        ),
        (GOOD_WORKER, "name=src\ntopic=\\u00\n", "c.properties:2: topic: malformed \\uXXXX escape: \\u00"),
    ],
)
def test_bad_files_are_named_with_key_and_problem(tmp_path: Path, worker: str, connector: str, message: str) -> None:
    worker_path = write(tmp_path / "worker.properties", worker)
    connector_path = write(tmp_path / "c.properties", connector)
    with pytest.raises(PropertiesError) as raised:
        StandaloneWorker.from_paths(worker_path, [connector_path])
    assert str(raised.value).startswith(f"{tmp_path}/{message}")


def test_two_connectors_of_one_name_are_refused(tmp_path: Path) -> None:
    worker = write(tmp_path / "worker.properties", GOOD_WORKER)
    first = write(tmp_path / "a.properties", GOOD_SOURCE)
    second = write(tmp_path / "b.json", '{"name": "src", "config": {"connector.class": "discard-sink", "topics": "t"}}')
    with pytest.raises(PropertiesError, match=r"b.json:1: name: connector 'src' is also defined in .*a.properties"):
        StandaloneWorker.from_paths(worker, [first, second])


def test_valid_files_build_a_worker_without_touching_broker_or_offsets(tmp_path: Path) -> None:
    offsets = tmp_path / "offsets.json"
    worker = write(tmp_path / "worker.properties", GOOD_WORKER + f"offset.storage.file.filename={offsets}\n")
    sink = write(
        tmp_path / "sink.json", '{"name": "snk", "config": {"connector.class": "discard-sink", "topics": "t"}}'
    )
    built = StandaloneWorker.from_paths(worker, [write(tmp_path / "src.properties", GOOD_SOURCE), sink])
    assert [f.values["name"] for f in built.connector_files] == ["src", "snk"]
    assert built.bootstrap_servers == "127.0.0.1:1"
    assert built.offset_store.path == offsets and not offsets.exists()
    assert built.herder.connectors() == []


@pytest.mark.parametrize(
    ("worker", "connector", "expected"),
    [
        (
            "bootstrap.servers=127.0.0.1:1\noffset.flush.interval.ms=abc\n",
            GOOD_SOURCE,
            "worker.properties:2: offset.flush.interval.ms: invalid value 'abc'",
        ),
        (
            GOOD_WORKER,
            "name=src\nconnector.class=sequence-source\ntopic=\\uXYZW\n",
            "src.properties:3: topic: malformed",
        ),
        (GOOD_WORKER, '["not", "an object"]', "src.json:1: JSON is not an object but an array"),
        (  # the worker's converter is configured at start, not when each task starts
            GOOD_WORKER + "value.converter=io.confluent.connect.avro.AvroConverter\n",
            GOOD_SOURCE,
            "worker.properties:3: value.converter.schema.registry.url: Missing required configuration",
        ),
    ],
)
def test_the_command_exits_2_with_one_line_for_bad_files(
    tmp_path: Path, worker: str, connector: str, expected: str
) -> None:
    process = WorkerProcess(tmp_path, {}, {"src": {}}, "json" if connector.startswith("[") else "properties")
    process.write_files()
    write(process.worker_path, worker)
    write(process.connector_paths[0], connector)
    process.start()
    process.assert_exited(2, timeout=30)
    lines = process.log_text().splitlines()
    assert len(lines) == 1, f"exits before any broker check or retry is logged: {lines}"
    assert lines[0].startswith(f"headwater standalone: error: {tmp_path}/{expected}")


def test_an_unreachable_broker_is_retried_with_growing_backoff_and_offsets_untouched(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    offsets = tmp_path / "connect.offsets"
    store = FileOffsetStore(offsets)
    store.start()
    store.set("src", [(PARTITION, {"seq": 41})], 1000)
    store.stop()
    before = (offsets.read_bytes(), offsets.stat().st_mtime_ns)
    props = worker_props(
        f"127.0.0.1:{port}", broker_check_timeout_ms=300, broker_check_backoff_ms=200, broker_check_backoff_max_ms=2000
    )
    with WorkerProcess(tmp_path, props, {"src": sequence_source("t", 10)}) as worker:
        worker.start()
        log = worker.wait_for_log(f"cannot reach Kafka at 127.0.0.1:{port}", count=3, timeout=15)
        assert f"(bootstrap.servers in {worker.worker_path})" in log
        assert "Connection refused" in log
        assert re.findall(r"retrying in ([\d.]+) s", log)[:3] == ["0.2", "0.4", "0.8"]
        stamps = [datetime.strptime(s, "%Y-%m-%d %H:%M:%S,%f") for s in LOG_TIME.findall(log)][:3]
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(stamps)]
        assert gaps[1] > gaps[0] > 0.2, gaps
        assert (offsets.read_bytes(), offsets.stat().st_mtime_ns) == before
        assert worker.terminate(timeout=10) == 0  # see test_waiting_for_the_broker_ends_when_stopped
    assert "stopped before Kafka answered" in worker.log_text()
    assert (offsets.read_bytes(), offsets.stat().st_mtime_ns) == before
    assert "Traceback" not in worker.log_text()


@pytest.fixture
def process_gc_restored() -> Iterator[None]:
    """A worker command run in this process tunes its garbage collector (``tune_garbage_collector``: higher
    thresholds, start-up objects frozen); put it back after the test, or the rest of the session collects rarely
    and keeps what it froze."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_a_corrupt_offsets_file_exits_1_before_any_broker_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], process_gc_restored: None
) -> None:
    offsets = write(tmp_path / "connect.offsets", '{"not an offsets key": 1}')
    worker = write(tmp_path / "worker.properties", GOOD_WORKER + f"offset.storage.file.filename={offsets}\n")
    assert standalone_main(str(worker), [str(write(tmp_path / "src.properties", GOOD_SOURCE))]) == 1
    assert capsys.readouterr().err == (
        f"headwater standalone: error: corrupt offsets file {offsets}: entry 'not an offsets key': "
        "expected an offsets-topic key and an offset object\n"
    )
    assert gc.get_threshold() == GC_THRESHOLDS and gc.get_freeze_count() > 0  # the worker command's tuning ran
    assert offsets.read_text() == '{"not an offsets key": 1}'


def test_container_worker_is_skipped_with_a_reason_exactly_when_docker_does_not_answer() -> None:
    reason = container_worker_skip_reason()
    assert (reason is None) == docker_answers()
    if reason is not None:
        assert "Docker engine" in reason


def test_container_exit_status_reads_like_a_subprocess_return_code() -> None:
    assert [_exit_code(status) for status in (0, 1, 2, 137, 143)] == [0, 1, 2, -9, -15]


# ---- against a real broker ------------------------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the future completes
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def end_offsets(bootstrap: str, topic: str, partitions: int = 1) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "headwater-test-ends"})
    try:
        return {p: consumer.get_watermark_offsets(RdTopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    finally:
        consumer.close()


def read_sequence(bootstrap: str, topic: str) -> list[int]:
    """The sequence numbers in partition 0 of ``topic``, in offset order."""
    end = end_offsets(bootstrap, topic)[0]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "headwater-test-reader", "fetch.min.bytes": 1})
    found: list[int] = []
    try:
        consumer.assign([RdTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        position = 0
        while position < end and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 1.0):
                if message.error() is None:
                    found.append(int(message.value()))
                    position = message.offset() + 1
    finally:
        consumer.close()
    assert position >= end, f"read {position} of {end} records of {topic}"
    return found


@pytest.mark.kafka
@pytest.mark.parametrize("runner", [WorkerProcess, ContainerWorker])
def test_sigkill_mid_stream_loses_nothing_and_duplicates_only_what_was_not_committed(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, runner: type[WorkerProcess]
) -> None:
    if runner is ContainerWorker and (reason := container_worker_skip_reason()) is not None:
        pytest.skip(reason)
    total = 200_000
    create_topic(kafka_bootstrap, unique_name)
    source = sequence_source(unique_name, total, batch_size=1000, poll_interval_ms=5)  # <= 200k/s: killed mid-stream
    with runner(tmp_path, worker_props(kafka_bootstrap), {unique_name: source}) as worker:
        worker.start()
        worker.wait_until(lambda: (committed_seq(worker, unique_name) or 0) > 0, message="a first offset commit")
        assert worker.kill() == -9
        committed_at_kill = committed_seq(worker, unique_name)
        assert committed_at_kill is not None
        highest_at_kill = max(read_sequence(kafka_bootstrap, unique_name))
        assert 0 < committed_at_kill <= highest_at_kill < total - 1, "killed once some but not all were written"

        worker.restart()
        worker.wait_until(lambda: committed_seq(worker, unique_name) == total - 1, message="every offset committed")
        assert worker.terminate() == 0
    written = read_sequence(kafka_bootstrap, unique_name)
    assert set(written) == set(range(total)), "no sequence number is lost"
    duplicates = len(written) - len(set(written))
    assert duplicates <= highest_at_kill - committed_at_kill
    assert worker.log_text().count("task " + unique_name + "-0 started") == 2


@pytest.mark.kafka
def test_sigterm_commits_every_record_written_and_exits_0(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    create_topic(kafka_bootstrap, unique_name)
    props = worker_props(kafka_bootstrap, offset_flush_interval_ms=600_000)  # only the final commit can run
    source = sequence_source(unique_name, -1, batch_size=200, poll_interval_ms=5)
    with WorkerProcess(tmp_path, props, {unique_name: source}) as worker:
        worker.start()
        worker.wait_until(lambda: end_offsets(kafka_bootstrap, unique_name)[0] >= 2000, message="2000 records")
        assert committed_seq(worker, unique_name) is None
        assert worker.terminate() == 0
    written = read_sequence(kafka_bootstrap, unique_name)
    assert written == list(range(len(written)))
    assert committed_seq(worker, unique_name) == written[-1]
    log = worker.log_text()
    for line in ("received SIGTERM", f"task {unique_name}-0 stopped", f"connector {unique_name} stopped"):
        assert line in log
    assert log.rstrip().endswith("standalone worker stopped")


@pytest.mark.kafka
def test_sigterm_exits_although_a_cancelled_task_left_a_thread_that_never_ends(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """A task stuck past the graceful timeout is cancelled, and the thread it handed work to (a ThreadPoolExecutor's,
    which the interpreter joins at exit) does not keep the process alive: it exits 0 within the timeout once the
    worker has stopped, as a Kafka Connect worker's JVM does."""
    create_topic(kafka_bootstrap, unique_name)
    props = {**worker_props(kafka_bootstrap, task_shutdown_graceful_timeout_ms=1000), **ALLOWED_MODULES}
    sink = {"connector.class": "support.stuck_sink:StuckSinkConnector", "topics": unique_name}
    with WorkerProcess(tmp_path, props, {unique_name: sink}) as worker:
        worker.start()
        worker.wait_for_log(f"task {unique_name}-0 started")
        assert worker.terminate() == 0
    worker.assert_log_contains(
        f"task {unique_name}-0 did not stop within 1.0 s; cancelling it",
        "standalone worker stopped",
        "the worker stopped but the process did not exit within 1.0 s",
        "stuck-write",
    )


class LateProxy:
    """A TCP port that refuses connections until :meth:`open`, then forwards them to ``target``."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(",", 1)[0].rsplit(":", 1)
        self.target = (host, int(port))
        (self.port,) = free_ports(1)
        self._server: socket.socket | None = None
        self._sockets: list[socket.socket] = []

    def open(self) -> None:
        self._server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        assert self._server is not None
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for sock in self._sockets:
            sock.close()


@pytest.fixture
def late_proxy(kafka_bootstrap: str) -> Iterator[LateProxy]:
    proxy = LateProxy(kafka_bootstrap)
    yield proxy
    proxy.close()


@pytest.mark.kafka
def test_a_worker_waiting_for_the_broker_proceeds_from_the_stored_offset_once_it_answers(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, late_proxy: LateProxy
) -> None:
    create_topic(kafka_bootstrap, unique_name)
    offsets = tmp_path / "connect.offsets"
    store = FileOffsetStore(offsets)
    store.start()
    store.set(unique_name, [(PARTITION, {"seq": 99})], 1000)
    store.stop()
    props = worker_props(
        f"127.0.0.1:{late_proxy.port}", broker_check_timeout_ms=300, broker_check_backoff_ms=100
    )  # the broker advertises its own address: only the bootstrap goes through the proxy
    with WorkerProcess(tmp_path, props, {unique_name: sequence_source(unique_name, 300)}) as worker:
        worker.start()
        worker.wait_for_log("cannot reach Kafka", count=2)
        late_proxy.open()
        worker.wait_for_log(f"task {unique_name}-0 started")
        worker.wait_until(lambda: committed_seq(worker, unique_name) == 299, message="offset 299 committed")
        assert worker.terminate() == 0
    assert read_sequence(kafka_bootstrap, unique_name) == list(range(100, 300))
    assert re.search(r"answered at check [3-9]", worker.log_text())


@pytest.mark.kafka
def test_a_discard_sink_drains_a_topic_and_commits_its_group_to_the_end(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    partitions, per_partition = 3, 2000
    create_topic(kafka_bootstrap, unique_name, partitions)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
    for n in range(partitions * per_partition):
        producer.produce(unique_name, b"%d" % n, partition=n % partitions)
        if n % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    ends = end_offsets(kafka_bootstrap, unique_name, partitions)
    assert ends == dict.fromkeys(range(partitions), per_partition)

    sink = {"connector.class": "discard-sink", "topics": unique_name, "tasks.max": 1}
    group = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"connect-{unique_name}"})
    asked = [RdTopicPartition(unique_name, p) for p in range(partitions)]

    def committed() -> dict[int, int]:
        return {tp.partition: tp.offset for tp in group.committed(asked, timeout=10)}

    try:
        with WorkerProcess(tmp_path, worker_props(kafka_bootstrap), {unique_name: sink}, "json") as worker:
            worker.start()
            worker.wait_until(lambda: committed() == ends, message=f"group connect-{unique_name} committed {ends}")
            assert worker.terminate() == 0
        assert committed() == ends
    finally:
        group.close()
    worker.assert_log_contains(f"task {unique_name}-0 started", f"task {unique_name}-0 stopped")
