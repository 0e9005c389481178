"""A tap on one connector running in a simulated worker: every record its tasks hand over or are given, every
``pre_commit`` answer and every commit, in order, so that tests check the offset guarantees on what really happened.

The tap is a cross-cutting plugin (its hooks wrap the connector's own) that also wraps each task instance's
``poll`` or ``put`` as the task starts. It records; it never changes a result, except for the ``put`` failures a
test asks for with :meth:`ConnectorTap.fail_next_puts`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from headwater.harness.ack_order import HeartbeatsFirst
from headwater.harness.simulated import SimulatedWorker
from headwater.runtime.tasks.exactly_once_source import ExactlyOnceWorkerSourceTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.hookspecs import hookimpl
from headwater.sdk.records import SinkRecord, SourceOffset, SourcePartition, SourceRecord, TopicPartition
from headwater.sdk.task import SinkTask, SourceTask


def canonical(value: Any) -> str:
    """A source partition or offset as sorted, compact JSON: equal maps give equal strings whatever their order."""
    return json.dumps(None if value is None else dict(value), sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Sent:
    """A record a source task handed to the runtime (from ``poll``, or from the heartbeat hook)."""

    task: str
    incarnation: int
    """1 for the task's first instance, 2 after its first restart, and so on."""
    at_ms: int
    heartbeat: bool
    partition: SourcePartition | None
    offset: SourceOffset | None
    topic: str
    value: Any

    @cached_property
    def partition_key(self) -> str:
        """The source partition as canonical JSON, worked out once: the checks group what was sent by it after
        every commit (the partition and offset are the tap's own copies, so they never change)."""
        return canonical(self.partition)

    @cached_property
    def offset_key(self) -> str:
        """The source offset as canonical JSON, worked out once."""
        return canonical(self.offset)

    def __str__(self) -> str:
        kind = "heartbeat" if self.heartbeat else "record"
        return f"{kind} {canonical(self.offset)} -> {self.topic} {self.value!r} ({self.task}#{self.incarnation})"


@dataclass(frozen=True)
class PreCommit:
    """One ``pre_commit`` call of a sink task: what was consumed and what the task said is safe."""

    task: str
    at_ms: int
    current: dict[TopicPartition, int]
    returned: dict[TopicPartition, int] | None
    error: str | None = None


@dataclass(frozen=True)
class Commit:
    """A successful offset commit: source ``(partition, offset)`` pairs, or sink next-offsets per partition."""

    task: str
    at_ms: int
    source: tuple[tuple[SourcePartition | None, SourceOffset | None], ...] = ()
    sink: dict[TopicPartition, int] = field(default_factory=dict)
    pre_commit: PreCommit | None = None
    """For a sink, the ``pre_commit`` call this commit followed."""
    seen: int = 0
    """How many records the tap had seen handed over when this commit happened."""


class ConnectorTap:
    """Records what connector ``connector`` does on a :class:`SimulatedWorker`: give the worker :attr:`hooks` as a
    plugin and call :meth:`attach` (again after replacing the worker)."""

    def __init__(self, connector: str) -> None:
        self.connector = connector
        self.worker: SimulatedWorker | None = None
        self.sent: list[Sent] = []
        self.puts: list[tuple[str, int, list[SinkRecord]]] = []
        """Successful ``put`` calls with records: (task, incarnation, records)."""
        self.pre_commits: list[PreCommit] = []
        self.commits: list[Commit] = []
        self.stops: list[tuple[str, bool]] = []
        self.stop_errors: list[tuple[str, str]] = []
        self.put_failures = 0
        self.failing: set[str] = set()
        """Tasks whose next ``poll`` or ``put`` raises :class:`ConnectError`, failing the task (see
        :meth:`fail_tasks`)."""
        self.origin_ms = 0
        self.on_commit: list[Callable[[Commit], None]] = []
        """Called with every commit as it happens, before the task loop goes on (a check of what the connector's
        external system holds at that moment reads it here)."""
        self.hooks = TapHooks(self)
        """The plugin to give the worker (``plugins=[tap.hooks]``)."""
        self.freeze_on_commit = False
        """When set, a source task whose offsets were just committed hands nothing more over (its ``poll`` and
        heartbeat hook are not called) until it is restarted: the process died right after the commit."""
        self.frozen: set[tuple[str, int]] = set()
        self.heartbeats_first: str | None = None
        """The heartbeat topic, when the source tasks' data acknowledgements reach them a ``poll`` after the heartbeat
        topic's (:class:`~headwater.harness.ack_order.HeartbeatsFirst`, set on each task as it starts)."""
        self.mutated: list[tuple[Sent, Sent]] = []
        """Offsets a task changed after handing them over: (the record as handed over, the later one that showed
        the same offset map with another value)."""
        self._offset_maps: dict[int, tuple[object, Sent]] = {}
        self._labels: dict[int, tuple[object, str, int]] = {}
        self._incarnations: dict[str, int] = {}

    # ---- wiring ----------------------------------------------------------------------------------------------

    def attach(self, worker: SimulatedWorker) -> None:
        """Follow ``worker`` from now on: its tasks are wrapped at the start of each pass."""
        if self.worker is None:
            self.origin_ms = worker.clock.now_ms()
        self.worker = worker
        worker.before_step.append(self.wrap_tasks)

    def wrap_tasks(self) -> None:
        """Wrap ``poll``/``put`` of every task instance of the connector not seen yet."""
        assert self.worker is not None
        for task_id, worker_task in list(self.worker.worker.tasks.items()):
            if task_id.connector == self.connector and id(worker_task.task) not in self._labels:
                self._wrap(worker_task.task, str(task_id))
                topic = self.heartbeats_first
                if (
                    topic is not None
                    and isinstance(worker_task, WorkerSourceTask)
                    and not isinstance(worker_task, ExactlyOnceWorkerSourceTask)
                ):
                    worker_task.producer = HeartbeatsFirst(worker_task.producer, topic)

    def _wrap(self, task: object, label: str) -> None:
        incarnation = self._incarnations[label] = self._incarnations.get(label, 0) + 1
        self._labels[id(task)] = (task, label, incarnation)
        if isinstance(task, SourceTask):
            poll = task.poll

            def tapped_poll() -> Sequence[SourceRecord] | None:
                if (label, incarnation) in self.frozen:
                    return None
                self.raise_if_failing(label)
                records = poll()
                self.record_sent(label, incarnation, records or (), heartbeat=False)
                return records

            task.poll = tapped_poll  # type: ignore[method-assign]
        elif isinstance(task, SinkTask):
            put = task.put

            def tapped_put(records: Sequence[SinkRecord]) -> None:
                self.raise_if_failing(label)
                if self.put_failures > 0 and records:
                    self.put_failures -= 1
                    raise RetriableError("injected put failure (ConnectorTap.fail_next_puts)")
                put(records)
                if records:
                    self.puts.append((label, incarnation, list(records)))

            task.put = tapped_put  # type: ignore[method-assign]

    def label_of(self, instance: object) -> str | None:
        """The task id (``c-0``) or connector name of an instance of this connector; ``None`` for other ones."""
        if id(instance) not in self._labels and self.worker is not None:
            self.wrap_tasks()
            found = self.worker.worker.connectors.get(self.connector)
            if found is not None and found.instance is instance:
                self._labels[id(instance)] = (instance, self.connector, 0)
        known = self._labels.get(id(instance))
        return known[1] if known is not None and known[0] is instance else None

    def incarnation_of(self, task: object) -> int:
        """Which start of its task id ``task`` is (1 for the first); 0 when the tap has not seen it."""
        known = self._labels.get(id(task))
        return known[2] if known is not None and known[0] is task else 0

    def now_ms(self) -> int:
        """Virtual milliseconds since the tap was first attached (the times in its records)."""
        return self.worker.clock.now_ms() - self.origin_ms if self.worker is not None else 0

    def record_sent(self, label: str, incarnation: int, records: Sequence[SourceRecord], heartbeat: bool) -> None:
        """Note records handed over; partitions and offsets are copied as they are now (a task that mutates an
        offset map it handed over changes what the runtime commits, not what the tap saw)."""
        now = self.now_ms()
        for r in records:
            partition, offset = copy.deepcopy(r.source_partition), copy.deepcopy(r.source_offset)
            sent = Sent(label, incarnation, now, heartbeat, partition, offset, r.topic, r.value)
            self.sent.append(sent)
            if r.source_offset is not None:
                known = self._offset_maps.get(id(r.source_offset))
                if known is not None and known[0] is r.source_offset and known[1].offset != offset:
                    self.mutated.append((known[1], sent))
                self._offset_maps[id(r.source_offset)] = (r.source_offset, sent)

    def record_commit(self, commit: Commit) -> None:
        self.commits.append(commit)
        if self.freeze_on_commit and commit.source:
            self.frozen.add((commit.task, self._incarnations.get(commit.task, 0)))
        for call in self.on_commit:
            call(commit)

    def fail_tasks(self) -> None:
        """Make the next ``poll`` or ``put`` of every task of the connector raise :class:`ConnectError`: the
        tasks fail, as with a bug or an outage the task cannot retry."""
        assert self.worker is not None, "the tap is not attached to a worker"
        self.failing = {str(task_id) for task_id in self.worker.worker.task_ids(self.connector)}

    def raise_if_failing(self, label: str) -> None:
        if label in self.failing:
            self.failing.discard(label)
            raise ConnectError(f"injected task failure (ConnectorTap.fail_tasks) in {label}")

    def fail_next_puts(self, n: int) -> None:
        """Make the next ``n`` non-empty ``put`` calls raise :class:`RetriableError` before the task sees them."""
        self.put_failures = n

    # ---- reading ---------------------------------------------------------------------------------------------

    def sent_by_partition(self, upto: int | None = None) -> dict[str, list[Sent]]:
        """The records handed over per source partition (canonical JSON), in order; the first ``upto`` only."""
        found: dict[str, list[Sent]] = {}
        for sent in self.sent[:upto]:
            found.setdefault(sent.partition_key, []).append(sent)
        return found

    def committed_source_offsets(self) -> dict[str, SourceOffset | None]:
        """The last committed offset per source partition (canonical JSON), as the tap saw the commits."""
        return {canonical(p): o for commit in self.commits for p, o in commit.source}

    def put_records(self) -> list[SinkRecord]:
        return [record for _task, _incarnation, records in self.puts for record in records]

    def __repr__(self) -> str:
        return (
            f"ConnectorTap({self.connector!r}, sent={len(self.sent)}, puts={len(self.puts)}, "
            f"pre_commits={len(self.pre_commits)}, commits={len(self.commits)}, stops={self.stops}, "
            f"stop_errors={self.stop_errors})"
        )


class TapHooks:
    """The tap's hook wrappers, as a plugin of few attributes (pluggy inspects every attribute at registration)."""

    __slots__ = ("tap",)

    def __init__(self, tap: ConnectorTap) -> None:
        self.tap = tap

    @hookimpl(wrapper=True)
    def produce_heartbeat_records(self, task: object) -> Generator[None, Any, Any]:
        tap = self.tap
        records = yield
        label = tap.label_of(task)
        if label is not None and (label, tap.incarnation_of(task)) in tap.frozen:
            return []
        if label is not None and records:
            tap.record_sent(label, tap.incarnation_of(task), list(records), heartbeat=True)
        return records

    @hookimpl(wrapper=True)
    def pre_commit(self, task: object, current_offsets: Mapping[TopicPartition, int]) -> Generator[None, Any, Any]:
        tap = self.tap
        label = tap.label_of(task)
        try:
            returned = yield
        except Exception as error:
            if label is not None:
                tap.pre_commits.append(PreCommit(label, tap.now_ms(), dict(current_offsets), None, repr(error)))
            raise
        if label is not None:
            found = None if returned is None else dict(returned)
            tap.pre_commits.append(PreCommit(label, tap.now_ms(), dict(current_offsets), found))
        return returned

    @hookimpl(wrapper=True)
    def offsets_committed(self, task: object, offsets: Any) -> Generator[None, Any, Any]:
        tap = self.tap
        label = tap.label_of(task)
        if label is not None and offsets:
            if isinstance(offsets, Mapping):
                asked = next((p for p in reversed(tap.pre_commits) if p.task == label), None)
                tap.record_commit(Commit(label, tap.now_ms(), sink=dict(offsets), pre_commit=asked, seen=len(tap.sent)))
            else:
                pairs = tuple((copy.deepcopy(p), copy.deepcopy(o)) for p, o in offsets)
                tap.record_commit(Commit(label, tap.now_ms(), source=pairs, seen=len(tap.sent)))
        return (yield)

    @hookimpl(wrapper=True)
    def stop(self, instance: object, connector_deleted: bool) -> Generator[None, Any, Any]:
        tap = self.tap
        label = tap.label_of(instance)
        if label is not None:
            tap.stops.append((label, connector_deleted))
        try:
            return (yield)
        except Exception as error:
            if label is not None:
                tap.stop_errors.append((label, repr(error)))
            raise
