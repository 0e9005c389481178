"""Helpers for the parity tables of the built-in transformations: a one-transformation chain config and records in
:mod:`support.java_transforms`'s shape."""

from __future__ import annotations

from typing import Any

T = "org.apache.kafka.connect.transforms."

Case = tuple[str, dict[str, str], list[dict[str, Any]]]
"""A parity case: its name, the connector config's transforms keys, the records."""


def chain(kind: str, settings: dict[str, str] | None = None) -> dict[str, str]:
    """The config of a chain of one transformation, ``kind`` by its Java class name (``InsertField$Value`` is
    ``org.apache.kafka.connect.transforms.InsertField$Value``), which both sides resolve."""
    config = {"transforms": "t", "transforms.t.type": T + kind}
    config.update({f"transforms.t.{key}": value for key, value in (settings or {}).items()})
    return config


def sink(value: Any = None, *, key: Any = None, topic: str = "orders", **fields: Any) -> dict[str, Any]:
    """A sink record (partition 3, offset 42, timestamp 1700000000000 unless given)."""
    defaults = {"partition": 3, "offset": 42, "timestamp": 1_700_000_000_000}
    return {**defaults, "topic": topic, "key": key, "value": value, **fields}


def source(value: Any = None, *, key: Any = None, topic: str = "orders", **fields: Any) -> dict[str, Any]:
    """A source record (no partition, no timestamp unless given)."""
    return {"kind": "source", "topic": topic, "key": key, "value": value, "partition": None, **fields}


def both(value: Any = None, *, key: Any = None) -> list[dict[str, Any]]:
    """The same key and value as a sink and as a source record."""
    return [sink(value, key=key), source(value, key=key)]
