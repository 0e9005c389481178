"""What a sink task gets from its loop: its context (KIP-89's ``request_commit``, rewinds, pauses) and the
ErrantRecordReporter of KIP-610.

A reported record goes through the task's :class:`~headwater.runtime.error_handling.tolerance.ErrorHandler` at stage
``TASK_PUT`` with the bytes it arrived with: the loop hands tasks :class:`ConvertedRecord` objects that keep their
consumed message, and a record a task made itself is converted back with the task's converters, as Kafka Connect
does.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from concurrent.futures import Future
from typing import Any, Protocol

from headwater.runtime.converters import Converter, HeaderConverter
from headwater.runtime.error_handling.tolerance import ErrorHandler, Failure, Stage, class_name
from headwater.runtime.transforms.records import ConvertedRecord
from headwater.runtime.transport.base import Consumer, Message
from headwater.sdk.context import Clock, ErrantRecordReporter, SinkTaskContext
from headwater.sdk.errors import ConnectError, IllegalWorkerStateError
from headwater.sdk.metrics import PluginMetrics
from headwater.sdk.records import SinkRecord, TopicPartition
from headwater.sdk.task import Task


class SinkLoop(Protocol):
    """What the context and the reporter read of the sink task loop that owns them
    (:class:`~headwater.runtime.tasks.sink.WorkerSinkTask`)."""

    errant_failure: ConnectError | None

    @property
    def task(self) -> Task: ...
    @property
    def config(self) -> Mapping[str, str]: ...
    @property
    def parsed_config(self) -> Mapping[str, Any]: ...
    @property
    def plugin_metrics(self) -> PluginMetrics: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def errors(self) -> ErrorHandler: ...
    @property
    def consumer(self) -> Consumer: ...
    @property
    def key_converter(self) -> Converter: ...
    @property
    def value_converter(self) -> Converter: ...
    @property
    def header_converter(self) -> HeaderConverter: ...
    @property
    def all_paused(self) -> bool: ...


class WorkerErrantRecordReporter(ErrantRecordReporter):
    """Routes a task's reports to its error handler; thread-safe."""

    def __init__(self, owner: SinkLoop) -> None:
        self._owner = owner

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        owner = self._owner
        failure = Failure(Stage.TASK_PUT, class_name(owner.task), error, self.original(record))
        try:
            return owner.errors.failed(failure)
        except ConnectError as intolerable:
            owner.errant_failure = intolerable  # the loop fails the task even if the task swallows this
            raise

    def original(self, record: SinkRecord) -> Message:
        """The consumed message ``record`` came from: kept by the loop, else made again by the converters."""
        if isinstance(record, ConvertedRecord) and record.original is not None:
            return record.original
        owner = self._owner
        topic = record.topic
        header = owner.header_converter.from_connect
        return Message(
            topic,
            record.partition,
            record.offset,
            owner.key_converter.from_connect(topic, None, record.key),
            owner.value_converter.from_connect(topic, None, record.value),
            record.timestamp,
            [(key, header(topic, key, value)) for key, value in record.headers or ()],
        )


class WorkerSinkTaskContext(SinkTaskContext):
    errant_record_reporter: WorkerErrantRecordReporter

    def __init__(self, owner: SinkLoop) -> None:
        self._owner = owner
        self.config = owner.config
        self.parsed_config = owner.parsed_config
        self.metrics = owner.plugin_metrics
        self.clock = owner.clock
        self.errant_record_reporter = WorkerErrantRecordReporter(owner)
        self.commit_requested = False
        self.rewinds: dict[TopicPartition, int] = {}
        self.timeout_ms: int | None = None
        self.paused_partitions: set[TopicPartition] = set()

    def request_commit(self) -> None:
        self.commit_requested = True

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.rewinds.update(offsets)

    def timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms

    def assignment(self) -> frozenset[TopicPartition]:
        return self._owner.consumer.assignment()

    def pause(self, *partitions: TopicPartition) -> None:
        self._check_assigned("pause", partitions)
        self.paused_partitions.update(partitions)
        if not self._owner.all_paused:
            self._owner.consumer.pause(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self._check_assigned("resume", partitions)
        self.paused_partitions.difference_update(partitions)
        if not self._owner.all_paused:
            self._owner.consumer.resume(partitions)

    def paused(self) -> frozenset[TopicPartition]:
        return frozenset(self.paused_partitions)

    def _check_assigned(self, action: str, partitions: Collection[TopicPartition]) -> None:
        unassigned = set(partitions) - self.assignment()
        if unassigned:
            names = ", ".join(sorted(map(str, unassigned)))
            raise IllegalWorkerStateError(f"cannot {action} partitions not assigned to this task: {names}")
