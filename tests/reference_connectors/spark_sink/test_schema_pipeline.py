"""End to end with schemas (issue 36), on the real broker with the real Schema Registry: JDBC-CDC in PostgreSQL log
mode with ``record.schemas=connect``, its change events unwrapped into rows (``jdbc-cdc-unwrap``) and written by the
Avro converter, which registers each row schema under the topic's subjects; the Spark sink, reading them back with
the same converter, builds its Delta table from the rows' schemas. A column added to the captured table mid-stream
registers a second version of the subject and becomes a column of the Delta table: the rows written before it hold
null there, and every change is in the table once."""

from __future__ import annotations

import datetime
import decimal
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pyspark.sql import SparkSession

from headwater.harness import SimulatedWorker
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector
from headwater.reference_connectors.spark_sink import SparkSinkConnector, SparkSinkTask
from headwater.runtime.tasks.base import State
from support.lake import Lake
from support.scratch import ScratchDatabase

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.spark]

Make = Callable[..., SimulatedWorker]
DEADLINE_MS = 600_000
"""Virtual time for each wait: generous, because each step of the worker waits on the real broker, database and
Spark, and a loaded machine needs more steps for the same progress (the condition, not the time, is the test)."""
BEFORE, AFTER = 12, 12
"""Rows inserted before the column is added (the snapshot's and the stream's), and after it."""


def placed(n: int) -> datetime.datetime:
    return datetime.datetime(2026, 11, 29, 8, 0, 0, n * 1000, tzinfo=datetime.UTC)


def insert(n: int, note: bool) -> str:
    values = f"{n}, {n}.25, '{placed(n):%Y-%m-%d %H:%M:%S.%f}'" + (f", 'note {n}'" if note else "")
    return f"INSERT INTO orders VALUES ({values})"


def written(worker: SimulatedWorker, name: str) -> int:
    if worker.task_state(name, 0) is State.FAILED:
        raise AssertionError(f"task {name}-0 failed: {worker.sink_task(name, 0).failure!r}")
    task = worker.sink_task(name, 0).task
    assert isinstance(task, SparkSinkTask)
    return task.writer.rows if task.writer is not None else 0


@pytest.mark.slow(seconds=20)
@pytest.mark.parametrize("make_worker", ["kafka"], indirect=True)
def test_a_column_added_mid_stream_reaches_delta_through_avro_with_every_change_once(
    make_worker: Make,
    postgres_database: ScratchDatabase,
    schema_registry_url: str,
    spark: SparkSession,
    tmp_path: Path,
    unique_name: str,
) -> None:
    database = postgres_database
    database.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, amount NUMERIC(10,2) NOT NULL, placed TIMESTAMP(3))")
    database.execute(*(insert(n, note=False) for n in range(BEFORE // 2)))
    avro = {
        f"{part}.converter{key}": value
        for part in ("key", "value")
        for key, value in ((".schema.registry.url", schema_registry_url), ("", "avro"))
    }
    worker = make_worker({**avro, "offset.flush.interval.ms": 100})
    topic = f"{unique_name}.public.orders"
    worker.create_topic(topic, 1)
    worker.add_connector(
        "cdc",
        JdbcCdcSourceConnector,
        {
            "connection.url": database.url,
            "capture.mode": "log",
            "slot.name": f"headwater_cdc_{database.name}",  # a slot's name is the server's: the test's own
            "topic.prefix": unique_name,
            "table.include.list": "public.orders",
            "replica.identity.full": "true",
            "poll.interval.ms": 0,
            "record.schemas": "connect",
            "decimal.handling.mode": "precise",
            "time.precision.mode": "connect",
            "transforms": "unwrap",
            "transforms.unwrap.type": "jdbc-cdc-unwrap",
            "transforms.unwrap.delete.handling.mode": "rewrite",
            "transforms.unwrap.add.fields": "op",
        },
    )
    lake = Lake(str(tmp_path / "lake"), spark)
    table = lake.table("orders")
    worker.add_connector(
        "delta",
        SparkSinkConnector,
        {
            "topics": topic,
            "table.path": table,
            "table.format": "delta",
            "metadata.columns": "partition,offset",
            "flush.max.records": 6,
            "write.background": "false",  # a background write takes real time the virtual clock does not wait for
        },
    )
    worker.run_until(lambda: written(worker, "delta") >= BEFORE // 2, DEADLINE_MS, "the snapshot in Delta")
    database.execute(*(insert(n, note=False) for n in range(BEFORE // 2, BEFORE)))
    worker.run_until(lambda: written(worker, "delta") >= BEFORE, DEADLINE_MS, f"{BEFORE} rows in Delta")

    database.execute("ALTER TABLE orders ADD COLUMN note TEXT")
    database.execute(*(insert(n, note=True) for n in range(BEFORE, BEFORE + AFTER)))
    database.execute("UPDATE orders SET note = 'changed' WHERE id = 0", "DELETE FROM orders WHERE id = 1")
    events = BEFORE + AFTER + 2
    worker.run_until(lambda: written(worker, "delta") >= events, DEADLINE_MS, f"{events} rows in Delta")

    rows = sorted(lake.rows(table, "delta"), key=lambda row: row["kafka_offset"])  # one partition: commit order
    where = Counter((row["kafka_partition"], row["kafka_offset"]) for row in rows)
    assert [key for key, count in where.items() if count > 1] == []
    assert len(rows) == events
    assert "note" in rows[0]
    assert [(r["id"], r["__op"], r["note"]) for r in rows[:BEFORE]] == [
        (n, "r" if n < BEFORE // 2 else "c", None) for n in range(BEFORE)
    ]
    assert [(r["id"], r["__op"], r["note"]) for r in rows[BEFORE:]] == [
        *((n, "c", f"note {n}") for n in range(BEFORE, BEFORE + AFTER)),
        (0, "u", "changed"),
        (1, "d", None),
    ]
    assert all(r["amount"] == decimal.Decimal(f"{r['id']}.25") for r in rows)
    assert [r["placed"] for r in rows[:BEFORE]] == [placed(n).replace(tzinfo=None) for n in range(BEFORE)]

    subject = f"{schema_registry_url}/subjects/{topic}-value/versions"
    assert httpx.get(subject, timeout=30).json() == [1, 2]
