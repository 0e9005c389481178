"""Schema Registry converters made by tests, closed after each test (their registry clients' connections) by the
autouse fixture of ``tests/runtime/converters/conftest.py``."""

from __future__ import annotations

from typing import Any, TypeVar

from confluent_kafka.serialization import MessageField, SerializationContext

from headwater.runtime.converters import load_converter

C = TypeVar("C")

MADE: list[Any] = []
"""Every converter :func:`made` has made since the last close."""


def made(cls: type[C], name: str, url: str, is_key: bool, settings: dict[str, str]) -> C:
    """The converter ``name`` (a class name Confluent's configs use) configured for ``url``, checked to be ``cls``."""
    converter = load_converter(name, {"schema.registry.url": url, **settings}, is_key)
    assert isinstance(converter, cls)
    MADE.append(converter)
    return converter


def close_made() -> None:
    while MADE:
        MADE.pop().close()


def context(topic: str) -> SerializationContext:
    """confluent-kafka's serializer context of a value of ``topic``."""
    return SerializationContext(topic, MessageField.VALUE)
