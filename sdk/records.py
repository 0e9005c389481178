"""Records and offsets: what flows between a connector and the runtime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

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
    partition: int

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
    source_offset: SourceOffset | None
    topic: str
    value: Any
    key: Any = None
    partition: int | None = None
    timestamp: int | None = None
    headers: Sequence[Header] = field(default_factory=tuple)
    key_schema: Mapping[str, Any] | None = None
    value_schema: Mapping[str, Any] | None = None


@dataclass(slots=True)
class SinkRecord:
    """A record the runtime hands to a sink task, already converted by the key, value and header converters.

    Treat it as read-only: with pass-through converters the runtime hands over the transport's own objects.
    """

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    timestamp: int | None = None
    headers: Sequence[Header] = field(default_factory=tuple)

    @property
    def topic_partition(self) -> TopicPartition:
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
