"""Throughput of the standalone worker on a real broker against raw confluent-kafka loops measured in the same run.

Source: ``headwater standalone`` runs ``synthetic.SequenceSourceConnector`` (``examples/``; one task, 500 records
per poll) writing ``--records`` values of ``--record-bytes`` bytes, no key, through ``bytes`` converters; the raw
side is a confluent-kafka producer loop writing the same values (``sequence_value``), with a ``poll(0)`` after
every 500 and, when the queue is full, a ``poll`` of up to 100 ms. Sink: ``headwater standalone`` runs
``synthetic.DiscardSinkConnector`` (one task) over the topic the framework source wrote; the raw side is a consumer
loop calling ``consume(500)`` and counting the records.
The last line printed is ``source_ratio=<x> sink_ratio=<y>``: framework records/s divided by raw records/s.

Kept equal on both sides:

* Every side runs in a child process of its own (this script's ``raw-produce`` and ``raw-consume`` commands for
  the raw loops), so no side shares an interpreter with the measuring code.
* Client settings: the raw clients use ``PRODUCER_DEFAULTS`` and ``CONSUMER_DEFAULTS`` from
  ``headwater.runtime.transport.kafka``, the settings the worker's clients get, plus the bootstrap servers.
* Acknowledgements and commits: the raw producer passes one ``on_delivery`` callback counting failures, the least
  a producer needs to know its records were stored (the worker must know it to commit source offsets). The raw
  consumer checks each message for an error and commits its positions asynchronously every
  ``offset.flush.interval.ms`` when they moved, as the worker's sink loop does; the worker gets the same interval.
* Topics: each source side writes a fresh topic of ``--partitions`` partitions (default 3, so partitioning and
  per-partition positions are exercised); both sink sides drain the same topic, each in a consumer group of its own.

Before the runs a tenth of the records is produced and consumed once, unmeasured, to warm a fresh broker up.
Timing reads the broker's clocks, so process start-up, producer id and group join are left out the same way:

* Source: source topics are created with ``message.timestamp.type=LogAppendTime``; a side's time runs from the
  append time of its first record to that of its last, over all partitions.
* Sink: the broker logs every offset commit in ``__consumer_offsets`` with a timestamp. A side's rate is the
  records committed from its first commit to its last commit short of the end, divided by the time between
  them (the partial interval before the final commit would otherwise add up to one flush interval of idle time).
  That is why the flush interval defaults to 100 ms: commits are the measuring points.

Checked before the ratios are printed: each source topic holds exactly ``--records`` records, the raw producer had
no failed deliveries, each sink group's committed offsets reach the end offsets and the raw consumer counted
``--records``. ``--repeat R`` runs everything R times, framework and raw alternating which goes first, and counts
the best run of each side. ``--profile DIR`` runs each framework side instead in this script's ``profiled-worker``
command: the standalone worker's objects (``Worker``, ``StandaloneHerder``, ``KafkaTransport``, ``FileOffsetStore``)
with the task stepped on the main thread, as ``WorkerTask.execute`` does, under cProfile; it prints where the time
went (the ratios of such a run are not meaningful). ``--client producer.KEY=VALUE`` (or ``consumer.``) gives a
client setting to both sides: the worker as a worker property, the raw loop as the librdkafka setting.

Run it with::

    python bench/kafka_pipeline.py [--bootstrap-servers HOST:PORT] [--records N] [--record-bytes B]
        [--partitions P] [--repeat R] [--profile DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.append(str(Path(__file__).resolve().parents[1] / "examples"))  # synthetic.py: the source and the sink

from headwater.harness.cluster import find_cluster
from headwater.runtime.transport.kafka import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS
from synthetic import sequence_value

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
SOURCE_CLASS = "synthetic.SequenceSourceConnector"
SINK_CLASS = "synthetic.DiscardSinkConnector"
BATCH = 500
"""Records per source poll, per raw ``poll(0)``, per sink ``consume`` (``consumer.max.poll.records``)."""
FULL_QUEUE_WAIT_S = 0.1
WATCH_INTERVAL_S = 0.2
TIMEOUT_S = 30
OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class Run:
    """One measured run of one side."""

    side: str
    """``source`` or ``sink``."""
    kind: str
    """``framework`` or ``raw``."""
    records: int
    seconds: float
    cpu_seconds: float
    """User and system CPU time of the whole child process, start-up included."""

    @property
    def rate(self) -> float:
        return self.records / self.seconds


class BenchError(RuntimeError):
    """A run did not finish, or its records are not all there."""


# ---- child processes -----------------------------------------------------------------------------------------


def child_env() -> dict[str, str]:
    """This environment with ``examples/`` on ``PYTHONPATH``, where a worker finds the synthetic connectors."""
    existing = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES_DIR), *([existing] if existing else [])])}


class Child:
    """A child process; its exit status and CPU time are collected with ``wait4``."""

    def __init__(self, name: str, command: Sequence[str], directory: Path) -> None:
        self.name = name
        self.stdout = directory / f"{name}.out"
        self.stderr = directory / f"{name}.err"
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.process = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True, env=child_env())
        self.returncode: int | None = None
        self.cpu_seconds = 0.0

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
            if pid:
                self.returncode = self.process.returncode = os.waitstatus_to_exitcode(status)
                self.cpu_seconds = usage.ru_utime + usage.ru_stime
        return self.returncode

    def wait(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while (code := self.poll()) is None:
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name} did not exit within {timeout_s:.0f} s\n{self.log_tail()}")
            time.sleep(0.05)
        return code

    def stop(self, timeout_s: float = TIMEOUT_S) -> int:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout_s``."""
        if self.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.wait(timeout_s)
            except BenchError:
                self.process.kill()
                return self.wait(TIMEOUT_S)
        return self.returncode or 0

    def result(self) -> dict[str, Any]:
        """The JSON object a raw loop printed last."""
        lines = self.stdout.read_text().strip().splitlines()
        if not lines:
            raise BenchError(f"{self.name} printed nothing\n{self.log_tail()}")
        found: dict[str, Any] = json.loads(lines[-1])
        return found

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of its stderr, or of its stdout when stderr is empty (where a JVM of ours logs)."""
        stream, text = "stderr", _lines(self.stderr)
        if not text:
            stream, text = "stdout", _lines(self.stdout)
        return f"--- {self.name} {stream} (last {lines} lines) ---\n" + "\n".join(text[-lines:])


def _lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines() if path.exists() else []


def raw_produce(args: argparse.Namespace) -> int:
    """The raw source side: produce the sequence, serve delivery reports, flush; print what happened."""
    producer = Producer({**PRODUCER_DEFAULTS, **settings(args.config), "bootstrap.servers": args.bootstrap_servers})
    failed = 0

    def on_delivery(error: KafkaError | None, message: Any) -> None:
        nonlocal failed
        if error is not None:
            failed += 1

    produce, topic, size = producer.produce, args.topic, args.record_bytes
    for start in range(0, args.records, BATCH):
        for n in range(start, min(start + BATCH, args.records)):
            value = sequence_value(n, size)
            while True:
                try:
                    produce(topic, value, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(FULL_QUEUE_WAIT_S)
        producer.poll(0)
    undelivered = producer.flush(TIMEOUT_S)
    print(json.dumps({"produced": args.records, "failed": failed, "undelivered": undelivered}), flush=True)
    return 0


def raw_consume(args: argparse.Namespace) -> int:
    """The raw sink side: consume and count until SIGTERM, committing positions every flush interval."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    config = {**CONSUMER_DEFAULTS, **settings(args.config), "bootstrap.servers": args.bootstrap_servers}
    consumer = Consumer({**config, "group.id": args.group})
    consumer.subscribe([args.topic])
    interval_s = args.flush_interval_ms / 1000
    consumed = errors = committed = 0
    next_commit = time.monotonic() + interval_s
    while not stop.is_set():
        for message in consumer.consume(BATCH, max(next_commit - time.monotonic(), 0)):
            error = message.error()
            if error is None:
                consumed += 1
            elif error.code() != KafkaError._PARTITION_EOF:
                errors += 1
        now = time.monotonic()
        if now >= next_commit:
            if consumed != committed:
                positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
                consumer.commit(offsets=positions, asynchronous=True)
                committed = consumed
            next_commit = now + interval_s
    positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
    if positions:
        consumer.commit(offsets=positions, asynchronous=False)
    consumer.close()
    print(json.dumps({"consumed": consumed, "errors": errors}), flush=True)
    return 0


def produce_sequence(bootstrap_servers: str, topic: str, records: int, record_bytes: int) -> int:
    """Write ``sequence_value(0..records-1)`` to ``topic`` (unmeasured set-up); return how many were not delivered."""
    producer = Producer({**PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap_servers})
    for n in range(records):
        while True:
            try:
                producer.produce(topic, sequence_value(n, record_bytes))
                break
            except BufferError:
                producer.poll(FULL_QUEUE_WAIT_S)
    return int(producer.flush(TIMEOUT_S))


def settings(pairs: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs as a dict."""
    return dict(pair.split("=", 1) for pair in pairs)


def read_properties(path: str | Path) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and line[0] not in "#!":
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def write_properties(path: Path, props: dict[str, Any]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def profiled_worker(args: argparse.Namespace) -> int:
    """The standalone worker's objects in this process, its tasks stepped on the main thread under cProfile
    until SIGTERM."""
    from headwater.runtime.herder import StandaloneHerder
    from headwater.runtime.storage.offsets import FileOffsetStore
    from headwater.runtime.transport.kafka import KafkaTransport
    from headwater.runtime.worker import Worker

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    worker_props = read_properties(args.worker_properties)
    store = FileOffsetStore(worker_props["offset.storage.file.filename"])
    store.start()
    worker = Worker(worker_props, KafkaTransport(worker_props["bootstrap.servers"]), store, threaded=False)
    herder = StandaloneHerder(worker)
    profiler = cProfile.Profile()
    profiler.enable()
    for path in args.connector_properties:
        props = read_properties(path)
        herder.put_connector_config(props["name"], props)
    while not stop.is_set():
        if not worker.step():
            time.sleep(0.005)  # the idle wait of WorkerTask.execute
    profiler.disable()
    profiler.dump_stats(args.profile)
    herder.stop()
    store.stop()
    return 0


# ---- reading the cluster -------------------------------------------------------------------------------------


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` of ``text``, which picks a group's ``__consumer_offsets`` partition."""
    h = 0
    for unit in struct.unpack(f"<{len(text.encode('utf-16-le')) // 2}H", text.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


class Inspector:
    """Creates topics and reads record counts, append times and offset commits off the cluster."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.admin = AdminClient({"bootstrap.servers": bootstrap_servers})
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap_servers,
                "group.id": "headwater-bench-inspector",
                "enable.auto.commit": False,
            }
        )
        self.partitions: dict[str, int] = {}

    def create_topic(self, name: str, partitions: int, config: dict[str, str] | None = None) -> str:
        future = self.admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name]
        future.result(TIMEOUT_S)
        self.partitions[name] = partitions
        return name

    def delete_topics(self, names: Sequence[str]) -> None:
        if names:
            for future in self.admin.delete_topics(list(names), operation_timeout=TIMEOUT_S).values():
                with contextlib.suppress(Exception):
                    future.result(TIMEOUT_S)

    def watermarks(self, topic: str) -> list[tuple[int, int]]:
        """Low and high watermark of each partition, retrying while a new topic's leaders settle."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                return [
                    self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S)
                    for p in range(self.partitions[topic])
                ]
            except KafkaException:  # NOT_LEADER_FOR_PARTITION for a moment after creation, not marked retriable
                if time.monotonic() > deadline:
                    raise
                time.sleep(WATCH_INTERVAL_S)

    def count(self, topic: str) -> int:
        return sum(high - low for low, high in self.watermarks(topic))

    def committed(self, group: str, topic: str) -> int:
        """Records of ``topic`` below the group's committed offsets."""
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(self.partitions[topic])])
        found = self.admin.list_consumer_group_offsets([request])[group].result(TIMEOUT_S)
        lows = [low for low, _ in self.watermarks(topic)]
        return sum(max(tp.offset - lows[tp.partition], 0) for tp in found.topic_partitions if tp.offset >= 0)

    def _read(self, topic: str, partition: int, offset: int) -> Any:
        self.consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + TIMEOUT_S
        try:
            while time.monotonic() < deadline:
                message = self.consumer.poll(1.0)
                if message is not None and message.error() is None:
                    return message
        finally:
            self.consumer.unassign()
        raise BenchError(f"cannot read {topic}[{partition}]@{offset}")

    def append_span_ms(self, topic: str) -> tuple[int, int]:
        """The broker's append times of the first and the last record of ``topic``, over all partitions."""
        stamps: list[int] = []
        for partition, (low, high) in enumerate(self.watermarks(topic)):
            if high > low:
                for offset in (low, high - 1):
                    kind, stamp = self._read(topic, partition, offset).timestamp()
                    if kind != TIMESTAMP_LOG_APPEND_TIME:
                        raise BenchError(f"{topic} does not use LogAppendTime; the broker refused the topic config")
                    stamps.append(stamp)
        return min(stamps), max(stamps)

    def commit_log_start(self, group: str) -> tuple[int, int]:
        """The ``__consumer_offsets`` partition of ``group`` and its end offset now."""
        metadata = self.admin.list_topics(OFFSETS_TOPIC, timeout=TIMEOUT_S).topics[OFFSETS_TOPIC]
        partition = (java_string_hash(group) & 0x7FFFFFFF) % len(metadata.partitions)
        _, high = self.consumer.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, partition), timeout=TIMEOUT_S)
        return partition, high

    def commit_log(self, group: str, topic: str, start: tuple[int, int]) -> list[tuple[int, int]]:
        """``(broker timestamp ms, records committed)`` after each offset commit of ``group`` on ``topic`` logged
        since ``start`` (from :meth:`commit_log_start`)."""
        partition, offset = start
        _, high = self.consumer.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, partition), timeout=TIMEOUT_S)
        lows = [low for low, _ in self.watermarks(topic)]
        latest = dict(enumerate(lows))
        samples: list[tuple[int, int]] = []
        self.consumer.assign([TopicPartition(OFFSETS_TOPIC, partition, offset)])
        deadline = time.monotonic() + TIMEOUT_S
        try:
            while offset < high:
                if time.monotonic() > deadline:
                    raise BenchError(f"cannot read {OFFSETS_TOPIC}[{partition}] up to {high}")
                for message in self.consumer.consume(1000, 1.0):
                    if message.error() is not None:
                        continue
                    offset = (message.offset() or 0) + 1
                    commit = parse_offset_commit(message.key(), message.value(), group, topic)
                    if commit is None:
                        continue
                    latest[commit[0]] = commit[1]
                    _, stamp = message.timestamp()
                    total = sum(latest[p] - lows[p] for p in latest)
                    if samples and samples[-1][0] == stamp:  # the same commit, another partition
                        samples[-1] = (stamp, total)
                    else:
                        samples.append((stamp, total))
        finally:
            self.consumer.unassign()
        return samples

    def close(self) -> None:
        """Close the clients (before the cluster stops, so that they do not log their lost connections)."""
        self.consumer.close()
        del self.admin  # librdkafka destroys an admin client's handle when the object goes


def parse_offset_commit(key: bytes | None, value: bytes | None, group: str, topic: str) -> tuple[int, int] | None:
    """``(partition, offset)`` when a ``__consumer_offsets`` record is an offset commit of ``group`` on ``topic``.

    Key versions 0 and 1: int16 version, then group and topic as int16-length strings, then an int32 partition.
    Every value version starts with an int16 version and the int64 offset.
    """
    if key is None or value is None or len(key) < 4 or struct.unpack_from(">h", key)[0] not in (0, 1):
        return None
    (length,) = struct.unpack_from(">h", key, 2)
    if key[4 : 4 + length].decode() != group:
        return None
    at = 4 + length
    (length,) = struct.unpack_from(">h", key, at)
    if key[at + 2 : at + 2 + length].decode() != topic:
        return None
    (partition,) = struct.unpack_from(">i", key, at + 2 + length)
    return partition, struct.unpack_from(">hq", value)[1]


def steady_span(samples: Sequence[tuple[int, int]], total: int) -> tuple[int, float]:
    """Records and seconds from the first commit to the last commit short of ``total`` (the final one if none)."""
    if len(samples) < 2:
        raise BenchError(f"only {len(samples)} offset commits were logged; use more --records")
    first = samples[0]
    short = [s for s in samples[1:] if s[1] < total]
    last = short[-1] if short else next(s for s in samples if s[1] >= total)
    if last[0] <= first[0]:
        raise BenchError("the commits span no time; use more --records or a lower --flush-interval-ms")
    return last[1] - first[1], (last[0] - first[0]) / 1000


# ---- the runs ------------------------------------------------------------------------------------------------


class Bench:
    """Runs the four sides against one cluster, in one scratch directory."""

    def __init__(self, args: argparse.Namespace, bootstrap_servers: str, directory: Path) -> None:
        self.args = args
        self.bootstrap_servers = bootstrap_servers
        self.directory = directory
        self.inspector = Inspector(bootstrap_servers)
        self.run_id = uuid.uuid4().hex[:8]
        self.topics: list[str] = []
        self.profiles: list[Path] = []

    def _name(self, what: str, repeat: int) -> str:
        return f"bench-{self.run_id}-{what}-{repeat}"

    def _framework(self, name: str, connector: dict[str, Any]) -> Child:
        worker_props = write_properties(
            self.directory / f"{name}-worker.properties",
            {
                "bootstrap.servers": self.bootstrap_servers,
                "key.converter": "bytes",
                "value.converter": "bytes",
                "header.converter": "bytes",
                "offset.flush.interval.ms": self.args.flush_interval_ms,
                "offset.storage.file.filename": self.directory / f"{name}.offsets",
                "listeners": "http://127.0.0.1:0",
                "connector.class.allowed.modules": "synthetic",  # the synthetic connectors' import path
                "consumer.max.poll.records": BATCH,
                **settings(self.args.client),
            },
        )
        connector_props = write_properties(self.directory / f"{name}.properties", {"name": name, **connector})
        if self.args.profile:
            profile = Path(self.args.profile) / f"{name}.prof"
            self.profiles.append(profile)
            command = [sys.executable, __file__, "profiled-worker", str(worker_props), "--profile", str(profile)]
        else:
            command = [sys.executable, "-m", "headwater.runtime.commands.cli", "standalone", str(worker_props)]
        return Child(name, [*command, str(connector_props)], self.directory)

    def _raw(self, name: str, command: str, *options: object) -> Child:
        script = [sys.executable, __file__, command, "--bootstrap-servers", self.bootstrap_servers]
        client = "producer." if command == "raw-produce" else "consumer."
        for pair in self.args.client:
            if pair.startswith(client):
                script += ["--config", pair.removeprefix(client)]
        return Child(name, [*script, *map(str, options)], self.directory)

    def _wait_for(self, child: Child, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.args.timeout
        while not done():
            code = child.poll()
            if code is not None and code != 0:
                raise BenchError(f"{child.name} exited with {code} before {what}\n{child.log_tail()}")
            if time.monotonic() > deadline:
                child.stop()
                raise BenchError(f"{child.name}: no {what} within {self.args.timeout} s\n{child.log_tail()}")
            time.sleep(WATCH_INTERVAL_S)

    @staticmethod
    def _check_exit(child: Child) -> None:
        """A worker must stop gracefully on SIGTERM (final commit, exit 0), a raw loop must finish cleanly."""
        if child.returncode != 0:
            raise BenchError(f"{child.name} exited with {child.returncode}\n{child.log_tail()}")

    def source(self, kind: str, repeat: int) -> tuple[Run, str]:
        n = self.args.records
        topic = self._name(f"{kind}-source", repeat)
        self.topics.append(topic)
        self.inspector.create_topic(topic, self.args.partitions, {"message.timestamp.type": "LogAppendTime"})
        if kind == "framework":
            connector = {
                "connector.class": "synthetic.SequenceSourceConnector",
                "tasks.max": 1,
                "topic": topic,
                "max.records": n,
            }
            child = self._framework(topic, {**connector, "record.bytes": self.args.record_bytes, "batch.size": BATCH})
        else:
            child = self._raw(
                topic, "raw-produce", "--topic", topic, "--records", n, "--record-bytes", self.args.record_bytes
            )
        try:
            self._wait_for(child, lambda: self.inspector.count(topic) >= n, f"{n} records in {topic}")
            if kind == "raw":
                child.wait(self.args.timeout)
                result = child.result()
                if result["failed"] or result["undelivered"]:
                    raise BenchError(f"raw producer: {result}")
        finally:
            child.stop()
        self._check_exit(child)
        count = self.inspector.count(topic)
        if count != n:
            raise BenchError(f"{topic} holds {count} records, not {n}")
        first, last = self.inspector.append_span_ms(topic)
        return Run("source", kind, n, (last - first) / 1000, child.cpu_seconds), topic

    def sink(self, kind: str, repeat: int, topic: str) -> Run:
        n = self.args.records
        name = self._name(f"{kind}-sink", repeat)
        if kind == "framework":
            group = f"connect-{name}"
            start = self.inspector.commit_log_start(group)
            child = self._framework(name, {"connector.class": SINK_CLASS, "tasks.max": 1, "topics": topic})
        else:
            group = name
            start = self.inspector.commit_log_start(group)
            interval = self.args.flush_interval_ms
            child = self._raw(name, "raw-consume", "--topic", topic, "--group", group, "--flush-interval-ms", interval)
        try:
            self._wait_for(child, lambda: self.inspector.committed(group, topic) >= n, f"commits up to {n} in {group}")
        finally:
            child.stop()
        self._check_exit(child)
        if kind == "raw" and (counted := child.result()["consumed"]) != n:
            raise BenchError(f"the raw consumer counted {counted} records, not {n}")
        records, seconds = steady_span(self.inspector.commit_log(group, topic, start), n)
        return Run("sink", kind, records, seconds, child.cpu_seconds)

    def warm_up(self) -> None:
        """Produce and consume a tenth of the records once, unmeasured, so that a fresh broker's JIT warm-up does not
        fall on whichever side runs first."""
        n = max(self.args.records // 10, 1)
        topic = self._name("warm-up", 0)
        self.topics.append(topic)
        self.inspector.create_topic(topic, self.args.partitions)
        produce_sequence(self.bootstrap_servers, topic, n, self.args.record_bytes)
        config = {**CONSUMER_DEFAULTS, "bootstrap.servers": self.bootstrap_servers, "group.id": topic}
        consumer = Consumer(config)
        consumer.subscribe([topic])
        consumed, deadline = 0, time.monotonic() + self.args.timeout
        try:
            while consumed < n and time.monotonic() < deadline:
                consumed += sum(1 for message in consumer.consume(BATCH, 1.0) if message.error() is None)
        finally:
            consumer.close()

    def run(self) -> list[Run]:
        runs: list[Run] = []
        sink_topic: str | None = None
        self.warm_up()
        for repeat in range(self.args.repeat):
            order = ("framework", "raw") if repeat % 2 == 0 else ("raw", "framework")
            for kind in order:
                run, topic = self.source(kind, repeat)
                runs.append(report(repeat, run))
                if kind == "framework" and sink_topic is None:
                    sink_topic = topic
            assert sink_topic is not None
            for kind in order:
                runs.append(report(repeat, self.sink(kind, repeat, sink_topic)))
        return runs

    def close(self) -> None:
        if not self.args.keep_topics:
            self.inspector.delete_topics(self.topics)
        self.inspector.close()


HEADER = f"{'repeat':<7}{'side':<8}{'kind':<11}{'records':>10}{'seconds':>9}{'records/s':>12}{'cpu s':>9}"
"""The column heads of the lines :func:`report` prints."""


def report(repeat: int, run: Run) -> Run:
    print(
        f"{repeat:<7}{run.side:<8}{run.kind:<11}{run.records:>10}{run.seconds:>9.3f}{run.rate:>12,.0f}"
        f"{run.cpu_seconds:>9.2f}",
        flush=True,
    )
    return run


def print_profile(path: Path, lines: int) -> None:
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(lines)
    print(f"--- profile {path.name}, by own time ---")
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip()))


@contextlib.contextmanager
def scratch(keep: str | None) -> Iterator[Path]:
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield Path(keep)
    else:
        with tempfile.TemporaryDirectory(prefix="headwater-bench-") as directory:
            yield Path(directory)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    children = {"raw-produce": raw_produce, "raw-consume": raw_consume, "profiled-worker": profiled_worker}
    if argv and argv[0] in children:
        return child_main(argv[0], argv[1:], children[argv[0]])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bootstrap-servers", help="A running cluster; default: find_cluster() (and stop it after).")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=1, help="Runs per side; the best counts.")
    parser.add_argument("--flush-interval-ms", type=int, default=100, help="Offset commit interval, both sides.")
    parser.add_argument("--timeout", type=float, default=300, help="Seconds one run may take.")
    parser.add_argument("--profile", metavar="DIR", help="Profile the framework sides into DIR instead.")
    parser.add_argument("--profile-lines", type=int, default=25)
    parser.add_argument("--keep", metavar="DIR", help="Keep properties, logs and offsets in DIR.")
    parser.add_argument("--keep-topics", action="store_true")
    parser.add_argument(
        "--client",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A producer.* or consumer.* setting for both sides: a worker property, and the raw client's setting.",
    )
    args = parser.parse_args(argv)
    for pair in args.client:
        if "=" not in pair or not pair.startswith(("producer.", "consumer.")):
            parser.error(f"--client {pair}: expected producer.KEY=VALUE or consumer.KEY=VALUE")
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    cluster = find_cluster(args.bootstrap_servers)
    try:
        print(
            f"kafka_pipeline: {args.records} records x {args.record_bytes} bytes, {args.partitions} partitions, "
            f"commits every {args.flush_interval_ms} ms, {cluster.bootstrap_servers} ({cluster.source}), "
            f"worker: {'one-thread Worker under cProfile' if args.profile else 'headwater standalone'}"
            f"{''.join(f', {pair}' for pair in args.client)}",
            flush=True,
        )
        print(HEADER)
        with scratch(args.keep) as directory:
            bench = Bench(args, cluster.bootstrap_servers, directory)
            try:
                runs = bench.run()
            finally:
                bench.close()
            for profile in bench.profiles:
                print_profile(profile, args.profile_lines)
    finally:
        cluster.stop()

    def best(side: str, kind: str) -> float:
        return max(r.rate for r in runs if r.side == side and r.kind == kind)

    print(f"source_ratio={best('source', 'framework') / best('source', 'raw'):.2f} ", end="")
    print(f"sink_ratio={best('sink', 'framework') / best('sink', 'raw'):.2f}")
    return 0


def child_main(command: str, argv: Sequence[str], run: Any) -> int:
    parser = argparse.ArgumentParser(prog=f"kafka_pipeline.py {command}")
    if command == "profiled-worker":
        parser.add_argument("worker_properties")
        parser.add_argument("connector_properties", nargs="+")
        parser.add_argument("--profile", required=True)
    else:
        parser.add_argument("--bootstrap-servers", required=True)
        parser.add_argument("--topic", required=True)
        parser.add_argument("--records", type=int)
        parser.add_argument("--record-bytes", type=int, default=100)
        parser.add_argument("--group")
        parser.add_argument("--flush-interval-ms", type=int, default=100)
        parser.add_argument("--config", action="append", default=[], help="A librdkafka KEY=VALUE setting.")
    result: int = run(parser.parse_args(argv))
    return result


if __name__ == "__main__":
    sys.exit(main())
