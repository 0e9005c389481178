"""Instrumented connectors for tests, and the registry they report into (Kafka Connect's ``MonitorableSource-
Connector``/``MonitorableSinkConnector`` and ``RuntimeHandles``): tests steer them through their handles and assert
on what they observed, not on runtime internals.

In a worker subprocess the registry is out of the test's reach: when the environment variable
:data:`EVENTS_FILE_ENV` names a file, every event is also appended to it as one JSON line, which
:func:`read_events` reads back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
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


@dataclass
class TaskHandle:
    """What one task did, in order, and the knobs a test turns to steer it."""

    connector: str
    """The connector's name."""
    task: int
    """The task's number."""
    events: list[tuple[Any, ...]] = field(default_factory=list)
    """``(event, detail)`` pairs in order: ``start``, ``poll``, ``put``, ``pre_commit``, ``stop``, ..."""
    records: list[SinkRecord] = field(default_factory=list)
    """Every record a sink task was given by a successful ``put``."""
    pending: list[Any] = field(default_factory=list)
    """Values a source task returns from its next polls (when ``messages.per.poll`` is 0)."""
    log_position: int = 0
    """A source's position in its (simulated) change log; heartbeats report it even when no data is captured."""
    pre_commit: Callable[[Mapping[TopicPartition, int]], Mapping[TopicPartition, int] | None] | None = None
    """Replaces the sink's pre_commit result; ``None`` keeps the default (flush, then commit everything)."""
    put_error: Exception | None = None
    """Raised by the sink's next ``put`` (then cleared)."""
    request_commit_after_put: bool = False
    """Whether the sink task calls ``context.request_commit()`` after every ``put``."""
    committed: list[Any] = field(default_factory=list)
    """The offsets of every commit the task was told of (its ``offsets_committed`` hook), in order."""

    def names(self) -> list[str]:
        """The event names in order (``["start", "put", "pre_commit", ...]``)."""
        return [event[0] for event in self.events]


EVENTS_FILE_ENV = "HEADWATER_EVENTS_FILE"
"""Names the file a worker subprocess appends its connectors' events to."""


class RuntimeHandles:
    """Process-wide registry of task handles, keyed by connector name and task number; every event is also
    appended to ``events_file`` when one is given."""

    def __init__(self, events_file: str | None = None) -> None:
        self.tasks: dict[tuple[str, int], TaskHandle] = {}
        """The handles by ``(connector, task)``."""
        self.events: list[tuple[str, int | None, str, Any]] = []
        """Every connector and task event across the process, in order: (connector, task or None, event, detail)."""
        self.events_file = events_file

    def task(self, connector: str, task: int = 0) -> TaskHandle:
        """The handle of task ``task`` of ``connector``, made on first use (a test may set its knobs first)."""
        key = (connector, task)
        if key not in self.tasks:
            self.tasks[key] = TaskHandle(connector, task)
        return self.tasks[key]

    def record(self, connector: str, task: int | None, event: str, detail: Any = None) -> None:
        """Note an event of a connector (``task`` ``None``) or of one of its tasks."""
        self.events.append((connector, task, event, detail))
        if task is not None:
            self.task(connector, task).events.append((event, detail))
        if self.events_file:
            line = {"connector": connector, "task": task, "event": event, "detail": _jsonable(detail)}
            with open(self.events_file, "a", encoding="utf-8") as file:
                file.write(json.dumps(line) + "\n")

    def reset(self) -> None:
        """Forget every handle and event (the ``runtime_handles`` fixture does this before and after its test)."""
        self.tasks.clear()
        self.events.clear()


HANDLES = RuntimeHandles(os.environ.get(EVENTS_FILE_ENV))
"""The registry the instrumented connectors of this process report into."""


def _jsonable(detail: Any) -> Any:
    """An event's detail as JSON: a topic partition as ``"<topic>-<partition>"``, a mapping as a sorted list of
    ``[key, value]`` pairs."""
    if isinstance(detail, TopicPartition):
        return f"{detail.topic}-{detail.partition}"
    if isinstance(detail, Mapping):
        return sorted([[_jsonable(k), _jsonable(v)] for k, v in detail.items()], key=json.dumps)
    if isinstance(detail, list | tuple):
        return [_jsonable(item) for item in detail]
    if detail is None or isinstance(detail, str | int | float | bool):
        return detail
    return repr(detail)


def read_events(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The events a worker subprocess appended to ``path`` (none when it does not exist), oldest first: each
    ``{"connector", "task", "event", "detail"}``."""
    try:
        with open(path, encoding="utf-8") as file:
            return [json.loads(line) for line in file if line.endswith("\n")]
    except FileNotFoundError:
        return []


def _task_configs(name: str, max_tasks: int, config: Mapping[str, str]) -> list[dict[str, str]]:
    return [{**config, "task.id": str(i), "connector.name": name} for i in range(max_tasks)]


class MonitorableSourceConnector(SourceConnector):
    """Emits JSON values ``{"task": t, "seq": n}`` to ``topic``; source partition ``{"task.id": "<c>-<t>"}``,
    offset ``{"saved": n}``. Its heartbeat hook reports the handle's ``log_position``."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("topic", Type.STRING, importance=Importance.HIGH, documentation="Topic to write to.")
            .define(
                "messages.per.poll",
                Type.INT,
                1,
                Importance.LOW,
                "Records generated per poll; 0 returns the handle's pending values instead.",
                at_least(0),
            )
            .define("max.messages", Type.LONG, -1, Importance.LOW, "Stop generating after this many; -1 never.")
        )

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        HANDLES.record(config["name"], None, "start")

    def task_class(self) -> type[SourceTask]:
        return MonitorableSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return _task_configs(self.config["name"], max_tasks, self.config)

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        HANDLES.record(self.config["name"], None, "stop", connector_deleted)


class MonitorableSourceTask(SourceTask):
    """The task of :class:`MonitorableSourceConnector`; resumes from its committed ``{"saved": n}``."""

    def start(self, config: Mapping[str, str]) -> None:
        self.name = config["connector.name"]
        self.number = int(config["task.id"])
        self.handle = HANDLES.task(self.name, self.number)
        self.topic = config["topic"]
        self.per_poll = int(config.get("messages.per.poll", "1"))
        self.max_messages = int(config.get("max.messages", "-1"))
        self.partition = {"task.id": f"{self.name}-{self.number}"}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.seq = int(stored["saved"]) + 1 if stored else 0
        self.handle.log_position = max(self.handle.log_position, self.seq)
        HANDLES.record(self.name, self.number, "start", stored)

    def poll(self) -> list[SourceRecord] | None:
        if self.per_poll == 0:
            values, self.handle.pending[:] = list(self.handle.pending), []
        else:
            count = self.per_poll
            if self.max_messages >= 0:
                count = max(0, min(count, self.max_messages - self.seq))
            values = [{"task": self.number, "seq": self.seq + i} for i in range(count)]
        records = []
        for value in values:
            records.append(SourceRecord(self.partition, {"saved": self.seq}, self.topic, value, key=self.partition))
            self.seq += 1
        self.handle.log_position = max(self.handle.log_position, self.seq - 1)
        if records:
            HANDLES.record(self.name, self.number, "poll", len(records))
        return records

    @hookimpl
    def produce_heartbeat_records(
        self, topic: str, offsets: Sequence[tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]]
    ) -> list[SourceRecord]:
        position = self.handle.log_position
        HANDLES.record(self.name, self.number, "heartbeat", position)
        value = {"heartbeat": self.partition["task.id"], "position": position}
        return [SourceRecord(self.partition, {"saved": position}, topic, value, key=self.partition)]

    @hookimpl
    def offsets_committed(self, offsets: Sequence[tuple[Any, Any]]) -> None:
        self.handle.committed.append([(dict(p) if p else p, o) for p, o in offsets])

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        HANDLES.record(self.name, self.number, "stop", connector_deleted)


class MonitorableSinkConnector(SinkConnector):
    """Keeps every record it is given in its handle; pre_commit, put failures and commit requests are steered
    through the handle."""

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        HANDLES.record(config["name"], None, "start")

    def task_class(self) -> type[SinkTask]:
        return MonitorableSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return _task_configs(self.config["name"], max_tasks, self.config)

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        HANDLES.record(self.config["name"], None, "stop", connector_deleted)


class MonitorableSinkTask(SinkTask):
    """The task of :class:`MonitorableSinkConnector`; records every call in its handle."""

    def start(self, config: Mapping[str, str]) -> None:
        self.name = config["connector.name"]
        self.number = int(config["task.id"])
        self.handle = HANDLES.task(self.name, self.number)
        HANDLES.record(self.name, self.number, "start")

    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records and self.handle.put_error is None:
            return
        if self.handle.put_error is not None:
            error, self.handle.put_error = self.handle.put_error, None
            HANDLES.record(self.name, self.number, "put_failed", len(records))
            raise error
        self.handle.records.extend(records)
        HANDLES.record(self.name, self.number, "put", [(r.topic, r.partition, r.offset) for r in records])
        if self.handle.request_commit_after_put:
            self.context.request_commit()

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        HANDLES.record(self.name, self.number, "flush", dict(current_offsets))

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int] | None:
        HANDLES.record(self.name, self.number, "pre_commit", dict(current_offsets))
        if self.handle.pre_commit is not None:
            return self.handle.pre_commit(current_offsets)
        return None

    def open(self, partitions: Collection[TopicPartition]) -> None:
        HANDLES.record(self.name, self.number, "open", sorted(partitions))

    def close(self, partitions: Collection[TopicPartition]) -> None:
        HANDLES.record(self.name, self.number, "close", sorted(partitions))

    @hookimpl
    def offsets_committed(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.handle.committed.append(dict(offsets))
        HANDLES.record(self.name, self.number, "committed", dict(offsets))

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        HANDLES.record(self.name, self.number, "stop", connector_deleted)


def json_values(messages: Sequence[Any]) -> list[Any]:
    """Decode the JSON values of broker messages (schemaless JSON)."""
    return [None if m.value is None else json.loads(m.value) for m in messages]
