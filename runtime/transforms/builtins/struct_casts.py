"""What Cast, MaskField and Flatten share for keys and values with a schema (a source record's ``key_schema`` or
``value_schema``, the JsonConverter's schema JSON, and its payload): a struct's field values with their schema
defaults, the schema basics Kafka Connect copies (``SchemaUtil.copySchemaBasics``), and Java's conversions of
Connect values, written back as the JsonConverter writes them: a float32 as ``Float.toString`` spells it, a Decimal
as base64 of its unscaled two's complement bytes, refused when its scale is not the schema's (as the converter
refuses it)."""

from __future__ import annotations

import base64
import decimal
import math
from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.dates import JavaDateFormat
from headwater.runtime.transforms.builtins.numbers import INT_BITS, decimal_to_long, float32, java_float_string, wrap
from headwater.runtime.transforms.builtins.parts import DataError
from headwater.runtime.transforms.builtins.schemas import DATE, DECIMAL, TIME, TIMESTAMP, connect_value

LOGICAL_DATES = (DATE, TIME, TIMESTAMP)
PRIMITIVES = ("int8", "int16", "int32", "int64", "float", "double", "boolean", "string", "bytes")
"""Connect's primitive types as the JsonConverter names them (``float`` is FLOAT32, ``double`` FLOAT64)."""
SCHEMA_TYPES = {**{kind: kind for kind in PRIMITIVES}, "float32": "float", "float64": "double"}
"""A type of Cast's spec (Connect's ``Schema.Type`` names) as the JsonConverter names it."""
_JAVA_NAMES = {"float": "FLOAT32", "double": "FLOAT64"}
_DAY_MS = 86_400_000
_ISO_TIME = JavaDateFormat("HH:mm:ss.SSS'Z'")
_ISO_DATE = JavaDateFormat("yyyy-MM-dd")
_ISO_TIMESTAMP = JavaDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")


def java_type(kind: str) -> str:
    """A JsonConverter type name as Kafka Connect's messages spell it (``FLOAT32`` for ``float``)."""
    return _JAVA_NAMES.get(kind, kind.upper())


def basics(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The name, version, doc and parameters of ``schema``, the keys ``SchemaUtil.copySchemaBasics`` copies."""
    return {key: schema[key] for key in ("name", "version", "doc", "parameters") if schema.get(key) is not None}


def require_struct(schema: Mapping[str, Any], value: Any, purpose: str) -> Mapping[str, Any]:
    """``value`` when ``schema`` is a struct's and ``value`` its payload; else Kafka Connect's
    ``Requirements.requireStruct`` error."""
    if schema.get("type") != "struct" or not isinstance(value, Mapping):
        found = "null" if value is None else f"{java_type(schema.get('type', ''))} value"
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {found}")
    return value


def float32_payload(value: float) -> float:
    """A float32 as the JsonConverter writes it (``Float.toString``'s digits), read back as a Python float."""
    if math.isnan(value) or math.isinf(value):
        return value
    return float(java_float_string(float32(value)))


def decimal_payload(schema: Mapping[str, Any], value: decimal.Decimal) -> str:
    """A Decimal's payload for ``schema``: base64 of its unscaled value's two's complement bytes; a
    :class:`DataError` when its scale is not the schema's (the JsonConverter, ``Decimal.fromLogical``, refuses it)."""
    scale = int((schema.get("parameters") or {}).get("scale", 0))
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int) or -exponent != scale:
        raise DataError(
            f"Decimal value has mismatching scale for given Decimal schema. Schema has scale {scale}, value has "
            f"scale {-exponent if isinstance(exponent, int) else 'none'}: Kafka Connect's converters refuse it"
        )
    unscaled = int(value.scaleb(scale))
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def iso_8601(millis: int) -> str:
    """A Date, Time or Timestamp as Kafka Connect's ``Values.dateFormatFor`` renders it (in UTC): an instant
    before 1970-01-02 as a time, a midnight as a date, any other as a timestamp."""
    if millis < _DAY_MS:
        return _ISO_TIME.format(millis)
    return (_ISO_DATE if millis % _DAY_MS == 0 else _ISO_TIMESTAMP).format(millis)


def from_decimal(value: decimal.Decimal, target: str) -> Any:
    """A Decimal cast to ``target`` (one of Cast's types) as Java's ``BigDecimal`` converts it."""
    if target == "string":
        return str(value)  # Python's and BigDecimal's toString both follow the decimal spec's to-scientific-string
    if target in INT_BITS:
        return wrap(int(value), INT_BITS[target])
    if target == "boolean":
        return decimal_to_long(value) != 0
    return float32_payload(float(value)) if target == "float32" else float(value)


def java_value(schema: Mapping[str, Any], payload: Any) -> Any:
    """The value Kafka Connect holds for a primitive payload, as the schemaless casts take it: bytes decoded, a
    float32 rounded to float32, a double a float, a Decimal a :class:`decimal.Decimal`; Date, Time and Timestamp
    stay their epoch numbers (``Date.fromLogical`` and the others)."""
    kind = schema["type"]
    if schema.get("name") == DECIMAL:
        return connect_value(schema, payload)
    if kind == "bytes":
        return base64.b64decode(payload)
    if kind == "float":
        return float32(float(payload))
    return float(payload) if kind == "double" else payload
