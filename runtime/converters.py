"""Key, value and header converters, configured like Kafka Connect's: the task loops apply them at the transport
boundary, turning a connector's Python values into the bytes Kafka stores and back."""

from __future__ import annotations

import base64
import codecs
import importlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from headwater.runtime.plugins import refuse_unless_allowed
from headwater.sdk.config import ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError, ConnectError

_BYTES_LIKE = (bytes, bytearray, memoryview)


class Converter(Protocol):
    """Converts record keys or values between a connector's Python values and Kafka's bytes."""

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Called once before use with the converter's own keys (``value.converter.`` prefix stripped)."""

    def from_connect(self, topic: str, schema: Mapping[str, Any] | None, value: Any) -> bytes | None:
        """A source connector's value, about to be produced to ``topic``, as bytes."""

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        """Bytes consumed from ``topic`` as the Python value a sink connector receives."""


class HeaderConverter(Protocol):
    """Converts record header values between Python values and Kafka's bytes."""

    def configure(self, config: Mapping[str, Any]) -> None:
        """Called once before use with the converter's own keys (``header.converter.`` prefix stripped)."""

    def from_connect(self, topic: str, header_key: str, value: Any) -> bytes | None:
        """The value of header ``header_key`` of a record produced to ``topic``, as bytes."""

    def to_connect(self, topic: str, header_key: str, data: bytes | None) -> Any:
        """The bytes of header ``header_key`` of a record consumed from ``topic``, as a Python value."""


def _settings(definition: ConfigDef, config: Mapping[str, Any]) -> dict[str, Any]:
    """The keys ``definition`` knows, parsed from ``config``; a bad value raises ConfigError naming the bare key."""
    return {
        key.name: key.default if config.get(key.name) is None else key.parse(config[key.name]) for key in definition
    }


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
        if isinstance(value, _BYTES_LIKE):
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
        self.encoding = _settings(self.CONFIG, config)["converter.encoding"]

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
    if isinstance(value, _BYTES_LIKE):
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
        schema = {"type": "float64"}
    elif isinstance(value, str) or value is None:
        schema = {"type": "string"}
    elif isinstance(value, _BYTES_LIKE):
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


def _decode_bytes(schema: Any, value: Any) -> Any:
    """``value`` with the base64 strings of every ``bytes`` schema decoded."""
    if value is None or not isinstance(schema, Mapping):
        return value
    kind = schema.get("type")
    if kind == "bytes":
        return base64.b64decode(value, validate=True)
    if kind == "array" and isinstance(value, list):
        return [_decode_bytes(schema.get("items"), item) for item in value]
    if kind == "struct" and isinstance(value, dict):
        fields = {field.get("field"): field for field in schema.get("fields") or () if isinstance(field, Mapping)}
        return {name: _decode_bytes(fields.get(name), item) for name, item in value.items()}
    if kind == "map" and isinstance(value, dict):
        return {name: _decode_bytes(schema.get("values"), item) for name, item in value.items()}
    if kind == "map" and isinstance(value, list):  # maps with non-string keys are written as [key, value] pairs
        return {_decode_bytes(schema.get("keys"), k): _decode_bytes(schema.get("values"), v) for k, v in value}
    return value


class JsonConverter:
    """JSON, like Kafka's ``JsonConverter``: with ``schemas.enable`` (the default) each message is an envelope
    ``{"schema": ..., "payload": ...}``; the schema is the record's own or one inferred from the value.
    Bytes are written as base64 strings."""

    CONFIG: ClassVar[ConfigDef] = ConfigDef().define(
        "schemas.enable", Type.BOOLEAN, True, Importance.HIGH, "Write and expect the schema with each message."
    )

    def __init__(self) -> None:
        self.schemas_enable = True

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        self.schemas_enable = _settings(self.CONFIG, config)["schemas.enable"]

    def from_connect(self, topic: str, schema: Mapping[str, Any] | None, value: Any) -> bytes | None:
        if value is None and schema is None:
            return None  # a tombstone stays a tombstone
        try:
            if self.schemas_enable:
                value = {"schema": infer_schema(value) if schema is None else schema, "payload": value}
            return _ENCODER.encode(value).encode("utf-8")
        except (TypeError, ValueError) as error:
            raise ConnectError(f"Cannot convert a value for topic {topic!r} to JSON: {error}") from None

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            parsed = json.loads(data)
        except ValueError as error:
            raise ConnectError(f"Invalid JSON in a message from topic {topic!r}: {error}") from None
        if not self.schemas_enable:
            return parsed
        if not isinstance(parsed, dict) or parsed.keys() != {"schema", "payload"}:
            raise ConnectError(
                'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
                f"additional fields (message from topic {topic!r}). If you are trying to deserialize plain JSON data, "
                "set schemas.enable=false in your converter configuration."
            )
        try:
            return _decode_bytes(parsed["schema"], parsed["payload"])
        except (TypeError, ValueError) as error:
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
        if isinstance(value, _BYTES_LIKE):
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


_CONVERTERS: dict[str, type] = {
    "bytes": ByteArrayConverter,
    "string": StringConverter,
    "json": JsonConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringConverter,
    "org.apache.kafka.connect.json.JsonConverter": JsonConverter,
}
_HEADER_CONVERTERS: dict[str, type] = {
    "simple": SimpleHeaderConverter,
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": SimpleHeaderConverter,
}
BUILTIN_CONVERTERS: Mapping[str, type] = _CONVERTERS
"""Each built-in converter by its short name and Kafka Connect's class name for it."""
BUILTIN_HEADER_CONVERTERS: Mapping[str, type] = _HEADER_CONVERTERS
"""Each built-in header-only converter by its short name and Kafka Connect's class name for it (every built-in
converter is a header converter too)."""
_HINT = "use bytes, string, json, a Kafka converter class name or a Python import path (package.module:Class)"


_BUILT_IN = "the built-in converters (bytes, string, json, simple and Kafka's class names for them)"


def _load_class(spec: str, key: str, builtin: Mapping[str, type], allowed_modules: Sequence[str] | None = None) -> type:
    """The converter class ``spec`` names; an import path's module is imported only when ``allowed_modules`` (the
    worker's ``connector.class.allowed.modules``, or ``None`` for a trusted spec) allows it."""
    name = spec.strip()
    cls = builtin.get(name) or builtin.get(name.lower())
    if cls is None:
        module_name, _, attr = name.partition(":") if ":" in name else name.rpartition(".")
        if not (module_name and attr):
            raise ConfigError(key, spec, f"Unknown converter; {_HINT}")
        refuse_unless_allowed(key, spec, module_name, allowed_modules, "Converter classes", _BUILT_IN)
        try:
            cls = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as error:
            raise ConfigError(key, spec, f"Cannot load converter class ({error}); {_HINT}") from None
    missing = [
        method for method in ("configure", "from_connect", "to_connect") if not callable(getattr(cls, method, None))
    ]
    if missing or not isinstance(cls, type):
        raise ConfigError(key, spec, f"Not a converter class (missing {', '.join(missing) or 'a class'})")
    return cls


def _instantiate(spec: str, key: str, builtin: Mapping[str, type]) -> Any:
    cls = _load_class(spec, key, builtin)
    try:
        return cls()
    except TypeError as error:
        raise ConfigError(key, spec, f"Cannot create the converter: {error}") from None


def _prefixed(key: str, error: ConfigError) -> ConfigError:
    return ConfigError(f"{key}.{error.key}", error.value, error.reason)


def load_converter(spec: str, config: Mapping[str, Any], is_key: bool, key: str = "value.converter") -> Converter:
    """The configured converter named by ``spec``: an alias (``bytes``, ``string``, ``json``), a Kafka class name or
    a Python import path. ``config`` holds the converter's own keys; errors name ``key`` or ``<key>.<its key>``."""
    converter: Converter = _instantiate(spec, key, _CONVERTERS)
    try:
        converter.configure(config, is_key)
    except ConfigError as error:
        raise _prefixed(key, error) from None
    return converter


def load_header_converter(spec: str, config: Mapping[str, Any], key: str = "header.converter") -> HeaderConverter:
    """The configured header converter named by ``spec``: ``simple`` or Kafka's ``SimpleHeaderConverter`` class name,
    any name :func:`load_converter` accepts for a built-in converter, or a Python import path."""
    name = spec.strip()
    builtin = _CONVERTERS.get(name) or _CONVERTERS.get(name.lower())
    converter: HeaderConverter = (
        _ConverterHeaders(builtin()) if builtin is not None else _instantiate(spec, key, _HEADER_CONVERTERS)
    )
    try:
        converter.configure(config)
    except ConfigError as error:
        raise _prefixed(key, error) from None
    return converter


def converter_config(props: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The entries of ``props`` under ``prefix.``, with that prefix stripped."""
    start = f"{prefix}."
    return {name[len(start) :]: value for name, value in props.items() if name.startswith(start)}


def converter_class(spec: str, key: str, allowed_modules: Sequence[str] | None = None) -> type:
    """The class of the converter ``spec`` names for ``key`` (``key.converter``, ``value.converter`` or
    ``header.converter``); raise :class:`ConfigError` naming ``key`` when it cannot be loaded, or when it is an
    import path whose module ``allowed_modules`` (the worker's ``connector.class.allowed.modules``; ``None`` for a
    trusted spec, the worker file's) does not allow, before anything is imported."""
    name = spec.strip()
    builtin = _CONVERTERS.get(name) or _CONVERTERS.get(name.lower())
    if builtin is not None:
        return builtin
    return _load_class(spec, key, _HEADER_CONVERTERS if key == "header.converter" else _CONVERTERS, allowed_modules)


def converter_settings(
    spec: str, header: bool = False, allowed_modules: Sequence[str] | None = None
) -> tuple[str, ConfigDef] | None:
    """The class name and ``CONFIG`` (its own keys) of the converter ``spec`` names, a header converter's when
    ``header``; ``None`` when it cannot be loaded (or ``allowed_modules`` refuses its module: nothing is imported)
    or declares no ``CONFIG``, so that its keys cannot be known."""
    try:
        cls = converter_class(spec, "header.converter" if header else "value.converter", allowed_modules)
    except ConfigError:
        return None
    config = getattr(cls, "CONFIG", None)
    return (cls.__name__, config) if isinstance(config, ConfigDef) else None
