"""A transformed record, made fast: :func:`rebuilt` is ``dataclasses.replace`` for the record classes the task
loops hand to transformations, at a fifth of its cost (it calls the class with every field in place, without
looking the fields up), since a chain makes a new record per transformation per record; and :class:`Rewriting`, the
built-ins that change a record the chain owns in place instead, so that a chain of them copies a record once."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from headwater.runtime.transport.base import Message
from headwater.sdk.records import SinkRecord, SourceRecord
from headwater.sdk.transforms import R, Transformation


@dataclass(slots=True)
class ConvertedRecord(SinkRecord):
    """A :class:`SinkRecord` made by the converters, keeping the message it came from for the dead-letter queue."""

    original: Message | None = field(default=None, repr=False, compare=False)


SAME: Any = object()
"""The default of every :func:`rebuilt` argument: keep the record's own."""


def rebuilt(
    record: R,
    *,
    topic: Any = SAME,
    key: Any = SAME,
    value: Any = SAME,
    headers: Any = SAME,
    timestamp: Any = SAME,
    key_schema: Any = SAME,
    value_schema: Any = SAME,
) -> R:
    """A copy of ``record`` with the given fields changed. The record is not changed. A sink record whose key or
    value changes loses that part's schema (the one it arrived with) unless a new one is given."""
    return cast(R, _rebuilt(record, topic, key, value, headers, timestamp, key_schema, value_schema))


def _rebuilt(
    record: Any,
    topic: Any,
    key: Any,
    value: Any,
    headers: Any,
    timestamp: Any,
    key_schema: Any,
    value_schema: Any,
) -> Any:
    cls = type(record)
    if cls is ConvertedRecord or cls is SinkRecord:
        # a key or value a transformation changed no longer has the schema it arrived with, unless it says so
        if key_schema is SAME:
            key_schema = record.key_schema if key is SAME else None
        if value_schema is SAME:
            value_schema = record.value_schema if value is SAME else None
        fields = (
            record.topic if topic is SAME else topic,
            record.partition,
            record.offset,
            record.key if key is SAME else key,
            record.value if value is SAME else value,
            record.timestamp if timestamp is SAME else timestamp,
            record.headers if headers is SAME else headers,
            key_schema,
            value_schema,
        )
        return cls(*fields, record.original) if cls is ConvertedRecord else cls(*fields)
    if cls is SourceRecord:
        return cls(
            record.source_partition,
            record.source_offset,
            record.topic if topic is SAME else topic,
            record.value if value is SAME else value,
            record.key if key is SAME else key,
            record.partition,
            record.timestamp if timestamp is SAME else timestamp,
            record.headers if headers is SAME else headers,
            record.key_schema if key_schema is SAME else key_schema,
            record.value_schema if value_schema is SAME else value_schema,
        )
    changes = {
        name: given
        for name, given in (
            ("topic", topic),
            ("key", key),
            ("value", value),
            ("headers", headers),
            ("timestamp", timestamp),
            ("key_schema", key_schema),
            ("value_schema", value_schema),
        )
        if given is not SAME
    }
    return dataclasses.replace(record, **changes)


def with_value(record: R, value: Any) -> R:
    """``rebuilt(record, value=value)``, on the path every value transformation takes, with nothing looked up."""
    rec: Any = record
    cls = type(rec)
    if cls is ConvertedRecord:
        made: Any = cls(
            rec.topic,
            rec.partition,
            rec.offset,
            rec.key,
            value,
            rec.timestamp,
            rec.headers,
            rec.key_schema,
            None,
            rec.original,
        )
    elif cls is SourceRecord:
        made = cls(
            rec.source_partition,
            rec.source_offset,
            rec.topic,
            value,
            rec.key,
            rec.partition,
            rec.timestamp,
            rec.headers,
            rec.key_schema,
            rec.value_schema,
        )
    else:
        made = _rebuilt(rec, SAME, SAME, value, SAME, SAME, SAME, SAME)
    return cast(R, made)


def working_copy(record: R, part: str | None, record_owned: bool = False) -> R:
    """``record`` made the caller's to change in place: a copy of it (unless ``record_owned``) whose ``part``
    (``key`` or ``value``, when given and a map) is a copy of its map too. Nested values stay shared."""
    if not record_owned:
        record = cast(
            R, copied(record, record.value) if type(record) is SourceRecord else _rebuilt(record, *_NOTHING_CHANGED)
        )
    if part is not None and isinstance(record, SinkRecord):  # its part is about to change: the schema no longer holds
        setattr(record, f"{part}_schema", None)
    if part == "value":
        value = record.value
        if type(value) is dict:
            record.value = value.copy()
        elif isinstance(value, Mapping):
            record.value = dict(value)
    elif part == "key":
        key = record.key
        if type(key) is dict:
            record.key = key.copy()
        elif isinstance(key, Mapping):
            record.key = dict(key)
    return record


_NOTHING_CHANGED = (SAME,) * 7
_new = object.__new__


def copied(record: SourceRecord, value: Any) -> SourceRecord:
    """A copy of a source record whose value is ``value``, at half the cost of calling the class (which weighs its
    defaults): ``record.value`` for a plain copy, a copy of its map for the chain's usual one (one step, where
    :func:`working_copy` costs half as much again, which counts in the source loop: ``bench/transforms.py``)."""
    made: SourceRecord = _new(SourceRecord)
    made.source_partition, made.source_offset, made.topic = record.source_partition, record.source_offset, record.topic
    made.value, made.key, made.partition, made.timestamp = value, record.key, record.partition, record.timestamp
    made.headers, made.key_schema, made.value_schema = record.headers, record.key_schema, record.value_schema
    return made


class Rewriting(Transformation[R]):
    """A built-in transformation that changes, in place, a record its chain owns: the chain copies a record once
    (:func:`working_copy`) before the first of a run of these, rather than each of them making a new record, which
    is most of what a transformation costs in Python (the task loops' throughput goal, ``bench/transforms.py``).

    :meth:`rewrite` may set the record's fields and, when :attr:`rewrites_map` is true, add, replace and remove the
    entries of the top-level map of its :attr:`part` (``key`` or ``value``); it never changes a nested value, a
    header list or anything else the record shares. It returns the record, ``None`` to drop it, or a new record
    whose key and value maps are again the chain's own. :meth:`apply`, what everyone else calls, rewrites a
    working copy, so both paths are one implementation and the given record is never changed."""

    rewrites_map: ClassVar[bool] = False
    """Whether :meth:`rewrite` changes the entries of the map of :attr:`part` (which the chain then copies first)."""

    @property
    def rewritten_part(self) -> str | None:
        """``key`` or ``value``: the part whose top-level map :meth:`rewrite` changes; ``None`` for none."""
        return getattr(self, "part", None) if self.rewrites_map else None

    def rewrite(self, record: R) -> R | None:
        raise NotImplementedError

    def apply(self, record: R) -> R | None:
        return self.rewrite(working_copy(record, self.rewritten_part))
