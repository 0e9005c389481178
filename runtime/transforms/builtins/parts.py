"""What the built-in transformations share: which part of a record a ``$Key`` or ``$Value`` variant works on, and
Kafka Connect's errors for a value of the wrong shape (``Requirements.requireMap``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from headwater.runtime.transforms.records import rebuilt, with_value
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import SinkRecord, SourceRecord
from headwater.sdk.transforms import R, Transformation


class DataError(ConnectError):
    """A record a transformation cannot handle (Kafka Connect's ``DataException``)."""


def type_name(value: Any) -> str:
    """The name Kafka Connect's messages give a value's type, for the Python types records carry."""
    if value is None:
        return "null"
    return {dict: "HashMap", list: "ArrayList", str: "String", int: "Long", float: "Double", bool: "Boolean"}.get(
        type(value), type(value).__name__
    )


def require_map(value: Any, purpose: str) -> Mapping[str, Any]:
    """``value`` when it is a map; else Kafka Connect's error for a schemaless value of another type."""
    if type(value) is not dict and not isinstance(value, Mapping):  # a dict, nearly always: skip the ABC check
        raise DataError(f"Only Map objects supported in absence of schema for [{purpose}], found: {type_name(value)}")
    return value


def require_map_or_null(value: Any, purpose: str) -> Mapping[str, Any] | None:
    return None if value is None else require_map(value, purpose)


def require_sink_record(record: SourceRecord | SinkRecord, purpose: str) -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataError(f"Only SinkRecord supported for [{purpose}], found: {type(record).__name__}")
    return record


class KeyOrValue(Transformation[R]):
    """A transformation with a ``$Key`` and a ``$Value`` variant: :attr:`part` says which part of the record it
    works on. The variants are the subclasses named ``Key`` and ``Value`` in :data:`.BUILTIN_TRANSFORMATIONS`."""

    part: ClassVar[str]
    """``key`` or ``value``."""

    def operating_value(self, record: R) -> Any:
        return record.key if self.part == "key" else record.value

    def owned_map(self, record: R, purpose: str) -> dict[str, Any] | None:
        """The schemaless map of :attr:`part` of a record the chain owns (:class:`.Rewriting`), to change in place;
        ``None`` for a tombstone; refused as :func:`require_map` refuses (a record with a schema takes the
        transformation's ``apply_with_schema`` before this)."""
        value = record.value if self.part == "value" else record.key
        if type(value) is dict:
            return value
        return None if value is None else require_map(value, purpose)  # type: ignore[return-value]

    def set_part(self, record: R, updated: Any) -> None:
        """:meth:`new_record` in place, for a record the caller owns (:class:`.Rewriting`)."""
        if self.part == "key":
            record.key = updated
            if isinstance(record, SourceRecord):
                record.key_schema = None
        else:
            record.value = updated
            if isinstance(record, SourceRecord):
                record.value_schema = None

    def new_record(self, record: R, updated: Any) -> R:
        """The record with :attr:`part` replaced by ``updated`` (and, for a source record, its schema dropped:
        schemaless values carry none)."""
        if self.part == "key":
            if isinstance(record, SourceRecord) and record.key_schema is not None:
                return rebuilt(record, key=updated, key_schema=None)
            return rebuilt(record, key=updated)
        if isinstance(record, SourceRecord) and record.value_schema is not None:
            return rebuilt(record, value=updated, value_schema=None)
        return with_value(record, updated)
