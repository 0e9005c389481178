"""Field paths (KIP-821): how a transformation's ``field`` setting names a field, by
``field.syntax.version``. ``V1`` (the default) names a field of the top-level map, dots and all; ``V2`` names a
nested field with dots (``address.city``), a step with dots in it wrapped in backticks (```a.b`.c``, a backtick
inside one escaped with a backslash)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.parts import require_map_or_null
from headwater.sdk.config import ConfigDef, Importance, Type, one_of
from headwater.sdk.errors import ConfigError

FIELD_SYNTAX_VERSION = "field.syntax.version"


def with_syntax_version(definition: ConfigDef) -> ConfigDef:
    """``definition`` with the ``field.syntax.version`` setting."""
    return definition.define(
        FIELD_SYNTAX_VERSION,
        Type.STRING,
        "V1",
        Importance.HIGH,
        "The syntax of field paths: V1 (the default) names a field at the top level only, V2 names nested fields "
        "with dots (address.city), a name with dots in it wrapped in backticks (`foo.bar`.baz).",
        one_of("V1", "V2"),
    )


class FieldPath:
    """One field's path, its :attr:`steps` from the top level down."""

    def __init__(self, key: str, text: str, version: str) -> None:
        self.text = text
        self.steps = _steps(key, text) if version.upper() == "V2" else [text]
        if not self.steps:
            raise ConfigError(key, text, "A field path needs at least one step")

    def __repr__(self) -> str:
        return f"FieldPath({self.text!r}, steps={self.steps!r})"

    def value_from(self, value: Mapping[str, Any]) -> Any:
        """The field's value in the map ``value``; None when a step is missing or null. A step that is not a map
        is a :class:`~.parts.DataError`."""
        current: Mapping[str, Any] | None = value
        for step in self.steps[:-1]:
            assert current is not None
            current = require_map_or_null(current.get(step), "nested field access")
            if current is None:
                return None
        assert current is not None
        return current.get(self.steps[-1])


def _steps(key: str, path: str) -> list[str]:
    """The steps of a V2 path: split at dots, except inside a backtick pair that ends the path or a step."""
    steps: list[str] = []
    index = 0
    while 0 <= index < len(path):
        if path[index] != "`":
            dot = path.find(".", index)
            steps.append(path[index:] if dot < 0 else path[index:dot])
            index = -1 if dot < 0 else dot + 1
            continue
        opened, index = index, index + 1
        start, name = index, ""
        while True:
            index = path.find("`", index)
            if index < 0:
                raise _unpaired(key, path, opened)
            escaped = path[index - 1] == "\\"
            if index >= len(path) - 1:  # the closing backtick ends the path
                if escaped:
                    raise _unpaired(key, path, opened)
                steps.append(name + path[start:index])
                index += 1
                break
            if path[index + 1] != ".":  # a backtick inside the name
                index += 1
                continue
            if escaped:
                name += path[start : index - 1] + "`"
                index += 1
                start = index
                continue
            steps.append(name + path[start:index])
            index += 2
            break
    if path.endswith("."):
        steps.append("")
    return steps


def _unpaired(key: str, path: str, at: int) -> ConfigError:
    return ConfigError(
        key,
        path,
        f"Incomplete backtick pair in path: [{path}], add a backslash before the backtick at {at} to escape it",
    )
