"""Structs as a source record carries them (the JsonConverter's struct schema JSON and its payload, a dict), for the
field transformations' with-schema paths: reading a struct's fields, building a new struct schema the way Kafka
Connect's ``SchemaBuilder`` does, and filling a new struct the way its ``Struct.put`` checks it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from headwater.runtime.transforms.builtins.parts import DataError
from headwater.runtime.transforms.builtins.schemas import DATE, DECIMAL, TIME, TIMESTAMP, normalized
from headwater.sdk.config import Importance, Type

Schema = Mapping[str, Any]
T = TypeVar("T")
_BASICS = ("name", "version", "doc", "parameters")


def require_struct(schema: Schema, value: Any, purpose: str) -> Mapping[str, Any]:
    """``value`` when ``schema`` is a struct's and ``value`` its payload; else Kafka Connect's error for a value that
    is no Struct (``Requirements.requireStruct``)."""
    if schema.get("type") != "struct" or not isinstance(value, Mapping):
        found = schema.get("type") if value is not None else "null"
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {found}")
    return value


def fields_of(schema: Schema) -> dict[str, Schema]:
    """A struct schema's fields by name, in their order; :class:`DataError` for a schema that is no struct (Kafka
    Connect's ``Schema.field`` on one)."""
    if schema.get("type") != "struct":
        raise DataError(f"Cannot look up fields on non-struct type: {schema.get('type')}")
    return {field["field"]: field for field in schema.get("fields", ())}


NULLS = "replace.null.with.default"
"""Kafka Connect's setting, on the built-ins that read the fields of a struct, for :func:`field_value`."""
NULLS_KEY = (
    NULLS,
    Type.BOOLEAN,
    True,
    Importance.MEDIUM,
    "For a key or value with a schema (a struct): whether a null field takes its schema's default (true) or stays "
    "null (false), as in Kafka Connect. Without effect on schemaless keys and values.",
)
"""Its definition, for ``ConfigDef.define(*NULLS_KEY)``."""


def replaces_nulls(config: Mapping[str, Any]) -> bool:
    """A built-in's parsed ``replace.null.with.default``."""
    return bool(config.get(NULLS, True))


def field_value(payload: Mapping[str, Any], field: Schema, replace_null_with_default: bool) -> Any:
    """The value of ``field`` (a struct schema's field entry) in ``payload``: its schema default in place of null
    when ``replace_null_with_default`` (Kafka Connect's ``Struct.get``), else as it is (``getWithoutDefault``)."""
    value = payload.get(field["field"])
    if value is None and replace_null_with_default:
        return field.get("default")
    return value


def struct_schema(fields: Iterable[tuple[str, Schema]], basics: Schema | None = None) -> dict[str, Any]:
    """A required struct schema of ``fields`` (name and schema pairs, in order) with the name, version, doc and
    parameters of ``basics`` (Kafka Connect's ``SchemaUtil.copySchemaBasics``: not its optional flag or default);
    :class:`DataError` for a name given twice, or empty, as ``SchemaBuilder.field`` refuses it."""
    built: dict[str, Any] = {"type": "struct"}
    for key in _BASICS:
        if basics is not None and basics.get(key) is not None:
            built[key] = basics[key]
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name, schema in fields:
        if not name:
            raise DataError("fieldName cannot be null.")
        if name in seen:
            raise DataError(f"Cannot create field because of field name duplication {name}")
        seen.add(name)
        entries.append({**schema, "field": name})
    built["fields"] = entries
    return normalized(built)


def put(struct: dict[str, Any], field: Schema, value: Any) -> None:
    """Set ``field`` (a struct schema's field entry) of the payload ``struct`` to ``value``: :class:`DataError` for
    null in a required field, as Kafka Connect's ``Struct.put`` refuses it."""
    if value is None and not field.get("optional"):
        raise DataError(
            f'Invalid value: null used for required field: "{field["field"]}", schema type: {field.get("type")}'
        )
    struct[field["field"]] = value


Copies = list[tuple[Schema, Schema, bool]]
"""Fields of a new struct (its schema's field entries), each with the field of the old struct it takes its value
from and whether that value needs checking against the new field's schema (:func:`copies_of`)."""


def copies_of(pairs: Iterable[tuple[Schema, Schema]]) -> Copies:
    """:data:`Copies` of ``(new field, old field)`` pairs: a value is checked when the two schemas differ."""
    return [(field, source, normalized(field) != normalized(source)) for field, source in pairs]


def copied(struct: Mapping[str, Any], copies: Copies, replace_null_with_default: bool) -> dict[str, Any]:
    """The new struct's payload: each field of ``copies`` :func:`put` to the value (:func:`field_value`) of its
    field in the old struct's payload ``struct``; a value that does not fit the new field's schema is refused, as
    Kafka Connect's ``ConnectSchema.validateValue`` refuses it (a value of another Java class)."""
    updated: dict[str, Any] = {}
    for field, source, check in copies:
        value = field_value(struct, source, replace_null_with_default)
        if check and value is not None and not fits(source, field, value):
            raise DataError(
                f"Invalid value for schema with type {str(field.get('type')).upper()}: a value of type "
                f'{str(source.get("type")).upper()} for field: "{field["field"]}"'
            )
        put(updated, field, value)
    return updated


_JAVA_CLASSES = {DECIMAL: "BigDecimal", DATE: "Date", TIME: "Date", TIMESTAMP: "Date"}
"""The Java class of a logical type's values, the four Kafka Connect knows; others: their schema type's."""


def fits(source: Schema, target: Schema, value: Any) -> bool:
    """Whether the payload ``value`` of schema ``source`` passes Kafka Connect's check of a value against schema
    ``target`` (``ConnectSchema.validateValue``): the same Java class, element by element for an array or a map,
    the same schema for a struct; null only where ``target`` is optional."""
    if value is None:
        return bool(target.get("optional"))
    kind = _JAVA_CLASSES.get(source.get("name") or "", source["type"])
    if kind != _JAVA_CLASSES.get(target.get("name") or "", target["type"]):
        return False
    if kind == "array":
        return all(fits(source["items"], target["items"], item) for item in value)
    if kind == "map":
        pairs = value.items() if isinstance(value, Mapping) else value  # non-string keys: [key, value] pairs
        keys, values = (source["keys"], target["keys"]), (source["values"], target["values"])
        return all(fits(*keys, key) and fits(*values, item) for key, item in pairs)
    if kind == "struct":
        return normalized(source) == normalized(target)
    return True


class SchemaMemo(Generic[T]):
    """The schema last built from a schema, so that records sharing one schema (the same object, as a source task
    gives them) build it once: Kafka Connect caches the schemas its transformations build in the same way. A schema
    a record carries is not changed in place, here as in Kafka Connect (whose schemas are immutable)."""

    def __init__(self, build: Callable[[Schema], T]) -> None:
        self._build = build
        self._source: Schema | None = None
        self._built: T

    def __call__(self, schema: Schema) -> T:
        if schema is not self._source:
            self._built = self._build(schema)
            self._source = schema
        return self._built


def field_at(schema: Schema, steps: list[str]) -> Schema | None:
    """The schema of the field a path's ``steps`` name in the struct ``schema`` (without its ``field`` key); None
    when a step is missing; :class:`DataError` when a step before the last is no struct (Kafka Connect's
    ``SingleFieldPath.fieldFrom``)."""
    current = schema
    for step in steps:
        field = fields_of(current).get(step)
        if field is None:
            return None
        current = field
    return {key: item for key, item in current.items() if key != "field"}


def value_at(schema: Schema, payload: Mapping[str, Any], steps: list[str], replace_null_with_default: bool) -> Any:
    """The value a path's ``steps`` name in the struct payload ``payload`` of ``schema``: null when a step is
    missing or null, a nested struct's null taking its default (Kafka Connect's ``SingleFieldPath.valueFrom``);
    ``replace_null_with_default`` is for the last step."""
    current, current_schema = payload, schema
    for step in steps[:-1]:
        field = fields_of(current_schema).get(step)
        if field is None:
            return None
        nested = field_value(current, field, True)
        if nested is None:
            return None
        current, current_schema = require_struct(field, nested, "nested field access"), field
    field = fields_of(current_schema).get(steps[-1])
    return None if field is None else field_value(current, field, replace_null_with_default)
