"""Consumed records on the Kafka transport, read from librdkafka's messages when a field is asked for.

A consume call returns librdkafka ``Message`` objects; copying each one's seven fields into a :class:`SinkRecord`
costs more than everything else the sink loop does per record. :class:`KafkaRecords` wraps the call's messages as
they are and makes a :class:`KafkaRecord` (a :class:`SinkRecord` whose fields are read from the message) only
for the records a task actually looks at.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

from headwater.sdk.records import Header, SinkRecord


class KafkaRecord(SinkRecord):
    """A :class:`SinkRecord` whose fields are read from a librdkafka message; read-only."""

    __slots__ = ("_message",)
    _message: Any

    @property
    def topic(self) -> str:  # type: ignore[override]
        return self._message.topic()  # type: ignore[no-any-return]

    @property
    def partition(self) -> int:  # type: ignore[override]
        return self._message.partition()  # type: ignore[no-any-return]

    @property
    def offset(self) -> int:  # type: ignore[override]
        return self._message.offset()  # type: ignore[no-any-return]

    @property
    def key(self) -> Any:
        return self._message.key()

    @property
    def value(self) -> Any:
        return self._message.value()

    @property
    def timestamp(self) -> int | None:  # type: ignore[override]
        kind, stamp = self._message.timestamp()
        return stamp if kind else None

    @property
    def headers(self) -> Sequence[Header]:  # type: ignore[override]
        return self._message.headers() or ()

    @property
    def key_schema(self) -> None:  # type: ignore[override]
        """Bytes handed on as they are carry no schema."""
        return None

    @property
    def value_schema(self) -> None:  # type: ignore[override]
        return None


_new = object.__new__
_set_message = KafkaRecord.__dict__["_message"].__set__


def kafka_record(message: Any) -> KafkaRecord:
    """The record of one librdkafka message (that carries no error)."""
    record = _new(KafkaRecord)
    _set_message(record, message)
    return record


class KafkaRecords(Sequence[SinkRecord]):
    """The records of one consume call (messages without errors), each made on access."""

    __slots__ = ("_messages",)

    def __init__(self, messages: list[Any]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    @overload
    def __getitem__(self, index: int) -> SinkRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[SinkRecord]: ...

    def __getitem__(self, index: int | slice) -> SinkRecord | Sequence[SinkRecord]:
        if isinstance(index, slice):
            return KafkaRecords(self._messages[index])
        return kafka_record(self._messages[index])

    def __iter__(self) -> Iterator[SinkRecord]:
        return map(kafka_record, self._messages)

    def __repr__(self) -> str:
        return f"KafkaRecords({len(self)} records)"
