"""A Single Message Transform shipped with the connector: ``{{ cookiecutter.project_slug }}-tag`` in a connector
config's ``transforms.<alias>.type`` (registered under the ``headwater.transforms`` entry point in
``pyproject.toml``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from headwater.sdk import REQUIRED, ConfigDef, ConnectError, Importance, Transformation, Type


class {{ cookiecutter.class_prefix }}Tag(Transformation[Any]):
    """Adds a field with a fixed value to every record whose value is a map; a tombstone passes unchanged."""

    def __init__(self) -> None:
        self.field = "origin"
        self.value = ""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("field.name", Type.STRING, "origin", Importance.MEDIUM, "The field added to the value.")
            .define("field.value", Type.STRING, REQUIRED, Importance.HIGH, "The value the field is set to.")
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.field = config["field.name"]
        self.value = config["field.value"]

    def apply(self, record: Any) -> Any:
        if record.value is None:
            return record
        if not isinstance(record.value, Mapping):
            raise ConnectError(f"{self.field} can only be added to a map value, not {type(record.value).__name__}")
        return replace(record, value={**record.value, self.field: self.value})
