"""MaskField, with Kafka Connect's semantics: fields of a schemaless key or value map replaced with their type's
empty value or with a replacement."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.fields import NULLS_DOC, non_empty
from headwater.runtime.transforms.builtins.numbers import decimal_to_long, parse_decimal
from headwater.runtime.transforms.builtins.parts import DataError, KeyOrValue, require_map, type_name
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R


def _non_empty_string(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "String must be non-empty")


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
    """Replace fields' values of the key or value map with their type's empty value, or with a replacement. A null
    field stays null; bytes, and a boolean, map or list given a replacement, are refused, and so is a tombstone or
    a key or value that is not a map (Kafka Connect refuses them too)."""

    PURPOSE = "mask fields"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "fields",
                Type.LIST,
                REQUIRED,
                Importance.HIGH,
                "Fields to mask (a missing one is added as null).",
                non_empty,
            )
            .define(
                "replacement",
                Type.STRING,
                None,
                Importance.LOW,
                "The masked value of string and number fields, read as the field's type (a number as Java's "
                "BigDecimal, an integer field keeping its integer part). Unset, each field takes its type's empty "
                "value: false, 0, 0.0, empty text, list or map, the epoch for a timestamp.",
                _non_empty_string,
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
        self.fields = list(config["fields"])
        self.replacement: str | None = config.get("replacement")

    def apply(self, record: R) -> R | None:
        updated = dict(require_map(self.schemaless_value(record), self.PURPOSE))  # a tombstone too, as in Kafka
        for name in self.fields:
            updated[name] = self._masked(updated.get(name))
        return self.new_record(record, updated)

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
