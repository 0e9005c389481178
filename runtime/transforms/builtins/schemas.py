"""Kafka Connect schemas as a source record carries them (the JsonConverter's schema JSON), for the built-ins that
read or change them: :func:`normalized` spells a schema out as the JsonConverter writes it, :func:`connect_value`
reads a payload as the Connect value it stands for, and :func:`with_schema` gives a record a new key or value with its
schema."""

from __future__ import annotations

import base64
import datetime
import decimal
import struct
from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.parts import DataError
from headwater.runtime.transforms.records import rebuilt
from headwater.sdk.records import SourceRecord
from headwater.sdk.schemas import AvroSchema
from headwater.sdk.transforms import R

TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
DECIMAL = "org.apache.kafka.connect.data.Decimal"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
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
    """The schema of the record's key or value (``part``); ``None`` when it has none (sink records: the built-ins
    read their keys and values without one). A source's :class:`~headwater.sdk.schemas.AvroSchema` is refused: the
    built-ins change Connect schemas only."""
    if isinstance(record, SourceRecord):
        schema = record.key_schema if part == "key" else record.value_schema
        if isinstance(schema, AvroSchema):
            raise DataError(
                f"this transformation reads the record's {part} schema, which is an AvroSchema; give the record a "
                "Kafka Connect schema (headwater.sdk.schemas) for the transformations that change schemas"
            )
        return schema
    return None


def with_schema(record: R, part: str, value: Any, schema: Mapping[str, Any] | None) -> R:
    """The record with its ``part`` (``key`` or ``value``) replaced by ``value`` whose schema is ``schema``."""
    if isinstance(record, SourceRecord):
        if part == "key":
            return rebuilt(record, key=value, key_schema=schema)
        return rebuilt(record, value=value, value_schema=schema)
    return rebuilt(record, key=value) if part == "key" else rebuilt(record, value=value)


def connect_value(schema: Mapping[str, Any], payload: Any) -> Any:
    """The Connect value a JsonConverter ``payload`` of ``schema`` stands for, as a schemaless Python value: a
    datetime for a Timestamp, Date or Time, a Decimal for a Decimal, bytes for bytes, a float32's value for a float;
    :class:`DataError` for a map with keys other than strings."""
    if payload is None:
        return None
    name, kind = schema.get("name"), schema["type"]
    if name in (TIMESTAMP, TIME):
        return _EPOCH + datetime.timedelta(milliseconds=payload)
    if name == DATE:
        return _EPOCH + datetime.timedelta(days=payload)
    if name == DECIMAL:
        unscaled = int.from_bytes(base64.b64decode(payload), "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-int((schema.get("parameters") or {}).get("scale", 0)))
    if kind == "bytes":
        return base64.b64decode(payload)
    if kind == "float":
        return struct.unpack(">f", struct.pack(">f", payload))[0]
    if kind == "array":
        return [connect_value(schema["items"], item) for item in payload]
    if kind == "map":
        if schema["keys"]["type"] != "string":
            raise DataError("Headwater cannot hold a map with keys other than strings without its schema")
        return {key: connect_value(schema["values"], item) for key, item in payload.items()}
    if kind == "struct":
        fields = {field["field"]: field for field in schema.get("fields", ())}
        return {key: connect_value(fields[key], item) if key in fields else item for key, item in payload.items()}
    return payload
