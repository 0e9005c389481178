"""Which source offsets are committable: per source partition, the contiguous prefix of acknowledged records.

Like Kafka Connect's ``SubmittedRecords``: one FIFO per source partition; an unacknowledged record blocks later
records of its own partition only. Records are submitted before they are sent; acknowledgements arrive through
the producer's delivery callbacks on the task's thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from typing import Any

from headwater.sdk.records import SourceOffset, SourcePartition

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


class SubmittedRecord:
    """One record handed to the producer; ``acked`` turns true when the broker acknowledged it (or it was dropped
    under ``errors.tolerance=all``)."""

    __slots__ = ("acked", "key", "offset")

    def __init__(self, key: PartitionKey, offset: SourceOffset | None) -> None:
        self.key = key
        self.offset = offset
        self.acked = False


class SubmittedRecords:
    def __init__(self) -> None:
        self._pending: dict[PartitionKey, deque[SubmittedRecord]] = {}
        self._partitions: dict[PartitionKey, SourcePartition | None] = {}
        self._last_partition: Any = object()
        self._last_key: PartitionKey = None
        self.latest: dict[PartitionKey, SourceOffset | None] = {}
        """The newest offset submitted per source partition, acknowledged or not."""

    def submit(self, partition: SourcePartition | None, offset: SourceOffset | None) -> SubmittedRecord:
        if partition is self._last_partition:
            key = self._last_key
        else:
            key = partition_key(partition)
            self._last_partition, self._last_key = partition, key
        queue = self._pending.get(key)
        if queue is None:
            queue = self._pending[key] = deque()
            self._partitions[key] = partition
        record = SubmittedRecord(key, offset)
        queue.append(record)
        self.latest[key] = offset
        return record

    def drop(self, record: SubmittedRecord) -> None:
        """Forget a record that was submitted but never sent (a synchronous send failure that will be retried)."""
        queue = self._pending[record.key]
        if queue and queue[-1] is record:
            queue.pop()
        else:
            queue.remove(record)

    def committable(self) -> dict[PartitionKey, tuple[SourcePartition | None, SourceOffset | None]]:
        """Pop the acknowledged head of every partition's queue; return the last popped offset per partition."""
        found: dict[PartitionKey, tuple[SourcePartition | None, SourceOffset | None]] = {}
        for key, queue in self._pending.items():
            last: SubmittedRecord | None = None
            while queue and queue[0].acked:
                last = queue.popleft()
            if last is not None:
                found[key] = (self._partitions[key], last.offset)
        return found

    def in_flight(self) -> int:
        """Records submitted and not yet acknowledged."""
        return sum(1 for queue in self._pending.values() for record in queue if not record.acked)

    def partition(self, key: PartitionKey) -> SourcePartition | None:
        return self._partitions[key]

    def __repr__(self) -> str:
        sizes = {str(self._partitions[k]): len(q) for k, q in self._pending.items() if q}
        return f"SubmittedRecords(pending={sizes})"
