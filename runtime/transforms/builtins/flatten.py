"""Flatten, with Kafka Connect's semantics: nested maps of a schemaless key or value become top-level fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.parts import DataError, KeyOrValue, require_map
from headwater.sdk.config import ConfigDef, Importance, Type
from headwater.sdk.transforms import R

_KEPT = (bool, int, float, str, bytes, list)
"""The values Flatten copies as they are: Connect's primitives, bytes and arrays (maps inside a list stay nested)."""


class Flatten(KeyOrValue[R]):
    """Flatten a nested map: each field of a map-valued field becomes a top-level field named
    ``<outer><delimiter><inner>``, at any depth. Null fields and lists are kept as they are; a map with no fields
    leaves none; a tombstone passes unchanged. Decimals and timestamps are refused, as Kafka Connect refuses them
    without a schema, and so is a key or value that is not a map."""

    PURPOSE = "flattening"

    def config_def(self) -> ConfigDef:
        return ConfigDef().define(
            "delimiter",
            Type.STRING,
            ".",
            Importance.MEDIUM,
            "Put between the names of a nested field and the fields it is nested in to make its name; a later field "
            "with the same flattened name replaces an earlier one.",
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.delimiter: str = config["delimiter"]

    def apply(self, record: R) -> R | None:
        value = self.schemaless_value(record)
        if value is None:
            return record
        flat: dict[str, Any] = {}
        self._flatten(require_map(value, self.PURPOSE), "", flat)
        return self.new_record(record, flat)

    def _flatten(self, fields: Mapping[str, Any], prefix: str, flat: dict[str, Any]) -> None:
        for name, value in fields.items():
            flat_name = f"{prefix}{self.delimiter}{name}" if prefix else name
            if value is None or isinstance(value, _KEPT):
                flat[flat_name] = value
            elif isinstance(value, Mapping):
                self._flatten(value, flat_name, flat)
            else:
                raise DataError(
                    f"Flatten transformation was passed a value of type {type(value).__name__} (field {flat_name}) "
                    "which is not supported by Connect's data API without a schema"
                )
