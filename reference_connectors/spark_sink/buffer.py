"""What a task has been given and not yet written: records per topic partition, kept as columns, and the sizes the
flush policy looks at. A value without a schema is kept as JSON text, one with a schema as its Python value."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter
from typing import Any

from headwater.sdk import SinkRecord, TopicPartition


def value_bytes(value: Any) -> bytes | None:
    """A record value as JSON text: bytes as they are, strings encoded, anything else (what the JSON converter
    gives) serialized again; ``None`` stays ``None``."""
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return json.dumps(value, separators=(",", ":")).encode()


def key_bytes(keys: list[Any]) -> int:
    """The bytes the flush policy counts for ``keys``: the length of each ``bytes`` or ``str`` key, 8 for any other
    key, nothing for ``None``."""
    found = [key for key in keys if key is not None]
    if all(type(key) is bytes for key in found):
        return sum(map(len, found))
    return sum(len(key) if isinstance(key, bytes | str) else 8 for key in found)


_topic_partition = attrgetter("topic", "partition")
_key = attrgetter("key")
_value = attrgetter("value")
_value_schema = attrgetter("value_schema")
_offset = attrgetter("offset")
_timestamp = attrgetter("timestamp")

SAMPLE_EVERY = 32
"""One value with a schema in this many is measured for the flush policy's byte count."""


def value_size(value: Any) -> int:
    """About how many bytes a value with a schema holds (it is not serialized to be counted): the lengths of its
    strings and bytes, 8 for any other value, summed over structs, arrays and maps."""
    if value is None:
        return 0
    if isinstance(value, str | bytes | bytearray):
        return len(value)
    if isinstance(value, dict):
        return sum(value_size(k) + value_size(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(value_size(v) for v in value)
    return 8


@dataclass
class PartitionBuffer:
    """The buffered records of one topic partition, in offset order, as columns, and the records themselves (a
    record that does not fit is reported as it was given: the runtime recovers its original bytes from it)."""

    records: list[SinkRecord] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    """JSON text (``bytes``) of a record without a value schema; the value as given of one with a schema."""
    keys: list[Any] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    timestamps: list[int | None] = field(default_factory=list)
    typed: int = 0
    """How many of the records have a value schema."""
    typed_bytes: int = 0
    """About how many bytes their values hold (see :meth:`typed_size`)."""
    sampled: tuple[int, int] = (0, 0)
    """How many values with a schema were measured, and their bytes."""

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def last_offset(self) -> int:
        return self.offsets[-1]

    def typed_size(self, value: Any) -> int:
        """Count one more value with a schema, and return about how many bytes it holds: one value in
        :data:`SAMPLE_EVERY` is measured (:func:`value_size`), the others taken as their average (walking every value
        would cost as much as building its columns)."""
        self.typed += 1
        count, total = self.sampled
        if self.typed % SAMPLE_EVERY == 1 or count == 0:
            size = value_size(value)
            self.sampled = (count + 1, total + size)
            return size
        return total // count


class RecordBuffer:
    """Records per topic partition, with the count, the bytes of keys and values, and when the oldest arrived."""

    def __init__(self) -> None:
        self.partitions: dict[TopicPartition, PartitionBuffer] = {}
        self.records = 0
        self.bytes = 0
        self.oldest_ms: int | None = None
        """When the oldest buffered record was added (the task's clock)."""

    def add(self, records: Iterable[SinkRecord], now_ms: int) -> None:
        """Append ``records`` (a ``put`` batch: runs of one partition each, in offset order). Each run's fields are
        read a column at a time (``map`` over the run, no statement per record): this is the sink's one pass over
        every record while it reads."""
        added = size = 0
        for (topic, partition), run in groupby(records, _topic_partition):
            chunk = list(run)
            buffer = self.partitions.get(TopicPartition(topic, partition))
            if buffer is None:
                buffer = self.partitions[TopicPartition(topic, partition)] = PartitionBuffer()
            values = list(map(_value, chunk))
            schemas = list(map(_value_schema, chunk))
            if schemas.count(None) == len(schemas):
                if not all(type(value) is bytes for value in values):
                    values = list(map(value_bytes, values))
                size += sum(map(len, filter(None, values)))
            else:
                for i, (value, schema) in enumerate(zip(values, schemas, strict=True)):
                    if schema is None:
                        value = values[i] = value_bytes(value)
                        size += len(value) if value is not None else 0
                    else:
                        typed_size = buffer.typed_size(value)
                        buffer.typed_bytes += typed_size
                        size += typed_size
            keys = list(map(_key, chunk))
            size += key_bytes(keys)
            buffer.records += chunk
            buffer.values += values
            buffer.keys += keys
            buffer.offsets += map(_offset, chunk)
            buffer.timestamps += map(_timestamp, chunk)
            added += len(chunk)
        if added:
            self.records += added
            self.bytes += size
            if self.oldest_ms is None:
                self.oldest_ms = now_ms

    def take(self) -> dict[TopicPartition, PartitionBuffer]:
        """Everything buffered, leaving the buffer empty."""
        taken, self.partitions = self.partitions, {}
        self.records = self.bytes = 0
        self.oldest_ms = None
        return taken

    def drop(self, partitions: Collection[TopicPartition]) -> None:
        """Forget the records of ``partitions`` (revoked, or rewound)."""
        for tp in partitions:
            dropped = self.partitions.pop(tp, None)
            if dropped is not None:
                self.records -= len(dropped)
                self.bytes -= dropped.typed_bytes + sum(len(v) for v in dropped.values if type(v) is bytes)
                self.bytes -= key_bytes(dropped.keys)
        if not self.partitions:
            self.records = self.bytes = 0
            self.oldest_ms = None

    def __len__(self) -> int:
        return self.records

    def __repr__(self) -> str:
        parts = {str(tp): len(b) for tp, b in self.partitions.items()}
        return f"RecordBuffer(records={self.records}, bytes={self.bytes}, oldest_ms={self.oldest_ms}, {parts})"
