"""Key and value deserializers of the source consumer (``source.key.deserializer``, ``source.value.deserializer``).

The default, Kafka's ``ByteArrayDeserializer`` (alias ``bytes``), passes the source's bytes through untouched: pair
it with the worker's ``bytes`` converters (``key.converter=bytes``, ``value.converter=bytes``) so records are copied
byte for byte. Kafka's ``StringDeserializer`` (``string``), ``IntegerDeserializer`` and ``DoubleDeserializer`` map to
confluent-kafka's deserializers of the same names. Any other format is the business of the worker's converters: keep
the bytes and configure a converter that reads them.
"""

from __future__ import annotations

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
_HINT = f"use bytes, string or one of {', '.join(sorted(k for k in _FACTORIES if '.' in k))}"


def load_deserializer(key: str, spec: str, is_key: bool) -> Deserialize | None:
    """The deserializer named by ``spec`` for config ``key``; ``None`` for bytes (nothing to do). Raises
    :class:`ConfigError` naming ``key`` when ``spec`` names none."""
    name = spec.strip()
    if name not in _FACTORIES and name.lower() not in _FACTORIES:
        raise ConfigError(key, spec, f"Unknown deserializer; {_HINT}")
    factory = _FACTORIES.get(name, _FACTORIES.get(name.lower()))
    if factory is None:
        return None
    deserializer = factory()
    field = MessageField.KEY if is_key else MessageField.VALUE

    def deserialize(topic: str, data: bytes | None) -> Any:
        return deserializer(data, SerializationContext(topic, field))

    return deserialize
