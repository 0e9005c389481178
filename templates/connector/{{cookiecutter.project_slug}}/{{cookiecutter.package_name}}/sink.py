"""A sink connector that writes records to JSON-lines files, in batches, committing only what it has written.

Replace the files with your system; keep the shape:

- ``put`` buffers; a full batch is written and ``context.request_commit()`` asks for a commit at once;
- ``pre_commit`` writes what is left and returns, per partition, the offset after the last record *written*: the
  runtime commits that and never more, so a crash loses nothing that was not written (it is delivered again);
- ``close`` drops what is buffered for partitions taken away (they are delivered again to their next owner);
- ``stop(connector_deleted=True)`` removes what the connector provisioned (here a lock file claiming the
  directory); a plain stop keeps it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from headwater.sdk import ConfigDef, SinkConnector, SinkRecord, SinkTask, TopicPartition, hookimpl

from {{ cookiecutter.package_name }} import config as keys


def lock_path(directory: str, connector: str) -> Path:
    """The file by which connector ``connector`` claims ``directory``."""
    return Path(directory, f".{connector}.lock")


def locks(directory: str) -> list[Path]:
    """Every connector's claim on ``directory``."""
    return sorted(Path(directory).glob(".*.lock"))


def written_values(directory: str) -> list[object]:
    """Every value written to ``directory``, file by file."""
    files = sorted(Path(directory).glob("*.jsonl"))
    return [json.loads(line) for file in files for line in file.read_text(encoding="utf-8").splitlines()]


class {{ cookiecutter.class_prefix }}SinkConnector(SinkConnector):
    """Writes every topic partition it is given to a file of its own in one directory."""

    def version(self) -> str:
        return "0.1.0"

    def config_def(self) -> ConfigDef:
        return keys.config_def()

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        Path(config[keys.DIRECTORY]).mkdir(parents=True, exist_ok=True)
        self.lock = lock_path(config[keys.DIRECTORY], config["name"])
        self.lock.touch()

    def task_class(self) -> type[SinkTask]:
        return {{ cookiecutter.class_prefix }}SinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config) for _ in range(max_tasks)]  # the runtime spreads the partitions over the tasks

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        if connector_deleted:
            self.lock.unlink(missing_ok=True)


class {{ cookiecutter.class_prefix }}SinkTask(SinkTask):
    # spelled out, not inherited from the demo's sink (headwater.demo.sink): this is the code you edit
    def start(self, config: Mapping[str, str]) -> None:
        self.directory = Path(config[keys.DIRECTORY])
        self.batch_size: int = self.context.parsed_config[keys.BATCH_SIZE]  # parsed by config_def: an int, defaulted
        self.records_written = self.context.metrics.counter("records_written", "Records written to the files.")
        """Served on the worker's /metrics as headwater_connect_plugin_records_written_total{connector, task}."""
        self.buffer: list[SinkRecord] = []
        self.written: dict[TopicPartition, int] = {}
        """Per partition, the offset after the last record written: what is safe to commit."""

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.buffer.extend(records)
        if len(self.buffer) >= self.batch_size:
            self.write()
            self.context.request_commit()

    def write(self) -> None:
        """Append the buffered records to their partitions' files and make them durable."""
        by_partition: dict[TopicPartition, list[SinkRecord]] = {}
        for record in self.buffer:
            by_partition.setdefault(record.topic_partition, []).append(record)
        for tp, records in by_partition.items():
            with (self.directory / f"{tp.topic}-{tp.partition}.jsonl").open("a", encoding="utf-8") as file:
                file.writelines(json.dumps(record.value) + "\n" for record in records)
                file.flush()
                os.fsync(file.fileno())
            self.written[tp] = records[-1].offset + 1
            self.records_written.inc(len(records))
        self.buffer.clear()

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        self.write()
        return {tp: offset for tp, offset in self.written.items() if tp in current_offsets}

    def close(self, partitions: Collection[TopicPartition]) -> None:
        self.buffer = [record for record in self.buffer if record.topic_partition not in partitions]
        for tp in partitions:
            self.written.pop(tp, None)
