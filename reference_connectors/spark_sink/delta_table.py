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

**Several writers.** On s3a Delta's default log store keeps two commits of one version apart within one JVM only.
With a commit coordinator (Delta's coordinated commits, here its DynamoDB coordinator) each commit is first written
under a unique name and then accepted by a conditional write in DynamoDB, so that two workers committing at once
both land, one retrying on top of the other, and the same ``txn`` app id cannot commit twice. The table's first
commit still goes to the file system, so exactly one task creates a missing table (the connector's first, when it
starts, see :meth:`DeltaTable.prepare`); the others wait for it before their first write, and no write of theirs
ever creates a table without the coordinator.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Collection, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from headwater.reference_connectors.spark_sink.record_schema import SchemaChange
from headwater.reference_connectors.spark_sink.table import NO_CHANGE, SinkTable
from headwater.sdk import ConnectError, TopicPartition

log = logging.getLogger(__name__)

COORDINATOR_PROPERTY = "delta.coordinatedCommits.commitCoordinator-preview"
COORDINATOR_CONF_PROPERTY = "delta.coordinatedCommits.commitCoordinatorConf-preview"
"""The table properties that give a Delta table's commits to a coordinator (Delta 4's coordinated commits)."""
TYPE_WIDENING_PROPERTY = "delta.enableTypeWidening"
"""The table property that lets a write widen a column's type (Delta's type widening)."""
CREATION_WAIT_S = 600.0
"""How long a task that does not create the table waits for it before its first write."""
CREATION_POLL_S = 1.0


def dynamodb_coordinator(table: str, endpoint: str) -> dict[str, str]:
    """The table properties of Delta's DynamoDB commit coordinator with its DynamoDB ``table`` at ``endpoint``."""
    conf = {"dynamoDBTableName": table, "dynamoDBEndpoint": endpoint}
    return {COORDINATOR_PROPERTY: "dynamodb", COORDINATOR_CONF_PROPERTY: json.dumps(conf)}


class DeltaTable(SinkTable):
    coordinator: Mapping[str, str] = {}
    """The coordinator's table properties (see :func:`dynamodb_coordinator`); empty: file-system commits."""
    creator = True
    """Whether this writer creates the table when it is missing (with a coordinator, one writer only)."""
    seen = False
    """Whether the table was found to exist (a Delta table is never removed by the sink)."""

    def coordinate(self, coordinator: Mapping[str, str], creator: bool) -> DeltaTable:
        """Commit through the coordinator of ``coordinator``'s properties; ``creator``: this writer creates the table
        when it is missing."""
        self.coordinator = dict(coordinator)
        self.creator = creator
        return self

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
        self.seen = self.seen or int(self.snapshot().version()) >= 0
        return self.seen

    def table_coordinator(self) -> str | None:
        """The commit coordinator the table's latest snapshot names (one read of the log): ``None`` while there is no
        table, ``""`` when its commits go to the file system."""
        snapshot = self.snapshot()
        if int(snapshot.version()) < 0:
            return None
        self.seen = True
        found = snapshot.metadata().configuration().get(COORDINATOR_PROPERTY)
        return str(found.get()) if found.isDefined() else ""

    def prepare(self, schema: pa.Schema | None) -> None:
        """With a coordinator: create the missing table with it and ``schema`` if this writer is the creator, and
        refuse an existing table whose commits do not go to a coordinator. Without one: nothing."""
        if not self.coordinator:
            return
        found = self.table_coordinator()
        if found is not None:
            if not found:
                raise ConnectError(
                    f"{self.path} is a Delta table whose commits go to the file system, not to the "
                    f"{self.coordinator[COORDINATOR_PROPERTY]} commit coordinator table.commit.coordinator names: "
                    "several workers committing at once would overwrite each other's commits. Convert it once, while "
                    f"nothing writes it: ALTER TABLE delta.`{self.path}` SET TBLPROPERTIES ("
                    + ", ".join(f"'{key}' = '{value}'" for key, value in self.coordinator.items())
                    + "), or write it from one worker with table.single.writer=true and no coordinator"
                )
            log.info("%s: commits go to the %s commit coordinator", self, found)
            return
        if not self.creator:
            return
        if schema is None:
            raise ConnectError(
                f"{self.path} does not exist: with table.commit.coordinator the connector's first task creates it "
                "when it starts, from value.schema, which is empty; set value.schema (or create the table first)"
            )
        writer = self.session.createDataFrame(schema.empty_table()).write.format("delta").mode("append")
        for key, value in self.coordinator.items():
            writer = writer.option(key, value)
        if self.partition_by:
            writer = writer.partitionBy(*self.partition_by)
        try:
            writer.save(self.path)
        except Exception as error:  # another instance of this task (one that is being stopped) created it first
            if not self.table_coordinator():
                raise
            log.warning("%s: another writer created the table first: %s", self, str(error).splitlines()[0])
            return
        self.seen = True
        log.info("%s: created the table with the %s commit coordinator", self, self.coordinator[COORDINATOR_PROPERTY])

    def await_creation(self, timeout_s: float = CREATION_WAIT_S) -> None:
        """Wait until the table exists (another writer creates it); raise :class:`ConnectError` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self.exists():
            if time.monotonic() > deadline:
                raise ConnectError(
                    f"{self.path} still does not exist after {timeout_s:.0f} s: with table.commit.coordinator the "
                    "connector's first task creates it when it starts; see that task's status and log"
                )
            log.info("%s: waiting for the connector's first task to create the table", self)
            time.sleep(CREATION_POLL_S)

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

    def write(
        self,
        tables: Mapping[TopicPartition, pa.Table],
        last_offsets: Mapping[TopicPartition, int],
        change: SchemaChange = NO_CHANGE,
    ) -> None:
        """One commit per partition. With a ``change`` each commit merges the tables' columns into the table's
        (Delta's ``mergeSchema``): the first commit of the write makes the change with its rows and ``txn``, the
        others find it made. A widened type needs Delta's type widening (``delta.enableTypeWidening``), which is
        enabled first by a commit that changes no column, so replaying it is harmless."""
        if change.widened:
            self.enable_type_widening(change)
        if self.coordinator and not self.exists():  # an append would create the table without its coordinator
            if self.creator:
                self.prepare(next(iter(tables.values())).schema if tables else None)
            else:
                self.await_creation()
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
            if change:
                writer = writer.option("mergeSchema", "true")
            if self.partition_by:
                writer = writer.partitionBy(*self.partition_by)
            writer.save(self.path)

    def enable_type_widening(self, change: SchemaChange) -> None:
        """Set ``delta.enableTypeWidening`` on the table unless it is set (Delta's type widening: the table gains the
        ``typeWidening`` feature, which its readers need Delta 3.2 or later for)."""
        snapshot = self.snapshot()
        if int(snapshot.version()) < 0:
            return  # the write creates the table, with the wider types
        found = snapshot.metadata().configuration().get(TYPE_WIDENING_PROPERTY)
        if found.isDefined() and str(found.get()).lower() == "true":
            return
        log.warning("%s: enabling Delta's type widening for %s", self, ", ".join(change.widened))
        self.session.sql(f"ALTER TABLE delta.`{self.path}` SET TBLPROPERTIES ('{TYPE_WIDENING_PROPERTY}' = 'true')")
