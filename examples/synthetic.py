"""Example connectors that need no outside system: a source that counts and a sink that drops what it is given. The
docs run them, and so do the process-level tests and the benchmarks; unlike the monitorable connectors they keep no
in-process registry, so what they did is read back from Kafka and the offset stores.

A worker finds them when this folder is on ``PYTHONPATH``, as Kafka Connect finds a connector on its
``plugin.path``: ``PYTHONPATH=examples headwater standalone ...`` with
``connector.class=synthetic.SequenceSourceConnector``.

``SequenceSourceConnector`` writes records whose value is the sequence number ``n`` as ASCII digits, zero-padded to
``record.bytes``, key ``None`` (the task number with ``task.keys``); each task has source partition
``{"task": <task number>}`` and offset ``{"seq": n}``, and resumes after the stored offset, so a restarted worker
continues where its last commit left it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from headwater.sdk import (
    ConfigDef,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceBatch,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Type,
    at_least,
)


def _task_configs(config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
    return [{**config, "task.number": str(i)} for i in range(max_tasks)]


def sequence_value(n: int, size: int) -> bytes:
    """The value ``SequenceSourceConnector`` writes for ``n``: its digits, zero-padded to ``size`` bytes."""
    return b"%0*d" % (size, n)


class SequenceSourceConnector(SourceConnector):
    """Writes the sequence 0, 1, 2, ... to ``topic``, ``batch.size`` records per poll, until ``max.records``."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("topic", Type.STRING, importance=Importance.HIGH, documentation="Topic to write to.")
            .define("max.records", Type.LONG, -1, Importance.MEDIUM, "Records per task before it goes idle; -1 never.")
            .define("record.bytes", Type.INT, 100, Importance.LOW, "Bytes in each value.", at_least(1))
            .define("batch.size", Type.INT, 500, Importance.LOW, "Records returned by each poll.", at_least(1))
            .define("poll.interval.ms", Type.LONG, 0, Importance.LOW, "Pause after each non-empty poll.", at_least(0))
            .define(
                "task.keys",
                Type.BOOLEAN,
                False,
                Importance.LOW,
                "Key each record with its task number (ASCII digits), so a topic shows which task wrote what.",
            )
        )

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return SequenceSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return _task_configs(self.config, max_tasks)


class SequenceSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topic"]
        self.max_records = int(config.get("max.records", "-1"))
        self.size = int(config.get("record.bytes", "100"))
        self.batch = int(config.get("batch.size", "500"))
        self.pause_s = int(config.get("poll.interval.ms", "0")) / 1000
        self.partition = {"task": int(config.get("task.number", "0"))}
        keyed = config.get("task.keys", "false").lower() == "true"
        self.key = str(self.partition["task"]).encode() if keyed else None
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.next = int(stored["seq"]) + 1 if stored else 0

    def poll(self) -> Sequence[SourceRecord] | None:
        end = self.next + self.batch
        if self.max_records >= 0:
            end = min(end, self.max_records)
        if end <= self.next:
            time.sleep(0.05)  # idle: do not spin the worker thread
            return None
        size, numbers = self.size, range(self.next, end)
        keys = None if self.key is None else [self.key] * len(numbers)
        values = [sequence_value(n, size) for n in numbers]
        records = SourceBatch(self.partition, self.topic, values, [{"seq": n} for n in numbers], keys)
        self.next = end
        if self.pause_s:
            time.sleep(self.pause_s)
        return records


class DiscardSinkConnector(SinkConnector):
    """Accepts every record and keeps none of it; its offsets are committed as Kafka Connect's default would."""

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SinkTask]:
        return DiscardSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return _task_configs(self.config, max_tasks)


class DiscardSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.count = 0

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.count += len(records)
