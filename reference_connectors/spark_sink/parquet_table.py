"""A Parquet table whose commit point is a manifest: one JSON file per write, naming the write's data files and
the last offset of each topic partition, made visible by one atomic rename.

Layout under the table directory (Spark, pyarrow and other readers skip names starting with ``_``)::

    <table>/<partition column=value>/part-....parquet        the data, readable by any Parquet reader
    <table>/_headwater/staging/<write>.json                  intent: the app id and partitions of a write
    <table>/_headwater/staging/<write>/...                    Spark's output, before it is committed
    <table>/_headwater/manifests/<write>.json                the commit: offsets, files, row count, schema

A write: the intent, then Spark writes into ``staging/<write>/``, then the manifest is written to a hidden file,
fsynced and renamed into ``manifests/`` (the commit), then the files are renamed into the table, then the staging
directory and intent are removed. After a crash, :meth:`ParquetTable.recover` finishes every committed write whose
files are still staged (renames are idempotent) and removes the staged output of uncommitted writes of the
partitions being opened, so a file is in the table only if its manifest is, and a manifest's rows are never
written again: the task resumes each partition after the offset its newest manifest records.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from headwater.reference_connectors.spark_sink.table import SinkTable
from headwater.sdk import TopicPartition

log = logging.getLogger(__name__)

META_DIR = "_headwater"


def _write_atomically(path: Path, content: bytes) -> None:
    """``content`` at ``path``, all of it or nothing, durable when this returns."""
    hidden = path.with_name(f".{path.name}.tmp")
    with open(hidden, "wb") as out:
        out.write(content)
        out.flush()
        os.fsync(out.fileno())
    os.replace(hidden, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _data_files(directory: Path) -> list[str]:
    """The Parquet files Spark wrote under ``directory``, relative to it (no markers, no checksums)."""
    return sorted(
        str(path.relative_to(directory))
        for path in directory.rglob("*.parquet")
        if not any(part.startswith(("_", ".")) for part in path.relative_to(directory).parts)
    )


class ParquetTable(SinkTable):
    def __init__(self, path: str, app_id: str, partition_by: tuple[str, ...], max_files: int) -> None:
        super().__init__(path, app_id, partition_by, max_files)
        self.root = Path(path)
        self.staging = self.root / META_DIR / "staging"
        self.manifests = self.root / META_DIR / "manifests"
        self._read: dict[str, dict[str, Any]] = {}
        """Manifests read so far, by file name (a manifest never changes)."""

    # ---- reading ---------------------------------------------------------------------------------------------

    def manifest_files(self) -> list[Path]:
        if not self.manifests.is_dir():
            return []
        return sorted(p for p in self.manifests.glob("*.json") if not p.name.startswith("."))

    def read_manifests(self) -> list[dict[str, Any]]:
        """Every committed write's manifest, oldest first."""
        found = []
        for path in self.manifest_files():
            if path.name not in self._read:
                self._read[path.name] = json.loads(path.read_text())
            found.append(self._read[path.name])
        return found

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
        for manifest in reversed(self.read_manifests()):
            if manifest.get("schema"):
                return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(manifest["schema"])))
        return None

    # ---- recovery --------------------------------------------------------------------------------------------

    def recover(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        committed = {path.stem for path in self.manifest_files()}
        for name in committed:
            if (self.staging / name).exists() or (self.staging / f"{name}.json").exists():
                self._publish(
                    name, self._read.get(f"{name}.json") or json.loads((self.manifests / f"{name}.json").read_text())
                )
        opened = {(tp.topic, tp.partition) for tp in partitions}
        if self.staging.is_dir():
            for intent in self.staging.glob("*.json"):
                if intent.stem in committed or intent.name.startswith("."):
                    continue
                try:
                    wanted = json.loads(intent.read_text())
                except (OSError, ValueError):
                    wanted = {"app_id": self.app_id, "partitions": []}  # a torn intent: its write never began
                mine = wanted["app_id"] == self.app_id
                if mine and {(t, p) for t, p in wanted["partitions"]} <= opened:
                    log.info("%s: removing the uncommitted write %s", self, intent.stem)
                    shutil.rmtree(self.staging / intent.stem, ignore_errors=True)
                    intent.unlink(missing_ok=True)
        found = self.last_offsets()
        return {tp: found[tp] for tp in partitions if tp in found}

    def _publish(self, name: str, manifest: dict[str, Any]) -> None:
        """Move a committed write's files into the table (those not moved yet), then drop its staging."""
        staged = self.staging / name
        for relative in manifest["files"]:
            source = staged / relative
            if source.exists():
                target = self.root / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)
        shutil.rmtree(staged, ignore_errors=True)
        (self.staging / f"{name}.json").unlink(missing_ok=True)

    # ---- writing ---------------------------------------------------------------------------------------------

    def write(self, tables: Mapping[TopicPartition, pa.Table], last_offsets: Mapping[TopicPartition, int]) -> None:
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"
        self.staging.mkdir(parents=True, exist_ok=True)
        self.manifests.mkdir(parents=True, exist_ok=True)
        partitions = sorted(last_offsets)
        intent = {"app_id": self.app_id, "partitions": [[tp.topic, tp.partition] for tp in partitions]}
        _write_atomically(self.staging / f"{name}.json", json.dumps(intent).encode())
        frames = [table for table in tables.values() if table.num_rows]
        rows = sum(table.num_rows for table in frames)
        schema = next(iter(tables.values())).schema if tables else None
        files: list[str] = []
        if frames:
            output = self.staging / name
            writer = self.dataframe(pa.concat_tables(frames)).write.mode("append")
            if self.partition_by:
                writer = writer.partitionBy(*self.partition_by)
            writer.parquet(str(output))
            files = _data_files(output)
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
        _write_atomically(self.manifests / f"{name}.json", json.dumps(manifest).encode())
        self._read[f"{name}.json"] = manifest
        self._publish(name, manifest)
