"""The Protobuf converter, as Confluent's ``io.confluent.connect.protobuf.ProtobufConverter``: a record's Connect
schema mapped to a proto3 message (:mod:`.protobuf_data`), registered in a Schema Registry as ``.proto`` text
(schemaType ``PROTOBUF``), the value written as that message in Confluent's framing, and read back with the schema
its id names. Needs the ``protobuf`` extra (protobuf, grpcio-tools' protoc, Google's common types and
confluent-kafka's registry client).

Confluent's Protobuf framing: byte 0, the schema id (4 bytes, big-endian), the message indexes (which message of the
schema file: a zigzag varint count, then each index; the first message is the single byte 0), then the message.
Writing, the root message is always the file's first, so the indexes are ``00``. Reading, the indexes are walked
down the file's messages (map entries not counted, as Confluent's ``ProtobufSchema`` counts them).

Writing registers (or, per ``auto.register.schemas`` and ``use.latest.version``, finds) the schema under its subject
as the Avro converter does; a record without a schema is refused. Reading fetches the id's schema and its references
once, compiles the ``.proto`` text with protoc (a schema registered as the base64 of a ``FileDescriptorProto``, as
confluent-kafka's ``ProtobufSerializer`` registers it, is read as that descriptor) and keeps it by id.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.runtime.converters.protobuf_data import (
    SchemaError,
    Types,
    root_name,
    to_connect,
    to_file,
)
from headwater.runtime.converters.protobuf_text import compile_proto, is_known, known_files, proto_text
from headwater.runtime.converters.protobuf_values import fill, read
from headwater.runtime.converters.registry import (
    RegistryConverter,
    asking,
    frame,
    unframe,
    writer_schema,
)
from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import AvroSchema, Schema

_FIRST_MESSAGE = b"\x00"
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")


@dataclass(frozen=True)
class _Writer:
    schema_id: int
    message_class: Any
    connect: Schema


@dataclass(frozen=True)
class _Reader:
    message_class: Any
    connect: Schema


@dataclass(frozen=True)
class _Compiled:
    """A registered schema compiled: its files (references first) and their messages by name."""

    files: list[Any]
    types: Types


class ProtobufConverter(RegistryConverter[_Writer]):
    """Protobuf in Confluent's wire format, with a Schema Registry."""

    FORMAT = "Protobuf"
    EXTRA = "protobuf"
    MODULES = (
        "confluent_kafka.schema_registry.confluent.meta_pb2",
        "google.protobuf.message_factory",
        "google.type.date_pb2",
        "grpc_tools.protoc",
    )

    def __init__(self) -> None:
        super().__init__()
        self._compiled: dict[int, _Compiled] = {}
        self._readers: dict[tuple[int, tuple[int, ...]], _Reader] = {}

    # ---- writing ------------------------------------------------------------------------------------------------

    def from_connect(self, topic: str, schema: Mapping[str, Any] | AvroSchema | None, value: Any) -> bytes | None:
        if value is None:
            return None  # a tombstone stays a tombstone
        writer = self._writer(topic, schema)
        message = writer.message_class()
        try:
            if not isinstance(value, Mapping):
                raise TypeError(f"a struct must be a dict, not {type(value).__name__}")
            fill(message, writer.connect, value)
            payload = message.SerializeToString()
        except (ConnectError, ValueError, TypeError, KeyError, AttributeError, OverflowError) as error:
            raise ConnectError(
                f"the {self._part} for topic {topic!r} does not match its Protobuf schema: "
                f"{type(error).__name__}: {error}"
            ) from None
        return frame(writer.schema_id, _FIRST_MESSAGE + payload)

    def _make_writer(self, topic: str, schema: Mapping[str, Any] | AvroSchema) -> _Writer:

        settings = self._settings()
        try:
            if isinstance(schema, AvroSchema):
                from headwater.runtime.converters.avro_data import to_connect as avro_to_connect

                schema = avro_to_connect(schema.parsed)
            file = to_file(schema)
        except (SchemaError, KeyError, TypeError, ValueError) as error:
            raise ConnectError(
                f"the {self._part} schema for topic {topic!r} cannot be written in Protobuf: {error}"
            ) from None
        subject = settings.subject(topic, self.is_key, root_name(schema))
        writing = writer_schema(self._client, settings, subject, proto_text(file), "PROTOBUF")
        if writing.latest is not None:
            files = self._compile(writing.schema_id).files  # the latest schema's, compiled as a reader's
            return _Writer(writing.schema_id, _message_class(files, _full_name(files[-1])), schema)
        return _Writer(writing.schema_id, _message_class([*known_files(), file], _full_name(file)), schema)

    # ---- reading ------------------------------------------------------------------------------------------------

    def to_connect_data(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        """The Connect schema and value of a message's key or value (``None, None`` for a tombstone)."""
        if data is None:
            return None, None
        schema_id = unframe(topic, data)
        if schema_id not in self._compiled:
            self._compile(schema_id)  # an unknown id, or one of another format, is refused before the indexes
        indexes, start = _message_indexes(topic, data)
        reader = self._readers.get((schema_id, indexes)) or self._make_reader(schema_id, indexes)
        from google.protobuf.message import DecodeError

        try:
            message = reader.message_class.FromString(memoryview(data)[start:])
            return reader.connect, read(reader.connect, message)
        except (DecodeError, ValueError, TypeError, KeyError, OverflowError) as error:
            raise ConnectError(
                f"a message from topic {topic!r} does not match its Protobuf schema (id {schema_id}): "
                f"{type(error).__name__}: {error}"
            ) from None

    def _make_reader(self, schema_id: int, indexes: tuple[int, ...]) -> _Reader:
        compiled = self._compile(schema_id)
        full = _indexed_message(compiled.files[-1], indexes, schema_id)
        try:
            connect = to_connect(compiled.types, full)
        except (SchemaError, KeyError) as error:
            raise ConnectError(f"schema id {schema_id} cannot be read as a Connect schema: {error}") from None
        reader = _Reader(_message_class(compiled.files, full), connect)
        self._readers[(schema_id, indexes)] = reader
        return reader

    def _compile(self, schema_id: int) -> _Compiled:
        """The files of schema ``schema_id`` and of its references, compiled; kept by id."""
        if schema_id in self._compiled:
            return self._compiled[schema_id]
        settings = self._settings()
        client = self._client
        found = asking(settings.urls, f"find the schema of id {schema_id}", lambda: client.get_schema(schema_id))
        if found.schema_type != "PROTOBUF":
            raise ConnectError(f"schema id {schema_id} is a {found.schema_type or 'AVRO'} schema, not Protobuf")
        texts: dict[str, str] = {}
        self._references(found.references or (), texts)
        main = f"headwater/schema-{schema_id}.proto"
        texts[main] = found.schema_str
        descriptors = {name: _descriptor(text) for name, text in texts.items()}
        given = []
        for name, descriptor in descriptors.items():
            if descriptor is not None:
                descriptor.name = name  # imported by the reference's name
                given.append(descriptor)
        sources = {name: text for name, text in texts.items() if descriptors[name] is None}
        files = given + (compile_proto(sources, given) if sources else [])
        compiled = _Compiled(_ordered(files, main), Types([*known_files(), *files]))
        self._compiled[schema_id] = compiled
        return compiled

    def _references(self, references: Any, texts: dict[str, str]) -> None:
        """The text of each reference (and of theirs), by the name the schema imports it by."""
        settings = self._settings()
        client = self._client
        for reference in references:
            if reference.name in texts or is_known(reference.name):
                continue
            version = asking(
                settings.urls,
                f"find the schema {reference.subject} version {reference.version} (a reference)",
                functools.partial(client.get_version, reference.subject, reference.version),
            )
            self._references(version.schema.references or (), texts)
            texts[reference.name] = version.schema.schema_str


def _descriptor(text: str) -> Any:
    """The ``FileDescriptorProto`` a schema registered as its base64 holds (confluent-kafka's ``ProtobufSerializer``
    registers schemas so, and Confluent's registry accepts it), else ``None`` for ``.proto`` text."""
    if not _BASE64.match(text):
        return None
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    try:
        return descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text, validate=False))
    except (binascii.Error, DecodeError, ValueError):
        return None


def _ordered(files: list[Any], main: str) -> list[Any]:
    """``files`` with each after those it imports and ``main`` last."""
    by_name = {file.name: file for file in files}
    ordered: dict[str, Any] = {}

    def add(name: str) -> None:
        if name in ordered or name not in by_name:
            return
        for dependency in by_name[name].dependency:
            add(dependency)
        ordered[name] = by_name[name]

    for name in [*by_name, main]:
        if name != main:
            add(name)
    add(main)
    return list(ordered.values())


def _full_name(file: Any) -> str:
    if not file.message_type:
        raise ConnectError(f"the Protobuf schema {file.name} has no message")
    return f"{file.package}.{file.message_type[0].name}" if file.package else file.message_type[0].name


def _indexed_message(file: Any, indexes: tuple[int, ...], schema_id: int) -> str:
    """The full name of the message ``indexes`` pick in ``file`` (map entries not counted)."""
    messages, names = list(file.message_type), [file.package] if file.package else []
    for index in indexes:
        if index >= len(messages):
            raise ConnectError(f"schema id {schema_id} has no message at indexes {list(indexes)}")
        message = messages[index]
        names.append(message.name)
        messages = [nested for nested in message.nested_type if not nested.options.map_entry]
    return ".".join(names)


def _message_indexes(topic: str, data: bytes) -> tuple[tuple[int, ...], int]:
    """The message indexes after the schema id, and where the message starts."""
    position = 5
    values: list[int] = []
    count = -1
    while count < 0 or len(values) < count:
        shift = result = 0
        while True:
            if position >= len(data):
                raise ConnectError(f"a message from topic {topic!r} ends inside its Protobuf message indexes")
            byte = data[position]
            position += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        decoded = (result >> 1) ^ -(result & 1)  # zigzag
        if count < 0:
            if decoded < 0 or decoded > 100:
                raise ConnectError(f"a message from topic {topic!r} has {decoded} Protobuf message indexes")
            count = decoded
            if count == 0:
                return (0,), position
        else:
            values.append(decoded)
    return tuple(values), position


def _message_class(files: list[Any], full_name: str) -> Any:
    """The message class of ``full_name`` in a private pool of ``files`` (the known types among them added once)."""
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    for file in [*known_files(), *files]:
        if file.name not in added:
            added.add(file.name)
            pool.Add(file)
    try:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))
    except KeyError:
        raise ConnectError(f"the Protobuf schema has no message {full_name}") from None
