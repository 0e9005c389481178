"""Records with Kafka Connect schemas (the JSON converter's envelopes, read by the runtime into values and
``SinkRecord.value_schema``) written by the Spark sink in the simulated worker: the table's columns come from the
record schemas and follow a compatible change in the commit that holds the rows; an incompatible change fails the
task with nothing of its flush written; a record that does not fit goes where ``errors.tolerance`` says."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from headwater.harness.simulated import SimulatedWorker
from headwater.reference_connectors.spark_sink import DeltaTable, HadoopFiles, ParquetTable
from headwater.reference_connectors.spark_sink.record_schema import IncompatibleSchema, SchemaChange
from headwater.runtime.error_handling.dead_letter import PREFIX
from headwater.runtime.tasks.base import State
from headwater.sdk import TopicPartition
from headwater.sdk.schemas import INT32, INT64, STRING, optional, struct
from support.schema_source import SchemaSource, order

from .test_task import add_sink, wait_written

pytestmark = pytest.mark.spark

MakeWorker = Callable[..., SimulatedWorker]
TP = TopicPartition("t", 0)
V1 = struct("shop.Order", id=INT64, qty=optional(INT32))
V2 = struct("shop.Order", id=INT64, qty=optional(INT64), note=optional(STRING))
"""V1 with ``qty`` widened to int64 and a new optional field."""
V3 = struct("shop.Order", id=INT64, qty=optional(STRING))
"""V1 with ``qty`` changed to a string: no table column holds both."""


@pytest.fixture
def worker(make_simulated_worker: MakeWorker, spark: SparkSession) -> SimulatedWorker:
    """One partition, two records per put; the JSON converter reading each value's schema from its envelope."""
    config = {"key.converter": "string", "value.converter.schemas.enable": "true", "consumer.max.poll.records": "2"}
    return make_simulated_worker(config, partitions=1)


def send(worker: SimulatedWorker, schema: dict[str, Any], payload: dict[str, Any] | None) -> None:
    worker.produce("t", {"schema": schema, "payload": payload}, partition=0)


def parquet_rows(spark: SparkSession, path: Path) -> list[dict[str, Any]]:
    return parquet_rows_of(spark, path, "sink")


def parquet_rows_of(spark: SparkSession, path: Path, app_id: str) -> list[dict[str, Any]]:
    """The rows of a Parquet table read with its manifests' columns (older files lack the newer columns)."""
    schema = ParquetTable(spark, str(path), app_id, (), 0).schema()
    rows = ds.dataset(str(path), schema=schema, format="parquet").to_table().to_pylist()
    return sorted(rows, key=lambda row: (row.get("kafka_partition") or 0, row["kafka_offset"]))


@pytest.mark.parametrize("table_format", ["parquet", "delta"])
def test_a_new_optional_field_and_a_widened_one_follow_mid_stream_with_earlier_rows_null(
    worker: SimulatedWorker, spark: SparkSession, tmp_path: Path, read_rows: Any, table_format: str
) -> None:
    table = tmp_path / "t"
    for n in range(3):
        send(worker, V1, {"id": n, "qty": n})
    for n in range(3, 6):
        send(worker, V2, {"id": n, "qty": 2**40 + n, "note": f"n{n}"})
    # flushes of two records: V1 alone, then V1 and V2 (the change inside a flush), then V2 alone
    add_sink(worker, "sink", table, table_format=table_format, flush_max_records=2, metadata_columns="offset")
    wait_written(worker, 6)
    worker.run_until(lambda: worker.group_offsets("sink") == {TP: 6}, what="the commit")

    rows = parquet_rows(spark, table) if table_format == "parquet" else read_rows(table, "delta")
    rows.sort(key=lambda row: row["kafka_offset"])
    assert rows == [
        {"id": n, "qty": n if n < 3 else 2**40 + n, "kafka_offset": n, "note": None if n < 3 else f"n{n}"}
        for n in range(6)
    ]
    if table_format == "delta":
        delta = DeltaTable(spark, str(table), "sink", (), 0)
        assert delta.recover([TP]) == {TP: 5}
        assert delta.schema() == pa.schema(
            [("id", pa.int64()), ("qty", pa.int64()), ("kafka_offset", pa.int64()), ("note", pa.string())]
        )
    else:
        parquet = ParquetTable(spark, str(table), "sink", (), 0)
        assert parquet.recover([TP]) == {TP: 5}
        assert len(parquet.read_manifests()) == 3
        assert parquet.schema() == pa.schema(
            [
                pa.field("id", pa.int64(), False),
                ("qty", pa.int64()),
                pa.field("kafka_offset", pa.int64(), False),
                ("note", pa.string()),
            ]
        )


def test_an_incompatible_change_fails_the_task_naming_the_field_and_both_schemas_with_its_flush_unwritten(
    worker: SimulatedWorker, spark: SparkSession, tmp_path: Path
) -> None:
    table = tmp_path / "t"
    for n in range(3):
        send(worker, V1, {"id": n, "qty": n})
    send(worker, V3, {"id": 3, "qty": "three"})
    # tolerating every error does not skip a schema change: it is no record's fault
    add_sink(worker, "sink", table, flush_max_records=2, metadata_columns="offset", errors_tolerance="all")
    worker.run_until(lambda: worker.task_state("sink") is State.FAILED, what="the task failing")

    error = worker.sink_task("sink").failure
    assert isinstance(error, IncompatibleSchema)
    failure = str(error)
    assert "the value schema of the record at topic 't' partition 0 offset 3 cannot be written to" in failure
    assert "field qty is string in the record schema and int32 in the table" in failure
    assert "The table's columns: id int64 NOT NULL, qty int32, kafka_offset int64 NOT NULL" in failure
    assert failure.endswith(f"The record's schema: {json.dumps(V3, separators=(',', ':'))}")
    parquet = ParquetTable(spark, str(table), "sink", (), 0)
    assert parquet.recover([TP]) == {TP: 1}  # the first flush; nothing of the second, offset 2 included
    assert [row["id"] for row in parquet_rows(spark, table)] == [0, 1]
    assert worker.group_offsets("sink") == {TP: 2}


def test_records_that_do_not_fit_their_schema_are_skipped_under_errors_tolerance_all(
    worker: SimulatedWorker, spark: SparkSession, tmp_path: Path
) -> None:
    table = tmp_path / "t"
    send(worker, V1, {"id": 0, "qty": 0})
    send(worker, V1, {"id": None, "qty": 1})  # null in a required field
    send(worker, V1, {"id": 2, "qty": "two"})  # a value of another type than its schema's
    send(worker, V1, {"id": 3, "qty": 3})
    add_sink(
        worker,
        "sink",
        table,
        flush_max_records=4,
        metadata_columns="offset",
        errors_tolerance="all",
        errors_deadletterqueue_topic_name="dlq",
        errors_deadletterqueue_topic_replication_factor="1",
        errors_deadletterqueue_context_headers_enable="true",
    )
    worker.run_until(lambda: worker.group_offsets("sink") == {TP: 4}, what="the commit")
    assert [row["id"] for row in parquet_rows(spark, table)] == [0, 3]
    letters = worker.messages("dlq")
    reasons = [dict(letter.headers or ())[PREFIX + "exception.message"] for letter in letters]
    assert reasons == [
        b"the record does not fit the table's schema: null in the required field id",
        b"the record does not fit the table's schema: field qty holds a Python str, not a int32",
    ]
    assert worker.sink_task("sink").errors.counters.records_skipped == 2


class Crash(Exception):
    """Stands for the process dying at that point."""


def rows_of(tp: TopicPartition, offsets: range, schema: pa.Schema) -> pa.Table:
    columns = {
        "id": [tp.partition * 100 + o for o in offsets],
        "qty": list(offsets),
        "kafka_partition": [tp.partition] * len(offsets),
        "kafka_offset": list(offsets),
    }
    if "note" in schema.names:
        columns["note"] = [f"n{o}" for o in offsets]
    return pa.table(columns, schema=schema)


def test_a_crash_between_a_delta_schema_change_and_its_last_commit_is_finished_by_the_replay(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush's change (a new column, a widened one) goes with each partition's commit: after a crash between them
    the replayed flush skips the committed partition and writes the other, the change made once."""
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    old = pa.schema(
        [("id", pa.int64()), ("qty", pa.int32()), ("kafka_partition", pa.int32()), ("kafka_offset", pa.int64())]
    )
    new = old.set(1, pa.field("qty", pa.int64())).append(pa.field("note", pa.string()))
    table = DeltaTable(spark, str(tmp_path / "d"), "app", (), 1)
    table.write({a: rows_of(a, range(2), old), b: rows_of(b, range(2), old)}, {a: 1, b: 1})
    change = SchemaChange(("new column note string",), ("column qty int32 -> int64",))
    flush = {a: rows_of(a, range(2, 4), new), b: rows_of(b, range(2, 4), new)}
    made = DeltaTable.dataframe

    def die_at_the_second(self: DeltaTable, rows: pa.Table) -> Any:
        if rows.column("kafka_partition")[0].as_py() == b.partition:
            raise Crash
        return made(self, rows)

    monkeypatch.setattr(DeltaTable, "dataframe", die_at_the_second)
    with pytest.raises(Crash):
        table.write(flush, {a: 3, b: 3}, change)
    monkeypatch.undo()
    replayed = DeltaTable(spark, str(tmp_path / "d"), "app", (), 1)
    assert replayed.recover([a, b]) == {a: 3, b: 1}
    assert replayed.schema() == new  # the change came with partition 0's commit
    replayed.write(flush, {a: 3, b: 3}, change)
    assert replayed.recover([a, b]) == {a: 3, b: 3}
    found = spark.read.format("delta").load(str(tmp_path / "d")).collect()
    assert sorted((r.kafka_partition, r.kafka_offset, r.note) for r in found) == [
        (p, o, None if o < 2 else f"n{o}") for p in (0, 1) for o in range(4)
    ]


def test_a_parquet_schema_change_is_in_the_manifest_or_nowhere_and_stays(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = pa.schema(
        [("id", pa.int64()), ("qty", pa.int32()), ("kafka_partition", pa.int32()), ("kafka_offset", pa.int64())]
    )
    new = old.append(pa.field("note", pa.string()))
    table = ParquetTable(spark, str(tmp_path / "p"), "app", (), 1)
    table.write({TP: rows_of(TP, range(2), old)}, {TP: 1})
    original = HadoopFiles.write_atomically

    def die_at_the_manifest(self: HadoopFiles, path: str, content: bytes) -> None:
        if "/manifests/" in path:
            raise Crash
        original(self, path, content)

    monkeypatch.setattr(HadoopFiles, "write_atomically", die_at_the_manifest)
    with pytest.raises(Crash):
        table.write({TP: rows_of(TP, range(2, 4), new)}, {TP: 3}, SchemaChange(("new column note string",)))
    monkeypatch.undo()
    reopened = ParquetTable(spark, str(tmp_path / "p"), "app", (), 1)
    assert reopened.recover([TP]) == {TP: 1} and reopened.schema() == old  # neither the rows nor the column
    reopened.write({TP: rows_of(TP, range(2, 4), new)}, {TP: 3}, SchemaChange(("new column note string",)))
    assert ParquetTable(spark, str(tmp_path / "p"), "app", (), 1).schema() == new
    # a writer whose records have not changed yet commits after: the column stays the table's
    other = TopicPartition("t", 1)
    ParquetTable(spark, str(tmp_path / "p"), "app", (), 1).write({other: rows_of(other, range(1), old)}, {other: 0})
    assert ParquetTable(spark, str(tmp_path / "p"), "app", (), 1).schema() == new
    found = [
        (r["kafka_partition"], r["kafka_offset"], r["note"]) for r in parquet_rows_of(spark, tmp_path / "p", "app")
    ]
    assert found == [(0, 0, None), (0, 1, None), (0, 2, "n2"), (0, 3, "n3"), (1, 0, None)]


def test_avro_records_from_a_schema_registry_make_and_fill_a_delta_table(
    make_simulated_worker: MakeWorker, spark: SparkSession, schema_registry_url: str, unique_name: str, tmp_path: Path
) -> None:
    """The Avro converter with a real Schema Registry between a source of every Connect type and the sink."""
    avro = {"value.converter": "avro", "value.converter.schema.registry.url": schema_registry_url}
    worker = make_simulated_worker({"key.converter": "string"}, partitions=1)
    topic, count = f"{unique_name}-orders", 12
    worker.create_topic(topic, 1)
    worker.add_connector("source", SchemaSource, {**avro, "topic": topic, "count": str(count)})
    add_sink(
        worker,
        "sink",
        tmp_path / "t",
        **{k.replace(".", "_"): v for k, v in avro.items()},
        topics=topic,
        table_format="delta",
        metadata_columns="offset,key",
        flush_max_records=count,
    )
    wait_written(worker, count)

    frame = spark.read.format("delta").load(str(tmp_path / "t"))
    table = frame.toArrow()
    assert table.schema.field("amount").type == pa.decimal128(10, 2)
    assert table.schema.field("codes").type == pa.map_(pa.int64(), pa.string())
    assert table.schema.field("at_time").type == pa.int32()
    rows = sorted(table.to_pylist(), key=lambda row: row["kafka_offset"])
    for n, row in enumerate(rows):
        expected = order(n)
        moment = expected["at_time"]
        expected["at_time"] = (
            (moment.hour * 60 + moment.minute) * 60 + moment.second
        ) * 1000 + moment.microsecond // 1000
        expected["codes"] = list(expected["codes"].items())
        assert row == {**expected, "kafka_offset": n, "kafka_key": f"order-{n}"}
    assert len(rows) == count
