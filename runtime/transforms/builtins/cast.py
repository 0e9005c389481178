"""Cast, with Kafka Connect's semantics: fields of the key or value map (or struct, with a schema), or the whole key
or value, cast to one of Connect's primitive types.

With a schema (a source record's ``key_schema`` or ``value_schema``) the schema changes with the value, as Kafka
Connect's ``Cast.applyWithSchema`` changes it: a cast field's schema becomes its target type, keeping whether it is
optional, with its default cast; the other fields stay as they are (their nulls taking their defaults with
``replace.null.with.default``); a whole-value cast keeps the schema's name, version, doc and parameters. Dates,
times and timestamps cast to numbers as their epoch days or milliseconds and to text as ``Values.dateFormatFor``
renders them; Decimals as Java's ``BigDecimal`` converts them."""

from __future__ import annotations

import base64
import decimal
from collections.abc import Callable, Mapping
from typing import Any

from headwater.runtime.transforms.builtins.fields import java_split
from headwater.runtime.transforms.builtins.numbers import (
    INT_BITS,
    float32,
    java_double_string,
    java_float_string,
    parse_boolean,
    parse_double,
    parse_float,
    parse_integer,
    truncate,
    wrap,
)
from headwater.runtime.transforms.builtins.parts import DataError, KeyOrValue, require_map, type_name
from headwater.runtime.transforms.builtins.schemas import DATE, DECIMAL, normalized, operating_schema, with_schema
from headwater.runtime.transforms.builtins.struct_casts import (
    LOGICAL_DATES,
    SCHEMA_TYPES,
    basics,
    float32_payload,
    from_decimal,
    iso_8601,
    java_type,
    java_value,
    require_struct,
)
from headwater.runtime.transforms.builtins.structs import NULLS_KEY, field_value, replaces_nulls
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R

OUTPUT_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")
"""The types Cast casts to."""

_OTHER_TYPES = ("bytes", "array", "map", "struct")
"""Connect's other types: valid type names, refused as a cast's target."""

_INPUT_TYPES = ("int8", "int16", "int32", "int64", "float", "double", "boolean", "string", "bytes")
"""The schema types Cast casts from (Kafka Connect's ``SUPPORTED_CAST_INPUT_TYPES``)."""

WHOLE_VALUE = ""
"""The spec's key for a cast of the whole key or value (a single type, no field)."""


def parse_spec(key: str, spec: list[str]) -> dict[str, str]:
    """``field:type`` pairs (or one type alone, for the whole value) as a map of field to type; a ConfigError
    for an empty spec, a bad pair, an unknown type or one Cast cannot cast to."""
    if not spec:
        raise ConfigError(key, "", "Must specify at least one field to cast.")
    casts: dict[str, str] = {}
    for mapping in spec:
        parts = [part.strip() for part in java_split(mapping, ":")]
        if len(parts) > 2:
            raise ConfigError(key, ",".join(spec), f"Invalid cast mapping: {mapping}")
        field, kind = (WHOLE_VALUE, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
        if kind.lower() not in OUTPUT_TYPES:
            reason = "does not support casting to" if kind.lower() in _OTHER_TYPES else "has no type"
            raise ConfigError(key, ",".join(spec), f"Cast {reason} {kind}; the types are {', '.join(OUTPUT_TYPES)}")
        casts[field] = kind.lower()
    if WHOLE_VALUE in casts and len(spec) > 1:
        raise ConfigError(key, ",".join(spec), "A cast of the entire value (a type alone) must be the spec's only cast")
    return casts


def _spec(key: str, value: Any) -> None:
    parse_spec(key, value)


class Cast(KeyOrValue[R]):
    """Cast fields of a map (or struct, with a schema), or the whole key or value, to another type, as Java casts:
    integers narrowed to their low-order bits, doubles truncated toward zero (saturating), text parsed as Java
    parses it (refused when it does not fit), numbers to boolean true unless their integer part is 0, bytes to
    base64 text. A tombstone passes unchanged. Without a schema a missing field is added as null, and maps, lists,
    decimals and timestamps cannot be cast. With a schema a field the schema lacks is left out; Decimals, dates,
    times and timestamps are cast (a whole-value cast of one is refused, as Kafka Connect's converters refuse its
    output); structs, maps and arrays cannot be cast, nor a struct with a default. Bytes cast only to string."""

    PURPOSE = "cast types"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "spec",
                Type.LIST,
                REQUIRED,
                Importance.HIGH,
                "The casts, as field:type pairs (field1:int32,field2:string) for fields of a map or struct, or one "
                "type alone to cast the whole key or value. The types are int8, int16, int32, int64, float32, "
                "float64, boolean and string.",
                _spec,
            )
            .define(*NULLS_KEY)
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.casts = parse_spec("spec", config["spec"])
        self.replace_null_with_default = replaces_nulls(config)

    def apply(self, record: R) -> R | None:
        schema = operating_schema(record, self.part)
        if schema is not None:
            return self.apply_with_schema(record, schema)
        value = self.operating_value(record)
        if value is None:
            return record
        if WHOLE_VALUE in self.casts:
            return self.new_record(record, cast(value, self.casts[WHOLE_VALUE]))
        updated = dict(require_map(value, self.PURPOSE))
        for field, kind in self.casts.items():
            updated[field] = cast(updated.get(field), kind)
        return self.new_record(record, updated)

    def apply_with_schema(self, record: R, schema: Mapping[str, Any]) -> R:
        """Kafka Connect's ``Cast.applyWithSchema``: the cast value and its new schema."""
        value = self.operating_value(record)
        if value is None:
            return record
        updated = self.updated_schema(schema)
        if WHOLE_VALUE in self.casts:
            return with_schema(record, self.part, cast_payload(schema, value, self.casts[WHOLE_VALUE]), updated)
        struct = require_struct(schema, value, self.PURPOSE)
        cast_struct: dict[str, Any] = {}
        for field in schema.get("fields", ()):
            current = field_value(struct, field, self.replace_null_with_default)
            kind = self.casts.get(field["field"])
            cast_struct[field["field"]] = current if kind is None else cast_payload(field, current, kind)
        return with_schema(record, self.part, cast_struct, updated)

    def updated_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """The schema of the cast value (Kafka Connect's ``Cast.getOrBuildSchema``)."""
        if WHOLE_VALUE in self.casts:
            whole = self.casts[WHOLE_VALUE]
            if schema.get("name") in (*LOGICAL_DATES, DECIMAL):
                # Kafka Connect keeps the logical type's name on the cast type; its converters then refuse the value
                raise DataError(
                    f"Cast keeps the schema name {schema['name']} on the {whole} it casts to, a logical type whose "
                    "values are not that: Kafka Connect's converters refuse the record"
                )
            updated = {"type": SCHEMA_TYPES[whole], **basics(schema)}
        else:
            if schema.get("type") != "struct":
                raise DataError(f"Cannot list fields on non-struct type {java_type(schema.get('type', ''))}")
            fields: list[dict[str, Any]] = []
            for field in schema.get("fields", ()):
                kind = self.casts.get(field["field"])
                if kind is None:
                    fields.append(dict(field))
                    continue
                cast_field = {"field": field["field"], "type": SCHEMA_TYPES[kind], "optional": field.get("optional")}
                if field.get("default") is not None:
                    cast_field["default"] = cast_payload(field, field["default"], kind)
                fields.append(cast_field)
            updated = {"type": "struct", **basics(schema), "fields": fields}
        updated["optional"] = bool(schema.get("optional"))
        if schema.get("default") is not None:
            updated["default"] = cast_payload(schema, schema["default"], self.casts.get(WHOLE_VALUE, "struct"))
        return normalized(updated)


def cast_payload(schema: Mapping[str, Any], payload: Any, kind: str) -> Any:
    """A payload of ``schema`` cast to ``kind`` as Kafka Connect's Cast casts a value with a schema (its
    ``castValueToType``), as the JsonConverter writes the result."""
    if payload is None:
        return None
    if schema["type"] not in _INPUT_TYPES:
        raise DataError(f"Cast transformation does not support casting from {java_type(schema['type'])}")
    name = schema.get("name")
    if name in LOGICAL_DATES and kind == "string":
        return iso_8601(payload * 86_400_000 if name == DATE else payload)
    value = java_value(schema, payload)
    if name == DECIMAL:
        return from_decimal(value, kind)
    if schema["type"] == "float" and kind == "string":
        return java_float_string(value)
    result = cast(value, kind)
    return float32_payload(result) if kind == "float32" else result


def cast(value: Any, kind: str) -> Any:
    """``value`` cast to ``kind`` (one of :data:`OUTPUT_TYPES`) as Kafka Connect's Cast casts a schemaless value."""
    if value is None:
        return None
    if isinstance(value, (decimal.Decimal, list, dict)) or not isinstance(value, (bool, int, float, str, bytes)):
        raise DataError(f"Cast transformation does not support casting from {type_name(value)}")
    try:
        if kind == "string":
            return _to_string(value)
        if isinstance(value, bytes):
            raise DataError(f"Cast transformation cannot cast bytes to {kind}, only to string")
        return _CASTS[kind](value)
    except ValueError:
        raise DataError(f"Cannot cast {value!r} to {kind}: it is not one, or out of its range") from None


def _to_int(bits: int) -> Callable[[Any], int]:
    def to_int(value: Any) -> int:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return wrap(value, bits)
        if isinstance(value, float):
            return truncate(value, bits)
        return parse_integer(value, bits)

    return to_int


def _to_float32(value: Any) -> float:
    if isinstance(value, str):
        return parse_float(value)
    return float32(float(value) if isinstance(value, bool) else value)


def _to_float64(value: Any) -> float:
    return parse_double(value) if isinstance(value, str) else float(value)


def _to_boolean(value: Any) -> bool:
    if isinstance(value, str):
        return parse_boolean(value)
    if isinstance(value, float):
        return truncate(value, 64) != 0
    return bool(value)


def _to_string(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_string(value)
    return str(value)


_CASTS: dict[str, Callable[[Any], Any]] = {
    **{kind: _to_int(bits) for kind, bits in INT_BITS.items()},
    "float32": _to_float32,
    "float64": _to_float64,
    "boolean": _to_boolean,
}
