"""The tables' commit points: a Parquet write interrupted before or after its manifest, and Delta's txn versions,
replays and checkpoints, written through the test process's SparkSession and read back through Delta's own log."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from headwater.reference_connectors.spark_sink import DeltaTable, HadoopFiles, ParquetTable
from headwater.sdk import TopicPartition

pytestmark = pytest.mark.spark

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


class Crash(Exception):
    """Stands for the process dying at that point."""


def rows(tp: TopicPartition, offsets: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([tp.partition * 1000 + o for o in offsets], pa.int64()),
            "kafka_partition": pa.array([tp.partition] * len(offsets), pa.int32()),
            "kafka_offset": pa.array(list(offsets), pa.int64()),
        }
    )


@pytest.fixture
def parquet(spark: SparkSession, tmp_path: Path) -> Iterator[ParquetTable]:
    yield ParquetTable(spark, str(tmp_path / "t"), "app", ("kafka_partition",), 1)


def reopened(table: ParquetTable) -> ParquetTable:
    """The same table as a new process sees it (no manifests cached)."""
    return ParquetTable(table.session, table.path, table.app_id, table.partition_by, table.max_files)


def local(table: ParquetTable, *parts: str) -> Path:
    """A directory of a table on the local file system."""
    return Path(table.path.removeprefix("file:")).joinpath(*parts)


@pytest.fixture
def offsets_in(parquet_rows: Callable[[Path], list[dict[str, Any]]]) -> Callable[[Path], list[tuple[int, int]]]:
    """``offsets_in(path)``: the (partition, offset) of every row pyarrow reads from a Parquet table."""
    return lambda path: sorted((r["kafka_partition"], r["kafka_offset"]) for r in parquet_rows(path))


Offsets = Callable[[Path], list[tuple[int, int]]]


def test_a_parquet_write_is_visible_with_its_offsets(
    parquet: ParquetTable, offsets_in: Offsets, tmp_path: Path
) -> None:
    parquet.write({A: rows(A, range(3)), B: rows(B, range(2))}, {A: 2, B: 1})
    parquet.write({A: rows(A, range(3, 5))}, {A: 4})
    assert offsets_in(local(parquet)) == [(0, o) for o in range(5)] + [(1, 0), (1, 1)]
    assert reopened(parquet).recover([A, B]) == {A: 4, B: 1}
    assert reopened(parquet).schema() == rows(A, range(1)).schema
    assert not any(local(parquet, "_headwater", "staging").iterdir())
    assert parquet.path == f"file:{tmp_path / 't'}"  # qualified: a cluster's executors write where the driver reads


def test_a_write_that_dies_before_its_manifest_leaves_nothing_and_is_undone(
    parquet: ParquetTable, monkeypatch: pytest.MonkeyPatch, offsets_in: Offsets
) -> None:
    parquet.write({A: rows(A, range(2))}, {A: 1})
    original = HadoopFiles.write_atomically

    def die_at_the_manifest(self: HadoopFiles, path: str, content: bytes) -> None:
        if "/manifests/" in path:
            raise Crash
        original(self, path, content)

    monkeypatch.setattr(HadoopFiles, "write_atomically", die_at_the_manifest)
    with pytest.raises(Crash):
        parquet.write({A: rows(A, range(2, 4)), B: rows(B, range(2))}, {A: 3, B: 1})
    staged = [p for p in local(parquet, "_headwater", "staging").iterdir() if p.is_dir()]
    assert staged and any(staged[0].rglob("*.parquet"))  # Spark's files are there, in staging only
    assert offsets_in(local(parquet)) == [(0, 0), (0, 1)]

    monkeypatch.undo()
    survivor = reopened(parquet)
    assert survivor.recover([A]) == {A: 1}  # the write also covered B, which is not being opened: kept
    assert any(p.is_dir() for p in local(survivor, "_headwater", "staging").iterdir())
    assert survivor.recover([A, B]) == {A: 1}
    assert not [p for p in local(survivor, "_headwater", "staging").iterdir() if not p.name.startswith(".")]
    assert offsets_in(local(parquet)) == [(0, 0), (0, 1)]


def test_a_write_that_dies_after_its_manifest_is_finished_by_recovery(
    parquet: ParquetTable, monkeypatch: pytest.MonkeyPatch, offsets_in: Offsets
) -> None:
    def die(self: ParquetTable, name: str, manifest: dict[str, Any]) -> None:
        raise Crash

    monkeypatch.setattr(ParquetTable, "_publish", die)
    with pytest.raises(Crash):
        parquet.write({A: rows(A, range(3))}, {A: 2})
    assert offsets_in(local(parquet)) == []  # committed, not yet moved into the table
    monkeypatch.undo()
    assert reopened(parquet).recover([B]) == {}  # any task finishes a committed write
    assert offsets_in(local(parquet)) == [(0, 0), (0, 1), (0, 2)]
    assert reopened(parquet).recover([A]) == {A: 2}
    assert offsets_in(local(parquet)) == [(0, 0), (0, 1), (0, 2)]


def test_manifests_of_another_app_id_do_not_move_this_ones_offsets(parquet: ParquetTable) -> None:
    other = ParquetTable(parquet.session, parquet.path, "other", parquet.partition_by, 1)
    other.write({A: rows(A, range(5))}, {A: 4})
    parquet.write({A: rows(A, range(2))}, {A: 1})
    assert reopened(parquet).recover([A]) == {A: 1}


def test_delta_commits_carry_the_offsets_and_a_replayed_write_is_skipped(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "d"
    table = DeltaTable(spark, str(path), "app", (), 1)
    assert table.recover([A]) == {} and table.schema() is None  # no table yet
    spark.conf.set("spark.databricks.delta.properties.defaults.checkpointInterval", "2")
    try:
        table.write({A: rows(A, range(2)), B: rows(B, range(1))}, {A: 1, B: 0})
        table.write({A: rows(A, range(2, 4))}, {A: 3})
        table.write({A: rows(A, range(2, 4))}, {A: 3})  # a replay of the same records: Delta skips it
        table.write({B: rows(B, range(0))}, {B: 5})  # nothing fitted: the offset moves, no row
    finally:
        spark.conf.unset("spark.databricks.delta.properties.defaults.checkpointInterval")
    assert any(path.joinpath("_delta_log").glob("*.checkpoint*.parquet"))
    assert table.txn_versions(["app-t-0", "app-t-1", "app-u-0"]) == {"app-t-0": 3, "app-t-1": 5}
    assert DeltaTable(spark, str(path), "app", (), 1).recover([A, B, TopicPartition("u", 0)]) == {A: 3, B: 5}
    found = sorted(
        (r["kafka_partition"], r["kafka_offset"]) for r in spark.read.format("delta").load(str(path)).collect()
    )
    assert found == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    schema = table.schema()
    assert schema is not None and schema.names == ["id", "kafka_partition", "kafka_offset"]
