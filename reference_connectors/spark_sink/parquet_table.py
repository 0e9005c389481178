"""A Parquet table whose commit point is a manifest: one JSON file per write, naming the write's data files and
the last offset of each topic partition, made visible whole.

Layout under the table directory (Spark, pyarrow and other readers skip names starting with ``_``)::

    <table>/<partition column=value>/part-....parquet        the data, readable by any Parquet reader
    <table>/_headwater/staging/<write>.json                  intent: the app id and partitions of a write
    <table>/_headwater/staging/<write>/...                    Spark's output, before it is committed
    <table>/_headwater/manifests/<write>.json                the commit: offsets, files, row count, schema

A write: the intent, then Spark writes into ``staging/<write>/`` (with its own commit protocol, so the output is
complete there when the job ends, whichever host its executors ran on), then the files there are listed, then the
manifest is written whole (the commit), then the files are moved into the table, then the staging directory and
intent are removed. A write whose rows produced no file under its staging directory fails before its manifest: a
manifest never records rows without files. After a crash, :meth:`ParquetTable.recover` finishes every committed
write whose files are still staged (moves are idempotent) and removes the staged output of uncommitted writes of
the partitions being opened, so a file is in the table only if its manifest is, and a manifest's rows are never
written again: the task resumes each partition after the offset its newest manifest records.

Every file operation goes through Hadoop's ``FileSystem`` (:class:`.HadoopFiles`), so the protocol runs unchanged on
a local disk, HDFS or an object store: it needs no atomic directory rename, only whole-object visibility of one
file (the manifest) and strongly consistent listing, which S3 has given since December 2020.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Collection, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from headwater.reference_connectors.spark_sink.hadoop_files import join
from headwater.reference_connectors.spark_sink.record_schema import SchemaChange
from headwater.reference_connectors.spark_sink.table import NO_CHANGE, SinkTable
from headwater.sdk import ConnectError, TopicPartition

log = logging.getLogger(__name__)

META_DIR = "_headwater"


def data_files(relative: list[str]) -> list[str]:
    """The Parquet files among ``relative`` paths Spark wrote (no markers, checksums or hidden files)."""
    return [
        name
        for name in relative
        if name.endswith(".parquet") and not any(part.startswith(("_", ".")) for part in name.split("/"))
    ]


class ParquetTable(SinkTable):
    def __init__(
        self, session: SparkSession, path: str, app_id: str, partition_by: tuple[str, ...], max_files: int
    ) -> None:
        super().__init__(session, path, app_id, partition_by, max_files)
        self.staging = join(self.path, META_DIR, "staging")
        self.manifests = join(self.path, META_DIR, "manifests")
        self._read: dict[str, dict[str, Any]] = {}
        """Manifests read so far, by file name (a manifest never changes)."""

    # ---- reading ---------------------------------------------------------------------------------------------

    def manifest_names(self) -> list[str]:
        return [name for name in self.files.names(self.manifests) if name.endswith(".json") and name[0] != "."]

    def manifest(self, name: str) -> dict[str, Any]:
        if name not in self._read:
            self._read[name] = json.loads(self.files.read(join(self.manifests, name)))
        return self._read[name]

    def read_manifests(self) -> list[dict[str, Any]]:
        """Every committed write's manifest, oldest first."""
        return [self.manifest(name) for name in self.manifest_names()]

    def last_offsets(self) -> dict[TopicPartition, int]:
        """The last offset written by this app id for every topic partition it wrote."""
        found: dict[TopicPartition, int] = {}
        for manifest in self.read_manifests():
            if manifest["app_id"] != self.app_id:
                continue
            for topic, partitions in manifest["offsets"].items():
                for partition, offset in partitions.items():
                    tp = TopicPartition(topic, int(partition))
                    found[tp] = max(found.get(tp, -1), int(offset))
        return found

    def schema(self) -> pa.Schema | None:
        """The columns of every manifest, merged: a column that a write added stays, whichever writer (another task
        whose columns had not changed yet) committed last; a column a write widened has its widest type."""
        found = [
            pa.ipc.read_schema(pa.py_buffer(base64.b64decode(manifest["schema"])))
            for manifest in self.read_manifests()
            if manifest.get("schema")
        ]
        if not found:
            return None
        return pa.unify_schemas(found, promote_options="permissive") if len(found) > 1 else found[0]

    # ---- recovery --------------------------------------------------------------------------------------------

    def recover(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        committed = {name.removesuffix(".json") for name in self.manifest_names()}
        staged = set(self.files.names(self.staging))
        for name in sorted(committed):
            if name in staged or f"{name}.json" in staged:
                self._publish(name, self.manifest(f"{name}.json"))
        opened = {(tp.topic, tp.partition) for tp in partitions}
        for intent in sorted(staged):
            name = intent.removesuffix(".json")
            if not intent.endswith(".json") or intent.startswith(".") or name in committed:
                continue
            try:
                wanted = json.loads(self.files.read(join(self.staging, intent)))
            except Exception as error:  # a torn intent: its write never began
                log.info("%s: the intent %s is unreadable (%s)", self, intent, error)
                wanted = {"app_id": self.app_id, "partitions": []}
            mine = wanted["app_id"] == self.app_id
            if mine and {(t, p) for t, p in wanted["partitions"]} <= opened:
                log.info("%s: removing the uncommitted write %s", self, name)
                self.files.delete(join(self.staging, name))
                self.files.delete(join(self.staging, intent))
        found = self.last_offsets()  # listed again: a manifest another owner committed meanwhile counts
        return {tp: found[tp] for tp in partitions if tp in found}

    def _publish(self, name: str, manifest: dict[str, Any]) -> None:
        """Move a committed write's files into the table (those not moved yet), then drop its staging."""
        staged = join(self.staging, name)
        missing = [
            relative
            for relative in manifest["files"]
            if not self.files.move(join(staged, relative), join(self.path, relative))
        ]
        if missing:
            raise ConnectError(
                f"{self}: the committed write {name} names files that are neither staged nor in the table: "
                f"{missing[:3]} ({len(missing)} of {len(manifest['files'])}); its rows are lost"
            )
        self.files.delete(staged)
        self.files.delete(f"{staged}.json")

    # ---- writing ---------------------------------------------------------------------------------------------

    def write(
        self,
        tables: Mapping[TopicPartition, pa.Table],
        last_offsets: Mapping[TopicPartition, int],
        change: SchemaChange = NO_CHANGE,
    ) -> None:
        """One manifest: a change of columns is its ``schema``, so it lands with the rows (the files written with
        the new columns) or not at all."""
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"
        partitions = sorted(last_offsets)
        intent = {"app_id": self.app_id, "partitions": [[tp.topic, tp.partition] for tp in partitions]}
        self.files.mkdirs(self.staging)
        self.files.mkdirs(self.manifests)
        self.files.write_atomically(join(self.staging, f"{name}.json"), json.dumps(intent).encode())
        frames = [table for table in tables.values() if table.num_rows]
        rows = sum(table.num_rows for table in frames)
        schema = next(iter(tables.values())).schema if tables else None
        files: list[str] = []
        if frames:
            output = join(self.staging, name)
            writer = self.dataframe(pa.concat_tables(frames)).write.mode("append")
            if self.partition_by:
                writer = writer.partitionBy(*self.partition_by)
            writer.parquet(output)
            files = data_files(self.files.files_under(output))
            if not files:
                raise ConnectError(
                    f"{self}: Spark wrote {rows} rows to {output} but no Parquet file is there: the executors' "
                    "output did not reach the file system the driver sees (a file: table path needs a directory "
                    "shared by every host of the cluster); nothing was committed"
                )
        offsets: dict[str, dict[str, int]] = {}
        for tp in partitions:
            offsets.setdefault(tp.topic, {})[str(tp.partition)] = last_offsets[tp]
        manifest = {
            "app_id": self.app_id,
            "write": name,
            "offsets": offsets,
            "files": files,
            "rows": rows,
            "schema": base64.b64encode(schema.serialize().to_pybytes()).decode() if schema is not None else None,
            "written_ms": time.time_ns() // 1_000_000,
        }
        self.files.write_atomically(join(self.manifests, f"{name}.json"), json.dumps(manifest).encode())
        self._read[f"{name}.json"] = manifest
        self._publish(name, manifest)
