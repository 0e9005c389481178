"""Cast, with Kafka Connect's semantics: fields of a schemaless key or value map, or the whole key or value, cast to
one of Connect's primitive types."""

from __future__ import annotations

import base64
import decimal
from collections.abc import Callable, Mapping
from typing import Any

from headwater.runtime.transforms.builtins.fields import NULLS_DOC, java_split
from headwater.runtime.transforms.builtins.numbers import (
    INT_BITS,
    float32,
    java_double_string,
    parse_boolean,
    parse_double,
    parse_float,
    parse_integer,
    truncate,
    wrap,
)
from headwater.runtime.transforms.builtins.parts import DataError, KeyOrValue, require_map, type_name
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R

OUTPUT_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")
"""The types Cast casts to."""

_OTHER_TYPES = ("bytes", "array", "map", "struct")
"""Connect's other types: valid type names, refused as a cast's target."""

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
    """Cast fields of a map, or the whole key or value, to another type, as Java casts: integers narrowed to their
    low-order bits, doubles truncated toward zero (saturating), text parsed as Java parses it (refused when it does
    not fit), numbers to boolean true unless their integer part is 0, bytes to base64 text. A missing field is added
    as null; a tombstone passes unchanged. Maps, lists, decimals and timestamps cannot be cast, and bytes only to
    string."""

    PURPOSE = "cast types"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "spec",
                Type.LIST,
                REQUIRED,
                Importance.HIGH,
                "The casts, as field:type pairs (field1:int32,field2:string) for fields of a map, or one type alone "
                "to cast the whole key or value. The types are int8, int16, int32, int64, float32, float64, boolean "
                "and string.",
                _spec,
            )
            .define(
                "replace.null.with.default",
                Type.BOOLEAN,
                True,
                Importance.MEDIUM,
                NULLS_DOC,
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.casts = parse_spec("spec", config["spec"])

    def apply(self, record: R) -> R | None:
        value = self.schemaless_value(record)
        if value is None:
            return record
        if WHOLE_VALUE in self.casts:
            return self.new_record(record, cast(value, self.casts[WHOLE_VALUE]))
        updated = dict(require_map(value, self.PURPOSE))
        for field, kind in self.casts.items():
            updated[field] = cast(updated.get(field), kind)
        return self.new_record(record, updated)


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
