"""Built-in transformations on the fields of a key or value, with Kafka Connect's semantics: InsertField and
ReplaceField (HoistField, ExtractField and ValueToKey in :mod:`.nesting`; MaskField, Flatten, Cast beside them).

Without a schema the key or value is a map; with one (a source record's ``key_schema``/``value_schema``) it is a
struct, the JsonConverter's payload of its schema, and each transformation gives the record the new struct's schema
as Kafka Connect's ``applyWithSchema`` builds it (:mod:`.structs`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.runtime.transforms.builtins.parts import (
    DataError,
    KeyOrValue,
    require_sink_record,
)
from headwater.runtime.transforms.builtins.schemas import TIMESTAMP, operating_schema, with_schema
from headwater.runtime.transforms.builtins.structs import (
    NULLS_KEY,
    Copies,
    Schema,
    SchemaMemo,
    copied,
    copies_of,
    fields_of,
    replaces_nulls,
    require_struct,
    struct_schema,
)
from headwater.runtime.transforms.records import Rewriting
from headwater.sdk.config import ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.records import SourceRecord
from headwater.sdk.transforms import R


def java_split(text: str, separator: str) -> list[str]:
    """``String.split`` as Java splits: trailing empty parts dropped (``"a:"`` is one part, ``":b"`` two)."""
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def non_empty(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "Empty list")


def _removed(replacement: str) -> Any:
    def check(key: str, value: Any) -> None:
        raise ConfigError(key, ",".join(value), f"Removed in Kafka Connect 4.0 (which ignores it): use {replacement}")

    return check


class InsertField(KeyOrValue[R], Rewriting[R]):
    """Insert the record's topic, partition, offset, timestamp or a static value as fields of the key or value map
    (replacing fields of the same names). A tombstone passes unchanged; a key or value that is not a map is refused.

    With a schema the fields are added after the struct's own, in the order above, to its schema too: optional
    unless the name ends in ``!``, the timestamp a Connect Timestamp; a name the struct already has is refused, as
    Kafka Connect refuses it (``InsertField.applyWithSchema``)."""

    PURPOSE = "field insertion"

    def config_def(self) -> ConfigDef:
        suffix = " Suffix it with ! to make the field required, ? to keep it optional (the default; for schemas)."
        return (
            ConfigDef()
            .define("topic.field", Type.STRING, None, Importance.MEDIUM, "Field name for the topic." + suffix)
            .define(
                "partition.field",
                Type.STRING,
                None,
                Importance.MEDIUM,
                "Field name for the Kafka partition, left out when the record has none (null, with a schema)." + suffix,
            )
            .define(
                "offset.field",
                Type.STRING,
                None,
                Importance.MEDIUM,
                "Field name for the Kafka offset: sink records only, a source record is refused." + suffix,
            )
            .define(
                "timestamp.field",
                Type.STRING,
                None,
                Importance.MEDIUM,
                "Field name for the record's timestamp (epoch milliseconds; a Connect Timestamp, with a schema), left "
                "out when it has none (null, with a schema)." + suffix,
            )
            .define("static.field", Type.STRING, None, Importance.MEDIUM, "Field name for static.value." + suffix)
            .define(
                "static.value",
                Type.STRING,
                None,
                Importance.MEDIUM,
                "The static field's value, as text; needed when static.field is set.",
            )
            .define(*NULLS_KEY)
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.optional: dict[str, bool] = {}  # by setting: a field's optional flag with a schema

        def name(key: str) -> str | None:  # one ! or ? suffix off; an empty name is a field named "", as in Kafka
            value = config.get(key)
            self.optional[key] = not (value and value[-1] == "!")
            return value[:-1] if value and value[-1] in "!?" else value

        self.topic_field, self.partition_field = name("topic.field"), name("partition.field")
        self.offset_field, self.timestamp_field = name("offset.field"), name("timestamp.field")
        self.static_field, self.static_value = name("static.field"), config.get("static.value")
        fields = (self.topic_field, self.partition_field, self.offset_field, self.timestamp_field, self.static_field)
        self._from_record = any(field is not None for field in fields[:4])
        if not self._from_record:
            self.rewrite = self._static_rewrite(self.rewrite)  # type: ignore[method-assign,assignment]
        if all(field is None for field in fields):
            raise ConfigError("topic.field", None, "No field insertion configured")
        if self.static_field is not None and self.static_value is None:
            raise ConfigError("static.value", None, "No value specified for static field: " + self.static_field)
        self.replace_null_with_default = replaces_nulls(config)
        self.updated_schema = SchemaMemo(self._updated_schema)

    rewrites_map = True

    def _static_rewrite(self, general: Callable[[R], R | None]) -> Callable[[R], R | None]:
        """:meth:`rewrite` for a static field alone, as a function with the settings at hand (looking them up is
        most of what it costs per record); a record whose part is not a schemaless map goes to ``general``."""
        field, static, value_part = self.static_field, self.static_value, self.part == "value"

        def rewrite(record: Any) -> Any:
            fields = record.value if value_part else record.key
            if type(fields) is not dict or (
                type(record) is SourceRecord and (record.value_schema if value_part else record.key_schema) is not None
            ):
                return general(record)
            fields[field] = static
            return record

        return rewrite

    def rewrite(self, record: R) -> R | None:
        schema = operating_schema(record, self.part)
        if schema is not None:
            return self.apply_with_schema(record, schema)
        updated = self.owned_map(record, self.PURPOSE)
        if updated is None:
            return record  # a tombstone passes as it is
        if self._from_record:
            if self.topic_field is not None:
                updated[self.topic_field] = record.topic
            if self.partition_field is not None and record.partition is not None:
                updated[self.partition_field] = record.partition
            if self.offset_field is not None:
                updated[self.offset_field] = require_sink_record(record, self.PURPOSE).offset
            if self.timestamp_field is not None and record.timestamp is not None:
                updated[self.timestamp_field] = record.timestamp
        if self.static_field is not None:
            updated[self.static_field] = self.static_value
        return record

    def apply_with_schema(self, record: R, schema: Schema) -> R | None:
        value = self.operating_value(record)
        if value is None:
            return record
        struct = require_struct(schema, value, self.PURPOSE)
        updated_schema, copies = self.updated_schema(schema)
        updated = copied(struct, copies, self.replace_null_with_default)
        if self.topic_field is not None:
            updated[self.topic_field] = record.topic
        if self.partition_field is not None:
            updated[self.partition_field] = record.partition
        if self.offset_field is not None:
            updated[self.offset_field] = require_sink_record(record, self.PURPOSE).offset
        if self.timestamp_field is not None:
            updated[self.timestamp_field] = record.timestamp  # a Timestamp's payload: epoch milliseconds
        if self.static_field is not None:
            updated[self.static_field] = self.static_value
        return with_schema(record, self.part, updated, updated_schema)

    def _updated_schema(self, schema: Schema) -> tuple[dict[str, Any], Copies]:
        inserted: tuple[tuple[str, str | None, dict[str, Any]], ...] = (
            ("topic.field", self.topic_field, {"type": "string"}),
            ("partition.field", self.partition_field, {"type": "int32"}),
            ("offset.field", self.offset_field, {"type": "int64"}),
            ("timestamp.field", self.timestamp_field, {"type": "int64", "name": TIMESTAMP, "version": 1}),
            ("static.field", self.static_field, {"type": "string"}),
        )
        added: list[tuple[str, Schema]] = [
            (name, {**kind, "optional": self.optional[key]}) for key, name, kind in inserted if name is not None
        ]
        declared: dict[str, Schema] = fields_of(schema)
        updated = struct_schema([*declared.items(), *added], schema)
        return updated, copies_of(zip(updated["fields"], declared.values(), strict=False))


class ReplaceField(KeyOrValue[R], Rewriting[R]):
    """Keep, drop and rename fields of the key or value map: a field is kept when it is not excluded and
    ``include`` is empty or names it, then renamed. A tombstone passes unchanged; a key or value that is not a map
    is refused. With a schema the struct's schema keeps the kept fields in their order, renamed, and its name,
    version, doc and parameters (Kafka Connect's ``ReplaceField.applyWithSchema``); two fields renamed to one name
    are refused."""

    PURPOSE = "field replacement"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("exclude", Type.LIST, "", Importance.MEDIUM, "Fields to drop; they win over include.")
            .define("include", Type.LIST, "", Importance.MEDIUM, "Fields to keep (all when empty).")
            .define(
                "renames",
                Type.LIST,
                "",
                Importance.MEDIUM,
                "Renames, as old:new pairs (old is the field's name in the input; include and exclude name it too).",
                _renames,
            )
            .define(
                "blacklist",
                Type.LIST,
                None,
                Importance.LOW,
                "Removed in Kafka Connect 4.0, which ignores it: refused here, use exclude.",
                _removed("exclude"),
            )
            .define(
                "whitelist",
                Type.LIST,
                None,
                Importance.LOW,
                "Removed in Kafka Connect 4.0, which ignores it: refused here, use include.",
                _removed("include"),
            )
            .define(*NULLS_KEY)
        )

    rewrites_map = True

    def configure(self, config: Mapping[str, Any]) -> None:
        self.exclude = set(config.get("exclude") or [])
        self.include = set(config.get("include") or [])
        self.renames = dict(java_split(item, ":") for item in config.get("renames") or [])
        targets = list(self.renames.values())
        # renames that can run one after another in place: no name both renamed and a new name, no new name twice
        self._renamed_in_place = not set(targets) & self.renames.keys() and len(set(targets)) == len(targets)
        self.reverse_renames = {new: old for old, new in self.renames.items()}
        self.replace_null_with_default = replaces_nulls(config)
        self.updated_schema = SchemaMemo(self._updated_schema)
        if not self.include and self._renamed_in_place:
            self.rewrite = self._usual_rewrite(self.rewrite)  # type: ignore[method-assign,assignment]

    def _usual_rewrite(self, general: Callable[[R], R | None]) -> Callable[[R], R | None]:
        """:meth:`rewrite` for the usual settings (no include, renames that can run one after another), as a
        function with the settings at hand: looking them up is most of what it costs per record. A record it
        does not change in place (not a schemaless map; a rename onto a kept field) goes to ``general``."""
        drop, moves, value_part = tuple(self.exclude), tuple(self.renames.items()), self.part == "value"

        def rewrite(record: Any) -> Any:
            fields = record.value if value_part else record.key
            if type(fields) is not dict or (
                type(record) is SourceRecord and (record.value_schema if value_part else record.key_schema) is not None
            ):
                return general(record)
            for name in drop:
                if name in fields:
                    del fields[name]
            for old, new in moves:
                if old in fields:
                    if new in fields:
                        return general(record)
                    fields[new] = fields.pop(old)
            return record

        return rewrite

    def rewrite(self, record: R) -> R | None:
        schema = operating_schema(record, self.part)
        if schema is not None:
            return self.apply_with_schema(record, schema)
        fields = self.owned_map(record, self.PURPOSE)
        if fields is None:
            return record
        exclude, include, renames = self.exclude, self.include, self.renames
        if not include and self._renamed_in_place:
            for name in exclude:
                fields.pop(name, None)
            for old, new in renames.items():
                if old in fields:
                    if new in fields:  # a rename onto a kept field: Kafka keeps either; keep the map's last
                        break
                    fields[new] = fields.pop(old)
            else:
                return record
        kept = {
            renames.get(name, name): field
            for name, field in fields.items()
            if name not in exclude and (not include or name in include)
        }
        self.set_part(record, kept)
        return record

    def apply_with_schema(self, record: R, schema: Schema) -> R | None:
        value = self.operating_value(record)
        if value is None:
            return record
        struct = require_struct(schema, value, self.PURPOSE)
        updated_schema, copies = self.updated_schema(schema)
        return with_schema(record, self.part, copied(struct, copies, self.replace_null_with_default), updated_schema)

    def _updated_schema(self, schema: Schema) -> tuple[dict[str, Any], Copies]:
        exclude, include, renames = self.exclude, self.include, self.renames
        declared = fields_of(schema)
        kept = [
            (renames.get(name, name), field)
            for name, field in declared.items()
            if name not in exclude and (not include or name in include)
        ]
        updated = struct_schema(kept, schema)
        pairs: list[tuple[Schema, Schema]] = []
        for field in updated["fields"]:
            # a field takes the value of the field renamed to its name, as Kafka Connect looks it up
            original = self.reverse_renames.get(field["field"], field["field"])
            if original not in declared:
                raise DataError(f"{original} is not a valid field name")
            pairs.append((field, declared[original]))
        return updated, copies_of(pairs)


def _renames(key: str, value: Any) -> None:
    for item in value:
        if len(java_split(item, ":")) != 2:
            raise ConfigError(key, ",".join(value), f"Invalid rename mapping: {item}")
