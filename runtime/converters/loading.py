"""Loading converters by name: the built-ins by their short names and Kafka's class names, the Schema Registry
converters by Confluent's class names, and import paths of a connector author's own, as a worker or a connector
config names them."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.runtime.converters.avro import AvroConverter
from headwater.runtime.converters.base import Converter, HeaderConverter
from headwater.runtime.converters.builtin import (
    ByteArrayConverter,
    JsonConverter,
    SimpleHeaderConverter,
    StringConverter,
    _ConverterHeaders,
)
from headwater.runtime.converters.json_schema import JsonSchemaConverter
from headwater.runtime.converters.protobuf import ProtobufConverter
from headwater.runtime.java_plugins import CONVERTERS as JAVA_CONVERTERS
from headwater.runtime.java_plugins import refuse_java
from headwater.runtime.plugins import refuse_unless_allowed
from headwater.sdk.config import ConfigDef
from headwater.sdk.errors import ConfigError

_CONVERTERS: dict[str, type] = {
    "bytes": ByteArrayConverter,
    "string": StringConverter,
    "json": JsonConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringConverter,
    "org.apache.kafka.connect.json.JsonConverter": JsonConverter,
    "avro": AvroConverter,
    "io.confluent.connect.avro.AvroConverter": AvroConverter,
    "jsonschema": JsonSchemaConverter,
    "io.confluent.connect.json.JsonSchemaConverter": JsonSchemaConverter,
    "protobuf": ProtobufConverter,
    "io.confluent.connect.protobuf.ProtobufConverter": ProtobufConverter,
}
_HEADER_CONVERTERS: dict[str, type] = {
    "simple": SimpleHeaderConverter,
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": SimpleHeaderConverter,
}
BUILTIN_CONVERTERS: Mapping[str, type] = _CONVERTERS
"""Each built-in converter by its short name and Kafka Connect's (or Confluent's) class name for it."""
BUILTIN_HEADER_CAPABLE: Mapping[str, type] = {
    name: cls for name, cls in _CONVERTERS.items() if cls not in (AvroConverter, JsonSchemaConverter, ProtobufConverter)
} | _HEADER_CONVERTERS
"""Every built-in that converts header values: the header-only ones and the key/value converters but the Schema
Registry ones (Avro, JSON Schema, Protobuf), which convert keys and values only, as Confluent's."""
_HINT = (
    "use bytes, string, json, avro, jsonschema, protobuf, a Kafka or Confluent converter class name or a Python "
    "import path (package.module:Class)"
)


_BUILT_IN = (
    "the built-in converters (bytes, string, json, avro, jsonschema, protobuf, simple and the Java class names for "
    "them)"
)


def _load_class(spec: str, key: str, builtin: Mapping[str, type], allowed_modules: Sequence[str] | None = None) -> type:
    """The converter class ``spec`` names; an import path's module is imported only when ``allowed_modules`` (the
    worker's ``connector.class.allowed.modules``, or ``None`` for a trusted spec) allows it."""
    name = spec.strip()
    cls = builtin.get(name) or builtin.get(name.lower())
    if cls is None:
        module_name, _, attr = name.partition(":") if ":" in name else name.rpartition(".")
        if not (module_name and attr):
            raise ConfigError(key, spec, f"Unknown converter; {_HINT}")
        refuse_java(key, name, JAVA_CONVERTERS, f"use one of {_BUILT_IN}")
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
    builtin = _builtin_header_converter(name, key)
    converter: HeaderConverter = (
        _ConverterHeaders(builtin()) if builtin is not None else _instantiate(spec, key, _HEADER_CONVERTERS)
    )
    try:
        converter.configure(config)
    except ConfigError as error:
        raise _prefixed(key, error) from None
    return converter


def _builtin_header_converter(name: str, key: str) -> type | None:
    """The built-in converter ``name`` names, for headers; the Schema Registry converters, which convert keys and
    values only (as Confluent's), are refused."""
    builtin = _CONVERTERS.get(name) or _CONVERTERS.get(name.lower())
    if builtin is not None and builtin not in BUILTIN_HEADER_CAPABLE.values():
        raise ConfigError(key, name, "The Schema Registry converters convert keys and values, not headers")
    return builtin


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
    builtin = _builtin_header_converter(name, key) if key == "header.converter" else None
    builtin = builtin or _CONVERTERS.get(name) or _CONVERTERS.get(name.lower())
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
