"""A Delta table whose commits carry each topic partition's offset: one commit per partition per flush, written
with Delta's idempotent-write options ``txnAppId=<app id>-<topic>-<partition>`` and ``txnVersion=<last offset>``
(kafka-delta-ingest's scheme through Spark's DataFrame writer).

A commit's rows and its ``txn`` action become visible together, so the newest ``txn`` version of a partition's
application id is exactly the last offset whose row is in the table. Delta skips a write whose version is not above
the one recorded, which also keeps a replayed write from adding rows twice.

The versions are read through Delta itself: the latest snapshot of the table's ``DeltaLog`` and its
``transactions`` (the ``SetTransaction`` actions Delta keeps while reconstructing a snapshot from checkpoints and
commits, on any file system Hadoop reaches); a snapshot of version -1 means there is no table yet. A failing read
fails the task: taking it for "no table" would start the partitions from the consumer group's offsets and write
rows twice.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from headwater.reference_connectors.spark_sink.table import SinkTable
from headwater.sdk import TopicPartition

log = logging.getLogger(__name__)


class DeltaTable(SinkTable):
    def txn_app_id(self, tp: TopicPartition) -> str:
        return f"{self.app_id}-{tp.topic}-{tp.partition}"

    def snapshot(self) -> Any:
        """The table's latest snapshot (a JVM ``Snapshot``; version -1 while there is no table). Raises what the
        file system raises."""
        jvm = self.session._jvm
        assert jvm is not None
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self.session._jsparkSession, self.path)
        none = jvm.scala.Option.empty()
        return delta_log.update(False, none, none)

    def exists(self) -> bool:
        return int(self.snapshot().version()) >= 0

    def txn_versions(self, app_ids: Collection[str]) -> dict[str, int]:
        """The newest ``txn`` version of each of ``app_ids`` that the table's latest snapshot records."""
        snapshot = self.snapshot()
        if int(snapshot.version()) < 0:
            log.info("%s: no Delta table yet", self)
            return {}
        transactions = snapshot.transactions()
        found = {}
        for app_id in app_ids:
            recorded = transactions.get(app_id)
            if recorded.isDefined():
                found[app_id] = int(recorded.get())
        log.info("%s: version %d of the table records %s", self, snapshot.version(), found)
        return found

    def recover(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """Nothing to undo (a Delta commit is atomic): the recorded versions of the partitions' app ids."""
        versions = self.txn_versions([self.txn_app_id(tp) for tp in partitions])
        return {tp: versions[app] for tp in partitions if (app := self.txn_app_id(tp)) in versions}

    def schema(self) -> pa.Schema | None:
        if not self.exists():
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
