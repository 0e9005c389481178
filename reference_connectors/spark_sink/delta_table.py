"""A Delta table whose commits carry each topic partition's offset: one commit per partition per flush, written
with Delta's idempotent-write options ``txnAppId=<app id>-<topic>-<partition>`` and ``txnVersion=<last offset>``
(kafka-delta-ingest's scheme through Spark's DataFrame writer).

A commit's rows and its ``txn`` action become visible together, so the newest ``txn`` version of a partition's
application id is exactly the last offset whose row is in the table. Delta skips a write whose version is not above
the one recorded, which also keeps a replayed write from adding rows twice.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from headwater.reference_connectors.spark_sink.delta_log import LOG_DIR, txn_versions
from headwater.reference_connectors.spark_sink.table import SinkTable
from headwater.sdk import TopicPartition


class DeltaTable(SinkTable):
    def txn_app_id(self, tp: TopicPartition) -> str:
        return f"{self.app_id}-{tp.topic}-{tp.partition}"

    def recover(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """Nothing to undo (a Delta commit is atomic): the recorded versions of the partitions' app ids."""
        versions = txn_versions(self.path)
        return {tp: versions[app] for tp in partitions if (app := self.txn_app_id(tp)) in versions}

    def schema(self) -> pa.Schema | None:
        if self.session is None or not txn_versions_present(self.path):
            return None
        struct = self.session.read.format("delta").load(self.path).schema
        return to_arrow_schema(struct, timezone="UTC")

    def write(self, tables: Mapping[TopicPartition, pa.Table], last_offsets: Mapping[TopicPartition, int]) -> None:
        for tp, last in sorted(last_offsets.items()):
            table = tables.get(tp)
            if table is None:
                continue
            writer = (
                self.dataframe(table)
                .write.format("delta")
                .mode("append")
                .option("txnAppId", self.txn_app_id(tp))
                .option("txnVersion", str(last))
            )
            if self.partition_by:
                writer = writer.partitionBy(*self.partition_by)
            writer.save(self.path)


def txn_versions_present(path: str) -> bool:
    """Whether ``path`` holds a Delta table (a ``_delta_log`` with at least one commit)."""
    log = Path(path) / LOG_DIR
    return log.is_dir() and any(log.glob("*.json"))
