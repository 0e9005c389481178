"""Which source offsets are committable: per source partition, the contiguous prefix of acknowledged records.

Like Kafka Connect's ``SubmittedRecords``: one FIFO per source partition; an unacknowledged record blocks later
records of its own partition only. Records are submitted before they are sent; acknowledgements arrive through
the producer's delivery callbacks on the task's thread.
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
        report: Callable[[SubmittedRecord | SubmittedBatch, object], None] | None = None,
    ) -> None:
        self.task = task
        self.tolerate = tolerate
        self.explain = explain
        self.report = report
        """Told of each tolerated failure (the task's error handler logs and counts it)."""
        self.acked = 0
        self.active_topics: set[str] = set()
        self.error: ConnectError | None = None

    def failed(self, record: SubmittedRecord | SubmittedBatch, error: object, report: object = None) -> bool:
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


class SubmittedRecord:
    """One record handed to the producer, and the producer's :class:`~headwater.runtime.transport.Acknowledgement`
    for it: ``acked`` turns true when the broker acknowledged it (or it was dropped under ``errors.tolerance=all``)."""

    __slots__ = ("acked", "acks", "key", "offset", "topic")

    def __init__(self, key: PartitionKey, offset: SourceOffset | None, topic: str, acks: Acks) -> None:
        self.key = key
        self.offset = offset
        self.topic = topic
        self.acks = acks
        self.acked = False

    def __call__(self, error: object, report: object, /) -> None:
        acks = self.acks
        if error is None:
            self.acked = True
            acks.acked += 1
            if self.topic not in acks.active_topics:
                acks.active_topics.add(self.topic)
        elif acks.failed(self, error, report):
            self.acked = True


class SubmittedBatch:
    """A :class:`~headwater.sdk.SourceBatch` handed to the producer as a whole: its :meth:`ack` is every record's
    delivery callback, and it counts as acknowledged (so its last offset committable) once all of them were. The
    task's acknowledged count and active topics are updated when the whole batch is, to keep the per-record
    callback to a decrement."""

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


Submitted = SubmittedRecord | SubmittedBatch


class SubmittedRecords:
    def __init__(self, acks: Acks) -> None:
        self.acks = acks
        self._pending: dict[PartitionKey, deque[Submitted]] = {}
        self._partitions: dict[PartitionKey, SourcePartition | None] = {}
        self._last_partition: Any = object()
        self._last_key: PartitionKey = None
        self._last_queue: deque[Submitted] = deque()
        self.latest: dict[PartitionKey, SourceOffset | None] = {}
        """The newest offset submitted per source partition, acknowledged or not."""

    def submit(self, partition: SourcePartition | None, offset: SourceOffset | None, topic: str) -> SubmittedRecord:
        """Track one record for ``topic``, before it is sent."""
        queue = self._last_queue if partition is self._last_partition else self._queue(partition)
        record = SubmittedRecord(self._last_key, offset, topic, self.acks)
        queue.append(record)
        self.latest[self._last_key] = offset
        return record

    def submit_all(self, records: Sequence[SourceRecord]) -> list[SubmittedRecord]:
        """Track a batch of records before any of it is sent: :meth:`submit` for each, in one pass."""
        acks, latest = self.acks, self.latest
        out: list[SubmittedRecord] = []
        append = out.append
        for record in records:
            partition = record.source_partition
            queue = self._last_queue if partition is self._last_partition else self._queue(partition)
            key, offset = self._last_key, record.source_offset
            entry = SubmittedRecord(key, offset, record.topic, acks)
            queue.append(entry)
            latest[key] = offset
            append(entry)
        return out

    def submit_batch(self, batch: SourceBatch) -> SubmittedBatch:
        """Track a whole non-empty batch, before any of it is sent."""
        if not len(batch):
            raise ValueError("an empty SourceBatch has no offset to track")
        partition = batch.source_partition
        queue = self._last_queue if partition is self._last_partition else self._queue(partition)
        offset = batch.offsets[-1]
        entry = SubmittedBatch(self._last_key, offset, batch.topic, len(batch), self.acks)
        queue.append(entry)
        self.latest[self._last_key] = offset
        return entry

    def _queue(self, partition: SourcePartition | None) -> deque[Submitted]:
        """The queue of ``partition``, made the last one used."""
        key = partition_key(partition)
        queue = self._pending.get(key)
        if queue is None:
            queue = self._pending[key] = deque()
            self._partitions[key] = partition
        self._last_partition, self._last_key, self._last_queue = partition, key, queue
        return queue

    def committable(self) -> dict[PartitionKey, tuple[SourcePartition | None, SourceOffset | None]]:
        """Pop the acknowledged head of every partition's queue; return the last popped offset per partition."""
        found: dict[PartitionKey, tuple[SourcePartition | None, SourceOffset | None]] = {}
        for key, queue in self._pending.items():
            last: Submitted | None = None
            while queue and queue[0].acked:
                last = queue.popleft()
            if last is not None:
                found[key] = (self._partitions[key], last.offset)
        return found

    def in_flight(self) -> int:
        """Records submitted and not yet acknowledged. Safe to call from another thread than the task's (the
        metrics collector does): it walks copies of the queues, each taken in one step."""
        return sum(
            (entry.remaining if isinstance(entry, SubmittedBatch) else 1)
            for queue in list(self._pending.values())
            for entry in list(queue)
            if not entry.acked
        )

    def partition(self, key: PartitionKey) -> SourcePartition | None:
        return self._partitions[key]

    def __repr__(self) -> str:
        sizes = {str(self._partitions[k]): len(q) for k, q in self._pending.items() if q}
        return f"SubmittedRecords(pending={sizes})"
