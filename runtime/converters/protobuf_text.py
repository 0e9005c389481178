"""Protobuf schemas as the Schema Registry holds them: ``.proto`` text, as Confluent's ``ProtobufConverter`` registers
it (schemaType ``PROTOBUF``), printed from a ``FileDescriptorProto`` and compiled back into one by grpcio-tools'
in-process protoc. The types every schema may import without a reference (Confluent's "known types",
``skip.known.types``: ``google/protobuf/*``, ``google/type/*``, ``confluent/*``) come from the descriptors the
installed packages ship, so no ``.proto`` file of theirs is needed on disk.
"""

from __future__ import annotations

import importlib
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from headwater.sdk.errors import ConnectError

_KNOWN_MODULES = (
    "google.protobuf.descriptor_pb2",
    "google.protobuf.any_pb2",
    "google.protobuf.api_pb2",
    "google.protobuf.duration_pb2",
    "google.protobuf.empty_pb2",
    "google.protobuf.field_mask_pb2",
    "google.protobuf.source_context_pb2",
    "google.protobuf.struct_pb2",
    "google.protobuf.timestamp_pb2",
    "google.protobuf.type_pb2",
    "google.protobuf.wrappers_pb2",
    "google.type.calendar_period_pb2",
    "google.type.color_pb2",
    "google.type.date_pb2",
    "google.type.datetime_pb2",
    "google.type.dayofweek_pb2",
    "google.type.decimal_pb2",
    "google.type.expr_pb2",
    "google.type.fraction_pb2",
    "google.type.interval_pb2",
    "google.type.latlng_pb2",
    "google.type.money_pb2",
    "google.type.month_pb2",
    "google.type.phone_number_pb2",
    "google.type.postal_address_pb2",
    "google.type.quaternion_pb2",
    "google.type.timeofday_pb2",
    "confluent_kafka.schema_registry.confluent.meta_pb2",
    "confluent_kafka.schema_registry.confluent.type.decimal_pb2",
)
KNOWN_PREFIXES = ("google/protobuf/", "google/type/", "confluent/")
"""The import paths of Confluent's known types, never registered as references (``skip.known.types``)."""
_PROTOC = threading.Lock()
_known: list[Any] = []


def known_files() -> list[Any]:
    """The ``FileDescriptorProto`` of every known type's file, each after the files it imports."""
    if _known:
        return _known
    from google.protobuf import descriptor_pb2

    ordered: dict[str, Any] = {}

    def add(file: Any) -> None:
        if file.name in ordered:
            return
        for dependency in file.dependencies:
            add(dependency)
        made = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(made)
        ordered[file.name] = made

    for module in _KNOWN_MODULES:
        try:
            add(importlib.import_module(module).DESCRIPTOR)
        except ImportError:  # an older googleapis-common-protos without one of google/type's files
            continue
    _known.extend(ordered.values())
    return _known


def is_known(file_name: str) -> bool:
    return file_name.startswith(KNOWN_PREFIXES)


# ---- text -> descriptor ------------------------------------------------------------------------------------------


def compile_proto(files: Mapping[str, str], given: Sequence[Any] = ()) -> list[Any]:
    """The ``FileDescriptorProto`` of each of ``files`` (import path -> ``.proto`` text), compiled by protoc with the
    known types and the descriptors ``given`` to import from; :class:`ConnectError` with protoc's own messages when
    the text does not compile."""
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    known = descriptor_pb2.FileDescriptorSet(file=[*known_files(), *given])
    with tempfile.TemporaryDirectory(prefix="headwater-proto-") as folder:
        for name, text in files.items():
            path = os.path.join(folder, "src", name)
            if os.path.relpath(path, os.path.join(folder, "src")).startswith(".."):
                raise ConnectError(f"the Protobuf schema names the file {name!r}, which is not a relative path")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as out:
                out.write(text)
        known_path, out_path = os.path.join(folder, "known.pb"), os.path.join(folder, "out.pb")
        with open(known_path, "wb") as out:
            out.write(known.SerializeToString())
        arguments = [
            "protoc",
            f"--proto_path={os.path.join(folder, 'src')}",
            f"--descriptor_set_in={known_path}",
            f"--descriptor_set_out={out_path}",
            "--include_imports",
            *files,
        ]
        with _PROTOC, _stderr_to(os.path.join(folder, "errors.txt")) as errors:
            code = protoc.main(arguments)
        if code != 0:
            source = os.path.join(folder, "src") + os.sep
            lines = [line.replace(source, "") for line in errors().splitlines()]
            # protoc's own logging (absl) warnings, such as a file without a syntax line, are not the error
            message = "\n".join(line for line in lines if line and not line.startswith(("WARNING: ", "W0", "I0")))
            message = message or f"protoc exited with {code}"
            raise ConnectError(f"the Protobuf schema does not compile: {message}")
        with open(out_path, "rb") as produced:
            compiled = descriptor_pb2.FileDescriptorSet.FromString(produced.read())
    return [file for file in compiled.file if file.name in files]


class _stderr_to:
    """protoc writes its errors to file descriptor 2: point it at ``path`` for the call (callers hold the lock)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.saved = -1

    def __enter__(self) -> Any:
        import sys

        sys.stderr.flush()
        self.saved = os.dup(2)
        target = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, 2)
        os.close(target)
        return self.read

    def read(self) -> str:
        with open(self.path, encoding="utf-8", errors="replace") as written:
            return written.read()

    def __exit__(self, *_: object) -> None:
        os.dup2(self.saved, 2)
        os.close(self.saved)


# ---- descriptor -> text ------------------------------------------------------------------------------------------

_SCALARS = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    6: "fixed64",
    7: "fixed32",
    8: "bool",
    9: "string",
    12: "bytes",
    13: "uint32",
    15: "sfixed32",
    16: "sfixed64",
    17: "sint32",
    18: "sint64",
}
_REPEATED = 3


def proto_text(file: Any) -> str:
    """``.proto`` text of a ``FileDescriptorProto`` (proto3) that compiles back to it: messages and their nested
    messages, map fields, enums, oneofs, ``optional`` and ``repeated`` fields, and ``confluent.field_meta`` params."""
    lines = [f'syntax = "{file.syntax or "proto2"}";']
    if file.package:
        lines.append(f"package {file.package};")
    if file.dependency:
        lines.append("")
        lines.extend(f'import "{dependency}";' for dependency in file.dependency)
    for message in file.message_type:
        lines.append("")
        lines.extend(_message(message, ""))
    for enum in file.enum_type:
        lines.append("")
        lines.extend(_enum(enum, ""))
    return "\n".join(lines) + "\n"


def _message(message: Any, indent: str) -> Iterator[str]:
    yield f"{indent}message {message.name} {{"
    inner = indent + "  "
    entries = {f"{message.name}.{nested.name}": nested for nested in message.nested_type if nested.options.map_entry}
    oneofs: dict[int, list[Any]] = {}
    for field in message.field:
        if field.HasField("oneof_index") and not field.proto3_optional:
            if field.oneof_index not in oneofs:
                oneofs[field.oneof_index] = []
                yield f"{inner}oneof {message.oneof_decl[field.oneof_index].name} {{"
                for member in message.field:
                    if member.HasField("oneof_index") and member.oneof_index == field.oneof_index:
                        yield f"{inner}  {_field(member, entries, in_oneof=True)}"
                yield f"{inner}}}"
            continue
        yield f"{inner}{_field(field, entries)}"
    for nested in message.nested_type:
        if not nested.options.map_entry:
            yield ""
            yield from _message(nested, inner)
    for enum in message.enum_type:
        yield ""
        yield from _enum(enum, inner)
    yield f"{indent}}}"


def _enum(enum: Any, indent: str) -> Iterator[str]:
    yield f"{indent}enum {enum.name} {{"
    for value in enum.value:
        yield f"{indent}  {value.name} = {value.number};"
    yield f"{indent}}}"


def _type(field: Any) -> str:
    if field.type in _SCALARS:
        return _SCALARS[field.type]
    return _reference(field.type_name)


def _reference(type_name: str) -> str:
    """A type's name as written in a field: the known types by their full name (as Confluent's printer writes
    them), the schema's own fully qualified (a leading dot), which no nested name can shadow."""
    if type_name.startswith((".google.protobuf.", ".google.type.", ".confluent.")):
        return type_name[1:]
    return type_name


def _field(field: Any, entries: Mapping[str, Any], in_oneof: bool = False) -> str:
    entry = entries.get(".".join(field.type_name.rsplit(".", 2)[-2:])) if field.label == _REPEATED else None
    if entry is not None:
        key, value = entry.field[0], entry.field[1]
        declared = f"map<{_type(key)}, {_type(value)}> {field.name} = {field.number}"
    else:
        label = "repeated " if field.label == _REPEATED else ("optional " if field.proto3_optional else "")
        declared = f"{'' if in_oneof else label}{_type(field)} {field.name} = {field.number}"
    return f"{declared}{_options(field)};"


def _options(field: Any) -> str:
    if not field.HasField("options"):
        return ""
    from confluent_kafka.schema_registry.confluent import meta_pb2
    from google.protobuf import descriptor_pb2

    options = descriptor_pb2.FieldOptions.FromString(field.options.SerializeToString())
    if not options.HasExtension(meta_pb2.field_meta):
        return ""
    params = options.Extensions[meta_pb2.field_meta].params
    items = ", ".join(f"{{ key: {_quote(k)}, value: {_quote(v)} }}" for k, v in sorted(params.items()))
    return f" [(confluent.field_meta) = {{ params: [{items}] }}]"


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
