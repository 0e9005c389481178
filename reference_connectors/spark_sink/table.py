"""What a task writes to: a table that stores each topic partition's last written offset with the data, so that a
write and its offsets become visible together or not at all."""

from __future__ import annotations

import os
import socket
import uuid
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from urllib.parse import urlparse

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from headwater.reference_connectors.spark_sink.hadoop_files import HadoopFiles
from headwater.reference_connectors.spark_sink.record_schema import SchemaChange
from headwater.sdk import TopicPartition

NO_CHANGE = SchemaChange()


class SinkTable(ABC):
    """A Parquet or Delta table written through the worker's SparkSession."""

    def __init__(
        self, session: SparkSession, path: str, app_id: str, partition_by: tuple[str, ...], max_files: int
    ) -> None:
        self.session = session
        self.files = HadoopFiles(session, path)
        self.path = self.files.root
        """The table's Hadoop path with its scheme (``s3a://lake/orders``, ``file:/data/orders``)."""
        self.app_id = app_id
        self.partition_by = partition_by
        self.max_files = max_files

    @abstractmethod
    def recover(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """Finish or undo what a crashed writer left for ``partitions``, then return the last offset written for
        each of them that has one."""

    @abstractmethod
    def schema(self) -> pa.Schema | None:
        """The columns of the table's data, or ``None`` while it has none."""

    @abstractmethod
    def write(
        self,
        tables: Mapping[TopicPartition, pa.Table],
        last_offsets: Mapping[TopicPartition, int],
        change: SchemaChange = NO_CHANGE,
    ) -> None:
        """Write the rows of every partition together with its last offset (which may belong to a record that was
        not written, a dead letter); durable when this returns. ``change``: how the tables' columns differ from the
        table's (new nullable columns, wider types), made by the same commit as the rows."""

    def unshared_hosts(self) -> list[str]:
        """The hosts of executors that do not see a file the driver writes into the table's directory, for a table
        on the local file system (``file:``): one Spark task per default-parallelism slot looks for it."""
        marker = f"{self.path}/_headwater/shared-check-{uuid.uuid4().hex}"
        self.files.write_atomically(marker, b"")
        try:
            local = urlparse(marker).path
            slots = max(self.session.sparkContext.defaultParallelism, 1)
            found = self.session.sparkContext.parallelize(range(slots), slots).map(lambda _: _sees(local)).collect()
        finally:
            self.files.delete(marker)
        return sorted({host for host, seen in found if not seen})

    def dataframe(self, table: pa.Table) -> DataFrame:
        """A DataFrame of ``table``'s Arrow batches, in at most ``max_files`` Spark partitions."""
        frame = self.session.createDataFrame(table)
        if not self.max_files:  # asked of the JVM once: a session's default parallelism is fixed when it starts
            self.max_files = self.session.sparkContext.defaultParallelism
        return frame.coalesce(max(self.max_files, 1))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}, app_id={self.app_id!r})"


def _sees(path: str) -> tuple[str, bool]:
    """Run on an executor: its host name, and whether ``path`` exists there."""
    return socket.gethostname(), os.path.exists(path)
