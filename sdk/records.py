"""Records and offsets: what flows between a connector and the runtime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, overload

from headwater.sdk.schemas import AvroSchema, Schema

SourcePartition = Mapping[str, Any]
"""Where a source record comes from (a table, a file, a source topic-partition). Keys are strings,
values are primitives, like Kafka Connect's source partition maps."""

SourceOffset = Mapping[str, Any]
"""How far a source partition has been read. Same shape rules as :data:`SourcePartition`."""

Header = tuple[str, Any]
"""One record header: its key and its value (bytes, str, or a JSON-serializable value)."""


class TopicPartition(NamedTuple):
    """A Kafka topic and one of its partitions."""

    topic: str
    """The topic's name."""
    partition: int
    """The partition's number, from 0."""

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(slots=True)
class SourceRecord:
    """A record a source task hands to the runtime.

    ``source_partition`` and ``source_offset`` say where the record was read from; the runtime commits the
    offset once the broker has acknowledged this record and every earlier record of the same source
    partition. A ``None`` offset deletes the stored offset of that partition when committed.
    ``partition`` left as ``None`` lets the producer's partitioner choose.
    """

    source_partition: SourcePartition | None
    """Where the record was read from: a table, a file, a source topic-partition."""
    source_offset: SourceOffset | None
    """How far ``source_partition`` has been read once this record is delivered: the offset the runtime commits
    for it, and the one a restarted task reads back from its context's ``offset_storage_reader``."""
    topic: str
    """The Kafka topic the record is written to."""
    value: Any
    """The record's value, turned into bytes by the worker's ``value.converter``."""
    key: Any = None
    """The record's key, turned into bytes by ``key.converter``; ``None`` for none."""
    partition: int | None = None
    """The topic's partition; ``None`` lets the producer's partitioner choose (by key)."""
    timestamp: int | None = None
    """Milliseconds since the epoch; ``None`` lets the producer stamp the record when it sends it."""
    headers: Sequence[Header] = field(default_factory=tuple)
    """``(key, value)`` pairs; each value is turned into bytes by ``header.converter``."""
    key_schema: Schema | AvroSchema | None = None
    """The key's schema (:mod:`headwater.sdk.schemas`: a Kafka Connect schema, or an Avro schema the author has)
    for the converters that write one (JSON with ``schemas.enable``, Avro); ``None`` lets the JSON converter
    infer one from the key, and the Avro converter refuse the record."""
    value_schema: Schema | AvroSchema | None = None
    """The value's schema, as ``key_schema`` is the key's."""


class SourceBatch(Sequence[SourceRecord]):
    """Many records of one source partition to one topic, handed over as columns: what a high-volume source
    returns from ``poll`` instead of a list of :class:`SourceRecord`, so that no object is made per record.

    ``offsets[i]`` is the source offset of ``values[i]``; ``keys``, ``timestamps`` and ``headers``, when given, have
    one entry per value too. ``headers[i]`` is the sequence of ``(key, value)`` header pairs of ``values[i]``
    (``None`` or empty for none). The batch is also a sequence of :class:`SourceRecord` (built on access), so code
    written for lists keeps working. With pass-through (``bytes``) key and value converters, bytes or ``None``
    keys and values, and header pairs that are ``(str, bytes or None)`` tuples (with a header converter that writes
    bytes as they are: ``bytes`` or the default ``SimpleHeaderConverter``), the runtime sends the
    columns as they are and commits the batch's offsets as a whole: the offset of its last record once every record
    of it (and of the partition before it) is acknowledged. Otherwise it sends the batch record by record through
    the converters, like a list of :class:`SourceRecord`.
    """

    __slots__ = ("headers", "keys", "offsets", "partition", "source_partition", "timestamps", "topic", "values")

    def __init__(
        self,
        source_partition: SourcePartition | None,
        topic: str,
        values: Sequence[Any],
        offsets: Sequence[SourceOffset | None],
        keys: Sequence[Any] | None = None,
        timestamps: Sequence[int | None] | None = None,
        partition: int | None = None,
        headers: Sequence[Sequence[Header] | None] | None = None,
    ) -> None:
        columns = (("offsets", offsets), ("keys", keys), ("timestamps", timestamps), ("headers", headers))
        for name, column in columns:
            if column is not None and len(column) != len(values):
                raise ValueError(f"SourceBatch for topic {topic!r}: {len(values)} values but {len(column)} {name}")
        self.source_partition = source_partition
        self.topic = topic
        self.values = values
        self.offsets = offsets
        self.keys = keys
        self.timestamps = timestamps
        self.partition = partition
        self.headers = headers

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, index: int) -> SourceRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[SourceRecord]: ...

    def __getitem__(self, index: int | slice) -> SourceRecord | list[SourceRecord]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return SourceRecord(
            self.source_partition,
            self.offsets[index],
            self.topic,
            self.values[index],
            None if self.keys is None else self.keys[index],
            self.partition,
            None if self.timestamps is None else self.timestamps[index],
            () if self.headers is None else self.headers[index] or (),
        )

    def __repr__(self) -> str:
        return f"SourceBatch({self.topic!r}, {len(self)} records, source_partition={self.source_partition!r})"


@dataclass(slots=True)
class SinkRecord:
    """A record the runtime hands to a sink task, already converted by the key, value and header converters.

    Treat it as read-only: with pass-through converters the runtime hands over the transport's own objects.
    """

    topic: str
    """The topic the record was read from."""
    partition: int
    """The topic's partition the record was read from."""
    offset: int
    """The record's offset in its topic-partition; commit ``offset + 1`` to mark it done."""
    key: Any
    """The record's key, as the worker's ``key.converter`` made it."""
    value: Any
    """The record's value, as ``value.converter`` made it (``None`` for a tombstone)."""
    timestamp: int | None = None
    """The record's Kafka timestamp, milliseconds since the epoch; ``None`` when it has none."""
    headers: Sequence[Header] = field(default_factory=tuple)
    """``(key, value)`` pairs, each value as ``header.converter`` made it."""
    key_schema: Schema | None = None
    """The Kafka Connect schema (:mod:`headwater.sdk.schemas`) the key arrived with, from a converter that reads
    one (Avro; JSON with ``schemas.enable``); ``None`` when it has none, or a transformation changed the key."""
    value_schema: Schema | None = None
    """The schema the value arrived with, as ``key_schema`` is the key's."""

    @property
    def topic_partition(self) -> TopicPartition:
        """The record's topic and partition, the key of ``pre_commit``'s offsets."""
        return TopicPartition(self.topic, self.partition)


def validate_offset_map(kind: str, value: object) -> None:
    """Reject a source partition or offset that Kafka Connect could not store.

    Both must be ``None`` or a mapping with string keys and primitive values, like ``OffsetUtils.validateFormat``.
    """
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise TypeError(f"source {kind} must be a mapping or None, got {type(value).__name__}: {value!r}")
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"source {kind} keys must be strings, got {key!r} in {dict(value)!r}")
        if item is not None and not isinstance(item, (str, int, float, bool)):
            raise TypeError(
                f"source {kind} values must be primitives, got {type(item).__name__} for {key!r} in {dict(value)!r}"
            )
