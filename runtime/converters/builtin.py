"""The built-in converters, as Kafka's: ``ByteArrayConverter``, ``StringConverter``, ``JsonConverter`` and
``SimpleHeaderConverter``, and what the task loops may skip for them."""

from __future__ import annotations

import base64
import codecs
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from headwater.runtime.converters.avro_data import to_connect
from headwater.runtime.converters.base import BYTES_LIKE, Converter, HeaderConverter, own_settings
from headwater.runtime.converters.json_values import changes_values, from_payload, to_payload
from headwater.sdk.config import ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError, ConnectError
from headwater.sdk.schemas import AvroSchema, Schema


def _known_encoding(key: str, value: Any) -> None:
    try:
        codecs.lookup(value)
    except LookupError:
        raise ConfigError(key, value, "Unknown character encoding") from None


class ByteArrayConverter:
    """Passes bytes through unchanged, like Kafka's ``ByteArrayConverter``."""

    CONFIG: ClassVar[ConfigDef] = ConfigDef()

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        pass

    def from_connect(self, topic: str, schema: Mapping[str, Any] | None, value: Any) -> bytes | None:
        if type(value) is bytes:
            return value
        if value is None:
            return None
        if isinstance(value, BYTES_LIKE):
            return bytes(value)
        raise ConnectError(f"ByteArrayConverter needs bytes for topic {topic!r}, got {type(value).__name__}")

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        return data


class StringConverter:
    """Strings encoded with ``converter.encoding`` (UTF-8 by default), like Kafka's ``StringConverter``.

    Values that are not strings are written as ``str(value)``.
    """

    CONFIG: ClassVar[ConfigDef] = ConfigDef().define(
        "converter.encoding",
        Type.STRING,
        "utf-8",
        Importance.HIGH,
        "Character encoding of the strings.",
        _known_encoding,
    )

    def __init__(self) -> None:
        self.encoding = "utf-8"

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        self.encoding = own_settings(self.CONFIG, config)["converter.encoding"]

    def from_connect(self, topic: str, schema: Mapping[str, Any] | None, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            return (value if isinstance(value, str) else str(value)).encode(self.encoding)
        except UnicodeEncodeError as error:
            raise ConnectError(f"Cannot encode a value for topic {topic!r} as {self.encoding}: {error}") from None

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return data.decode(self.encoding)
        except UnicodeDecodeError as error:
            raise ConnectError(f"Cannot decode a value from topic {topic!r} as {self.encoding}: {error}") from None


def _json_default(value: object) -> object:
    if isinstance(value, BYTES_LIKE):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_json_default)


def infer_schema(value: Any, optional: bool = False) -> dict[str, Any]:
    """A Connect JSON schema describing ``value``, written the way Kafka's ``JsonConverter`` writes schemas.

    Dicts become structs whose fields are optional; a list's items are described by its first non-null element.
    """
    if isinstance(value, bool):
        schema: dict[str, Any] = {"type": "boolean"}
    elif isinstance(value, int):
        schema = {"type": "int64"}
    elif isinstance(value, float):
        schema = {"type": "double"}
    elif isinstance(value, str) or value is None:
        schema = {"type": "string"}
    elif isinstance(value, BYTES_LIKE):
        schema = {"type": "bytes"}
    elif isinstance(value, (list, tuple)):
        first = next((item for item in value if item is not None), "")
        items = infer_schema(first, optional=any(item is None for item in value))
        schema = {"type": "array", "items": items}
    elif isinstance(value, Mapping):
        fields = []
        for name, item in value.items():
            if not isinstance(name, str):
                raise TypeError(f"struct field names must be strings, got {name!r}")
            fields.append({**infer_schema(item, optional=True), "field": name})
        schema = {"type": "struct", "fields": fields}
    else:
        raise TypeError(f"no Connect schema type for {type(value).__name__}")
    schema["optional"] = optional
    return schema


class JsonConverter:
    """JSON, like Kafka's ``JsonConverter``: with ``schemas.enable`` (the default) each message is an envelope
    ``{"schema": ..., "payload": ...}``; the schema is the record's own or one inferred from the value. A value with
    a schema is written as Kafka's converter writes it (:mod:`.json_values`: decimals, dates, times, timestamps and
    bytes in their JSON forms) and read back as the SDK's values with its schema (``SinkRecord.value_schema``)."""

    CONFIG: ClassVar[ConfigDef] = ConfigDef().define(
        "schemas.enable", Type.BOOLEAN, True, Importance.HIGH, "Write and expect the schema with each message."
    )

    def __init__(self) -> None:
        self.schemas_enable = True
        self._changes: dict[int, tuple[Any, bool]] = {}

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        self.schemas_enable = own_settings(self.CONFIG, config)["schemas.enable"]

    def from_connect(self, topic: str, schema: Schema | AvroSchema | None, value: Any) -> bytes | None:
        if value is None and schema is None:
            return None  # a tombstone stays a tombstone
        try:
            if isinstance(schema, AvroSchema):
                schema = to_connect(schema.parsed)
            if schema is not None and self._changes_values(schema):
                value = to_payload(schema, value)
            if self.schemas_enable:
                value = {"schema": infer_schema(value) if schema is None else schema, "payload": value}
            return _ENCODER.encode(value).encode("utf-8")
        except (TypeError, ValueError, KeyError, ConnectError) as error:
            raise ConnectError(f"Cannot convert a value for topic {topic!r} to JSON: {error}") from None

    def _changes_values(self, schema: Schema) -> bool:
        """:func:`changes_values`, kept per schema object (a source hands the same schema with every record)."""
        found = self._changes.get(id(schema))
        if found is not None and found[0] is schema:
            return bool(found[1])
        changes = changes_values(schema)
        if len(self._changes) > 1000:
            self._changes.clear()
        self._changes[id(schema)] = (schema, changes)
        return changes

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        return self.to_connect_data(topic, data)[1]

    def to_connect_data(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        """The schema (with ``schemas.enable``) and the value of a message."""
        if data is None:
            return None, None
        try:
            parsed = json.loads(data)
        except ValueError as error:
            raise ConnectError(f"Invalid JSON in a message from topic {topic!r}: {error}") from None
        if not self.schemas_enable:
            return None, parsed
        if not isinstance(parsed, dict) or parsed.keys() != {"schema", "payload"}:
            raise ConnectError(
                'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
                f"additional fields (message from topic {topic!r}). If you are trying to deserialize plain JSON data, "
                "set schemas.enable=false in your converter configuration."
            )
        schema = parsed["schema"]
        try:
            return schema, from_payload(schema, parsed["payload"])
        except (TypeError, ValueError, OverflowError) as error:
            raise ConnectError(
                f"Payload of a message from topic {topic!r} does not match its schema: {error}"
            ) from None


class SimpleHeaderConverter:
    """Header values: bytes pass through, strings as UTF-8, anything else as compact JSON. Read back as a string
    when the bytes are valid UTF-8, else as the bytes themselves."""

    CONFIG: ClassVar[ConfigDef] = ConfigDef()

    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def from_connect(self, topic: str, header_key: str, value: Any) -> bytes | None:
        if value is None or type(value) is bytes:
            return value
        if isinstance(value, BYTES_LIKE):
            return bytes(value)
        try:
            return (value if isinstance(value, str) else _ENCODER.encode(value)).encode("utf-8")
        except (TypeError, ValueError) as error:
            raise ConnectError(f"Cannot convert header {header_key!r} for topic {topic!r}: {error}") from None

    def to_connect(self, topic: str, header_key: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data


class _ConverterHeaders:
    """A value converter used for headers, as Kafka's StringConverter, JsonConverter and ByteArrayConverter can be."""

    def __init__(self, converter: Converter) -> None:
        self.converter = converter

    def configure(self, config: Mapping[str, Any]) -> None:
        self.converter.configure(config, False)

    def from_connect(self, topic: str, header_key: str, value: Any) -> bytes | None:
        return self.converter.from_connect(topic, None, value)

    def to_connect(self, topic: str, header_key: str, data: bytes | None) -> Any:
        return self.converter.to_connect(topic, data)


def passes_bytes_through(converter: Converter | HeaderConverter) -> bool:
    """Whether ``converter`` hands bytes on unchanged (``bytes`` as a key, value or header converter), so a task
    loop may move raw records without calling it."""
    if isinstance(converter, _ConverterHeaders):
        converter = converter.converter
    return isinstance(converter, ByteArrayConverter)


def makes_unshared_values(converter: Converter) -> bool:
    """Whether every key or value ``converter.to_connect`` returns is made by that call alone, nothing else holding
    it (the built-in converters: JSON parses each message afresh, strings and bytes are immutable), so a task loop's
    transformation chain may change its maps in place without copying them first."""
    return isinstance(converter, (JsonConverter, StringConverter, ByteArrayConverter))


def sends_header_bytes_through(converter: HeaderConverter) -> bool:
    """Whether a header converter writes a ``bytes`` header value as it is (``bytes``, and the default
    ``SimpleHeaderConverter``), so a source loop may send raw headers without calling it."""
    return passes_bytes_through(converter) or isinstance(converter, SimpleHeaderConverter)
