"""Turning consumed messages into the records a sink task is given: the key, value and header converters, under the
task's error handling.

With pass-through converters the transport's messages are handed on as they are. Otherwise each message becomes a
:class:`~headwater.runtime.tasks.sink_context.ConvertedRecord` that keeps the message (its bytes go to the
dead-letter queue if the task reports the record), then goes through the connector's transforms, which may drop it.
A message whose conversion or transformation fails goes to the task's
:class:`~headwater.runtime.error_handling.tolerance.ErrorHandler`: retried later (it and the messages after it stay
unconverted until then), skipped, or the task fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, NamedTuple

from headwater.runtime.converters import Converter, HeaderConverter, makes_unshared_values, passes_bytes_through
from headwater.runtime.error_handling.tolerance import (
    HEADER_CONVERTER,
    KEY_CONVERTER,
    VALUE_CONVERTER,
    ErrorHandler,
    Failure,
    StageFailed,
    class_name,
)
from headwater.runtime.transforms.chain import TransformationChain
from headwater.runtime.transforms.records import ConvertedRecord
from headwater.runtime.transport.base import Message
from headwater.sdk.records import SinkRecord
from headwater.sdk.schemas import Schema

_HEADERS = attrgetter("headers")


def joined(first: Sequence[Message], then: Sequence[Message]) -> Sequence[Message]:
    """``first`` followed by ``then``, without a copy when ``first`` is empty (the usual case)."""
    return then if not first else [*first, *then]


class Converted(NamedTuple):
    records: Sequence[SinkRecord]
    """The records so far, then those converted now."""
    unconverted: Sequence[Message]
    """Messages left for a retry: the one whose conversion is retried and those after it."""
    retry_at: int | None
    """When to convert :attr:`unconverted` again."""


class SinkConversion:
    """One sink task's converters and its conversion retries."""

    def __init__(
        self,
        key_converter: Converter,
        value_converter: Converter,
        header_converter: HeaderConverter,
        errors: ErrorHandler,
        transforms: TransformationChain[SinkRecord] | None = None,
    ) -> None:
        self.key_converter = key_converter
        self.transforms = transforms or TransformationChain()
        self.value_converter = value_converter
        self.header_converter = header_converter
        self.errors = errors
        self._retry = errors.retry()
        self._passthrough = passes_bytes_through(key_converter) and passes_bytes_through(value_converter)
        self._passthrough_headers = self._passthrough and passes_bytes_through(header_converter)
        self.as_they_are = not self.transforms and self._passthrough_headers
        """Whether every record is handed on as the transport made it (tested once, not per batch): the loop then
        need not call :meth:`convert`."""
        self._as_they_are_without_headers = not self.transforms and self._passthrough
        """Whether records without headers are."""
        self._unshared = makes_unshared_values(key_converter) and makes_unshared_values(value_converter)
        self._key_data: Callable[[str, bytes | None], tuple[Schema | None, Any]] | None = getattr(
            key_converter, "to_connect_data", None
        )
        """The key converter's reader of a schema with the key, when it has one (:class:`SchemaConverter`)."""
        self._value_data: Callable[[str, bytes | None], tuple[Schema | None, Any]] | None = getattr(
            value_converter, "to_connect_data", None
        )

    def convert(self, records: Sequence[SinkRecord], messages: Sequence[Message]) -> Converted:
        """``records`` followed by ``messages`` converted (those that failed and were tolerated left out)."""
        if self.as_they_are or (self._as_they_are_without_headers and not any(map(_HEADERS, messages))):
            # the transport's records are handed on as they are (with Kafka: read from librdkafka when asked)
            return Converted(joined(records, messages), (), None)
        transforms = self.transforms or None  # an empty chain is falsy through a method: tested once, not per record
        key_converter, value_converter = self.key_converter, self.value_converter
        to_key, to_value = key_converter.to_connect, value_converter.to_connect
        key_data, value_data = self._key_data, self._value_data
        key_schema = value_schema = None
        converted = list(records)
        for index, message in enumerate(messages):
            topic = message.topic
            stage, converter = KEY_CONVERTER, key_converter
            try:
                if key_data is None:
                    key = to_key(topic, message.key)
                else:
                    key_schema, key = key_data(topic, message.key)
                stage, converter = VALUE_CONVERTER, value_converter
                if value_data is None:
                    value = to_value(topic, message.value)
                else:
                    value_schema, value = value_data(topic, message.value)
                stage, converter = HEADER_CONVERTER, self.header_converter  # type: ignore[assignment]
                headers = self.headers(message) if message.headers else ()
            except Exception as error:
                failure = Failure(stage, class_name(converter), error, message)
                retry_at = self.errors.retry_or_fail(failure, self._retry)
                if retry_at is not None:
                    return Converted(converted, messages[index:], retry_at)
                continue
            record: SinkRecord = ConvertedRecord(
                topic,
                message.partition,
                message.offset,
                key,
                value,
                message.timestamp,
                headers,
                key_schema,
                value_schema,
                message,
            )
            if transforms is not None:
                try:
                    transformed = transforms.apply(record, message, True, self._unshared)
                except StageFailed as failed:
                    retry_at = self.errors.retry_or_fail(failed.failure, self._retry)
                    if retry_at is not None:
                        return Converted(converted, messages[index:], retry_at)
                    continue
                if transformed is None:
                    continue  # dropped by a transformation: its offset is committed like the others'
                record = transformed
            converted.append(record)
        self._retry.succeeded()
        return Converted(converted, (), None)

    def headers(self, message: Message) -> list[tuple[str, object]]:
        convert = self.header_converter.to_connect
        return [(key, convert(message.topic, key, value)) for key, value in message.headers or ()]
