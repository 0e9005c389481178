"""Built-in transformations on headers, with Kafka Connect's semantics: DropHeaders, InsertHeader, HeaderFrom."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from headwater.runtime.transforms.builtins.literals import UntypableLiteral, parse_literal
from headwater.runtime.transforms.builtins.parts import KeyOrValue, require_map
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type, one_of
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R, Transformation


def _non_empty(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "Empty list")


class DropHeaders(Transformation[R]):
    """Remove every header with one of the given names."""

    def config_def(self) -> ConfigDef:
        return ConfigDef().define(
            "headers", Type.LIST, REQUIRED, Importance.HIGH, "Header names to remove.", _non_empty
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.names = set(config["headers"])

    def apply(self, record: R) -> R | None:
        return replace(record, headers=tuple(header for header in record.headers if header[0] not in self.names))


class InsertHeader(Transformation[R]):
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

    def apply(self, record: R) -> R | None:
        return replace(record, headers=(*record.headers, (self.header, self.value)))


class HeaderFrom(KeyOrValue[R]):
    """Copy or move fields of the key or value map into headers."""

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
                one_of("copy", "move"),
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
        self.fields, self.headers = list(config["fields"]), list(config["headers"])
        if len(self.fields) != len(self.headers):
            raise ConfigError(
                "headers", ",".join(self.headers), "'fields' config must have the same number of elements"
            )
        self.move = config["operation"] == "move"

    def apply(self, record: R) -> R | None:
        fields = require_map(self.operating_value(record), "header move" if self.move else "header copy")
        added: list[tuple[str, Any]] = [
            (header, fields.get(field)) for field, header in zip(self.fields, self.headers, strict=True)
        ]
        record = replace(record, headers=(*record.headers, *added))
        if not self.move:
            return record
        return self.new_record(record, {name: item for name, item in fields.items() if name not in self.fields})
