"""End to end, exactly once (issue 24, KIP-618): a JDBC-CDC source in PostgreSQL log mode feeds a Spark sink that
appends the change events to a Delta table, on one ``headwater distributed`` worker with
``exactly.once.source.support=enabled``, SIGKILLed twice at seeded points while a thread inserts, updates and
deletes rows, and started again each time. The table then holds the source table's change history, every change
once, in commit order; so does the CDC topic read ``read_committed``. The counts are printed, for the record."""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession

from headwater.harness.kafka_worker import KafkaInspector
from support.distributed_process import DistributedCluster, DistributedWorkerProcess
from support.lake import Lake
from support.scratch import ScratchDatabase

from .test_sink_kafka import children, gone

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.spark]

CHANGES = 900
KILLS = 2
SEED = 618
INITIAL_ROWS = 20
WARM_UP = 50
"""Changes of each run of the worker made before the rest of its share: once the sink has written them, the rest
streams in while the source captures and the sink writes, and the kill falls among them."""
CHANGES_OFFSET = 1_000
"""Change numbers of the writer start here, above the initial rows' (0 to 19)."""
TIMEOUT_S = 300.0
FAST_GROUP = {"session.timeout.ms": 1_500, "group.heartbeat.interval.ms": 300, "offset.flush.interval.ms": 500}
"""The killed worker's slots move after 1.5 s (the test broker allows sessions from 1 s)."""
COLUMNS = "id BIGINT NOT NULL, change BIGINT NOT NULL, __op STRING NOT NULL, __lsn BIGINT, __deleted STRING"
"""The unwrapped rows: the row's key and the number of the test's change that wrote it (the before image's for a
delete), with the envelope's ``op`` and commit ``lsn``."""

BYTES = {"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"}
"""In the connectors' configs: the CDC task writes its events as JSON bytes, the sink parses them."""

Change = tuple[str, int, int]
"""``(op, id, change)``: one change event, told apart from every other one."""


class Writer(threading.Thread):
    """Inserts, updates and deletes rows of ``ledger`` in small transactions (one to three changes each), up to the
    number :meth:`allow` last allowed, and records each change event it causes in commit order. Change number ``n``
    is written into the row it inserts or updates, so every event differs from every other."""

    def __init__(self, database: ScratchDatabase, seed: int) -> None:
        super().__init__(name="ledger-writer", daemon=True)
        self.database, self.chance = database, random.Random(seed)
        self.live: dict[int, int] = {n: n for n in range(INITIAL_ROWS)}
        """id -> the change number the row holds."""
        self.next_id = INITIAL_ROWS
        self.history: list[Change] = []
        self.allowed = 0
        self.changed = threading.Condition()
        self.stopped = False
        self.error: BaseException | None = None

    def allow(self, count: int) -> None:
        with self.changed:
            self.allowed = count
            self.changed.notify_all()

    def stop(self) -> None:
        with self.changed:
            self.stopped = True
            self.changed.notify_all()

    @property
    def done(self) -> int:
        return len(self.history)

    def _change(self, number: int) -> tuple[str, Change]:
        """The statement of change ``number`` and the event it makes."""
        kind = self.chance.random()
        if len(self.live) < 10 or kind < 0.4:
            row, self.next_id = self.next_id, self.next_id + 1
            self.live[row] = number
            return f"INSERT INTO ledger VALUES ({row}, {number})", ("c", row, number)
        row = self.chance.choice(sorted(self.live))
        if kind < 0.8:
            self.live[row] = number
            return f"UPDATE ledger SET change = {number} WHERE id = {row}", ("u", row, number)
        return f"DELETE FROM ledger WHERE id = {row}", ("d", row, self.live.pop(row))

    def run(self) -> None:
        try:
            while True:
                with self.changed:
                    self.changed.wait_for(lambda: self.stopped or self.done < self.allowed)
                    if self.stopped:
                        return
                    size = min(self.chance.randint(1, 3), self.allowed - self.done)
                first = CHANGES_OFFSET + self.done
                statements, events = zip(*(self._change(first + n) for n in range(size)), strict=True)
                self.database.execute(*statements)
                self.history.extend(events)
                with self.changed:  # the writer's pace, not a wait for anything to happen
                    self.changed.wait_for(lambda: self.stopped, 0.02)
        except BaseException as error:
            self.error = error
            raise


def read_committed(bootstrap: str, topic: str) -> list[Change]:
    """The change events of ``topic`` (partition 0), read ``read_committed`` to its end, in order."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "isolation.level": "read_committed"}
    )
    try:
        end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
        consumer.assign([TopicPartition(topic, 0, 0)])
        found: list[Change] = []
        deadline = time.monotonic() + TIMEOUT_S
        while consumer.position([TopicPartition(topic, 0)])[0].offset < end:
            assert time.monotonic() < deadline, f"{topic} not read to offset {end}"
            for message in consumer.consume(1_000, 0.5):
                if message.error() is not None:
                    assert message.error().code() == -191, message.error()  # _PARTITION_EOF
                    continue
                row = json.loads(message.value())
                found.append((row["__op"], row["id"], row["change"]))
        return found
    finally:
        consumer.close()


def summary(history: list[Change], found: list[Change]) -> tuple[int, int, int]:
    """(events, missing, duplicates) of ``found`` against ``history``."""
    counts = Counter(found)
    missing = sum(1 for event in history if event not in counts)
    return len(found), missing, sum(count - 1 for count in counts.values())


def caught_up(bootstrap: str, topic: str, last: Change, lake: Lake, table: str) -> bool:
    """Whether the CDC topic's last event is the last change made, and Delta holds as many events as the topic:
    then whatever is missing or repeated is lost or repeated for good."""
    in_kafka = read_committed(bootstrap, topic)
    return bool(in_kafka) and in_kafka[-1] == last and len(lake.rows(table, "delta")) >= len(in_kafka)


def kill(worker: DistributedWorkerProcess) -> None:
    """SIGKILL the worker and wait until its Spark JVM has gone too."""
    jvm = children(worker.pid or 0)
    assert worker.kill() == -9
    worker.wait_until(lambda: gone(jvm), 30, "the killed worker's JVM to exit", allow_exit=True)


@pytest.mark.slow(seconds=240)
def test_cdc_to_delta_under_two_sigkills_holds_each_change_once(
    kafka_bootstrap: str,
    postgres_database: ScratchDatabase,
    spark: SparkSession,
    tmp_path: Path,
    unique_name: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    database = postgres_database
    database.execute("CREATE TABLE ledger (id BIGINT PRIMARY KEY, change BIGINT NOT NULL)")
    database.execute(*(f"INSERT INTO ledger VALUES ({n}, {n})" for n in range(INITIAL_ROWS)))
    snapshot: list[Change] = [("r", n, n) for n in range(INITIAL_ROWS)]
    topic = f"{unique_name}.public.ledger"
    KafkaInspector(kafka_bootstrap).create_topic(topic, 1)
    lake = Lake(str(tmp_path / "lake"), spark)
    table = lake.table("ledger")
    source = {
        "connector.class": "jdbc-cdc",
        "connection.url": database.url,
        "capture.mode": "log",
        "slot.name": f"headwater_cdc_{database.name}",  # a slot's name is the server's: the test's own
        "topic.prefix": unique_name,
        "table.include.list": "public.ledger",
        "replica.identity.full": "true",
        "poll.interval.ms": "100",
        "transforms": "unwrap",
        "transforms.unwrap.type": "jdbc-cdc-unwrap",
        "transforms.unwrap.delete.handling.mode": "rewrite",
        "transforms.unwrap.add.fields": "op,lsn",
        **BYTES,
    }
    sink = {
        "connector.class": "spark-sink",
        "topics": topic,
        "table.path": table,
        "table.format": "delta",
        "value.schema": COLUMNS,
        "flush.max.records": 200,
        "flush.interval.ms": 1000,
        "spark.master": "local[1]",
        "spark.driver.memory": "512m",
        **BYTES,
    }
    props = {
        **FAST_GROUP,
        "exactly.once.source.support": "enabled",
        **BYTES,
    }
    chance = random.Random(SEED)
    writer = Writer(database, SEED)
    phase = CHANGES // (KILLS + 1)
    started = time.monotonic()
    mid_stream = 0  # kills while the writer was still changing the table
    spark_python = {"PYSPARK_PYTHON": sys.executable}  # the worker's Spark executors run this Python
    with DistributedCluster(tmp_path / "cluster", kafka_bootstrap, unique_name, props, env=spark_python) as cluster:
        worker = cluster.add_worker()
        http = cluster.http(worker)
        for name, config in (("cdc", source), ("delta", sink)):
            response = http.post("/connectors", json={"name": name, "config": config})
            assert response.status_code == 201, response.text
        worker.wait_until(
            lambda: len(lake.rows(table, "delta")) >= INITIAL_ROWS, TIMEOUT_S, "the snapshot in Delta", interval=1.0
        )
        writer.start()
        try:
            for number in range(KILLS):
                start = phase * number
                for allowed, made in ((start + WARM_UP, start + WARM_UP), (start + phase, start + WARM_UP + 1)):
                    seen = lake.commits(table, "delta")  # a first write of this run (the JVM starts slowly), then
                    writer.allow(allowed)  # changes stream in while this run captures and writes them
                    worker.wait_until(
                        lambda seen=seen, made=made: writer.done >= made and lake.commits(table, "delta") > seen,
                        TIMEOUT_S,
                        f"change {made} made and a Delta commit before kill {number}",
                        interval=0.2,
                    )
                point = start + chance.randint(phase // 2, phase * 3 // 4)
                worker.wait_until(lambda point=point: writer.done >= point, TIMEOUT_S, f"change {point} made")
                time.sleep(chance.uniform(0.0, 0.5))  # the seeded point of the kill, not a wait for a condition
                mid_stream += writer.done < writer.allowed
                kill(worker)
                worker.start()
                worker.url()
            writer.allow(CHANGES)
            worker.wait_until(
                lambda: writer.done == CHANGES and caught_up(kafka_bootstrap, topic, writer.history[-1], lake, table),
                TIMEOUT_S * 2,
                "the last change in the CDC topic and every event of the topic in Delta",
                interval=2.0,
            )
        finally:
            writer.stop()
    assert writer.error is None, writer.error
    history = snapshot + writer.history
    rows = lake.rows(table, "delta")  # in Kafka offset order
    in_delta = [(row["__op"], row["id"], row["change"]) for row in rows]
    in_kafka = read_committed(kafka_bootstrap, topic)
    elapsed = time.monotonic() - started
    with capsys.disabled():
        print(
            f"\n{len(history)} changes ({len(snapshot)} snapshot reads), {KILLS} SIGKILLs ({mid_stream} while the "
            f"table was changing), {elapsed:.0f} s; "
            f"(events, missing, duplicates): Delta {summary(history, in_delta)}, "
            f"Kafka read_committed {summary(history, in_kafka)}"
        )
    assert summary(history, in_delta) == (len(history), 0, 0), "Delta holds every change event exactly once"
    assert summary(history, in_kafka) == (len(history), 0, 0), "the CDC topic holds every change event once"
    assert sorted(in_delta[:INITIAL_ROWS]) == snapshot, "the snapshot first"
    assert in_delta[INITIAL_ROWS:] == writer.history, "then the changes in the order of their commits"
    streamed = [row["__lsn"] for row in rows[INITIAL_ROWS:]]
    assert None not in streamed and streamed == sorted(streamed), "streamed events carry their commit LSNs, rising"
    assert worker.starts == KILLS + 1
