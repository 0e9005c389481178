"""SetSchemaMetadata, with Kafka Connect's semantics: set the name and version of a key's or value's schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.parts import DataError, KeyOrValue
from headwater.runtime.transforms.builtins.schemas import normalized, operating_schema, with_schema
from headwater.runtime.transforms.builtins.structs import NULLS_KEY, replaces_nulls
from headwater.sdk.config import ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R


class SetSchemaMetadata(KeyOrValue[R]):
    """Set the name and/or version of the key's or value's schema; the data is unchanged. A record without a
    schema (every sink record, a source record without ``key_schema``/``value_schema``) fails, as it does in Kafka
    Connect; so does one whose schema is not a struct (Kafka Connect 4.3 fails on those too)."""

    PURPOSE = "updating schema metadata"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("schema.name", Type.STRING, None, Importance.HIGH, "The schema's new name (unchanged if unset).")
            .define("schema.version", Type.INT, None, Importance.HIGH, "The schema's new version (unchanged if unset).")
            .define(*NULLS_KEY)
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.name: str | None = config.get("schema.name")
        self.version: int | None = config.get("schema.version")
        self.replace_null_with_default = replaces_nulls(config)
        if self.name is None and self.version is None:
            raise ConfigError("schema.name", None, "Neither schema name nor version configured")

    def apply(self, record: R) -> R | None:
        schema = operating_schema(record, self.part)
        if schema is None and self.operating_value(record) is None:
            return record  # a null without a schema passes, as in Kafka Connect
        if schema is None:
            raise DataError(f"Schema required for [{self.PURPOSE}]")
        if schema.get("type") != "struct":
            raise DataError("Cannot list fields on non-struct type")
        updated = normalized(schema)
        if self.name is not None:
            updated["name"] = self.name
        if self.version is not None:
            updated["version"] = self.version
        value = self.operating_value(record)
        if isinstance(value, Mapping) and self.replace_null_with_default:
            defaults = {field["field"]: field.get("default") for field in updated["fields"]}
            value = {name: defaults.get(name) if item is None else item for name, item in value.items()}
        return with_schema(record, self.part, value, updated)
