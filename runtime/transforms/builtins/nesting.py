"""Built-in transformations that nest a key or value in a field or take fields out, with Kafka Connect's semantics:
HoistField, ExtractField, ValueToKey.

Without a schema the key or value is a map; with one (a source record's ``key_schema``/``value_schema``) it is a
struct, the JsonConverter's payload of its schema, and each transformation gives the record the new struct's schema
as Kafka Connect's ``applyWithSchema`` builds it (:mod:`.structs`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.fields import non_empty
from headwater.runtime.transforms.builtins.parts import (
    DataError,
    KeyOrValue,
    require_map,
    require_map_or_null,
)
from headwater.runtime.transforms.builtins.paths import FIELD_SYNTAX_VERSION, FieldPath, with_syntax_version
from headwater.runtime.transforms.builtins.schemas import operating_schema, with_schema
from headwater.runtime.transforms.builtins.structs import (
    NULLS_KEY,
    Copies,
    Schema,
    SchemaMemo,
    copied,
    copies_of,
    field_at,
    fields_of,
    put,
    replaces_nulls,
    require_struct,
    struct_schema,
    value_at,
)
from headwater.runtime.transforms.records import Rewriting, rebuilt
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.records import SourceRecord
from headwater.sdk.transforms import R, Transformation


class HoistField(KeyOrValue[R], Rewriting[R]):
    """Wrap the key or value, whatever it is (a tombstone's null too), in a map with one field. With a schema, in a
    struct whose schema (required, unnamed) has that one field, of the key's or value's schema; null in a field
    that is not optional is refused (Kafka Connect's ``HoistField.apply``)."""

    def config_def(self) -> ConfigDef:
        return ConfigDef().define(
            "field",
            Type.STRING,
            REQUIRED,
            Importance.MEDIUM,
            "The one field of the new map, which holds the key or value (null too).",
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.field = config["field"]
        self.updated_schema = SchemaMemo(lambda schema: struct_schema([(self.field, schema)]))

    def rewrite(self, record: R) -> R | None:
        schema = operating_schema(record, self.part)
        if schema is not None:
            return self.apply_with_schema(record, schema)
        self.set_part(record, {self.field: self.operating_value(record)})
        return record

    def apply_with_schema(self, record: R, schema: Schema) -> R | None:
        updated_schema = self.updated_schema(schema)
        updated: dict[str, Any] = {}
        put(updated, updated_schema["fields"][0], self.operating_value(record))
        return with_schema(record, self.part, updated, updated_schema)


class ExtractField(KeyOrValue[R]):
    """Replace the key or value map with one of its fields (a nested one with ``field.syntax.version=V2``); a
    missing field gives null, a tombstone passes unchanged, a key or value that is not a map is refused.

    With a schema the key or value becomes the field's value with the field's schema (a tombstone: null with that
    schema); a field the schema does not have, or a schema that is no struct, is refused, as Kafka Connect refuses
    them (``ExtractField.apply``)."""

    PURPOSE = "field extraction"

    def config_def(self) -> ConfigDef:
        return with_syntax_version(
            ConfigDef()
            .define(
                "field",
                Type.STRING,
                REQUIRED,
                Importance.MEDIUM,
                "The field to extract: its path (see field.syntax.version); null when it is missing.",
            )
            .define(*NULLS_KEY)
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.path = FieldPath("field", config["field"], config[FIELD_SYNTAX_VERSION])
        self.replace_null_with_default = replaces_nulls(config)
        self.field_schema = SchemaMemo(lambda schema: field_at(schema, self.path.steps))

    def apply(self, record: R) -> R | None:
        schema = operating_schema(record, self.part)
        if schema is not None:
            return self.apply_with_schema(record, schema)
        value = require_map_or_null(self.operating_value(record), self.PURPOSE)
        return self.new_record(record, None if value is None else self.path.value_from(value))

    def apply_with_schema(self, record: R, schema: Schema) -> R | None:
        value = self.operating_value(record)
        struct = None if value is None else require_struct(schema, value, self.PURPOSE)
        field_schema = self.field_schema(schema)
        if field_schema is None:
            raise DataError(f"Unknown field: {self.path.text}")
        if struct is None:
            return with_schema(record, self.part, None, field_schema)
        extracted = value_at(schema, struct, self.path.steps, self.replace_null_with_default)
        return with_schema(record, self.part, extracted, field_schema)


class ValueToKey(Transformation[R]):
    """Replace the key with a map of fields of the value (null for a missing one). A tombstone, or a value that is
    not a map, is refused, as Kafka Connect refuses it.

    With a value schema the key is a struct whose schema (required, unnamed) has those fields, in the order given,
    with the value's schemas for them; a field the value's schema does not have is refused (Kafka Connect's
    ``ValueToKey.applyWithSchema``)."""

    PURPOSE = "copying fields from value to key"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "fields", Type.LIST, REQUIRED, Importance.HIGH, "Fields of the value the key is made of.", non_empty
            )
            .define(*NULLS_KEY)
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.fields = list(config["fields"])
        self.replace_null_with_default = replaces_nulls(config)
        self.key_schema = SchemaMemo(self._key_schema)

    def apply(self, record: R) -> R | None:
        schema = operating_schema(record, "value")
        if schema is not None:
            return self.apply_with_schema(record, schema)
        value = require_map(record.value, self.PURPOSE)
        key = {name: value.get(name) for name in self.fields}
        if isinstance(record, SourceRecord):
            return rebuilt(record, key=key, key_schema=None)
        return rebuilt(record, key=key)

    def apply_with_schema(self, record: R, schema: Schema) -> R | None:
        value = require_struct(schema, record.value, self.PURPOSE)
        key_schema, copies = self.key_schema(schema)
        return with_schema(record, "key", copied(value, copies, self.replace_null_with_default), key_schema)

    def _key_schema(self, schema: Schema) -> tuple[dict[str, Any], Copies]:
        declared = fields_of(schema)
        names = list(dict.fromkeys(self.fields))  # a field named twice once, as Kafka Connect 4.3's list settings
        for name in names:
            if name not in declared:
                raise DataError(f"Field does not exist: {name}")
        key_schema = struct_schema([(name, declared[name]) for name in names])
        return key_schema, copies_of((field, declared[field["field"]]) for field in key_schema["fields"])
