"""Where a Spark sink test's tables live, read back without the connector: a local directory, or a bucket of the
test S3 server."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pyarrow.fs as pafs
from pyspark.sql import SparkSession

from support.spark_services import S3Server

ORDER = ("kafka_topic", "kafka_partition", "kafka_offset")


def read_parquet(path: Path) -> list[dict[str, Any]]:
    """Every row of a Parquet table as pyarrow reads the directory (Hive partitions, ``_``/``.`` names skipped)."""
    if not path.exists():
        return []
    dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
    rows: list[dict[str, Any]] = dataset.to_table().to_pylist()
    return rows


@dataclass
class Lake:
    """Where a test's tables live: a local directory, or a bucket of the S3 server (read back by pyarrow's own S3
    client for Parquet and by Spark for Delta, never through the connector)."""

    root: str
    """``/tmp/.../lake`` or ``s3a://bucket``."""
    spark: SparkSession
    s3: S3Server | None = None

    def table(self, name: str) -> str:
        return f"{self.root}/{name}"

    def _bucket_key(self, table: str) -> tuple[str, str]:
        bucket, _, key = table.removeprefix("s3a://").partition("/")
        return bucket, key

    def _local(self, table: str) -> Path:
        return Path(table.removeprefix("file:"))

    def files(self, table: str, directory: str) -> list[str]:
        """Every file below ``<table>/<directory>``, relative to it."""
        if self.s3 is None:
            found = self._local(table) / directory
            return sorted(str(p.relative_to(found)) for p in found.rglob("*") if p.is_file())
        bucket, key = self._bucket_key(table)
        prefix = f"{key}/{directory}/"
        return sorted(k[len(prefix) :] for k in self.s3.list_keys(bucket, prefix) if not k.endswith("/"))

    def names(self, table: str, directory: str) -> list[str]:
        """The file names directly under ``<table>/<directory>``."""
        return [name for name in self.files(table, directory) if "/" not in name]

    def commits(self, table: str, table_format: str) -> int:
        """How many writes the table has committed (manifests, or Delta commits), read from its files only."""
        directory = "_headwater/manifests" if table_format == "parquet" else "_delta_log"
        return len([n for n in self.names(table, directory) if n[0].isdigit() and n.endswith(".json")])

    def rows(self, table: str, table_format: str) -> list[dict[str, Any]]:
        """The rows of a table, sorted by topic, partition and offset when it has those columns."""
        if table_format == "parquet" and self.s3 is None:
            rows = read_parquet(self._local(table))
        elif table_format == "parquet":
            assert self.s3 is not None
            bucket, key = self._bucket_key(table)
            if not self.s3.list_keys(bucket, f"{key}/"):
                return []
            store = pafs.S3FileSystem(
                access_key=self.s3.access_key,
                secret_key=self.s3.secret_key,
                endpoint_override=self.s3.endpoint,
                region=self.s3.region,
                scheme="http",
            )
            dataset = ds.dataset(f"{bucket}/{key}", format="parquet", partitioning="hive", filesystem=store)
            rows = dataset.to_table().to_pylist()
        elif not self.commits(table, "delta"):
            rows = []
        else:
            rows = [row.asDict() for row in self.spark.read.format("delta").load(table).collect()]
        if rows and all(name in rows[0] for name in ORDER):
            rows.sort(key=lambda row: tuple(row[name] for name in ORDER))
        return rows
