"""Connect values with a schema and Kafka's JsonConverter payloads, both ways: what the JSON converter writes for a
value of a schema (``convertToJson``) and reads back (``convertToConnect``).

In the payload a Decimal is its unscaled value's bytes in base64 (``decimal.format=BASE64``; a number is read too),
a Date the days since the epoch, a Time the milliseconds since midnight, a Timestamp the milliseconds since the epoch,
bytes base64, and a map with keys other than strings a list of ``[key, value]`` pairs. In Python they are the SDK's
values (:mod:`headwater.sdk.schemas`): ``decimal.Decimal``, ``datetime.date``, ``datetime.time``, a UTC
``datetime.datetime``, ``bytes``, a dict. A source may hand over a payload's own form (days, milliseconds) as well.
"""

from __future__ import annotations

import base64
import datetime
import decimal
from collections.abc import Mapping
from typing import Any

from headwater.runtime.converters.logical import EPOCH, EPOCH_DAY, day_millis, decimal_bytes, epoch_days, epoch_millis
from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import DATE_NAME, DECIMAL_NAME, SCALE, TIME_NAME, TIMESTAMP_NAME, Schema

_BYTES = (bytes, bytearray, memoryview)
_LOGICAL = frozenset({DECIMAL_NAME, DATE_NAME, TIME_NAME, TIMESTAMP_NAME})


def changes_values(schema: Any) -> bool:
    """Whether values of ``schema`` differ from its JSON payload anywhere (a logical type, bytes, a map with keys
    other than strings); when not, a value is its own payload."""
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    if schema.get("name") in _LOGICAL or kind == "bytes":
        return True
    if kind == "array":
        return changes_values(schema.get("items"))
    if kind == "map":
        keys = schema.get("keys") or {}
        return keys.get("type") != "string" or changes_values(keys) or changes_values(schema.get("values"))
    if kind == "struct":
        return any(changes_values(field) for field in schema.get("fields") or ())
    return False


def _scale(schema: Schema) -> int:
    return int((schema.get("parameters") or {}).get(SCALE, 0))


def to_payload(schema: Schema, value: Any) -> Any:
    """``value`` of ``schema`` as the JsonConverter's payload (a struct's keys its schema does not name are written
    as they are, as the converter has always written schemaless fields)."""
    if value is None:
        return None
    name, kind = schema.get("name"), schema.get("type")
    if name == DECIMAL_NAME:
        if isinstance(value, (decimal.Decimal, int, float)):
            return base64.b64encode(decimal_bytes(decimal.Decimal(value), _scale(schema))).decode("ascii")
        return value if isinstance(value, str) else base64.b64encode(bytes(value)).decode("ascii")
    if name == DATE_NAME:
        return epoch_days(value) if isinstance(value, datetime.date) else value
    if name == TIME_NAME:
        return day_millis(value) if isinstance(value, datetime.time) else value
    if name == TIMESTAMP_NAME:
        return epoch_millis(value) if isinstance(value, datetime.datetime) else value
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode("ascii") if isinstance(value, _BYTES) else value
    if kind == "array":
        return [to_payload(schema["items"], item) for item in value]
    if kind == "map":
        keys, values = schema["keys"], schema["values"]
        if not isinstance(value, Mapping):
            return value  # already the payload's [key, value] pairs
        if keys.get("type") == "string":
            return {k: to_payload(values, v) for k, v in value.items()}
        return [[to_payload(keys, k), to_payload(values, v)] for k, v in value.items()]
    if kind == "struct":
        if not isinstance(value, Mapping):
            raise ConnectError(f"a struct's value must be a mapping of its fields, got {type(value).__name__}")
        fields = {field["field"]: field for field in schema.get("fields", ())}
        return {key: to_payload(fields[key], item) if key in fields else item for key, item in value.items()}
    return value


def from_payload(schema: Any, payload: Any) -> Any:
    """A JsonConverter payload of ``schema`` as the Connect value (Python's types, above)."""
    if payload is None or not isinstance(schema, Mapping):
        return payload
    name, kind = schema.get("name"), schema.get("type")
    if name == DECIMAL_NAME:
        if isinstance(payload, (int, float)):
            return decimal.Decimal(str(payload))
        unscaled = int.from_bytes(base64.b64decode(payload, validate=True), "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-_scale(schema))
    if name == DATE_NAME:
        return EPOCH_DAY + datetime.timedelta(days=payload)
    if name == TIME_NAME:
        return (datetime.datetime.min + datetime.timedelta(milliseconds=payload)).time()
    if name == TIMESTAMP_NAME:
        return EPOCH + datetime.timedelta(milliseconds=payload)
    if kind == "bytes":
        return base64.b64decode(payload, validate=True)
    if kind == "array" and isinstance(payload, list):
        return [from_payload(schema.get("items"), item) for item in payload]
    if kind == "map" and isinstance(payload, dict):
        return {k: from_payload(schema.get("values"), v) for k, v in payload.items()}
    if kind == "map" and isinstance(payload, list):
        return {from_payload(schema.get("keys"), k): from_payload(schema.get("values"), v) for k, v in payload}
    if kind == "struct" and isinstance(payload, dict):
        fields = {field.get("field"): field for field in schema.get("fields") or () if isinstance(field, Mapping)}
        return {key: from_payload(fields.get(key), item) for key, item in payload.items()}
    return payload
