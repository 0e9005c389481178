"""The README's main job, ``make demo`` (:mod:`headwater.demo`): its real run on the real broker with
the Spark sink, its fallback without Java (the in-memory transport and the pyarrow sink), and that fallback sink's
commits.

The demo runs on real threads and the real clock and waits on conditions with deadlines of its own; these tests
check what it did, read back independently of the demo's own code, never how fast.
"""

from __future__ import annotations

import pickle
import re
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from headwater.demo import ParquetFileSink, Summary, main
from headwater.demo.backend import spark_missing
from headwater.harness import SimulatedWorker
from headwater.harness.cluster import BOOTSTRAP_ENV
from headwater.sdk import TopicPartition

IN_A_CHILD = """
import io, pickle, sys
from pathlib import Path
from headwater.demo import DemoOptions, run_demo
out = io.StringIO()
summary = run_demo(DemoOptions(directory=Path(sys.argv[1]), bootstrap=sys.argv[2], timeout_s=600), out)
Path(sys.argv[3]).write_bytes(pickle.dumps((summary, out.getvalue())))
"""
"""Runs the demo like the real-broker test's process would, handing back its summary and progress lines."""

EXPECTED_OPS = {"r": 20, "c": 10, "u": 6, "d": 4}
"""What the demo's shop does to its orders: 20 rows snapshotted, then 10 inserts, 6 updates and 4 deletes."""


def table_rows(path: Path) -> list[dict[str, Any]]:
    """The table's rows as pyarrow reads the directory, hidden and ``_`` names skipped."""
    rows: list[dict[str, Any]] = ds.dataset(str(path), format="parquet").to_table().to_pylist()
    return rows


def provisioned(database: Path) -> list[str]:
    """What the CDC connector created in the shop that is still there."""
    with closing(sqlite3.connect(database)) as db:
        return [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'headwater_cdc%'")]


def field(out: str, label: str) -> str:
    found = re.search(rf"^  {label} +(.*)$", out, re.MULTILINE)
    assert found is not None, f"no {label!r} line in:\n{out}"
    return found.group(1)


def assert_every_change_once(summary: Summary, rows: list[dict[str, Any]], topic: str) -> None:
    """The table holds each order change event once, and the summary says what was read back."""
    assert len(rows) == sum(EXPECTED_OPS.values())
    assert sorted(row["kafka_offset"] for row in rows) == list(range(len(rows)))
    assert {row["kafka_topic"] for row in rows} == {topic}
    assert Counter(row["op"] for row in rows) == EXPECTED_OPS
    assert len(summary.rows) == len(rows)
    assert summary.exactly_once
    assert summary.records[topic] == len(rows)
    assert summary.sink_offsets == {f"{topic}-0": len(rows)}


@pytest.mark.kafka
@pytest.mark.spark
def test_demo_on_the_real_broker_puts_every_change_in_the_table_once(kafka_bootstrap: str, tmp_path: Path) -> None:
    if (missing := spark_missing()) is not None:
        pytest.skip(missing)
    # In a process of its own: a process has one SparkSession, and the demo's has no Delta Lake, which the Spark
    # sink's tests in this process need.
    result = tmp_path / "result.pickle"
    child = subprocess.run(
        [sys.executable, "-c", IN_A_CHILD, str(tmp_path), kafka_bootstrap, str(result)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert child.returncode == 0, child.stderr[-4000:]
    summary, progress = pickle.loads(result.read_bytes())
    prefix = re.search(r"POST /connectors (shop-cdc-\w+):", progress)
    assert prefix is not None, progress
    source, topic = prefix.group(1), f"shop-{prefix.group(1).rsplit('-', 1)[1]}.orders"

    assert summary.transport == f"the Kafka cluster at {kafka_bootstrap}"
    assert summary.sink == "spark-sink"
    assert "Spark session ready" in progress
    assert summary.table == tmp_path / "orders"
    assert_every_change_once(summary, table_rows(tmp_path / "orders"), topic)
    assert summary.records[topic.replace(".orders", ".customers")] == 5 + 3  # snapshot, then visits while captured
    assert summary.committed_change() == summary.last_change > summary.last_order_change
    assert summary.heartbeats >= 1
    assert set(summary.active_topics[source]) == {
        topic,
        topic.replace(".orders", ".customers"),
        summary.heartbeat_topic,
    }
    assert summary.active_topics[source.replace("shop-cdc", "orders-lake")] == [topic]
    assert summary.rest_url.startswith("http://127.0.0.1:")
    assert provisioned(tmp_path / "shop.db") == []


def test_demo_without_java_runs_in_memory_with_the_pyarrow_sink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None if name == "java" else which(name))
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)

    assert main(["--dir", str(tmp_path)]) == 0

    out = capsys.readouterr().out
    assert re.search(r"^\[ *[\d.]+ s\] no Spark sink: no Java", out, re.MULTILINE), out
    assert re.search(r"^\[ *[\d.]+ s\] no Kafka broker \(java not found on PATH", out, re.MULTILINE), out
    assert "on the in-memory transport (no Kafka broker could be started), sink: the pyarrow sink" in out
    rows = table_rows(tmp_path / "orders")
    assert Counter(row["op"] for row in rows) == EXPECTED_OPS
    assert sorted(row["kafka_offset"] for row in rows) == list(range(40))
    assert field(out, "records moved") == "shop.orders 40, shop.customers 8, connect-heartbeats 1"
    source_offset = field(out, "source offset")
    committed = re.match(
        r'\{"server": "shop"\}: \{"change_id": (\d+)\} \(the last order change is (\d+); a heartbeat', source_offset
    )
    assert committed is not None, source_offset
    assert int(committed.group(1)) == int(committed.group(2)) + 5  # the 5 visits after customers left the capture
    assert field(out, "sink offsets") == "shop.orders-0: 40"
    assert field(out, "heartbeats") == "1 record in connect-heartbeats"
    assert field(out, "active topics") == (
        "shop-cdc: connect-heartbeats, shop.customers, shop.orders; orders-lake: shop.orders"
    )
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", field(out, "REST API"))
    read_back = "40 rows read back with pyarrow, each change exactly once (r 20, c 10, u 6, d 4)"
    assert field(out, "table") == f"{tmp_path / 'orders'} (Parquet): {read_back}"
    assert field(out, "cleanup").startswith("DELETE shop-cdc: its triggers and audit table dropped from shop.db;")
    assert provisioned(tmp_path / "shop.db") == []


def test_summary_says_when_the_table_does_not_hold_each_change_once(tmp_path: Path) -> None:
    row = {"op": "c", "kafka_topic": "t", "kafka_partition": 0, "kafka_offset": 0}
    summary = Summary(
        transport="x", sink="y", rest_url="http://127.0.0.1:1", records={"t": 1}, source_offsets=[],
        last_order_change=1, last_change=1, sink_offsets={"t-0": 1}, heartbeats=0, heartbeat_topic="hb",
        active_topics={}, table=tmp_path, rows=[row, dict(row)], expected_ops={"c": 1}, cleanup="",
    )  # fmt: skip
    assert summary.changes == 1
    assert not summary.exactly_once
    assert "2 rows read back with pyarrow, NOT each change once (expected {'c': 1})" in summary.lines()[7]


def test_pyarrow_sink_commits_only_what_its_files_hold(
    make_simulated_worker: Callable[..., SimulatedWorker], tmp_path: Path
) -> None:
    worker = make_simulated_worker()
    table = tmp_path / "t"
    worker.add_connector(
        "sink", ParquetFileSink, {"topics": "orders", "table.path": str(table), "flush.max.records": 10}
    )
    for n in range(10):
        worker.produce("orders", {"op": "c", "ts_ms": n}, key={"id": n})
    worker.run_until(lambda: worker.group_offsets("sink") != {}, what="the first file's commit")
    assert worker.group_offsets("sink") == {TopicPartition("orders", 0): 10}
    assert len(table_rows(table)) == 10
    for n in range(10, 13):
        worker.produce("orders", {"op": "u", "ts_ms": n}, key={"id": n})
    task = worker.sink_task("sink")
    worker.run_until(lambda: task.records_put == 13, what="the last 3 records reaching put")
    assert len(table_rows(table)) == 10  # buffered, not written, so not committed
    worker.close()
    rows = sorted(table_rows(table), key=lambda row: row["kafka_offset"])
    assert [row["kafka_offset"] for row in rows] == list(range(13))
    assert rows[0]["kafka_key"] == '{"id":0}'
    assert worker.group_offsets("sink") == {TopicPartition("orders", 0): 13}
