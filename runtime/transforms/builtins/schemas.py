"""Kafka Connect schemas as a source record carries them (the JsonConverter's schema JSON), for the built-ins that
read or change them: :func:`normalized` spells a schema out as the JsonConverter writes it, and :func:`with_schema`
gives a record a new key or value with its schema."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from headwater.sdk.records import SourceRecord
from headwater.sdk.transforms import R

TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
_OPTIONAL_KEYS = ("name", "version", "doc", "parameters", "default")


def normalized(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with every key the JsonConverter writes: ``optional`` spelled out, nested schemas too."""
    out: dict[str, Any] = {"type": schema["type"], "optional": bool(schema.get("optional", False))}
    for key in _OPTIONAL_KEYS:
        if schema.get(key) is not None:
            out[key] = schema[key]
    if schema["type"] == "struct":
        out["fields"] = [{**normalized(field), "field": field["field"]} for field in schema.get("fields", ())]
    elif schema["type"] == "array":
        out["items"] = normalized(schema["items"])
    elif schema["type"] == "map":
        out["keys"], out["values"] = normalized(schema["keys"]), normalized(schema["values"])
    return out


def operating_schema(record: Any, part: str) -> Mapping[str, Any] | None:
    """The schema of the record's key or value (``part``); ``None`` when it has none (sink records have none)."""
    if isinstance(record, SourceRecord):
        return record.key_schema if part == "key" else record.value_schema
    return None


def with_schema(record: R, part: str, value: Any, schema: Mapping[str, Any] | None) -> R:
    """The record with its ``part`` (``key`` or ``value``) replaced by ``value`` whose schema is ``schema``."""
    if isinstance(record, SourceRecord):
        return replace(record, **{part: value, f"{part}_schema": schema})
    return replace(record, **{part: value})
