"""Built-in transformations on the fields of a key or value map, schemaless, with Kafka Connect's semantics:
InsertField, ReplaceField, MaskField, HoistField, ExtractField, ValueToKey."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from headwater.runtime.transforms.builtins.parts import (
    DataError,
    KeyOrValue,
    require_map,
    require_map_or_null,
    require_sink_record,
    type_name,
)
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.records import SinkRecord, SourceRecord
from headwater.sdk.transforms import R, Transformation


def _non_empty(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "Empty list")


class InsertField(KeyOrValue[R]):
    """Insert the record's topic, partition, offset, timestamp or a static value as fields."""

    PURPOSE = "field insertion"

    def config_def(self) -> ConfigDef:
        doc = "Field name for the record's {}; suffix with ! to make it required, ? for optional (the default)."
        return (
            ConfigDef()
            .define("topic.field", Type.STRING, None, Importance.MEDIUM, doc.format("topic"))
            .define("partition.field", Type.STRING, None, Importance.MEDIUM, doc.format("Kafka partition"))
            .define("offset.field", Type.STRING, None, Importance.MEDIUM, doc.format("Kafka offset (sinks only)"))
            .define("timestamp.field", Type.STRING, None, Importance.MEDIUM, doc.format("timestamp"))
            .define("static.field", Type.STRING, None, Importance.MEDIUM, "Field name for a static value.")
            .define("static.value", Type.STRING, None, Importance.MEDIUM, "The static field's value.")
            .define(
                "replace.null.with.default",
                Type.BOOLEAN,
                True,
                Importance.MEDIUM,
                "Whether a null field with a schema default takes the default (values with schemas).",
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        def name(key: str) -> str | None:
            value = config.get(key)
            return value.rstrip("!?") if value else None

        self.topic_field, self.partition_field = name("topic.field"), name("partition.field")
        self.offset_field, self.timestamp_field = name("offset.field"), name("timestamp.field")
        self.static_field, self.static_value = name("static.field"), config.get("static.value")
        if not any((self.topic_field, self.partition_field, self.offset_field, self.timestamp_field)) and (
            self.static_field is None
        ):
            raise ConfigError("topic.field", None, "No field insertion configured")
        if self.static_field is not None and self.static_value is None:
            raise ConfigError("static.value", None, "No value specified for static field: " + self.static_field)

    def apply(self, record: R) -> R | None:
        value = self.operating_value(record)
        if value is None:
            return record  # a tombstone passes as it is
        updated = dict(require_map(value, self.PURPOSE))
        if self.topic_field:
            updated[self.topic_field] = record.topic
        if self.partition_field and record.partition is not None:
            updated[self.partition_field] = record.partition
        if self.offset_field:
            updated[self.offset_field] = require_sink_record(record, self.PURPOSE).offset
        if self.timestamp_field and record.timestamp is not None:
            updated[self.timestamp_field] = record.timestamp
        if self.static_field:
            updated[self.static_field] = self.static_value
        return self.new_record(record, updated)


class ReplaceField(KeyOrValue[R]):
    """Keep, drop and rename fields."""

    PURPOSE = "field replacement"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("exclude", Type.LIST, "", Importance.MEDIUM, "Fields to drop; they win over include.")
            .define("include", Type.LIST, "", Importance.MEDIUM, "Fields to keep (all when empty).")
            .define("renames", Type.LIST, "", Importance.MEDIUM, "Renames, as old:new pairs.", _renames)
            .define("blacklist", Type.LIST, None, Importance.LOW, "Deprecated: use exclude.")
            .define("whitelist", Type.LIST, None, Importance.LOW, "Deprecated: use include.")
            .define(
                "replace.null.with.default",
                Type.BOOLEAN,
                True,
                Importance.MEDIUM,
                "Whether a null field with a schema default takes the default (values with schemas).",
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.exclude = set(config.get("blacklist") or config.get("exclude") or [])
        self.include = set(config.get("whitelist") or config.get("include") or [])
        self.renames = dict(item.split(":", 1) for item in config.get("renames") or [])

    def apply(self, record: R) -> R | None:
        value = self.operating_value(record)
        if value is None:
            return record
        kept = {
            self.renames.get(name, name): field
            for name, field in require_map(value, self.PURPOSE).items()
            if name not in self.exclude and (not self.include or name in self.include)
        }
        return self.new_record(record, kept)


def _renames(key: str, value: Any) -> None:
    for item in value:
        old, colon, new = item.partition(":")
        if not colon or not old or not new:
            raise ConfigError(key, value, f"Invalid rename mapping: {item}")


_EMPTY: dict[type, Any] = {
    bool: False,
    int: 0,
    float: 0.0,
    str: "",
    list: [],
    dict: {},
    decimal.Decimal: decimal.Decimal(0),
    bytes: b"",
}


class MaskField(KeyOrValue[R]):
    """Replace fields' values with their type's empty value, or with a replacement."""

    PURPOSE = "mask fields"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("fields", Type.LIST, REQUIRED, Importance.HIGH, "Fields to mask.", _non_empty)
            .define("replacement", Type.STRING, None, Importance.LOW, "The masked value (the empty value by default).")
            .define(
                "replace.null.with.default",
                Type.BOOLEAN,
                True,
                Importance.MEDIUM,
                "Whether a null field with a schema default takes the default (values with schemas).",
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.fields = list(config["fields"])
        self.replacement: str | None = config.get("replacement")

    def apply(self, record: R) -> R | None:
        value = self.operating_value(record)
        if value is None:
            return record
        updated = dict(require_map(value, self.PURPOSE))
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
        try:
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, int):
                return int(self.replacement)
            if isinstance(value, float):
                return float(self.replacement)
            if isinstance(value, decimal.Decimal):
                return decimal.Decimal(self.replacement)
            if isinstance(value, str):
                return self.replacement
        except (ValueError, decimal.InvalidOperation):
            raise DataError(f"Unable to convert {self.replacement} ({type_name(self.replacement)}) to number") from None
        raise DataError(f"Cannot mask value of type {type_name(value)} with custom replacement.")


class HoistField(KeyOrValue[R]):
    """Wrap the key or value in a map with one field."""

    def config_def(self) -> ConfigDef:
        return ConfigDef().define("field", Type.STRING, REQUIRED, Importance.MEDIUM, "The field the data goes into.")

    def configure(self, config: Mapping[str, Any]) -> None:
        self.field = config["field"]

    def apply(self, record: R) -> R | None:
        return self.new_record(record, {self.field: self.operating_value(record)})


class ExtractField(KeyOrValue[R]):
    """Replace the key or value map with one of its fields."""

    PURPOSE = "field extraction"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("field", Type.STRING, REQUIRED, Importance.MEDIUM, "The field to extract.")
            .define(
                "replace.null.with.default",
                Type.BOOLEAN,
                True,
                Importance.MEDIUM,
                "Whether a null field with a schema default takes the default (values with schemas).",
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.field = config["field"]

    def apply(self, record: R) -> R | None:
        value = require_map_or_null(self.operating_value(record), self.PURPOSE)
        return self.new_record(record, None if value is None else value.get(self.field))


class ValueToKey(Transformation[R]):
    """Replace the key with a map of fields of the value."""

    PURPOSE = "copying fields from value to key"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "fields", Type.LIST, REQUIRED, Importance.HIGH, "Fields of the value the key is made of.", _non_empty
            )
            .define(
                "replace.null.with.default",
                Type.BOOLEAN,
                True,
                Importance.MEDIUM,
                "Whether a null field with a schema default takes the default (values with schemas).",
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.fields = list(config["fields"])

    def apply(self, record: R) -> R | None:
        value = require_map(record.value, self.PURPOSE)
        key = {name: value.get(name) for name in self.fields}
        if isinstance(record, SourceRecord):
            return replace(record, key=key, key_schema=None)
        assert isinstance(record, SinkRecord)
        return replace(record, key=key)
