"""The Spark sink task in the simulated worker (the runtime's own loops, virtual clock) writing real tables through
the test process's SparkSession: the flush policy, what pre_commit commits, the rewind from the table, and records
that do not fit the schema."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from headwater.harness.simulated import SimulatedWorker
from headwater.reference_connectors.spark_sink import SparkSinkConnector, SparkSinkTask
from headwater.reference_connectors.spark_sink.parquet_table import ParquetTable
from headwater.runtime.error_handling.dead_letter import CONTEXT_HEADERS, PREFIX
from headwater.runtime.tasks.base import State
from headwater.sdk import TopicPartition

pytestmark = pytest.mark.spark

MakeWorker = Callable[..., SimulatedWorker]
BYTES = {"key.converter": "bytes", "value.converter": "bytes"}


@pytest.fixture
def make(make_simulated_worker: MakeWorker, spark: SparkSession) -> MakeWorker:
    """A simulated worker with the bytes converters (worker settings as keyword arguments, ``_`` for ``.``)."""

    def make_worker(partitions: int = 2, **props: Any) -> SimulatedWorker:
        config = {**BYTES, **{k.replace("_", "."): v for k, v in props.items()}}
        return make_simulated_worker(config, partitions=partitions)

    return make_worker


def add_sink(worker: SimulatedWorker, name: str, table: Path, **props: Any) -> None:
    """Writes in the foreground unless told otherwise: a background write takes real time the virtual clock
    does not wait for."""
    props.setdefault("write_background", "false")
    worker.add_connector(name, SparkSinkConnector, {"topics": "t", "table.path": str(table)}, **props)


def produce(worker: SimulatedWorker, ids: range, partitions: int = 2) -> None:
    for n in ids:
        worker.produce("t", {"id": n, "name": f"n{n}"}, key=f"k{n}".encode(), partition=n % partitions)


def sink_task(worker: SimulatedWorker, name: str = "sink", n: int = 0) -> SparkSinkTask:
    task = worker.sink_task(name, n).task
    assert isinstance(task, SparkSinkTask)
    return task


def wait_written(worker: SimulatedWorker, rows: int, name: str = "sink", tasks: int = 1) -> None:
    """Run the worker until the connector's tasks have written ``rows`` rows; fail at once if one fails."""

    def written() -> bool:
        found = 0
        for n in range(tasks):
            if worker.task_state(name, n) is State.FAILED:
                raise AssertionError(f"task {name}-{n} failed: {worker.sink_task(name, n).failure!r}")
            writer = sink_task(worker, name, n).writer
            found += writer.rows if writer is not None else 0
        return found >= rows

    worker.run_until(written, what=f"{rows} rows written by {name}")


def ids(rows: list[dict[str, Any]]) -> list[int]:
    return sorted(row["id"] for row in rows)


def test_a_size_flush_writes_then_requests_the_commit_of_exactly_what_it_wrote(
    make: MakeWorker, tmp_path: Path, read_rows: Any
) -> None:
    worker = make(consumer_max_poll_records=4, offset_flush_interval_ms=60_000)
    produce(worker, range(12))
    add_sink(worker, "sink", tmp_path / "t", flush_max_records=5, flush_interval_ms=600_000)
    wait_written(worker, 8)

    worker.advance(50)  # a few passes: the requested commit, not the 60 s interval
    written = {TopicPartition("t", 0): 4, TopicPartition("t", 1): 4}
    assert worker.group_offsets("sink") == written
    assert sink_task(worker).buffer.records == 4  # the third put's records: buffered, not committed
    worker.advance(61_000)  # a periodic commit does not flush a buffer that is not due
    assert worker.group_offsets("sink") == written
    assert ids(read_rows(tmp_path / "t", "parquet")) == list(range(8))
    assert sink_task(worker).flushes == {"records": 1, "bytes": 0, "time": 0}


def test_a_buffer_is_flushed_once_its_oldest_record_has_waited_the_interval(
    make: MakeWorker, tmp_path: Path, read_rows: Any
) -> None:
    worker = make(offset_flush_interval_ms=60_000)
    add_sink(worker, "sink", tmp_path / "t", flush_interval_ms=5_000)
    worker.advance(100)
    produce(worker, range(3))
    worker.run_until(lambda: sink_task(worker).buffer.records == 3, what="the records buffered")
    buffered_at = worker.clock.now_ms()
    worker.advance(4_990)
    assert read_rows(tmp_path / "t", "parquet") == []
    worker.advance(10)
    assert worker.clock.now_ms() - buffered_at == 5_000
    assert ids(read_rows(tmp_path / "t", "parquet")) == [0, 1, 2]
    worker.advance(50)
    assert worker.group_offsets("sink") == {TopicPartition("t", 0): 2, TopicPartition("t", 1): 1}
    assert sink_task(worker).flushes["time"] == 1


def test_a_byte_limit_flushes(make: MakeWorker, tmp_path: Path, read_rows: Any) -> None:
    worker = make(consumer_max_poll_records=1)
    produce(worker, range(10))
    size = len(json.dumps({"id": 0, "name": "n0"}, separators=(",", ":"))) + len("k0")
    add_sink(worker, "sink", tmp_path / "t", flush_max_bytes=3 * size)
    worker.run_until(lambda: sink_task(worker).flushes["bytes"] == 3, what="three byte-triggered flushes")
    assert ids(read_rows(tmp_path / "t", "parquet")) == list(range(9))


@pytest.mark.parametrize("table_format", ["parquet", "delta"])
def test_a_task_resumes_after_the_last_offset_in_the_table_not_where_its_group_is(
    make: MakeWorker, tmp_path: Path, read_rows: Any, table_format: str
) -> None:
    table = tmp_path / "t"
    worker = make()
    produce(worker, range(6))
    add_sink(worker, "first", table, table_format=table_format, table_app_id="ingest", flush_max_records=6)
    wait_written(worker, 6, "first")
    worker.delete_connector("first")

    produce(worker, range(6, 10))
    # a new group starts from the beginning of the topic: the table, not the group, says where to resume
    add_sink(worker, "second", table, table_format=table_format, table_app_id="ingest", flush_max_records=4)
    wait_written(worker, 4, "second")
    worker.advance(50)
    rows = read_rows(table, table_format)
    assert ids(rows) == list(range(10))
    assert [(r["kafka_partition"], r["kafka_offset"]) for r in rows] == [(0, o) for o in range(5)] + [
        (1, o) for o in range(5)
    ]
    assert worker.group_offsets("second") == {TopicPartition("t", 0): 5, TopicPartition("t", 1): 5}


def test_a_record_that_does_not_fit_fails_the_task_naming_where_it_is(make: MakeWorker, tmp_path: Path) -> None:
    worker = make(partitions=1)
    produce(worker, range(3), partitions=1)
    worker.produce("t", b'{"id": "three"}', partition=0)
    add_sink(worker, "sink", tmp_path / "t", value_schema="id BIGINT", flush_max_records=4)
    worker.run_until(lambda: worker.task_state("sink") is State.FAILED, what="the task failing")
    failure = str(worker.sink_task("sink").failure)
    assert "the record at topic 't' partition 0 offset 3 and errors.tolerance=none" in failure
    assert "SchemaMismatch: the record does not fit the table's schema" in failure
    assert "changed from number to string" in failure
    assert worker.group_offsets("sink") == {}
    assert not (tmp_path / "t" / "_headwater" / "manifests").exists() or not any(
        (tmp_path / "t" / "_headwater" / "manifests").glob("*.json")
    )


def test_with_errors_tolerance_all_misfits_are_skipped_and_their_offsets_pass(
    make: MakeWorker, tmp_path: Path, read_rows: Any
) -> None:
    worker = make(partitions=1)
    worker.produce("t", b"not json", partition=0)
    produce(worker, range(2), partitions=1)
    worker.produce("t", None, partition=0)
    add_sink(worker, "sink", tmp_path / "t", errors_tolerance="all", flush_max_records=4)
    worker.run_until(lambda: worker.group_offsets("sink") == {TopicPartition("t", 0): 4}, what="the commit")
    assert ids(read_rows(tmp_path / "t", "parquet")) == [0, 1]
    assert sink_task(worker).writer is not None and sink_task(worker).writer.rejected == 2  # type: ignore[union-attr]
    assert worker.sink_task("sink").errors.counters.records_skipped == 2


def test_misfits_go_to_the_runtimes_dead_letter_topic_as_they_arrived_and_the_table_moves_past_them(
    make_simulated_worker: MakeWorker, spark: SparkSession, tmp_path: Path, read_rows: Any
) -> None:
    """With the JSON converter the task sees parsed values; the dead letters still hold the bytes as consumed."""
    worker = make_simulated_worker({"key.converter": "string"}, partitions=2)
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    worker.produce("t", {"id": 0}, key=b"k0", partition=0)
    worker.produce("t", b'{"id" :  "one"}', key=b"k1", partition=0, headers=[("origin", b"\x00raw")])
    worker.produce("t", {"id": 2}, key=b"k2", partition=0)
    worker.produce("t", {"id": 3}, key=b"k3", partition=1)
    worker.produce("t", b'{"name": "no id"}', key=b"k4", partition=1)
    add_sink(
        worker,
        "sink",
        tmp_path / "t",
        value_schema="id BIGINT NOT NULL",
        flush_max_records=5,
        errors_tolerance="all",
        errors_deadletterqueue_topic_name="dlq",
        errors_deadletterqueue_topic_replication_factor="1",
        errors_deadletterqueue_context_headers_enable="true",
    )
    worker.run_until(lambda: worker.group_offsets("sink") == {tp0: 3, tp1: 2}, what="the commit")
    assert [row["id"] for row in read_rows(tmp_path / "t", "parquet")] == [0, 2, 3]
    in_table = ParquetTable(spark, str(tmp_path / "t"), "sink", (), 0).last_offsets()
    assert in_table == {tp0: 2, tp1: 1}  # the last offset of each partition, a dead letter's in partition 1
    letters = worker.messages("dlq")
    assert [(m.key, m.value) for m in letters] == [(b"k1", b'{"id" :  "one"}'), (b"k4", b'{"name": "no id"}')]
    assert [(key, value) for key, value in letters[0].headers or () if not key.startswith(PREFIX)] == [
        ("origin", b"\x00raw")
    ]
    for letter, (partition, offset) in zip(letters, [(0, 1), (1, 1)], strict=True):
        context = {key: value for key, value in letter.headers or () if key.startswith(PREFIX)}
        assert list(context) == list(CONTEXT_HEADERS)
        assert (context[PREFIX + "partition"], context[PREFIX + "offset"]) == (b"%d" % partition, b"%d" % offset)
        assert (context[PREFIX + "connector.name"], context[PREFIX + "stage"]) == (b"sink", b"TASK_PUT")
        assert context[PREFIX + "class.name"] == b"headwater.reference_connectors.spark_sink.task.SparkSinkTask"
        assert context[PREFIX + "exception.class.name"] == (
            b"headwater.reference_connectors.spark_sink.columns.SchemaMismatch"
        )
        assert context[PREFIX + "exception.message"].startswith(b"the record does not fit the table's schema: ")
    assert b"null or missing NOT NULL column id" in dict(letters[1].headers or ())[PREFIX + "exception.message"]
    counters = worker.sink_task("sink").errors.counters
    assert (counters.records_skipped, counters.dlq_produce_requests, counters.dlq_produce_failures) == (2, 2, 0)


def test_a_refused_dead_letter_write_fails_the_flush_before_the_table_moves_past_its_record(
    make: MakeWorker, spark: SparkSession, tmp_path: Path, read_rows: Any
) -> None:
    """The table write comes after the reports are done: a dead letter the broker refuses leaves the table as it was
    (writing it first would store offsets past a record that is nowhere)."""
    worker = make(partitions=1)
    worker.broker.create_topic("dlq", 1, {"max.message.bytes": "2000"})
    produce(worker, range(2), partitions=1)
    worker.produce("t", b'{"id": "%s"}' % (b"x" * 5000), partition=0)  # a misfit too large for the dead-letter topic
    produce(worker, range(3, 4), partitions=1)
    add_sink(
        worker,
        "sink",
        tmp_path / "t",
        value_schema="id BIGINT",
        flush_max_records=4,
        errors_tolerance="all",
        errors_deadletterqueue_topic_name="dlq",
        errors_deadletterqueue_topic_replication_factor="1",
    )
    worker.run_until(lambda: worker.task_state("sink") is State.FAILED, what="the task failing")
    failure = str(worker.sink_task("sink").failure)
    assert "cannot write the record at topic 't' partition 0 offset 2 to the dead-letter topic 'dlq'" in failure
    assert ParquetTable(spark, str(tmp_path / "t"), "sink", (), 0).last_offsets() == {}
    assert read_rows(tmp_path / "t", "parquet") == []
    assert worker.messages("dlq") == []
    assert worker.group_offsets("sink") == {}


def test_json_converter_values_a_configured_schema_metadata_columns_and_partitioning(
    make_simulated_worker: MakeWorker, spark: SparkSession, tmp_path: Path, read_rows: Any
) -> None:
    worker = make_simulated_worker({"key.converter": "string"}, partitions=2)  # JSON values: dicts reach put
    produce(worker, range(4))
    add_sink(
        worker,
        "sink",
        tmp_path / "t",
        value_schema="id INT NOT NULL, name STRING",
        metadata_columns="partition,offset,key",
        metadata_column_prefix="k_",
        partition_by="k_partition",
        flush_max_records=4,
    )
    wait_written(worker, 4)
    assert sorted((tmp_path / "t").glob("k_partition=*")) == [tmp_path / "t" / f"k_partition={p}" for p in (0, 1)]
    rows = sorted(read_rows(tmp_path / "t", "parquet"), key=lambda row: row["id"])
    assert rows == [
        {"id": n, "name": f"n{n}", "k_offset": n // 2, "k_key": f"k{n}", "k_partition": n % 2} for n in range(4)
    ]
    frame = spark.read.parquet(str(tmp_path / "t"))  # Spark reads it too, the manifests directory skipped
    assert frame.count() == 4 and sorted(frame.columns) == ["id", "k_key", "k_offset", "k_partition", "name"]


def test_two_tasks_share_the_partitions_and_the_table(make: MakeWorker, tmp_path: Path, read_rows: Any) -> None:
    worker = make(partitions=2)
    produce(worker, range(20))
    add_sink(worker, "sink", tmp_path / "t", tasks_max=2, flush_max_records=10)
    wait_written(worker, 20, tasks=2)
    assert ids(read_rows(tmp_path / "t", "parquet")) == list(range(20))
    writers = [sink_task(worker, "sink", n).writer for n in (0, 1)]
    assert [(w.writes, w.rows) for w in writers if w is not None] == [(1, 10), (1, 10)]


def test_background_writes_overlap_buffering_and_commit_only_what_is_in_the_table(
    make: MakeWorker, tmp_path: Path, read_rows: Any, spark: SparkSession
) -> None:
    worker = make(consumer_max_poll_records=4, offset_flush_interval_ms=100)
    produce(worker, range(40))
    add_sink(worker, "sink", tmp_path / "t", flush_max_records=8, flush_interval_ms=600_000, write_background="true")
    table = ParquetTable(spark, str(tmp_path / "t"), "sink", (), 0)
    ahead: list[tuple[TopicPartition, int, int]] = []
    buffered_during_a_write: list[int] = []

    def everything_committed() -> bool:
        in_table = {tp: offset + 1 for tp, offset in table.last_offsets().items()}
        committed = worker.group_offsets("sink")
        ahead.extend(
            (tp, offset, in_table.get(tp, 0)) for tp, offset in committed.items() if offset > in_table.get(tp, 0)
        )
        task = sink_task(worker)
        if task.pending is not None:
            buffered_during_a_write.append(task.buffer.records)
            if task.buffer.records or len(buffered_during_a_write) % 50 == 0:
                task.pending.result(timeout=120)  # let the real-time write end before the virtual clock runs away
        return committed == {TopicPartition("t", 0): 20, TopicPartition("t", 1): 20}

    worker.run_until(everything_committed, what="all 40 records committed")
    assert ahead == [], "a committed offset was ahead of the table"
    assert any(buffered_during_a_write), "records were buffered while a write was in flight"
    assert ids(read_rows(tmp_path / "t", "parquet")) == list(range(40))
    task = sink_task(worker)
    assert task.flushes["records"] == 5 and task.writer is not None and task.writer.writes == 5


def test_a_flush_due_by_time_waits_for_the_write_in_flight_while_the_task_reads_on(
    make: MakeWorker, tmp_path: Path, read_rows: Any
) -> None:
    worker = make(consumer_max_poll_records=4)
    add_sink(worker, "sink", tmp_path / "t", flush_max_records=1000, flush_interval_ms=100, write_background="true")
    worker.run_until(lambda: sink_task(worker).writer is not None, what="the task started")
    task = sink_task(worker)
    writer = task.writer
    assert writer is not None
    gate = threading.Event()
    write = writer.write

    def held_write(parts: Any) -> dict[TopicPartition, int]:
        if not gate.wait(20):
            raise TimeoutError("the test never let the write go on")
        return write(parts)

    writer.write = held_write  # type: ignore[method-assign]
    produce(worker, range(4))
    worker.run_until(lambda: task.pending is not None, what="a first write in flight")
    first = task.pending
    produce(worker, range(4, 12))
    worker.run_until(lambda: task.buffer.records == 8, what="records read while the write is in flight")
    worker.advance(1_000)  # the buffer is long due by time, the write still in flight: reading went on
    assert (task.pending, task.buffer.records, task.flushes["time"]) == (first, 8, 1)
    gate.set()

    def all_written() -> bool:
        if task.pending is not None:
            task.pending.result(timeout=120)  # a real-time write: let it end before the virtual clock runs on
        return writer.rows == 12

    worker.run_until(all_written, what="12 rows written")
    assert task.flushes["time"] == 2 and writer.writes == 2
    assert ids(read_rows(tmp_path / "t", "parquet")) == list(range(12))


def test_a_failed_background_write_fails_the_task_and_commits_nothing(make: MakeWorker, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the table's directory would be")
    worker = make()
    produce(worker, range(4))
    add_sink(worker, "sink", blocker / "t", flush_max_records=4, write_background="true")

    def failed() -> bool:
        task = sink_task(worker)
        if task.pending is not None:
            task.pending.exception(timeout=120)
        return worker.task_state("sink") is State.FAILED

    worker.run_until(failed, what="the task failing")
    failure = worker.sink_task("sink").failure
    assert failure is not None and "ParentNotDirectoryException" in str(failure), failure
    assert worker.group_offsets("sink") == {}
