"""Fixtures for the Spark sink tests: readers of what a table holds that do not go through the connector, and the
places a table can be. The session's SparkSession, S3-compatible server and Spark standalone cluster are the suite's
(:mod:`support.spark_fixtures`). Without pyspark every test here is skipped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the Spark sink needs the spark-sink extra")

from pyspark.sql import SparkSession  # noqa: E402

from support.lake import Lake, read_parquet  # noqa: E402

ReadRows = Callable[[str | Path, str], list[dict[str, Any]]]


@pytest.fixture
def parquet_rows() -> Callable[[Path], list[dict[str, Any]]]:
    """``parquet_rows(path)``: every row of a Parquet table as pyarrow reads the directory."""
    return read_parquet


@pytest.fixture(params=["local", "s3a"])
def lake(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path) -> Lake:
    """Each place a table can be: a local directory, and a new bucket of the session's S3 server (s3a)."""
    if request.param == "local":
        return Lake(str(tmp_path / "lake"), spark)
    bucket: str = request.getfixturevalue("s3_bucket")
    return Lake(f"s3a://{bucket}", spark, request.getfixturevalue("s3_server"))


@pytest.fixture
def read_rows(spark: SparkSession) -> ReadRows:
    """``read_rows(path, format)``: the rows of a local table, sorted by ``kafka_topic``, ``kafka_partition`` and
    ``kafka_offset`` when it has them (Parquet read by pyarrow, Delta by Spark)."""

    def read(path: str | Path, table_format: str) -> list[dict[str, Any]]:
        return Lake(str(path), spark).rows(str(path), table_format)

    return read
