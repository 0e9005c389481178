"""Connect values and the JSON values of their JSON Schemas (:mod:`.json_schema_data`), both ways, by the rules of
Confluent's ``JsonSchemaData``: a Connect value (the SDK's Python values, :mod:`headwater.sdk.schemas`) becomes the
JSON value of its schema (:func:`to_json_value`) and back (:func:`to_connect_value`), each refusing a value its schema
does not admit and naming its JSONPath; Decimals are JSON numbers exactly (:func:`dumps`, :func:`loads`).
"""

from __future__ import annotations

import base64
import decimal
import json
from collections.abc import Mapping
from typing import Any

from headwater.runtime.converters.json_values import from_payload, to_payload
from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import DATE_NAME, DECIMAL_NAME, SCALE, TIME_NAME, TIMESTAMP_NAME, Schema

_INTS = {"int8": 2**7, "int16": 2**15, "int32": 2**31, "int64": 2**63}
"""Each integer type's bound: its values are in [-bound, bound)."""
_FLOATS = frozenset({"float", "double"})
_LOGICAL = frozenset({DATE_NAME, TIME_NAME, TIMESTAMP_NAME})
_BYTES = (bytes, bytearray, memoryview)


def entries(schema: Schema) -> bool:
    """Whether a map schema is written as an array of key-value objects (keys other than required strings)."""
    keys = schema["keys"]
    return bool(keys.get("type") != "string" or keys.get("optional"))


def _scale(schema: Schema) -> int:
    return int((schema.get("parameters") or {}).get(SCALE, 0))


def to_json_value(schema: Schema, value: Any, numeric_decimals: bool = False, path: str = "$") -> Any:
    """A Connect value of ``schema`` as the JSON value :func:`to_json_schema`'s schema describes (a null value
    with a default is the default, as Connect's ``Struct.get`` reads it); :class:`ConnectError` naming ``path``
    for a value the schema does not admit. A ``decimal.Decimal`` in the result is a JSON number."""
    if value is None:
        if schema.get("default") is not None:
            return to_json_value({**schema, "default": None}, schema["default"], numeric_decimals, path)
        if schema.get("optional"):
            return None
        raise ConnectError(f"{path}: null, but its schema is not optional and has no default")
    name, kind = schema.get("name"), schema.get("type")
    if name == DECIMAL_NAME:
        return _decimal_json(schema, value, numeric_decimals, path)
    if name in _LOGICAL:
        try:
            made = to_payload(schema, value)
        except (TypeError, ValueError, OverflowError):
            made = None
        if not isinstance(made, int) or isinstance(made, bool):
            raise ConnectError(f"{path}: {name.rpartition('.')[2]} wants a date, time or datetime, got {value!r}")
        return made
    if kind in _INTS:
        if not isinstance(value, int) or isinstance(value, bool) or not -_INTS[kind] <= value < _INTS[kind]:
            raise ConnectError(f"{path}: {value!r} is not an {kind}")
        return value
    if kind in _FLOATS:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConnectError(f"{path}: {value!r} is not a {kind}")
        return float(value)
    if kind == "bytes":
        if not isinstance(value, _BYTES):
            raise ConnectError(f"{path}: bytes wanted, got {type(value).__name__}")
        return to_payload(schema, value)
    if kind == "array":
        if not isinstance(value, (list, tuple)):
            raise ConnectError(f"{path}: a list wanted, got {type(value).__name__}")
        return [to_json_value(schema["items"], item, numeric_decimals, f"{path}[{i}]") for i, item in enumerate(value)]
    if kind == "map":
        return _map_json(schema, value, numeric_decimals, path)
    if kind == "struct":
        return _struct_json(schema, value, numeric_decimals, path)
    return value  # boolean, string: the validator checks them against the schema


def _decimal_json(schema: Schema, value: Any, numeric: bool, path: str) -> Any:
    if isinstance(value, (str, *_BYTES)) and not numeric:
        return to_payload(schema, value)  # already the payload's base64 or unscaled bytes
    if not isinstance(value, (decimal.Decimal, int)) or isinstance(value, bool):
        raise ConnectError(f"{path}: a decimal.Decimal wanted, got {type(value).__name__}")
    exact = decimal.Decimal(value)
    scale = _scale(schema)
    if not exact.is_finite():
        raise ConnectError(f"{path}: {exact} is no finite Decimal")
    with decimal.localcontext(decimal.Context(prec=decimal.MAX_PREC)):
        unscaled = exact.scaleb(scale)
        if unscaled != unscaled.to_integral_value():
            raise ConnectError(f"{path}: {exact} has more digits after the point than the Decimal's scale {scale}")
    return exact if numeric else to_payload(schema, exact)


def _map_json(schema: Schema, value: Any, numeric: bool, path: str) -> Any:
    if not isinstance(value, Mapping):
        raise ConnectError(f"{path}: a dict wanted, got {type(value).__name__}")
    keys, values = schema["keys"], schema["values"]
    if not entries(schema):
        made = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConnectError(f"{path}: the map's keys are strings, got {k!r}")
            made[k] = to_json_value(values, v, numeric, f"{path}[{k!r}]")
        return made
    return [
        {
            "key": to_json_value(keys, k, numeric, f"{path}.key"),
            "value": to_json_value(values, v, numeric, f"{path}[{k!r}]"),
        }
        for k, v in value.items()
    ]


def _struct_json(schema: Schema, value: Any, numeric: bool, path: str) -> Any:
    if not isinstance(value, Mapping):
        raise ConnectError(f"{path}: a struct's value is a dict of its fields, got {type(value).__name__}")
    fields = schema.get("fields", ())
    unknown = set(value) - {field["field"] for field in fields}
    if unknown:
        raise ConnectError(f"{path}: fields its schema does not name: {', '.join(sorted(map(str, unknown)))}")
    return {
        field["field"]: to_json_value(field, value.get(field["field"]), numeric, _field_path(path, field["field"]))
        for field in fields
    }


def _field_path(path: str, name: str) -> str:
    """JSONPath of a field, as jsonschema's ``json_path`` names it."""
    return f"{path}.{name}" if name.isidentifier() else f"{path}[{name!r}]"


def to_connect_value(schema: Schema, value: Any, path: str = "$") -> Any:
    """A JSON value (parsed with ``decimal.Decimal`` for non-integral numbers) of ``schema`` as the Connect value:
    the SDK's Python values; a null with a default reads as the default, as ``JsonSchemaData`` reads it.
    :class:`ConnectError` naming ``path`` for a value the schema does not admit."""
    if value is None:
        if schema.get("default") is not None:
            return schema["default"]
        if schema.get("optional"):
            return None
        raise ConnectError(f"{path}: null or missing, but its schema is not optional and has no default")
    name, kind = schema.get("name"), schema.get("type")
    try:
        if name == DECIMAL_NAME:
            if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
                return decimal.Decimal(value) if not isinstance(value, float) else decimal.Decimal(str(value))
            if isinstance(value, str):
                return from_payload(schema, value)
            raise TypeError(f"a number or a base64 string wanted, got {value!r}")
        if name in _LOGICAL or kind in _INTS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"an integer wanted, got {value!r}")
            if kind in _INTS and not -_INTS[kind] <= value < _INTS[kind]:
                raise TypeError(f"{value} does not fit {kind}")
            return from_payload(schema, value)
        if kind in _FLOATS:
            if not isinstance(value, (int, float, decimal.Decimal)) or isinstance(value, bool):
                raise TypeError(f"a number wanted, got {value!r}")
            return float(value)
        if kind == "boolean" and not isinstance(value, bool):
            raise TypeError(f"true or false wanted, got {value!r}")
        if kind == "string" and not isinstance(value, str):
            raise TypeError(f"a string wanted, got {value!r}")
        if kind == "bytes":
            if not isinstance(value, str):
                raise TypeError(f"a base64 string wanted, got {value!r}")
            return base64.b64decode(value, validate=True)
    except (TypeError, ValueError, ArithmeticError) as error:
        raise ConnectError(f"{path}: {error}") from None
    if kind == "array":
        if not isinstance(value, list):
            raise ConnectError(f"{path}: a JSON array wanted, got {type(value).__name__}")
        return [to_connect_value(schema["items"], item, f"{path}[{i}]") for i, item in enumerate(value)]
    if kind == "map":
        return _map_value(schema, value, path)
    if kind == "struct":
        if not isinstance(value, Mapping):
            raise ConnectError(f"{path}: a JSON object wanted, got {type(value).__name__}")
        return {
            field["field"]: to_connect_value(field, value.get(field["field"]), _field_path(path, field["field"]))
            for field in schema.get("fields", ())
        }
    return value


def _map_value(schema: Schema, value: Any, path: str) -> dict[Any, Any]:
    keys, values = schema["keys"], schema["values"]
    if not entries(schema):
        if not isinstance(value, Mapping):
            raise ConnectError(f"{path}: a map with string keys is a JSON object, got {type(value).__name__}")
        return {k: to_connect_value(values, v, f"{path}[{k!r}]") for k, v in value.items()}
    if not isinstance(value, list):
        raise ConnectError(f"{path}: a map with other keys is a JSON array of entries, got {type(value).__name__}")
    made = {}
    for entry in value:
        if not isinstance(entry, Mapping) or set(entry) != {"key", "value"}:
            raise ConnectError(f"{path}: a map entry is an object of key and value, got {entry!r}")
        key = to_connect_value(keys, entry["key"], f"{path}.key")
        made[key] = to_connect_value(values, entry["value"], f"{path}[{key!r}]")
    return made


# ---- JSON text ----------------------------------------------------------------------------------------------------


def dumps(value: Any) -> str:
    """JSON text of a JSON value that may hold ``decimal.Decimal`` numbers (written exactly, as Jackson writes a
    ``BigDecimal``), compact as Jackson writes it; :class:`ConnectError` for NaN or infinity."""
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError as error:
        raise ConnectError(f"a value JSON cannot hold: {error}") from None


def loads(text: bytes | str) -> Any:
    """A JSON value with non-integral numbers as ``decimal.Decimal`` (exact, for Decimal fields)."""
    return json.loads(text, parse_float=decimal.Decimal)
