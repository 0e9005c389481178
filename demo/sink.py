"""The demo's sink when Spark cannot run (no Java): change events into a Parquet table written with pyarrow alone.

Each flush writes the buffered records as one file, under a hidden name first and then renamed into the table
(readers skip ``.`` names), and ``pre_commit`` commits only what is written. That is at least once: a crash
between a file's rename and the commit writes those records again. The Spark sink is the exactly-once one.

:class:`BufferedSinkTask` is that buffering and committing (KIP-89) apart from how a batch is written; the
conformance suite's own tests derive their sample sinks from it, the correct one and those broken on purpose
(``tests/harness/conformance_samples.py``).
"""

from __future__ import annotations

import json
import os
from abc import abstractmethod
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from headwater.sdk import (
    ConfigDef,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    TopicPartition,
    Type,
    at_least,
    hookimpl,
)

COLUMNS = pa.schema(
    [
        ("op", pa.string()),
        ("ts_ms", pa.int64()),
        ("kafka_topic", pa.string()),
        ("kafka_partition", pa.int32()),
        ("kafka_offset", pa.int64()),
        ("kafka_key", pa.string()),
    ]
)
"""The columns the Spark sink writes for the demo's ``value.schema`` and its default metadata columns (less the
timestamp)."""


class ParquetFileSink(SinkConnector):
    """Writes change events (JSON objects with ``op`` and ``ts_ms``) to ``table.path``, one Parquet file per flush."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("table.path", Type.STRING, importance=Importance.HIGH, documentation="Directory of the table.")
            .define("flush.max.records", Type.INT, 1000, Importance.MEDIUM, "Records per file.", at_least(1))
        )

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SinkTask]:
        return ParquetFileTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class BufferedSinkTask(SinkTask):
    """Buffers the records it is given and writes them a batch at a time; commits only what it has written.

    - ``put`` buffers; a full batch is written and ``context.request_commit()`` asks for a commit at once;
    - ``pre_commit`` writes what is left and returns, per partition, the offset after the last record *written*:
      the runtime commits that and never more, so a crash loses nothing that was not written (it comes again);
    - ``close`` drops what is buffered for partitions taken away (they come again to their next owner).

    A subclass says how a batch is written (:meth:`write_batch`); its ``start`` calls this one and sets
    :attr:`batch_size`.
    """

    batch_size: int
    """How many buffered records make a batch."""

    def start(self, config: Mapping[str, str]) -> None:
        self.buffer: list[SinkRecord] = []
        self.written: dict[TopicPartition, int] = {}
        """Per partition, the offset after the last record written: what is safe to commit."""

    @abstractmethod
    def write_batch(self, records: Sequence[SinkRecord]) -> None:
        """Make ``records`` (at least one) durable in the table."""

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.buffer.extend(records)
        if len(self.buffer) >= self.batch_size:
            self.write()
            self.context.request_commit()

    def write(self) -> None:
        """Write the buffered records, if any, and count them as written."""
        if not self.buffer:
            return
        self.write_batch(self.buffer)
        for record in self.buffer:
            self.written[record.topic_partition] = record.offset + 1
        self.buffer.clear()

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Flush, then commit only what is in the table."""
        self.write()
        return {tp: offset for tp, offset in self.written.items() if tp in current_offsets}

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Revoked partitions: drop what was never written (not committed, so it comes again)."""
        self.buffer = [r for r in self.buffer if r.topic_partition not in partitions]
        for tp in partitions:
            self.written.pop(tp, None)


class ParquetFileTask(BufferedSinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.path = Path(config["table.path"])
        self.path.mkdir(parents=True, exist_ok=True)
        self.batch_size = int(config.get("flush.max.records", "1000"))
        self.files = len(list(self.path.glob("part-*.parquet")))

    def write_batch(self, records: Sequence[SinkRecord]) -> None:
        """One file more in the table: written under a hidden name, then renamed into it."""
        rows = [row(record) for record in records]
        name = f"part-{self.files:05d}.parquet"
        hidden = self.path / f".{name}"
        pq.write_table(pa.Table.from_pylist(rows, schema=COLUMNS), hidden)
        os.replace(hidden, self.path / name)
        self.files += 1


def row(record: SinkRecord) -> dict[str, Any]:
    """A change event's table row: its operation and time, and where it was in Kafka."""
    value = record.value if isinstance(record.value, Mapping) else {}
    return {
        "op": value.get("op"),
        "ts_ms": value.get("ts_ms"),
        "kafka_topic": record.topic,
        "kafka_partition": record.partition,
        "kafka_offset": record.offset,
        "kafka_key": None if record.key is None else json.dumps(record.key, separators=(",", ":")),
    }
