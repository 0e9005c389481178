"""Built-in transformations on headers, with Kafka Connect's semantics: DropHeaders, InsertHeader, HeaderFrom."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.literals import UntypableLiteral, parse_literal
from headwater.runtime.transforms.builtins.parts import DataError, KeyOrValue, require_map
from headwater.runtime.transforms.builtins.schemas import connect_value, normalized, operating_schema, with_schema
from headwater.runtime.transforms.builtins.structs import NULLS_KEY, replaces_nulls
from headwater.runtime.transforms.records import Rewriting, rebuilt
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type, one_of
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R


def _non_empty(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "Empty list")


class DropHeaders(Rewriting[R]):
    """Remove every header with one of the given names."""

    def config_def(self) -> ConfigDef:
        return ConfigDef().define(
            "headers", Type.LIST, REQUIRED, Importance.HIGH, "Header names to remove.", _non_empty
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.names = set(config["headers"])

    def rewrite(self, record: R) -> R | None:
        record.headers = tuple(header for header in record.headers if header[0] not in self.names)
        return record


class InsertHeader(Rewriting[R]):
    """Add a header with a literal value."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("header", Type.STRING, REQUIRED, Importance.HIGH, "The header's name.")
            .define("value.literal", Type.STRING, REQUIRED, Importance.HIGH, "The header's value, as text.")
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.header = config["header"]
        try:
            self.value = parse_literal(config["value.literal"])
        except UntypableLiteral as error:
            raise ConfigError(
                "value.literal",
                config["value.literal"],
                f"Headwater cannot type this literal as Kafka Connect does: {error}",
            ) from None

    def rewrite(self, record: R) -> R | None:
        record.headers = (*record.headers, (self.header, self.value))
        return record


class HeaderFrom(KeyOrValue[R]):
    """Copy or move fields of the key or value map (or struct, with a schema) into headers, one header per field."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("fields", Type.LIST, REQUIRED, Importance.HIGH, "Fields to copy or move.", _non_empty)
            .define("headers", Type.LIST, REQUIRED, Importance.HIGH, "Header names, one per field.", _non_empty)
            .define(
                "operation",
                Type.STRING,
                REQUIRED,
                Importance.HIGH,
                "copy: the fields stay in the key or value; move: they are removed from it.",
                one_of("move", "copy", case_sensitive=True),
            )
            .define(*NULLS_KEY)
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.fields, self.headers = list(config["fields"]), list(config["headers"])
        if len(self.fields) != len(self.headers):
            raise ConfigError(
                "headers", ",".join(self.headers), "'fields' config must have the same number of elements"
            )
        self.move = config["operation"] == "move"
        self.replace_null_with_default = replaces_nulls(config)

    def apply(self, record: R) -> R | None:
        purpose = "header move" if self.move else "header copy"
        schema = operating_schema(record, self.part)
        if schema is not None and schema.get("type") != "struct":
            raise DataError(f"Only Struct objects supported for [{purpose}], found: {schema.get('type')}")
        fields = require_map(self.operating_value(record), purpose)
        pairs = zip(self.fields, self.headers, strict=True)
        added: list[tuple[str, Any]] = [(header, self._field(fields, schema, name)) for name, header in pairs]
        record = rebuilt(record, headers=(*record.headers, *added))
        if not self.move:
            return record
        remaining = {name: item for name, item in fields.items() if name not in self.fields}
        if schema is None:
            return self.new_record(record, remaining)
        # Kafka Connect's moved-from schema keeps the name, version, doc and parameters, not optional or default
        basics = {key: schema[key] for key in ("name", "version", "doc", "parameters") if key in schema}
        kept = [field for field in schema.get("fields", ()) if field["field"] not in self.fields]
        return with_schema(record, self.part, remaining, normalized({"type": "struct", **basics, "fields": kept}))

    def _field(self, fields: Mapping[str, Any], schema: Mapping[str, Any] | None, name: str) -> Any:
        if schema is None:
            return fields.get(name)
        declared = {field["field"]: field for field in schema.get("fields", ())}
        if name not in declared:
            raise DataError(f"{name} is not a valid field name")
        value = fields.get(name)
        if value is None and self.replace_null_with_default:
            value = declared[name].get("default")
        return connect_value(declared[name], value)
