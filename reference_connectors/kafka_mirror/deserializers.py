"""Key and value deserializers of the source consumer (``source.key.deserializer``, ``source.value.deserializer``).

The default, Kafka's ``ByteArrayDeserializer`` (alias ``bytes``), passes the source's bytes through untouched: pair
it with the worker's ``bytes`` converters (``key.converter=bytes``, ``value.converter=bytes``) so records are copied
byte for byte. Kafka's ``StringDeserializer`` (``string``), ``IntegerDeserializer`` and ``DoubleDeserializer`` map to
confluent-kafka's deserializers of the same names; a ``package.module:Class`` path names any
:class:`confluent_kafka.serialization.Deserializer` subclass, made without arguments.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from confluent_kafka.serialization import (
    Deserializer,
    DoubleDeserializer,
    IntegerDeserializer,
    MessageField,
    SerializationContext,
    StringDeserializer,
)

from headwater.sdk import ConfigError

BYTES = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
"""The default deserializer: bytes are passed through."""

Deserialize = Callable[[str, bytes | None], Any]
"""``deserialize(topic, data)``: the value a mirrored record carries for the source bytes ``data``."""

_JAVA = "org.apache.kafka.common.serialization."
_FACTORIES: dict[str, Callable[[], Deserializer] | None] = {
    "bytes": None,
    BYTES: None,
    "string": lambda: StringDeserializer("utf_8"),
    f"{_JAVA}StringDeserializer": lambda: StringDeserializer("utf_8"),
    f"{_JAVA}IntegerDeserializer": IntegerDeserializer,
    f"{_JAVA}DoubleDeserializer": DoubleDeserializer,
}
_HINT = f"use bytes, string, one of {', '.join(sorted(k for k in _FACTORIES if '.' in k))} or package.module:Class"


def _load(key: str, spec: str) -> Deserializer:
    module_name, _, attr = spec.partition(":")
    if not (module_name and attr):
        raise ConfigError(key, spec, f"Unknown deserializer; {_HINT}")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigError(key, spec, f"Cannot load deserializer class ({error}); {_HINT}") from None
    if not (isinstance(cls, type) and issubclass(cls, Deserializer)):
        raise ConfigError(key, spec, "Not a confluent_kafka.serialization.Deserializer subclass")
    try:
        return cls()
    except TypeError as error:
        raise ConfigError(key, spec, f"Cannot create the deserializer: {error}") from None


def load_deserializer(key: str, spec: str, is_key: bool) -> Deserialize | None:
    """The deserializer named by ``spec`` for config ``key``; ``None`` for bytes (nothing to do). Raises
    :class:`ConfigError` naming ``key`` when ``spec`` names none."""
    name = spec.strip()
    if name in _FACTORIES or name.lower() in _FACTORIES:
        factory = _FACTORIES.get(name, _FACTORIES.get(name.lower()))
        if factory is None:
            return None
        deserializer = factory()
    else:
        deserializer = _load(key, name)
    field = MessageField.KEY if is_key else MessageField.VALUE

    def deserialize(topic: str, data: bytes | None) -> Any:
        return deserializer(data, SerializationContext(topic, field))

    return deserialize
