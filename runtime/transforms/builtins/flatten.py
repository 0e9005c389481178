"""Flatten, with Kafka Connect's semantics: nested maps of a schemaless key or value, or nested structs of one with a
schema, become top-level fields.

With a schema (a source record's ``key_schema`` or ``value_schema``) the schema is flattened as Kafka Connect's
``Flatten.applyWithSchema`` flattens it: a struct with the original's name, version, doc and parameters (required,
with no default), whose fields are the primitive, bytes and array fields at any depth, each optional when it or a
struct it is nested in is, each keeping its own default or taking the one a struct it is nested in gives it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.parts import DataError, KeyOrValue, require_map
from headwater.runtime.transforms.builtins.schemas import normalized, operating_schema, with_schema
from headwater.runtime.transforms.builtins.struct_casts import (
    PRIMITIVES,
    basics,
    java_type,
    require_struct,
)
from headwater.runtime.transforms.builtins.structs import field_value
from headwater.sdk.config import ConfigDef, Importance, Type
from headwater.sdk.transforms import R

_KEPT = (bool, int, float, str, bytes, list)
"""The values Flatten copies as they are: Connect's primitives, bytes and arrays (maps inside a list stay nested)."""
_KEPT_TYPES = (*PRIMITIVES, "array")
"""The schema types Flatten copies as they are, with a schema."""


class Flatten(KeyOrValue[R]):
    """Flatten a nested map (or struct, with a schema): each field of a map-valued field becomes a top-level field
    named ``<outer><delimiter><inner>``, at any depth. Null fields and lists are kept as they are; a map with no
    fields leaves none; a tombstone passes unchanged. Without a schema, decimals and timestamps are refused, as
    Kafka Connect refuses them without a schema, and so is a key or value that is not a map. With a schema, a null
    field takes its default, a null struct leaves its fields null (or its default's values), and map fields, two
    fields with the same flattened name and a key or value that is not a struct are refused."""

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
        schema = operating_schema(record, self.part)
        if schema is not None:
            return self.apply_with_schema(record, schema)
        value = self.operating_value(record)
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

    def apply_with_schema(self, record: R, schema: Mapping[str, Any]) -> R:
        """Kafka Connect's ``Flatten.applyWithSchema``: the flattened struct and its flattened schema."""
        value = self.operating_value(record)
        if value is None:
            return record
        struct = require_struct(schema, value, self.PURPOSE)
        fields: list[dict[str, Any]] = []
        self._flatten_schema(schema, "", fields, bool(schema.get("optional")), schema.get("default"))
        flat: dict[str, Any] = {}
        self._flatten_struct(schema, struct, "", flat)
        updated = normalized({"type": "struct", **basics(schema), "fields": fields})
        return with_schema(record, self.part, {field["field"]: flat.get(field["field"]) for field in fields}, updated)

    def _flatten_schema(
        self, schema: Mapping[str, Any], prefix: str, fields: list[dict[str, Any]], optional: bool, inherited: Any
    ) -> None:
        """Append the flattened fields of the struct ``schema`` to ``fields``; ``optional`` when a struct it is
        nested in is, ``inherited`` the default (a payload) the struct takes from those it is nested in."""
        for field in schema.get("fields", ()):
            name = f"{prefix}{self.delimiter}{field['field']}" if prefix else field["field"]
            field_optional = optional or bool(field.get("optional"))
            default = field.get("default")
            if default is None and isinstance(inherited, Mapping):
                default = inherited.get(field["field"])
            if field["type"] == "struct":
                self._flatten_schema(field, name, fields, field_optional, default)
                continue
            _require_kept(field, name)
            if any(existing["field"] == name for existing in fields):
                raise DataError(f"Cannot create field because of field name duplication {name}")
            flat_field = {"type": field["type"], **basics(field), "optional": field_optional, "field": name}
            if field["type"] == "array":
                flat_field["items"] = field["items"]
            if default is not None:
                flat_field["default"] = default
            fields.append(flat_field)

    def _flatten_struct(
        self, schema: Mapping[str, Any], struct: Mapping[str, Any], prefix: str, flat: dict[str, Any]
    ) -> None:
        for field in schema.get("fields", ()):
            name = f"{prefix}{self.delimiter}{field['field']}" if prefix else field["field"]
            value = field_value(struct, field, True)  # Kafka Connect's Struct.get: a null field takes its default
            if field["type"] != "struct":
                _require_kept(field, name)
                flat[name] = value
            elif value is not None:
                self._flatten_struct(field, value, name, flat)


def _require_kept(field: Mapping[str, Any], name: str) -> None:
    if field["type"] not in _KEPT_TYPES:
        raise DataError(
            f"Flatten transformation does not support {java_type(field['type'])} for record with schemas "
            f"(for field {name})."
        )
