"""The Spark sink against the real broker: records that do not fit go to the runtime's dead-letter topic; a sink
whose consumer group is rewound reads on from the table's offsets, writing nothing twice (s3a); a ``headwater
standalone`` worker SIGKILLed at random points while records stream in, restarted each time, leaves every record in
the table exactly once, for Parquet and for Delta, each on an S3-compatible server through s3a (Delta with a Spark
standalone cluster's executor, in a working directory of its own, doing the writes); and two distributed workers
write one table on s3a at once (Delta through its DynamoDB commit coordinator)."""

from __future__ import annotations

import json
import logging
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaPartition
from pyspark.sql import SparkSession

from headwater.harness.kafka_worker import KafkaInspector, KafkaSteppedWorker
from headwater.reference_connectors.spark_sink import DeltaTable, ParquetTable, SparkSinkConnector
from headwater.reference_connectors.spark_sink.config import SinkConfig
from headwater.reference_connectors.spark_sink.delta_table import dynamodb_coordinator
from headwater.reference_connectors.spark_sink.schema import table_schema
from headwater.runtime.error_handling.dead_letter import CONTEXT_HEADERS, PREFIX
from headwater.sdk import TopicPartition
from support.distributed_process import DistributedCluster
from support.lake import Lake
from support.process import WorkerProcess
from support.rest_worker import wait_until
from support.spark_services import S3Server, SparkCluster, application_conf

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

log = logging.getLogger(__name__)

TIMEOUT_S = 300.0
PARTITIONS = 3


def test_records_that_do_not_fit_go_to_the_dead_letter_topic_with_their_origin(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path, unique_name: str, read_rows: Any
) -> None:
    """Reported from the background write thread (``write.background`` is on by default): the table holds the rows
    that fit once and the offsets past the dead letters, which the runtime's producer wrote with their original
    bytes and context headers."""
    topic, dead = f"in-{unique_name}", f"dlq-{unique_name}"
    inspector = KafkaInspector(kafka_bootstrap)
    inspector.create_topic(topic)
    worker = KafkaSteppedWorker(kafka_bootstrap, {"key.converter": "bytes", "value.converter": "bytes"})
    try:
        for value in (b'{"id":1}', b"{broken", b'{"id":"two"}', b'{"id":3}', b'{"id": "last"}'):
            worker.produce(topic, value, key=b"k")
        worker.add_connector(
            unique_name,
            SparkSinkConnector,
            {
                "topics": topic,
                "table.path": str(tmp_path / "t"),
                "value.schema": "id BIGINT",
                "flush.max.records": 5,
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dead,
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true",
            },
        )
        committed = {TopicPartition(topic, 0): 5}
        worker.run_until(lambda: worker.sink_task(unique_name).last_committed == committed, 60_000, "the commit")
        assert [row["id"] for row in read_rows(tmp_path / "t", "parquet")] == [1, 3]
        table = ParquetTable(spark, str(tmp_path / "t"), unique_name, (), 0)
        assert table.last_offsets() == {TopicPartition(topic, 0): 4}  # past the last record, a dead letter
        letters = inspector.messages(dead)
        assert [(m.key, m.value) for m in letters] == [
            (b"k", b"{broken"),
            (b"k", b'{"id":"two"}'),
            (b"k", b'{"id": "last"}'),
        ]
        for letter, offset in zip(letters, (1, 2, 4), strict=True):
            headers = dict(letter.headers or ())
            assert [key for key, _ in letter.headers or ()] == list(CONTEXT_HEADERS)
            assert headers[PREFIX + "topic"] == topic.encode()
            assert (headers[PREFIX + "partition"], headers[PREFIX + "offset"]) == (b"0", str(offset).encode())
            assert headers[PREFIX + "stage"] == b"TASK_PUT"
            assert headers[PREFIX + "exception.class.name"].endswith(b".SchemaMismatch")
        assert b"changed from number to string" in dict(letters[1].headers or ())[PREFIX + "exception.message"]
    finally:
        worker.close()


@pytest.mark.parametrize("table_format", ["parquet", "delta"])
def test_replaying_from_an_older_group_offset_writes_nothing_twice_on_s3a(
    kafka_bootstrap: str, spark: SparkSession, s3_server: S3Server, s3_bucket: str, unique_name: str, table_format: str
) -> None:
    """The group's offsets are only advisory: a sink whose group is rewound to the start reads on from the table's
    offsets (a replay from the group's offset once gave 4,000 rows for 2,500 records on s3a, silently)."""
    topic, group = f"in-{unique_name}", f"connect-{unique_name}"
    KafkaInspector(kafka_bootstrap).create_topic(topic, PARTITIONS)
    lake = Lake(f"s3a://{s3_bucket}", spark, s3_server)
    table = lake.table("replayed")
    connector = {
        "topics": topic,
        "table.path": table,
        "table.format": table_format,
        "table.single.writer": "true",
        "value.schema": "id BIGINT NOT NULL",
        "flush.max.records": 50,
        **s3_server.hadoop_conf(),
    }
    producer = Producer({"bootstrap.servers": kafka_bootstrap})

    def run(first: int, last: int) -> None:
        """Produce ids ``first..last-1``, then run the sink until the group has committed all of them."""
        for n in range(first, last):
            producer.produce(topic, json.dumps({"id": n}).encode(), partition=n % PARTITIONS)
        producer.flush(30)
        end = {TopicPartition(topic, p): len(range(p, last, PARTITIONS)) for p in range(PARTITIONS)}
        worker = KafkaSteppedWorker(kafka_bootstrap, {"key.converter": "bytes", "value.converter": "bytes"})
        try:
            worker.add_connector(unique_name, SparkSinkConnector, connector)
            worker.run_until(lambda: worker.group_offsets(unique_name) == end, 120_000, f"commits up to {end}")
        finally:
            worker.close()

    run(0, 300)
    rewind = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
    try:  # the group is empty: its offsets can be set from outside it
        rewind.commit(offsets=[KafkaPartition(topic, p, 0) for p in range(PARTITIONS)], asynchronous=False)
    finally:
        rewind.close()
    assert KafkaInspector(kafka_bootstrap).committed(group) == {TopicPartition(topic, p): 0 for p in range(PARTITIONS)}
    run(300, 450)
    rows = lake.rows(table, table_format)
    assert sorted(row["id"] for row in rows) == list(range(450)), f"{len(rows)} rows for 450 records"


# ---- SIGKILL at random points ----------------------------------------------------------------------------------


class Stream(threading.Thread):
    """Produces JSON records ``{"id": n}`` over the partitions in small paced batches, like a live topic, up to
    the number :meth:`allow` last allowed (so each run of the worker has records streaming in while it works)."""

    def __init__(self, bootstrap: str, topic: str, batch: int = 10, pause_s: float = 0.2) -> None:
        super().__init__(name=f"stream-{topic}", daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
        self.topic, self.batch, self.pause_s = topic, batch, pause_s
        self.allowed = self.produced = 0
        self.changed = threading.Condition()
        self.stopped = False

    def allow(self, count: int) -> None:
        with self.changed:
            self.allowed = count
            self.changed.notify_all()

    def stop(self) -> None:
        with self.changed:
            self.stopped = True
            self.changed.notify_all()

    def run(self) -> None:
        while True:
            with self.changed:
                self.changed.wait_for(lambda: self.stopped or self.produced < self.allowed)
                if self.stopped:
                    return
                end = min(self.produced + self.batch, self.allowed)
            for n in range(self.produced, end):
                value = json.dumps({"id": n, "pad": "x" * 40}).encode()
                self.producer.produce(self.topic, value, str(n).encode(), partition=n % PARTITIONS)
            self.producer.flush(30)
            self.produced = end
            with self.changed:  # the stream's pace, not a wait for anything to happen
                self.changed.wait_for(lambda: self.stopped, self.pause_s)


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (the worker's JVM)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def gone(pids: list[int]) -> bool:
    return not [pid for pid in pids if Path(f"/proc/{pid}").exists()]


@pytest.fixture
def stream_topic(kafka_bootstrap: str, unique_name: str) -> str:
    KafkaInspector(kafka_bootstrap).create_topic(unique_name, PARTITIONS)
    return unique_name


@pytest.fixture
def worker_process(tmp_path: Path, kafka_bootstrap: str, stream_topic: str) -> Iterator[WorkerProcess]:
    """A ``headwater standalone`` worker process, working in ``tmp_path/worker``, whose executors run the same
    Python."""
    worker = WorkerProcess(
        tmp_path / "worker",
        {
            "bootstrap.servers": kafka_bootstrap,
            "key.converter": "bytes",
            "value.converter": "bytes",
            "offset.flush.interval.ms": 1000,
            "consumer.session.timeout.ms": 6000,
            "consumer.heartbeat.interval.ms": 500,
        },
        {},
        env={"PYSPARK_PYTHON": sys.executable},
    )
    yield worker
    worker.close()


PLACES = [
    pytest.param("local", "parquet", id="s3a-parquet", marks=pytest.mark.slow(seconds=90)),
    pytest.param("cluster", "delta", id="cluster-s3a-delta", marks=pytest.mark.slow(seconds=250)),
]
"""Which master writes the table, on the S3 server through s3a, and its format: each format's commit protocol once on
the object store, where a file's move is a copy and a Delta commit needs the single writer (the harder place for both;
the same protocols on a local disk are the easier case), Delta on the cluster master. That a relative table path on
the cluster lands where the driver reads needs no kill: test_cluster writes one and reads it back."""


@pytest.mark.parametrize(("master", "table_format"), PLACES)
def test_sigkill_at_random_points_loses_and_repeats_no_record(
    worker_process: WorkerProcess,
    kafka_bootstrap: str,
    stream_topic: str,
    request: pytest.FixtureRequest,
    spark: SparkSession,
    s3_server: S3Server,
    s3_bucket: str,
    master: str,
    table_format: str,
) -> None:
    records, kills = 1800, 2  # 600 records per run of the worker, at 50 per second
    lake = Lake(f"s3a://{s3_bucket}", spark, s3_server)
    table = lake.table("table")
    connector = {
        "connector.class": "spark-sink",
        "topics": stream_topic,
        "table.path": table,
        "table.format": table_format,
        "table.single.writer": "true",
        "flush.max.records": 200,
        "flush.interval.ms": 2000,
        "spark.driver.memory": "512m",
        **s3_server.hadoop_conf(),
    }
    if master == "cluster":
        cluster: SparkCluster = request.getfixturevalue("spark_cluster")
        connector |= application_conf(cluster.master_url, cores=1)
    worker_process.connectors[stream_topic] = connector
    seed = int.from_bytes(os.urandom(4), "big")
    chance = random.Random(seed)
    stream = Stream(kafka_bootstrap, stream_topic)
    stream.start()
    phase = records // (kills + 1)
    mid_stream = 0
    try:
        worker_process.start()
        for kill in range(kills):
            worker_process.wait_for_log(f"opened {PARTITIONS} partitions", TIMEOUT_S)
            for allowed in (phase * kill + 100, phase * (kill + 1)):  # a first write (a cold JVM's is slow), then
                seen = lake.commits(table, table_format)  # records stream in while this run consumes and writes
                stream.allow(allowed)
                worker_process.wait_until(
                    lambda seen=seen: lake.commits(table, table_format) > seen,
                    TIMEOUT_S,
                    f"a write before kill {kill}",
                )
            delay = chance.uniform(0.0, 2.0)
            time.sleep(delay)  # the random point of the kill, not a wait for a condition
            jvm = children(worker_process.pid or 0)
            mid_stream += stream.produced < stream.allowed
            written = lake.commits(table, table_format)
            log.info(
                "kill %d %.2f s after a write: seed %d, %d writes, %d produced",
                kill,
                delay,
                seed,
                written,
                stream.produced,
            )
            assert worker_process.kill() == -9
            worker_process.wait_until(lambda jvm=jvm: gone(jvm), 30, "the killed worker's JVM to exit", allow_exit=True)
            worker_process.start()
        stream.allow(records)
        # the sink commits its group's offsets only from what the table holds: the group at the end means the last
        # write is in (a cheap question to the broker each second, where reading the table each time cost a scan)
        end = {TopicPartition(stream_topic, p): len(range(p, records, PARTITIONS)) for p in range(PARTITIONS)}
        group, inspector = f"connect-{stream_topic}", KafkaInspector(kafka_bootstrap)
        worker_process.wait_until(
            lambda: inspector.committed(group) == end, TIMEOUT_S, f"the group's offsets at {end}", interval=1.0
        )
        assert worker_process.terminate(TIMEOUT_S) == 0  # a Spark application stops slowly on a loaded machine
    finally:
        stream.stop()
    log.info("%d of %d kills while records were streaming in", mid_stream, kills)
    rows = lake.rows(table, table_format)
    assert len(rows) == records, f"{len(rows)} rows for {records} records (seed {seed})"
    where = Counter((row["kafka_partition"], row["kafka_offset"]) for row in rows)
    assert [key for key, count in where.items() if count > 1] == [], f"repeated records (seed {seed})"
    assert sorted(row["id"] for row in rows) == list(range(records)), f"lost records (seed {seed})"
    assert worker_process.starts == kills + 1


@pytest.mark.parametrize(
    "table_format",
    [
        pytest.param("parquet", marks=pytest.mark.slow(seconds=90)),
        pytest.param("delta", marks=pytest.mark.slow(seconds=150)),
    ],
)
def test_two_distributed_workers_share_a_connectors_partitions_and_one_table_on_s3a(
    kafka_bootstrap: str,
    stream_topic: str,
    tmp_path: Path,
    spark: SparkSession,
    s3_server: S3Server,
    s3_bucket: str,
    table_format: str,
) -> None:
    """Two worker processes, each with its own SparkSession, write one table on S3 at once: every record once. A
    Delta table's commits go to Delta's DynamoDB commit coordinator (the test server's DynamoDB); without one it is
    refused (see test_config)."""
    records = 1200
    lake = Lake(f"s3a://{s3_bucket}", spark, s3_server)
    table = lake.table("shared")
    connector = {
        "connector.class": "spark-sink",
        "tasks.max": "2",
        "topics": stream_topic,
        "table.path": table,
        "table.format": table_format,
        "flush.max.records": 100,
        "flush.interval.ms": 1000,
        "spark.master": "local[1]",
        "spark.driver.memory": "512m",
        **s3_server.hadoop_conf(),
    }
    if table_format == "delta":
        connector |= {
            "table.commit.coordinator": "dynamodb",
            "table.commit.coordinator.dynamodb.endpoint": s3_server.endpoint,
            "table.commit.coordinator.dynamodb.table": s3_bucket,
            "value.schema": "id BIGINT NOT NULL, pad STRING",
        }
        # created first, as docs/spark-sink.md advises for a distributed connector: the first task's creation can
        # race a zombie instance of itself while the workers' first rebalance moves it (a documented limitation)
        coordinator = dynamodb_coordinator(s3_bucket, s3_server.endpoint)
        parsed = SinkConfig.parse({**connector, "name": stream_topic})
        assert parsed.value_schema is not None
        schema = table_schema(parsed.value_schema, parsed.metadata_columns, parsed.metadata_prefix, parsed.key_type)
        DeltaTable(spark, table, stream_topic, (), 1).coordinate(coordinator, creator=True).prepare(schema)
    stream = Stream(kafka_bootstrap, stream_topic)
    worker_props = {"key.converter": "bytes", "value.converter": "bytes", "offset.flush.interval.ms": 1000}
    with DistributedCluster(
        tmp_path, kafka_bootstrap, f"spark-{stream_topic}", worker_props, env=s3_server.aws_env()
    ) as cluster:
        workers = [cluster.add_worker() for _ in range(2)]
        response = cluster.http(workers[0]).post("/connectors", json={"name": stream_topic, "config": connector})
        assert response.status_code == 201, response.text
        cluster.wait_for_running(stream_topic, 2, timeout=TIMEOUT_S)
        # the first worker to read the task configs may start both tasks; the next rebalance gives one to the other
        both = sorted(w.worker_id for w in workers)
        wait_until(
            lambda: sorted(cluster.running_tasks(stream_topic).values()) == both,
            "one task (1 or 2 partitions) on each worker",
            TIMEOUT_S,
        )
        stream.start()
        try:
            stream.allow(records)

            def complete() -> bool:
                return stream.produced == records and len(lake.rows(table, table_format)) >= records

            workers[0].wait_until(complete, TIMEOUT_S, f"{records} rows in the table", interval=1.0)
        finally:
            stream.stop()
    rows = lake.rows(table, table_format)
    assert len(rows) == records
    assert sorted(row["id"] for row in rows) == list(range(records))
    if table_format == "delta":  # every commit went through the coordinator, by both workers' tasks
        (entry,) = [
            item for item in s3_server.dynamodb().scan(TableName=s3_bucket)["Items"] if item["path"]["S"] == table
        ]
        version = int(spark.sql(f"DESCRIBE HISTORY delta.`{table}`").agg({"version": "max"}).first()[0])
        assert int(entry["tableVersion"]["N"]) == version == lake.commits(table, "delta") - 1
        partitions = [TopicPartition(stream_topic, n) for n in range(PARTITIONS)]
        last = records // PARTITIONS - 1
        assert DeltaTable(spark, table, stream_topic, (), 1).recover(partitions) == dict.fromkeys(partitions, last)
