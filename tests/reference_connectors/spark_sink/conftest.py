"""Fixtures for the Spark sink tests: the test process's one SparkSession (with Delta Lake, as the connector makes
it), and readers of what a table holds that do not go through the connector."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the Spark sink needs the spark-sink extra")

import pyarrow.dataset as ds  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from headwater.reference_connectors.spark_sink import SPARK_DEFAULTS, spark_session  # noqa: E402

ReadRows = Callable[[Path, str], list[dict[str, Any]]]


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    """The process's SparkSession, made by the connector's own code with Delta Lake, before any test writes, so
    Parquet and Delta tests share it (a session is made once per process)."""
    if shutil.which("java") is None:
        pytest.skip("the Spark sink needs Java 17")
    return spark_session(SPARK_DEFAULTS, delta=True)


def read_parquet(path: Path) -> list[dict[str, Any]]:
    """Every row of a Parquet table as pyarrow reads the directory (Hive partitions, ``_``/``.`` names skipped)."""
    if not path.exists():
        return []
    dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
    rows: list[dict[str, Any]] = dataset.to_table().to_pylist()
    return rows


@pytest.fixture
def parquet_rows() -> Callable[[Path], list[dict[str, Any]]]:
    """``parquet_rows(path)``: every row of a Parquet table as pyarrow reads the directory."""
    return read_parquet


@pytest.fixture
def read_rows(spark: SparkSession) -> ReadRows:
    """``read_rows(path, format)``: the rows of a table, sorted by ``kafka_topic``, ``kafka_partition`` and
    ``kafka_offset`` when it has them (Parquet read by pyarrow, Delta by Spark)."""

    def read(path: Path, table_format: str) -> list[dict[str, Any]]:
        if table_format == "parquet":
            rows = read_parquet(path)
        elif not (path / "_delta_log").exists():
            rows = []
        else:
            rows = [row.asDict() for row in spark.read.format("delta").load(str(path)).collect()]
        order = ("kafka_topic", "kafka_partition", "kafka_offset")
        if rows and all(name in rows[0] for name in order):
            rows.sort(key=lambda row: tuple(row[name] for name in order))
        return rows

    return read
