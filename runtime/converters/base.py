"""What a converter is: the key/value and header converter protocols the task loops call at the transport boundary,
and how a converter reads its own keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from headwater.sdk.config import ConfigDef
from headwater.sdk.schemas import AvroSchema, Schema

BYTES_LIKE = (bytes, bytearray, memoryview)


class Converter(Protocol):
    """Converts record keys or values between a connector's Python values and Kafka's bytes."""

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Called once before use with the converter's own keys (``value.converter.`` prefix stripped)."""

    def from_connect(self, topic: str, schema: Schema | AvroSchema | None, value: Any) -> bytes | None:
        """A source connector's value with its schema (``None`` for none), about to be produced to ``topic``, as
        bytes."""

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        """Bytes consumed from ``topic`` as the Python value a sink connector receives."""


class SchemaConverter(Converter, Protocol):
    """A converter that reads a schema with each key or value (Kafka's ``Converter.toConnectData`` returns both):
    the sink loop gives the schema to the sink in ``SinkRecord.key_schema`` / ``value_schema``."""

    def to_connect_data(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        """The Connect schema and value of bytes consumed from ``topic`` (``None`` for no schema)."""


class HeaderConverter(Protocol):
    """Converts record header values between Python values and Kafka's bytes."""

    def configure(self, config: Mapping[str, Any]) -> None:
        """Called once before use with the converter's own keys (``header.converter.`` prefix stripped)."""

    def from_connect(self, topic: str, header_key: str, value: Any) -> bytes | None:
        """The value of header ``header_key`` of a record produced to ``topic``, as bytes."""

    def to_connect(self, topic: str, header_key: str, data: bytes | None) -> Any:
        """The bytes of header ``header_key`` of a record consumed from ``topic``, as a Python value."""


def own_settings(definition: ConfigDef, config: Mapping[str, Any]) -> dict[str, Any]:
    """The keys ``definition`` knows, parsed from ``config``; a bad value raises ConfigError naming the bare key."""
    return {
        key.name: key.default if config.get(key.name) is None else key.parse(config[key.name]) for key in definition
    }
