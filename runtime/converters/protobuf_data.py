"""Kafka Connect schemas to Protobuf descriptors and back, by the rules of Confluent's ``ProtobufData`` with its
defaults, so that a schema written here is the message a Java worker registers for the same Connect schema, and a
message a Java worker (or any Protobuf producer) wrote reads here as the Connect schema Java reads it as.

Connect to Protobuf (proto3):

- the root must be a struct: a message named by the struct's name (``shop.Order`` is ``package shop; message
  Order``), ``ConnectDefault1`` without a package when unnamed; each nested struct a message nested in the one whose
  field holds it, named by its simple name (``ConnectDefault<n>`` when unnamed, suffix ``Message`` when it equals
  the field's name);
- fields are numbered 1, 2, ... in order, or by their ``io.confluent.connect.protobuf.Tag`` parameter;
- int8 and int16 are ``int32`` with ``(confluent.field_meta)`` param ``connect.type``; int32 ``int32`` and int64
  ``int64`` (or the type in ``io.confluent.connect.protobuf.Type``); float32 ``float``, float64 ``double``; boolean
  ``bool``; string ``string`` (an enum with Confluent's ``io.confluent.connect.protobuf.Enum`` params); bytes
  ``bytes``;
- an array is a ``repeated`` field; a map a ``repeated <Name>Entry`` field of a nested message with ``key = 1`` and
  ``value = 2`` (as Confluent writes maps: any key type, no ``map<>``);
- Decimal is ``confluent.type.Decimal`` with params ``precision`` and ``scale``; Date ``google.type.Date``; Time
  ``google.type.TimeOfDay``; Timestamp ``google.protobuf.Timestamp``;
- an optional field is a plain proto3 field: a null is not written (and reads back as the field's zero value, a
  message-typed field as null);
- a struct named ``io.confluent.connect.protobuf.Union.<name>`` is a ``oneof <name>`` of its fields.

Protobuf to Connect: a message is a struct named by its simple name, real oneofs first (as optional union structs,
field ``<oneof>_<index>``), then the other fields; every field is optional and carries its number in
``io.confluent.connect.protobuf.Tag``; unsigned and fixed-width integers carry their type in
``io.confluent.connect.protobuf.Type``; a repeated message named ``*Entry`` with fields ``key`` and ``value`` is a map.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import DATE_NAME, DECIMAL_NAME, PRECISION, SCALE, TIME_NAME, TIMESTAMP_NAME, Schema

NAMESPACE = "io.confluent.connect.protobuf"
TAG = f"{NAMESPACE}.Tag"
TYPE = f"{NAMESPACE}.Type"
ENUM = f"{NAMESPACE}.Enum"
UNION = f"{NAMESPACE}.Union."
CONNECT_TYPE = "connect.type"
DEFAULT_NAME = "ConnectDefault"
DECIMAL_TYPE, DATE_TYPE = "confluent.type.Decimal", "google.type.Date"
TIME_TYPE, TIMESTAMP_TYPE = "google.type.TimeOfDay", "google.protobuf.Timestamp"
_LOGICAL = {
    DECIMAL_NAME: (DECIMAL_TYPE, "confluent/type/decimal.proto"),
    DATE_NAME: (DATE_TYPE, "google/type/date.proto"),
    TIME_NAME: (TIME_TYPE, "google/type/timeofday.proto"),
    TIMESTAMP_NAME: (TIMESTAMP_TYPE, "google/protobuf/timestamp.proto"),
}
_CONNECT_OF_LOGICAL = {proto: name for name, (proto, _) in _LOGICAL.items()}
META_FILE = "confluent/meta.proto"

# FieldDescriptorProto's Type and Label numbers (descriptor.proto)
DOUBLE, FLOAT, INT64, UINT64, INT32, FIXED64, FIXED32, BOOL, STRING = 1, 2, 3, 4, 5, 6, 7, 8, 9
MESSAGE, BYTES, UINT32, ENUM_TYPE, SFIXED32, SFIXED64, SINT32, SINT64 = 11, 12, 13, 14, 15, 16, 17, 18
OPTIONAL_LABEL, REPEATED_LABEL = 1, 3
_PROTO_OF_CONNECT = {"int32": INT32, "int64": INT64, "float": FLOAT, "double": DOUBLE, "boolean": BOOL}
_PROTO_OF_CONNECT |= {"string": STRING, "bytes": BYTES, "int8": INT32, "int16": INT32}
_NAMED_INTS = {"int32": INT32, "sint32": SINT32, "sfixed32": SFIXED32, "int64": INT64, "uint32": UINT32}
_NAMED_INTS |= {"fixed32": FIXED32, "uint64": UINT64, "sint64": SINT64, "fixed64": FIXED64, "sfixed64": SFIXED64}
_NAME_OF_INT = {number: name for name, number in _NAMED_INTS.items()}
_CONNECT_OF_PROTO = {DOUBLE: "double", FLOAT: "float", BOOL: "boolean", STRING: "string", BYTES: "bytes"}
_CONNECT_OF_PROTO |= {INT32: "int32", SINT32: "int32", SFIXED32: "int32"}
_CONNECT_OF_PROTO |= {number: "int64" for number in (INT64, UINT32, FIXED32, UINT64, SINT64, FIXED64, SFIXED64)}


class SchemaError(ConnectError):
    """A schema that cannot be mapped."""


# ---- Connect -> Protobuf ------------------------------------------------------------------------------------------


class _Context:
    """One conversion: unnamed types numbered as ProtobufData numbers them, and the files the schema imports."""

    def __init__(self) -> None:
        self.unnamed = 0
        self.dependencies: list[str] = []
        self.written: dict[str, str] = {}
        """The full name of each nested message written -> the Connect schema it was written for (its JSON)."""

    def name(self, name: str | None) -> str:
        if name:
            return name
        self.unnamed += 1
        return f"{DEFAULT_NAME}{self.unnamed}"

    def first(self, full: str, schema: Schema) -> bool:
        """Whether nested message ``full`` is not written yet; :class:`SchemaError` when it was, for another
        schema (two structs of one simple name in one message)."""
        canonical = json.dumps({k: v for k, v in schema.items() if k not in ("field", "optional")}, sort_keys=True)
        if full not in self.written:
            self.written[full] = canonical
            return True
        if self.written[full] != canonical:
            raise SchemaError(f"two different Connect schemas would both be the Protobuf message {full}")
        return False

    def depend(self, file: str) -> None:
        if file not in self.dependencies:
            self.dependencies.append(file)


def root_name(schema: Schema) -> str:
    """The full name of the message a Connect struct schema is written as (the record subject strategies')."""
    return str(schema.get("name") or f"{DEFAULT_NAME}1")


def to_file(schema: Schema, file_name: str | None = None) -> Any:
    """The ``FileDescriptorProto`` (proto3) of a Connect struct schema; its first message is the root."""
    from google.protobuf import descriptor_pb2

    if schema.get("type") != "struct":
        raise SchemaError(
            f"a Protobuf schema's root must be a struct (a message), not {schema.get('type')!r}: Confluent's "
            "ProtobufData refuses other roots the same way"
        )
    context = _Context()
    package, _, simple = context.name(schema.get("name")).rpartition(".")
    file = descriptor_pb2.FileDescriptorProto(name=file_name or f"{package or 'headwater'}/{simple}.proto")
    file.syntax = "proto3"
    if package:
        file.package = package
    message = file.message_type.add()
    _message(message, simple, f"{package}.{simple}" if package else simple, schema, context)
    file.dependency.extend(context.dependencies)
    return file


def _message(message: Any, name: str, full: str, schema: Schema, context: _Context) -> None:
    message.name = name
    number = 1
    for field in schema.get("fields", ()):
        if str(field.get("name") or "").startswith(UNION) and field.get("type") == "struct":
            _oneof(message, full, field, context)
            continue
        tag = (field.get("parameters") or {}).get(TAG)
        made = message.field.add(name=field["field"], number=int(tag) if tag is not None else number)
        if tag is None:
            number += 1
        _field(made, message, full, field, context)


def _oneof(message: Any, full: str, union: Schema, context: _Context) -> None:
    index = len(message.oneof_decl)
    message.oneof_decl.add(name=str(union["name"])[len(UNION) :].rpartition(".")[2])
    for member in union.get("fields", ()):
        tag = (member.get("parameters") or {}).get(TAG)
        if tag is None:
            raise SchemaError(f"the oneof member {member['field']!r} of {full} has no {TAG} parameter (its number)")
        made = message.field.add(name=member["field"], number=int(tag), oneof_index=index)
        _field(made, message, full, member, context)


def _field(made: Any, message: Any, full: str, schema: Schema, context: _Context) -> None:
    where = f"field {made.name!r} of {full}"
    made.label = OPTIONAL_LABEL
    if schema.get("type") == "array":
        made.label = REPEATED_LABEL
        schema = schema["items"]
        if schema.get("type") in ("array", "map"):
            raise SchemaError(f"{where} is an array of {schema['type']}s, which Protobuf cannot hold")
    kind, name = schema.get("type"), schema.get("name")
    parameters = schema.get("parameters") or {}
    params: dict[str, str] = {}
    if name in _LOGICAL:
        proto, file = _LOGICAL[name]
        made.type, made.type_name = MESSAGE, f".{proto}"
        context.depend(file)
        if name == DECIMAL_NAME:
            if PRECISION in parameters:
                params["precision"] = str(parameters[PRECISION])
            params["scale"] = str(parameters.get(SCALE, 0))
    elif kind == "map":
        made.label = REPEATED_LABEL
        entry_name = _entry_name(context.name(name))
        if context.first(f"{full}.{entry_name}", schema):
            entry = message.nested_type.add(name=entry_name)
            for part, number in (("keys", 1), ("values", 2)):
                item = entry.field.add(name="key" if number == 1 else "value", number=number)
                _field(item, entry, f"{full}.{entry_name}", schema[part], context)
        made.type, made.type_name = MESSAGE, f".{full}.{entry_name}"
    elif kind == "struct":
        nested_name = context.name(name).rpartition(".")[2]
        nested_name += "Message" if nested_name == made.name else ""
        if context.first(f"{full}.{nested_name}", schema):
            _message(message.nested_type.add(), nested_name, f"{full}.{nested_name}", schema, context)
        made.type, made.type_name = MESSAGE, f".{full}.{nested_name}"
    elif kind == "string" and ENUM in parameters:
        enum_name = str(parameters[ENUM]).rpartition(".")[2]
        if not any(enum.name == enum_name for enum in message.enum_type):
            enum = message.enum_type.add(name=enum_name)
            for key, value in parameters.items():
                if key.startswith(f"{ENUM}."):
                    enum.value.add(name=key[len(ENUM) + 1 :], number=int(value))
        made.type, made.type_name = ENUM_TYPE, f".{full}.{enum_name}"
    elif kind in _PROTO_OF_CONNECT:
        made.type = _PROTO_OF_CONNECT[kind]
        if kind in ("int8", "int16"):
            params[CONNECT_TYPE] = str(kind)
        elif kind in ("int32", "int64") and parameters.get(TYPE) in _NAMED_INTS:
            made.type = _NAMED_INTS[parameters[TYPE]]
    else:
        raise SchemaError(f"{where} has the Connect type {kind!r}, which has no Protobuf form")
    if params:
        _field_meta(made, params)
        context.depend(META_FILE)


def _entry_name(name: str) -> str:
    """ProtobufSchema.toMapEntry: a map's unqualified name in UpperCamel, with ``Entry``."""
    simple = name.rpartition(".")[2]
    if "_" in simple:
        simple = "".join(part[:1].upper() + part[1:].lower() for part in simple.split("_"))
    return f"{simple}Entry"


def _field_meta(made: Any, params: Mapping[str, str]) -> None:
    from confluent_kafka.schema_registry.confluent import meta_pb2
    from google.protobuf import descriptor_pb2

    options = descriptor_pb2.FieldOptions()
    options.Extensions[meta_pb2.field_meta].params.update(params)
    made.options.MergeFromString(options.SerializeToString())


def field_meta(field: Any) -> dict[str, str]:
    """The ``(confluent.field_meta)`` params of a ``FieldDescriptorProto``."""
    if not field.HasField("options"):
        return {}
    from confluent_kafka.schema_registry.confluent import meta_pb2
    from google.protobuf import descriptor_pb2

    options = descriptor_pb2.FieldOptions.FromString(field.options.SerializeToString())
    return dict(options.Extensions[meta_pb2.field_meta].params) if options.HasExtension(meta_pb2.field_meta) else {}


# ---- Protobuf -> Connect ------------------------------------------------------------------------------------------


class Types:
    """The messages and enums of a set of ``FileDescriptorProto`` by full name (without the leading dot)."""

    def __init__(self, files: Iterable[Any]) -> None:
        self.messages: dict[str, Any] = {}
        self.enums: dict[str, Any] = {}
        for file in files:
            prefix = f"{file.package}." if file.package else ""
            for message in file.message_type:
                self._add(prefix + message.name, message)
            for enum in file.enum_type:
                self.enums[prefix + enum.name] = enum

    def _add(self, full: str, message: Any) -> None:
        self.messages[full] = message
        for nested in message.nested_type:
            self._add(f"{full}.{nested.name}", nested)
        for enum in message.enum_type:
            self.enums[f"{full}.{enum.name}"] = enum


def to_connect(types: Types, full_name: str) -> dict[str, Any]:
    """The Connect schema of message ``full_name`` (as Confluent's ProtobufData reads it, its defaults)."""
    return _struct(types, full_name, ())


def _struct(types: Types, full: str, seen: tuple[str, ...]) -> dict[str, Any]:
    if full in seen:
        raise SchemaError(f"message {full} contains itself, which a Connect schema cannot")
    message = types.messages[full]
    fields: list[dict[str, Any]] = []
    for index, oneof in enumerate(message.oneof_decl):
        members = [f for f in message.field if f.HasField("oneof_index") and f.oneof_index == index]
        if any(f.proto3_optional for f in members):
            continue  # proto3 `optional`'s synthetic oneof
        union = [{**_field_schema(types, f, (*seen, full)), "field": f.name} for f in members]
        name = f"{oneof.name}_{index}"
        fields.append(
            {"type": "struct", "optional": True, "name": f"{UNION}{oneof.name}", "fields": union, "field": name}
        )
    for field in message.field:
        if field.HasField("oneof_index") and not field.proto3_optional:
            continue
        fields.append({**_field_schema(types, field, (*seen, full)), "field": field.name})
    return {"type": "struct", "optional": False, "name": full.rpartition(".")[2], "fields": fields}


def is_map_entry(message: Any) -> bool:
    """ProtobufData's test for a map's entry message: named ``*Entry``, fields ``key`` and ``value`` only."""
    return message.name.endswith("Entry") and [f.name for f in message.field] == ["key", "value"]


def _map_name(entry: str) -> str:
    """ProtobufSchema.toMapField: the entry's name without ``Entry``, in lower_underscore."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", entry[: -len("Entry")]).lower()


def _field_schema(types: Types, field: Any, seen: tuple[str, ...]) -> dict[str, Any]:
    made: dict[str, Any]
    meta = field_meta(field)
    target = field.type_name.lstrip(".")
    if field.type == MESSAGE and target in _CONNECT_OF_LOGICAL:
        made = {"type": "int32", "optional": True, "name": _CONNECT_OF_LOGICAL[target], "version": 1}
        if target == DECIMAL_TYPE:
            parameters = {SCALE: str(int(meta.get("scale", 0)))}
            if meta.get("precision") is not None:
                parameters[PRECISION] = str(int(meta["precision"]))
            made |= {"type": "bytes", "parameters": parameters}
        elif target == TIMESTAMP_TYPE:
            made["type"] = "int64"
    elif field.type == MESSAGE and is_map_entry(types.messages[target]):
        entry = types.messages[target]
        made = {
            "type": "map",
            "optional": True,
            "keys": _field_schema(types, entry.field[0], seen),
            "values": _field_schema(types, entry.field[1], seen),
            "name": _map_name(entry.name),
        }
    elif field.type == MESSAGE:
        made = {**_struct(types, target, seen), "optional": True}
    elif field.type == ENUM_TYPE:
        enum = types.enums[target]
        parameters = {ENUM: enum.name} | {f"{ENUM}.{value.name}": str(value.number) for value in enum.value}
        made = {"type": "string", "optional": True, "name": enum.name, "parameters": parameters}
    elif field.type in _CONNECT_OF_PROTO:
        made = {"type": _CONNECT_OF_PROTO[field.type], "optional": True}
        if field.type == INT32 and meta.get(CONNECT_TYPE) in ("int8", "int16"):
            made["type"] = meta[CONNECT_TYPE]
        elif field.type not in (INT32, INT64) and field.type in _NAME_OF_INT:
            made["parameters"] = {TYPE: _NAME_OF_INT[field.type]}
    else:
        raise SchemaError(f"field {field.name!r} has the Protobuf type {field.type}, which has no Connect form")
    if field.label == REPEATED_LABEL and made["type"] != "map":
        made = {"type": "array", "optional": True, "items": made}
    made["parameters"] = {**(made.get("parameters") or {}), TAG: str(field.number)}
    return made
