"""Connectors for the conformance suite's own tests: a source and a sink that keep the contract, and variants that
each break one guarantee. Their outside systems are dicts of this module, keyed by a name in the config."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from headwater.sdk import (
    ConfigDef,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    TopicPartition,
    Type,
    at_least,
    hookimpl,
)

LOGS: dict[str, list[Any]] = {}
"""The source system: a change log per name; ``None`` is a change the connector does not capture."""
SLOTS: set[str] = set()
"""What the source provisions: a slot per log, like a replication slot."""
TABLES: dict[str, list[Any]] = {}
"""The sink system: the values written, per table."""
STAGING: set[str] = set()
"""What the sink provisions: a staging area per table."""


# ---- sources ---------------------------------------------------------------------------------------------------


class LogSource(SourceConnector):
    """Captures the log ``log`` into ``topic``: offset ``{"position": p}``; heartbeats carry the log position."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("log", Type.STRING, importance=Importance.HIGH, documentation="The log to capture.")
            .define("topic", Type.STRING, importance=Importance.HIGH, documentation="Where records go.")
            .define("batch.size", Type.INT, 3, Importance.LOW, "Records per poll.", self.batch_validator())
        )

    def batch_validator(self) -> Any:
        return at_least(1)

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        SLOTS.add(config["log"])

    def task_class(self) -> type[SourceTask]:
        return LogTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        if connector_deleted:
            SLOTS.discard(self.config["log"])


class LogTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.log = LOGS.setdefault(config["log"], [])
        self.topic, self.batch = config["topic"], int(config.get("batch.size", "3"))
        self.partition = {"log": config["log"]}
        self.next = self.resume_at(self.context.offset_storage_reader.offset(self.partition))
        self.captured = self.next - 1

    def resume_at(self, stored: Mapping[str, Any] | None) -> int:
        return int(stored["position"]) + 1 if stored else 0

    def offset(self, position: int) -> dict[str, int]:
        return {"position": position}

    def poll(self) -> list[SourceRecord]:
        records: list[SourceRecord] = []
        while self.next < len(self.log) and len(records) < self.batch:
            if self.log[self.next] is not None:
                records.append(SourceRecord(self.partition, self.offset(self.next), self.topic, self.log[self.next]))
                self.captured = self.next
            self.next += 1
        return records

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        position = self.heartbeat_position()
        if position < 0:
            return []
        value = {"at": position}  # keyed: the heartbeat topic is compacted
        return [
            SourceRecord(self.partition, {"position": position}, self.heartbeat_topic(topic), value, self.partition)
        ]

    def heartbeat_position(self) -> int:
        return self.next - 1

    def heartbeat_topic(self, topic: str) -> str:
        return topic


def feed_log(config: Mapping[str, Any], count: int) -> None:
    log = LOGS.setdefault(config["log"], [])
    first = len(log)
    log.extend({"n": first + i} for i in range(count))


def advance_log(config: Mapping[str, Any]) -> None:
    LOGS.setdefault(config["log"], []).append(None)


def slots(config: Mapping[str, Any]) -> list[str]:
    return sorted(SLOTS & {config["log"]})


class ForgetfulSource(LogSource):
    """Breaks resume: ignores its stored offset and reads the log from the start again."""

    def task_class(self) -> type[SourceTask]:
        return ForgetfulTask


class ForgetfulTask(LogTask):
    def resume_at(self, stored: Mapping[str, Any] | None) -> int:
        return 0


class SkippingSource(LogSource):
    """Breaks at-least-once: each record carries the offset of the next one, which it has not sent."""

    def task_class(self) -> type[SourceTask]:
        return SkippingTask


class SkippingTask(LogTask):
    def offset(self, position: int) -> dict[str, int]:
        return {"position": position + 1}


class LeakySource(LogSource):
    """Breaks cleanup: keeps its slot when deleted."""

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        pass


class LaxSource(LogSource):
    """Breaks validation: accepts any batch size."""

    def batch_validator(self) -> Any:
        return None


class StrayHeartbeatSource(LogSource):
    """Breaks heartbeats: sends them to a topic of its own."""

    def task_class(self) -> type[SourceTask]:
        return StrayHeartbeatTask


class StrayHeartbeatTask(LogTask):
    def heartbeat_topic(self, topic: str) -> str:
        return "elsewhere"


class StuckHeartbeatSource(LogSource):
    """Breaks heartbeats: they carry the last captured position, so changes it does not capture never move it."""

    def task_class(self) -> type[SourceTask]:
        return StuckHeartbeatTask


class StuckHeartbeatTask(LogTask):
    def heartbeat_position(self) -> int:
        return self.captured


# ---- sinks -----------------------------------------------------------------------------------------------------


class TableSink(SinkConnector):
    """Writes values to the table ``table`` ``batch.size`` at a time, and the rest at each commit; commits only
    what it wrote."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("table", Type.STRING, importance=Importance.HIGH, documentation="The table to write.")
            .define("batch.size", Type.INT, 2, Importance.LOW, "Records per write.", at_least(1))
        )

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        STAGING.add(config["table"])
        TABLES.setdefault(config["table"], [])

    def task_class(self) -> type[SinkTask]:
        return TableTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        if connector_deleted:
            STAGING.discard(self.config["table"])


class TableTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.table = TABLES.setdefault(config["table"], [])
        self.batch = int(config.get("batch.size", "2"))
        self.buffer: list[SinkRecord] = []
        self.written: dict[TopicPartition, int] = {}

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.buffer.extend(records)
        if len(self.buffer) >= self.batch:
            self.write()
            self.context.request_commit()

    def write(self) -> None:
        self.table.extend(r.value for r in self.buffer)
        self.written.update({r.topic_partition: r.offset + 1 for r in self.buffer})
        self.buffer.clear()

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        self.write()
        return {tp: offset for tp, offset in self.written.items() if tp in current_offsets}

    def close(self, partitions: Collection[TopicPartition]) -> None:
        self.buffer = [r for r in self.buffer if r.topic_partition not in partitions]
        for tp in partitions:
            self.written.pop(tp, None)


def table(config: Mapping[str, Any]) -> list[Any]:
    return list(TABLES.get(config["table"], []))


def staging(config: Mapping[str, Any]) -> list[str]:
    return sorted(STAGING & {config["table"]})


class EagerSink(TableSink):
    """Breaks the commit rule: commits what it was given before writing it."""

    def task_class(self) -> type[SinkTask]:
        return EagerTask


class EagerTask(TableTask):
    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        return dict(current_offsets)


class GreedySink(TableSink):
    """Breaks pre_commit: claims five records more than it was given."""

    def task_class(self) -> type[SinkTask]:
        return GreedyTask


class GreedyTask(TableTask):
    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        self.write()
        return {tp: offset + 5 for tp, offset in current_offsets.items()}


class HoardingSink(TableSink):
    """Breaks progress: writes only full batches, so the tail is never written nor committed."""

    def task_class(self) -> type[SinkTask]:
        return HoardingTask


class HoardingTask(TableTask):
    def put(self, records: Sequence[SinkRecord]) -> None:
        self.buffer.extend(records)
        full = len(self.buffer) // self.batch * self.batch
        if full:
            kept, self.buffer = self.buffer[full:], self.buffer[:full]
            self.write()
            self.buffer = kept

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        return {tp: offset for tp, offset in self.written.items() if tp in current_offsets}
