"""Connectors for the conformance suite's own tests: a source and a sink that keep the contract, and variants that
each break one guarantee. Their outside systems are dicts of this module, keyed by a name in the config. The sinks
are the demo's buffered sink (:mod:`headwater.demo.sink`) writing to a dict."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.demo.sink import BufferedSinkTask
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
    TopicPartition,
    Type,
    at_least,
    hookimpl,
)
from headwater.sdk.transactions import ConnectorTransactionBoundaries, ExactlyOnceSupport

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
    """Captures the logs ``<log>/0`` .. ``<log>/<partitions - 1>`` into ``topic``, one source partition
    ``{"log": name}`` per log, spread over up to ``tasks.max`` tasks; offset ``{"position": p}``; heartbeats carry
    each log's position."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("log", Type.STRING, importance=Importance.HIGH, documentation="The logs' common name.")
            .define("topic", Type.STRING, importance=Importance.HIGH, documentation="Where records go.")
            .define("partitions", Type.INT, 3, Importance.LOW, "How many logs.", at_least(1))
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
        names = log_names(self.config)
        tasks = min(max_tasks, len(names))
        return [{**self.config, "logs": ",".join(names[n::tasks])} for n in range(tasks)]

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        if connector_deleted:
            SLOTS.discard(self.config["log"])


def log_names(config: Mapping[str, Any]) -> list[str]:
    return [f"{config['log']}/{n}" for n in range(int(config.get("partitions", 3)))]


class LogTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.topic, self.batch = config["topic"], int(config.get("batch.size", "3"))
        self.logs = {name: LOGS.setdefault(name, []) for name in config["logs"].split(",")}
        self.next: dict[str, int] = {}
        self.captured: dict[str, int] = {}
        for name in self.logs:
            stored = self.context.offset_storage_reader.offset(self.partition(name))
            self.next[name] = self.resume_at(name, stored)
            self.captured[name] = self.next[name] - 1

    def partition(self, name: str) -> dict[str, str]:
        return {"log": name}

    def resume_at(self, name: str, stored: Mapping[str, Any] | None) -> int:
        return int(stored["position"]) + 1 if stored else 0

    def offset(self, name: str, position: int) -> dict[str, int]:
        return {"position": position}

    def poll(self) -> list[SourceRecord]:
        records: list[SourceRecord] = []
        for name, log in self.logs.items():
            while self.next[name] < len(log) and len(records) < self.batch:
                position = self.next[name]
                if log[position] is not None:
                    offset = self.offset(name, position)
                    records.append(SourceRecord(self.partition(name), offset, self.topic, log[position]))
                    self.captured[name] = position
                self.next[name] += 1
        return records

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        beats = []
        for name in self.heartbeat_logs():
            position = self.heartbeat_position(name)
            if position >= 0:
                partition = self.partition(name)  # the key: the heartbeat topic is compacted
                value = {"log": name, "at": position}
                offset = {"position": position}
                beats.append(SourceRecord(partition, offset, self.heartbeat_topic(topic), value, partition))
        return beats

    def heartbeat_logs(self) -> list[str]:
        return list(self.logs)

    def heartbeat_position(self, name: str) -> int:
        return self.next[name] - 1

    def heartbeat_topic(self, topic: str) -> str:
        return topic


class MovedHeartbeatSource(LogSource):
    """Keeps the contract like :class:`LogSource`, but sends a heartbeat for a log only once its position has moved
    since the last record or heartbeat handed over for it (as Debezium's heartbeats do)."""

    def task_class(self) -> type[SourceTask]:
        return MovedHeartbeatTask


class MovedHeartbeatTask(LogTask):
    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        if not hasattr(self, "reported"):
            self.reported = dict(self.captured)
        beats = [b for b in super().produce_heartbeat_records(topic) if self.moved(b)]
        for beat in beats:
            self.reported[beat.value["log"]] = beat.value["at"]
        return beats

    def moved(self, beat: SourceRecord) -> bool:
        name = beat.value["log"]
        return max(self.reported.get(name, -1), self.captured[name]) < beat.value["at"]


class LogBatchSource(LogSource):
    """Keeps the contract like :class:`LogSource`, but hands each poll's records over as one :class:`SourceBatch` of
    one log: JSON bytes, each with a header naming its log (so the ``bytes`` converters send the columns as they
    are), and heartbeats of JSON bytes too."""

    def task_class(self) -> type[SourceTask]:
        return LogBatchTask


class LogBatchTask(LogTask):
    def poll(self) -> SourceBatch | None:  # type: ignore[override]
        for name, log in self.logs.items():
            values: list[bytes] = []
            offsets: list[dict[str, int]] = []
            while self.next[name] < len(log) and len(values) < self.batch:
                position = self.next[name]
                if log[position] is not None:
                    values.append(json.dumps(log[position]).encode())
                    offsets.append(self.offset(name, position))
                    self.captured[name] = position
                self.next[name] += 1
            if values:
                headers = [[("log", name.encode())]] * len(values)
                return SourceBatch(self.partition(name), self.topic, values, offsets, headers=headers)
        return None

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        encoded = json.dumps
        beats = super().produce_heartbeat_records(topic)
        return [dataclasses.replace(b, key=encoded(b.key).encode(), value=encoded(b.value).encode()) for b in beats]


FED: dict[str, int] = {}
"""How many records each log name has been fed, to spread them round-robin over its partitions."""


def feed_log(config: Mapping[str, Any], count: int) -> list[Any]:
    names = log_names(config)
    values = []
    for _ in range(count):
        n = FED[config["log"]] = FED.get(config["log"], 0) + 1
        name = names[n % len(names)]
        log = LOGS.setdefault(name, [])
        values.append({"log": name, "n": len(log)})
        log.append(values[-1])
    return values


def advance_log(config: Mapping[str, Any]) -> None:
    for name in log_names(config):
        LOGS.setdefault(name, []).append(None)


def slots(config: Mapping[str, Any]) -> list[str]:
    return sorted(SLOTS & {config["log"]})


class ForgetfulSource(LogSource):
    """Breaks resume: ignores its stored offset and reads the log from the start again."""

    def task_class(self) -> type[SourceTask]:
        return ForgetfulTask


class ForgetfulTask(LogTask):
    def resume_at(self, name: str, stored: Mapping[str, Any] | None) -> int:
        return 0


class SkippingSource(LogSource):
    """Breaks at-least-once: each record carries the offset of the next one, which it has not sent."""

    def task_class(self) -> type[SourceTask]:
        return SkippingTask


class SkippingTask(LogTask):
    def offset(self, name: str, position: int) -> dict[str, int]:
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
    def heartbeat_position(self, name: str) -> int:
        return self.captured[name]


class ReadAheadSource(LogSource):
    """Breaks at-least-once: reads everything new into a buffer and gives each record the task's read position,
    not its own (a file source that records ``file.tell()``)."""

    def task_class(self) -> type[SourceTask]:
        return ReadAheadTask


class ReadAheadTask(LogTask):
    def poll(self) -> list[SourceRecord]:
        if not hasattr(self, "buffer"):
            self.buffer: list[tuple[str, Any]] = []
        for name, log in self.logs.items():
            while self.next[name] < len(log):
                if log[self.next[name]] is not None:
                    self.buffer.append((name, log[self.next[name]]))
                self.next[name] += 1
        taken, self.buffer = self.buffer[: self.batch], self.buffer[self.batch :]
        return [
            SourceRecord(self.partition(name), {"position": self.next[name] - 1}, self.topic, value)
            for name, value in taken
        ]


class HeartbeatAheadSource(LogSource):
    """Breaks at-least-once: heartbeats carry the end of the log while records are still unread."""

    def task_class(self) -> type[SourceTask]:
        return HeartbeatAheadTask


class HeartbeatAheadTask(LogTask):
    def heartbeat_position(self, name: str) -> int:
        return len(self.logs[name]) - 1


class BufferedHeartbeatSource(LogSource):
    """Breaks at-least-once: reads each log's new records into a buffer and hands them over a batch at a time, each
    with its own position, but its heartbeats carry the position of the last record read into the buffer, not of
    the last handed over (an HTTP source reporting the cursor of the page it fetched)."""

    def task_class(self) -> type[SourceTask]:
        return BufferedHeartbeatTask


class BufferedHeartbeatTask(LogTask):
    def poll(self) -> list[SourceRecord]:
        if not hasattr(self, "buffers"):
            self.buffers: dict[str, list[tuple[int, Any]]] = {name: [] for name in self.logs}
        records = []
        for name, log in self.logs.items():
            while self.next[name] < len(log):  # fetch everything new
                if log[self.next[name]] is not None:
                    self.buffers[name].append((self.next[name], log[self.next[name]]))
                self.next[name] += 1
            taken, self.buffers[name] = self.buffers[name][: self.batch], self.buffers[name][self.batch :]
            for position, value in taken:
                records.append(SourceRecord(self.partition(name), self.offset(name, position), self.topic, value))
        return records


class MarkedHeartbeatSource(BufferedHeartbeatSource):
    """Breaks at-least-once like :class:`BufferedHeartbeatSource`, with heartbeat offsets marked as such, so no
    record's offset ever equals a heartbeat's: only a crash between the heartbeat's acknowledgement and the data's
    shows the loss (there is no ``offset_order`` to compare positions by)."""

    def task_class(self) -> type[SourceTask]:
        return MarkedHeartbeatTask


class MarkedHeartbeatTask(BufferedHeartbeatTask):
    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        beats = super().produce_heartbeat_records(topic)
        return [dataclasses.replace(b, source_offset={**dict(b.source_offset or {}), "idle": True}) for b in beats]


class PagedResumeSource(LogSource):
    """Breaks at-least-once only after resuming: a task started from a stored offset pages through each log three
    records at a time and skips the record after every page (an off-by-one in its resumed cursor)."""

    def task_class(self) -> type[SourceTask]:
        return PagedResumeTask


class PagedResumeTask(LogTask):
    def resume_at(self, name: str, stored: Mapping[str, Any] | None) -> int:
        if stored:
            self.resumed = getattr(self, "resumed", {})
            self.resumed[name] = 0
        return super().resume_at(name, stored)

    def poll(self) -> list[SourceRecord]:
        records = super().poll()
        for name, done in getattr(self, "resumed", {}).items():
            done += sum(1 for r in records if r.source_partition == self.partition(name))
            if done >= 3 and self.next[name] < len(self.logs[name]):
                self.next[name] += 1  # the page's cursor points one past its end
                done = 0
            self.resumed[name] = done
        return records


class RestartDropsSource(LogSource):
    """Breaks at-least-once: a restarted task starts at the end of the log, dropping what came while it was down."""

    def task_class(self) -> type[SourceTask]:
        return RestartDropsTask


class RestartDropsTask(LogTask):
    def resume_at(self, name: str, stored: Mapping[str, Any] | None) -> int:
        return len(self.logs[name]) if stored else 0


class MissingPartitionSource(LogSource):
    """Breaks at-least-once: with more than one task, ``task_configs`` leaves the last log out."""

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        names = log_names(self.config)
        if max_tasks > 1:
            names = names[:-1]
        tasks = min(max_tasks, len(names))
        return [{**self.config, "logs": ",".join(names[n::tasks])} for n in range(tasks)]


class OverlapSource(LogSource):
    """Breaks partition ownership: every task is given every log."""

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "logs": ",".join(log_names(self.config))} for _ in range(max_tasks)]


class SharedOffsetSource(LogSource):
    """Breaks at-least-once: one offset map per log, updated in place, so records already handed over later carry
    a position the task has not handed over yet."""

    def task_class(self) -> type[SourceTask]:
        return SharedOffsetTask


class SharedOffsetTask(LogTask):
    def offset(self, name: str, position: int) -> dict[str, int]:
        if not hasattr(self, "offsets"):
            self.offsets: dict[str, dict[str, int]] = {}
        shared = self.offsets.setdefault(name, {})
        shared["position"] = position
        return shared


class OneHeartbeatSource(LogSource):
    """Breaks heartbeats: each task sends them for its first log only, so its other logs' offsets never move
    while they are idle."""

    def task_class(self) -> type[SourceTask]:
        return OneHeartbeatTask


class OneHeartbeatTask(LogTask):
    def heartbeat_logs(self) -> list[str]:
        return list(self.logs)[:1]


class TidySource(LogSource):
    """Breaks cleanup: removes its slot on every stop, deleted or not."""

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        SLOTS.discard(self.config["log"])


class ExactLogSource(LogSource):
    """Keeps the contract like :class:`LogSource` and says it delivers exactly once, which it does: a task resumes
    from its committed offsets alone. It can define its own transactions: with ``transaction.boundary=connector``
    a task commits every second poll, and whenever it has read all there is."""

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        return ExactlyOnceSupport.SUPPORTED

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        return ConnectorTransactionBoundaries.SUPPORTED

    def task_class(self) -> type[SourceTask]:
        return ExactLogTask


class ExactLogTask(LogTask):
    def poll(self) -> list[SourceRecord]:
        records = super().poll()
        transactions = self.context.transaction_context
        if transactions is not None and records:
            self.polls = getattr(self, "polls", 0) + 1
            caught_up = all(self.next[name] >= len(log) for name, log in self.logs.items())
            if caught_up or self.polls % 2 == 0:
                transactions.commit_transaction(records[-1])
        return records


CHECKPOINTS: dict[str, int] = {}
"""Where the checkpointing sources keep each log's position, outside their offsets (their own database)."""


class LateCheckpointSource(ExactLogSource):
    """Breaks exactly-once: keeps each log's position in a store of its own, written once the runtime says the
    offsets are committed, and resumes from it; a worker that dies between a commit and that call leaves the
    position behind, and the records after it are written again. At least once it is fine."""

    def task_class(self) -> type[SourceTask]:
        return LateCheckpointTask


class LateCheckpointTask(ExactLogTask):
    def resume_at(self, name: str, stored: Mapping[str, Any] | None) -> int:
        return CHECKPOINTS[name] + 1 if name in CHECKPOINTS else super().resume_at(name, stored)

    @hookimpl
    def offsets_committed(self, offsets: Any) -> None:
        for partition, offset in offsets:
            if offset is not None:
                CHECKPOINTS[partition["log"]] = int(offset["position"])


class EagerCheckpointSource(ExactLogSource):
    """Breaks exactly-once (and at-least-once): keeps each log's position in a store of its own, written as it hands
    records over, and resumes from it; the records of a transaction a dying worker left open are never read again."""

    def task_class(self) -> type[SourceTask]:
        return EagerCheckpointTask


class EagerCheckpointTask(ExactLogTask):
    def resume_at(self, name: str, stored: Mapping[str, Any] | None) -> int:
        return CHECKPOINTS[name] + 1 if name in CHECKPOINTS else super().resume_at(name, stored)

    def poll(self) -> list[SourceRecord]:
        records = super().poll()
        for record in records:
            assert record.source_partition is not None and record.source_offset is not None
            CHECKPOINTS[record.source_partition["log"]] = int(record.source_offset["position"])
        return records


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


class TableTask(BufferedSinkTask):
    """The demo's buffered sink (:class:`BufferedSinkTask`), writing each batch to its table in :data:`TABLES`."""

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.table = TABLES.setdefault(config["table"], [])
        self.batch_size = int(config.get("batch.size", "2"))

    def write_batch(self, records: Sequence[SinkRecord]) -> None:
        self.table.extend(r.value for r in records)


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
        full = len(self.buffer) // self.batch_size * self.batch_size
        if full:
            kept, self.buffer = self.buffer[full:], self.buffer[:full]
            self.write()
            self.buffer = kept

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        return {tp: offset for tp, offset in self.written.items() if tp in current_offsets}


class OnePastSink(TableSink):
    """Breaks the commit rule: says one record more than it wrote is safe to commit."""

    def task_class(self) -> type[SinkTask]:
        return OnePastTask


class OnePastTask(TableTask):
    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        found = self.written.items()
        return {tp: min(offset + 1, current_offsets[tp]) for tp, offset in found if tp in current_offsets}


class SkipRedeliveredSink(TableSink):
    """Breaks at-least-once: remembers the highest offset it was given per partition, even across a revocation,
    and skips records below it as duplicates, though the revocation dropped them unwritten."""

    def task_class(self) -> type[SinkTask]:
        return SkipRedeliveredTask


class SkipRedeliveredTask(TableTask):
    def put(self, records: Sequence[SinkRecord]) -> None:
        if not hasattr(self, "seen"):
            self.seen: dict[TopicPartition, int] = {}
        fresh = [r for r in records if r.offset >= self.seen.get(r.topic_partition, 0)]
        for r in records:
            self.seen[r.topic_partition] = max(self.seen.get(r.topic_partition, 0), r.offset + 1)
        super().put(fresh)
