"""Kafka Connect schemas and values to JSON Schema and back, by the rules of Confluent's ``JsonSchemaData`` (its
defaults), so that a schema written here is the one a Java worker's ``JsonSchemaConverter`` registers for the same
Connect schema, and a schema a Java worker registered reads here as the same Connect schema.

Connect to JSON Schema:

- int8, int16, int32, int64 are ``{"type": "integer", "connect.type": "int8"}`` (and so on); float32 and float64
  ``{"type": "number", "connect.type": "float32"}``; boolean and string as themselves; bytes
  ``{"type": "string", "connect.type": "bytes"}``, base64 in the payload;
- a struct is an ``object`` titled by the struct's name, each property with ``connect.index``, its field's position
  (JSON objects are unordered); no property is ``required`` (Confluent writes none), a missing one reads as null;
- an array is an ``array`` of ``items``; a map with required string keys an ``object`` with
  ``additionalProperties`` and ``connect.type: map``; a map with other keys an ``array`` of ``{"key", "value"}``
  objects with ``connect.type: map``;
- an optional schema is ``{"oneOf": [{"type": "null"}, <schema>]}`` (``connect.index`` on the ``oneOf``);
- a schema's name, version, doc, parameters and default go in ``title``, ``connect.version``, ``description``,
  ``connect.parameters`` and ``default``. Decimal is therefore bytes titled ``org.apache.kafka.connect.data.Decimal``
  with its scale in ``connect.parameters`` (a number with ``decimal.format=NUMERIC``); Date and Time are int32,
  Timestamp int64, each titled with its logical name;
- a schema that is not a struct (a key's string, an optional struct's ``oneOf``) also says ``"$schema"`` (draft 7,
  Confluent's default): Apicurio refuses a JSON Schema with neither ``$schema`` nor ``properties``.

JSON Schema to Connect reads the same back; a schema without ``connect.*`` annotations maps as ``JsonSchemaData``
maps it: ``integer`` is int64, ``number`` float64, an ``object`` without ``connect.type`` a struct of its properties
in the order written, a ``oneOf``/``anyOf`` of null and one type (or ``"type": [..., "null"]``) that type, optional;
``enum`` and ``const`` a string with Confluent's ``io.confluent.connect.json.Enum`` parameters; local ``$ref``\\ s are
followed. Unions of several types, ``allOf``, ``not`` and empty (any-value) schemas are refused, naming where.

Values: :mod:`.json_schema_values`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from headwater.runtime.converters.json_schema_values import entries, loads, to_connect_value, to_json_value
from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import DECIMAL_NAME, Schema

NAMESPACE = "io.confluent.connect.json"
ENUM = f"{NAMESPACE}.Enum"
"""The parameter Confluent marks a string from a JSON ``enum`` with (each symbol in ``<ENUM>.<symbol>``)."""
NULL_MARKER = "<NULL>"
DRAFT_7 = "http://json-schema.org/draft-07/schema#"
CONNECT_TYPE = "connect.type"
CONNECT_INDEX = "connect.index"
CONNECT_VERSION = "connect.version"
CONNECT_PARAMETERS = "connect.parameters"
_INTS = frozenset({"int8", "int16", "int32", "int64"})
_FLOATS = {"float": "float32", "double": "float64"}
_CONNECT_OF_NUMBER = {"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "float32": "float"}
_CONNECT_OF_NUMBER |= {"float64": "double", "bytes": "bytes"}


class SchemaError(ConnectError):
    """A schema that cannot be mapped."""


# ---- Connect -> JSON Schema ---------------------------------------------------------------------------------------


def to_json_schema(schema: Schema, numeric_decimals: bool = False, additional_properties: bool = True) -> Any:
    """The JSON Schema (parsed JSON) of a Connect schema; ``numeric_decimals`` for ``decimal.format=NUMERIC``,
    ``additional_properties=False`` for ``object.additional.properties=false``."""
    made = _Writer(numeric_decimals, additional_properties).schema(schema, None)
    if "properties" not in made:
        # Apicurio recognises a JSON Schema by its $schema or its properties, and refuses one with neither
        made = {"$schema": DRAFT_7, **made}
    return made


def schema_text(json_schema: Any) -> str:
    """JSON Schema text as Java writes it: compact, non-ASCII as it is."""
    return json.dumps(json_schema, separators=(",", ":"), ensure_ascii=False)


def record_name(json_schema: Any) -> str | None:
    """The title of a JSON Schema (Confluent's ``JsonSchema.name()``, the record subject name strategies'), else
    ``None``."""
    title = json_schema.get("title") if isinstance(json_schema, Mapping) else None
    return str(title) if title is not None else None


class _Writer:
    def __init__(self, numeric_decimals: bool, additional_properties: bool) -> None:
        self.numeric_decimals = numeric_decimals
        self.additional_properties = additional_properties

    def schema(self, schema: Schema, index: int | None) -> dict[str, Any]:
        kind = schema.get("type")
        if kind == "struct" and schema.get("optional"):
            # JsonSchemaData wraps an optional struct before giving it its title: the oneOf has no meta of its own
            made: dict[str, Any] = {"oneOf": [{"type": "null"}, self.schema({**schema, "optional": False}, None)]}
            if index is not None:
                made[CONNECT_INDEX] = index
            return made
        base, props = self._base(schema)
        made = {}
        if schema.get("name") is not None:
            made["title"] = schema["name"]
        if schema.get("doc") is not None:
            made["description"] = schema["doc"]
        if schema.get("default") is not None:
            made["default"] = to_json_value(schema, schema["default"], self.numeric_decimals, "the default")
        made |= base
        if schema.get("version") is not None:
            props[CONNECT_VERSION] = int(schema["version"])
        parameters = {
            str(k): str(v) for k, v in (schema.get("parameters") or {}).items() if not str(k).startswith(NAMESPACE)
        }
        if parameters:
            props[CONNECT_PARAMETERS] = parameters
        if schema.get("optional"):
            wrapped: dict[str, Any] = {"oneOf": [{"type": "null"}, made | props]}
            if index is not None:
                wrapped[CONNECT_INDEX] = index
            return wrapped
        if index is not None:
            props[CONNECT_INDEX] = index
        return made | props

    def _base(self, schema: Schema) -> tuple[dict[str, Any], dict[str, Any]]:
        """The schema's own keywords, and its ``connect.*`` annotations."""
        kind = schema.get("type")
        if kind in _INTS:
            return {"type": "integer"}, {CONNECT_TYPE: kind}
        if kind in _FLOATS:
            return {"type": "number"}, {CONNECT_TYPE: _FLOATS[kind]}
        if kind == "boolean":
            return {"type": "boolean"}, {}
        if kind == "string":
            parameters = schema.get("parameters") or {}
            if ENUM in parameters:
                prefix = f"{ENUM}."
                symbols = [k[len(prefix) :] for k in parameters if str(k).startswith(prefix)]
                return {"enum": [None if s == NULL_MARKER else s for s in symbols]}, {}
            return {"type": "string"}, {}
        if kind == "bytes":
            numeric = schema.get("name") == DECIMAL_NAME and self.numeric_decimals
            return {"type": "number" if numeric else "string"}, {CONNECT_TYPE: "bytes"}
        if kind == "array":
            return {"type": "array", "items": self.schema(schema["items"], None)}, {}
        if kind == "map":
            if not entries(schema):
                return {"type": "object", "additionalProperties": self.schema(schema["values"], None)}, {
                    CONNECT_TYPE: "map"
                }
            entry = {"key": self.schema(schema["keys"], 0), "value": self.schema(schema["values"], 1)}
            return {"type": "array", "items": {"type": "object", "properties": entry}}, {CONNECT_TYPE: "map"}
        if kind == "struct":
            properties = {
                field["field"]: self.schema(field, position) for position, field in enumerate(schema.get("fields", ()))
            }
            made: dict[str, Any] = {"type": "object", "properties": properties}
            if not self.additional_properties:
                made["additionalProperties"] = False
            return made, {}
        raise SchemaError(f"a Connect schema of type {kind!r} has no JSON Schema equivalent")


# ---- JSON Schema -> Connect ---------------------------------------------------------------------------------------


def to_connect(json_schema: Any, optional_for_nonrequired: bool = False) -> dict[str, Any]:
    """The Connect schema of a JSON Schema (parsed JSON or its text); ``optional_for_nonrequired`` for
    ``use.optional.for.nonrequired=true`` (a property not ``required`` is an optional field)."""
    if isinstance(json_schema, str):
        json_schema = json.loads(json_schema)
    return _Reader(json_schema, optional_for_nonrequired).schema(json_schema, "the schema", False, ())


class _Reader:
    def __init__(self, root: Any, optional_for_nonrequired: bool) -> None:
        self.root = root
        self.optional_for_nonrequired = optional_for_nonrequired

    def _resolve(self, ref: str, where: str, seen: tuple[str, ...]) -> Any:
        if ref in seen:
            raise SchemaError(f"{where}: the recursive $ref {ref!r} has no Connect schema")
        if not ref.startswith("#"):
            raise SchemaError(f"{where}: only local $refs (#/...) are followed, not {ref!r}")
        found = self.root
        for part in (p.replace("~1", "/").replace("~0", "~") for p in ref[1:].split("/") if p):
            if not isinstance(found, Mapping) or part not in found:
                raise SchemaError(f"{where}: $ref {ref!r} points at nothing")
            found = found[part]
        return found

    def schema(self, node: Any, where: str, force_optional: bool, seen: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(node, Mapping) or not node:
            raise SchemaError(f"{where}: an empty or boolean JSON Schema (any value) has no Connect schema")
        if "$ref" in node:
            ref = str(node["$ref"])
            return self.schema(self._resolve(ref, where, seen), where, force_optional, (*seen, ref))
        branches = _branches(node)
        if branches is not None:  # as JsonSchemaData: the combined schema's own title and the like are not read
            return self._union(branches, where, force_optional, seen)
        made = self._base(node, where, seen)
        if node.get("title") is not None and made.get("name") is None:
            made["name"] = str(node["title"])
        if isinstance(node.get(CONNECT_VERSION), int):
            made["version"] = node[CONNECT_VERSION]
        if node.get("description") is not None:
            made["doc"] = str(node["description"])
        if isinstance(node.get(CONNECT_PARAMETERS), Mapping):
            made["parameters"] = {**(made.get("parameters") or {})}
            made["parameters"] |= {str(k): str(v) for k, v in node[CONNECT_PARAMETERS].items()}
        if node.get("default") is not None:
            made["default"] = to_connect_value(made, loads(json.dumps(node["default"])), f"{where} (default)")
        if force_optional:
            made["optional"] = True
        return made

    def _base(self, node: Mapping[str, Any], where: str, seen: tuple[str, ...]) -> dict[str, Any]:
        kind = node.get("type")
        for refused in ("allOf", "not"):
            if refused in node:
                raise SchemaError(f"{where}: {refused} has no Connect schema")
        if "enum" in node or "const" in node:
            symbols = list(node["enum"]) if "enum" in node else [node["const"]]
            if kind in ("integer", "number"):  # JsonSchemaData keeps the number, drops the enum
                return self._base({k: v for k, v in node.items() if k not in ("enum", "const")}, where, seen)
            parameters = {ENUM: ""} | {f"{ENUM}.{_symbol(s)}": _symbol(s) for s in symbols}
            return {"type": "string", "optional": False, "parameters": parameters}
        connect_type = node.get(CONNECT_TYPE)
        if kind in ("integer", "number"):
            if connect_type is None:
                return {"type": "int64" if kind == "integer" else "double", "optional": False}
            if connect_type not in _CONNECT_OF_NUMBER:
                raise SchemaError(f"{where}: unknown connect.type {connect_type!r} for a number")
            return {"type": _CONNECT_OF_NUMBER[connect_type], "optional": False}
        if kind == "string":
            return {"type": "bytes" if connect_type == "bytes" else "string", "optional": False}
        if kind == "boolean":
            return {"type": "boolean", "optional": False}
        if kind == "array":
            return self._array(node, where, seen)
        if kind == "object" or (kind is None and "properties" in node):
            return self._object(node, where, seen)
        raise SchemaError(f"{where}: a JSON Schema of type {kind!r} has no Connect schema")

    def _union(self, branches: list[Any], where: str, force_optional: bool, seen: tuple[str, ...]) -> dict[str, Any]:
        if len(branches) == 1:  # flatten.singleton.unions=true, Confluent's default
            return self.schema(branches[0], where, force_optional, seen)
        others = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
        if len(branches) == 2 and len(others) == 1:
            return self.schema(others[0], where, True, seen)
        raise SchemaError(
            f"{where}: a union of several types (oneOf/anyOf) has no Connect schema here (Confluent's "
            "io.confluent.connect.json.OneOf struct is not supported); use null and one type"
        )

    def _array(self, node: Mapping[str, Any], where: str, seen: tuple[str, ...]) -> dict[str, Any]:
        items = node.get("items")
        if not isinstance(items, Mapping):
            raise SchemaError(f"{where}: the array schema does not give one items schema")
        if node.get(CONNECT_TYPE) == "map" and isinstance(items.get("properties"), Mapping):
            properties = items["properties"]
            if "key" not in properties or "value" not in properties:
                raise SchemaError(f"{where}: a map's entries need a key and a value property")
            keys = self.schema(properties["key"], f"{where}'s keys", False, seen)
            values = self.schema(properties["value"], f"{where}'s values", False, seen)
            return {"type": "map", "optional": False, "keys": keys, "values": values}
        return {"type": "array", "optional": False, "items": self.schema(items, f"{where}'s items", False, seen)}

    def _object(self, node: Mapping[str, Any], where: str, seen: tuple[str, ...]) -> dict[str, Any]:
        if node.get(CONNECT_TYPE) == "map":
            values = node.get("additionalProperties")
            if not isinstance(values, Mapping):
                raise SchemaError(f"{where}: a map schema needs an additionalProperties schema")
            keys = {"type": "string", "optional": False}
            return {"type": "map", "optional": False, "keys": keys, "values": self.schema(values, where, False, seen)}
        properties = node.get("properties") or {}
        required = set(node.get("required") or ())
        ordered = sorted(
            enumerate(properties.items()),
            key=lambda entry: (_index(entry[1][1]), entry[0]),
        )
        fields = []
        for _, (name, sub) in ordered:
            optional = self.optional_for_nonrequired and name not in required
            field = self.schema(sub, f"field {name!r}", optional, seen)
            fields.append({**field, "field": name})
        return {"type": "struct", "optional": False, "fields": fields}


def _branches(node: Mapping[str, Any]) -> list[Any] | None:
    """The branches of a ``oneOf``, ``anyOf`` or list of types, else ``None``."""
    kind = node.get("type")
    if isinstance(kind, list):
        return [{**node, "type": k} for k in kind]
    for combiner in ("oneOf", "anyOf"):
        if isinstance(node.get(combiner), list):
            return list(node[combiner])
    return None


def _index(node: Any) -> float:
    """A property's ``connect.index``; properties without one keep their written order, after those with one."""
    if isinstance(node, Mapping) and isinstance(node.get(CONNECT_INDEX), int):
        return float(node[CONNECT_INDEX])
    return float("inf")


def _symbol(value: Any) -> str:
    return NULL_MARKER if value is None else str(value)
