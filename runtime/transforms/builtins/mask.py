"""MaskField, with Kafka Connect's semantics: fields of the key or value map (or struct, with a schema) replaced with
their type's empty value or with a replacement.

With a schema (a source record's ``key_schema`` or ``value_schema``) the schema stays as it is and each field's type
comes from it, as in Kafka Connect's ``MaskField.applyWithSchema``: the empty value of a Date, Time or Timestamp is the
epoch, of a Decimal zero (which the JsonConverter refuses unless the Decimal's scale is 0, and so does Headwater); a
replacement is read as an integer field's width or a float's, and as a Decimal with its own scale."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.fields import non_empty
from headwater.runtime.transforms.builtins.numbers import INT_BITS, decimal_to_long, float32, parse_decimal, wrap
from headwater.runtime.transforms.builtins.parts import DataError, KeyOrValue, require_map, type_name
from headwater.runtime.transforms.builtins.schemas import DECIMAL, operating_schema, with_schema
from headwater.runtime.transforms.builtins.struct_casts import (
    LOGICAL_DATES,
    decimal_payload,
    float32_payload,
    java_type,
    require_struct,
)
from headwater.runtime.transforms.builtins.structs import NULLS_KEY, field_value, replaces_nulls
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R


def _non_empty_string(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "String must be non-empty")


_EMPTY_PAYLOADS: dict[str, Any] = {
    **dict.fromkeys(INT_BITS, 0),
    "float": 0.0,
    "double": 0.0,
    "boolean": False,
    "string": "",
    "array": [],
    "map": {},
}
"""Each schema type's empty value, as a payload (Kafka Connect's ``MaskField`` has none for bytes and structs)."""

_EMPTY: dict[type, Any] = {
    bool: False,
    int: 0,
    float: 0.0,
    str: "",
    list: [],
    dict: {},
    decimal.Decimal: decimal.Decimal(0),
}


class MaskField(KeyOrValue[R]):
    """Replace fields' values of the key or value map (or struct, with a schema) with their type's empty value, or
    with a replacement. A null field stays null; bytes, and a boolean, map or list given a replacement, are refused,
    and so is a tombstone or a key or value that is not a map or struct (Kafka Connect refuses them too). With a
    schema, the schema is unchanged, a field the schema lacks is left out, and structs, and dates and times given a
    replacement, are refused too."""

    PURPOSE = "mask fields"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "fields",
                Type.LIST,
                REQUIRED,
                Importance.HIGH,
                "Fields to mask (a missing one is added as null without a schema, left out with one).",
                non_empty,
            )
            .define(
                "replacement",
                Type.STRING,
                None,
                Importance.LOW,
                "The masked value of string and number fields, read as the field's type (a number as Java's "
                "BigDecimal, an integer field keeping its integer part). Unset, each field takes its type's empty "
                "value: false, 0, 0.0, empty text, list or map, the epoch for a timestamp, date or time, zero for a "
                "Decimal (with a schema; refused, as Kafka Connect's converters refuse it, unless its scale is 0).",
                _non_empty_string,
            )
            .define(*NULLS_KEY)
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.fields = list(config["fields"])
        self.replacement: str | None = config.get("replacement")
        self.replace_null_with_default = replaces_nulls(config)

    def apply(self, record: R) -> R | None:
        schema = operating_schema(record, self.part)
        if schema is not None:
            return self.apply_with_schema(record, schema)
        updated = dict(require_map(self.operating_value(record), self.PURPOSE))  # a tombstone too, as in Kafka
        for name in self.fields:
            updated[name] = self._masked(updated.get(name))
        return self.new_record(record, updated)

    def apply_with_schema(self, record: R, schema: Mapping[str, Any]) -> R:
        """Kafka Connect's ``MaskField.applyWithSchema``: the struct's fields masked, the schema unchanged."""
        struct = require_struct(schema, self.operating_value(record), self.PURPOSE)
        masked: dict[str, Any] = {}
        for field in schema.get("fields", ()):
            current = field_value(struct, field, self.replace_null_with_default)
            masked[field["field"]] = self._masked_payload(field, current) if field["field"] in self.fields else current
        return with_schema(record, self.part, masked, schema)

    def _masked_payload(self, schema: Mapping[str, Any], value: Any) -> Any:
        if value is None:
            return None
        kind, name = schema["type"], schema.get("name")
        if self.replacement is None:
            if name == DECIMAL:
                return decimal_payload(schema, decimal.Decimal(0))
            if name in LOGICAL_DATES:
                return 0
            if kind not in _EMPTY_PAYLOADS:
                raise DataError(f"Cannot mask value of type: {java_type(kind)}")
            empty = _EMPTY_PAYLOADS[kind]
            return type(empty)() if isinstance(empty, (list, dict)) else empty
        if kind == "string":
            return self.replacement
        numeric = name == DECIMAL or (name not in LOGICAL_DATES and kind in (*INT_BITS, "float", "double"))
        if not numeric:
            raise DataError(f"Cannot mask value of type {name or java_type(kind)} with custom replacement.")
        try:
            number = parse_decimal(self.replacement)
        except ValueError:
            raise DataError(f"Unable to convert {self.replacement} (String) to a number") from None
        if name == DECIMAL:
            return decimal_payload(schema, number)
        if kind in INT_BITS:
            return wrap(decimal_to_long(number), INT_BITS[kind])
        return float32_payload(float32(float(number))) if kind == "float" else float(number)

    def _masked(self, value: Any) -> Any:
        if value is None:
            return None
        if self.replacement is None:
            if isinstance(value, datetime.datetime):
                return datetime.datetime.fromtimestamp(0, datetime.UTC)
            for kind, empty in _EMPTY.items():
                if isinstance(value, kind):
                    return type(empty)(empty) if isinstance(empty, (list, dict)) else empty
            raise DataError(f"Cannot mask value of type: {type_name(value)}")
        if isinstance(value, str):
            return self.replacement
        if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
            raise DataError(f"Cannot mask value of type {type_name(value)} with custom replacement.")
        try:
            number = parse_decimal(self.replacement)
        except ValueError:
            raise DataError(f"Unable to convert {self.replacement} (String) to a number") from None
        if isinstance(value, int):
            return decimal_to_long(number)
        return float(number) if isinstance(value, float) else number
