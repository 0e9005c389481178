"""Kafka Connect schemas and values to Avro and back, by the rules of Confluent's ``AvroData`` (its defaults:
``connect.meta.data`` on, ``enhanced.avro.schema.support`` off), so that an Avro schema written here is the one a Java
worker registers for the same Connect schema, and one a Java worker wrote reads here as the same Connect schema.

Connect to Avro:

- int8 and int16 are Avro ``int`` with ``connect.type``; int32 ``int``; int64 ``long``; float32 (``float`` in the
  JSON form) and float64 (``double``) as themselves; boolean, string, bytes as themselves;
- a struct is a ``record`` named by the schema's name (``namespace.Name``), else ``ConnectDefault`` in namespace
  ``io.confluent.connect.avro`` (the nth unnamed struct of a schema: ``ConnectDefault<n>``);
- an array is an ``array``; a map with string keys a ``map``; a map with other keys an ``array`` of ``MapEntry``
  records (``key``, ``value``);
- an optional schema is a union with ``null`` first, and its field defaults to null;
- Decimal is ``bytes`` with ``logicalType: decimal``, its scale and precision (``connect.decimal.precision``, 64 when
  not given); Date ``int``/``date``, Time ``int``/``time-millis``, Timestamp ``long``/``timestamp-millis``;
- a schema's name, version, doc, default and parameters go in ``connect.name``, ``connect.version``, ``connect.doc``,
  ``connect.default`` and ``connect.parameters``.

Avro to Connect reads the same back; an Avro schema without ``connect.*`` properties maps as ``AvroData`` maps it:
a union of ``null`` and one type is that type, optional; an ``enum`` is a string, a ``fixed`` bytes. Unions of
several types (Confluent's ``io.confluent.connect.avro.Union`` struct) are refused, naming the field.
"""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Mapping
from typing import Any

from headwater.runtime.converters.logical import day_millis, decimal_bytes, epoch_days, epoch_millis
from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import DATE_NAME, DECIMAL_NAME, PRECISION, SCALE, TIME_NAME, TIMESTAMP_NAME, Schema

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_NAME = "ConnectDefault"
MAP_ENTRY = "MapEntry"
ENTRY_NAME = f"{NAMESPACE}.{MAP_ENTRY}"
DEFAULT_PRECISION = 64
_PRIMITIVE_AVRO = {
    "int32": "int",
    "int64": "long",
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}
_CONNECT_OF_AVRO = {avro: connect for connect, avro in _PRIMITIVE_AVRO.items()}
_LOGICAL = {
    DATE_NAME: ("int", "date"),
    TIME_NAME: ("int", "time-millis"),
    TIMESTAMP_NAME: ("long", "timestamp-millis"),
}
_NAME_OF_LOGICAL = {"date": DATE_NAME, "time-millis": TIME_NAME, "timestamp-millis": TIMESTAMP_NAME}


class SchemaError(ConnectError):
    """A schema that cannot be mapped."""


# ---- Connect -> Avro ----------------------------------------------------------------------------------------------

RECORD_DOC = "io.confluent.connect.avro.record.doc"
FIELD_DOC = "io.confluent.connect.avro.field.doc."
FIELD_DEFAULT = "io.confluent.connect.avro.field.default"


class _Context:
    """One top-level conversion: the unnamed structs numbered as AvroData numbers them (ConnectDefault,
    ConnectDefault2, ...), and the named types written so far, which later occurrences refer to by name."""

    def __init__(self) -> None:
        self.unnamed = 0
        self.written: dict[str, str] = {}
        """The canonical JSON of a non-optional Connect schema -> the full name of the Avro type made for it."""
        self.names: set[str] = set()

    def default_name(self) -> str:
        self.unnamed += 1
        return DEFAULT_NAME if self.unnamed == 1 else f"{DEFAULT_NAME}{self.unnamed}"


def to_avro(schema: Schema) -> Any:
    """The Avro schema (parsed JSON, its keys in the order Java's Avro writes them) of a Connect schema."""
    return _to_avro(schema, _Context(), None)


def avro_text(avro: Any) -> str:
    """Avro schema JSON as Java's ``Schema.toString()`` writes it: compact, non-ASCII as it is."""
    return json.dumps(avro, separators=(",", ":"), ensure_ascii=False)


def _split(name: str) -> tuple[str | None, str]:
    namespace, _, simple = name.rpartition(".")
    return (namespace or None), simple


def _reference(full: str, namespace: str | None) -> str:
    ns, simple = _split(full)
    return simple if ns == namespace else full


def _to_avro(schema: Schema, context: _Context, namespace: str | None) -> Any:
    if not schema.get("optional"):
        return _base_avro(schema, context, namespace)
    base = _base_avro({**schema, "optional": False}, context, namespace)
    if schema.get("type") != "struct" and schema.get("default") is not None:
        return [base, "null"]  # a non-null default must fit the union's first branch
    return ["null", base]


def _meta(made: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """AvroData's ``connect.*`` properties, in its order."""
    if schema.get("doc") is not None:
        made["connect.doc"] = schema["doc"]
    if schema.get("version") is not None:
        made["connect.version"] = int(schema["version"])
    parameters = {str(k): str(v) for k, v in (schema.get("parameters") or {}).items() if k != FIELD_DEFAULT}
    if parameters:
        made["connect.parameters"] = parameters
    if schema.get("default") is not None and FIELD_DEFAULT not in (schema.get("parameters") or {}):
        made["connect.default"] = default_json(schema, schema["default"])
    if schema.get("name") is not None:
        made["connect.name"] = schema["name"]
    return made


def _base_avro(schema: Schema, context: _Context, namespace: str | None) -> Any:
    kind = schema.get("type")
    name = schema.get("name")
    if name == DECIMAL_NAME:
        parameters = dict(schema.get("parameters") or {})
        made: dict[str, Any] = {
            "type": "bytes",
            "scale": int(parameters.get(SCALE, 0)),
            "precision": int(parameters.get(PRECISION, DEFAULT_PRECISION)),
        }
        _meta(made, schema)
        made["logicalType"] = "decimal"
        return made
    if name in _LOGICAL:
        avro_type, logical = _LOGICAL[name]
        made = _meta({"type": avro_type}, schema)
        made["logicalType"] = logical
        return made
    if kind in ("int8", "int16"):
        made = _meta({"type": "int"}, schema)
        made["connect.type"] = kind
        return made
    if kind in _PRIMITIVE_AVRO:
        made = _meta({"type": _PRIMITIVE_AVRO[kind]}, schema)
        return made if len(made) > 1 else _PRIMITIVE_AVRO[kind]
    if kind == "array":
        return _meta({"type": "array", "items": _to_avro(schema["items"], context, namespace)}, schema)
    if kind == "map":
        keys, values = schema["keys"], schema["values"]
        if keys.get("type") == "string" and not keys.get("optional"):
            return _meta({"type": "map", "values": _to_avro(values, context, namespace)}, schema)
        entry = _record(
            {"type": "struct", "fields": [{**keys, "field": "key"}, {**values, "field": "value"}]},
            context,
            namespace,
            ENTRY_NAME,
        )
        return _meta({"type": "array", "items": entry}, schema)
    if kind == "struct":
        return _record(schema, context, namespace, None)
    raise SchemaError(f"no Avro schema for the Connect schema type {kind!r}")


def _record(schema: Schema, context: _Context, namespace: str | None, fixed_name: str | None) -> Any:
    key = json.dumps({k: v for k, v in schema.items() if k != "field"}, sort_keys=True, default=repr)
    if key in context.written:
        return _reference(context.written[key], namespace)
    full = fixed_name or schema.get("name") or f"{NAMESPACE}.{context.default_name()}"
    if full in context.names:
        raise SchemaError(f"two different Connect schemas are both named {full} in one Avro schema")
    context.written[key] = full
    context.names.add(full)
    own_namespace, simple = _split(full)
    record: dict[str, Any] = {"type": "record", "name": simple}
    if own_namespace != namespace:
        record["namespace"] = own_namespace or ""
    parameters = schema.get("parameters") or {}
    if parameters.get(RECORD_DOC) is not None:
        record["doc"] = parameters[RECORD_DOC]
    fields = []
    for field in schema.get("fields", ()):
        made: dict[str, Any] = {"name": field["field"], "type": _to_avro(field, context, own_namespace)}
        if parameters.get(FIELD_DOC + field["field"]) is not None:
            made["doc"] = parameters[FIELD_DOC + field["field"]]
        if field.get("default") is not None:
            made["default"] = default_json(field, field["default"])
        elif field.get("optional"):
            made["default"] = None
        fields.append(made)
    record["fields"] = fields
    if fixed_name is None:
        _meta(record, schema)
    return record


def default_json(schema: Schema, value: Any) -> Any:
    """A Connect default as AvroData writes it in JSON: bytes (and a Decimal's unscaled bytes) as ISO-8859-1
    strings, dates as days, times and timestamps as milliseconds, maps with other keys as [key, value] pairs."""
    if value is None:
        return None
    name, kind = schema.get("name"), schema.get("type")
    if name == DECIMAL_NAME and isinstance(value, decimal.Decimal):
        scale = int((schema.get("parameters") or {}).get(SCALE, 0))
        return decimal_bytes(value, scale).decode("iso-8859-1")
    if name == DATE_NAME and isinstance(value, datetime.date):
        return epoch_days(value)
    if name == TIME_NAME and isinstance(value, datetime.time):
        return day_millis(value)
    if name == TIMESTAMP_NAME and isinstance(value, datetime.datetime):
        return epoch_millis(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("iso-8859-1")
    if kind == "array":
        return [default_json(schema["items"], item) for item in value]
    if kind == "map":
        if schema["keys"].get("type") == "string" and not schema["keys"].get("optional"):
            return {k: default_json(schema["values"], v) for k, v in value.items()}
        return [[default_json(schema["keys"], k), default_json(schema["values"], v)] for k, v in value.items()]
    if kind == "struct":
        fields = {field["field"]: field for field in schema.get("fields", ())}
        return {k: default_json(fields[k], v) if k in fields else v for k, v in value.items()}
    return value


# ---- Avro -> Connect ----------------------------------------------------------------------------------------------


def to_connect(avro: Any) -> dict[str, Any]:
    """The Connect schema of an Avro schema (parsed JSON or its text)."""
    if isinstance(avro, str) and avro.lstrip().startswith(("{", "[", '"')):
        avro = json.loads(avro)
    return _to_connect(avro, {}, "the schema", None)


def _to_connect(avro: Any, named: dict[str, Any], where: str, namespace: str | None) -> dict[str, Any]:
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(avro) == 1:
            return _to_connect(avro[0], named, where, namespace)
        if len(branches) == 1 and len(avro) == 2:
            return {**_to_connect(branches[0], named, where, namespace), "optional": True}
        raise SchemaError(
            f"{where} is an Avro union of {json.dumps(avro)}; Headwater maps only a union of null and one type "
            "(an optional value), not Confluent's io.confluent.connect.avro.Union"
        )
    if isinstance(avro, str):
        if avro in _CONNECT_OF_AVRO:
            return {"type": _CONNECT_OF_AVRO[avro], "optional": False}
        full = avro if "." in avro or not namespace else f"{namespace}.{avro}"
        for candidate in (full, avro):
            if candidate in named:
                return dict(named[candidate])
        raise SchemaError(f"{where} is Avro {avro!r}, which has no Connect schema here")
    if not isinstance(avro, Mapping):
        raise SchemaError(f"{where} is not an Avro schema: {avro!r}")
    kind, logical = avro.get("type"), avro.get("logicalType")
    made: dict[str, Any]
    if kind in ("bytes", "fixed") and str(logical).lower() == "decimal":
        parameters = {SCALE: str(avro.get("scale", 0))}
        if avro.get("precision") is not None and int(avro["precision"]) != DEFAULT_PRECISION:
            parameters[PRECISION] = str(avro["precision"])
        if kind == "fixed":
            parameters["connect.fixed.size"] = str(avro.get("size"))
        made = {"type": "bytes", "optional": False, "name": DECIMAL_NAME, "version": 1, "parameters": parameters}
    elif kind == "int" and logical in ("date", "time-millis"):
        made = {"type": "int32", "optional": False, "name": _NAME_OF_LOGICAL[logical], "version": 1}
    elif kind == "long" and logical == "timestamp-millis":
        made = {"type": "int64", "optional": False, "name": TIMESTAMP_NAME, "version": 1}
    elif kind == "int" and avro.get("connect.type") is not None:
        if avro["connect.type"] not in ("int8", "int16"):
            raise SchemaError(f"{where} has connect.type {avro['connect.type']!r}, which only int8 or int16 may be")
        made = {"type": avro["connect.type"], "optional": False}
    elif kind in _CONNECT_OF_AVRO:
        made = {"type": _CONNECT_OF_AVRO[kind], "optional": False}
    elif kind == "enum":
        full = _full_name(avro, namespace)
        parameters = {"io.confluent.connect.avro.Enum": full}
        parameters.update({f"io.confluent.connect.avro.Enum.{symbol}": symbol for symbol in avro.get("symbols", ())})
        made = {"type": "string", "optional": False, "name": full, "parameters": parameters}
        named[full] = made
    elif kind == "fixed":
        full = _full_name(avro, namespace)
        made = {"type": "bytes", "optional": False, "parameters": {"connect.fixed.size": str(avro.get("size"))}}
        if not full.startswith(f"{NAMESPACE}.{DEFAULT_NAME}"):
            made["name"] = full
        named[full] = made
    elif kind == "array":
        items: Any = avro.get("items")
        if _is_map_entry(items, namespace):
            fields = {f["name"]: f["type"] for f in items.get("fields", ())}
            entry_namespace = _split(_full_name(items, namespace))[0]
            made = {
                "type": "map",
                "optional": False,
                "keys": _to_connect(fields["key"], named, f"{where}'s map keys", entry_namespace),
                "values": _to_connect(fields["value"], named, f"{where}'s map values", entry_namespace),
            }
        else:
            made = {
                "type": "array",
                "optional": False,
                "items": _to_connect(items, named, f"{where}'s items", namespace),
            }
    elif kind == "map":
        made = {
            "type": "map",
            "optional": False,
            "keys": {"type": "string", "optional": False},
            "values": _to_connect(avro.get("values"), named, f"{where}'s map values", namespace),
        }
    elif kind == "record":
        made = _struct(avro, named, namespace)
    elif isinstance(kind, (list, Mapping)) or (isinstance(kind, str) and kind not in ("null",)):
        return _to_connect(kind, named, where, namespace)
    else:
        raise SchemaError(f"{where} has the Avro type {kind!r}, which Headwater cannot map to a Connect schema")
    _read_meta(made, avro)
    return made


def _struct(avro: Mapping[str, Any], named: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    full = _full_name(avro, namespace)
    own_namespace = _split(full)[0]
    made: dict[str, Any] = {"type": "struct", "optional": False}
    if not full.startswith(f"{NAMESPACE}.{DEFAULT_NAME}"):
        made["name"] = full
    named[full] = made
    parameters: dict[str, str] = {}
    if avro.get("doc") is not None:
        parameters[RECORD_DOC] = str(avro["doc"])
    fields: list[dict[str, Any]] = []
    for field in avro.get("fields", ()):
        if field.get("doc") is not None:
            parameters[FIELD_DOC + field["name"]] = str(field["doc"])
        where = f"field {field['name']!r} of {full}"
        schema = _to_connect(field["type"], named, where, own_namespace)
        union = isinstance(field["type"], list) and len(field["type"]) > 1
        if not union and "default" in field and field["default"] is not None:
            schema["default"] = _default_value(schema, field["default"])
            if not _has_connect_default(field["type"]):
                schema["parameters"] = {**(schema.get("parameters") or {}), FIELD_DEFAULT: "true"}
        fields.append({**schema, "field": field["name"]})
    made["fields"] = fields
    if parameters:
        made["parameters"] = parameters
    return made


def _has_connect_default(avro: Any) -> bool:
    return isinstance(avro, Mapping) and "connect.default" in avro


def _default_value(schema: Schema, value: Any) -> Any:
    """A default as Avro JSON writes it, as a Connect value (bytes from ISO-8859-1 strings)."""
    if schema.get("type") == "bytes" and isinstance(value, str):
        raw = value.encode("iso-8859-1")
        if schema.get("name") == DECIMAL_NAME:
            scale = int((schema.get("parameters") or {}).get(SCALE, 0))
            return decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale)
        return raw
    return value


def _read_meta(made: dict[str, Any], avro: Mapping[str, Any]) -> None:
    if "connect.doc" in avro:
        made["doc"] = avro["connect.doc"]
    if "connect.version" in avro:
        if not isinstance(avro["connect.version"], int):
            raise SchemaError(f"connect.version must be a number, got {avro['connect.version']!r}")
        made["version"] = avro["connect.version"]
    parameters = dict(made.get("parameters") or {})
    parameters.update({str(k): str(v) for k, v in (avro.get("connect.parameters") or {}).items()})
    parameters.update({str(k): str(v) for k, v in avro.items() if isinstance(k, str) and k.startswith("avro")})
    if parameters:
        made["parameters"] = parameters
    if avro.get("connect.default") is not None:
        made["default"] = _default_value(made, avro["connect.default"])
    if "connect.name" in avro:
        name = str(avro["connect.name"])
        if name.startswith(f"{NAMESPACE}.{DEFAULT_NAME}"):
            made.pop("name", None)
        else:
            made["name"] = name


def _full_name(avro: Mapping[str, Any], namespace: str | None = None) -> str:
    """A named Avro type's full name, its namespace inherited from the enclosing one when it has none."""
    name = str(avro.get("name"))
    if "." in name:
        return name
    own = avro.get("namespace", namespace)
    return f"{own}.{name}" if own else name


def _is_map_entry(items: Any, namespace: str | None) -> bool:
    return (
        isinstance(items, Mapping)
        and items.get("type") == "record"
        and (
            _full_name(items, namespace) == f"{NAMESPACE}.{MAP_ENTRY}"
            or items.get("connect.internal.type") == MAP_ENTRY
        )
        and [f.get("name") for f in items.get("fields", ())] == ["key", "value"]
    )


def record_name(avro: Any) -> str | None:
    """The full name of an Avro record schema (the record subject name strategies'), else ``None``."""
    if isinstance(avro, list):
        named = [b for b in avro if b != "null"]
        return record_name(named[0]) if len(named) == 1 else None
    if isinstance(avro, Mapping) and avro.get("type") == "record":
        return _full_name(avro)
    return None


# ---- values -------------------------------------------------------------------------------------------------------


def _entries(schema: Schema) -> bool:
    """Whether a map schema is written as an array of key-value records (keys other than required strings)."""
    keys = schema["keys"]
    return bool(keys.get("type") != "string" or keys.get("optional"))


def needs_datum_change(schema: Schema) -> bool:
    """Whether values of ``schema`` differ between Connect and Avro: a map with keys other than strings, a struct
    field with a default (a null in it is written as the default, as Connect's ``Struct.get`` reads it)."""
    kind = schema.get("type")
    if kind == "map":
        return _entries(schema) or needs_datum_change(schema["values"])
    if kind == "array":
        return needs_datum_change(schema["items"])
    if kind == "struct":
        return any(field.get("default") is not None or needs_datum_change(field) for field in schema.get("fields", ()))
    return False


def to_datum(schema: Schema, value: Any) -> Any:
    """A Connect value as the Avro datum of :func:`to_avro` of its schema (maps with other keys as entries)."""
    if value is None:
        return None
    kind = schema.get("type")
    if kind == "map":
        if _entries(schema):
            return [
                {"key": to_datum(schema["keys"], k), "value": to_datum(schema["values"], v)} for k, v in value.items()
            ]
        return {k: to_datum(schema["values"], v) for k, v in value.items()}
    if kind == "array":
        return [to_datum(schema["items"], item) for item in value]
    if kind == "struct":
        made = {}
        for field in schema.get("fields", ()):
            item = value.get(field["field"])
            made[field["field"]] = to_datum(field, field.get("default") if item is None else item)
        return made
    return value


def from_datum(schema: Schema, datum: Any) -> Any:
    """An Avro datum read with the Avro schema of Connect ``schema``, as the Connect value."""
    if datum is None:
        return None
    kind = schema.get("type")
    if kind == "map":
        if isinstance(datum, list):
            return {from_datum(schema["keys"], e["key"]): from_datum(schema["values"], e["value"]) for e in datum}
        return {k: from_datum(schema["values"], v) for k, v in datum.items()}
    if kind == "array":
        return [from_datum(schema["items"], item) for item in datum]
    if kind == "struct":
        return {field["field"]: from_datum(field, datum.get(field["field"])) for field in schema.get("fields", ())}
    return datum
