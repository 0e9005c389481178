"""Which source offsets are committable: per source partition, the contiguous prefix of acknowledged records.

Like Kafka Connect's ``SubmittedRecords``: one FIFO per source partition; an unacknowledged entry blocks later
entries of its own partition only. Records are tracked before their acknowledgements can arrive, which come through
the producer's delivery callbacks on the task's thread.

An entry is a *run*: consecutive records of one source partition sent to one topic (a whole
:class:`~headwater.sdk.SourceBatch` is one). Its offset, its last record's, becomes committable once every record
of it was acknowledged, so a run costs one object and one callback for all its records, and the per-record work of
an acknowledgement is a decrement. A commit therefore never moves past a record still in flight, as in Kafka
Connect, though it may stop at the start of a run that is partly acknowledged where Kafka Connect would commit part
of it: never ahead, at most a poll's batch behind.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from headwater.sdk.errors import ConnectError
from headwater.sdk.records import SourceBatch, SourceOffset, SourcePartition, SourceRecord

log = logging.getLogger(__name__)

PartitionKey = Hashable
"""A hashable identity of a source partition map: equal maps, whatever their key order, give equal keys."""


def partition_key(partition: SourcePartition | None) -> PartitionKey:
    """The identity of a source partition; raises ``TypeError`` naming the partition when a value is not hashable
    (only primitives are allowed)."""
    if partition is None:
        return None
    try:
        return frozenset(partition.items())
    except (TypeError, AttributeError):
        raise TypeError(f"source partition must be a mapping of strings to primitives, got {partition!r}") from None


_NO_PARTITION = object()
"""No run is open: unlike every source partition, ``None`` included."""


def newest_offsets(records: Sequence[SourceRecord]) -> list[tuple[SourcePartition | None, SourceOffset | None]]:
    """The newest offset of each source partition among ``records`` (a batch in hand-over order), before any of
    them is sent: what a transaction that holds exactly this batch commits."""
    if isinstance(records, SourceBatch):
        return [(records.source_partition, records.offsets[-1])] if len(records) else []
    found: dict[PartitionKey, tuple[SourcePartition | None, SourceOffset | None]] = {}
    last: Any = _NO_PARTITION
    key: PartitionKey = None
    for record in records:
        partition = record.source_partition
        if partition is not last:
            key, last = partition_key(partition), partition
        found[key] = (partition, record.source_offset)
    return list(found.values())


class Acks:
    """What the delivery callbacks of one task's records report to: how many were acknowledged, the topics they
    were stored in (KIP-558's source rule: after the acknowledgement), and the first send failure that was not
    tolerated (``errors.tolerance=all`` tolerates them). ``explain`` is the producer's ``delivery_error``: it
    turns what a failed delivery's callback was given into the error that says why."""

    __slots__ = ("acked", "active_topics", "error", "explain", "report", "task", "tolerate")

    def __init__(
        self,
        task: str,
        tolerate: bool,
        explain: Callable[[object, object], object] | None = None,
        report: Callable[[SubmittedBatch, object], None] | None = None,
    ) -> None:
        self.task = task
        self.tolerate = tolerate
        self.explain = explain
        self.report = report
        """Told of each tolerated failure (the task's error handler logs and counts it)."""
        self.acked = 0
        self.active_topics: set[str] = set()
        self.error: ConnectError | None = None

    def failed(self, record: SubmittedBatch, error: object, report: object = None) -> bool:
        """A record's send failed; return whether that is tolerated (the record then counts as acknowledged)."""
        reason = error if self.explain is None else self.explain(error, report)
        if self.tolerate:
            if self.report is None:
                log.warning("task %s: tolerating a failed send: %s", self.task, reason)
            else:
                self.report(record, reason)
            return True
        if self.error is None:
            self.error = ConnectError(f"task {self.task}: the broker failed to store a record: {reason}")
        return False


class SubmittedBatch:
    """A run of records tracked as one entry (see the module docstring): its :meth:`ack` is every record's delivery
    callback, and it counts as acknowledged (so its last offset committable) once all of them were. The task's
    acknowledged count and active topics are updated when the whole run is, to keep the per-record callback to a
    decrement.

    A run is made empty by :meth:`SubmittedRecords.open_run`, its records are sent with :meth:`ack` as their
    callback, and :meth:`SubmittedRecords.close_run` counts them in and queues it; an acknowledgement that comes
    before that (a producer serving callbacks while its queue is full) only takes :attr:`remaining` below zero."""

    __slots__ = ("acks", "dropped", "key", "offset", "remaining", "size", "topic")

    def __init__(self, key: PartitionKey, offset: SourceOffset | None, topic: str, size: int, acks: Acks) -> None:
        self.key = key
        self.offset = offset
        self.topic = topic
        self.size = size
        self.remaining = size
        self.dropped = 0
        self.acks = acks

    @property
    def acked(self) -> bool:
        return self.remaining <= 0

    def add(self, records: int, dropped: int, offset: SourceOffset | None) -> None:
        """``records`` more sent or skipped, ``dropped`` of them skipped (never to be stored); the last one's
        offset is ``offset``."""
        self.offset = offset
        self.size += records
        self.dropped += dropped
        self.remaining += records - dropped
        if self.remaining <= 0:
            self._complete()

    def ack(self, error: object, report: object, /) -> None:
        """One record's delivery report (an :class:`~headwater.runtime.transport.Acknowledgement`)."""
        if error is None:
            self.remaining -= 1
            if not self.remaining:
                self._complete()
        elif self.acks.failed(self, error, report):
            self.skip(1)

    def skip(self, records: int) -> None:
        """``records`` of the batch will never be stored (dropped under ``errors.tolerance=all``)."""
        self.dropped += records
        self.remaining -= records
        if not self.remaining:
            self._complete()

    def _complete(self) -> None:
        stored = self.size - self.dropped
        acks = self.acks
        acks.acked += stored
        if stored and self.topic not in acks.active_topics:
            acks.active_topics.add(self.topic)


class SubmittedRecords:
    def __init__(self, acks: Acks) -> None:
        self.acks = acks
        self._pending: dict[PartitionKey, deque[SubmittedBatch]] = {}
        self._partitions: dict[PartitionKey, SourcePartition | None] = {}
        self._last_partition: Any = _NO_PARTITION
        self._last_key: PartitionKey = None
        self.latest: dict[PartitionKey, SourceOffset | None] = {}
        """The newest offset submitted per source partition, acknowledged or not."""

    def open_run(self, partition: SourcePartition | None, topic: str) -> SubmittedBatch:
        """An empty run of ``partition``'s records to ``topic``, to be sent with its :meth:`~SubmittedBatch.ack` as
        their callback and then given to :meth:`close_run`."""
        if partition is not self._last_partition:
            self._use(partition)
        return SubmittedBatch(self._last_key, None, topic, 0, self.acks)

    def close_run(self, run: SubmittedBatch, records: int, dropped: int, offset: SourceOffset | None) -> None:
        """Count ``records`` into ``run`` (``dropped`` of them skipped, the last with ``offset``) and queue it
        behind the earlier entries of its partition; a run of no records is forgotten."""
        if not records:
            return
        run.add(records, dropped, offset)
        self._pending[run.key].append(run)
        self.latest[run.key] = offset

    def submit(self, partition: SourcePartition | None, offset: SourceOffset | None, topic: str) -> SubmittedBatch:
        """Track one record for ``topic`` as a run of its own, before it is sent."""
        run = self.open_run(partition, topic)
        self.close_run(run, 1, 0, offset)
        return run

    def submit_batch(self, batch: SourceBatch) -> SubmittedBatch:
        """Track a whole non-empty batch, before any of it is sent."""
        if not len(batch):
            raise ValueError("an empty SourceBatch has no offset to track")
        run = self.open_run(batch.source_partition, batch.topic)
        self.close_run(run, len(batch), 0, batch.offsets[-1])
        return run

    def _use(self, partition: SourcePartition | None) -> None:
        """Make ``partition`` the last one used (its key computed once for the runs that follow), with a queue."""
        key = partition_key(partition)
        if key not in self._pending:
            self._pending[key] = deque()
            self._partitions[key] = partition
        self._last_partition, self._last_key = partition, key

    def committable(self) -> dict[PartitionKey, tuple[SourcePartition | None, SourceOffset | None]]:
        """Pop the acknowledged head of every partition's queue; return the last popped offset per partition."""
        found: dict[PartitionKey, tuple[SourcePartition | None, SourceOffset | None]] = {}
        for key, queue in self._pending.items():
            last: SubmittedBatch | None = None
            while queue and queue[0].acked:
                last = queue.popleft()
            if last is not None:
                found[key] = (self._partitions[key], last.offset)
        return found

    def in_flight(self) -> int:
        """Records submitted and not yet acknowledged. Safe to call from another thread than the task's (the
        metrics collector does): it walks copies of the queues, each taken in one step."""
        queues = list(self._pending.values())
        return sum(entry.remaining for queue in queues for entry in list(queue) if not entry.acked)

    def partition(self, key: PartitionKey) -> SourcePartition | None:
        return self._partitions[key]

    def __repr__(self) -> str:
        sizes = {str(self._partitions[k]): len(q) for k, q in self._pending.items() if q}
        return f"SubmittedRecords(pending={sizes})"


class Runs:
    """The runs of one batch's send by a source task's loop (see the module docstring): the open one, records
    ``begin`` to ``end`` of the batch so far, ``dropped`` of them skipped. Kept apart from the loop's locals so that
    every way out of the loop closes it."""

    __slots__ = ("begin", "dropped", "end", "one_each", "partition", "records", "run", "submitted", "topic")

    def __init__(self, submitted: SubmittedRecords, records: Sequence[SourceRecord], one_each: bool) -> None:
        self.submitted = submitted
        self.records = records
        self.one_each = one_each
        """Whether each record is a run of its own."""
        self.run: Any = None
        self.partition: Any = _NO_PARTITION
        self.topic: str | None = None
        self.begin = self.end = self.dropped = 0

    def open(self, index: int, partition: SourcePartition | None, topic: str) -> SubmittedBatch:
        """Close the open run and open one of ``partition``'s records to ``topic``, from record ``index`` on."""
        self.close()
        self.run = run = self.submitted.open_run(partition, topic)
        self.partition, self.topic = partition, topic
        self.begin = self.end = index
        self.dropped = 0
        return run

    def skip(self, index: int, record: SourceRecord) -> None:
        """Record ``index`` will never be stored; its offset is committed with its run's."""
        partition = record.source_partition
        if self.run is None or self.one_each or (partition is not self.partition and partition != self.partition):
            self.open(index, partition, record.topic)
        self.dropped += 1
        self.end = index + 1

    def close(self) -> None:
        run, self.run = self.run, None
        if run is not None and self.end > self.begin:
            offset = self.records[self.end - 1].source_offset
            self.submitted.close_run(run, self.end - self.begin, self.dropped, offset)
