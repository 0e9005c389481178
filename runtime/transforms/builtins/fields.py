"""Built-in transformations on the fields of a key or value map, schemaless, with Kafka Connect's semantics:
InsertField, ReplaceField, HoistField, ExtractField, ValueToKey (and MaskField, Flatten, Cast beside them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.parts import (
    KeyOrValue,
    require_map,
    require_map_or_null,
    require_schemaless,
    require_sink_record,
)
from headwater.runtime.transforms.builtins.paths import FIELD_SYNTAX_VERSION, FieldPath, with_syntax_version
from headwater.runtime.transforms.records import rebuilt
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.records import SourceRecord
from headwater.sdk.transforms import R, Transformation

NULLS_DOC = (
    "Kafka Connect's choice, for values with schemas, between a null field's schema default (true) and null; "
    "accepted so that configs written for Kafka Connect run unchanged, and without effect: Headwater's built-ins "
    "handle schemaless keys and values only, and refuse a record whose key or value has a schema."
)
"""The documentation of ``replace.null.with.default``."""


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


class InsertField(KeyOrValue[R]):
    """Insert the record's topic, partition, offset, timestamp or a static value as fields of the key or value map
    (replacing fields of the same names). A tombstone passes unchanged; a key or value that is not a map is refused.
    """

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
                "Field name for the Kafka partition, left out when the record has none." + suffix,
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
                "Field name for the record's timestamp (epoch milliseconds), left out when it has none." + suffix,
            )
            .define("static.field", Type.STRING, None, Importance.MEDIUM, "Field name for static.value." + suffix)
            .define(
                "static.value",
                Type.STRING,
                None,
                Importance.MEDIUM,
                "The static field's value, as text; needed when static.field is set.",
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
        def name(key: str) -> str | None:  # one ! or ? suffix off; an empty name is a field named "", as in Kafka
            value = config.get(key)
            return value[:-1] if value and value[-1] in "!?" else value

        self.topic_field, self.partition_field = name("topic.field"), name("partition.field")
        self.offset_field, self.timestamp_field = name("offset.field"), name("timestamp.field")
        self.static_field, self.static_value = name("static.field"), config.get("static.value")
        fields = (self.topic_field, self.partition_field, self.offset_field, self.timestamp_field, self.static_field)
        if all(field is None for field in fields):
            raise ConfigError("topic.field", None, "No field insertion configured")
        if self.static_field is not None and self.static_value is None:
            raise ConfigError("static.value", None, "No value specified for static field: " + self.static_field)

    def apply(self, record: R) -> R | None:
        value = self.schemaless_value(record)
        if value is None:
            return record  # a tombstone passes as it is
        updated = dict(require_map(value, self.PURPOSE))
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
        return self.new_record(record, updated)


class ReplaceField(KeyOrValue[R]):
    """Keep, drop and rename fields of the key or value map: a field is kept when it is not excluded and
    ``include`` is empty or names it, then renamed. A tombstone passes unchanged; a key or value that is not a map
    is refused."""

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
            .define(
                "replace.null.with.default",
                Type.BOOLEAN,
                True,
                Importance.MEDIUM,
                NULLS_DOC,
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.exclude = set(config.get("exclude") or [])
        self.include = set(config.get("include") or [])
        self.renames = dict(java_split(item, ":") for item in config.get("renames") or [])

    def apply(self, record: R) -> R | None:
        value = self.schemaless_value(record)
        if value is None:
            return record
        fields = require_map(value, self.PURPOSE)
        exclude, include, renames = self.exclude, self.include, self.renames
        if include:
            kept = {
                renames.get(name, name): field
                for name, field in fields.items()
                if name in include and name not in exclude
            }
        elif renames:
            kept = {renames.get(name, name): field for name, field in fields.items() if name not in exclude}
        else:
            kept = {name: field for name, field in fields.items() if name not in exclude}
        return self.new_record(record, kept)


def _renames(key: str, value: Any) -> None:
    for item in value:
        if len(java_split(item, ":")) != 2:
            raise ConfigError(key, ",".join(value), f"Invalid rename mapping: {item}")


class HoistField(KeyOrValue[R]):
    """Wrap the key or value, whatever it is (a tombstone's null too), in a map with one field."""

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

    def apply(self, record: R) -> R | None:
        return self.new_record(record, {self.field: self.schemaless_value(record)})


class ExtractField(KeyOrValue[R]):
    """Replace the key or value map with one of its fields (a nested one with ``field.syntax.version=V2``); a
    missing field gives null, a tombstone passes unchanged, a key or value that is not a map is refused."""

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
            .define(
                "replace.null.with.default",
                Type.BOOLEAN,
                True,
                Importance.MEDIUM,
                NULLS_DOC,
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.path = FieldPath("field", config["field"], config[FIELD_SYNTAX_VERSION])

    def apply(self, record: R) -> R | None:
        value = require_map_or_null(self.schemaless_value(record), self.PURPOSE)
        return self.new_record(record, None if value is None else self.path.value_from(value))


class ValueToKey(Transformation[R]):
    """Replace the key with a map of fields of the value (null for a missing one). A tombstone, or a value that is
    not a map, is refused, as Kafka Connect refuses it."""

    PURPOSE = "copying fields from value to key"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "fields", Type.LIST, REQUIRED, Importance.HIGH, "Fields of the value the key is made of.", non_empty
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

    def apply(self, record: R) -> R | None:
        require_schemaless(record, "value", "ValueToKey")
        value = require_map(record.value, self.PURPOSE)
        key = {name: value.get(name) for name in self.fields}
        if isinstance(record, SourceRecord):
            return rebuilt(record, key=key, key_schema=None)
        return rebuilt(record, key=key)
